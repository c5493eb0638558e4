/*
 * User kernels (accel_module.h): a module is a source's rows (module_row.c), the backend's
 * compiled code (the vtable's module_build) and one kernel object per row. A launch is the
 * table-driven launch of a generated row (kernel_ops.c kop_row_run) with the row read at run
 * time: the same validation, chunk tables, capture pins, lazy queue and tracing.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "device.h"
#include "module.h"
#include "module_bundle.h"

struct accel_module {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_be_module_t *impl;
  module_rows_t rows;
  accel_kernel_t *kernels; /* rows.n */
};

/* Launch ids of user kernels: handed out once each, never reused (a graph may outlive its
 * module and keeps launching its ids). */
static atomic_uint next_user_id = ACCEL_KERNEL_ID_USER_BASE;

static uint64_t hash_str(uint64_t h, const char *s) {
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return (h ^ 0xffu) * 0x100000001b3ull; /* a separator: ("ab", "c") != ("a", "bc") */
}

static void module_free(accel_module_t *m) {
  if (m->impl) m->dev->backend->vt->module_destroy(m->impl);
  module_rows_free(&m->rows);
  free(m->kernels);
  accel_device_release_ref(m->dev);
  free(m);
}

/* A bundle's forms (nforms 0: a source load) and the public call's name. */
typedef struct module_forms {
  const accel_module_form_t *forms;
  uint32_t nforms;
  const char *fn;
} module_forms_t;

/* Compiles m's rows and source on its device (or loads the cached result), or builds from one
 * of the bundle's forms. */
static accel_status_t module_build(accel_module_t *m, const char *source, const char *options,
                                   const module_forms_t *f) {
  const accel_backend_vtable_t *vt = m->dev->backend->vt;
  const size_t n = m->rows.n;
  const char **symbols = calloc(n, sizeof *symbols);
  uint32_t *sizes = calloc(n, sizeof *sizes);
  accel_status_t st = ACCEL_OK;
  if (!symbols || !sizes)
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", f->fn);
  const uint32_t first = atomic_fetch_add(&next_user_id, (unsigned)n);
  if (st == ACCEL_OK && (first < ACCEL_KERNEL_ID_USER_BASE || UINT32_MAX - first < n))
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: the process loaded 2^30 user kernels: no "
                                            "launch id is left", f->fn);
  for (size_t k = 0; k < n && st == ACCEL_OK; ++k) {
    symbols[k] = m->rows.rows[k].desc.symbol;
    sizes[k] = m->rows.rows[k].layout.size;
    m->kernels[k] = (accel_kernel_t){.module = m, .row = &m->rows.rows[k],
                                     .id = first + (uint32_t)k};
  }
  uint64_t key = hash_str(hash_str(hash_str(0xcbf29ce484222325ull, m->rows.params), source),
                          options);
  key = hash_str(hash_str(key, m->dev->info.name), accel_version_string());
  const accel_module_build_t b = {sizeof b, (uint32_t)n, m->rows.params, source, options,
                                  symbols, sizes, first, 0, key, f->forms, f->nforms, 0};
  if (st == ACCEL_OK) st = vt->module_build(m->dev->impl, &b, &m->impl);
  free(symbols);
  free(sizes);
  return st;
}

/* accel_module_load_source and _load_bundle: the rows of source, then the build. */
static accel_status_t module_load(accel_device_t *device, const char *source,
                                  const char *options, const module_forms_t *f,
                                  accel_module_t **out) {
  const char *fn = f->fn;
  if (!device->backend->vt->module_build)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: backend '%s' does not compile user kernels", fn,
                           device->backend->name);
  accel_module_t *m = calloc(1, sizeof *m);
  if (!m) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  m->dev = device;
  accel_device_retain(device);
  accel_status_t st = module_rows_read(source, fn, &m->rows);
  if (st == ACCEL_OK && !(m->kernels = calloc(m->rows.n, sizeof *m->kernels)))
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  if (st == ACCEL_OK) st = module_build(m, source, options ? options : "", f);
  if (st != ACCEL_OK) {
    module_free(m);
    return st;
  }
  accel_handle_register(&m->hdr, ACCEL_HANDLE_MODULE, device->backend->vt);
  for (size_t k = 0; k < m->rows.n; ++k)
    accel_handle_register(&m->kernels[k].hdr, ACCEL_HANDLE_KERNEL, device->backend->vt);
  *out = m;
  return ACCEL_OK;
}

accel_status_t accel_module_load_source(accel_device_t *device, const char *source,
                                        const char *options, accel_module_t **out) {
  static const module_forms_t none = {NULL, 0, "accel_module_load_source"};
  accel_status_t st = accel_device_check(device, none.fn);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(source, none.fn, "source is NULL");
  ACCEL_REQUIRE_ARG(out, none.fn, "out is NULL");
  return module_load(device, source, options, &none, out);
}

