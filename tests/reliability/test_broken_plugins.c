/*
 * Broken plugin files that tests/unit/test_loader.c does not cover: truncated ELF files and
 * shared objects for another machine. One scenario per process (the plugin search runs once).
 *
 *   test_broken_plugins truncated_header|truncated_middle|wrong_machine|wrong_class
 *
 * The corrupt file is made from a real shared object (libaccel itself, found with dladdr) and
 * placed as libaccel-broken.so in a private directory that ACCEL_PLUGIN_PATH points at. The
 * loader must refuse it with a message that says what is wrong (not just "No such file", which
 * is what dlopen says about an existing file for another machine), without crashing, and the
 * CPU device must still open and compute correctly. The same file placed as the collective engine
 * libaccelcomm-broken.so is refused by the same loader with the same reason.
 *   truncated_header  the first 40 bytes (less than an ELF header)
 *   truncated_middle  the first half of the loadable image (ELF and program headers intact,
 *                     the later PT_LOAD segments and the dynamic section cut off)
 *   wrong_machine     e_machine = EM_AARCH64 (a 64-bit ELF for another architecture)
 *   wrong_class       ELFCLASS32 with e_machine = EM_386 (what `cc -m32` would give; multilib
 *                     is not needed to craft it)
 */
#include <dlfcn.h> /* dladdr */
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel_comm.h"
#include "rel_common.h"

static char g_dir[PATH_MAX];
static char g_file[PATH_MAX + 32];
static char g_engine[PATH_MAX + 32];

static void cleanup(void) {
  if (g_file[0]) unlink(g_file);
  if (g_engine[0]) unlink(g_engine);
  if (g_dir[0]) rmdir(g_dir);
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) != NULL &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
      free(buf);
      buf = NULL;
    }
    *size = len > 0 ? (size_t)len : 0;
  }
  fclose(f);
  return buf;
}

/* End of the file bytes that PT_LOAD segments map (debug sections come after it). */
static size_t loaded_end(const unsigned char *elf, size_t size) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
  size_t end = 0;
  for (unsigned i = 0; i < eh->e_phnum; ++i) {
    size_t off = eh->e_phoff + (size_t)i * eh->e_phentsize;
    if (off + sizeof(Elf64_Phdr) > size) break;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(elf + off);
    if (ph->p_type == PT_LOAD && ph->p_offset + ph->p_filesz > end)
      end = ph->p_offset + ph->p_filesz;
  }
  return end < size ? end : size;
}

/* Writes the corrupt variant of the ELF image `elf` for scenario into g_file. */
static int write_variant(const char *scenario, unsigned char *elf, size_t size) {
  size_t keep = size;
  if (size < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG) != 0) {
    fprintf(stderr, "the source is not an ELF file\n");
    return 0;
  }
  Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
  if (strcmp(scenario, "truncated_header") == 0) keep = 40;
  else if (strcmp(scenario, "truncated_middle") == 0) keep = loaded_end(elf, size) / 2;
  else if (strcmp(scenario, "wrong_machine") == 0) eh->e_machine = EM_AARCH64;
  else if (strcmp(scenario, "wrong_class") == 0) {
    eh->e_ident[EI_CLASS] = ELFCLASS32;
    eh->e_machine = EM_386;
  } else {
    fprintf(stderr, "unknown scenario '%s'\n", scenario);
    return 0;
  }
  FILE *f = fopen(g_file, "wb");
  if (!f) {
    perror(g_file);
    return 0;
  }
  int ok = fwrite(elf, 1, keep, f) == keep;
  ok &= fclose(f) == 0;
  if (!ok || !(f = fopen(g_engine, "wb"))) return 0;
  ok = fwrite(elf, 1, keep, f) == keep;
  ok &= fclose(f) == 0;
  return ok;
}

/* The engine loader refuses the same file for the same reason (want), before any MPI call. */
static void check_engine(accel_device_t *cpu, const char *want) {
  accel_comm_t *c = NULL;
  accel_status_t st = accel_comm_create_mpi(cpu, NULL, "broken", &c);
  const char *msg = accel_last_error();
  printf("engine: %s: %s\n", accel_status_name(st), msg);
  REL_CHECK(st == ACCEL_ERROR_PLUGIN, "engine -> %s, want PLUGIN_ERROR", accel_status_name(st));
  REL_CHECK(c == NULL, "engine: output written on failure");
  REL_CHECK(strstr(msg, g_engine) && strstr(msg, want),
            "the engine's message does not name its file and say '%s': %s", want, msg);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_broken_plugins truncated_header|truncated_middle|"
                    "wrong_machine|wrong_class\n");
    return 2;
  }
  const char *scenario = argv[1];
  Dl_info info;
  if (!dladdr((void *)accel_version_string, &info) || !info.dli_fname) {
    fprintf(stderr, "dladdr(accel_version_string) failed\n");
    return 1;
  }
  size_t size = 0;
  unsigned char *elf = read_file(info.dli_fname, &size);
  if (!elf) {
    perror(info.dli_fname);
    return 1;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/accel-broken-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  atexit(cleanup);
  snprintf(g_file, sizeof g_file, "%s/libaccel-broken.so", g_dir);
  snprintf(g_engine, sizeof g_engine, "%s/libaccelcomm-broken.so", g_dir);
  int ok = write_variant(scenario, elf, size);
  free(elf);
  if (!ok) return 1;

  /* The file is not dlopen'ed here: glibc's dlopen of truncated_middle dies of SIGBUS while
   * relocating segments that lie past the end of the file, so the loader must refuse such a
   * file before dlopen. What the message must name: */
  const char *want = strcmp(scenario, "truncated_middle") == 0  ? "truncated"
                     : strcmp(scenario, "wrong_machine") == 0   ? "machine"
                     : strcmp(scenario, "wrong_class") == 0     ? "class"
                                                                : "short";
  setenv("ACCEL_PLUGIN_PATH", g_dir, 1); /* before the first accel call */
  unsetenv("ACCEL_BACKEND");
  int found = 0;
  for (int i = 0; i < accel_plugin_report_count(); ++i) {
    accel_plugin_report_t r;
    if (accel_plugin_report_get(i, &r) != ACCEL_OK || strcmp(r.path, g_file) != 0) continue;
    found = 1;
    printf("report: %s: outcome %d: %s\n", r.path, (int)r.outcome, r.message);
    REL_CHECK(r.outcome == ACCEL_PLUGIN_FAILED, "outcome %d, want FAILED", (int)r.outcome);
    REL_CHECK(strstr(r.message, want) != NULL, "the message does not say '%s': %s", want,
              r.message);
  }
  REL_CHECK(found, "no loader report for %s", g_file);

  /* the fallback still works */
  accel_device_t *any = NULL;
  accel_status_t st = accel_device_open(NULL, &any);
  REL_CHECK(st == ACCEL_OK, "accel_device_open(NULL) -> %s", accel_status_name(st));
  if (any) accel_device_close(any);
  accel_device_t *cpu = rel_open("cpu");
  check_engine(cpu, want);
  accel_stream_t *s = NULL;
  REL_CHECK(accel_stream_create(cpu, &s) == ACCEL_OK, "stream");
  if (s) {
    rel_round_trip(cpu, s, 1000);
    accel_stream_destroy(s);
  }
  accel_device_close(cpu);
  return rel_finish(scenario);
}
