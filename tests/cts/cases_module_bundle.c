/*
 * CTS cases for bundles (accel_module_load_bundle; docs/KERNELS.md, "Bundles: accel-kc"). The
 * bundle is the one the build made with accel-kc from tests/cts/module_axpby.acc, the source
 * cases_module.c loads, embedded (cts_module_axpby_accb.h). Its kernel gives
 * the bits module_axpby_bits checks of the source load (so source and bundle agree bit for bit,
 * on CPU and OpenCL alike, in every mode); it loads on the CPU without a compiler (ACCEL_CC
 * missing); a truncated, bit-flipped or tampered file is refused with a message and no crash; a
 * bundle without a form for the device, or whose object does not match its rows, is
 * UNSUPPORTED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_module.h"
#include "cases_module.h"
#include "cts_module_axpby_accb.h"
#include "module_bundle.h"

typedef struct bundle_file {
  unsigned char *data;
  size_t size;
} bundle_file_t;

/* A copy of the build's bundle (embedded). 0: no memory. */
static int bundle_read(bundle_file_t *b) {
  b->size = cts_module_axpby_accb_size;
  b->data = malloc(b->size);
  if (b->data) memcpy(b->data, cts_module_axpby_accb, b->size);
  return b->data != NULL;
}

/* 1 when the device's backend compiles no user kernels, the build's bundle has no form for it
 * (accel-kc ran without NVRTC, hiprtc or clang + llvm-spirv), or the device is the fake driver
 * (tests/fake_driver runs only accel's own kernels: its cuModuleLoadData / hipModuleLoadData
 * refuse PTX and code objects as images it cannot run): the refusal is all there is to test. */
static int no_modules(cts_ctx_t *ctx, const bundle_file_t *b) {
  accel_module_t *m = NULL;
  const accel_status_t st = accel_module_load_bundle(ctx->dev, b->data, b->size, &m);
  if (m) (void)accel_module_release(m);
  const char *why = accel_last_error();
  const int fake = strstr(ctx->info.name, "(tests/fake_driver)") != NULL;
  return (st == ACCEL_ERROR_UNSUPPORTED && (strstr(why, "does not compile user kernels") ||
                                            strstr(why, "the bundle has no "))) ||
         (fake && strstr(why, "ModuleLoadData failed"));
}

#define BUNDLE_OPEN(b)                                                               \
  do {                                                                               \
    CTS_CHECK(bundle_read(b), "no memory");                                          \
    if (no_modules(ctx, b)) {                                                        \
      free((b)->data);                                                               \
      return CTS_PASS;                                                               \
    }                                                                                \
  } while (0)

/* The bundle's kernel: the source load's bits (module_axpby_check), in ctx's mode. */
CTS_CASE(module_bundle_axpby_bits, CTS_TAG_KERNELS) {
  bundle_file_t b;
  BUNDLE_OPEN(&b);
  accel_module_t *m = NULL;
  const accel_status_t st = accel_module_load_bundle(ctx->dev, b.data, b.size, &m);
  free(b.data);
  CTS_CHECK(st == ACCEL_OK, "load: %s: %s", accel_status_name(st), accel_last_error());
  const cts_result_t res = module_axpby_check(ctx, m);
  CTS_OK(accel_module_release(m));
  return res;
}

/* No compiler (ACCEL_CC missing): the bundle still loads on the CPU, and runs. */
CTS_CASE(module_bundle_without_compiler, CTS_TAG_KERNELS) {
  bundle_file_t b;
  BUNDLE_OPEN(&b);
  const char *old = getenv("ACCEL_CC");
  char *saved = old ? strdup(old) : NULL;
  setenv("ACCEL_CC", "/nonexistent/accel-cts-cc", 1);
  accel_module_t *m = NULL;
  const accel_status_t st = accel_module_load_bundle(ctx->dev, b.data, b.size, &m);
  if (saved) setenv("ACCEL_CC", saved, 1);
  else unsetenv("ACCEL_CC");
  free(saved);
  free(b.data);
  CTS_CHECK(st == ACCEL_OK, "load without ACCEL_CC: %s: %s", accel_status_name(st),
            accel_last_error());
  const cts_result_t res = module_axpby_check(ctx, m);
  CTS_OK(accel_module_release(m));
  return res;
}

