/* tollgate run: create + start + wait in the foreground, exiting with the
 * container's status; the bridge is served from this process instead of a
 * sidecar.  INT, TERM, HUP, QUIT, USR1 and USR2 sent to tollgate are
 * passed on to the container.
 *
 * runc: tollgate becomes a child subreaper before runc's create, so the
 * container's init is re-parented to it; start, then waitpid() gives the
 * real exit status, and signals go through a pidfd.
 *
 * runsc: the exit status of a sandbox whose init exits quickly is only
 * known to the runsc process that is the sandbox's parent (`runsc wait`
 * after a detached create answers "exit status is unavailable"), so
 * tollgate prepares everything as create does, then runs `runsc run` in
 * the foreground, passing signals on with `runsc kill` (runsc run does
 * not forward them).  tollgate must not be a subreaper here: runsc waits
 * for its sandbox process to disappear, and an unreaped zombie never
 * does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "governance/gate.h"
#include "shim/lifecycle/backend.h"
#include "shim/lifecycle/backend_bundle.h"
#include "shim/lifecycle/bundle_snapshot.h"
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/console.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/limit_watch.h"
#include "shim/lifecycle/run_follow.h"
#include "shim/lifecycle/run_guard.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2};
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

/* An eventfd the gate's stop hook writes (an anomaly whose action is
 * "stop"): the run's wait below kills the container when it fires. */
static int stop_efd = -1;

static void request_stop(void *ctx) {
  (void)ctx;
  uint64_t one = 1;
  if (write(stop_efd, &one, sizeof one) < 0) {
    /* an eventfd write fails only on overflow: a stop is pending anyway */
  }
}

/* Send sig: through `runsc kill` when c is given (runsc run does not pass
 * signals on into the sandbox), else to pidfd's process. */
static void send_signal(struct cli *cli, const struct container *c, int pidfd, int sig) {
  if (c != NULL) {
    char num[16];
    snprintf(num, sizeof num, "%d", sig);
    char *after[] = {num, NULL};
    struct proc_opts quiet = {.capture_stdout = true,
                              .capture_stderr = true};
    struct proc_result res = {0};
    tg_error *e = NULL;
    /* Not yet started, or already gone: nothing to signal. */
    container_call(cli, c, "kill", NULL, after, &quiet, &res, &e);
    tg_error_free(&e);
    proc_result_free(&res);
  } else {
    /* The pidfd names exactly that process: a recycled pid cannot be
     * hit by mistake. */
    pidfd_signal(pidfd, sig);
  }
}

/* `runc run`'s init, followed through its pid file (run_follow.h) and
 * handed to the run guard: the one-call path's stand-in for the split's
 * init_pid, known only once runc has written it.
 *
 * From then on `runc run` is held stopped (SIGSTOP) until the init has
 * exited: it would reap the init and remove the container's cgroup at
 * once, before the limit watch's last word (the split keeps the cgroup
 * until tollgate's delete).  It has nothing to do meanwhile: the
 * container's stdio is tollgate's own, passed on, and the signals it
 * would pass on go to the init's pidfd directly. */
struct follow {
  int dir_fd;                    /* the state directory */
  int ino_fd;                    /* inotify on it: the pid file's rename
                                    wakes the follow at once, or -1 */
  pid_t runner;                  /* `runc run`, tollgate's unreaped child */
  int runner_fd;                 /* its pidfd */
  unsigned long long runner_start;
  struct timespec deadline;      /* when to stop looking (the guard falls
                                    back on runc run's pidfd and kill --all) */
  int tries;
  int init_fd;                   /* the verified init's pidfd, or -1 */
  pid_t init_pid;
  bool runner_stopped;           /* held until the init is over */
  bool init_over;
  struct run_guard *guard;
  struct limit_watch *lw;
};

/* Let runc run go on (it reaps the init, removes the container, exits
 * with the init's status). */
static void follow_release_runner(struct follow *f) {
  if (f != NULL && f->runner_stopped && pidfd_signal(f->runner_fd, SIGCONT) == 0)
    f->runner_stopped = false;
}

/* How long to look for the pid file: `runc run` writes it tens of
 * milliseconds after its start here; the bound keeps a runc that never
 * does from keeping tollgate polling for ever. */
#define FOLLOW_FOR_S 30

/* The poll timeout (ms) while f still looks for the init: often at first,
 * when the pid file is due, then every 10 ms; -1 once there is nothing
 * to look for. */
