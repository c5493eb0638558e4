#!/bin/sh
# Install test: stages `meson install` of a build directory into a temporary DESTDIR, then uses
# the staged tree exactly as a user of an installed accel would, through pkg-config only:
#   1. tests/install/hello_accel.c      compiles, links and runs (header/library versions, cpu)
#   2. examples/optimizer_step.c        compiles warning-free, runs, and its output is checked
#      (on cpu, and on opencl too when that backend has a device: the output must be identical);
#      the copy of it in docs/API.md must be the same text
#   0. the installed accel-info and accel-cts run with a clean environment (relative run path);
#      the plugin guide (docs/PLUGINS.md), the pages it links to and examples/plugin are
#      installed under `pkg-config --variable=docdir accel`
#   3. examples/plugin                  its installed copy builds out of tree with its Makefile
#      against the staged headers and installs into the staged plugin dir;
#      tests/install/plugin_check.c opens the
#      "example" device and checks copies, events, host functions, graphs and kernels;
#      the staged accel-info lists the plugin as loaded, with the staged kernel ABI
#   4. the staged accel-cts passes every case on the plugin in eager, graph and lazy modes
#   5. an expectation file beside the plugin is read; an xfail case that passes fails (XPASS)
#   6. the "write a plugin in an afternoon" plugin of the installed docs/PLUGINS.md, extracted
#      from the page's code blocks, builds against the staged tree and passes the CTS (eager)
#      with the expectation file the page gives
#
# usage: install_test.sh BUILD_DIR SOURCE_DIR MESON
# Environment: CC (default cc). Exit status 77 (skipped) when pkg-config or make is missing.
set -eu

build=$1
src=$2
meson=$3
cc=${CC:-cc}

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
step() { echo "== $*"; }

command -v pkg-config >/dev/null 2>&1 || skip "pkg-config not found"
command -v make >/dev/null 2>&1 || skip "make not found (needed to build examples/plugin)"

# Settings of the caller must not steer what is tested.
unset ACCEL_BACKEND ACCEL_PLUGIN_PATH ACCEL_LAZY ACCEL_DISABLE_GRAPHS ACCEL_VISIBLE_DEVICES \
      ACCEL_FAULT_INJECT ACCEL_TRACE PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR 2>/dev/null || true

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accel-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
stage=$tmp/stage
export ACCEL_CACHE_DIR="$tmp/cache"

# --- install --------------------------------------------------------------------------------
step "meson install --destdir $stage"
# --no-rebuild: `meson test` builds only what tests depend on; installing must not start a build
# of its own (and must not need root or the network).
if ! "$meson" install -C "$build" --no-rebuild --destdir "$stage" --quiet >"$tmp/install.log" 2>&1
then
  cat "$tmp/install.log"
  fail "meson install failed (build everything first: ninja -C $build)"
fi

pc=$(find "$stage" -path '*/pkgconfig/accel.pc' | head -n 1)
[ -n "$pc" ] || fail "accel.pc was not installed"
# Only the staged tree: no system .pc files, and the prefix moved into the stage.
export PKG_CONFIG_LIBDIR="${pc%/accel.pc}"
prefix=$(pkg-config --variable=prefix accel)
pkgconf="pkg-config --define-variable=prefix=$stage$prefix"
cflags=$($pkgconf --cflags accel)
libs=$($pkgconf --libs accel)
libdir=$($pkgconf --variable=libdir accel)
plugindir=$($pkgconf --variable=plugindir accel)
bindir=$stage$prefix/bin
echo "prefix $prefix staged at $stage$prefix"
echo "cflags: $cflags"
echo "libs:   $libs"
case "$cflags" in *"$stage"*) ;; *) fail "pkg-config --cflags does not point into the stage" ;; esac
for f in "$libdir/libaccel.so" "$bindir/accel-info" "$bindir/accel-kc" \
         "$stage$prefix/include/accel/accel.h" "$stage$prefix/include/accel/accel_kernels.h" \
         "$stage$prefix/include/accel/accel_plugin.h" "$stage$prefix/include/accel/accel_version.h" \
         "$stage$prefix/include/accel/accel_kernel_abi.h" \
         "$stage$prefix/include/accel/accel_random.h" \
         "$stage$prefix/include/accel/accel_module.h"; do
  [ -e "$f" ] || fail "not installed: $f"
