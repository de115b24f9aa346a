/* tollgate spec [--bundle DIR] [--rootfs PATH] [--args "CMD ARG..."] [--force] [-- ARGS...]
 *
 * Like `runc spec`, but what it writes is already the hardened config the
 * host's profile gives (for the configured backend), so what a person
 * reads in config.json is what will run.  An existing config.json is
 * never overwritten without --force.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci/harden.h"
#include "oci/spec.h"
#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "base/util.h"

/* The backend the config is hardened for: --runtime, else the host
 * config, else runsc.  Only the name matters here, so a backend that is
 * not installed yet does not stop anyone from writing a spec. */
static const char *backend_name(const struct cli *cli) {
  const char *r = cli->runtime_override ? cli->runtime_override : cli->config.runtime;
  if (r == NULL)
    return "runsc";
  const char *base = strrchr(r, '/') ? strrchr(r, '/') + 1 : r;
  return strncmp(base, "runsc", 5) == 0 ? "runsc" : strncmp(base, "runc", 4) == 0 ? "runc" : "runsc";
}

/* Split --args on blanks; no quoting (use "-- ARGS..." for that). */
static char **split_words(const char *s, size_t *n) {
  char **v = NULL;
  *n = 0;
  cleanup_free char *copy = xstrdup(s);
  char *save = NULL;
  for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
    v = xrealloc(v, (*n + 1) * sizeof *v);
    v[(*n)++] = xstrdup(w);
  }
  return v;
}

int cmd_spec(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *bundle = ".", *rootfs = "rootfs", *args_flag = NULL;
  bool force = false;
  struct opt opts[] = {{"bundle", 'b', OPT_STRING, &bundle},
                       {"rootfs", 0, OPT_STRING, &rootfs},
                       {"args", 0, OPT_STRING, &args_flag},
                       {"force", 'f', OPT_BOOL, &force},
                       {0}};
  int first = args_parse("spec", argc, argv, 1, opts, err);
  if (first < 0)
    return -1;
  if (args_flag && first < argc)
    return tg_error_set(err, 0, "spec: give the command either with --args or after --, not both");

  size_t nargs = 0;
  char **words = NULL;
  if (args_flag) {
    words = split_words(args_flag, &nargs);
    if (nargs == 0)
      return tg_error_set(err, 0, "spec: --args is empty; give the command to run, e.g. --args \"sh -c 'echo hi'\"");
  }
  cleanup_json json_t *config = oci_default_spec(rootfs, args_flag ? words : argv + first,
                                                 args_flag ? nargs : (size_t)(argc - first));
  for (size_t i = 0; i < nargs; i++)
    free(words[i]);
  free(words);

  cleanup_free char *profiles = host_config_data_path(&cli->config, "profiles", err);
  if (profiles == NULL)
    return tg_error_wrap(err, "spec");
  cleanup_free char *seccomp = host_config_data_path(&cli->config, "seccomp", err);
  if (seccomp == NULL)
    return tg_error_wrap(err, "spec");
  /* root.path "rootfs" is checked where it will resolve: in the bundle. */
  cleanup_free char *bundle_abs = realpath(bundle, NULL);
  if (bundle_abs == NULL)
    return tg_error_set(err, errno, "spec: bundle directory %s (create it first)", bundle);
  struct harden_options ho = {.profile = cli->config.profile,
                              .profiles_dir = profiles,
                              .seccomp_dir = seccomp,
                              .allow_passthrough = cli->config.allow_passthrough,
                              .backend = backend_name(cli),
                              .bundle_dir = bundle_abs,
                              .state_root = cli->root,
                              .audit_dir = cli->config.audit_dir};
  struct harden_result hr = {0};
  if (oci_harden(config, &ho, &hr, err) < 0)
    return tg_error_wrap(err, "spec");
  harden_result_free(&hr);

  cleanup_close int dirfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return tg_error_set(err, errno, "spec: bundle directory %s (create it first)", bundle);
  struct stat st;
  if (!force && fstatat(dirfd, "config.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
    return tg_error_set(err, EEXIST, "spec: %s/config.json already exists; remove it or pass --force to overwrite it", bundle);
  size_t len = 0;
  cleanup_free char *text = json_dump(config, true, &len);
  text = xrealloc(text, len + 2);
  text[len++] = '\n';
  text[len] = '\0';
  if (write_file_atomic(dirfd, "config.json", text, len, 0644, true, err) < 0)
    return tg_error_wrap(err, "spec: write %s/config.json", bundle);
  return 0;
}
