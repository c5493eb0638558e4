/* Bundle files (module_bundle.h): the reader checks before it trusts, the writer. */
#include "module_bundle.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char magic[8] = {'A', 'C', 'C', 'B', 'U', 'N', 'D', 'L'};

uint64_t accel_bundle_checksum(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i, v >>= 8) p[i] = (unsigned char)v;
}

/* The header's checksum: its bytes but the checksum's own, then the section table. */
static uint64_t head_sum(const unsigned char *p, size_t table) {
  uint64_t h = accel_bundle_checksum(0xcbf29ce484222325ull, p, 32);
  h = accel_bundle_checksum(h, p + 40, ACCEL_BUNDLE_HEADER_SIZE - 40);
  return accel_bundle_checksum(h, p + ACCEL_BUNDLE_HEADER_SIZE, table);
}

static int refuse(char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return -1;
}

/* Checks section entry e (at p) and fills s. */
static int read_entry(const unsigned char *base, size_t size, size_t table_end, uint32_t e,
                      accel_bundle_section_t *s, char *why, size_t whylen) {
  const unsigned char *p = base + ACCEL_BUNDLE_HEADER_SIZE + (size_t)e * ACCEL_BUNDLE_ENTRY_SIZE;
  const uint64_t offset = get_le(p + 8, 8), len = get_le(p + 16, 8);
  s->kind = (uint32_t)get_le(p, 4);
  if (get_le(p + 4, 4) != 0)
    return refuse(why, whylen, "section %u has flags 0x%llx (version 1 has none)", e,
                  (unsigned long long)get_le(p + 4, 4));
  if (offset < table_end || offset > size || len > size - offset)
    return refuse(why, whylen, "section %u (%llu bytes at %llu) lies outside the file's %zu "
                  "bytes after its table", e, (unsigned long long)len,
                  (unsigned long long)offset, size);
  if (!memchr(p + 32, '\0', ACCEL_BUNDLE_TARGET_MAX))
    return refuse(why, whylen, "section %u's target is not NUL-terminated", e);
  memcpy(s->target, p + 32, ACCEL_BUNDLE_TARGET_MAX);
  s->data = base + offset;
  s->size = (size_t)len;
  if (accel_bundle_checksum(0xcbf29ce484222325ull, s->data, s->size) != get_le(p + 24, 8))
    return refuse(why, whylen, "section %u (kind 0x%x, %zu bytes) fails its checksum", e,
                  s->kind, s->size);
  return 0;
}

/* The header's fields; *n the section count. */
static int read_header(const unsigned char *p, size_t size, uint32_t *n, char *why,
                       size_t whylen) {
  if (size < ACCEL_BUNDLE_HEADER_SIZE || memcmp(p, magic, sizeof magic) != 0)
    return refuse(why, whylen, "not an accel bundle (%zu bytes; no \"ACCBUNDL\" header)", size);
  const uint32_t version = (uint32_t)get_le(p + 8, 4);
  if (version != ACCEL_BUNDLE_VERSION)
    return refuse(why, whylen, "bundle format version %u (this accel reads version %u)",
                  version, ACCEL_BUNDLE_VERSION);
  *n = (uint32_t)get_le(p + 16, 4);
  if (get_le(p + 12, 4) != ACCEL_BUNDLE_HEADER_SIZE || get_le(p + 20, 4) != ACCEL_BUNDLE_ENTRY_SIZE)
    return refuse(why, whylen, "the header or entry size is not 64 bytes (a damaged header)");
  if (get_le(p + 24, 8) != size)
    return refuse(why, whylen, "the bundle says it has %llu bytes, not %zu (truncated?)",
                  (unsigned long long)get_le(p + 24, 8), size);
  if (*n == 0 || *n > ACCEL_BUNDLE_MAX_SECTIONS ||
      (size - ACCEL_BUNDLE_HEADER_SIZE) / ACCEL_BUNDLE_ENTRY_SIZE < *n)
    return refuse(why, whylen, "%u sections do not fit (1 to %u, in %zu bytes)", *n,
                  ACCEL_BUNDLE_MAX_SECTIONS, size);
  const size_t table = (size_t)*n * ACCEL_BUNDLE_ENTRY_SIZE;
  if (head_sum(p, table) != get_le(p + 32, 8))
    return refuse(why, whylen, "the header and section table fail their checksum");
  return 0;
}

int accel_bundle_read(const void *data, size_t size, accel_bundle_t *out, char *why,
                      size_t whylen) {
  const unsigned char *p = data;
  memset(out, 0, sizeof *out);
  uint32_t n = 0;
  if (read_header(p, size, &n, why, whylen) != 0) return -1;
  const size_t table_end = ACCEL_BUNDLE_HEADER_SIZE + (size_t)n * ACCEL_BUNDLE_ENTRY_SIZE;
  for (uint32_t e = 0; e < n; ++e) {
    accel_bundle_section_t *s = &out->sections[e];
    if (read_entry(p, size, table_end, e, s, why, whylen) != 0) return -1;
    const accel_bundle_section_t **one = s->kind == ACCEL_BUNDLE_SOURCE    ? &out->source
                                         : s->kind == ACCEL_BUNDLE_OPTIONS ? &out->options
                                                                           : NULL;
    if (one && *one)
      return refuse(why, whylen, "two %s sections", one == &out->source ? "source" : "options");
    if (one && memchr(s->data, '\0', s->size))
      return refuse(why, whylen, "section %u (text) holds a NUL byte", e);
    if (one) *one = s;
  }
  out->nsections = n;
  if (!out->source) return refuse(why, whylen, "the bundle has no source section");
  return 0;
}