done
# The shipped kernel forms (docs/PLUGINS.md, Kernels): the OpenCL C source always, the SPIR-V
# module when this build had clang and llvm-spirv.
kerneldir=$($pkgconf --variable=kerneldir accel)
[ -s "$kerneldir/accel_kernels_flat.cl" ] || fail "OpenCL C kernels not installed in $kerneldir"
grep -q '^ACC_KERNEL(accel_k_norm_partial,' "$kerneldir/accel_kernels_flat.cl" ||
  fail "$kerneldir/accel_kernels_flat.cl has no accel_k_norm_partial kernel"
if [ -e "$build/kernels/accel_kernels.spv" ]; then
  cmp "$build/kernels/accel_kernels.spv" "$kerneldir/accel_kernels.spv" ||
    fail "SPIR-V module not installed in $kerneldir"
fi
# --- 0. the installed tools run from the staged prefix with a clean environment ---------------
# (their run path is $ORIGIN-relative: no LD_LIBRARY_PATH, no system libaccel needed)
step "installed tools, clean environment"
for tool in accel-info accel-cts; do
  [ -x "$bindir/$tool" ] || fail "not installed: $bindir/$tool"
done
env -i PATH=/usr/bin:/bin HOME="$tmp" ACCEL_CACHE_DIR="$tmp/cache" "$bindir/accel-info" \
  >"$tmp/info-clean.txt" 2>&1 || { cat "$tmp/info-clean.txt"; fail "staged accel-info does not run with a clean environment"; }
grep -q '^  cpu: available' "$tmp/info-clean.txt" ||
  { cat "$tmp/info-clean.txt"; fail "staged accel-info (clean environment) lists no cpu backend"; }
env -i PATH=/usr/bin:/bin HOME="$tmp" "$bindir/accel-cts" --list >/dev/null 2>&1 ||
  fail "staged accel-cts does not run with a clean environment"
echo "accel-info and accel-cts run from $bindir with a clean environment"

# The SDK's guide and example: the guide as in the source tree, every page it links to beside
# it, and the example's sources (built in step 3 from this copy).
docdir=$($pkgconf --variable=docdir accel)
guide=$docdir/docs/PLUGINS.md
cmp "$src/docs/PLUGINS.md" "$guide" || fail "docs/PLUGINS.md is not installed as $guide"
python3 - "$guide" <<'EOF' || fail "a relative link of the installed $guide leads nowhere"
import os, re, sys
guide = sys.argv[1]
targets = {m.split("#")[0] for m in re.findall(r"\]\(([^)\s]+)\)", open(guide).read())
           if "://" not in m and not m.startswith("#")}
missing = [t for t in sorted(targets)
           if not os.path.exists(os.path.join(os.path.dirname(guide), t))]
print("installed guide links:", ", ".join(sorted(targets)))
if missing:
    print("missing:", ", ".join(missing))
sys.exit(1 if missing or not targets else 0)
EOF
for f in "$src/examples/plugin/Makefile" "$src"/examples/plugin/*.[ch]; do
  cmp "$f" "$docdir/examples/plugin/${f##*/}" ||
    fail "examples/plugin/${f##*/} is not installed in $docdir/examples/plugin"
done

export LD_LIBRARY_PATH="$libdir"
# The staged libaccel looks in the real plugin dir; point it at the staged one.
export ACCEL_PLUGIN_PATH="$plugindir"

# --- 1. a tiny program ------------------------------------------------------------------------
step "hello_accel.c"
# shellcheck disable=SC2086 # word splitting of pkg-config output is intended
$cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/hello_accel.c" $cflags $libs \
  -o "$tmp/hello_accel"
out=$(timeout 60 "$tmp/hello_accel") || fail "hello_accel failed: $out"
echo "$out"
version=$($pkgconf --modversion accel)
[ "$out" = "hello accel $version: cpu:0 round trip ok" ] || fail "unexpected output from hello_accel"

# --- 2. the optimizer-step example ------------------------------------------------------------
step "examples/optimizer_step.c"
python3 - "$src/docs/API.md" "$src/examples/optimizer_step.c" <<'EOF' || fail "docs/API.md's copy of examples/optimizer_step.c differs from the file"
import sys
doc, example = open(sys.argv[1]).read(), open(sys.argv[2]).read()
begin, end = "<!-- begin examples/optimizer_step.c -->\n```c\n", "```\n<!-- end examples/optimizer_step.c -->"
start = doc.find(begin)
stop = doc.find(end, start)
sys.exit(0 if start >= 0 and stop > start and doc[start + len(begin):stop] == example else 1)
EOF
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror -pedantic "$src/examples/optimizer_step.c" $cflags $libs \
  -o "$tmp/optimizer_step"

