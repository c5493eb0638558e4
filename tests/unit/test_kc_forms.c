/*
 * accel-kc's forms (tools/accel_kc.c, tools/kc_gpu.c): runs accel-kc on a module source into a
 * temporary bundle and reads that with the bundle reader (common/module_bundle.c). Every form
 * accel-kc says it built is in the bundle and is what its loader takes: PTX is NUL-terminated
 * text with `.target sm_XY` and `.entry SYMBOL(`; a HIP code object is an ELF image whose symbols
 * include SYMBOL.kd (the kernel descriptor hipModuleGetFunction finds); SPIR-V starts with the
 * magic word and spirv-val accepts it for OpenCL 1.2 (when spirv-val is installed). Every form it
 * says it skipped is absent, every GPU form in the bundle was announced, and each expected form
 * (the build's CUDA archs and gfx targets, spirv) has a line, built or skipped.
 *
 *   test_kc_forms ACCEL_KC SOURCE SYMBOL [--OPTION=VALUE ...] [EXPECTED ...]
 *
 * --OPTION=VALUE goes to accel-kc as --OPTION VALUE (e.g. --cuda-archs=90,100); EXPECTED is a
 * form accel-kc must speak of ("ptx sm_80", "hip-co gfx90a", "spirv").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "module_bundle.h"

#define MAX_LINES 64

typedef struct said {
  char form[64]; /* "ptx sm_80", "spirv" */
  int built;
} said_t;

/* accel-kc's "  FORM[ TARGET]: built ..." and ": skipped: ..." lines, run with the options
 * opts[0..nopts) ("--OPTION=VALUE"). */
static int run_kc(const char *kc, const char *source, const char *out, char **opts, int nopts,
                  said_t *said) {
  char cmd[4096], line[4096];
  int at = snprintf(cmd, sizeof cmd, "'%s' -o '%s'", kc, out);
  for (int i = 0; i < nopts && at < (int)sizeof cmd; ++i) {
    const char *eq = strchr(opts[i], '=');
    at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %.*s '%s'", (int)(eq - opts[i]), opts[i],
                   eq + 1);
  }
  if (at < (int)sizeof cmd) snprintf(cmd + at, sizeof cmd - (size_t)at, " '%s'", source);
  FILE *p = popen(cmd, "r");
  int n = 0;
  while (p && fgets(line, sizeof line, p)) {
    fputs(line, stdout);
    char *colon = strstr(line, ": ");
    const int built = colon && !strncmp(colon + 2, "built", 5);
    if (strncmp(line, "  ", 2) || !colon || n == MAX_LINES ||
        (!built && strncmp(colon + 2, "skipped", 7)))
      continue;
    snprintf(said[n].form, sizeof said[n].form, "%.*s", (int)(colon - line - 2), line + 2);
    said[n++].built = built;
  }
  CHECK(p && pclose(p) == 0, "%s failed", cmd);
  return n;
}

static int spirv_valid(const accel_bundle_section_t *s, const char *dir) {
  if (system("spirv-val --version > /dev/null 2>&1") != 0) return 1; /* not installed */
  char path[1100], cmd[1300];
  snprintf(path, sizeof path, "%s/m.spv", dir);
  FILE *f = fopen(path, "wb");
  const int wrote = f && fwrite(s->data, 1, s->size, f) == s->size;
  if (f) fclose(f);
  snprintf(cmd, sizeof cmd, "spirv-val --target-env opencl1.2 '%s'", path);
  const int ok = wrote && system(cmd) == 0;
  unlink(path);
  return ok;
}

