/* tollgate run (shim/lifecycle/run.h). */
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
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/lifecycle/run.h"

#include "governance/gate.h"
#include "shim/lifecycle/backend.h"
#include "shim/lifecycle/backend_bundle.h"
#include "shim/lifecycle/bundle_snapshot.h"
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

/* The gate asked for the container to be stopped.  runsc: SIGKILL to the
 * sandbox whose pid `runsc run` wrote to pid_file, as the sidecar's stop
 * does (its init_pid is the same pid), at once; a `runsc kill` takes a
 * runsc start-up, while the program goes on (its calls refused).  It is
 * the fallback when there is no pid file yet. */
static void stop_container(struct cli *cli, const struct container *c, int pidfd,
                           const char *pid_file) {
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
                              int pidfd, int sfd, const char *pid_file, tg_error **err) {
  for (;;) {
    struct pollfd p[3] = {{.fd = pidfd, .events = POLLIN},
                          {.fd = sfd, .events = POLLIN},
                          {.fd = stop_efd, .events = POLLIN}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      return tg_error_set(err, errno, "run: poll");
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        send_signal(cli, c, pidfd, (int)si.ssi_signo);
    }
    uint64_t n;
    if ((p[2].revents & POLLIN) && read(stop_efd, &n, sizeof n) == (ssize_t)sizeof n)
      stop_container(cli, stop_c, pidfd, pid_file);
    if (p[0].revents & POLLIN)
      return 0;
  }
}

/* Wait for our (re-parented) init, whose pidfd is pidfd, forwarding
 * signals; the guard is released once it exited.  Its status. */
static int wait_runc_init(struct cli *cli, struct created *c, int pidfd, int sfd,
                          struct run_guard *guard, tg_error **err) {
  int r = forward_until_exit(cli, NULL, NULL, pidfd, sfd, NULL, err);
  run_guard_release(guard);
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
  if (r < 0) {
    run_guard_release(&guard);
    return -1;
  }
  return wait_runc_init(cli, c, pidfd, sfd, &guard, err);
}

/* Wait until `runc run --detach` (pidfd) has exited.  A stop the gate
 * asks for meanwhile goes through the backend's kill and is remembered
 * (*stop): runc may not know the container yet, and the init is killed
 * once known.  The signals to pass on stay queued in the signalfd until
 * then: sent to runc run they would end it half-way, not reach the
 * container. */
static int wait_runner(struct cli *cli, const struct container *c, int pidfd, bool *stop,
                       tg_error **err) {
  for (;;) {
    struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = stop_efd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return tg_error_set(err, errno, "run: poll");
    }
    uint64_t n;
    if ((p[1].revents & POLLIN) && read(stop_efd, &n, sizeof n) == (ssize_t)sizeof n) {
      *stop = true;
      send_signal(cli, c, -1, SIGKILL);
    }
    if (p[0].revents & POLLIN)
      return 0;
  }
}

/* runc's one-call start: `runc run --detach` is create and start in one
 * process (the split's `runc start` saved), and leaves the container's
 * init re-parented to tollgate, the subreaper, as create does; then the
 * same wait as run_runc, and the same delete after it.
 *
 * The guard starts before `runc run` does and holds its pidfd from the
 * spawn: killed with tollgate, it is killed first, and a container it was
 * still starting never reaches the user's process; `runc run` also dies
 * with tollgate (PR_SET_PDEATHSIG), which covers the moment between the
 * spawn and the guard holding it.  Once it has exited, the init its pid
 * file names is trusted only as tollgate's own child that started after
 * it (run_follow.h), and the guard gets its pidfd. */