/* The bundle's forms (not its source and options) as module_build's. */
static uint32_t bundle_forms(const accel_bundle_t *b, accel_module_form_t *forms) {
  uint32_t n = 0;
  for (uint32_t e = 0; e < b->nsections; ++e) {
    const accel_bundle_section_t *s = &b->sections[e];
    if (s->kind != ACCEL_BUNDLE_SOURCE && s->kind != ACCEL_BUNDLE_OPTIONS)
      forms[n++] = (accel_module_form_t){s->kind, 0, s->target, s->data, s->size};
  }
  return n;
}

accel_status_t accel_module_load_bundle(accel_device_t *device, const void *data, size_t size,
                                        accel_module_t **out) {
  static const char fn[] = "accel_module_load_bundle";
  accel_status_t st = accel_device_check(device, fn);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(data, fn, "data is NULL");
  ACCEL_REQUIRE_ARG(out, fn, "out is NULL");
  accel_bundle_t *b = malloc(sizeof *b);
  accel_module_form_t *forms = malloc(ACCEL_BUNDLE_MAX_SECTIONS * sizeof *forms);
  char why[256];
  if (!b || !forms) {
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  } else if (accel_bundle_read(data, size, b, why, sizeof why) != 0) {
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: bad bundle: %s", fn, why);
  } else {
    const module_forms_t f = {forms, bundle_forms(b, forms), fn};
    char *source = strndup((const char *)b->source->data, b->source->size);
    char *options = b->options ? strndup((const char *)b->options->data, b->options->size)
                               : NULL;
    if (!source || (b->options && !options))
      st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    else if (f.nforms == 0)
      st = accel_set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the bundle holds no form to load", fn);
    else
      st = module_load(device, source, options, &f, out);
    free(source);
    free(options);
  }
  free(b);
  free(forms);
  return st;
}

accel_status_t accel_module_get_kernel(accel_module_t *module, const char *name,
                                       accel_kernel_t **out) {
  static const char fn[] = "accel_module_get_kernel";
  accel_status_t st = accel_handle_check(module, ACCEL_HANDLE_MODULE, fn);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(name, fn, "name is NULL");
  ACCEL_REQUIRE_ARG(out, fn, "out is NULL");
  for (size_t k = 0; k < module->rows.n; ++k)
    if (!strcmp(module->rows.rows[k].desc.fn, name)) {
      *out = &module->kernels[k];
      return ACCEL_OK;
    }
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the module has no kernel '%s' (its rows' ACC_OP names)", fn, name);
}

accel_status_t accel_module_release(accel_module_t *module) {
  accel_status_t st = accel_handle_drop_user(module, ACCEL_HANDLE_MODULE, __func__);
  if (st != ACCEL_OK) return st;
  for (size_t k = 0; k < module->rows.n; ++k) accel_handle_unregister(&module->kernels[k].hdr);
  if (atomic_fetch_sub(&module->hdr.refcount, 1) == 1) module_free(module);
  return ACCEL_OK;
}

accel_status_t accel_launch(accel_stream_t *stream, const accel_kernel_t *kernel,
                            const accel_tensor_t *const *lists, size_t nlists, size_t n,
                            const void *const *scalars, size_t nscalars) {
  static const char fn[] = "accel_launch";
  accel_device_t *dev;
  accel_status_t st = accel_stream_check(stream, fn, &dev);
  if (st != ACCEL_OK) return st;
  st = accel_handle_check(kernel, ACCEL_HANDLE_KERNEL, fn);
  if (st != ACCEL_OK) return st;
  const kop_desc_t *d = &kernel->row->desc;
  if (kernel->module->dev != dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s belongs to another device than the stream", fn, d->fn);
  const kop_row_layout_t *l = &kernel->row->layout;
  if (nlists != (size_t)d->nl || nscalars != (size_t)(d->ns + l->nv))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s takes %d tensor lists and %d scalars (%d device scalars, %d "
                           "values), not %zu and %zu", fn, d->fn, d->nl, d->ns + l->nv, d->ns,
                           l->nv, nlists, nscalars);
  ACCEL_REQUIRE_ARG(lists, fn, "lists is NULL");
  ACCEL_REQUIRE_ARG(scalars || nscalars == 0, fn, "scalars is NULL");
  /* The values, read now: the launch's parameter block takes them by value. */
  float values[KOP_ROW_MAX_VALUES] = {0};
  for (int v = 0; v < l->nv; ++v) {
    const float *x = scalars[d->ns + v];
    ACCEL_REQUIRE_ARG(x, fn, "a value's pointer (scalars[ns + v]) is NULL");
    values[v] = *x;
  }
  return kop_row_run(d, kernel->id, l, stream, dev, lists, n, scalars, values);
}
