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

/* 0 when name (a path, or a file looked up in PATH as posix_spawnp does) can be executed, else
 * the errno that says why not. Checked before the spawn because a failed exec is not always
 * reported by posix_spawnp: under valgrind (and where it forks) the child exits with 127. */
static int find_program(const char *name) {
  if (strchr(name, '/')) return access(name, X_OK) == 0 ? 0 : errno;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/bin:/usr/bin";
  char file[4096];
  int why = ENOENT;
  for (const char *dir = path; dir;) {
    const char *end = strchr(dir, ':');
    const int len = end ? (int)(end - dir) : (int)strlen(dir);
    if (snprintf(file, sizeof file, "%.*s/%s", len, len ? dir : ".", name) < (int)sizeof file) {
      if (access(file, X_OK) == 0) return 0;
      if (errno == EACCES) why = EACCES;
    }
    dir = end ? end + 1 : NULL;
  }
  return why;
}

accel_status_t accel_tool_run(const accel_host_api_t *host, const char *domain,
                              const char *missing, char *const argv[], const char *logpath) {
  const int absent = find_program(argv[0]);
  if (absent != 0)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %s: '%s' cannot be run: %s", domain,
                           missing, argv[0], strerror(absent));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
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
