/* startbench: where tollgate's own start-up time goes, measured in process
 * through the same module interfaces the lifecycle commands call.
 *
 * Usage: startbench HOST_CONFIG BUNDLE_DIR POLICY STATE_PARENT REPS BACKEND
 *
 * For REPS rounds it times, separately:
 *   parse_harden   read config.json, parse it, check the effective mark
 *                  (and read and parse config.json.orig when config.json
 *                  is an effective config tollgate wrote, as create does),
 *                  oci_harden(), serialise it
 *   gate_open      gate_open() + gate_close(): policy load, audit log open
 *   bridge_prepare bridge_prepare(): bridge tmpfs, directories, tools.json,
 *                  clients, mounts added to the config
 *   sidecar_spawn  bridge_spawn_sidecar() until the sidecar reports ready
 *                  (watching a sleeping child as the container init)
 *   teardown       bridge_teardown(): sidecar stop, unmount, remove
 *   serve_in_process  bridge_serve_in_process(): what `tollgate run` starts
 *                  instead of a sidecar (gate open, bridge threads)
 *   stop_in_process   bridge_stop_in_process(): its end (gate close)
 * and prints one JSON object with the median and mean of each, in µs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "governance/gate.h"
#include "oci/harden.h"
#include "base/hostconfig.h"
#include "shim/lifecycle/effective_mark.h"
#include "base/error.h"
#include "base/json.h"
#include "base/digest.h"
#include "base/util.h"

enum { PARSE, GATE, PREPARE, SPAWN, TEARDOWN, SERVE, STOP, NSTEPS };
static const char *step_names[NSTEPS] = {"parse_harden", "gate_open", "bridge_prepare",
                                         "sidecar_spawn", "teardown", "serve_in_process",
                                         "stop_in_process"};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void fail(const char *what, tg_error *err) {
  fprintf(stderr, "startbench: %s: %s\n", what, err ? err->msg : strerror(errno));
  exit(1);
}

/* What every round shares: the inputs, and each step's times. */
struct bench {
  const char *bundle, *policy, *state_parent, *backend;
  char *cfg_file, *orig_file, *profiles, *seccomp;
  struct host_config host;
  int bundle_fd, reps;
  int hardened_user_config; /* rounds that took config.json.orig */
  double *t[NSTEPS];
};

static double us_since(unsigned long long t0) { return (double)(monotonic_ns() - t0) / 1e3; }

/* As create parses it (with positions), and as create chooses what to
 * harden: once tollgate has run on the bundle its config.json is the
 * effective config (its digest in the mark beside it, with a full seccomp
 * list), and create hardens the user's config.json.orig instead.  The same
 * function decides here. */
static json_t *load_config(struct bench *b) {
  tg_error *err = NULL;
  char *text = NULL;
  size_t len = 0;
  if (read_file(b->cfg_file, 4 << 20, &text, &len, &err) < 0)
    fail(b->cfg_file, err);
  struct json_parse_options po = {.max_depth = 64, .track_positions = true};
  json_t *config = json_parse(text, len, &po, &err);
  if (!config)
    fail("config.json", err);
  bool ours = effective_mark_is_ours(b->bundle_fd, text, len, config);
  free(text);
  if (ours) {
    json_free(config);
    if (read_file(b->orig_file, 4 << 20, &text, &len, &err) < 0)
      fail(b->orig_file, err);
    config = json_parse(text, len, &po, &err);
    free(text);
    if (!config)
      fail("config.json.orig", err);
  }
  b->hardened_user_config += ours;
  return config;
}

/* parse_harden: read, parse, oci_harden(), serialise.  The hardened tree
 * goes on to the bridge steps. */
static json_t *time_parse_harden(struct bench *b, int r) {
  tg_error *err = NULL;
  unsigned long long t0 = monotonic_ns();
  json_t *config = load_config(b);
  struct harden_options opts = {.profile = b->host.profile ? b->host.profile : "hardened",
                                .profiles_dir = b->profiles,
                                .seccomp_dir = b->seccomp,
                                .allow_passthrough = b->host.allow_passthrough,
                                .backend = b->backend};
  struct harden_result res = {0};
  if (oci_harden(config, &opts, &res, &err) < 0)
    fail("oci_harden", err);
  char *out = json_dump_checked(config, false, NULL, &err);
  if (out == NULL)
    fail("json_dump", err);
  free(out);
  harden_result_free(&res);
  b->t[PARSE][r] = us_since(t0);
  return config;
}

static void time_gate_open(struct bench *b, const char *id, int r) {
  tg_error *err = NULL;
  struct gate_config gc = {.container_id = id,
                           .policy_path = b->policy,
                           .audit_dir = b->host.audit_dir,
                           .approval_timeout_ms = 1000};
  struct gate *g = NULL;
  unsigned long long t0 = monotonic_ns();
  if (gate_open(&gc, &g, &err) < 0)
    fail("gate_open", err);
  gate_close(g);
  b->t[GATE][r] = us_since(t0);
}

/* bridge_prepare, a sidecar watching a sleeping child as the container's
 * init, and its teardown. */
