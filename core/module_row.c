/*
 * The kernel rows of a module source, read at run time: the subset kernels/gen_kernel_rows.py
 * reads for a generated row (docs/KERNELS.md, "Loading a kernel at run time"), turned into the
 * validator's descriptor (kop_desc_t), the table-driven launch's layout (kop_row_layout_t) and
 * the parameter struct's text, laid out as gen_kernel_rows.py lays it out: chunks, the scalars'
 * fields (acc_u64), num_chunks, the lists' dtype fields (acc_u32), the values' fields (acc_f32),
 * a pad to an even count.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

typedef struct span {
  const char *b, *e;
} span_t;

/* What a failed read reports: the function, the row's position and the reason. */
typedef struct reader {
  const char *fn;
  int row, line;
} reader_t;

static accel_status_t bad(const reader_t *rd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static accel_status_t bad(const reader_t *rd, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: kernel row %d (line %d): %s",
                         rd->fn, rd->row, rd->line, why);
}

static span_t trim(span_t s) {
  while (s.b < s.e && isspace((unsigned char)*s.b)) ++s.b;
  while (s.e > s.b && isspace((unsigned char)s.e[-1])) --s.e;
  return s;
}

static int eq(span_t s, const char *lit) {
  return (size_t)(s.e - s.b) == strlen(lit) && memcmp(s.b, lit, (size_t)(s.e - s.b)) == 0;
}

static int is_ident(span_t s) {
  if (s.b == s.e || !(isalpha((unsigned char)*s.b) || *s.b == '_')) return 0;
  for (const char *p = s.b; p < s.e; ++p)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}

/* s split at its top-level commas into parts[0..max): the count, or -1 for more than max. */
static int split_top(span_t s, span_t *parts, int max) {
  s = trim(s);
  if (s.b == s.e) return 0;
  int n = 0, depth = 0;
  const char *start = s.b;
  for (const char *p = s.b; p <= s.e; ++p) {
    if (p < s.e && *p == '(') ++depth;
    if (p < s.e && *p == ')') --depth;
    if (p == s.e || (*p == ',' && depth == 0)) {
      if (n == max) return -1;
      parts[n++] = trim((span_t){start, p});
      start = p + 1;
    }
  }
  return n;
}

/* `NAME(args)`: *name and up to max args; 0 when s is not a call of that shape. */
static int call(span_t s, span_t *name, span_t *args, int max, int *nargs) {
  s = trim(s);
  const char *p = s.b;
  while (p < s.e && (isalnum((unsigned char)*p) || *p == '_')) ++p;
  *name = (span_t){s.b, p};
  span_t rest = trim((span_t){p, s.e});
  if (!is_ident(*name) || rest.e - rest.b < 2 || *rest.b != '(' || rest.e[-1] != ')') return 0;
  *nargs = split_top((span_t){rest.b + 1, rest.e - 1}, args, max);
  return *nargs >= 0;
}

/* The single argument of `NAME(arg)` when s is one, else an empty span. */
static span_t arg1(span_t s, const char *name) {
  span_t n, a[1];
  int k;
  if (call(s, &n, a, 1, &k) && k == 1 && eq(n, name)) return a[0];
  return (span_t){s.b, s.b};
}

/* The symbols of every row read: a launch's kernel_name (a deferred launch, a graph that
 * outlives its module, a trace) must stay valid for the life of the process. Each distinct
 * name is stored once and never freed. */
typedef struct interned {
  struct interned *next;
  char name[];
} interned_t;
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static interned_t *interned_names;

static const char *intern(span_t s) {
  const size_t len = (size_t)(s.e - s.b);
  pthread_mutex_lock(&intern_lock);
  interned_t *i = interned_names;
  while (i && !(strlen(i->name) == len && !memcmp(i->name, s.b, len))) i = i->next;
  if (!i && (i = malloc(sizeof *i + len + 1))) {
    memcpy(i->name, s.b, len);
    i->name[len] = '\0';
    i->next = interned_names;
    interned_names = i;
  }
  pthread_mutex_unlock(&intern_lock);
  return i ? i->name : NULL;
}

static char *dup_span(span_t s) {
  char *d = malloc((size_t)(s.e - s.b) + 1);
  if (d) {
    memcpy(d, s.b, (size_t)(s.e - s.b));
    d[s.e - s.b] = 0;
  }
  return d;
}