static int run_runc_direct(struct cli *cli, struct created *c, const struct create_request *req,
                           int sfd, struct limit_watch *lw, tg_error **err) {
  cleanup_free char *pid_file = xasprintf("%s/backend.pid", c->dir);
  /* The private bundle create wrote (shim/lifecycle/backend_bundle.h). */
  cleanup_free char *bundle = backend_bundle_path(c->dir);
  struct create_flags cf = {.bundle = bundle,
                            .pid_file = pid_file,
                            .no_pivot = req->no_pivot,
                            .no_new_keyring = req->no_new_keyring,
                            .preserve_fds = req->preserve_fds};
  struct argv args = {0};
  backend_create_args(&c->container.backend, &cf, &args);
  argv_add(&args, "--detach");
  struct run_guard guard;
  if (run_guard_start(cli, &c->container, 0, &guard, err) < 0) {
    argv_free(&args);
    return -1;
  }
  /* stdio passed through: runc hands it to the init (no terminal here). */
  struct proc_opts passthrough = {.die_with_parent = true};
  struct proc child;
  int r = container_spawn(cli, &c->container, "run", args.v, NULL, &passthrough, &child, err);
  argv_free(&args);
  if (r < 0) {
    run_guard_release(&guard);
    return -1;
  }
  /* runc run is our unreaped child: its pid, read here, is its own. */
  cleanup_close int runner_fd = pidfd_open_pid(child.pid);
  struct proc_stat_fields rs;
  if (runner_fd < 0 || run_follow_read_stat(child.pid, &rs) < 0 ||
      run_guard_watch_runner(&guard, runner_fd) < 0) {
    /* Unguarded, a kill -9 of tollgate could leave the container running
     * with no gate: it does not start. */
    int e = errno;
    if (kill(child.pid, SIGKILL) < 0) {
      /* our unreaped child: it cannot be gone; reaped below either way */
    }
    struct proc_result ignored = {0};
    tg_error *fe = NULL;
    container_finish(&c->container, &child, &passthrough, &ignored, &fe);
    tg_error_free(&fe);
    proc_result_free(&ignored);
    run_guard_release(&guard);
    return tg_error_set(err, e, "run: hand `runc run` (pid %d) to the container's guard", (int)child.pid);
  }
  bool stop = false;
  if (wait_runner(cli, &c->container, runner_fd, &stop, err) < 0 && kill(child.pid, SIGKILL) < 0) {
    /* our unreaped child: it cannot be gone; reaped below */
  }
  struct proc_result res = {0};
  int st = container_finish(&c->container, &child, &passthrough, &res, err);
  if (st != 0) {
    if (st > 0)
      container_backend_error(&c->container, "run", &res, err);
    proc_result_free(&res);
    run_guard_release(&guard);
    return -1;
  }
  proc_result_free(&res);
  cleanup_close int dir_fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  int init_fd = -1;
  pid_t init = 0;
  if (dir_fd < 0 || run_follow_try(dir_fd, "backend.pid", getpid(), rs.start, &init_fd, &init) != 1) {
    /* runc said it started the container, and no init of it is
     * tollgate's child: nothing here can wait for it, so it is killed
     * before the guard goes (run's delete --force removes the rest). */
    send_signal(cli, &c->container, -1, SIGKILL);
    run_guard_release(&guard);
    return tg_error_set(err, 0, "run: runc run started container %s, but its pid file %s names no "
                        "init that is tollgate's child; it was killed", c->container.id, pid_file);
  }
  cleanup_close int pidfd = init_fd;
  c->init_pid = init;
  /* The gate's stop, asked during the start.  An init already gone is
   * stopped. */
  if (stop && pidfd_signal(pidfd, SIGKILL) < 0 && errno != ESRCH) {
    int e = errno;
    send_signal(cli, &c->container, -1, SIGKILL);
    run_guard_release(&guard);
    return tg_error_set(err, e, "run: stop container %s as its gate asked", c->container.id);
  }
  cleanup_free char *runc_dir = c->container.backend.root && c->container.backend_id
                                    ? xasprintf("%s/%s", c->container.backend.root, c->container.backend_id)
                                    : NULL;
  limit_watch_attach(lw, init, runc_dir);
  if (run_guard_watch_init(&guard, pidfd) < 0) {
    /* The guard is gone (it only exits when told or when it acted):
     * nothing to hand over. */
  }
  return wait_runc_init(cli, c, pidfd, sfd, &guard, err);
}

/* `runsc run`, or `runc run` when create found nothing that needs the
 * split (c->run_direct), in the foreground, with the bundle prepared. */
