#!/usr/bin/env python3
"""Reads kernel table rows and generates what a row implies: a kernel = its body + one row.

usage: gen_kernel_rows.py --abi accel_kernel_abi.h ROWS.h... [--params OUT.h] [--ops-h OUT.h]
                          [--ops-c OUT.c] [--python OUT.py] [--row-ops-c OUT.c]

Each ROWS.h (the table, then a build's extra rows) holds ACCEL_KERNEL(...) rows (kernels/accel_kernel_list.h describes the format); reading
stops at `#ifdef ACCEL_EXTRA_KERNEL_ROWS`. A row whose params_t no struct of accel_kernel_abi.h
defines is a generated row, and gets:
  --params  its parameter struct (the fields the row names, in the ABI's order: chunks, the
            scalars' ACC_FIELD members as acc_u64, num_chunks, the lists' ACC_ANY_DT fields as
            acc_u32, the ACC_VALUE fields as acc_f32, a `reserved` pad to an even number of
            4-byte fields);
  --ops-h   its public prototype: accel_status_t fn(stream, the lists, size_t n, the scalars,
            the values); a scalar's pointer type follows its size (PUBLIC_TYPES);
  --ops-c   its definition: the row's validation (core/kernel_ops.c kop_row_call) and one
            launch, one block per chunk, of a generated body that fills the struct field by
            field as a hand-written one would;
  --python  its Python wrapper (accel.<fn without accel_>(lists..., scalars..., values...,
            *, stream=, device=); a scalar's argument is its name without "_dev"; the values
            keyword-only after an optional scalar), beside the package's own in
            python/accel/_tensors.py. The table's ACC_ROW_OP rows get theirs too.
A built-in row whose op is ACC_ROW_OP("public function") keeps its struct in accel_kernel_abi.h
and its prototype in <accel/accel_kernels.h> (the public ABI) and gets
  --row-ops-c  its public function's definition, the same launch (a row without lists: one
               block, no chunk table, no n), with static assertions that the declared struct
               has exactly the layout --params would generate (so the row states the struct
               and the compiler holds the copy to it).
gen_kernel_abi.py reads the table through read_rows() too.
"""
import argparse
import re
import sys

STOP = "#ifdef ACCEL_EXTRA_KERNEL_ROWS"


class RowError(SystemExit):
    pass


def split_top(text):
    """text split at its top-level commas, each part stripped."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def call(text):
    """('NAME', [args]) of `NAME(args)`, or ('NAME', None) of a bare name."""
    m = re.fullmatch(r"(\w+)\s*(?:\((.*)\))?", text.strip(), re.S)
    if not m:
        raise RowError(f"gen_kernel_rows.py: cannot read '{text}'")
    return m.group(1), (split_top(m.group(2)) if m.group(2) is not None else None)


def unparen(text):
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise RowError(f"gen_kernel_rows.py: expected a parenthesised list, got '{text}'")
    return split_top(text[1:-1])


def parse_row(text):
    f = split_top(text)
    if len(f) != 6:
        raise RowError(f"gen_kernel_rows.py: a row has 6 fields, got {len(f)}: {text[:60]}")
    ident, symbol, ptype, op, lists, scalars = f
    row = {"id": ident, "symbol": symbol, "type": ptype, "fn": None, "per_stream": False,
           "lists": [], "scalars": []}
    op_name, op_args = call(op)
    row["row_op"] = op_name == "ACC_ROW_OP"
    if op_name in ("ACC_OP", "ACC_ROW_OP"):
        row["fn"] = op_args[0].strip('"')
        row["per_stream"] = op_name == "ACC_OP" and op_args[1] == "ACC_TABLE_PER_STREAM"
    for item in unparen(lists):
        kind, a = call(item)
        row["lists"].append({"name": a[0].strip('"'), "optional": kind == "ACC_OPT_LIST",
                             "access": call(a[1]), "dtype": call(a[2]), "alias": a[3]})
    row["values"] = []
    for item in unparen(scalars):
        kind, a = call(item)
        if kind == "ACC_VALUE":
            row["values"].append({"name": a[0].strip('"'), "field": call(a[1])[1][0]})
            continue
        if row["values"]:
            raise RowError(f"gen_kernel_rows.py: row {ident}: ACC_VALUE entries come after "
                           "every ACC_SCALAR and ACC_SCRATCH")
        if kind == "ACC_SCRATCH":
            row["scalars"].append({"scratch": True, "field": a[0]})
            continue
        field = call(a[1])
        row["scalars"].append({"scratch": False, "name": a[0].strip('"'),
                               "field": field[1][0] if field[0] == "ACC_FIELD" else None,
                               "size": a[2], "mode": a[3], "required": a[4] == "ACC_REQUIRED",
                               "blocks": a[5]})
    return row


def read_rows(path):
    """Every ACCEL_KERNEL row of path (comments and preprocessor lines ignored)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().split(STOP)[0]
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    rows, pos = [], 0
    while True:
        m = re.compile(r"\bACCEL_KERNEL\s*\(").search(text, pos)
        if not m:
            return rows
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            raise RowError(f"gen_kernel_rows.py: {path}: unbalanced row at offset {m.start()}")
        rows.append(parse_row(text[m.end():i - 1]))
        pos = i


