"""Runs the pytest suite on the build tree's accel package: run_pytest.py PKG_DIR TEST_DIR.
Exit 77 (meson: skipped) when pytest is not installed."""
import os
import sys

try:
    import pytest
except ImportError as e:
    print(f"SKIP: pytest is not importable by {sys.executable}: {e} (apt-get install "
          "python3-pytest)")
    sys.exit(77)

pkg_dir, test_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, pkg_dir)
os.environ["PYTHONPATH"] = pkg_dir + os.pathsep + os.environ.get("PYTHONPATH", "")
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", test_dir, test_dir]
                     + sys.argv[3:]))
