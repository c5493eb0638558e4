"""The binding's struct layouts against a C program compiled with the public headers: size of
every struct and offset of every field (cffi's API mode checks the same at import; this test
states it where a reader looks)."""
import os
import shutil
import subprocess

import pytest

from accel import ffi


def struct_types():
    typedefs, _, _ = ffi.list_types()
    for name in typedefs:
        t = ffi.typeof(name)
        if t.kind == "struct" and name.startswith("accel_") and not is_opaque(t):
            yield name, t


def is_opaque(t):
    """An opaque handle (accel_device_t ...) has no size. Asked through sizeof: reading .fields
    of an opaque struct aborts the interpreter with cffi 2.1 (an assertion in _cffi_backend)."""
    try:
        ffi.sizeof(t)
        return False
    except ffi.error:
        return True


def test_every_struct_matches_the_c_compiler(tmp_path):
    cc = os.environ.get("CC", "cc").split()
    if shutil.which(cc[0]) is None:
        pytest.skip(f"no C compiler ({cc[0]})")
    includes = os.environ.get("ACCEL_INCLUDE_DIRS")
    if not includes:
        pytest.skip("ACCEL_INCLUDE_DIRS is not set (the meson test sets it)")
    lines, expected = [], []
    for name, t in struct_types():
        lines.append(f'printf("%zu\\n", sizeof({name}));')
        expected.append(ffi.sizeof(name))
        for field, _ in t.fields:
            lines.append(f'printf("%zu\\n", offsetof({name}, {field}));')
            expected.append(ffi.offsetof(name, field))
    assert len(expected) > 20
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <accel/accel.h>\n"
                   "#include <accel/accel_kernels.h>\n#include <accel/accel_interop.h>\n"
                   "int main(void) {\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    exe = tmp_path / "layout"
    subprocess.run(cc + [f"-I{d}" for d in includes.split(os.pathsep)] +
                   [str(src), "-o", str(exe)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True,
                                          text=True).stdout.split()]
    assert got == expected
