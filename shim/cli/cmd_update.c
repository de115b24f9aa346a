/* tollgate update: new cgroup limits for a running runc container, under
 * the same rules as create.  The request (--resources FILE|-, then the
 * flags over it) is checked and lowered to the container's profile
 * ceilings, and the container's effective resources with the update
 * applied are proved no looser than the profile allows, by
 * oci_update_resources(); only then does runc get the hardened request as
 * --resources FILE.
 * runsc cannot change a running sandbox's limits, so it is refused there
 * rather than ignored. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci/harden.h"
#include "oci/profile.h"
#include "shim/cli/args.h"
#include "shim/lifecycle/backend.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"

#define RESOURCES_MAX_BYTES (1024 * 1024)

/* runc's sizes: bytes with an optional k/m/g/t suffix (b, kb, KiB...), or
 * -1 for unlimited. */
static int parse_size(const char *flag, const char *s, long long *out, tg_error **err) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s)
    return tg_error_set(err, 0, "update: --%s %s: give a size in bytes (512m, 1g) or -1", flag, s);
  long long unit = 1;
  switch (tolower((unsigned char)*end)) {
  case 'k': unit = 1LL << 10; end++; break;
  case 'm': unit = 1LL << 20; end++; break;
  case 'g': unit = 1LL << 30; end++; break;
  case 't': unit = 1LL << 40; end++; break;
  default: break;
  }
  if (unit > 1 && tolower((unsigned char)*end) == 'i')
    end++;
  if (tolower((unsigned char)*end) == 'b')
    end++;
  if (*end != '\0' || (v < 0 && v != -1) || __builtin_mul_overflow(v, unit, out))
    return tg_error_set(err, 0, "update: --%s %s: give a size in bytes (512m, 1g) or -1", flag, s);
  return 0;
}

static int parse_int(const char *flag, const char *s, long long *out, tg_error **err) {
  char *end;
  errno = 0;
  *out = strtoll(s, &end, 10);
  if (errno || end == s || *end != '\0')
    return tg_error_set(err, 0, "update: --%s %s: give a number", flag, s);
  return 0;
}

static json_t *read_resources(const char *path, tg_error **err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (strcmp(path, "-") == 0) {
    ssize_t n = read_all_bounded(STDIN_FILENO, RESOURCES_MAX_BYTES, &buf);
    if (n < 0) {
      tg_error_set(err, errno, "update: --resources -: read stdin (at most %d bytes)", RESOURCES_MAX_BYTES);
      return NULL;
    }
    len = (size_t)n;
  } else if (read_file(path, RESOURCES_MAX_BYTES, &buf, &len, err) < 0) {
    tg_error_wrap(err, "update: --resources");
    return NULL;
  }
  struct json_parse_options po = {.max_depth = 16, .track_positions = true};
  tg_error *pe = NULL;
  json_t *v = json_parse(buf, len, &po, &pe);
  if (v == NULL) {
    tg_error_set(err, 0, "update: --resources %s: %s: fix the JSON", path, pe->msg);
    tg_error_free(&pe);
  }
  return v;
}

/* A numeric flag of update and the key of the request it sets. */
struct limit_flag {
  const char *flag;    /* "memory" for --memory */
  const char *section; /* linux.resources section: "memory", "cpu", "pids" */
  const char *key;     /* in that section: "limit", "quota"... */
  bool size;           /* a size (512m, 1g, -1) rather than a plain number */
  const char *value;   /* as given, or NULL when the flag was not */
};

/* Each given flag parsed and set in req, in table order; the first bad
 * value is the error. */
static int set_limit_flags(json_t *req, const struct limit_flag *flags, size_t n, tg_error **err) {
  for (size_t i = 0; i < n; i++) {
    if (flags[i].value == NULL)
      continue;
    long long v = 0;
    int r = flags[i].size ? parse_size(flags[i].flag, flags[i].value, &v, err)
                          : parse_int(flags[i].flag, flags[i].value, &v, err);
    if (r < 0)
      return -1;
    json_object_set(json_object_ensure_object(req, flags[i].section), flags[i].key, json_new_integer(v));
  }
  return 0;
}

/* The container's profile and effective config, handed to
 * oci_update_resources(): req hardened in place, *effective_out the
 * effective config with it applied (owned), both proved within bounds. */