/* A string literal's contents ("name" -> name), or NULL when s is not one. */
/* Whether s is a string literal naming an identifier; *in: the identifier. */
static int string_ident(span_t s, span_t *in) {
  if (s.e - s.b < 3 || *s.b != '"' || s.e[-1] != '"') return 0;
  *in = (span_t){s.b + 1, s.e - 1};
  return is_ident(*in);
}

static char *dup_string(span_t s) {
  span_t in;
  return string_ident(s, &in) ? dup_span(in) : NULL;
}

/* A list index k < limit (ACC_SAME_DT(k), ACC_ALIAS(k)), or -1. */
static int index_arg(span_t s, int limit) {
  if (s.e - s.b != 1 || !isdigit((unsigned char)*s.b)) return -1;
  return *s.b - '0' < limit ? *s.b - '0' : -1;
}

static int mode_of(span_t s) {
  return eq(s, "R") ? (int)ACC_MODE_R : eq(s, "W") ? (int)ACC_MODE_W
                                      : eq(s, "RW") ? (int)ACC_MODE_RW : 0;
}

/* The dtype fields of the row so far (each once), for the layout. */
typedef struct fields {
  span_t u32[KOP_MAX_LISTS + 1];
  int nu32;
  span_t f32[KOP_ROW_MAX_VALUES]; /* the ACC_VALUE fields */
  int nf32;
} fields_t;

static accel_status_t read_list(const reader_t *rd, module_row_t *row, int l, span_t item,
                                fields_t *f) {
  span_t name, a[4], m;
  int na;
  if (!call(item, &name, a, 4, &na) || !eq(name, "ACC_LIST") || na != 4)
    return bad(rd, "list %d: want ACC_LIST(\"name\", ACC_IO(R|W|RW), dtype, aliasing) "
                   "(ACC_OPT_LIST and ACC_IO_IF need a hand-written launch)", l);
  kop_list_desc_t *L = &row->desc.lists[l];
  if (!(row->names[l] = dup_string(a[0])))
    return bad(rd, "list %d: the name must be a string literal naming an identifier", l);
  L->name = row->names[l];
  L->mode = L->mode_flag = (uint8_t)mode_of(m = arg1(a[1], "ACC_IO"));
  if (!L->mode)
    return bad(rd, "list %s: access must be ACC_IO(R), ACC_IO(W) or ACC_IO(RW)", L->name);
  span_t dt = arg1(a[2], "ACC_ANY_DT"), same = arg1(a[2], "ACC_SAME_DT");
  row->layout.dtype[l] = KOP_ROW_NONE;
  if (is_ident(dt)) {
    L->dtype = KOP_DT_ANY;
    int k = 0;
    while (k < f->nu32 && !(f->u32[k].e - f->u32[k].b == dt.e - dt.b &&
                            !memcmp(f->u32[k].b, dt.b, (size_t)(dt.e - dt.b))))
      ++k;
    if (k == f->nu32) f->u32[f->nu32++] = dt;
    row->layout.dtype[l] = (uint16_t)k; /* an index until the layout is placed */
  } else if (eq(a[2], "ACC_F32_DT")) {
    L->dtype = KOP_DT_F32;
  } else if ((L->dtype = (int8_t)index_arg(same, l)) < 0) {
    return bad(rd, "list %s: dtype must be ACC_ANY_DT(field), ACC_F32_DT or ACC_SAME_DT(k) "
                   "with k an earlier list", L->name);
  }
  span_t al = arg1(a[3], "ACC_ALIAS");
  if (eq(a[3], "ACC_NO_ALIAS")) L->alias = KOP_NO_ALIAS;
  else if ((L->alias = (int8_t)index_arg(al, l)) < 0)
    return bad(rd, "list %s: aliasing must be ACC_NO_ALIAS or ACC_ALIAS(k) with k an earlier "
                   "list", L->name);
  return ACCEL_OK;
}