/* The checks of one form's payload (the forms the CPU and OpenCL tests cover pass). */
static void check_form(const accel_bundle_section_t *s, const char *symbol, const char *dir) {
  char want[128];
  const char *d = (const char *)s->data;
  if (s->kind == ACCEL_MODULE_FORM_PTX) {
    CHECK(s->size > 0 && d[s->size - 1] == '\0', "ptx %s: not NUL-terminated text", s->target);
    if (s->size == 0 || d[s->size - 1] != '\0') return;
    snprintf(want, sizeof want, ".target %s\n", s->target);
    CHECK(strstr(d, want), "ptx %s: no '%.*s'", s->target, (int)strlen(want) - 1, want);
    snprintf(want, sizeof want, ".entry %s(", symbol);
    CHECK(strstr(d, want), "ptx %s: no '%s'", s->target, want);
  } else if (s->kind == ACCEL_MODULE_FORM_HIP_CO) {
    const int n = snprintf(want, sizeof want, "%c%s.kd%c", 0, symbol, 0);
    CHECK(s->size > 4 && !memcmp(d, "\177ELF", 4), "hip-co %s: not an ELF image", s->target);
    CHECK(memmem(d, s->size, want, (size_t)n), "hip-co %s: no symbol %s.kd", s->target, symbol);
  } else if (s->kind == ACCEL_MODULE_FORM_SPIRV) {
    const unsigned char *u = s->data;
    CHECK(s->size >= 20 && u[0] == 0x03 && u[1] == 0x02 && u[2] == 0x23 && u[3] == 0x07,
          "spirv: no SPIR-V magic word (%zu bytes)", s->size);
    CHECK(spirv_valid(s, dir), "spirv: spirv-val rejects the module");
  }
}

/* The section whose "form[ target]" is name, or NULL. */
static const accel_bundle_section_t *find(const accel_bundle_t *b, const char *name) {
  char have[128];
  for (uint32_t e = 0; e < b->nsections; ++e) {
    const accel_bundle_section_t *s = &b->sections[e];
    snprintf(have, sizeof have, "%s%s%s", accel_bundle_form_name(s->kind),
             s->target[0] ? " " : "", s->target);
    if (s->kind != ACCEL_BUNDLE_SOURCE && s->kind != ACCEL_BUNDLE_OPTIONS && !strcmp(have, name))
      return s;
  }
  return NULL;
}

static void check_bundle(const unsigned char *data, size_t size, const said_t *said, int n,
                         char **expected, int nexpected, const char *symbol, const char *dir) {
  accel_bundle_t b;
  char why[256];
  CHECK(accel_bundle_read(data, size, &b, why, sizeof why) == 0, "bad bundle: %s", why);
  for (int i = 0; i < n; ++i) {
    const accel_bundle_section_t *s = find(&b, said[i].form);
    CHECK(!s == !said[i].built, "'%s' %s but is %s the bundle", said[i].form,
          said[i].built ? "built" : "skipped", s ? "in" : "not in");
    if (s && said[i].built) check_form(s, symbol, dir);
  }
  for (int x = 0; x < nexpected; ++x) {
    int found = 0;
    for (int i = 0; i < n; ++i) found |= !strcmp(said[i].form, expected[x]);
    CHECK(found, "accel-kc says nothing of '%s'", expected[x]);
  }
  for (uint32_t e = 0; e < b.nsections; ++e) {
    const uint32_t k = b.sections[e].kind;
    int found = 0;
    for (int i = 0; i < n; ++i) found |= find(&b, said[i].form) == &b.sections[e];
    CHECK(found || k == ACCEL_BUNDLE_SOURCE || k == ACCEL_BUNDLE_OPTIONS ||
              k == ACCEL_MODULE_FORM_OPENCL_C,
          "the bundle's %s %s was not announced", accel_bundle_form_name(k),
          b.sections[e].target);
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: test_kc_forms ACCEL_KC SOURCE SYMBOL [--OPTION=VALUE ...] "
                    "[EXPECTED ...]\n");
    return 2;
  }
  char dir[] = "/tmp/accel-kc-forms-XXXXXX", out[64];
  if (!mkdtemp(dir)) return 1;
  snprintf(out, sizeof out, "%s/m.accb", dir);
  said_t said[MAX_LINES];
  int nopts = 0;
  while (4 + nopts < argc && !strncmp(argv[4 + nopts], "--", 2) && strchr(argv[4 + nopts], '='))
    ++nopts;
  const int n = run_kc(argv[1], argv[2], out, argv + 4, nopts, said);
  FILE *f = fopen(out, "rb");
  unsigned char *data = malloc(1u << 24);
  const size_t size = f && data ? fread(data, 1, 1u << 24, f) : 0;
  if (f) fclose(f);
  CHECK(size > 0 && size < (1u << 24), "no bundle at %s", out);
  if (size > 0 && size < (1u << 24))
    check_bundle(data, size, said, n, argv + 4 + nopts, argc - 4 - nopts, argv[3], dir);
  free(data);
  unlink(out);
  rmdir(dir);
  return CHECK_EXIT("test_kc_forms %s", argv[2]);
}
