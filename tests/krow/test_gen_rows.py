"""kernels/gen_kernel_rows.py refuses what a generated row cannot state, with a message naming
the row and the reason, and leaves a row whose struct accel_kernel_abi.h declares to its
hand-written launch (nothing generated for the built-in table).

usage: test_gen_rows.py GEN_KERNEL_ROWS.py ACCEL_KERNEL_ABI.h ACCEL_KERNEL_LIST.h AXPBY_ROW.h
"""
import os
import subprocess
import sys
import tempfile


def run(gen, abi, rows, out_dir):
    params = os.path.join(out_dir, "p.h")
    r = subprocess.run([sys.executable, gen, "--abi", abi, *rows, "--params", params,
                        "--python", os.path.join(out_dir, "k.py")],
                       capture_output=True, text=True, check=False)
    return r.returncode, r.stderr, (open(params).read() if r.returncode == 0 else "")


def main():
    gen, abi, table, axpby = sys.argv[1:]
    failures = 0
    with open(axpby) as f:
        row = f.read()
    bad = {  # a change to the test row -> a word of the refusal
        "io_if": (('ACC_IO(RW), ACC_F32_DT', 'ACC_IO_IF(flags, 1u, R, RW), ACC_F32_DT'), "ACC_IO_IF"),
        "optional": (('ACC_LIST("y"', 'ACC_OPT_LIST("y"'), "ACC_OPT_LIST"),
        "no_field": (("ACC_FIELD(beta)", "ACC_NO_FIELD"), "ACC_NO_FIELD"),
        "per_stream": (("ACC_TABLE_SHARED", "ACC_TABLE_PER_STREAM"), "PER_STREAM"),
        "no_op": (('ACC_OP("accel_test_axpby", ACC_TABLE_SHARED)', "ACC_NO_OP"), "ACC_OP"),
    }
    with tempfile.TemporaryDirectory() as d:
        rc, err, params = run(gen, abi, [table], d)
        if rc != 0 or "typedef" in params:
            print(f"the built-in table: rc {rc}, structs generated: {err}{params}")
            failures += 1
        rc, err, params = run(gen, abi, [table, axpby], d)
        if rc != 0 or "} acc_test_axpby_params_t;" not in params:
            print(f"the test row: rc {rc}: {err}")
            failures += 1
        for name, ((old, new), word) in bad.items():
            assert old in row, name
            path = os.path.join(d, name + ".h")
            with open(path, "w") as f:
                f.write(row.replace(old, new))
            rc, err, _ = run(gen, abi, [path], d)
            if rc == 0 or "TEST_AXPBY" not in err or word not in err:
                print(f"{name}: rc {rc}, message '{err.strip()}' (want a refusal naming {word})")
                failures += 1
    print("ok" if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
