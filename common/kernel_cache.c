/*
 * On-disk cache of compiled kernels in host->cache_dir() (kernel_cache.h).
 *
 * File  <cache_dir>/<domain>-<fnv64(key)>.bin:
 *   magic "ACLBIN01" | u64 key length | u64 payload length | u64 fnv64(payload) | key | payload
 * The full key is stored and compared, so a file-name collision is a miss, and the checksum
 * catches truncated or corrupted entries (which are then rebuilt and overwritten). Writes go
 * to a temporary file that is renamed into place, so readers never see a partial entry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_cache.h"

static const char cache_magic[8] = {'A', 'C', 'L', 'B', 'I', 'N', '0', '1'};

static uint64_t fnv64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* host->cache_dir() creates the directory and answers NULL when it is not usable. */
static int entry_path(const accel_host_api_t *host, const char *domain, const char *key,
                      char *path, size_t cap) {
  const char *dir = host->cache_dir ? host->cache_dir() : NULL;
  if (!dir || !*dir) return -1;
  int n = snprintf(path, cap, "%s/%s-%016llx.bin", dir, domain,
                   (unsigned long long)fnv64(key, strlen(key)));
  return (n > 0 && (size_t)n < cap) ? 0 : -1;
}

int accel_kernel_cache_load(const accel_host_api_t *host, const char *domain, const char *key,
                            unsigned char **data, size_t *size) {
  char path[4096];
  if (entry_path(host, domain, key, path, sizeof path) != 0) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char magic[8];
  uint64_t hdr[3]; /* key length, payload length, checksum */
  size_t klen = strlen(key);
  int ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, cache_magic, 8) == 0 &&
           fread(hdr, sizeof hdr[0], 3, f) == 3 && hdr[0] == klen && hdr[1] > 0 &&
           hdr[1] < ((uint64_t)1 << 32);
  char *stored_key = ok ? malloc(klen + 1) : NULL;
  unsigned char *payload = ok ? malloc(hdr[1]) : NULL;
  ok = ok && stored_key && payload && fread(stored_key, 1, klen, f) == klen &&
       memcmp(stored_key, key, klen) == 0 && fread(payload, 1, hdr[1], f) == hdr[1] &&
       fgetc(f) == EOF && fnv64(payload, hdr[1]) == hdr[2];
  fclose(f);
  free(stored_key);
  if (!ok) {
    host->log(ACCEL_LOG_WARN, domain,
              "ignoring corrupt or mismatched kernel cache entry %s (will rebuild)", path);
    free(payload);
    return -1;
  }
  host->log(ACCEL_LOG_DEBUG, domain, "kernel binary loaded from %s", path);
  *data = payload;
  *size = hdr[1];
  return 0;
}

void accel_kernel_cache_store(const accel_host_api_t *host, const char *domain, const char *key,
                              const unsigned char *data, size_t size) {
  char path[4096], tmp[4200];
  if (entry_path(host, domain, key, path, sizeof path) != 0) return;
  /* Unique per process and call: two devices with the same key may store concurrently. */
  static unsigned seq;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
           __atomic_fetch_add(&seq, 1u, __ATOMIC_RELAXED));
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    host->log(ACCEL_LOG_WARN, domain, "cannot write %s: %s", tmp, strerror(errno));
    return;
  }
  size_t klen = strlen(key);
  uint64_t hdr[3] = {klen, size, fnv64(data, size)};
  int ok = fwrite(cache_magic, 1, 8, f) == 8 && fwrite(hdr, sizeof hdr[0], 3, f) == 3 &&
           fwrite(key, 1, klen, f) == klen && fwrite(data, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    host->log(ACCEL_LOG_WARN, domain, "cannot store kernel cache entry %s: %s", path,
              strerror(errno));
    unlink(tmp);
  }
}
