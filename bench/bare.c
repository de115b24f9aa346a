/* The bare responder: the baseline for the bridge benchmark.
 *
 * It speaks the same file protocol as the tollgate sidecar (request
 * req/<id>.json + req/<id>.done, response resp/<id>.json + resp/<id>.done,
 * each body written by temp file and rename) and nothing else: no policy,
 * no budgets, no audit, no validation of ids or bodies, no confinement.
 * What it measures is the limit of a file bridge on this machine, so the
 * main bridge figure is the ratio governed/bare.
 *
 * It must never run against a directory a hostile container can write:
 * it trusts every name and body it sees.  The benchmark gives it a private
 * tmpfs shared only with the benchmark's own client.
 *
 * Usage: bench-bare [-w WORKERS] CALLS_DIR
 *   Serves CALLS_DIR/req and CALLS_DIR/resp (created if missing).  Prints
 *   "ready" on stdout once the watch is in place, and exits 0 on SIGTERM or
 *   SIGINT after printing "served N".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BODY (64 * 1024)
#define QUEUE_LEN 4096
#define ID_MAX 64

static int req_fd = -1, resp_fd = -1;

/* A fixed ring of pending ids between the watcher and the workers. */
static struct {
  char ids[QUEUE_LEN][ID_MAX + 1];
  unsigned head, tail;
  bool closing;
  pthread_mutex_t lock;
  pthread_cond_t nonempty;
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .nonempty = PTHREAD_COND_INITIALIZER};

static unsigned long served;
static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;

