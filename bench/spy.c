/* bench-spy: stands in for the backend binary (runsc or runc) so the
 * start-up benchmark can see, from outside tollgate, how long the backend
 * itself ran and what tollgate handed it.
 *
 * Install it as DIR/runsc (or DIR/runc) next to DIR/real-runsc, a symlink to
 * the real binary, and point the host config's runtime_path at it.  Each
 * invocation appends one line to DIR/log:
 *   <start ns> <end ns> <exit status> <argv...>
 * (CLOCK_REALTIME, so the harness can compare with its own clock) and, for
 * `create` and `run`, copies the bundle's config.json (the effective config
 * tollgate produced) to DIR/effective.json.  The backend runs as a child
 * with the same stdio, so its output and exit status pass through.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return;
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out >= 0) {
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
      if (write(out, buf, (size_t)n) != n)
        break;
    close(out);
  }
  close(in);
}

int main(int argc, char **argv) {
  long long start = now_ns();
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0) {
    perror("bench-spy: /proc/self/exe");
    return 127;
  }
  self[n] = '\0';
  char dir[PATH_MAX], name[NAME_MAX + 1];
  snprintf(dir, sizeof dir, "%s", dirname(self)); /* dirname edits self */
  char *base = strdup(argv[0]);
  snprintf(name, sizeof name, "%s", basename(base));
  free(base);

  char real[PATH_MAX + NAME_MAX + 8];
  snprintf(real, sizeof real, "%s/real-%s", dir, name);

  /* The verb is the first argument that is not a global flag; the bundle
   * is --bundle/-b DIR (either spelling) or the current directory. */
  const char *verb = NULL, *bundle = ".";
  for (int i = 1; i < argc; i++) {
    if (!verb && argv[i][0] != '-' && !(i > 1 && argv[i - 1][0] == '-' &&
                                         !strchr(argv[i - 1], '=') &&
                                         (!strcmp(argv[i - 1], "--root") ||
                                          !strcmp(argv[i - 1], "--log") ||
                                          !strcmp(argv[i - 1], "--log-format") ||
                                          !strcmp(argv[i - 1], "--platform"))))
      verb = argv[i];
    if ((!strcmp(argv[i], "--bundle") || !strcmp(argv[i], "-b")) && i + 1 < argc)
      bundle = argv[i + 1];
    else if (!strncmp(argv[i], "--bundle=", 9))
      bundle = argv[i] + 9;
  }
  if (verb && (!strcmp(verb, "create") || !strcmp(verb, "run"))) {
    char from[PATH_MAX + 16], to[PATH_MAX + 16];
    snprintf(from, sizeof from, "%s/config.json", bundle);
    snprintf(to, sizeof to, "%s/effective.json", dir);
    copy_file(from, to);
  }

  pid_t pid = fork();
  if (pid < 0) {
    perror("bench-spy: fork");
    return 127;
  }
  if (pid == 0) {
    argv[0] = real;
    execv(real, argv);
    fprintf(stderr, "bench-spy: exec %s: %s\n", real, strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  long long end = now_ns();
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  char logpath[PATH_MAX + 8];
  snprintf(logpath, sizeof logpath, "%s/log", dir);
  FILE *log = fopen(logpath, "a");
  if (log) {
    fprintf(log, "%lld %lld %d", start, end, code);
    for (int i = 1; i < argc; i++)
      fprintf(log, " %s", argv[i]);
    fputc('\n', log);
    fclose(log);
  }
  return code;
}
