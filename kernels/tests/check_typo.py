#!/usr/bin/env python3
"""A one-character typo in a kernel body gives one compiler error, at the typo's line.

usage: check_typo.py KERNELS_DIR CC [CLANG]

Copies the kernel sources (KERNELS_DIR) to a temporary directory and, for each case below,
puts a one-character typo into one line of a copied body, compiles the CPU form
(cpu/accel_cpu_kernels.c, the C prelude, ISA clones included) with CC and, when CLANG is
given, the OpenCL C form (opencl/accel_kernels.cl, SIMT and lane loops) with clang -x cl, and
requires exactly one error diagnostic, naming the copied file and the typo's line. The copy
without a typo must compile with no error (so the count is the typo's). docs/KERNELS.md, "The
dialect". Exit status 0: every case passed; 1: a case failed (its diagnostics are printed).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (file, the exact line text as it stands, the same line with one character changed): a line
# of an element function, statements of body functions, the dispatch lines of kernels (a
# nested one included: the norm's dtype x kind) and a kernel's own statements. norm.h:33 of
# the statement form (a body pasted through nested macro arguments) gave 72 errors here.
CASES = [
    ("elementwise.h", "  acc_store(dst, i, dt, acc_load(dst, i, dt) * c);",
     "  acc_store(dst, i, dt, acc_load(dst, i, dy) * c);"),
    ("elementwise.h", "  const acc_u64 lp = chunks[b].ptr[0];",
     "  const acc_u64 lp = chunkz[b].ptr[0];"),
    ("elementwise.h", "  ACC_ELEM_MAP(count, acc_fill_elem, dst, dt, P.value);",
     "  ACC_ELEM_MAP(count, acc_fill_elem, dst, dt, P.valur);"),
    ("norm.h", "  const acc_f32 p = P.p;", "  const acc_f32 p = P.q;"),
    ("norm.h", "  const acc_u32 kind = P.kind;", "  const acc_u32 kind = P.kimd;"),
    ("norm.h", "      ACC_DTYPE_CALL(P.dtype, ACC_NORM_KIND_CALL, kind, acc_norm_chunk, P, b, a);",
     "      ACC_DTYPE_CALL(P.dtypr, ACC_NORM_KIND_CALL, kind, acc_norm_chunk, P, b, a);"),
    ("norm.h", "  const acc_u32 h = ACC_PTR(const acc_u16, src)[i] & 0x7fffu;",
     "  const acc_u32 h = ACC_PTR(const acc_u16, srd)[i] & 0x7fffu;"),
    ("elementwise.h", "  const acc_f32 s = ACC_PTR(const acc_f32, P.scale)[0];",
     "  const acc_f32 s = ACC_PTR(const acc_f32, P.scalw)[0];"),
    ("elementwise.h", "  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_scale_chunk, chunks, b, s);",
     "  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtypw, acc_scale_chunk, chunks, b, s);"),
    ("step.h", "  const acc_u32 mode = R.mode, go = R.go, model = (acc_u32)(S.model != 0u);",
     "  const acc_u32 mode = R.mode, go = R.go, model = (acc_u32)(S.modl != 0u);"),
    ("step.h", "    ACC_DTYPE_CALL(P.grad_dtype, ACC_FLAG_CALL, form1, ACC_STEP_ZERO_GRADS, acc_step_grad_row_z,",
     "    ACC_DTYPE_CALL(P.grad_dtypr, ACC_FLAG_CALL, form1, ACC_STEP_ZERO_GRADS, acc_step_grad_row_z,"),
    ("step.h", "    ACC_DTYPE_CALL(P.dtype, ACC_NORM_KIND_CALL, kind, ACC_FLAG_CALL, accumulate,",
     "    ACC_DTYPE_CALL(P.dtypr, ACC_NORM_KIND_CALL, kind, ACC_FLAG_CALL, accumulate,"),
]

ERROR = re.compile(r"^(.*?):(\d+):(\d+:)? (fatal )?error[: ]")


def compile_errors(cmd):
    """The error diagnostics (file, line) of one compile."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    out = res.stdout + res.stderr
    errors = [(m.group(1), int(m.group(2))) for m in map(ERROR.match, out.splitlines()) if m]
    if res.returncode != 0 and not errors:
        errors.append(("<no diagnostic>", 0))
    return errors, out


def commands(work, cc, clang):
    c_form = [cc, "-std=gnu11", "-O2", "-fno-math-errno", "-Wall", "-Wextra", "-I", work,
              "-I", os.path.join(work, "cpu"), "-c", "-o", os.devnull,
              os.path.join(work, "cpu", "accel_cpu_kernels.c")]
    forms = [("C prelude", c_form)]
    if clang:
        cl = [clang, "-x", "cl", "-cl-std=CL1.2", "-target", "spir64", "-fsyntax-only",
              "-Xclang", "-finclude-default-header", "-ffp-contract=off",
              os.path.join(work, "opencl", "accel_kernels.cl")]
        forms.append(("OpenCL C (SIMT)", cl))
        forms.append(("OpenCL C (lane loops)", cl + ["-DACC_LANE_LOOPS"]))
    return forms


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    src, cc = sys.argv[1], sys.argv[2]
    clang = sys.argv[3] if len(sys.argv) == 4 else None
    failed = 0
    with tempfile.TemporaryDirectory(prefix="accel-typo-") as tmp:
        work = os.path.join(tmp, "kernels")
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("tests", "*.py", "*.build"))
        forms = commands(work, cc, clang)
        for name, cmd in forms:
            errors, out = compile_errors(cmd)
            if errors:
                print(f"FAIL the unchanged copy does not compile ({name}):\n{out}")
                return 1
        for fname, line, typo in CASES:
            path = os.path.join(work, fname)
            with open(path, encoding="utf-8") as f:
                text = f.read().split("\n")
            if text.count(line) != 1:
                print(f"FAIL {fname}: the case's line is not there once (update CASES): {line!r}")
                return 1
            lineno = text.index(line) + 1
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(text[:lineno - 1] + [typo] + text[lineno:]))
            for name, cmd in forms:
                errors, out = compile_errors(cmd)
                ok = len(errors) == 1 and errors[0][1] == lineno and \
                    os.path.realpath(errors[0][0]) == os.path.realpath(path)
                print(f"{'ok  ' if ok else 'FAIL'} {name}: {fname}:{lineno}: {len(errors)} error(s)"
                      f" {errors[:3]}")
                if not ok:
                    failed += 1
                    print(out[:4000])
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(text))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
