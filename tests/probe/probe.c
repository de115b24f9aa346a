/* tollgate-probe: runs inside a container and prints, as JSON with one
 * key per line, what the container can and cannot do.  The hardening
 * integration tests assert every line.
 *
 *   tollgate-probe              the confinement report (docs/hardening.md,
 *                               "What the probe sees")
 *   tollgate-probe hog MIB      allocate and touch MIB MiB (OOM test)
 *   tollgate-probe fork N       start N sleeping children; print how many
 *                               started and the first fork error
 *   tollgate-probe fill PATH    write PATH until the write fails; print
 *                               the bytes written and the error
 *   tollgate-probe ioctl REQ    ioctl(0, REQ, &c) with REQ passed as all
 *                               64 bits (0x100005412 is TIOCSTI to the
 *                               kernel); print the result
 *
 * A result is "ok" when the operation succeeded, otherwise the errno name
 * ("EPERM"), so the tests see *why* something failed, not only that it
 * did.  Static, no dependency on the container's libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

static const char *result(int rc) {
  if (rc >= 0)
    return "ok";
  const char *n = strerrorname_np(errno);
  return n ? n : "EUNKNOWN";
}

static int first = 1;
static void key(const char *k) {
  printf("%s\n  \"%s\": ", first ? "{" : ",", k);
  first = 0;
}
static void str(const char *k, const char *v) {
  key(k);
  putchar('"');
  for (const char *p = v; *p; p++) {
    if (*p == '"' || *p == '\\')
      putchar('\\');
    if ((unsigned char)*p >= 0x20)
      putchar(*p);
  }
  putchar('"');
}
static void num(const char *k, long long v) {
  key(k);
  printf("%lld", v);
}

/* A /proc/self/status field, e.g. "CapEff" -> "0000000000000000". */
static void status_field(const char *field, char *out, size_t size) {
  snprintf(out, size, "missing");
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return;
  char line[256];
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      char *v = line + n + 1;
      while (*v == ' ' || *v == '\t')
        v++;
      v[strcspn(v, "\n")] = '\0';
      snprintf(out, size, "%s", v);
    }
  }
  fclose(f);
}

/* Run fn in a child so that whatever it manages to do (unshare, mount)
 * does not change the probe itself.  Returns its result string. */
static const char *in_child(int (*fn)(void)) {
  int pipefd[2];
  static char buf[8][32];
  static int slot;
  char *out = buf[slot++ % 8];
  if (pipe(pipefd) < 0)
    return result(-1);
  pid_t pid = fork();
  if (pid < 0)
    return result(-1);
  if (pid == 0) {
    close(pipefd[0]);
    const char *r = result(fn());
    (void)!write(pipefd[1], r, strlen(r));
    _exit(0);
  }
  close(pipefd[1]);
  ssize_t n = read(pipefd[0], out, 31);
  out[n > 0 ? n : 0] = '\0';
  close(pipefd[0]);
  waitpid(pid, NULL, 0);
  if (n <= 0)
    snprintf(out, 32, "child died");
  return out;
}

static int try_unshare_user(void) { return unshare(CLONE_NEWUSER); }
static int try_unshare_mount(void) { return unshare(CLONE_NEWNS); }
static int try_unshare_net(void) { return unshare(CLONE_NEWNET); }
static int try_mount(void) { return mount("probe", "/tmp", "tmpfs", 0, "size=1m"); }
static int try_setuid_root(void) { return setuid(0); }
static int try_mknod(void) { return mknod("/tmp/probe-null", S_IFCHR | 0600, makedev(1, 3)); }
static int try_mkfifo(void) {
  int r = mkfifo("/tmp/probe-fifo", 0600);
  int e = errno;
  unlink("/tmp/probe-fifo");
  errno = e;
  return r;
}
static void *thread_main(void *arg) { return arg; }
/* glibc creates threads with clone3 and falls back to clone only on
 * ENOSYS: this fails if the seccomp filter answers clone3 with EPERM. */
static int try_thread(void) {
  pthread_t t;
  int r = pthread_create(&t, NULL, thread_main, NULL);
  if (r != 0) {
    errno = r;
    return -1;
  }
  pthread_join(t, NULL);
  return 0;
}
static int try_init_module(void) { return (int)syscall(SYS_init_module, NULL, 0, ""); }
static int try_bpf(void) { return (int)syscall(SYS_bpf, 0, NULL, 0); }
static int try_keyctl(void) { return (int)syscall(SYS_add_key, "user", "probe", "x", 1, -2 /* session keyring */); }
static int try_userfaultfd(void) { return (int)syscall(SYS_userfaultfd, 0); }
static int try_chroot(void) { return chroot("/tmp"); }