def defined_structs(abi_path):
    with open(abi_path, encoding="utf-8") as f:
        return set(re.findall(r"}\s*(\w+)\s*;", f.read()))


def check_generated(row):
    """Refuses what the table-driven launch cannot fill from the row alone."""
    def bad(why):
        raise RowError(f"gen_kernel_rows.py: row {row['id']} ({row['type']} is generated): {why}")
    if not row["fn"]:
        bad("needs ACC_OP(\"public function\", ACC_TABLE_SHARED)")
    if row["per_stream"]:
        bad("ACC_TABLE_PER_STREAM carries scratch: declare its struct in accel_kernel_abi.h")
    for li in row["lists"]:
        if li["access"][0] != "ACC_IO":
            bad(f"list {li['name']}: ACC_IO_IF needs a flags argument: use ACC_IO(...)")
        if li["optional"]:
            bad(f"list {li['name']}: ACC_OPT_LIST (the wrappers take every list)")
    for s in row["scalars"]:
        if s["scratch"] or not s["field"]:
            bad("ACC_SCRATCH and ACC_NO_FIELD need a hand-written launch")
    if len(row["scalars"]) > 8 or len(row["lists"]) > 8 or len(row["values"]) > 4:
        bad("at most 8 lists, 8 scalars and 4 values")


def struct_fields(row):
    """[(ctype, name)] of a generated row's parameter struct."""
    u64 = ["chunks"] + [s["field"] for s in row["scalars"]]
    u32 = ["num_chunks"]
    for li in row["lists"]:
        if li["dtype"][0] == "ACC_ANY_DT" and li["dtype"][1][0] not in u32:
            u32.append(li["dtype"][1][0])
    f32 = [v["field"] for v in row["values"]]
    pad = [("acc_u32", "reserved")] if (len(u32) + len(f32)) % 2 else []
    return ([("acc_u64", n) for n in u64] + [("acc_u32", n) for n in u32] +
            [("acc_f32", n) for n in f32] + pad)


# A scalar's public pointer type, by its row's size: 4 bytes are a float unless the size names
# another type; a size that names none is void.
PUBLIC_TYPES = {"4": "float", "sizeof(acc_u32)": "uint32_t", "sizeof(acc_f32)": "float",
                "sizeof(acc_amp_scaler_t)": "accel_loss_scaler_t",
                "sizeof(acc_adam_args_t)": "accel_adam_args_t"}


def scalar_ctype(s):
    const = "const " if s["mode"] == "R" else ""
    return f"{const}{PUBLIC_TYPES.get(s['size'].replace(' ', ''), 'void')} *"


def prototype(row):
    """The public function: the stream, the lists and their length n (a row without lists has
    neither: one block), the scalars' pointers, then the values."""
    args = ["accel_stream_t *stream"]
    args += [f"const accel_tensor_t *{li['name']}" for li in row["lists"]]
    args += ["size_t n"] if row["lists"] else []
    args += [f"{scalar_ctype(s)}{s['name']}" for s in row["scalars"]]
    args += [f"float {v['name']}" for v in row["values"]]
    return f"accel_status_t {row['fn']}({', '.join(args)})"


def doc(row):
    lists = ", ".join(f"{li['name']} ({li['access'][1][0]})" for li in row["lists"])
    scalars = ", ".join(f"{s['name']} ({s['mode']})" for s in row["scalars"]) or "none"
    values = "".join(f"; host value {v['name']}" for v in row["values"])
    where = f"over lists {lists}" if lists else "one block, no lists"
    return f"/* {row['symbol']} {where}; device scalars {scalars}{values}. */"


