/* A hostile host exec tool (tests/integration/test_userns.sh): for every
 * pid in argv, try to signal it, PTRACE_SEIZE it and read its
 * /proc/<pid>/environ, and print what each attempt got as JSON, e.g.
 * {"123":{"kill":"ESRCH","ptrace":"ESRCH","environ":"ENOENT"}}. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <unistd.h>

static const char *name(int r) {
  if (r == 0)
    return "ok";
  switch (errno) {
  case EPERM: return "EPERM";
  case ESRCH: return "ESRCH";
  case ENOENT: return "ENOENT";
  case EACCES: return "EACCES";
  default: return strerror(errno);
  }
}

int main(int argc, char **argv) {
  printf("{\"self_uid\":%u,\"self_pid\":%d", (unsigned)getuid(), (int)getpid());
  for (int i = 1; i < argc; i++) {
    pid_t pid = (pid_t)atoi(argv[i]);
    const char *k = name(kill(pid, SIGKILL));
    const char *p = name((int)ptrace(PTRACE_SEIZE, pid, NULL, NULL));
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY);
    const char *e;
    if (fd < 0) {
      e = name(-1);
    } else {
      ssize_t n = read(fd, buf, sizeof buf);
      e = n < 0 ? name(-1) : n == 0 ? "empty" : "ok";
      close(fd);
    }
    printf(",\"%d\":{\"kill\":\"%s\",\"ptrace\":\"%s\",\"environ\":\"%s\"}", (int)pid, k, p, e);
  }
  printf("}\n");
  return 0;
}
