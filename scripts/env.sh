# Sourced by the scripts: toolchain paths shared by the README commands and CI.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
BUILD_DIR="${BUILD_DIR:-build}"
