#!/bin/sh
# Asserts that GPU plugins do not link vendor runtimes (they dlopen them).
# usage: check_needed.sh PLUGIN.so...
status=0
for plugin in "$@"; do
  needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') || { echo "FAIL: readelf $plugin"; exit 1; }
  bad=$(printf '%s\n' "$needed" | grep -E '^(libcuda|libcudart|libnvrtc|libamdhip64|libhiprtc|libhsa)') 
  if [ -n "$bad" ]; then
    echo "FAIL: $plugin links vendor libraries: $bad"
    status=1
  else
    echo "ok: $plugin NEEDED: $(printf '%s ' $needed)"
  fi
done
exit $status
