#!/usr/bin/env python3
"""Loads a GPU plugin with a fake host and checks what backend_init reports on this machine.

usage: check_plugin_unavailable.py SOURCE_ROOT PLUGIN.so [--include-dir DIR ...]
                                   [--expect-substring TEXT ...]

Compiles a small C harness (the host side of the plugin ABI: log, set_error, fault hooks),
dlopens the plugin, checks accel_plugin_query and the vtable header, then calls backend_init.
On a machine without the vendor runtime or device the result must be ACCEL_ERROR_UNAVAILABLE
with a message containing every --expect-substring (e.g. each library path tried). If
backend_init succeeds a device is present: the check reports SKIP (exit 77), since the
UNAVAILABLE path cannot be exercised there. The harness is compiled with SOURCE_ROOT/include and
every --include-dir (the build's include/, where the generated accel/accel_version.h is).
"""
import os
import subprocess
import sys
import tempfile

HARNESS = r"""
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "accel/accel_plugin.h"

static char last_error[4096];
static void fake_log(accel_log_level_t level, const char *domain, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt);
  fprintf(stderr, "[log %d %s] ", (int)level, domain); vfprintf(stderr, fmt, ap);
  fputc('\n', stderr); va_end(ap);
}
static accel_status_t fake_set_error(accel_status_t status, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); vsnprintf(last_error, sizeof last_error, fmt, ap); va_end(ap);
  return status;
}
static int no_fault(accel_fault_site_t site) { (void)site; return 0; }
static const char *no_cache(void) { return NULL; }

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("DLOPEN_FAILED %s\n", dlerror()); return 1; }
  accel_plugin_query_fn q = (accel_plugin_query_fn)dlsym(h, ACCEL_PLUGIN_QUERY_SYMBOL);
  if (!q) { printf("NO_QUERY_SYMBOL\n"); return 1; }
  /* designated: fields added later stay NULL (this harness launches no kernel) */
  accel_host_api_t host = {.abi_version = ACCEL_PLUGIN_ABI_VERSION, .struct_size = sizeof host,
                           .log = fake_log, .set_error = fake_set_error,
                           .fault_should_fail = no_fault, .cache_dir = no_cache};
  const accel_backend_vtable_t *vt = NULL;
  if (q(ACCEL_PLUGIN_ABI_VERSION + 1, &host, &vt) != ACCEL_ERROR_PLUGIN) {
    printf("WRONG_ABI_ACCEPTED\n"); return 1;
  }
  if (q(ACCEL_PLUGIN_ABI_VERSION, &host, &vt) != ACCEL_OK || !vt) { printf("QUERY_FAILED\n"); return 1; }
  if (vt->abi_version != ACCEL_PLUGIN_ABI_VERSION || vt->struct_size != sizeof *vt) {
    printf("BAD_VTABLE %u %u\n", vt->abi_version, vt->struct_size); return 1;
  }
  accel_be_backend_t *be = NULL;
  accel_status_t st = vt->backend_init(&host, &be);
  printf("NAME %s\nSTATUS %d\nMESSAGE %s\n", vt->name, (int)st, last_error);
  if (st == ACCEL_OK) vt->backend_shutdown(be);
  return 0;
}
"""


def main() -> int:
    root, plugin = sys.argv[1], sys.argv[2]
    expect = []
    includes = [os.path.join(root, "include")]
    args = sys.argv[3:]
    while args:
        if args[0] == "--expect-substring" and len(args) > 1:
            expect.append(args[1])
            args = args[2:]
        elif args[0] == "--include-dir" and len(args) > 1:
            includes.append(args[1])
            args = args[2:]
        else:
            print(f"bad argument {args[0]!r}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "harness.c")
        exe = os.path.join(tmp, "harness")
        with open(src, "w") as f:
            f.write(HARNESS)
        cc = os.environ.get("CC", "cc")
        include_args = [arg for d in includes for arg in ("-I", d)]
        subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", *include_args, src,
                        "-o", exe, "-ldl"], check=True)
        run = subprocess.run([exe, plugin], capture_output=True, text=True, timeout=120)
    sys.stderr.write(run.stderr)
    print(run.stdout, end="")
    if run.returncode != 0:
        print(f"FAIL: harness exit {run.returncode}")
        return 1
    fields = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    status, message = int(fields.get("STATUS", "-1")), fields.get("MESSAGE", "")
    if status == 0:
        print("SKIP: backend_init succeeded (a device is present)")
        return 77
    if status != 4:  # ACCEL_ERROR_UNAVAILABLE
        print(f"FAIL: backend_init returned {status}, want 4 (UNAVAILABLE)")
        return 1
    missing = [e for e in expect if e not in message]
    if missing:
        print(f"FAIL: message lacks {missing}")
        return 1
    print("ok: UNAVAILABLE with the reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
