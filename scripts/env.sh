# Sourced by the scripts: toolchain paths shared by the README commands and CI.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
BUILD_DIR="${BUILD_DIR:-build}"
# Every build dir the scripts configure (run-tests, run-main, ci-sanitizers, hence CI) treats
# warnings as errors. werror is not a project default: a hand `meson setup` only warns.
STRICT_MESON_ARGS=(-Dwerror=true)
