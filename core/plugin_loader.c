/*
 * The one plugin loader (plugin_loader.h): the search path and the checks on one file, for
 * backends and collective engines alike.
 */
#include "plugin_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_config.h"
#include "core_util.h"

/*
 * Refuses, before dlopen, 64-bit ELF files that dlopen would crash on or misreport: glibc maps
 * PT_LOAD segments that lie past the end of a truncated file and dies of SIGBUS relocating
 * them, and it says "No such file or directory" about an existing ELF built for another
 * machine. Anything else (not ELF, too short for a header, unreadable) is left to dlopen.
 */
#if defined(__x86_64__)
#define HOST_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_ELF_MACHINE EM_PPC64
#endif

#ifdef HOST_ELF_MACHINE
/* The ELF header's class and machine: NULL when this host loads them, else why not. */
static const char *elf_header_problem(const Elf64_Ehdr *eh, char *why, size_t size) {
  if (eh->e_ident[EI_CLASS] != ELFCLASS64) {
    snprintf(why, size, "ELF class %u, this host loads ELFCLASS64 (%u) objects",
             (unsigned)eh->e_ident[EI_CLASS], (unsigned)ELFCLASS64);
    return why;
  }
  if (eh->e_machine != HOST_ELF_MACHINE) {
    snprintf(why, size, "ELF machine %u, this host is machine %u (built for another "
             "architecture)", (unsigned)eh->e_machine, (unsigned)HOST_ELF_MACHINE);
    return why;
  }
  return NULL;
}

/* Every PT_LOAD segment lies inside the file: NULL, else why not. */
static const char *elf_segments_problem(int fd, const Elf64_Ehdr *eh, off_t file_size,
                                        char *why, size_t size) {
  for (unsigned i = 0; i < eh->e_phnum; ++i) {
    Elf64_Phdr ph;
    off_t at = (off_t)(eh->e_phoff + (uint64_t)i * eh->e_phentsize);
    if (pread(fd, &ph, sizeof ph, at) != (ssize_t)sizeof ph) {
      snprintf(why, size, "truncated: program header %u lies past the end of the file", i);
      return why;
    }
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > (uint64_t)file_size) {
      snprintf(why, size, "truncated: segment %u needs %llu bytes, the file has %lld", i,
               (unsigned long long)(ph.p_offset + ph.p_filesz), (long long)file_size);
      return why;
    }
  }
  return NULL;
}
#endif

static bool elf_precheck(const char *path, char *why, size_t size) {
#ifdef HOST_ELF_MACHINE
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* never block (see accel_plugin_open) */
  if (fd < 0) return true;
  struct stat sb;
  Elf64_Ehdr eh;
  const char *problem = NULL;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { /* replaced since the stat before */
    snprintf(why, size, "not a regular file");
    problem = why;
  } else if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
             memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0) {
    problem = elf_header_problem(&eh, why, size);
    if (!problem) problem = elf_segments_problem(fd, &eh, sb.st_size, why, size);
  }
  close(fd);
  return problem == NULL;
#else
  (void)path, (void)why, (void)size;
  return true;
#endif
}

static const char *file_kind(mode_t mode) {
  return S_ISFIFO(mode)   ? "a FIFO"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a plain file";
}

/* The file checks before dlopen: true when path may be dlopen'ed, else f->why says why not. */
static bool file_precheck(const char *path, accel_plugin_file_t *f) {
  char why[400];
  struct stat sb;
  if (stat(path, &sb) != 0) {
    snprintf(f->why, sizeof f->why, "skipped: cannot stat: %s", strerror(errno));
    return false;
  }
  if (!S_ISREG(sb.st_mode)) {
    snprintf(f->why, sizeof f->why, "skipped: not a regular file (%s)", file_kind(sb.st_mode));
    return false;
  }
  if (!elf_precheck(path, why, sizeof why)) {
    snprintf(f->why, sizeof f->why, "not loadable here: %s", why);
    return false;
  }
  return true;
}