# Runs the example on one device and checks what every correct run prints.
run_optimizer() {
  if ! timeout 300 "$tmp/optimizer_step" "$1" >"$tmp/opt-$1.txt" 2>&1; then
    cat "$tmp/opt-$1.txt"
    fail "optimizer_step $1 failed"
  fi
  cat "$tmp/opt-$1.txt"
  grep -q '^step 3: loss scale 65536: overflow, step skipped$' "$tmp/opt-$1.txt" ||
    fail "optimizer_step $1: the overflowing step was not skipped"
  [ "$(grep -c '^step [0-9]*: loss scale [0-9]*, grad norm' "$tmp/opt-$1.txt")" = 5 ] ||
    fail "optimizer_step $1: expected 5 steps taken"
  grep -q '^graph replay vs eager: bitwise identical$' "$tmp/opt-$1.txt" ||
    fail "optimizer_step $1: graph replay and eager execution differ"
}
run_optimizer cpu
# Kernels give the same bits on every backend: everything but the device line must match.
if "$bindir/accel-info" 2>/dev/null | grep -q '^  opencl: available'; then
  run_optimizer opencl
  grep -v '^device:' "$tmp/opt-cpu.txt" >"$tmp/opt-cpu.cmp"
  grep -v '^device:' "$tmp/opt-opencl.txt" >"$tmp/opt-opencl.cmp"
  diff "$tmp/opt-cpu.cmp" "$tmp/opt-opencl.cmp" || fail "optimizer_step: cpu and opencl differ"
  echo "cpu and opencl results are identical"
else
  echo "(opencl has no device here: the cross-backend comparison is skipped)"
fi

# --- 3. the out-of-tree plugin ----------------------------------------------------------------
step "examples/plugin (out of tree, from the installed copy)"
cp -R "$docdir/examples/plugin" "$tmp/plugin"
make -C "$tmp/plugin" clean >/dev/null
make -C "$tmp/plugin" PKG_CONFIG="$pkgconf" CC="$cc" install ||
  fail "examples/plugin does not build or install against the staged headers"
[ -f "$plugindir/libaccel-example.so" ] || fail "make install did not put the plugin in $plugindir"
if command -v nm >/dev/null 2>&1; then
  exported=$(nm -D --defined-only "$plugindir/libaccel-example.so" | awk '$2 == "T" {print $3}')
  [ "$exported" = "accel_plugin_query" ] ||
    fail "the plugin must export only accel_plugin_query, exports: $exported"
fi

# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/plugin_check.c" $cflags $libs -lm \
  -o "$tmp/plugin_check"
timeout 60 "$tmp/plugin_check" || fail "plugin_check failed"

timeout 120 "$bindir/accel-info" >"$tmp/info.txt" 2>&1 ||
  { cat "$tmp/info.txt"; fail "staged accel-info failed"; }
# ... with the kernel ABI of the staged header (the kernel-ABI handshake)
kabi_header="$stage$prefix/include/accel/accel_kernel_abi.h"
kabi=$(sed -n 's/^#define ACCEL_KERNEL_ABI_VERSION \([0-9]*\)u$/\1/p' "$kabi_header")
kcount=$(sed -n 's/^#define ACCEL_KERNEL_ID_COUNT \([0-9]*\)u$/\1/p' "$kabi_header")
[ -n "$kabi" ] && [ -n "$kcount" ] || fail "no kernel ABI version or count in $kabi_header"
grep -E "^  example +loaded +$plugindir/libaccel-example.so: loaded \(ABI [0-9]+, kernels: host C, kernel ABI $kabi with $kcount kernels\)$" "$tmp/info.txt" ||
  { cat "$tmp/info.txt"; fail "staged accel-info does not list the example plugin as loaded"; }
grep -q '^  example: available, 1 device(s)$' "$tmp/info.txt" ||
  { cat "$tmp/info.txt"; fail "staged accel-info does not show the example device"; }