static int try_ptrace(void) {
  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child == 0) {
    pause();
    _exit(0);
  }
  long r = ptrace(PTRACE_ATTACH, child, NULL, NULL);
  int e = errno;
  if (r == 0) {
    waitpid(child, NULL, 0);
    ptrace(PTRACE_DETACH, child, NULL, NULL);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  errno = e;
  return r == 0 ? 0 : -1;
}

static int try_socket_external(void) {
  /* UDP connect sends nothing, so this never waits on a real network:
   * it fails at once when there is no route out. */
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
  inet_pton(AF_INET, "192.0.2.1", &a.sin_addr); /* TEST-NET-1 */
  int r = connect(s, (struct sockaddr *)&a, sizeof a);
  int e = errno;
  close(s);
  errno = e;
  return r;
}

static int try_socket_netlink(void) {
  int s = socket(AF_NETLINK, SOCK_RAW, 0);
  if (s >= 0)
    close(s);
  return s;
}

static int try_write_root(void) {
  int fd = open("/.tollgate-probe", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return -1;
  close(fd);
  unlink("/.tollgate-probe");
  return 0;
}

static int try_write_tmp(void) {
  int fd = open("/tmp/.tollgate-probe", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return -1;
  int r = (int)write(fd, "x", 1);
  close(fd);
  unlink("/tmp/.tollgate-probe");
  return r;
}

static int try_write_proc_sys(void) {
  int fd = open("/proc/sys/kernel/hostname", O_WRONLY);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

static int try_dev_mem(void) {
  int fd = open("/dev/mem", O_RDONLY);
  if (fd >= 0)
    close(fd);
  return fd;
}

/* "readable" when data came out, "empty" when masked (a /dev/null file
 * or an empty tmpfs directory), else the errno name. */
static const char *readability(const char *path) {
  struct stat st;
  if (stat(path, &st) < 0)
    return result(-1);
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d)
      return result(-1);
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
        entries++;
    closedir(d);
    return entries ? "readable" : "empty";
  }
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0)
    return result(-1);
  char c;
  ssize_t n = read(fd, &c, 1);
  int e = errno;
  close(fd);
  errno = e;
  if (n < 0)
    return result(-1);
  return n ? "readable" : "empty";
}

static void interfaces(void) {
  /* From /proc/net/dev: works without netlink, which seccomp may deny. */
  key("interfaces");
  FILE *f = fopen("/proc/net/dev", "r");
  putchar('[');
  if (f) {
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
      char *colon = strchr(line, ':');
      if (!colon)
        continue;
      *colon = '\0';
      char *name = line;
      while (*name == ' ')
        name++;
      printf("%s\"%s\"", n++ ? ", " : "", name);
    }
    fclose(f);
  }
  putchar(']');
}

static void rlimit(const char *k, int res) {
  struct rlimit r;
  key(k);
  if (getrlimit(res, &r) < 0) {
    printf("null");
    return;
  }
  printf("[%lld, %lld]", r.rlim_cur == RLIM_INFINITY ? -1LL : (long long)r.rlim_cur,
         r.rlim_max == RLIM_INFINITY ? -1LL : (long long)r.rlim_max);
}