/* The checks on the header every vtable starts with, then the kind's own. */
static const char *check_header(const accel_plugin_kind_t *kind, const accel_plugin_header_t *h,
                                void *ctx, char *buf, size_t len) {
  if (h->abi_version != kind->abi_version) {
    snprintf(buf, len, "plugin ABI version %u, host ABI version %u", h->abi_version,
             kind->abi_version);
    return buf;
  }
  if (h->struct_size < kind->min_size) {
    snprintf(buf, len, "vtable struct_size %u is smaller than the %zu bytes of required slots",
             h->struct_size, kind->min_size);
    return buf;
  }
  /* Every field after struct_size is pointer-sized: a size that is not a whole number of them
   * would have the copy of the vtable take half of a function pointer. */
  if (h->struct_size % sizeof(void *) != 0) {
    snprintf(buf, len, "vtable struct_size %u is not a multiple of the pointer size %zu",
             h->struct_size, sizeof(void *));
    return buf;
  }
  if (!h->name || !h->name[0] || strnlen(h->name, kind->name_size) >= kind->name_size) {
    snprintf(buf, len, "vtable has no valid name");
    return buf;
  }
  return kind->check ? kind->check(h, ctx, buf, len) : NULL;
}

/* The query and the vtable checks on an open file: NULL with f->vtable set, else why not. */
static const char *query_plugin(const accel_plugin_kind_t *kind, void *dl, void *ctx,
                                accel_plugin_file_t *f) {
  dlerror();
  void *entry = dlsym(dl, kind->query_symbol);
  char why[sizeof f->why - 64];
  if (!entry) {
    const char *e = dlerror();
    snprintf(f->why, sizeof f->why, "missing entry symbol %s: %s", kind->query_symbol,
             e ? e : "not found");
    return f->why;
  }
  const void *vt = NULL;
  accel_clear_error();
  accel_status_t st = kind->query(entry, &vt);
  if (st != ACCEL_OK) {
    snprintf(f->why, sizeof f->why, "%s returned %s: %s", kind->query_symbol,
             accel_status_name(st), accel_last_error());
    return f->why;
  }
  if (!vt) {
    snprintf(f->why, sizeof f->why, "%s returned no vtable", kind->query_symbol);
    return f->why;
  }
  const accel_plugin_header_t *h = vt;
  if (h->name) snprintf(f->name, sizeof f->name, "%.*s", (int)(sizeof f->name - 1), h->name);
  const char *problem = check_header(kind, h, ctx, why, sizeof why);
  if (problem) {
    snprintf(f->why, sizeof f->why, "%s", problem);
    return f->why;
  }
  f->vtable = vt;
  return NULL;
}

accel_status_t accel_plugin_open(const accel_plugin_kind_t *kind, const char *path, void *ctx,
                                 accel_plugin_file_t *f) {
  memset(f, 0, sizeof *f);
  if (!file_precheck(path, f)) return ACCEL_ERROR_PLUGIN;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    snprintf(f->why, sizeof f->why, "dlopen failed: %s", e ? e : "unknown error");
    return ACCEL_ERROR_PLUGIN;
  }
  if (query_plugin(kind, dl, ctx, f)) {
    dlclose(dl); /* nothing from it is in use */
    return ACCEL_ERROR_PLUGIN;
  }
  f->dl = dl;
  return ACCEL_OK;
}

static void append_searched(char *searched, size_t size, const char *dir) {
  size_t used = strlen(searched);
  if (used + 1 < size) snprintf(searched + used, size - used, "%s%s", used ? ", " : "", dir);
}

int accel_plugin_search(int (*visit)(const char *dir, void *ctx), void *ctx, char *searched,
                        size_t searched_size) {
  searched[0] = '\0';
  const char *env = accel_env("ACCEL_PLUGIN_PATH");
  if (env) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
      append_searched(searched, searched_size, dir);
      if (visit(dir, ctx)) return 1;
    }
  }
  append_searched(searched, searched_size, ACCEL_PLUGIN_DIR);
  if (visit(ACCEL_PLUGIN_DIR, ctx)) return 1;
  Dl_info info;
  char self[PATH_MAX];
  if (dladdr((void *)accel_plugin_search, &info) && info.dli_fname &&
      realpath(info.dli_fname, self)) {
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      append_searched(searched, searched_size, self);
      if (visit(self, ctx)) return 1;
    }
  }
  return 0;
}
