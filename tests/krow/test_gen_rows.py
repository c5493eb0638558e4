"""kernels/gen_kernel_rows.py refuses what a generated row cannot state, with a message naming
the row and the reason (a host value before a device scalar among them), generates a row
without lists (one block), and leaves a row whose struct accel_kernel_abi.h declares to its
hand-written launch (nothing generated for the built-in table). --row-ops-c generates the public
functions of the table's ACC_ROW_OP rows, exactly those, and holds their declared structs to the
row: the C compiler accepts the assertions for the table as it is and rejects them for a row whose
scalars are swapped.

usage: test_gen_rows.py GEN_KERNEL_ROWS.py ACCEL_KERNEL_ABI.h ACCEL_KERNEL_LIST.h AXPBY_ROW.h
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(gen, abi, rows, out_dir):
    params = os.path.join(out_dir, "p.h")
    r = subprocess.run([sys.executable, gen, "--abi", abi, *rows, "--params", params,
                        "--python", os.path.join(out_dir, "k.py")],
                       capture_output=True, text=True, check=False)
    return r.returncode, r.stderr, (open(params).read() if r.returncode == 0 else "")


def row_ops(gen, abi, table, out_dir):
    """(rc, stderr, generated C) of --row-ops-c over table."""
    out = os.path.join(out_dir, "row_ops.c")
    r = subprocess.run([sys.executable, gen, "--abi", abi, table, "--row-ops-c", out],
                       capture_output=True, text=True, check=False)
    return r.returncode, r.stderr, (open(out).read() if r.returncode == 0 else "")


def asserts_compile(abi, code, out_dir):
    """Whether the layout assertions of code compile against abi (None: no C compiler)."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        return None
    lines = [l for l in code.splitlines() if "not the row's" in l]
    src = os.path.join(out_dir, "asserts.c")
    with open(src, "w") as f:
        f.write("#include <stddef.h>\n#include <stdint.h>\ntypedef uint64_t acc_u64;\n"
                "typedef uint32_t acc_u32;\ntypedef float acc_f32;\n"
                f'#include "{os.path.abspath(abi)}"\nvoid f(void);\nvoid f(void) {{\n' + "\n".join(lines) + "\n}\n")
    r = subprocess.run([cc, "-std=c11", "-fsyntax-only", src], capture_output=True, check=False)
    return r.returncode == 0


def check_row_ops(gen, abi, table, d):
    """Failures of --row-ops-c (see the module's comment)."""
    failures = 0
    with open(table) as f:
        text = f.read()
    want = re.findall(r'ACC_ROW_OP\("(\w+)"\)', text)
    rc, err, code = row_ops(gen, abi, table, d)
    got = re.findall(r"^accel_status_t (\w+)\(", code, re.M)
    if rc != 0 or not want or got != want or code.count("kop_row_call(") != len(want):
        print(f"--row-ops-c: rc {rc} {err}: functions {got}, want the ACC_ROW_OP rows' {want}")
        failures += 1
    if asserts_compile(abi, code, d) is False:
        print("--row-ops-c: the table's own layout assertions do not compile")
        failures += 1
    swaps = {  # a change to the table -> what must fail
        "unscale scalars swapped": ((r'ACC_SCALAR\("inv_scale_dev".*?ACC_ALL_BLOCKS\),\s*'
                                     r'ACC_SCALAR\("found_inf_dev".*?ACC_ALL_BLOCKS\)'), "compile"),
        "io_if row op": (r'ACC_OP\("accel_update_hp_grads", ACC_TABLE_SHARED\)', "ACC_IO_IF"),
    }
    for name, (pattern, want_fail) in swaps.items():
        m = re.search(pattern, text, re.S)
        assert m, name
        if want_fail == "compile":
            a, b = re.findall(r'ACC_SCALAR\(.*?ACC_ALL_BLOCKS\)', m.group(0), re.S)
            changed = text[:m.start()] + b + ",\n" + a + text[m.end():]
        else:
            changed = text[:m.start()] + 'ACC_ROW_OP("accel_update_hp_grads")' + text[m.end():]
        path = os.path.join(d, "table.h")
        with open(path, "w") as f:
            f.write(changed)
        rc, err, code = row_ops(gen, abi, path, d)
        if want_fail == "compile":
            ok = rc == 0 and asserts_compile(abi, code, d) in (False, None)
        else:
            ok = rc != 0 and "UPDATE_HP" in err and want_fail in err
        if not ok:
            print(f"{name}: rc {rc}, '{err.strip()}': not refused")
            failures += 1
    return failures


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
        "value_first": (('(ACC_SCALAR("alpha_dev"', '(ACC_VALUE("g0", ACC_FIELD(g0)),\n'
                         'ACC_SCALAR("alpha_dev"'), "ACC_VALUE"),
    }
    with tempfile.TemporaryDirectory() as d:
        rc, err, params = run(gen, abi, [table], d)
        if rc != 0 or "typedef" in params:
            print(f"the built-in table: rc {rc}, structs generated: {err}{params}")
            failures += 1
        rc, err, params = run(gen, abi, [table, axpby], d)
        if (rc != 0 or "} acc_test_axpby_params_t;" not in params or
                "acc_f32 gamma;" not in params):
            print(f"the test row: rc {rc}: {err}")
            failures += 1
        # without lists: one block, no chunk table; the wrapper's device from stream= or device=
        path = os.path.join(d, "no_lists.h")
        with open(path, "w") as f:
            f.write(row.replace(row[row.index("(ACC_LIST"):row.index("(ACC_SCALAR")], "(), "))
        rc, err, params = run(gen, abi, [path], d)
        wrapper = open(os.path.join(d, "k.py")).read() if rc == 0 else ""
        if rc != 0 or "acc_u32 num_chunks;" not in params or \
                "def test_axpby(alpha, beta, gamma, *, stream=None, device=None):" not in wrapper:
            print(f"a row without lists: rc {rc}: {err}")
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
        failures += check_row_ops(gen, abi, table, d)
    print("ok" if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