HEADER = "/* Generated by kernels/gen_kernel_rows.py from {src}; do not edit. */\n"


def gen_params(rows, src):
    out = [HEADER.format(src=src)]
    for row in rows:
        out.append(f"/* {row['symbol']}: the row of {row['id']}. */")
        out.append(f"typedef struct {row['type'].removesuffix('_t')} {{")
        out += [f"  {t} {n};" for t, n in struct_fields(row)]
        out.append(f"}} {row['type']};\n")
    return "\n".join(out)


def gen_ops_h(rows, src, guard):
    out = [HEADER.format(src=src), f"#ifndef {guard}", f"#define {guard}", "",
           "#include <accel/accel_kernels.h>", "", "#ifdef __cplusplus", 'extern "C" {',
           "#endif", ""]
    for row in rows:
        out += [doc(row), f"ACCEL_API {prototype(row)};", ""]
    out += ["#ifdef __cplusplus", "}", "#endif", "", "#endif", ""]
    return "\n".join(out)


def layout_asserts(row):
    """Static assertions that a declared struct has the layout struct_fields(row) generates."""
    t, off, out = row["type"], 0, []
    for ctype, name in struct_fields(row):
        size = 8 if ctype == "acc_u64" else 4  # acc_u32 and acc_f32
        if name != "reserved":
            out.append(f"  _Static_assert(offsetof({t}, {name}) == {off} && "
                       f"sizeof((({t} *)0)->{name}) == {size}, \"{t}.{name}: not the row's\");")
        off += size
    out.append(f"  _Static_assert(sizeof({t}) == {off}, \"{t}: not the row's size\");")
    return out


def body_fn(row):
    """The launch body of a row (kop_run's callback): the parameter struct filled field by field,
    as a hand-written body does, then one launch."""
    t, name = row["type"], row["fn"].removeprefix("accel_") + "_body"
    lists = bool(row["lists"])
    out = [f"static accel_status_t {name}(const kop_req_t *r, kop_entry_t *e, "
           "const void *user) {",
           f"  {t} p;", "  memset(&p, 0, sizeof p);"]
    if row["values"]:
        out.append("  const float *values = user;")
    else:
        out.append("  (void)user;")
    if lists:
        out += ["  p.chunks = e->chunks_addr;", "  p.num_chunks = e->num_chunks;"]
    else:
        out.append("  (void)e; /* no lists: one block, no chunk table (chunks, num_chunks 0) */")
    for k, li in enumerate(row["lists"]):
        if li["dtype"][0] == "ACC_ANY_DT":
            out.append(f"  p.{li['dtype'][1][0]} = (acc_u32)r->lists[{k}][0].dtype;")
    for k, s in enumerate(row["scalars"]):
        out.append(f"  p.{s['field']} = ADDR(r->scalars[{k}]);")
    for k, v in enumerate(row["values"]):
        out.append(f"  p.{v['field']} = values[{k}];")
    blocks = "e->num_chunks" if lists else "1u"
    out += [f"  return kop_launch(r, ACCEL_KERNEL_{row['id']}, {blocks}, &p, sizeof p, "
            f"{'e' if lists else 'NULL'});", "}", ""]
    return name, out


def gen_ops_c(rows, src, ops_h, asserts=False):
    out = [HEADER.format(src=src), "#include <stddef.h>", "#include <string.h>", "",
           '#include "kernel_ops_internal.h"', f'#include {ops_h}', ""]
    for row in rows:
        name, body = body_fn(row)
        # the request as a hand-written launch fills it (no copies of the call's arrays)
        req = [f"KOP_REQ({row['id']})", ".stream = stream"]
        if row["lists"]:
            req += [f".lists = {{{', '.join(li['name'] for li in row['lists'])}}}", ".n = n"]
        if row["scalars"]:
            req.append(f".scalars = {{{', '.join(s['name'] for s in row['scalars'])}}}")
        out += body + [f"{prototype(row)} {{"] + (layout_asserts(row) if asserts else [])
        out.append(f"  kop_req_t r = {{{', '.join(req)}}};")
        if row["values"]:
            names = ", ".join(v["name"] for v in row["values"])
            out.append(f"  const float values[] = {{{names}}};")
        out += [f"  return kop_row_call(&r, {name}, {'values' if row['values'] else 'NULL'});",
                "}", ""]
    return "\n".join(out)