static int follow_timeout(const struct follow *f) {
  if (f == NULL || f->init_fd >= 0)
    return -1;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (now.tv_sec > f->deadline.tv_sec ||
      (now.tv_sec == f->deadline.tv_sec && now.tv_nsec >= f->deadline.tv_nsec))
    return -1;
  /* With inotify the timer is only a fallback. */
  return f->ino_fd >= 0 ? 10 : f->tries < 500 ? 1 : 10;
}

/* One look at the pid file: once it names the verified init, the guard
 * gets its pidfd. */
static void follow_step(struct follow *f) {
  if (f == NULL || f->init_fd >= 0)
    return;
  f->tries++;
  /* Only once the file is there is runc run stopped, and then before the
   * check: stopped, it cannot reap the init between the check and the
   * hold, so the init found alive stays what the pidfd names. */
  if (faccessat(f->dir_fd, "backend.pid", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  if (pidfd_signal(f->runner_fd, SIGSTOP) == 0)
    f->runner_stopped = true;
  int fd = -1;
  if (run_follow_try(f->dir_fd, "backend.pid", f->runner, f->runner_start, &fd, &f->init_pid) != 1) {
    follow_release_runner(f);
    return;
  }
  f->init_fd = fd;
  limit_watch_attach(f->lw, f->init_pid);
  /* A guard that is gone cannot take it: it exits only when told, or
   * when it already acted; either way nothing is left to hand over. */
  if (run_guard_watch_init(f->guard, fd) < 0) {
    /* nothing listens: the guard is over */
  }
}

/* The gate asked for the container to be stopped.  A verified init
 * (init_fd, runc's one-call run) is killed through its pidfd.  runsc:
 * SIGKILL to the
 * sandbox whose pid `runsc run` wrote to pid_file, as the sidecar's stop
 * does (its init_pid is the same pid), at once; a `runsc kill` takes a
 * runsc start-up, while the program goes on (its calls refused).  It is
 * the fallback when there is no pid file yet. */
static void stop_container(struct cli *cli, const struct container *c, int pidfd,
                           const char *pid_file, int init_fd) {
  if (init_fd >= 0 && pidfd_signal(init_fd, SIGKILL) == 0)
    return;
  long pid = 0;
  if (pid_file != NULL && state_read_pid_file(pid_file, &pid, NULL) == 0 && pid > 0) {
    cleanup_close int sandbox = pidfd_open_pid((pid_t)pid);
    if (sandbox >= 0 && pidfd_signal(sandbox, SIGKILL) == 0)
      return;
  }
  send_signal(cli, c, pidfd, SIGKILL);
}

/* Poll until pidfd is readable (the process exited), forwarding every
 * signal read from sfd, and killing the container when the gate asks
 * (stop_efd). */
static int forward_until_exit(struct cli *cli, const struct container *c,
                              const struct container *stop_c,
                              int pidfd, int sfd, const char *pid_file, struct follow *f,
                              tg_error **err) {
  for (;;) {
    /* p[3]: the followed init, while runc run is held for it. */
    bool held = f != NULL && f->runner_stopped && f->init_fd >= 0;
    bool looking = f != NULL && f->init_fd < 0 && f->ino_fd >= 0;
    struct pollfd p[5] = {{.fd = pidfd, .events = POLLIN},
                          {.fd = sfd, .events = POLLIN},
                          {.fd = stop_efd, .events = POLLIN},
                          {.fd = held ? f->init_fd : -1, .events = POLLIN},
                          {.fd = looking ? f->ino_fd : -1, .events = POLLIN}};
    int r = poll(p, 5, follow_timeout(f));
    if (looking && (p[4].revents & POLLIN)) {
      char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
      while (read(f->ino_fd, ev, sizeof ev) > 0)
        ; /* drained: what changed is looked at below, not trusted */
    }
    follow_step(f);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return tg_error_set(err, errno, "run: poll");
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        send_signal(cli, c, f != NULL && f->runner_stopped && f->init_fd >= 0 ? f->init_fd : pidfd,
                    (int)si.ssi_signo);
    }
    if (held && (p[3].revents & (POLLIN | POLLHUP))) {
      /* The init is over: its cgroup's counters while they are there,
       * then runc run may reap it and remove the container. */
      limit_watch_settle(f->lw);
      follow_release_runner(f);
    }
    uint64_t n;
    if ((p[2].revents & POLLIN) && read(stop_efd, &n, sizeof n) == (ssize_t)sizeof n)
      stop_container(cli, stop_c, pidfd, pid_file, f != NULL ? f->init_fd : -1);
    if (p[0].revents & POLLIN)
      return 0;
  }
}

/* runc: start, then wait for our (re-parented) init. */
static int run_runc(struct cli *cli, struct created *c, int sfd,
                    tg_error **err) {
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  cleanup_close int pidfd = pidfd_open_pid(c->init_pid);
  if (pidfd < 0)
    return tg_error_set(err, errno, "run: watch the container's init %d",
                        (int)c->init_pid);
  /* The init is our child and no parent-death signal reaches it: the
   * guard stops it if tollgate dies, so that it never runs on without
   * its gate (shim/lifecycle/run_guard.h).  Before start: nothing of the
   * user's runs unguarded. */
  struct run_guard guard;
  if (run_guard_start(cli, &c->container, c->init_pid, &guard, err) < 0)
    return -1;
  int r = container_call_ok(cli, &c->container, "start", NULL, &quiet, &res, err);
  proc_result_free(&res);
  if (r == 0)
    r = forward_until_exit(cli, NULL, NULL, pidfd, sfd, NULL, NULL, err);
  run_guard_release(&guard);
  if (r < 0)
    return -1;
  int ws = 0;
  pid_t w;
  do
    w = waitpid(c->init_pid, &ws, 0);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    return tg_error_set(err, errno,
                        "run: the container's init %d is not tollgate's "
                        "child, so its exit status is unknown",
                        (int)c->init_pid);
  return proc_exit_status(ws);
}

/* `runsc run`, or `runc run` when create found nothing that needs the
 * split (c->run_direct), in the foreground, with the bundle prepared. */
static int run_foreground(struct cli *cli, struct created *c,
                          const struct create_request *req, int sfd,
                          struct limit_watch *lw, tg_error **err) {
  cleanup_free char *pid_file = xasprintf("%s/backend.pid", c->dir);
  /* The private bundle create wrote: `runsc run` reads its config after
   * create released the user's bundle, which another create from it may
   * have rewritten by then (shim/lifecycle/backend_bundle.h). */
  cleanup_free char *bundle = backend_bundle_path(c->dir);
  struct create_flags cf = {
      .bundle = bundle,
      .pid_file = pid_file,
      .console_socket = req->console_socket,
      .no_pivot = req->no_pivot,
      .no_new_keyring = req->no_new_keyring,
      .preserve_fds = c->run_direct ? req->preserve_fds : -1};
  struct argv args = {0};
  backend_create_args(&c->container.backend, &cf, &args);
  /* runc's one-call run: the guard (run_guard.h) exists before `runc
   * run` does, so that no moment has a container starting and nothing to
   * stop it if tollgate is killed (-9).  It learns `runc run`'s pidfd
   * right after the spawn and the init's once the pid file names it. */
  struct run_guard guard = {.pid = 0, .done_fd = -1};
  if (c->run_direct && run_guard_start(cli, &c->container, 0, &guard, err) < 0) {
    argv_free(&args);
    return -1;
  }
  /* Both die with tollgate.  A `runsc run` whose tollgate was killed
   * would wait forever for a gofer nobody reaps, and the next `delete
   * --force` would run into runsc's own timeout: it dies instead, and
   * its sandbox and gofer go to init, which reaps them (the sidecar-less
   * sandbox then stops on its own).  A `runc run` killed before it
   * let the init exec never runs the user's process: this closes the
   * moment between the spawn and the guard holding its pidfd, and the
   * guard kills what already runs.  Killed half-way, runc may leave a
   * `runc init` blocked before the exec, which delete --force removes. */
  struct proc_opts passthrough = {.die_with_parent = true};
  struct proc child;
  int r = container_spawn(cli, &c->container, "run", args.v, NULL,
                          &passthrough, &child, err);
  argv_free(&args);
  if (r < 0) {
    run_guard_release(&guard);
    return -1;
  }
  cleanup_close int pidfd = pidfd_open_pid(child.pid);
  cleanup_close int dir_fd = -1;
  cleanup_close int ino_fd = -1;
  struct follow follow = {.dir_fd = -1, .ino_fd = -1, .runner = child.pid, .runner_fd = pidfd, .init_fd = -1,
                          .guard = &guard, .lw = lw};
  struct follow *f = NULL;
  if (c->run_direct) {
    struct proc_stat_fields rs;
    dir_fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    /* Without runc run's pidfd in the guard, a kill -9 of tollgate from
     * here on could leave a container running that nothing governs: such
     * a run does not go on.  (runc run is tollgate's unreaped child, so
     * its pid, read here, is its own.) */
    if (pidfd < 0 || dir_fd < 0 || run_follow_read_stat(child.pid, &rs) < 0 ||
        run_guard_watch_runner(&guard, pidfd) < 0) {
      int e = errno;
      kill(child.pid, SIGKILL);
      struct proc_result ignored = {0};
      tg_error *fe = NULL;
      container_finish(&c->container, &child, &passthrough, &ignored, &fe);
      tg_error_free(&fe);
      proc_result_free(&ignored);
      run_guard_release(&guard);
      return tg_error_set(err, e, "run: hand `runc run` (pid %d) to the container's guard",
                          (int)child.pid);
    }
    follow.dir_fd = dir_fd;
    /* runc renames the pid file into place: the event wakes the follow
     * within the moment it appears, which is what holding runc run before
     * it can reap a short-lived init needs.  Without inotify, polling. */
    ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ino_fd >= 0 && inotify_add_watch(ino_fd, c->dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) < 0) {
      close(ino_fd);
      ino_fd = -1;
    }
    follow.ino_fd = ino_fd;
    follow.runner_start = rs.start;
    clock_gettime(CLOCK_MONOTONIC, &follow.deadline);
    follow.deadline.tv_sec += FOLLOW_FOR_S;
    f = &follow;
  }
  /* `runc run` passes the signals it gets on to the container's init:
   * they go to it through its pidfd, not through a `runc kill` each.  A
   * stop goes to the verified init, or before runc wrote its pid through
   * the backend's kill, never to `runc run` itself (its init would run
   * on); runc's pid file is not read unverified for it. */
  if (pidfd >= 0)
    forward_until_exit(cli, c->run_direct ? NULL : &c->container, &c->container, pidfd, sfd,
                       c->run_direct ? NULL : pid_file, f, err);
  /* Never left stopped: container_finish waits for it. */
  follow_release_runner(f);
  struct proc_result res = {0};
  int st = container_finish(&c->container, &child, &passthrough, &res, err);
  /* Only once runc run is reaped: until then the guard still kills it
   * and its container if tollgate dies. */
  run_guard_release(&guard);
  if (follow.init_fd >= 0)
    close(follow.init_fd);
  if (st < 0)
    return -1;
  /* A non-zero status is the container's own unless runsc logged an
   * error of its own (it could not create or start the sandbox), or
   * never got as far as a sandbox: no pid file means no container ran,
   * so the status is runsc's, even when it said nothing. */
  /* runc: its pid file is written once the init runs, so a status with
   * the pid file there is the container's.  Its log is no witness here:
   * the `runc state` of a concurrent `tollgate state` writes there too. */
  cleanup_free char *backend_err = c->run_direct ? NULL : container_last_error();
  if (st != 0 && (backend_err != NULL || access(pid_file, F_OK) != 0))
    st = container_backend_error(&c->container, "run", &res, err);
  proc_result_free(&res);
  return st;
}