static void time_sidecar(struct bench *b, struct bridge_setup *setup, json_t *config, int r) {
  tg_error *err = NULL;
  unsigned long long t0 = monotonic_ns();
  if (bridge_prepare(setup, config, &err) < 0)
    fail("bridge_prepare", err);
  b->t[PREPARE][r] = us_since(t0);

  pid_t init = fork();
  if (init == 0) {
    pause();
    _exit(0);
  }
  pid_t sidecar = 0;
  t0 = monotonic_ns();
  if (bridge_spawn_sidecar(setup, init, &sidecar, &err) < 0)
    fail("bridge_spawn_sidecar", err);
  b->t[SPAWN][r] = us_since(t0);

  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
  t0 = monotonic_ns();
  if (bridge_teardown(setup->state_dir, &err) < 0)
    fail("bridge_teardown", err);
  b->t[TEARDOWN][r] = us_since(t0);
}

/* The `tollgate run` path: the bridge served in process. */
static void time_in_process(struct bench *b, struct bridge_setup *setup, json_t *config, int r) {
  tg_error *err = NULL;
  if (bridge_prepare(setup, config, &err) < 0)
    fail("bridge_prepare", err);
  struct bridge_server *server = NULL;
  unsigned long long t0 = monotonic_ns();
  if (bridge_serve_in_process(setup, NULL, &server, &err) < 0)
    fail("bridge_serve_in_process", err);
  b->t[SERVE][r] = us_since(t0);
  t0 = monotonic_ns();
  bridge_stop_in_process(server);
  b->t[STOP][r] = us_since(t0);
  if (bridge_teardown(setup->state_dir, &err) < 0)
    fail("bridge_teardown", err);
}

static void run_round(struct bench *b, int r) {
  json_t *config = time_parse_harden(b, r);
  char id[64];
  snprintf(id, sizeof id, "startbench-%d-%d", (int)getpid(), r);
  time_gate_open(b, id, r);
  tg_error *err = NULL;
  char *state_dir = xasprintf("%s/%s", b->state_parent, id);
  if (mkdir_p(state_dir, 0700, &err) < 0)
    fail(state_dir, err);
  struct bridge_setup setup = {.container_id = id,
                               .state_dir = state_dir,
                               .policy_path = b->policy,
                               .host = &b->host};
  time_sidecar(b, &setup, config, r);
  time_in_process(b, &setup, config, r);
  remove_tree(state_dir, NULL);
  free(state_dir);
  json_free(config);
}

static void print_results(struct bench *b) {
  printf("{\"reps\":%d,\"parse_harden_from_orig\":%d", b->reps, b->hardened_user_config);
  for (int s = 0; s < NSTEPS; s++) {
    double sum = 0;
    for (int r = 0; r < b->reps; r++)
      sum += b->t[s][r];
    qsort(b->t[s], (size_t)b->reps, sizeof(double), cmp_double);
    printf(",\"%s_median_us\":%.1f,\"%s_mean_us\":%.1f", step_names[s], b->t[s][b->reps / 2],
           step_names[s], sum / b->reps);
  }
  printf("}\n");
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: startbench HOST_CONFIG BUNDLE_DIR POLICY STATE_PARENT REPS BACKEND\n");
    return 2;
  }
  struct bench b = {.bundle = argv[2], .policy = argv[3], .state_parent = argv[4],
                    .backend = argv[6], .reps = atoi(argv[5])};
  if (b.reps < 1)
    b.reps = 1;
  tg_error *err = NULL;
  if (host_config_load(argv[1], &b.host, &err) < 0)
    fail("host config", err);
  /* Found as tollgate finds them; a tree without them (the hardening not
   * merged yet) runs the hardening it has, as tollgate itself does. */
  b.profiles = host_config_data_path(&b.host, "profiles", &err);
  tg_error_free(&err);
  b.seccomp = host_config_data_path(&b.host, "seccomp", &err);
  tg_error_free(&err);
  b.cfg_file = xasprintf("%s/config.json", b.bundle);
  b.orig_file = xasprintf("%s/config.json.orig", b.bundle);
  for (int s = 0; s < NSTEPS; s++)
    b.t[s] = xcalloc((size_t)b.reps, sizeof(double));

  /* OpenSSL's one-time initialisation (the mark's SHA-256 is the first
   * digest) is paid before the rounds, as create's warm-up thread pays it
   * beside the main thread: otherwise the first round carries it, and with
   * smoke's two rounds that round is the median.  The steps of a real run
   * (bench/steps.py) show what create waits for it. */
  digest_warm_up();
  b.bundle_fd = open(b.bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (b.bundle_fd < 0)
    fail(b.bundle, NULL);
  for (int r = 0; r < b.reps; r++)
    run_round(&b, r);
  print_results(&b);

  for (int s = 0; s < NSTEPS; s++)
    free(b.t[s]);
  close(b.bundle_fd);
  free(b.cfg_file);
  free(b.orig_file);
  free(b.profiles);
  free(b.seccomp);
  host_config_free(&b.host);
  return 0;
}
