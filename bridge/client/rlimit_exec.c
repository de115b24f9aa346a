/* tollgate-call --rlimits (rlimit_exec.h): the container's first exec,
 * which applies the address-space rlimits that runc's own init could not
 * carry.  It runs as the container's process already is: its user, its
 * capabilities, no new privileges, under its seccomp filter; nothing here
 * can give the program more than the config allows, since limits only go
 * down and the program is exec'd with the argv and environment runc
 * prepared for it. */
#include "bridge/client/rlimit_exec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_NOT_FOUND 127
#define EXIT_CANNOT_RUN 126

extern char **environ;

static const struct {
  const char *name;
  int resource;
} limits[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_DATA", RLIMIT_DATA},
};

/* A decimal byte count or "unlimited"; anything at or past RLIM_INFINITY
 * is unlimited, as the kernel reads it. */
static bool parse_value(const char *s, size_t len, rlim_t *out) {
  if (len == 9 && memcmp(s, "unlimited", 9) == 0) {
    *out = RLIM_INFINITY;
    return true;
  }
  if (len == 0 || len > 20)
    return false;
  rlim_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    rlim_t d = (rlim_t)(s[i] - '0');
    if (v > (RLIM_INFINITY - d) / 10) {
      *out = RLIM_INFINITY;
      return true;
    }
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* NAME=SOFT:HARD, set, lowering only.  0, or the exit status with the
 * message printed. */
static int apply(const char *spec) {
  const char *eq = strchr(spec, '='), *colon = eq ? strchr(eq, ':') : NULL;
  size_t k = 0;
  while (eq && k < sizeof limits / sizeof limits[0] &&
         !(strlen(limits[k].name) == (size_t)(eq - spec) && strncmp(limits[k].name, spec, (size_t)(eq - spec)) == 0))
    k++;
  struct rlimit want, cur;
  if (eq == NULL || colon == NULL || k == sizeof limits / sizeof limits[0] ||
      !parse_value(eq + 1, (size_t)(colon - eq - 1), &want.rlim_cur) ||
      !parse_value(colon + 1, strlen(colon + 1), &want.rlim_max)) {
    fprintf(stderr, "tollgate: --rlimits: bad limit \"%s\" (RLIMIT_AS or RLIMIT_DATA=SOFT:HARD); "
                    "this argument is tollgate's own: recreate the container\n", spec);
    return EXIT_CANNOT_RUN;
  }
  if (getrlimit(limits[k].resource, &cur) < 0) {
    fprintf(stderr, "tollgate: getrlimit %s: %s\n", limits[k].name, strerror(errno));
    return EXIT_CANNOT_RUN;
  }
  /* Never raise, soft or hard: a limit already lower stays (the
   * runtime's own, or an outer --rlimits when a config's own args hold
   * this form: "unlimited" there cannot undo the limit tollgate set). */
  if (want.rlim_max > cur.rlim_max)
    want.rlim_max = cur.rlim_max;
  if (want.rlim_cur > cur.rlim_cur)
    want.rlim_cur = cur.rlim_cur;
  if (want.rlim_cur > want.rlim_max)
    want.rlim_cur = want.rlim_max;
  if (setrlimit(limits[k].resource, &want) < 0) {
    /* Fail closed: the program never runs without the limit it was given. */
    fprintf(stderr, "tollgate: set %s: %s (the container's seccomp profile must allow prlimit64 "
                    "and setrlimit, as the bundled default.json does)\n", limits[k].name, strerror(errno));
    return EXIT_CANNOT_RUN;
  }
  return 0;
}

static bool executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && !S_ISDIR(st.st_mode) && (st.st_mode & 0111) != 0;
}

/* PROGRAM as runc 1.1 finds it (Go's exec.LookPath): a name with a slash
 * as it is; otherwise the first PATH entry (an empty one is ".") holding
 * an executable non-directory of that name; a relative result is refused,
 * as Go 1.19 refuses it.  Returns the path (file itself or buf), or NULL
 * with *why set. */
static const char *find_program(const char *file, char *buf, size_t size, const char **why) {
  if (strchr(file, '/') != NULL)
    return file;
  const char *dir = getenv("PATH");
  *why = "executable file not found in $PATH";
  while (dir != NULL && *dir != '\0') {
    const char *end = strchrnul(dir, ':');
    int n = end == dir ? snprintf(buf, size, "./%s", file)
                       : snprintf(buf, size, "%.*s/%s", (int)(end - dir), dir, file);
    if (n > 0 && (size_t)n < size && executable(buf)) {
      if (buf[0] == '/')
        return buf;
      *why = "cannot run executable found relative to current directory";
      return NULL;
    }
    dir = *end == ':' ? end + 1 : NULL;
  }
  return NULL;
}

int rlimit_exec_main(int argc, char **argv) {
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    int st = apply(argv[i]);
    if (st != 0)
      return st;
  }
  if (i + 1 >= argc) {
    fprintf(stderr, "usage: tollgate-call " RLIMIT_EXEC_FLAG " NAME=SOFT:HARD... -- PROGRAM [ARG...]\n");
    return EXIT_CANNOT_RUN;
  }
  char **prog = argv + i + 1;
  char buf[4096];
  const char *why = NULL;
  const char *path = find_program(prog[0], buf, sizeof buf, &why);
  if (path == NULL) {
    fprintf(stderr, "tollgate: exec: \"%s\": %s\n", prog[0], why);
    return EXIT_NOT_FOUND;
  }
  execve(path, prog, environ);
  int e = errno;
  fprintf(stderr, "tollgate: exec %s: %s\n", path, strerror(e));
  return e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