static void die(const char *what) {
  fprintf(stderr, "bench-bare: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* "<id>.done" -> id in out; false for every other name (bodies, temp files). */
static bool id_of_marker(const char *name, char *out) {
  size_t n = strlen(name);
  if (n <= 5 || n - 5 > ID_MAX || strcmp(name + n - 5, ".done") != 0)
    return false;
  memcpy(out, name, n - 5);
  out[n - 5] = '\0';
  return true;
}

static void enqueue(const char *id) {
  pthread_mutex_lock(&queue.lock);
  if (queue.tail - queue.head < QUEUE_LEN) {
    strcpy(queue.ids[queue.tail % QUEUE_LEN], id);
    queue.tail++;
    pthread_cond_signal(&queue.nonempty);
  }
  /* A full ring drops the id; the rescan after the queue drains finds it. */
  pthread_mutex_unlock(&queue.lock);
}

static void rescan(void) {
  int fd = openat(req_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *de;
  char id[ID_MAX + 1];
  while ((de = readdir(d)))
    if (id_of_marker(de->d_name, id))
      enqueue(id);
  closedir(d);
}

static void serve(const char *id) {
  char name[ID_MAX + 16], tmp[ID_MAX + 32];
  snprintf(name, sizeof name, "%s.json", id);
  int fd = openat(req_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return; /* already served by another worker after a rescan */
  static const char head[] = "{\"v\":1,\"ok\":true,\"result\":";
  char *buf = malloc(sizeof head + MAX_BODY + 3);
  if (!buf)
    die("malloc");
  memcpy(buf, head, sizeof head - 1);
  size_t len = sizeof head - 1;
  ssize_t r;
  while (len < sizeof head - 1 + MAX_BODY &&
         (r = read(fd, buf + len, sizeof head - 1 + MAX_BODY - len)) > 0)
    len += (size_t)r;
  close(fd);
  /* The result is the text after "args": up to the body's closing brace:
   * an echo without parsing (both shipped clients write the args last). */
  buf[len] = '\0';
  char *args = strstr(buf + sizeof head - 1, "\"args\":");
  char *close_brace = strrchr(buf + sizeof head - 1, '}');
  if (args && close_brace && close_brace > args) {
    size_t alen = (size_t)(close_brace - (args + 7));
    memmove(buf + sizeof head - 1, args + 7, alen);
    len = sizeof head - 1 + alen;
  }
  buf[len++] = '}';
  buf[len++] = '\n';

  snprintf(tmp, sizeof tmp, ".%s.tmp", id);
  fd = openat(resp_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    free(buf);
    return;
  }
  size_t off = 0;
  while (off < len && (r = write(fd, buf + off, len - off)) > 0)
    off += (size_t)r;
  close(fd);
  free(buf);
  if (renameat(resp_fd, tmp, resp_fd, name) < 0)
    return;
  snprintf(name, sizeof name, "%s.done", id);
  fd = openat(resp_fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0)
    close(fd);
  unlinkat(req_fd, name, 0);
  snprintf(name, sizeof name, "%s.json", id);
  unlinkat(req_fd, name, 0);
  pthread_mutex_lock(&served_lock);
  served++;
  pthread_mutex_unlock(&served_lock);
}

static void *worker(void *arg) {
  (void)arg;
  char id[ID_MAX + 1];
  for (;;) {
    pthread_mutex_lock(&queue.lock);
    while (queue.head == queue.tail && !queue.closing)
      pthread_cond_wait(&queue.nonempty, &queue.lock);
    if (queue.head == queue.tail) {
      pthread_mutex_unlock(&queue.lock);
      return NULL;
    }
    strcpy(id, queue.ids[queue.head % QUEUE_LEN]);
    queue.head++;
    pthread_mutex_unlock(&queue.lock);
    serve(id);
  }
}

int main(int argc, char **argv) {
  int workers = 2, opt;
  while ((opt = getopt(argc, argv, "w:")) != -1) {
    if (opt == 'w')
      workers = atoi(optarg);
    else
      goto usage;
  }
  if (optind != argc - 1 || workers < 1 || workers > 64) {
  usage:
    fprintf(stderr, "usage: bench-bare [-w WORKERS] CALLS_DIR\n");
    return 2;
  }
  const char *dir = argv[optind];
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/req", dir);
  mkdir(path, 0777);
  chmod(path, 0777);
  int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in < 0)
    die("inotify_init1");
  /* IN_CREATE, not IN_CLOSE_WRITE: gVisor's gofer may keep the fd of a
   * file it created open, so the close event can come late or never.  The
   * marker is empty, so its creation is all that matters. */
  if (inotify_add_watch(in, path, IN_CREATE | IN_MOVED_TO) < 0)
    die(path);
  req_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (req_fd < 0)
    die(path);
  snprintf(path, sizeof path, "%s/resp", dir);
  mkdir(path, 0777);
  chmod(path, 0777);
  resp_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (resp_fd < 0)
    die(path);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (sfd < 0)
    die("signalfd");

  pthread_t tids[64];
  for (int i = 0; i < workers; i++) {
    /* pthread_create returns its error and leaves errno alone. */
    int rc = pthread_create(&tids[i], NULL, worker, NULL);
    if (rc != 0) {
      errno = rc;
      die("pthread_create");
    }
  }
  rescan();
  printf("ready\n");
  fflush(stdout);

  char ev[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
      __attribute__((aligned(__alignof__(struct inotify_event))));
  struct pollfd pfd[2] = {{.fd = in, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  for (;;) {
    if (poll(pfd, 2, 1000) < 0) {
      if (errno == EINTR)
        continue;
      die("poll");
    }
    if (pfd[1].revents)
      break;
    if (!pfd[0].revents) {
      rescan(); /* the safety net, as in the real bridge */
      continue;
    }
    ssize_t n = read(in, ev, sizeof ev);
    for (char *p = ev; n > 0 && p < ev + n;) {
      struct inotify_event *e = (struct inotify_event *)p;
      char id[ID_MAX + 1];
      if (e->mask & IN_Q_OVERFLOW)
        rescan();
      else if (e->len && id_of_marker(e->name, id))
        enqueue(id);
      p += sizeof *e + e->len;
    }
  }
  pthread_mutex_lock(&queue.lock);
  queue.closing = true;
  pthread_cond_broadcast(&queue.nonempty);
  pthread_mutex_unlock(&queue.lock);
  for (int i = 0; i < workers; i++)
    pthread_join(tids[i], NULL);
  printf("served %lu\n", served);
  return 0;
}