static accel_status_t read_scalar(const reader_t *rd, module_row_t *row, int s, span_t item,
                                  span_t *field) {
  span_t name, a[6];
  int na;
  if (!call(item, &name, a, 6, &na) || !eq(name, "ACC_SCALAR") || na != 6)
    return bad(rd, "scalar %d: want ACC_SCALAR(\"name\", ACC_FIELD(member), bytes, R|W|RW, "
                   "ACC_REQUIRED|ACC_OPTIONAL, ACC_ALL_BLOCKS|ACC_BLOCK0|ACC_PER_TENSOR) "
                   "or ACC_VALUE(\"name\", ACC_FIELD(member)) (ACC_SCRATCH and ACC_NO_FIELD "
                   "need a hand-written launch)", s);
  kop_scalar_desc_t *S = &row->desc.scalars[s];
  const int slot = KOP_MAX_LISTS + s;
  if (!(row->names[slot] = dup_string(a[0])))
    return bad(rd, "scalar %d: the name must be a string literal naming an identifier", s);
  S->name = row->names[slot];
  *field = arg1(a[1], "ACC_FIELD");
  if (!is_ident(*field)) return bad(rd, "scalar %s: want ACC_FIELD(member)", S->name);
  char digits[16] = {0};
  const size_t len = (size_t)(a[2].e - a[2].b);
  if (len == 0 || len >= sizeof digits)
    return bad(rd, "scalar %s: bytes must be a number", S->name);
  memcpy(digits, a[2].b, len);
  char *end;
  const unsigned long bytes = strtoul(digits, &end, 10);
  if (*end || bytes == 0 || bytes > (1u << 20))
    return bad(rd, "scalar %s: bytes must be a decimal number in [1, 2^20], not '%s'", S->name,
               digits);
  S->size = (uint32_t)bytes;
  if (!(S->mode = (uint8_t)mode_of(a[3])))
    return bad(rd, "scalar %s: access must be R, W or RW", S->name);
  if (!eq(a[4], "ACC_REQUIRED") && !eq(a[4], "ACC_OPTIONAL"))
    return bad(rd, "scalar %s: want ACC_REQUIRED or ACC_OPTIONAL", S->name);
  S->required = eq(a[4], "ACC_REQUIRED");
  S->per_tensor = eq(a[5], "ACC_PER_TENSOR");
  if (!S->per_tensor && !eq(a[5], "ACC_ALL_BLOCKS") && !eq(a[5], "ACC_BLOCK0"))
    return bad(rd, "scalar %s: blocks must be ACC_ALL_BLOCKS, ACC_BLOCK0 or ACC_PER_TENSOR",
               S->name);
  return ACCEL_OK;
}

/* An ACC_VALUE("name", ACC_FIELD(member)) item: a host float passed by value (after every
 * scalar). Its field joins f. */
static accel_status_t read_value(const reader_t *rd, module_row_t *row, span_t *a, int na,
                                 fields_t *f) {
  span_t name, field;
  if (na != 2 || !string_ident(a[0], &name) || !is_ident(field = arg1(a[1], "ACC_FIELD")))
    return bad(rd, "value %d: want ACC_VALUE(\"name\", ACC_FIELD(member))", f->nf32);
  if (f->nf32 == KOP_ROW_MAX_VALUES)
    return bad(rd, "at most %d ACC_VALUE entries", KOP_ROW_MAX_VALUES);
  f->f32[f->nf32++] = field;
  row->layout.nv = (uint16_t)f->nf32;
  return ACCEL_OK;
}

/* The row's scalars and values (items[0..n)): every ACC_SCALAR, then every ACC_VALUE. */
static accel_status_t read_scalars(const reader_t *rd, module_row_t *row, const span_t *items,
                                   int n, span_t *sfields, fields_t *f) {
  for (int s = 0; s < n; ++s) {
    span_t name, a[6];
    int na;
    if (call(items[s], &name, a, 6, &na) && eq(name, "ACC_VALUE")) {
      accel_status_t st = read_value(rd, row, a, na, f);
      if (st != ACCEL_OK) return st;
      continue;
    }
    if (f->nf32 > 0) return bad(rd, "ACC_VALUE entries come after every ACC_SCALAR");
    accel_status_t st = read_scalar(rd, row, row->desc.ns, items[s], &sfields[row->desc.ns]);
    if (st != ACCEL_OK) return st;
    ++row->desc.ns;
  }
  return ACCEL_OK;
}