/* Refused with "bad bundle" and m untouched. */
static int refused(cts_ctx_t *ctx, const void *data, size_t size) {
  accel_module_t *m = NULL;
  const accel_status_t st = accel_module_load_bundle(ctx->dev, data, size, &m);
  if (m) (void)accel_module_release(m);
  return st == ACCEL_ERROR_INVALID_ARGUMENT && m == NULL &&
         strstr(accel_last_error(), "bad bundle: ") != NULL;
}

/* Every truncation, every bit of the header and section table flipped and every 97th bit of
 * the payloads (at most about 2000 of them): each refused; so is a section whose offset lies
 * past the end though every checksum is right (the bounds check). */
CTS_CASE(module_bundle_damaged_refused, CTS_TAG_NONE) {
  bundle_file_t b;
  BUNDLE_OPEN(&b);
  unsigned char *copy = malloc(b.size);
  CTS_CHECK(copy, "no memory");
  size_t bad = SIZE_MAX, kind = 0;
  for (size_t len = 0; len < b.size && bad == SIZE_MAX; len += len < 4096 ? 1 : 61)
    if (!refused(ctx, b.data, len)) bad = len;
  const size_t head = ACCEL_BUNDLE_HEADER_SIZE + 8 * ACCEL_BUNDLE_ENTRY_SIZE;
  /* the payloads: every 97th bit, or about 2000 bits spread evenly over a larger bundle (with
   * PTX, code objects and SPIR-V it has 200 KB or more) */
  const size_t step = 8 * b.size / 2000 > 97 ? 8 * b.size / 2000 | 1 : 97;
  for (size_t bit = 0; bit < 8 * b.size && bad == SIZE_MAX; bit += bit < 8 * head ? 1 : step) {
    memcpy(copy, b.data, b.size);
    copy[bit / 8] ^= (unsigned char)(1u << bit % 8);
    if (!refused(ctx, copy, b.size)) bad = bit, kind = 1;
  }
  /* tampered: section 0's offset past the end, the header's checksum made right again */
  memcpy(copy, b.data, b.size);
  const uint32_t n = copy[16] | (uint32_t)copy[17] << 8;
  for (int i = 0; i < 8; ++i) copy[ACCEL_BUNDLE_HEADER_SIZE + 8 + i] = (unsigned char)(b.size >> 8 * i);
  copy[ACCEL_BUNDLE_HEADER_SIZE + 8] += 1;
  uint64_t h = accel_bundle_checksum(0xcbf29ce484222325ull, copy, 32);
  h = accel_bundle_checksum(h, copy + 40, ACCEL_BUNDLE_HEADER_SIZE - 40);
  h = accel_bundle_checksum(h, copy + ACCEL_BUNDLE_HEADER_SIZE, n * ACCEL_BUNDLE_ENTRY_SIZE);
  for (int i = 0; i < 8; ++i) copy[32 + i] = (unsigned char)(h >> 8 * i);
  const int outside = refused(ctx, copy, b.size) && strstr(accel_last_error(), "lies outside");
  free(copy);
  free(b.data);
  CTS_CHECK(bad == SIZE_MAX, "%s %zu was not refused: %s", kind ? "flipping bit" : "truncating to",
            bad, accel_last_error());
  CTS_CHECK(outside, "an offset past the end: %s", accel_last_error());
  accel_module_t *m = NULL;
  CTS_STATUS(accel_module_load_bundle(ctx->dev, NULL, 10, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_module_load_bundle(ctx->dev, "x", 1, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_module_load_bundle(NULL, "x", 1, &m), ACCEL_ERROR_INVALID_HANDLE);
  return CTS_PASS;
}

/* The build's bundle rewritten with sections[0..n) (valid checksums), loaded: its status. */
static accel_status_t load_rewritten(cts_ctx_t *ctx, const accel_bundle_section_t *s,
                                     uint32_t n) {
  char *data = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&data, &size);
  const int ok = f && accel_bundle_write(f, s, n, "cts") == 0;
  if (f) fclose(f);
  accel_module_t *m = NULL;
  const accel_status_t st = ok ? accel_module_load_bundle(ctx->dev, data, size, &m)
                               : ACCEL_ERROR_OUT_OF_MEMORY;
  if (m) (void)accel_module_release(m);
  free(data);
  return st;
}

/* s with its first from replaced by to (malloc'ed), or NULL (s NULL, no from, no memory). */
static char *edit(const char *s, const char *from, const char *to) {
  const char *at = s ? strstr(s, from) : NULL;
  const size_t len = at ? strlen(s) - strlen(from) + strlen(to) + 1 : 0;
  char *out = at ? malloc(len) : NULL;
  if (out) snprintf(out, len, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
  return out;
}

/* Well-formed bundles this device cannot take: no form for it (UNSUPPORTED naming the forms);
 * no source; on the CPU an object whose rows' structs differ from its source's (alpha and beta
 * swapped: UNSUPPORTED, "other parameter structs"). */
CTS_CASE(module_bundle_wrong_forms_refused, CTS_TAG_NONE) {
  bundle_file_t b;
  BUNDLE_OPEN(&b);
  accel_bundle_t in;
  char why[256];
  const int read = accel_bundle_read(b.data, b.size, &in, why, sizeof why) == 0;
  CTS_CHECK(read, "the build's bundle does not read: %s", why);
  accel_bundle_section_t s[3] = {*in.source,
                                 {ACCEL_MODULE_FORM_PTX, "sm_9999", in.source->data, 4}};
  accel_status_t st = load_rewritten(ctx, s, 2);
  CTS_CHECK(st == ACCEL_ERROR_UNSUPPORTED && strstr(accel_last_error(), "ptx sm_9999"),
            "a PTX-only bundle -> %s: %s", accel_status_name(st), accel_last_error());
  st = load_rewritten(ctx, s + 1, 1);
  CTS_CHECK(st == ACCEL_ERROR_INVALID_ARGUMENT && strstr(accel_last_error(), "no source"),
            "a bundle without source -> %s: %s", accel_status_name(st), accel_last_error());
  char *src = strndup((const char *)in.source->data, in.source->size);
  char *t1 = edit(src, "ACC_FIELD(alpha)", "ACC_FIELD(tmp)"), *t2 = edit(t1, "ACC_FIELD(beta)",
                                                                          "ACC_FIELD(alpha)");
  char *swapped = edit(t2, "ACC_FIELD(tmp)", "ACC_FIELD(beta)");
  free(src);
  free(t1);
  free(t2);
  for (uint32_t e = 0; e < in.nsections; ++e)
    if (in.sections[e].kind == ACCEL_MODULE_FORM_CPU_SO) s[1] = in.sections[e];
  s[0].data = (const unsigned char *)swapped;
  s[0].size = swapped ? strlen(swapped) : 0;
  st = strcmp(ctx->info.backend, "cpu") || !swapped ? ACCEL_ERROR_UNSUPPORTED
                                                    : load_rewritten(ctx, s, 2);
  const int edited = swapped != NULL;
  free(swapped);
  free(b.data);
  CTS_CHECK(edited, "the source has no ACC_FIELD(alpha) and ACC_FIELD(beta)");
  CTS_CHECK(st == ACCEL_ERROR_UNSUPPORTED, "an object of other rows -> %s: %s",
            accel_status_name(st), accel_last_error());
  return CTS_PASS;
}

/* One bundle's load on a GPU backend: st from loading the build's source with forms s[0..n). */
#define GPU_FORMS_CHECK(want, needle, ...)                                                      \
  do {                                                                                          \
    accel_bundle_section_t s_[] = {*in.source, __VA_ARGS__};                                    \
    const accel_status_t st_ = load_rewritten(ctx, s_, sizeof s_ / sizeof s_[0]);               \
    CTS_CHECK(st_ == (want) && strstr(accel_last_error(), needle), "%s: %s: %s, not %s (%s)",   \
              ctx->info.backend, #__VA_ARGS__, accel_status_name(st_), accel_status_name(want), \
              accel_last_error());                                                               \
  } while (0)

#define PTX(arch, text) {ACCEL_MODULE_FORM_PTX, arch, (const unsigned char *)text, sizeof text - 1}

/* A bundle's GPU forms, chosen without a compiler (the fake-driver CTS runs with ACCEL_NVRTC and
 * ACCEL_HIPRTC unusable): CUDA takes the PTX of the newest arch not above the device's (sm_20,
 * not NUL-terminated: refused, over sm_10; sm_9999 never) and hands it to cuModuleLoadData (this
 * text is no PTX: the driver refuses it); HIP offers each code object to the runtime (these are
 * none: UNSUPPORTED with the runtime's answer); Level Zero creates its module from the SPIR-V
 * form; OpenCL refuses a SPIR-V-only bundle without IL support (PoCL: no opencl-c form) and
 * hands it to clCreateProgramWithIL with it. */
CTS_CASE(module_bundle_gpu_forms, CTS_TAG_NONE) {
  bundle_file_t b;
  CTS_CHECK(bundle_read(&b), "no memory");
  accel_bundle_t in;
  char why[256];
  const int read = accel_bundle_read(b.data, b.size, &in, why, sizeof why) == 0;
  const char *be = ctx->info.backend;
  if (read && !strcmp(be, "cuda")) {
    GPU_FORMS_CHECK(ACCEL_ERROR_UNSUPPORTED, "ptx sm_9999)", PTX("sm_9999", "x\0"));
    GPU_FORMS_CHECK(ACCEL_ERROR_INVALID_ARGUMENT, "ptx sm_20 form is not NUL-terminated",
                    PTX("sm_10", "not ptx 10\0"), PTX("sm_20", "not ptx 20"),
                    PTX("sm_9999", "x\0"));
    GPU_FORMS_CHECK(ACCEL_ERROR_BACKEND, "cuModuleLoadData failed", PTX("sm_9999", "x\0"),
                    PTX("sm_10", "not ptx 10\0"));
  } else if (read && !strcmp(be, "hip")) {
    GPU_FORMS_CHECK(ACCEL_ERROR_UNSUPPORTED, "gfx_none: hipModuleLoadData failed",
                    {ACCEL_MODULE_FORM_HIP_CO, "gfx_none", (const unsigned char *)"junk", 4});
  } else if (read && !strcmp(be, "level_zero")) {
    GPU_FORMS_CHECK(ACCEL_ERROR_UNSUPPORTED, "no spirv form", PTX("sm_80", "x\0"));
    GPU_FORMS_CHECK(ACCEL_ERROR_BACKEND, "zeModuleCreate",
                    {ACCEL_MODULE_FORM_SPIRV, "", (const unsigned char *)"junk", 4});
  } else if (read && !strcmp(be, "opencl")) {
    const accel_bundle_section_t s[] = {
        *in.source, {ACCEL_MODULE_FORM_SPIRV, "", (const unsigned char *)"junk", 4}};
    const accel_status_t st = load_rewritten(ctx, s, 2);
    const char *e = accel_last_error();
    CTS_CHECK((st == ACCEL_ERROR_UNSUPPORTED && strstr(e, "no opencl-c form (its forms: spirv)")) ||
                  (st == ACCEL_ERROR_BACKEND &&
                   (strstr(e, "clCreateProgramWithIL") || strstr(e, "clBuildProgram"))),
              "opencl: a SPIR-V-only bundle of junk: %s: %s", accel_status_name(st), e);
  }
  free(b.data);
  CTS_CHECK(read, "the build's bundle does not read: %s", why);
  return CTS_PASS;
}