def py_arg(s):
    """A scalar's Python argument: its row name without the "_dev" of C's device pointers."""
    return s["name"].removesuffix("_dev")


def py_def(row):
    """The wrapper's def line: the lists, the scalars (None for an optional one), the values
    (keyword-only after an optional scalar: Python has no required argument after a default)."""
    scalars = [py_arg(s) + ("" if s["required"] else "=None") for s in row["scalars"]]
    values = [v["name"] for v in row["values"]]
    optional = any(not s["required"] for s in row["scalars"])
    args = [li["name"] for li in row["lists"]] + scalars
    args += (["*"] + values + ["stream=None", "device=None"] if optional and values
             else values + ["*", "stream=None", "device=None"])
    return f"def {row['fn'].removeprefix('accel_')}({', '.join(args)}):"


def py_call(row):
    """The lines that launch: the lists' length check, then the C call."""
    lists = [li["name"] for li in row["lists"]]
    ptrs = [f"_scalar_ptr({py_arg(s)}, {scalar_ctype(s).strip()!r}) if {py_arg(s)} is not None "
            "else ffi.NULL" for s in row["scalars"]]
    args = ["s._handle()"] + [l + ".array" for l in lists] + ([lists[0] + ".n"] if lists else [])
    args += ptrs + [f"float({v['name']})" for v in row["values"]]
    out = [f"    def call({', '.join(lists)}):"]
    if len(lists) > 1:
        out += [f"        if len({{{', '.join(l + '.n' for l in lists)}}}) != 1:",
                f"            raise ValueError(\"{row['fn']}: list lengths differ\")"]
    return out + [f"        return lib.{row['fn']}({', '.join(args)})"]


def gen_python(rows, src):
    out = ['"""Generated by kernels/gen_kernel_rows.py from ' + src + '; do not edit.',
           "", "The Python wrappers of the kernel table's rows whose public function comes from",
           "the row: a build's generated rows and the ACC_ROW_OP built-ins (docs/KERNELS.md).",
           '"""', "from ._lib import ffi, lib",
           "from ._tensors import _device_of, _run, _scalar_ptr, _stream",
           "", f"__all__ = {[row['fn'].removeprefix('accel_') for row in rows]!r}", ""]
    for row in rows:
        lists = [li["name"] for li in row["lists"]]
        keep = ", ".join(py_arg(s) for s in row["scalars"])
        out += ["", py_def(row), f'    """{row["fn"]}: {doc(row)[3:-3]}"""',
                f"    dev = _device_of(device, {', '.join(lists + ['stream'])})",
                "    s = _stream(stream, dev)", ""]
        out += py_call(row)
        out += [f"    _run(s, call, [{', '.join(f'(dev, {l})' for l in lists)}], [{keep}])", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--abi", required=True)
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--params")
    ap.add_argument("--ops-h")
    ap.add_argument("--ops-c")
    ap.add_argument("--python")
    ap.add_argument("--row-ops-c")
    a = ap.parse_args()
    have = defined_structs(a.abi)
    table = [r for path in a.rows for r in read_rows(path)]
    rows = [r for r in table if r["type"] not in have]
    builtin = [r for r in table if r["row_op"] and r["type"] in have]
    for r in rows + builtin:
        check_generated(r)
    ops_h_name = (a.ops_h or "").replace("\\", "/").split("/")[-1]
    src = " and ".join(p.replace("\\", "/").split("/")[-1] for p in a.rows)
    outputs = {a.params: lambda: gen_params(rows, src),
               a.ops_h: lambda: gen_ops_h(rows, src, "ACCEL_GEN_" + re.sub(r"\W", "_", (a.ops_h or "").split("/")[-1].upper())),
               a.ops_c: lambda: gen_ops_c(rows, src, '"' + ops_h_name + '"'),
               a.row_ops_c: lambda: gen_ops_c(builtin, src, "<accel/accel_kernels.h>", True),
               a.python: lambda: gen_python(builtin + rows, src)}
    for path, make in outputs.items():
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(make())
    return 0


if __name__ == "__main__":
    sys.exit(main())