/* Appends row's parameter struct to the text *out (grown with realloc). */
static accel_status_t emit_struct(const reader_t *rd, const module_row_t *row,
                                  const span_t *sfields, const fields_t *f, char **out) {
  char buf[2048];
  int len = snprintf(buf, sizeof buf, "typedef struct {\n  acc_u64 chunks;\n");
  for (int s = 0; s < row->desc.ns; ++s)
    len += snprintf(buf + len, sizeof buf - (size_t)len, "  acc_u64 %.*s;\n",
                    (int)(sfields[s].e - sfields[s].b), sfields[s].b);
  len += snprintf(buf + len, sizeof buf - (size_t)len, "  acc_u32 num_chunks;\n");
  for (int k = 0; k < f->nu32; ++k)
    len += snprintf(buf + len, sizeof buf - (size_t)len, "  acc_u32 %.*s;\n",
                    (int)(f->u32[k].e - f->u32[k].b), f->u32[k].b);
  for (int v = 0; v < f->nf32; ++v)
    len += snprintf(buf + len, sizeof buf - (size_t)len, "  acc_f32 %.*s;\n",
                    (int)(f->f32[v].e - f->f32[v].b), f->f32[v].b);
  if ((f->nu32 + f->nf32) % 2 == 0) /* num_chunks, dtypes and values: an even count */
    len += snprintf(buf + len, sizeof buf - (size_t)len, "  acc_u32 reserved;\n");
  len += snprintf(buf + len, sizeof buf - (size_t)len, "} %s;\n", row->type);
  if (len >= (int)sizeof buf) return bad(rd, "the row's names are too long");
  const size_t have = *out ? strlen(*out) : 0;
  char *grown = realloc(*out, have + (size_t)len + 1);
  if (!grown) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", rd->fn);
  memcpy(grown + have, buf, (size_t)len + 1);
  *out = grown;
  return ACCEL_OK;
}

/* Places the layout: chunks, the scalars (acc_u64), num_chunks, the dtype fields (acc_u32), the
 * values (acc_f32). */
static void place_layout(module_row_t *row, const fields_t *f) {
  kop_row_layout_t *l = &row->layout;
  const int ns = row->desc.ns;
  l->chunks = 0;
  for (int s = 0; s < ns; ++s) l->scalar[s] = (uint16_t)(8 * (s + 1));
  l->num_chunks = (uint16_t)(8 * (ns + 1));
  for (int k = 0; k < row->desc.nl; ++k)
    if (l->dtype[k] != KOP_ROW_NONE) /* an index into the dtype fields until now */
      l->dtype[k] = (uint16_t)(l->num_chunks + 4 * (1 + l->dtype[k]));
  for (int v = 0; v < f->nf32; ++v)
    l->value[v] = (uint16_t)(l->num_chunks + 4 * (1 + f->nu32 + v));
  const int n4 = 1 + f->nu32 + f->nf32;
  l->size = (uint16_t)(l->num_chunks + 4 * (n4 + n4 % 2));
}

/* Row text (inside ACCEL_KERNEL( ... )) into *row. */
static accel_status_t read_row(const reader_t *rd, span_t text, module_row_t *row, char **params) {
  span_t f[6], lists[KOP_MAX_LISTS + 1], scalars[KOP_MAX_SCALARS + 1], opn, opa[2];
  int nop;
  if (split_top(text, f, 6) != 6)
    return bad(rd, "a row has 6 fields: ID, symbol, params_t, ACC_OP(...), (lists), (scalars)");
  if (!is_ident(f[0]) || !is_ident(f[1]) || !is_ident(f[2]))
    return bad(rd, "ID, symbol and params_t must be identifiers");
  row->id = dup_span(f[0]);
  row->type = dup_span(f[2]);
  row->desc.symbol = intern(f[1]);
  if (!row->id || !row->type || !row->desc.symbol)
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", rd->fn);
  if (!call(f[3], &opn, opa, 2, &nop) || !eq(opn, "ACC_OP") || nop != 2 ||
      !eq(opa[1], "ACC_TABLE_SHARED") || !(row->desc.fn = dup_string(opa[0])))
    return bad(rd, "want ACC_OP(\"name\", ACC_TABLE_SHARED) (the name accel_module_get_kernel "
                   "finds)");
  row->desc.memo = -1;
  span_t inner = trim(f[4]), sinner = trim(f[5]);
  if (inner.e - inner.b < 2 || *inner.b != '(' || inner.e[-1] != ')' ||
      sinner.e - sinner.b < 2 || *sinner.b != '(' || sinner.e[-1] != ')')
    return bad(rd, "the lists and the scalars are parenthesised lists");
  const int nl = split_top((span_t){inner.b + 1, inner.e - 1}, lists, KOP_MAX_LISTS);
  const int ns = split_top((span_t){sinner.b + 1, sinner.e - 1}, scalars, KOP_MAX_SCALARS);
  if (nl < 1 || ns < 0)
    return bad(rd, "1 to %d tensor lists (one block per chunk) and at most %d scalars and values",
               (int)KOP_MAX_LISTS, KOP_MAX_SCALARS);
  row->desc.nl = nl;
  fields_t fl = {.nu32 = 0};
  span_t sfields[KOP_MAX_SCALARS];
  for (int l = 0; l < nl; ++l) {
    accel_status_t st = read_list(rd, row, l, lists[l], &fl);
    if (st != ACCEL_OK) return st;
  }
  accel_status_t st = read_scalars(rd, row, scalars, ns, sfields, &fl);
  if (st != ACCEL_OK) return st;
  place_layout(row, &fl);
  return emit_struct(rd, row, sfields, &fl, params);
}

