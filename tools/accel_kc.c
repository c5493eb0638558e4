/*
 * accel-kc: compiles a module source (accel_module.h, the kernel dialect) ahead of time into a
 * bundle that accel_module_load_bundle loads without a compiler (docs/KERNELS.md, "Bundles:
 * accel-kc").
 *
 *   accel-kc -o kernels.accb [--options "-DWIDTH=4"] [--cuda-archs 80,90]
 *            [--hip-targets gfx90a] kernels.acc
 *
 * The CPU shared object is the one the CPU backend builds at run time, made by that very code:
 * accel-kc loads the source on the CPU device with the kernel cache pointed at a private
 * directory (ACCEL_CC, the flags, the prelude and the exported symbols are the backend's), then
 * stores the object the build left there. The OpenCL C form is the source itself (the device's
 * compiler builds it at load, with the kernel cache). PTX (one per CUDA arch this accel was
 * built for), HIP code objects (one per gfx target) and SPIR-V come from the plugins' own
 * compilers, linked in (kc_gpu.c): NVRTC, hiprtc, clang + llvm-spirv, each when it is present.
 * It prints one line per form: built, or skipped and why.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/accel_module.h"
#include "kc_gpu.h"
#include "module_bundle.h"

typedef struct kc_args {
  const char *out, *source, *options;
  kc_targets_t targets;
} kc_args_t;

static int usage(void) {
  fprintf(stderr, "usage: accel-kc -o OUT.accb [--options \"OPTIONS\"] [--cuda-archs 80,90]\n"
                  "                [--hip-targets gfx90a,gfx1100] SOURCE\n"
                  "  compiles a module source into a bundle for accel_module_load_bundle\n"
                  "  (PTX for the build's CUDA archs unless given; code objects for the build's\n"
                  "  gfx targets or the ones given among them; an empty list builds none)\n");
  return 2;
}

static int parse_args(int argc, char **argv, kc_args_t *a) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) a->out = argv[++i];
    else if (!strcmp(argv[i], "--options") && i + 1 < argc) a->options = argv[++i];
    else if (!strcmp(argv[i], "--cuda-archs") && i + 1 < argc) a->targets.cuda = argv[++i];
    else if (!strcmp(argv[i], "--hip-targets") && i + 1 < argc) a->targets.hip = argv[++i];
    else if (argv[i][0] == '-' || a->source) return -1;
    else a->source = argv[i];
  }
  return a->out && a->source ? 0 : -1;
}

/* The whole file at path (NUL-terminated; *size without the NUL), or NULL. */
static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  const long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *buf = end >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)end + 1) : NULL;
  const int ok = buf && fread(buf, 1, (size_t)end, f) == (size_t)end;
  fclose(f);
  if (!ok) {
    free(buf);
    return NULL;
  }
  buf[end] = '\0';
  *size = (size_t)end;
  return buf;
}

/* The one module-cpu-*.so in dir (malloc'ed path), or NULL. */
static char *find_object(const char *dir) {
  DIR *d = opendir(dir);
  char *path = NULL;
  for (struct dirent *e; d && !path && (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (!strncmp(e->d_name, "module-cpu-", 11) && len > 3 && !strcmp(e->d_name + len - 3, ".so") &&
        (path = malloc(strlen(dir) + len + 2)))
      sprintf(path, "%s/%s", dir, e->d_name);
  }
  if (d) closedir(d);
  return path;
}

/* Empties and removes dir (the private cache: flat). */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  char path[4200];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

/* The CPU object of source: 0 built (*obj, *size), 1 skipped (why printed), -1 the source is
 * refused (the compiler's log printed). */
static int build_cpu(const char *dir, const kc_args_t *a, const char *source, char **obj,
                     size_t *size) {
  accel_device_t *dev = NULL;
  accel_module_t *m = NULL;
  accel_status_t st = accel_device_open("cpu", &dev);
  if (st == ACCEL_OK) st = accel_module_load_source(dev, source, a->options, &m);
  if (m) accel_module_release(m);
  if (dev) accel_device_close(dev);
  if (st == ACCEL_ERROR_UNSUPPORTED) {
    printf("  cpu-so %s: skipped: %s\n", ACCEL_BUNDLE_CPU_TARGET, accel_last_error());
    return 1;
  }
  if (st != ACCEL_OK) {
    fprintf(stderr, "accel-kc: %s: %s\n", a->source, accel_last_error());
    return -1;
  }
  char *path = find_object(dir);
  *obj = path ? read_file(path, size) : NULL;
  free(path);
  if (!*obj) {
    fprintf(stderr, "accel-kc: the CPU build left no object in %s\n", dir);
    return -1;
  }
  printf("  cpu-so %s: built (%zu bytes, ACCEL_CC=%s)\n", ACCEL_BUNDLE_CPU_TARGET, *size,
         getenv("ACCEL_CC") ? getenv("ACCEL_CC") : "cc");
  return 0;
}

static int write_bundle(const char *out, const accel_bundle_section_t *s, uint32_t n) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  int ok = f && accel_bundle_write(f, s, n, accel_version_string()) == 0;
  ok = f && fclose(f) == 0 && ok;
  if (ok && rename(tmp, out) == 0) return 0;
  fprintf(stderr, "accel-kc: cannot write %s\n", out);
  unlink(tmp);
  return -1;
}

int main(int argc, char **argv) {
  kc_args_t a = {0};
  if (parse_args(argc, argv, &a) != 0) return usage();
  size_t len = 0, objsize = 0;
  char *source = read_file(a.source, &len);
  if (!source || strlen(source) != len) {
    fprintf(stderr, "accel-kc: cannot read %s (or it holds a NUL byte)\n", a.source);
    free(source);
    return 1;
  }
  const char *tmpdir = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/accel-kc-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "accel-kc: cannot make a directory in %s\n", tmpdir ? tmpdir : "/tmp");
    return 1;
  }
  setenv("ACCEL_CACHE_DIR", dir, 1); /* before the library's first look at it */
  printf("accel-kc: %s -> %s\n", a.source, a.out);
  accel_bundle_section_t s[ACCEL_BUNDLE_MAX_SECTIONS] = {
      {ACCEL_BUNDLE_SOURCE, "", (const unsigned char *)source, len}};
  char *owned[ACCEL_BUNDLE_MAX_SECTIONS] = {NULL};
  uint32_t n = 1;
  if (a.options && *a.options)
    s[n++] = (accel_bundle_section_t){ACCEL_BUNDLE_OPTIONS, "", (const unsigned char *)a.options,
                                      strlen(a.options)};
  const int cpu = build_cpu(dir, &a, source, &owned[n], &objsize);
  if (cpu == 0) {
    s[n] = (accel_bundle_section_t){ACCEL_MODULE_FORM_CPU_SO, ACCEL_BUNDLE_CPU_TARGET,
                                    (const unsigned char *)owned[n], objsize};
    ++n;
  }
  s[n++] = (accel_bundle_section_t){ACCEL_MODULE_FORM_OPENCL_C, "", NULL, 0};
  printf("  opencl-c: the source (built by the device's OpenCL compiler at load, then cached)\n");
  const int gpu =
      cpu < 0 ? -1 : kc_gpu_forms(&a.targets, a.source, source, a.options, dir, s, owned, &n);
  remove_dir(dir);
  const int rc = cpu < 0 || gpu < 0 ? 1 : write_bundle(a.out, s, n) == 0 ? 0 : 1;
  for (uint32_t i = 0; i < n; ++i) free(owned[i]);
  free(source);
  return rc;
}
