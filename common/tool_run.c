/* Running a compiler as a child process (tool_run.h). */
#include "tool_run.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Reads up to max - 1 bytes of path into log (NUL-terminated). */
static void read_log(const char *path, char *log, size_t max) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(log, 1, max - 1, f) : 0;
  log[n] = '\0';
  if (f) fclose(f);
}

/* 0 when name (a path, or a file looked up in PATH as posix_spawnp does) can be executed, with
 * the file to run in file, else the errno that says why not. Looked up here, not by
 * posix_spawnp, because a failed exec is not always reported by it: under valgrind (and where
 * it forks) the child exits with 127. */
static int find_program(const char *name, char *file, size_t len) {
  if (strchr(name, '/')) {
    if (snprintf(file, len, "%s", name) >= (int)len) return ENAMETOOLONG;
    return access(file, X_OK) == 0 ? 0 : errno;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/bin:/usr/bin";
  int why = ENOENT;
  for (const char *dir = path; dir;) {
    const char *end = strchr(dir, ':');
    const int n = end ? (int)(end - dir) : (int)strlen(dir);
    if (snprintf(file, len, "%.*s/%s", n, n ? dir : ".", name) < (int)len) {
      if (access(file, X_OK) == 0) return 0;
      if (errno == EACCES) why = EACCES;
    }
    dir = end ? end + 1 : NULL;
  }
  return why;
}

accel_status_t accel_tool_run(const accel_host_api_t *host, const char *domain,
                              const char *missing, char *const argv[], const char *logpath) {
  char file[4096];
  const int absent = find_program(argv[0], file, sizeof file);
  if (absent != 0)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %s: '%s' cannot be run: %s", domain,
                           missing, argv[0], strerror(absent));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int err = posix_spawn(&pid, file, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  while (err == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
  if (err != 0)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %s: '%s' cannot be run: %s", domain,
                           missing, argv[0], strerror(err));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ACCEL_OK;
  char log[800];
  read_log(logpath, log, sizeof log);
  return host->set_error(ACCEL_ERROR_BACKEND, "%s: the module does not compile (%s):\n%s", domain,
                         argv[0], log);
}