static int report(void) {
  char v[128];
  static const char *const status_keys[][2] = {
      {"CapInh", "cap_inh"}, {"CapPrm", "cap_prm"}, {"CapEff", "cap_eff"}, {"CapBnd", "cap_bnd"},
      {"CapAmb", "cap_amb"}, {"NoNewPrivs", "no_new_privs"}, {"Seccomp", "seccomp"}};
  for (size_t i = 0; i < sizeof status_keys / sizeof status_keys[0]; i++) {
    status_field(status_keys[i][0], v, sizeof v);
    str(status_keys[i][1], v);
  }
  num("uid", getuid());
  num("gid", getgid());
  str("write_root", result(try_write_root()));
  str("write_tmp", result(try_write_tmp()));
  str("write_proc_sys", result(try_write_proc_sys()));
  str("socket_external", result(try_socket_external()));
  str("socket_netlink", result(try_socket_netlink()));
  str("mount", in_child(try_mount));
  str("unshare_user", in_child(try_unshare_user));
  str("unshare_mount", in_child(try_unshare_mount));
  str("unshare_net", in_child(try_unshare_net));
  str("ptrace", in_child(try_ptrace));
  str("init_module", in_child(try_init_module));
  str("bpf", in_child(try_bpf));
  str("keyctl", in_child(try_keyctl));
  str("userfaultfd", in_child(try_userfaultfd));
  str("chroot", in_child(try_chroot));
  str("setuid_root", in_child(try_setuid_root));
  str("mknod", in_child(try_mknod));
  str("mkfifo", in_child(try_mkfifo));
  str("thread", in_child(try_thread));
  str("dev_mem", result(try_dev_mem()));
  interfaces();
  rlimit("rlimit_nofile", RLIMIT_NOFILE);
  rlimit("rlimit_nproc", RLIMIT_NPROC);
  rlimit("rlimit_core", RLIMIT_CORE);
  static const char *const masked[] = {"/proc/kcore", "/proc/keys", "/proc/sysrq-trigger", "/proc/timer_list",
                                       "/proc/sched_debug", "/sys/firmware", "/proc/acpi", "/proc/scsi"};
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
    char k[64];
    snprintf(k, sizeof k, "masked%s", masked[i]);
    for (char *p = k; *p; p++)
      if (*p == '/' || *p == '-')
        *p = '_';
    str(k, readability(masked[i]));
  }
  printf("\n}\n");
  return 0;
}

static int hog(long mib) {
  size_t chunk = 16u << 20;
  long done = 0;
  printf("hog: allocating %ld MiB\n", mib);
  fflush(stdout);
  while (done < mib) {
    char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("hog: mmap failed after %ld MiB: %s\n", done, strerrorname_np(errno));
      return 2;
    }
    memset(p, 0xa5, chunk);
    done += 16;
  }
  printf("hog: touched %ld MiB and was not stopped\n", done);
  return 0;
}

static int forks(long n) {
  static pid_t kids[100000];
  long started = 0;
  if (n > 100000)
    n = 100000;
  const char *first_error = "none";
  for (long i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      first_error = result(-1);
      break;
    }
    if (pid == 0) {
      sleep(30);
      _exit(0);
    }
    kids[started++] = pid;
  }
  printf("{\"started\": %ld, \"error\": \"%s\"}\n", started, first_error);
  fflush(stdout);
  /* Leave no children behind: they die with the container anyway, but a
   * probe run outside one should clean up too. */
  for (long i = 0; i < started; i++)
    kill(kids[i], SIGKILL);
  while (wait(NULL) > 0)
    ;
  return 0;
}

static int fill(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    printf("{\"written\": 0, \"error\": \"%s\"}\n", result(-1));
    return 1;
  }
  static char block[1 << 20];
  memset(block, 'x', sizeof block);
  long long written = 0;
  const char *err = "none";
  for (int i = 0; i < 4096; i++) {
    ssize_t n = write(fd, block, sizeof block);
    if (n < 0) {
      err = result(-1);
      break;
    }
    written += n;
    if (n < (ssize_t)sizeof block) {
      /* a short write: the next one reports the reason */
      continue;
    }
  }
  close(fd);
  unlink(path);
  printf("{\"written\": %lld, \"error\": \"%s\"}\n", written, err);
  return 0;
}

static int ioctl_raw(const char *req) {
  unsigned long long r = strtoull(req, NULL, 0);
  char c = 'x';
  long ret = syscall(SYS_ioctl, 0, (unsigned long)r, &c);
  printf("{\"ioctl\": \"%s\"}\n", ret == 0 ? "ok" : strerrorname_np(errno));
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  if (argc == 3 && strcmp(argv[1], "hog") == 0)
    return hog(atol(argv[2]));
  if (argc == 3 && strcmp(argv[1], "fork") == 0)
    return forks(atol(argv[2]));
  if (argc == 3 && strcmp(argv[1], "ioctl") == 0)
    return ioctl_raw(argv[2]);
  if (argc == 3 && strcmp(argv[1], "fill") == 0)
    return fill(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: tollgate-probe [hog MIB | fork N | fill PATH]\n");
    return 2;
  }
  report();
  fflush(stdout);
  return 0;
}