static int harden_update(struct cli *cli, const struct container *c, json_t *req, json_t **effective_out,
                         tg_error **err) {
  const char *profile_name = json_string_value(json_object_get(c->state, "profile"));
  if (profile_name == NULL || profile_name[0] == '\0')
    return tg_error_set(err, 0, "update: the container's state names no profile; recreate it");
  cleanup_free char *profiles = host_config_data_path(&cli->config, "profiles", err);
  cleanup_free char *seccomp = profiles ? host_config_data_path(&cli->config, "seccomp", err) : NULL;
  if (seccomp == NULL)
    return tg_error_wrap(err, "update");
  struct oci_profile p;
  if (profile_load(profiles, seccomp, profile_name, &p, err) < 0)
    return tg_error_wrap(err, "update: profile %s", profile_name);
  json_t *effective = container_effective_config(c, err);
  int r = effective ? oci_update_resources(req, effective, &p, host_config_memory_ceiling(&cli->config), err) : -1;
  profile_free(&p);
  if (r < 0) {
    json_free(effective);
    return -1;
  }
  *effective_out = effective;
  return 0;
}

int cmd_update(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *resources = NULL, *memory = NULL, *memory_swap = NULL,
             *pids = NULL, *quota = NULL, *period = NULL, *shares = NULL,
             *cpus = NULL, *mems = NULL;
  struct opt opts[] = {
      {"resources", 'r', OPT_STRING, &resources},
      {"memory", 'm', OPT_STRING, &memory},
      {"memory-swap", 0, OPT_STRING, &memory_swap},
      {"pids-limit", 0, OPT_STRING, &pids},
      {"cpu-quota", 0, OPT_STRING, &quota},
      {"cpu-period", 0, OPT_STRING, &period},
      {"cpu-shares", 0, OPT_STRING, &shares},
      {"cpuset-cpus", 0, OPT_STRING, &cpus},
      {"cpuset-mems", 0, OPT_STRING, &mems},
      {0},
  };
  int i = args_parse("update", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (argc - i != 1)
    return tg_error_set(err, 0,
                        "update: usage: tollgate update [--resources FILE|-] ID");
  struct container c;
  if (container_load(cli, argv[i], &c, err) < 0)
    return -1;
  if (c.backend.kind == BACKEND_RUNSC) {
    container_free(&c);
    return tg_error_set(err, 0,
                        "update: runsc (gVisor) cannot change the limits of a "
                        "running sandbox: recreate the container with new "
                        "limits in its config.json");
  }
  int r = -1;
  cleanup_json json_t *req = resources ? read_resources(resources, err) : json_new_object();
  json_t *effective = NULL;
  cleanup_free char *name = NULL, *path = NULL;
  if (req == NULL)
    goto out;
  if (!json_is(req, JSON_OBJECT)) {
    tg_error_set(err, 0, "update: --resources must hold a JSON object (linux.resources of the runtime spec)");
    goto out;
  }
  /* The flags go over the file, as runc applies them. */
  const struct limit_flag limits[] = {
      {"memory", "memory", "limit", true, memory},   {"memory-swap", "memory", "swap", true, memory_swap},
      {"pids-limit", "pids", "limit", false, pids},  {"cpu-quota", "cpu", "quota", false, quota},
      {"cpu-period", "cpu", "period", false, period}, {"cpu-shares", "cpu", "shares", false, shares},
  };
  if (set_limit_flags(req, limits, sizeof limits / sizeof limits[0], err) < 0)
    goto out;
  if (cpus)
    json_object_set(json_object_ensure_object(req, "cpu"), "cpus", json_new_string(cpus));
  if (mems)
    json_object_set(json_object_ensure_object(req, "cpu"), "mems", json_new_string(mems));
  if (harden_update(cli, &c, req, &effective, err) < 0)
    goto out;
  /* runc reads the hardened request from the state directory (0700),
   * never from a path the caller could swap under us. */
  name = xasprintf("update-%d-%llu.json", (int)getpid(), monotonic_ns());
  if (state_write_json(c.dir, name, req, err) < 0)
    goto out;
  path = xasprintf("%s/%s", c.dir, name);
  struct argv args = {0};
  argv_addf(&args, "--resources=%s", path);
  struct proc_opts o = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  r = container_call_ok(cli, &c, "update", args.v, &o, &res, err);
  argv_free(&args);
  proc_result_free(&res);
  unlink(path);
  /* Later updates and exec compare against what the container now has. */
  if (r == 0)
    r = state_write_json(c.dir, "config.json", effective, err);
out:
  json_free(effective);
  container_free(&c);
  return r;
}
