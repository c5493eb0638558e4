#!/usr/bin/env python3
"""Lists the device code embedded in the GPU plugins and checks every kernel is there.

usage: check_embedded_kernels.py KERNEL_LIST_H --cuda FATBIN ARCH[,ARCH...]
       check_embedded_kernels.py KERNEL_LIST_H --hip BUNDLE GFX[,GFX...]

Expected kernel names come from kernels/accel_kernel_list.h (ACCEL_KERNEL(ID, name) lines).
CUDA: the fatbin (built with -no-compress) is walked entry by entry; every arch must have an
ELF (SASS) entry whose symbol table (readelf -sW) defines every kernel, and the highest arch a
PTX entry with a .entry for every kernel. cuobjdump -lelf -lptx is run as well when installed.
HIP: clang-offload-bundler --list names the code objects; each one is unbundled and
llvm-readelf -sW must show every kernel and its .kd descriptor.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def kernel_names(list_h):
    with open(list_h) as f:
        return re.findall(r"^ACCEL_KERNEL\(\s*\w+\s*,\s*(\w+)\s*[,)]", f.read(), re.M)


def elf_symbols(path, readelf="readelf"):
    out = subprocess.run([readelf, "-sW", path], capture_output=True, text=True, check=True).stdout
    # The name is the last column (cubins print their visibility as "[<other>: 10]").
    return {cols[-1] for cols in (l.split() for l in out.splitlines()) if len(cols) >= 8}


def fatbin_entries(data):
    """Yields (kind, arch, payload) for each entry: kind 1 = PTX, 2 = ELF."""
    off = 0
    while off + 16 <= len(data):
        magic, _version, hsize, size = struct.unpack_from("<IHHQ", data, off)
        if magic != 0xBA55ED50:
            raise ValueError(f"no fatbin magic at offset {off}")
        pos, end = off + hsize, off + hsize + size
        while pos + 64 <= end:
            kind, _, ehsize, payload = struct.unpack_from("<HHIQ", data, pos)
            arch = struct.unpack_from("<I", data, pos + 28)[0]
            flags = struct.unpack_from("<Q", data, pos + 40)[0]
            if ehsize == 0:
                break
            if flags & 0x2000 or flags & 0x8000:
                raise ValueError("compressed fatbin entry: build with -no-compress")
            yield kind, arch, data[pos + ehsize:pos + ehsize + payload]
            pos += ehsize + payload
        off = end


def check_cuda(fatbin, archs, names, tmp):
    errors = []
    with open(fatbin, "rb") as f:
        data = f.read()
    elf, ptx = {}, {}
    for i, (kind, arch, payload) in enumerate(fatbin_entries(data)):
        if kind == 2:
            path = os.path.join(tmp, f"sm_{arch}_{i}.cubin")
            with open(path, "wb") as f:
                f.write(payload)
            elf[arch] = elf_symbols(path)
        elif kind == 1:
            ptx[arch] = set(re.findall(rb"\.entry\s+(\w+)", payload))
    print("fatbin ELF (SASS) archs:", " ".join(f"sm_{a}" for a in sorted(elf)))
    print("fatbin PTX archs:", " ".join(f"compute_{a}" for a in sorted(ptx)))
    for a in archs:
        missing = [n for n in names if n not in elf.get(a, set())]
        if a not in elf:
            errors.append(f"no SASS for sm_{a}")
        elif missing:
            errors.append(f"sm_{a} SASS lacks {missing}")
    top = max(archs)
    if top not in ptx:
        errors.append(f"no PTX for compute_{top}")
    else:
        missing = [n for n in names if n.encode() not in ptx[top]]
        if missing:
            errors.append(f"compute_{top} PTX lacks {missing}")
    cuobjdump = shutil.which("cuobjdump") or shutil.which("/usr/local/cuda/bin/cuobjdump")
    if cuobjdump:
        listing = subprocess.run([cuobjdump, "-lelf", "-lptx", fatbin], capture_output=True,
                                 text=True, check=True).stdout
        print(listing, end="")
        for a in archs:
            if f"sm_{a}" not in listing:
                errors.append(f"cuobjdump lists no sm_{a}")
    else:
        print("cuobjdump not installed: fatbin parsed directly")
    return errors


def check_hip(bundle, targets, names, tmp):
    errors = []
    bundler = shutil.which("clang-offload-bundler") or next(
        iter(sorted(glob.glob("/usr/lib/llvm-*/bin/clang-offload-bundler"), reverse=True)), None)
    readelf = shutil.which("llvm-readelf") or "readelf"
    if not bundler:
        return ["clang-offload-bundler not found"]
    listed = subprocess.run([bundler, "--list", "--type=o", f"--input={bundle}"],
                            capture_output=True, text=True, check=True).stdout.split()
    print("bundle entries:", " ".join(listed))
    for t in targets:
        triple = next((e for e in listed if e.endswith("--" + t) or e.endswith("-" + t)), None)
        if not triple:
            errors.append(f"no code object for {t}")
            continue
        out = os.path.join(tmp, f"{t}.co")
        subprocess.run([bundler, "--unbundle", "--type=o", f"--input={bundle}",
                        f"--targets={triple}", f"--output={out}"], check=True)
        syms = elf_symbols(out, readelf)
        missing = [n for n in names if n not in syms or n + ".kd" not in syms]
        if missing:
            errors.append(f"{t} code object lacks {missing}")
        else:
            print(f"{t}: all {len(names)} kernels (+ .kd descriptors)")
    return errors


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("--cuda", "--hip"):
        print(__doc__, file=sys.stderr)
        return 2
    names = kernel_names(sys.argv[1])
    if not names:
        print("FAIL: no ACCEL_KERNEL entries in", sys.argv[1])
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[2] == "--cuda":
            archs = [int(a.replace("sm_", "")) for a in sys.argv[4].split(",") if a]
            errors = check_cuda(sys.argv[3], archs, names, tmp)
        else:
            errors = check_hip(sys.argv[3], [t for t in sys.argv[4].split(",") if t], names, tmp)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"ok: {len(names)} kernels present for every target")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