# --- 4. the whole CTS against the out-of-tree plugin, with the staged accel-cts ----------------
step "accel-cts --device example (eager, graph, lazy)"
for mode in eager graph lazy; do
  if ! timeout 600 "$bindir/accel-cts" --device example --mode "$mode" >"$tmp/cts-$mode.txt" 2>&1
  then
    grep -v '^PASS' "$tmp/cts-$mode.txt"
    fail "accel-cts --device example --mode $mode failed"
  fi
  tail -n 1 "$tmp/cts-$mode.txt"
  # the one skip allowed: the example, a host-memory device, has no native handles to hand out
  grep -Eq '^[0-9]+ passed, 0 failed, 1 skipped$' "$tmp/cts-$mode.txt" &&
    grep -q '^SKIP  native_handles_events_and_queues: .*has no native handles' "$tmp/cts-$mode.txt" ||
    fail "accel-cts --device example --mode $mode: not every case passed"
done

# --- 5. an expectation file installed beside the plugin: an xfail case that passes is XPASS ----
step "libaccel-example.cts-expect beside the plugin"
printf '# installed by the plugin\ndevice_info_sane  xfail  pretend it fails\n' \
  >"$plugindir/libaccel-example.cts-expect"
if timeout 120 "$bindir/accel-cts" --device example --filter device_info >"$tmp/cts-x.txt" 2>&1
then
  cat "$tmp/cts-x.txt"
  fail "an xfail case that passes did not fail accel-cts"
fi
grep -q "^expectations: $plugindir/libaccel-example.cts-expect$" "$tmp/cts-x.txt" &&
  grep -q '^XPASS  device_info_sane' "$tmp/cts-x.txt" ||
  { cat "$tmp/cts-x.txt"; fail "the plugin's expectation file was not read, or no XPASS"; }
rm -f "$plugindir/libaccel-example.cts-expect"

# --- 6. docs/PLUGINS.md's "write a plugin in an afternoon", built from the page's code blocks ---
step "the installed docs/PLUGINS.md: the afternoon plugin, from its code blocks"
mkdir -p "$tmp/afternoon"
python3 - "$guide" "$tmp/afternoon" <<'EOF_PY' || fail "$guide: no afternoon code blocks"
import sys
doc, out = open(sys.argv[1]).read(), sys.argv[2]
def blocks(tag):
    marker, parts, i = f"<!-- {tag} -->\n```", [], 0
    while (i := doc.find(marker, i)) >= 0:
        start = doc.index("\n", i + len(marker)) + 1
        end = doc.index("```", start)
        parts.append(doc[start:end])
        i = end
    return "".join(parts)
code, expect = blocks("afternoon.c"), blocks("afternoon.cts-expect")
if not code or not expect:
    sys.exit(1)
open(f"{out}/afternoon.c", "w").write(code)
open(f"{out}/libaccel-afternoon.cts-expect", "w").write(expect)
EOF_PY
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -shared -Wl,--no-undefined \
  $cflags "$tmp/afternoon/afternoon.c" -o "$tmp/afternoon/libaccel-afternoon.so" ||
  fail "the afternoon plugin of docs/PLUGINS.md does not build against the staged tree"
ACCEL_PLUGIN_PATH="$tmp/afternoon" timeout 120 "$bindir/accel-info" >"$tmp/info-afternoon.txt" 2>&1
grep -Eq "^  afternoon +loaded .*kernels: host C, kernel ABI $kabi with $kcount kernels\)$" \
  "$tmp/info-afternoon.txt" ||
  { cat "$tmp/info-afternoon.txt"; fail "accel-info does not list the afternoon plugin"; }
if ! ACCEL_PLUGIN_PATH="$tmp/afternoon" timeout 600 "$bindir/accel-cts" --device afternoon \
     --mode eager >"$tmp/cts-afternoon.txt" 2>&1; then
  grep -v '^PASS' "$tmp/cts-afternoon.txt"
  fail "accel-cts --device afternoon failed"
fi
tail -n 1 "$tmp/cts-afternoon.txt"
grep -Eq '^[0-9]+ passed, 0 failed, 6 skipped$' "$tmp/cts-afternoon.txt" &&
  grep -q '^SKIP  native_handles_events_and_queues: .*has no native handles' "$tmp/cts-afternoon.txt" ||
  fail "the afternoon plugin: expected every case to pass but the 5 it declares unsupported and the native-handle case"

echo "install test passed"
