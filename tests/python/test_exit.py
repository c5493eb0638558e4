"""Interpreter exit with every kind of handle still open: closed by the atexit hook, no error,
no hang; and importing accel does not import torch."""
import os
import subprocess
import sys

PROGRAM = r"""
import sys
import numpy as np
import accel
assert "torch" not in sys.modules, "import accel pulled in torch"
dev = accel.Device("cpu")
s = dev.stream()
arrays = [np.ones(1000, np.float32) for _ in range(3)]
tl = accel.TensorList(dev, arrays)
buf = dev.empty(10)
view = buf.numpy()
g = dev.graph()
with g.capture(s, pool=dev.pool()):
    accel.fill(tl, 2.0, stream=s)
g.replay(s)              # still running, maybe, when the interpreter exits
ev = s.record_event()
print("ok")
"""


def test_exit_with_open_handles():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok" and r.stderr == ""
