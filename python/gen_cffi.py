#!/usr/bin/env python3
"""Generates the C source of accel's cffi extension (API mode) from the public headers.

usage: gen_cffi.py OUT.c HEADER...

The cdef is derived from the headers themselves, not typed by hand: comments, include guards,
the C++ guard and ACCEL_API are dropped; every enumerator and integer #define becomes `...`, so
the compiler supplies the values; functions and structs are kept as written. cffi's API mode
then compiles the module against the same headers: each function is called through its real
prototype (a changed signature fails to compile), and every struct is declared in full, so the
compiled module checks its size and the offset and type of every field against the C compiler's
layout (cffi refuses to import on a mismatch). tests/python checks the same at run time.
"""
import re
import sys

import cffi

# C-side helpers compiled into the module (declared here, defined in HELPER_SOURCE).
HELPER_CDEF = """
accel_status_t accel_py_replay_timed(accel_graph_t *graph, accel_stream_t *stream, size_t n,
                                     double *ms);
"""
HELPER_SOURCE = r"""
#include <time.h>
/* Graph.replay_timed: n replays driven from C, each followed by a stream synchronize, with the
 * wall time of each in ms[i]: the reference that a Python-driven step is measured against. */
static accel_status_t accel_py_replay_timed(accel_graph_t *graph, accel_stream_t *stream,
                                            size_t n, double *ms) {
  for (size_t i = 0; i < n; i++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    accel_status_t st = accel_graph_replay(graph, stream);
    if (st == ACCEL_OK) st = accel_stream_synchronize(stream);
    if (st != ACCEL_OK) return st;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  }
  return ACCEL_OK;
}
"""


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_cdef(text):
    """The cdef text of one header."""
    out = []
    skip_depth = 0  # inside #ifdef __cplusplus
    depth = 0
    for line in strip_comments(text).splitlines():
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            if directive.startswith("if"):
                depth += 1
                if "__cplusplus" in directive and not skip_depth:
                    skip_depth = depth
            elif directive.startswith("endif"):
                if skip_depth == depth:
                    skip_depth = 0
                depth -= 1
            elif directive.startswith("define") and not skip_depth:
                m = re.match(r"define\s+(ACCEL_\w+)\s+(\S.*)$", directive)
                if m and m.group(1) != "ACCEL_API" and not m.group(1).endswith("_H"):
                    out.append(f"#define {m.group(1)} ...")
            continue
        if skip_depth:
            continue
        out.append(line)
    body = "\n".join(out)
    body = re.sub(r"\bACCEL_API\b", "", body)
    return re.sub(r"\benum(\s+\w+)?\s*\{([^}]*)\}", enum_with_dots, body)


def enum_with_dots(m):
    names = [re.sub(r"=.*", "", e, flags=re.S).strip() for e in m.group(2).split(",")]
    names = [n for n in names if n]
    return "enum%s { %s, ... }" % (m.group(1) or "", ", ".join(names))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, headers = argv[1], argv[2:]
    cdef = "\n".join(header_cdef(open(h, encoding="utf-8").read()) for h in headers)
    ffi = cffi.FFI()
    ffi.cdef(cdef + HELPER_CDEF)
    includes = "".join(f"#include <accel/{h.rsplit('/', 1)[-1]}>\n" for h in headers)
    ffi.set_source("accel._accel_cffi", includes + HELPER_SOURCE)
    ffi.emit_c_code(out)


if __name__ == "__main__":
    main(sys.argv)
