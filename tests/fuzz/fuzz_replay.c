/*
 * Runs the API fuzz target over files and directories of inputs without libFuzzer, so that a
 * gcc build (and valgrind, ASan, TSan builds) test the committed corpus too.
 *
 *   fuzz_api_replay PATH...   (a PATH that is a directory contributes every file in it)
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_api.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 0;
  }
  uint8_t *buf = NULL;
  size_t size = 0, cap = 0, n;
  uint8_t chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (size + n > cap) {
      cap = (size + n) * 2;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return 0;
      }
      buf = nb;
    }
    memcpy(buf + size, chunk, n);
    size += n;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, size);
  free(buf);
  return 1;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (reproducible runs). */
static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return 0;
  }
  char **names = NULL;
  size_t nn = 0;
  int ok = 1;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char **nx = realloc(names, (nn + 1) * sizeof *names);
    if (!nx || !(nx[nn] = strdup(e->d_name))) {
      names = nx ? nx : names;
      ok = 0;
      break;
    }
    names = nx;
    ++nn;
  }
  closedir(d);
  qsort(names, nn, sizeof *names, cmp_names);
  for (size_t i = 0; i < nn; ++i) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat sb;
    if (ok && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
      ok &= run_file(path);
      ++*count;
    }
    free(names[i]);
  }
  free(names);
  return ok;
}

int main(int argc, char **argv) {
  int count = 0, ok = 1;
  for (int i = 1; i < argc; ++i) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      perror(argv[i]);
      ok = 0;
    } else if (S_ISDIR(sb.st_mode)) {
      ok &= run_dir(argv[i], &count);
    } else {
      ok &= run_file(argv[i]);
      ++count;
    }
  }
  fuzz_api_teardown();
  printf("fuzz_api_replay: %d input(s), every status as the model expects, nothing leaked\n",
         count);
  return ok && count > 0 ? 0 : 1;
}
