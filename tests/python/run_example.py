"""Runs an example script on the build tree's accel package: run_example.py PKG_DIR SCRIPT
ARGS... Exit 77 (meson: skipped) when torch is not importable."""
import runpy
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"SKIP: torch is not importable by {sys.executable}: {e}")
    sys.exit(77)

sys.path.insert(0, sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
