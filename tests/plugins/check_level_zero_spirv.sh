#!/bin/sh
# Validates the Level Zero plugin's SPIR-V module and checks that every kernel of
# kernels/accel_kernel_list.h is an OpEntryPoint in it.
# usage: check_level_zero_spirv.sh MODULE.spv kernels/accel_kernel_list.h
# Exit 77 (meson: skipped) when spirv-val / spirv-dis are not installed.
set -u
spv=$1
list=$2
for tool in spirv-val spirv-dis; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
spirv-val --target-env opencl1.2 "$spv" || { echo "FAIL: spirv-val rejected $spv"; exit 1; }
entries=$(spirv-dis "$spv" | sed -n 's/.*OpEntryPoint Kernel %[^ ]* "\([^"]*\)".*/\1/p')
names=$(sed -n 's/^ACCEL_KERNEL([A-Z0-9_]*, *\([a-z0-9_]*\)[,)].*/\1/p' "$list")
[ -n "$names" ] || { echo "FAIL: no kernel names parsed from $list"; exit 1; }
status=0
for name in $names; do
  if printf '%s\n' "$entries" | grep -qx "$name"; then
    echo "ok: $name"
  else
    echo "FAIL: kernel $name is not an OpEntryPoint of $spv"
    status=1
  fi
done
exit $status
