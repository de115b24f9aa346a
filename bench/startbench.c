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
#include <openssl/evp.h>
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

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: startbench HOST_CONFIG BUNDLE_DIR POLICY STATE_PARENT REPS BACKEND\n");
    return 2;
  }
  const char *config_path = argv[1], *bundle = argv[2], *policy = argv[3],
             *state_parent = argv[4], *backend = argv[6];
  int reps = atoi(argv[5]);
  if (reps < 1)
    reps = 1;
  tg_error *err = NULL;
  struct host_config host = {0};
  if (host_config_load(config_path, &host, &err) < 0)
    fail("host config", err);
  /* Found as tollgate finds them; a tree without them (the hardening not
   * merged yet) runs the hardening it has, as tollgate itself does. */
  char *profiles = host_config_data_path(&host, "profiles", &err);
  tg_error_free(&err);
  char *seccomp = host_config_data_path(&host, "seccomp", &err);
  tg_error_free(&err);
  char *cfg_file = xasprintf("%s/config.json", bundle);
  char *orig_file = xasprintf("%s/config.json.orig", bundle);

  double *t[NSTEPS];
  int hardened_user_config = 0; /* rounds that took config.json.orig */
  for (int s = 0; s < NSTEPS; s++)
    t[s] = xcalloc((size_t)reps, sizeof(double));

  /* OpenSSL's one-time initialisation (the mark's SHA-256 is the first
   * digest) is paid before the rounds, as create's warm-up thread pays it
   * beside the main thread: otherwise the first round carries it, and with
   * smoke's two rounds that round is the median.  The steps of a real run
   * (bench/steps.py) show what create waits for it. */
  EVP_MD_free(EVP_MD_fetch(NULL, "SHA256", NULL));
  int bundle_fd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (bundle_fd < 0)
    fail(bundle, NULL);
  for (int r = 0; r < reps; r++) {
    unsigned long long t0 = monotonic_ns();
    char *text = NULL;
    size_t len = 0;
    if (read_file(cfg_file, 4 << 20, &text, &len, &err) < 0)
      fail(cfg_file, err);
    /* As create parses it (with positions), and as create chooses what to
     * harden: once tollgate has run on the bundle its config.json is the
     * effective config (its digest in the mark beside it, with a full
     * seccomp list), and create hardens the user's config.json.orig
     * instead.  The same function decides here. */
    struct json_parse_options po = {.max_depth = 64, .track_positions = true};
    json_t *config = json_parse(text, len, &po, &err);
    if (!config)
      fail("config.json", err);
    bool ours = effective_mark_is_ours(bundle_fd, text, len, config);
    free(text);
    if (ours) {
      json_free(config);
      if (read_file(orig_file, 4 << 20, &text, &len, &err) < 0)
        fail(orig_file, err);
      config = json_parse(text, len, &po, &err);
      free(text);
      if (!config)
        fail("config.json.orig", err);
    }
    hardened_user_config += ours;
    struct harden_options opts = {.profile = host.profile ? host.profile : "hardened",
                                  .profiles_dir = profiles,
                                  .seccomp_dir = seccomp,
                                  .allow_passthrough = host.allow_passthrough,
                                  .backend = backend};
    struct harden_result res = {0};
    if (oci_harden(config, &opts, &res, &err) < 0)
      fail("oci_harden", err);
    char *out = json_dump(config, false, NULL);
    free(out);
    harden_result_free(&res);
    unsigned long long t1 = monotonic_ns();
    t[PARSE][r] = (double)(t1 - t0) / 1e3;

    char id[64];
    snprintf(id, sizeof id, "startbench-%d-%d", (int)getpid(), r);
    struct gate_config gc = {.container_id = id,
                             .policy_path = policy,
                             .audit_dir = host.audit_dir,
                             .approval_timeout_ms = 1000};
    struct gate *g = NULL;
    t0 = monotonic_ns();
    if (gate_open(&gc, &g, &err) < 0)
      fail("gate_open", err);
    gate_close(g);
    t1 = monotonic_ns();
    t[GATE][r] = (double)(t1 - t0) / 1e3;

    char *state_dir = xasprintf("%s/%s", state_parent, id);
    if (mkdir_p(state_dir, 0700, &err) < 0)
      fail(state_dir, err);
    struct bridge_setup setup = {.container_id = id,
                                 .state_dir = state_dir,
                                 .policy_path = policy,
                                 .host = &host};
    t0 = monotonic_ns();
    if (bridge_prepare(&setup, config, &err) < 0)
      fail("bridge_prepare", err);
    t1 = monotonic_ns();
    t[PREPARE][r] = (double)(t1 - t0) / 1e3;

    pid_t init = fork();
    if (init == 0) {
      pause();
      _exit(0);
    }
    pid_t sidecar = 0;
    t0 = monotonic_ns();
    if (bridge_spawn_sidecar(&setup, init, &sidecar, &err) < 0)
      fail("bridge_spawn_sidecar", err);
    t1 = monotonic_ns();
    t[SPAWN][r] = (double)(t1 - t0) / 1e3;

    kill(init, SIGKILL);
    waitpid(init, NULL, 0);
    t0 = monotonic_ns();
    if (bridge_teardown(state_dir, &err) < 0)
      fail("bridge_teardown", err);
    t1 = monotonic_ns();
    t[TEARDOWN][r] = (double)(t1 - t0) / 1e3;

    /* The `tollgate run` path: the bridge served in process. */
    if (bridge_prepare(&setup, config, &err) < 0)
      fail("bridge_prepare", err);
    struct bridge_server *server = NULL;
    t0 = monotonic_ns();
    if (bridge_serve_in_process(&setup, NULL, &server, &err) < 0)
      fail("bridge_serve_in_process", err);
    t1 = monotonic_ns();
    t[SERVE][r] = (double)(t1 - t0) / 1e3;
    t0 = monotonic_ns();
    bridge_stop_in_process(server);
    t1 = monotonic_ns();
    t[STOP][r] = (double)(t1 - t0) / 1e3;
    if (bridge_teardown(state_dir, &err) < 0)
      fail("bridge_teardown", err);
    remove_tree(state_dir, NULL);
    free(state_dir);
    json_free(config);
  }

  printf("{\"reps\":%d,\"parse_harden_from_orig\":%d", reps, hardened_user_config);
  for (int s = 0; s < NSTEPS; s++) {
    double sum = 0;
    for (int r = 0; r < reps; r++)
      sum += t[s][r];
    qsort(t[s], (size_t)reps, sizeof(double), cmp_double);
    printf(",\"%s_median_us\":%.1f,\"%s_mean_us\":%.1f", step_names[s], t[s][reps / 2],
           step_names[s], sum / reps);
    free(t[s]);
  }
  printf("}\n");
  close(bundle_fd);
  free(cfg_file);
  free(orig_file);
  free(profiles);
  free(seccomp);
  host_config_free(&host);
  return 0;
}