/* source with comments and preprocessor lines blanked (newlines kept: lines still count). */
static char *strip(const char *source) {
  const size_t n = strlen(source);
  char *t = malloc(n + 1);
  if (!t) return NULL;
  memcpy(t, source, n + 1);
  int line_start = 1;
  for (size_t i = 0; i < n; ++i) {
    if (t[i] == '/' && t[i + 1] == '*') {
      for (; i < n && !(t[i] == '*' && t[i + 1] == '/'); ++i)
        if (t[i] != '\n') t[i] = ' ';
      if (i < n) t[i] = t[i + 1] = ' ';
    } else if ((t[i] == '/' && t[i + 1] == '/') || (line_start && t[i] == '#')) {
      for (; i < n && t[i] != '\n'; ++i) t[i] = ' ';
    }
    if (i < n && !isspace((unsigned char)t[i])) line_start = 0;
    if (i < n && t[i] == '\n') line_start = 1;
  }
  return t;
}

/* The next `ACCEL_KERNEL (` at or after p: the text inside its parentheses; NULL when none. */
static const char *next_row(const char *p, span_t *inside) {
  static const char kw[] = "ACCEL_KERNEL";
  for (const char *q = strstr(p, kw); q; q = strstr(q + 1, kw)) {
    const char *r = q + sizeof kw - 1;
    if (q > p && (isalnum((unsigned char)q[-1]) || q[-1] == '_')) continue;
    while (isspace((unsigned char)*r)) ++r;
    if (*r != '(') continue;
    int depth = 1;
    const char *b = ++r;
    for (; *r && depth; ++r) depth += *r == '(' ? 1 : *r == ')' ? -1 : 0;
    *inside = (span_t){b, depth ? b : r - 1};
    return q;
  }
  return NULL;
}

static int count_lines(const char *b, const char *e) {
  int n = 1;
  for (; b < e; ++b) n += *b == '\n';
  return n;
}

accel_status_t module_rows_read(const char *source, const char *fn, module_rows_t *out) {
  memset(out, 0, sizeof *out);
  char *t = strip(source);
  if (!t) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  accel_status_t st = ACCEL_OK;
  span_t in;
  for (const char *p = t, *q; st == ACCEL_OK && (q = next_row(p, &in)); p = in.e) {
    reader_t rd = {fn, (int)out->n + 1, count_lines(t, q)};
    if (in.b == in.e) {
      st = bad(&rd, "unbalanced parentheses");
      break;
    }
    module_row_t *grown = realloc(out->rows, (out->n + 1) * sizeof *grown);
    if (!grown) {
      st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
      break;
    }
    out->rows = grown;
    memset(&out->rows[out->n], 0, sizeof *grown);
    st = read_row(&rd, in, &out->rows[out->n++], &out->params);
    for (size_t k = 0; st == ACCEL_OK && k + 1 < out->n; ++k)
      if (!strcmp(out->rows[k].desc.fn, out->rows[out->n - 1].desc.fn) ||
          !strcmp(out->rows[k].desc.symbol, out->rows[out->n - 1].desc.symbol))
        st = bad(&rd, "its name or symbol repeats row %zu's", k + 1);
  }
  free(t);
  if (st == ACCEL_OK && out->n == 0)
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the source has no ACCEL_KERNEL(...) row (docs/KERNELS.md, "
                         "\"Loading a kernel at run time\")", fn);
  if (st != ACCEL_OK) module_rows_free(out);
  return st;
}

void module_rows_free(module_rows_t *rows) {
  for (size_t k = 0; k < rows->n; ++k) {
    module_row_t *r = &rows->rows[k];
    free(r->id);
    free(r->type);
    free((char *)r->desc.fn);
    for (size_t i = 0; i < sizeof r->names / sizeof r->names[0]; ++i) free(r->names[i]);
  }
  free(rows->rows);
  free(rows->params);
  memset(rows, 0, sizeof *rows);
}
