#!/bin/sh
# The Level Zero plugin must not link the loader: it dlopens it at run time, so the plugin
# loads (and reports UNAVAILABLE) on machines without the oneAPI stack.
# usage: check_level_zero_needed.sh libaccel-level-zero.so
set -u
plugin=$1
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not found"; exit 77; }
needed=$(readelf -d "$plugin" | grep NEEDED) || true
echo "$needed"
if printf '%s\n' "$needed" | grep -q 'libze_'; then
  echo "FAIL: $plugin has a NEEDED entry for a Level Zero library"
  exit 1
fi
nm -D --undefined-only "$plugin" | grep -q ' ze[A-Z]' && {
  echo "FAIL: $plugin has undefined ze* symbols"
  exit 1
}
echo "ok: no link-time Level Zero dependency"
exit 0