int accel_bundle_write(FILE *f, const accel_bundle_section_t *sections, uint32_t n,
                       const char *version) {
  if (n == 0 || n > ACCEL_BUNDLE_MAX_SECTIONS) return -1;
  unsigned char head[ACCEL_BUNDLE_HEADER_SIZE + ACCEL_BUNDLE_MAX_SECTIONS * ACCEL_BUNDLE_ENTRY_SIZE];
  const size_t table_end = ACCEL_BUNDLE_HEADER_SIZE + (size_t)n * ACCEL_BUNDLE_ENTRY_SIZE;
  memset(head, 0, table_end);
  size_t at = table_end;
  for (uint32_t e = 0; e < n; ++e) {
    unsigned char *p = head + ACCEL_BUNDLE_HEADER_SIZE + (size_t)e * ACCEL_BUNDLE_ENTRY_SIZE;
    const accel_bundle_section_t *s = &sections[e];
    put_le(p, s->kind, 4);
    put_le(p + 8, at, 8);
    put_le(p + 16, s->size, 8);
    put_le(p + 24, accel_bundle_checksum(0xcbf29ce484222325ull, s->data, s->size), 8);
    snprintf((char *)p + 32, ACCEL_BUNDLE_TARGET_MAX, "%s", s->target);
    at += s->size;
  }
  memcpy(head, magic, sizeof magic);
  put_le(head + 8, ACCEL_BUNDLE_VERSION, 4);
  put_le(head + 12, ACCEL_BUNDLE_HEADER_SIZE, 4);
  put_le(head + 16, n, 4);
  put_le(head + 20, ACCEL_BUNDLE_ENTRY_SIZE, 4);
  put_le(head + 24, at, 8);
  snprintf((char *)head + 40, 24, "%s", version);
  put_le(head + 32, head_sum(head, table_end - ACCEL_BUNDLE_HEADER_SIZE), 8);
  int ok = fwrite(head, 1, table_end, f) == table_end;
  for (uint32_t e = 0; e < n && ok; ++e) /* an empty section may have no data (fwrite: nonnull) */
    ok = !sections[e].size || fwrite(sections[e].data, 1, sections[e].size, f) == sections[e].size;
  return ok ? 0 : -1;
}

const char *accel_bundle_form_name(uint32_t kind) {
  static const char *const names[] = {"unknown", "cpu-so", "opencl-c", "spirv", "ptx", "hip-co"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : names[0];
}

void accel_bundle_list_forms(const accel_module_form_t *forms, uint32_t n, char *buf,
                             size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < n && at < len; ++i) {
    const int w = snprintf(buf + at, len - at, "%s%s%s%s", i ? ", " : "",
                           accel_bundle_form_name(forms[i].kind), forms[i].target[0] ? " " : "",
                           forms[i].target);
    if (w < 0) break;
    at += (size_t)w;
  }
  if (n == 0) snprintf(buf, len, "none");
}

uint32_t accel_bundle_nforms(const accel_module_build_t *b) {
  return b->struct_size > offsetof(accel_module_build_t, nforms) ? b->nforms : 0;
}

void accel_bundle_no_form(const accel_module_build_t *b, uint32_t kind, const char *target,
                          const char *backend, char *buf, size_t len) {
  char forms[384];
  accel_bundle_list_forms(b->forms, accel_bundle_nforms(b), forms, sizeof forms);
  snprintf(buf, len, "%s: the bundle has no %s form%s%s (its forms: %s)", backend,
           accel_bundle_form_name(kind), target ? " for " : "", target ? target : "", forms);
}

int accel_bundle_lacks_form(const accel_module_build_t *b, uint32_t kind, const char *target,
                            const char *backend, char *buf, size_t len) {
  const uint32_t n = accel_bundle_nforms(b);
  if (n == 0 || accel_bundle_find_form(b->forms, n, kind, target)) return 0;
  accel_bundle_no_form(b, kind, target, backend, buf, len);
  return 1;
}

/* The arch number of a PTX target "sm_XY" (XY: 1 to 4 digits), or -1. */
static int ptx_arch(const char *target) {
  int arch = 0, digits = 0;
  if (strncmp(target, "sm_", 3) != 0) return -1;
  for (const char *c = target + 3; *c; ++c, ++digits) {
    if (*c < '0' || *c > '9' || digits == 4) return -1;
    arch = arch * 10 + (*c - '0');
  }
  return digits ? arch : -1;
}

const accel_module_form_t *accel_bundle_ptx_form(const accel_module_form_t *forms, uint32_t n,
                                                 int arch) {
  const accel_module_form_t *best = NULL;
  int best_arch = -1;
  for (uint32_t i = 0; i < n; ++i) {
    const int a = forms[i].kind == ACCEL_MODULE_FORM_PTX ? ptx_arch(forms[i].target) : -1;
    if (a >= 0 && a <= arch && a > best_arch) {
      best = &forms[i];
      best_arch = a;
    }
  }
  return best;
}

const accel_module_form_t *accel_bundle_find_form(const accel_module_form_t *forms, uint32_t n,
                                                  uint32_t kind, const char *target) {
  for (uint32_t i = 0; i < n; ++i)
    if (forms[i].kind == kind && (!target || !strcmp(forms[i].target, target))) return &forms[i];
  return NULL;
}