static int run_foreground(struct cli *cli, struct created *c,
                          const struct create_request *req, int sfd,
                          tg_error **err) {
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
  /* A `runsc run` whose tollgate was killed (-9) would wait forever for
   * a gofer nobody reaps, and the next `delete --force` would run into
   * runsc's own timeout: it dies with tollgate instead, and its sandbox
   * and gofer go to init, which reaps them.  Not `runc run`: it reaps its
   * own children (a subreaper), and killed half-way it would leave a
   * `runc init` that no state of runc's names; it outlives a killed
   * tollgate as `runc create` does, until delete --force. */
  struct proc_opts passthrough = {.die_with_parent = !c->run_direct};
  struct proc child;
  int r = container_spawn(cli, &c->container, "run", args.v, NULL,
                          &passthrough, &child, err);
  argv_free(&args);
  if (r < 0)
    return -1;
  cleanup_close int pidfd = pidfd_open_pid(child.pid);
  /* `runc run` passes the signals it gets on to the container's init:
   * they go to it through its pidfd, not through a `runc kill` each.  A
   * stop before runc wrote the init's pid goes through the backend's
   * kill, never to `runc run` itself (its init would run on). */
  if (pidfd >= 0)
    forward_until_exit(cli, c->run_direct ? NULL : &c->container, &c->container, pidfd, sfd,
                       pid_file, err);
  struct proc_result res = {0};
  int st = container_finish(&c->container, &child, &passthrough, &res, err);
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

int container_run_detached(struct cli *cli, struct create_request *req,
                           tg_error **err) {
  struct created c;
  if (container_create(cli, req, &c, err) < 0)
    return -1;
  int r = container_start(cli, &c.container, err);
  created_free(&c);
  if (r < 0) {
    tg_error *e = NULL;
    container_delete(cli, req->id, true, &e);
    tg_error_free(&e);
  }
  return r;
}

int container_run(struct cli *cli, struct create_request *create, bool keep,
                  tg_error **err) {
  /* A foreground run that deletes its container owns it: killed, it
   * leaves nothing the reaper keeps (docs/reliability.md). */
  create->owner_self = !keep;
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
  create->in_process_bridge = true;
  create->prepare_only = !runc;
  /* runc: one `runc run` rather than create, start and delete (two Go
   * process starts fewer) when create finds nothing between create and
   * start to do (shim/lifecycle/create_direct.c). */
  create->run_direct_if_eligible = runc && !keep; /* --keep: runc's
                                   record of the stopped container stays */
  /* runc's detached create needs a console socket for a terminal; with
   * none given, tollgate is the console (runsc run makes its own). */
  cleanup_close int console_fd = -1;
  cleanup_free char *console_path = NULL;
  if (runc && create->console_socket == NULL &&
      console_bundle_wants_terminal(create->bundle)) {
    if (state_check_id(create->id, err) < 0 || mkdir_p(cli->root, 0711, err) < 0) {
      sigprocmask(SIG_SETMASK, &old, NULL);
      return -1;
    }
    console_path = xasprintf("%s/console-%s.sock", cli->root, create->id);
    console_fd = console_listen(console_path, err);
    if (console_fd < 0) {
      sigprocmask(SIG_SETMASK, &old, NULL);
      return -1;
    }
    create->console_socket = console_path;
  }
  /* A run that fails after its create succeeded (runsc: `runsc run`
   * itself fails; runc: start fails) puts the bundle back as a failed
   * create does: the create's own undo is over by then. */
  struct bundle_snapshot before;
  bundle_snapshot_take(create->bundle, &before);
  struct created c;
  int cr = container_create(cli, create, &c, err);
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
      container_delete(cli, create->id, true, &e);
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
    /* runc's one-call run: the init is known once runc run has exited;
     * its counters are opened then (limit_watch_attach), and the cgroup
     * stays until delete, as after create. */
    bool attach = runc && c.run_direct && c.bridged;
    struct limit_watch *lw = attach ? limit_watch_start(0, NULL)
                                    : limit_watch_start(runc && !c.run_direct ? c.init_pid : 0, pid_file);
    /* An ungoverned one-call run (passthrough, no bridge) stays one
     * foreground `runc run`: nothing is governed that tollgate's death
     * could leave running without its gate. */
    status = !runc || (c.run_direct && !c.bridged) ? run_foreground(cli, &c, create, sfd, err)
             : c.run_direct                      ? run_runc_direct(cli, &c, create, sfd, lw, err)
                                                 : run_runc(cli, &c, sfd, err);
    limit_watch_report(lw, create->id, !runc);
    status = report_anomaly_stop(gate, status);
    /* The gate closes (audit log synced) while the container is removed. */
    bridge_stop_in_process_begin(server);
  }
  console_relay_stop(relay);
  if (!keep || status < 0) {
    tg_error *e = NULL;
    if (container_delete_after_run(cli, create->id, &e) < 0 && status >= 0) {
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