/* An anomaly limit stopped the run (docs/policy.md, "Anomaly limits"):
 * say which, and where its record is.  The status is then 15, as
 * tollgate-call's for "anomaly", whatever the container's own. */
#define RUN_EXIT_ANOMALY 15
static int report_anomaly_stop(struct gate *gate, int status) {
  cleanup_free char *why = NULL, *call = NULL;
  if (status < 0 || !gate_anomaly_stop(gate, &why, &call))
    return status;
  fprintf(stderr,
          "tollgate run: an anomaly limit stopped the run: %s; the container's own status was "
          "%d; its record: call %s in %s\n",
          why, status, call ? call : "-", gate_audit_path(gate));
  return RUN_EXIT_ANOMALY;
}

static void reap_children(void) {
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

static int run_detached(struct cli *cli, struct run_request *req,
                        tg_error **err) {
  struct created c;
  if (container_create(cli, &req->create, &c, err) < 0)
    return -1;
  int r = container_start(cli, &c.container, err);
  created_free(&c);
  if (r < 0) {
    tg_error *e = NULL;
    container_delete(cli, req->create.id, true, &e);
    tg_error_free(&e);
  }
  return r;
}

int cmd_run(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct run_request req;
  if (cli_parse_run(argc, argv, &req, err) < 0)
    return -1;
  if (req.detach)
    return run_detached(cli, &req, err);
  /* A foreground run that deletes its container owns it: killed, it
   * leaves nothing the reaper keeps (docs/reliability.md). */
  req.create.owner_self = !req.keep;
  struct backend b;
  if (backend_choose(cli, &b, err) < 0)
    return -1;
  bool runc = b.kind == BACKEND_RUNC;
  backend_free(&b);

  /* Block the forwarded signals before any thread or child exists: the
   * bridge thread inherits the mask, so they reach only our signalfd;
   * backend children get an empty mask (proc_spawn). */
  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < N_FORWARDED; i++)
    sigaddset(&set, forwarded[i]);
  sigprocmask(SIG_BLOCK, &set, &old);
  cleanup_close int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    return tg_error_set(err, errno, "run: signalfd");
  }
  if (runc && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    return tg_error_set(err, errno, "run: become a child subreaper");
  }
  req.create.in_process_bridge = true;
  req.create.prepare_only = !runc;
  /* runc: one `runc run` rather than create, start and delete (two Go
   * process starts fewer) when create finds nothing between create and
   * start to do (shim/lifecycle/create_direct.c). */
  req.create.run_direct_if_eligible = runc && !req.keep; /* --keep: runc's
                                   record of the stopped container stays */
  /* runc's detached create needs a console socket for a terminal; with
   * none given, tollgate is the console (runsc run makes its own). */
  cleanup_close int console_fd = -1;
  cleanup_free char *console_path = NULL;
  if (runc && req.create.console_socket == NULL &&
      console_bundle_wants_terminal(req.create.bundle)) {
    if (state_check_id(req.create.id, err) < 0 || mkdir_p(cli->root, 0711, err) < 0) {
      sigprocmask(SIG_SETMASK, &old, NULL);
      return -1;
    }
    console_path = xasprintf("%s/console-%s.sock", cli->root, req.create.id);
    console_fd = console_listen(console_path, err);
    if (console_fd < 0) {
      sigprocmask(SIG_SETMASK, &old, NULL);
      return -1;
    }
    req.create.console_socket = console_path;
  }
  /* A run that fails after its create succeeded (runsc: `runsc run`
   * itself fails; runc: start fails) puts the bundle back as a failed
   * create does: the create's own undo is over by then. */
  struct bundle_snapshot before;
  bundle_snapshot_take(req.create.bundle, &before);
  struct created c;
  int cr = container_create(cli, &req.create, &c, err);
  struct console_relay *relay = NULL;
  if (cr == 0 && console_fd >= 0) {
    int master = console_receive(console_fd, err);
    if (master < 0 || console_relay_start(master, &relay, err) < 0)
      cr = -1;
  }
  if (console_path != NULL)
    unlink(console_path);
  if (cr < 0) {
    if (c.dir != NULL) { /* created, but the console failed */
      tg_error *e = NULL;
      container_delete(cli, req.create.id, true, &e);
      tg_error_free(&e);
      created_free(&c);
      bundle_snapshot_restore(&before);
    }
    reap_children();
    sigprocmask(SIG_SETMASK, &old, NULL);
    bundle_snapshot_free(&before);
    return -1;
  }
  int status = -1;
  struct bridge_server *server = NULL;
  struct gate *gate = c.gate;
  c.gate = NULL; /* the server's from here on */
  if (stop_efd < 0)
    stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (gate != NULL && stop_efd >= 0)
    gate_set_stop_hook(gate, request_stop, NULL);
  /* passthrough without a policy has no bridge to serve. */
  if (!c.bridged || bridge_serve_in_process(&c.setup, gate, &server, err) == 0) {
    /* A limit the container met is said, not left to dmesg. */
    cleanup_free char *pid_file = xasprintf("%s/backend.pid", c.dir);
    /* runc's one-call run: no thread polling the pid file (its naps held
     * the run's end up to 50 ms); the follow names the verified init and
     * holds runc run, so its cgroup, until the last look. */
    struct limit_watch *lw = runc && c.run_direct ? limit_watch_start(0, NULL)
                             : limit_watch_start(runc ? c.init_pid : 0, pid_file);
    status = runc && !c.run_direct ? run_runc(cli, &c, sfd, err)
                                   : run_foreground(cli, &c, &req.create, sfd, lw, err);
    limit_watch_report(lw, req.create.id, !runc);
    status = report_anomaly_stop(gate, status);
    /* The gate closes (audit log synced) while the container is removed. */
    bridge_stop_in_process_begin(server);
  }
  console_relay_stop(relay);
  if (!req.keep || status < 0) {
    tg_error *e = NULL;
    if (container_delete_after_run(cli, req.create.id, &e) < 0 && status >= 0) {
      *err = e;
      e = NULL;
      status = -1;
    }
    tg_error_free(&e);
  }
  bridge_stop_in_process_end(server);
  created_free(&c);
  if (status < 0)
    bundle_snapshot_restore(&before);
  bundle_snapshot_free(&before);
  reap_children();
  sigprocmask(SIG_SETMASK, &old, NULL);
  return status;
}
