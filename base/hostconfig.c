/* The host configuration (see base/hostconfig.h).  Every key is spelled as the
 * struct field it fills; a key we do not know, or a value of the wrong
 * type, is an error that names the key and the file, because a silently
 * ignored setting on a security boundary is worse than a refusal. */
#include "base/hostconfig.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"

#define CONFIG_MAX_BYTES (1024 * 1024)

void host_config_defaults(struct host_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->runtime = xstrdup("runsc");
  cfg->platform = xstrdup("auto");
  cfg->profile = xstrdup("hardened");
  cfg->policy_dir = xstrdup("/etc/tollgate/policies");
  cfg->audit_dir = xstrdup("/var/log/tollgate/audit");
  cfg->runc_version_floor = xstrdup("warn");
  cfg->approval_timeout_ms = 60000;
  cfg->bridge_tmpfs_bytes = 16u * 1024 * 1024;
  cfg->request_max_bytes = 64u * 1024;
  cfg->audit_max_bytes = 256u * 1024 * 1024;
  cfg->bridge_refused_per_second = 200;
  cfg->bridge_backoff_ms = 1000;
  cfg->sidecar_on_death = xstrdup("restart");
  cfg->sidecar_max_restarts = 3;
  cfg->id_range_base = 1LL << 28;
  cfg->id_range_size = 65536;
  cfg->id_range_count = 4096;
  cfg->id_range_dir = xstrdup("/run/tollgate-ids");
  cfg->max_id_ranges_per_container = 1;
  cfg->tool_uid = 65533;
  cfg->tool_gid = 65533;
  cfg->mcp_max_sessions = 16;
  cfg->checkpoint_key = xstrdup("/var/lib/tollgate/checkpoint.key");
}

long long host_config_memory_ceiling(const struct host_config *cfg) {
  if (cfg->memory_ceiling_mib > 0)
    return cfg->memory_ceiling_mib * 1024 * 1024;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (long long)pages * size : 0;
}

enum field_kind { F_STRING, F_STRV, F_BOOL, F_INT, F_SIZE, F_JSON, F_LL };

struct field {
  const char *key;
  enum field_kind kind;
  size_t offset;
};

#define FIELD(name, kind) {#name, kind, offsetof(struct host_config, name)}
static const struct field fields[] = {
    FIELD(runtime, F_STRING),        FIELD(runtime_path, F_STRING),
    FIELD(runtime_args, F_STRV),     FIELD(platform, F_STRING),
    FIELD(profile, F_STRING),        FIELD(allow_passthrough, F_BOOL),
    FIELD(data_dir, F_STRING),       FIELD(policy_dir, F_STRING),
    FIELD(audit_dir, F_STRING),      FIELD(audit_key, F_STRING),
    FIELD(approval_hook, F_STRING),  FIELD(approval_timeout_ms, F_INT),
    FIELD(approver_group, F_STRING), FIELD(bridge_tmpfs_bytes, F_SIZE),
    FIELD(request_max_bytes, F_SIZE), FIELD(mcp_allow_approve, F_BOOL),
    FIELD(audit_max_bytes, F_SIZE),  FIELD(bridge_refused_per_second, F_INT),
    FIELD(bridge_backoff_ms, F_INT),
    FIELD(sidecar_on_death, F_STRING), FIELD(sidecar_max_restarts, F_INT),
    FIELD(policy_bindings, F_JSON),  FIELD(namespace_policies, F_JSON),
    FIELD(policy_ceiling, F_STRING), FIELD(namespace_ceilings, F_JSON),
    FIELD(trusted_join_callers, F_STRV), FIELD(pod_network_roots, F_STRV),
    FIELD(runc_version_floor, F_STRING),
    FIELD(id_range_base, F_LL),      FIELD(id_range_size, F_LL),
    FIELD(id_range_count, F_LL),     FIELD(id_range_dir, F_STRING),
    FIELD(tool_uid, F_LL),           FIELD(tool_gid, F_LL),
    FIELD(mcp_elicit_approvals, F_BOOL), FIELD(mcp_max_sessions, F_INT),
    FIELD(max_id_ranges_per_container, F_LL),
    FIELD(checkpoint_key, F_STRING), FIELD(allow_unsealed_restore, F_BOOL),
    FIELD(memory_ceiling_mib, F_LL),
};

static void free_strv(char **v) {
  for (size_t i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

static int wrong_type(const char *path, const char *key, const json_t *v,
                      const char *want, tg_error **err) {
  return tg_error_set(err, 0,
                      "host config %s: line %u: \"%s\" must be %s, not %s: "
                      "fix the value or remove the key to get the default",
                      path, v->line, key, want, json_type_name(v->type));
}

static int set_field(const char *path, const struct field *f, const json_t *v,
                     struct host_config *cfg, tg_error **err) {
  char *base = (char *)cfg + f->offset;
  long long n = 0;
  switch (f->kind) {
  case F_STRING: {
    char **slot = (char **)base;
    if (json_is(v, JSON_NULL)) {
      free(*slot);
      *slot = NULL;
      return 0;
    }
    if (!json_is(v, JSON_STRING) || strlen(v->u.string.s) != v->u.string.len)
      return wrong_type(path, f->key, v, "a string", err);
    free(*slot);
    *slot = xstrdup(v->u.string.s);
    return 0;
  }
  case F_STRV: {
    if (!json_is(v, JSON_ARRAY))
      return wrong_type(path, f->key, v, "an array of strings", err);
    size_t len = json_array_len(v);
    char **out = xcalloc(len + 1, sizeof *out);
    for (size_t i = 0; i < len; i++) {
      const char *s = json_string_value(json_array_get(v, i));
      if (s == NULL) {
        free_strv(out);
        return wrong_type(path, f->key, json_array_get(v, i),
                          "an array of strings", err);
      }
      out[i] = xstrdup(s);
    }
    char ***slot = (char ***)base;
    free_strv(*slot);
    *slot = out;
    return 0;
  }
  case F_BOOL:
    if (!json_is(v, JSON_BOOL))
      return wrong_type(path, f->key, v, "true or false", err);
    *(bool *)base = v->u.boolean;
    return 0;
  case F_INT:
    if (!json_integer_value(v, &n) || n < 0 || n > INT_MAX)
      return wrong_type(path, f->key, v, "a non-negative integer", err);
    *(int *)base = (int)n;
    return 0;
  case F_SIZE:
    if (!json_integer_value(v, &n) || n <= 0)
      return wrong_type(path, f->key, v, "a positive integer (bytes)", err);
    *(size_t *)base = (size_t)n;
    return 0;
  case F_JSON: { /* checked as a whole once every key is read */
    json_t **slot = (json_t **)base;
    json_free(*slot);
    *slot = json_is(v, JSON_NULL) ? NULL : json_copy(v);
    return 0;
  }
  case F_LL:
    if (!json_integer_value(v, &n) || n < 0 || n > 0xFFFFFFFELL)
      return wrong_type(path, f->key, v, "an integer from 0 to 4294967294", err);
    *(long long *)base = n;
    return 0;
  }
  return 0;
}

/* The id pool must never reach host id 0, the ids below 100000 that a
 * host's own users and services (and gVisor's sandbox, 65534) have, nor
 * the tools' identity; and it must fit in 32 bits. */
static int check_id_pool(const char *path, const struct host_config *cfg, tg_error **err) {
  if (cfg->id_range_count == 0)
    return 0;
  if (cfg->id_range_count > 65536) /* keeps the product below from overflowing */
    return tg_error_set(err, 0, "host config %s: id_range_count %lld is above 65536", path, cfg->id_range_count);
  long long end = cfg->id_range_base + cfg->id_range_size * cfg->id_range_count;
  if (cfg->id_range_base < 100000 || cfg->id_range_size < 65536 || end > 0xFFFFFFFELL)
    return tg_error_set(err, 0, "host config %s: the id pool id_range_base %lld + id_range_count %lld x id_range_size %lld "
                        "must start at 100000 or above, give each container at least 65536 ids and end below 4294967294",
                        path, cfg->id_range_base, cfg->id_range_count, cfg->id_range_size);
  for (int k = 0; k < 2; k++) {
    long long t = k ? cfg->tool_gid : cfg->tool_uid;
    if (t == 0 || (t >= cfg->id_range_base && t < end))
      return tg_error_set(err, 0, "host config %s: %s %lld must be neither 0 nor inside the container id pool [%lld, %lld)",
                          path, k ? "tool_gid" : "tool_uid", t, cfg->id_range_base, end);
  }
  if (cfg->max_id_ranges_per_container < 1)
    return tg_error_set(err, 0, "host config %s: \"max_id_ranges_per_container\" must be at least 1 (the default; "
                        "a pod shares one)", path);
  if (cfg->id_range_dir == NULL || cfg->id_range_dir[0] != '/')
    return tg_error_set(err, 0, "host config %s: \"id_range_dir\" must be an absolute path", path);
  return 0;
}

/* trusted_join_callers: each is compared with readlink(/proc/PID/exe),
 * which is absolute and resolves every link, so an entry that is not
 * would never match (the operator would believe a caller trusted that is
 * not). */
static int check_join_callers(const char *path, const struct host_config *cfg, tg_error **err) {
  for (size_t i = 0; cfg->trusted_join_callers && cfg->trusted_join_callers[i]; i++) {
    const char *e = cfg->trusted_join_callers[i];
    if (e[0] != '/' || strstr(e, "/./") || strstr(e, "/../") || strstr(e, "//") || e[strlen(e) - 1] == '/')
      return tg_error_set(err, 0,
                          "host config %s: trusted_join_callers[%zu] \"%s\" is not an absolute, normal path of an "
                          "executable: name the caller's binary as /proc/PID/exe shows it (e.g. /usr/bin/conmon)",
                          path, i, e);
    char *real = realpath(e, NULL);
    if (real != NULL && strcmp(real, e) != 0) {
      tg_error_set(err, 0,
                   "host config %s: trusted_join_callers[%zu] \"%s\" is a link to %s: a caller's executable "
                   "is seen resolved, so name %s",
                   path, i, e, real, real);
      free(real);
      return -1;
    }
    free(real);
  }
  return 0;
}

/* pod_network_roots: compared with --root as given (containerd: the
 * handler's Root and its namespace, e.g. /run/tollgate/cri-net/k8s.io). */
static int check_pod_network_roots(const char *path, const struct host_config *cfg, tg_error **err) {
  for (size_t i = 0; cfg->pod_network_roots && cfg->pod_network_roots[i]; i++) {
    const char *e = cfg->pod_network_roots[i];
    if (e[0] != '/' || strstr(e, "/./") || strstr(e, "/../") || strstr(e, "//") || (e[1] != '\0' && e[strlen(e) - 1] == '/'))
      return tg_error_set(err, 0,
                          "host config %s: pod_network_roots[%zu] \"%s\" is not an absolute, normal path: name a "
                          "tollgate runtime root as --root gets it (containerd: the handler's Root, then /k8s.io)",
                          path, i, e);
  }
  return 0;
}

int host_config_load(const char *path, struct host_config *cfg,
                     tg_error **err) {
  bool explicit_path = path != NULL;
  if (path == NULL)
    path = TG_DEFAULT_CONFIG;
  host_config_defaults(cfg);

  cleanup_free char *buf = NULL;
  size_t len = 0;
  tg_error *read_err = NULL;
  if (read_file(path, CONFIG_MAX_BYTES, &buf, &len, &read_err) < 0) {
    int e = read_err->errnum;
    if (e == ENOENT && !explicit_path) {
      /* No host config at all: the built-in defaults (runsc, hardened). */
      tg_error_free(&read_err);
      return 0;
    }
    tg_error_free(&read_err);
    host_config_free(cfg);
    if (e == ENOENT)
      return tg_error_set(err, 0,
                          "host config %s does not exist: create it, or drop "
                          "--config to use %s (or the built-in defaults)",
                          path, TG_DEFAULT_CONFIG);
    return tg_error_set(err, e, "host config %s cannot be read", path);
  }

  struct json_parse_options opts = {.max_depth = 16, .track_positions = true};
  tg_error *parse_err = NULL;
  cleanup_json json_t *root = json_parse(buf, len, &opts, &parse_err);
  if (root == NULL) {
    host_config_free(cfg);
    tg_error_set(err, 0, "host config %s: %s: fix the JSON", path,
                 parse_err->msg);
    tg_error_free(&parse_err);
    return -1;
  }
  if (!json_is(root, JSON_OBJECT)) {
    host_config_free(cfg);
    return tg_error_set(err, 0, "host config %s must hold a JSON object",
                        path);
  }
  for (size_t i = 0; i < root->u.object.len; i++) {
    const char *key = root->u.object.keys[i];
    const struct field *f = NULL;
    for (size_t j = 0; j < sizeof fields / sizeof fields[0]; j++)
      if (strcmp(fields[j].key, key) == 0)
        f = &fields[j];
    if (f == NULL) {
      host_config_free(cfg);
      return tg_error_set(err, 0,
                          "host config %s: line %u: unknown key \"%s\": "
                          "see docs/cli.md for the keys tollgate reads",
                          path, root->u.object.values[i]->line, key);
    }
    if (set_field(path, f, root->u.object.values[i], cfg, err) < 0) {
      host_config_free(cfg);
      return -1;
    }
  }
  if (cfg->runtime == NULL ||
      (strcmp(cfg->runtime, "runsc") != 0 && strcmp(cfg->runtime, "runc") != 0)) {
    tg_error_set(err, 0,
                 "host config %s: \"runtime\" must be \"runsc\" or \"runc\", "
                 "not \"%s\": put a binary's path in \"runtime_path\"",
                 path, cfg->runtime ? cfg->runtime : "null");
    host_config_free(cfg);
    return -1;
  }
  if (policy_binding_validate(path, cfg->policy_bindings, cfg->namespace_policies, err) < 0 ||
      policy_ceiling_validate(path, cfg, err) < 0) {
    host_config_free(cfg);
    return -1;
  }
  if (cfg->platform == NULL || cfg->platform[0] == '\0') {
    free(cfg->platform);
    cfg->platform = xstrdup("auto");
  }
  if (cfg->runc_version_floor == NULL ||
      (strcmp(cfg->runc_version_floor, "warn") != 0 && strcmp(cfg->runc_version_floor, "refuse") != 0)) {
    tg_error_set(err, 0,
                 "host config %s: \"runc_version_floor\" must be \"warn\" or "
                 "\"refuse\", not \"%s\"",
                 path, cfg->runc_version_floor ? cfg->runc_version_floor : "null");
    host_config_free(cfg);
    return -1;
  }
  if (cfg->sidecar_on_death == NULL ||
      (strcmp(cfg->sidecar_on_death, "restart") != 0 && strcmp(cfg->sidecar_on_death, "stop") != 0)) {
    tg_error_set(err, 0,
                 "host config %s: \"sidecar_on_death\" must be \"restart\" (start a new "
                 "sidecar) or \"stop\" (kill the container), not \"%s\"",
                 path, cfg->sidecar_on_death ? cfg->sidecar_on_death : "null");
    host_config_free(cfg);
    return -1;
  }
  if (cfg->sidecar_max_restarts < 0 || cfg->sidecar_max_restarts > 100) {
    tg_error_set(err, 0,
                 "host config %s: \"sidecar_max_restarts\" must be 0..100 (restarts "
                 "allowed within a minute; 0 stops the container at the first death), not %d",
                 path, cfg->sidecar_max_restarts);
    host_config_free(cfg);
    return -1;
  }
  if (cfg->profile == NULL) {
    host_config_free(cfg);
    return tg_error_set(err, 0,
                        "host config %s: \"profile\" cannot be null: name a "
                        "profile (\"hardened\") or remove the key",
                        path);
  }
  if (cfg->checkpoint_key == NULL || cfg->checkpoint_key[0] != '/') {
    host_config_free(cfg);
    return tg_error_set(err, 0, "host config %s: \"checkpoint_key\" must be an absolute path (the default is "
                        "/var/lib/tollgate/checkpoint.key)", path);
  }
  if (check_id_pool(path, cfg, err) < 0 || check_join_callers(path, cfg, err) < 0 ||
      check_pod_network_roots(path, cfg, err) < 0) {
    host_config_free(cfg);
    return -1;
  }
  return 0;
}

void host_config_free(struct host_config *cfg) {
  free(cfg->runtime);
  free(cfg->runtime_path);
  free_strv(cfg->runtime_args);
  free(cfg->platform);
  free(cfg->profile);
  free(cfg->data_dir);
  free(cfg->policy_dir);
  free(cfg->audit_dir);
  free(cfg->runc_version_floor);
  free(cfg->sidecar_on_death);
  free(cfg->audit_key);
  json_free(cfg->policy_bindings);
  json_free(cfg->namespace_policies);
  free(cfg->policy_ceiling);
  json_free(cfg->namespace_ceilings);
  free_strv(cfg->trusted_join_callers);
  free_strv(cfg->pod_network_roots);
  free(cfg->approval_hook);
  free(cfg->approver_group);
  free(cfg->id_range_dir);
  free(cfg->checkpoint_key);
  memset(cfg, 0, sizeof *cfg);
}

char *host_config_data_path(const struct host_config *cfg, const char *rel,
                            tg_error **err) {
  /* rel is always a constant chosen by tollgate's own code, never input. */
  struct stat st;
  if (cfg != NULL && cfg->data_dir != NULL) {
    char *p = xasprintf("%s/%s", cfg->data_dir, rel);
    if (stat(p, &st) == 0)
      return p;
    tg_error_set(err, 0,
                 "tollgate data file %s not found (data_dir is set in the "
                 "host config): reinstall with 'make install' or fix data_dir",
                 p);
    free(p);
    return NULL;
  }
  cleanup_free char *dir = executable_dir();
  if (dir == NULL) {
    tg_error_set(err, errno, "cannot find tollgate's own binary to locate %s",
                 rel);
    return NULL;
  }
  bool client = strncmp(rel, "client/", 7) == 0;
  bool sdk = strncmp(rel, "sdk/", 4) == 0;
  const char *name = client ? rel + 7 : sdk ? rel + 4 : rel;
  /* Install tree first, then the source tree (the binary in build/ or a
   * nested build directory such as build/asan/). */
  char *cands[8] = {0};
  size_t n = 0;
  if (sdk) {
    cands[n++] = xasprintf("%s/../lib/tollgate/%s", dir, name);
    cands[n++] = xasprintf("%s/../sdk/%s", dir, name);
    cands[n++] = xasprintf("%s/../../sdk/%s", dir, name);
  } else if (client) {
    cands[n++] = xasprintf("%s/../lib/tollgate/%s", dir, name);
    cands[n++] = xasprintf("%s/%s", dir, name);
    cands[n++] = xasprintf("%s/../bridge/client/%s", dir, name);
    cands[n++] = xasprintf("%s/../../bridge/client/%s", dir, name);
  } else {
    cands[n++] = xasprintf("%s/../share/tollgate/%s", dir, name);
    cands[n++] = xasprintf("%s/../bundles/%s", dir, name);
    cands[n++] = xasprintf("%s/../../bundles/%s", dir, name);
  }
  char *found = NULL;
  for (size_t i = 0; i < n; i++) {
    if (found == NULL && stat(cands[i], &st) == 0) {
      found = realpath(cands[i], NULL);
      if (found == NULL)
        found = xstrdup(cands[i]);
    }
  }
  if (found == NULL) {
    cleanup_free char *list = xstrdup("");
    for (size_t i = 0; i < n; i++) {
      char *l = xasprintf("%s%s%s", list, i ? ", " : "", cands[i]);
      free(list);
      list = l;
    }
    tg_error_set(err, 0,
                 "tollgate data file %s not found (looked in %s): run "
                 "'make install', or set \"data_dir\" in the host config",
                 rel, list);
  }
  for (size_t i = 0; i < n; i++)
    free(cands[i]);
  return found;
}

/* Policy bindings: which namespace or runtime root may select which policy
 * (see hostconfig.h).  The shapes are checked when the host config loads. */



static bool string_array(const json_t *v) {
  if (!json_is(v, JSON_ARRAY))
    return false;
  for (size_t i = 0; i < json_array_len(v); i++)
    if (!json_is(json_array_get(v, i), JSON_STRING))
      return false;
  return true;
}

static bool listed(const json_t *arr, const char *s) {
  for (size_t i = 0; s && i < json_array_len(arr); i++)
    if (strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
      return true;
  return false;
}

/* May a workload in ns under root use the bound policy b? */
static bool admits(const json_t *b, const char *ns, const char *root) {
  return listed(json_object_get(b, "namespaces"), ns) || listed(json_object_get(b, "roots"), root);
}

int policy_binding_validate(const char *path, const json_t *bindings,
                            const json_t *namespace_policies, tg_error **err) {
  if (bindings != NULL && !json_is(bindings, JSON_NULL)) {
    if (!json_is(bindings, JSON_OBJECT))
      return tg_error_set(err, 0,
                          "host config %s: \"policy_bindings\" must be an object: "
                          "{\"POLICY\": {\"namespaces\": [...], \"roots\": [...]}}",
                          path);
    for (size_t i = 0; i < bindings->u.object.len; i++) {
      const char *name = bindings->u.object.keys[i];
      const json_t *b = bindings->u.object.values[i];
      bool ok = json_is(b, JSON_OBJECT);
      for (size_t j = 0; ok && j < b->u.object.len; j++) {
        const char *k = b->u.object.keys[j];
        ok = (strcmp(k, "namespaces") == 0 || strcmp(k, "roots") == 0) &&
             string_array(b->u.object.values[j]);
      }
      if (!ok)
        return tg_error_set(err, 0,
                            "host config %s: line %u: policy_bindings.%s must be "
                            "{\"namespaces\": [NAMES], \"roots\": [PATHS]} (either may be left out)",
                            path, b->line, name);
    }
  }
  if (namespace_policies != NULL && !json_is(namespace_policies, JSON_NULL)) {
    if (!json_is(namespace_policies, JSON_OBJECT))
      return tg_error_set(err, 0,
                          "host config %s: \"namespace_policies\" must be an object: "
                          "{\"NAMESPACE\": \"POLICY\"}",
                          path);
    for (size_t i = 0; i < namespace_policies->u.object.len; i++) {
      const char *ns = namespace_policies->u.object.keys[i];
      const char *pol = json_string_value(namespace_policies->u.object.values[i]);
      if (pol == NULL)
        return tg_error_set(err, 0, "host config %s: namespace_policies.%s must be a policy name",
                            path, ns);
      const json_t *b = json_object_get(bindings, pol);
      if (json_is(bindings, JSON_OBJECT) && (b == NULL || !admits(b, ns, NULL)))
        return tg_error_set(err, 0,
                            "host config %s: namespace_policies.%s is \"%s\", but policy_bindings "
                            "does not bind \"%s\" to namespace \"%s\": add it there",
                            path, ns, pol, pol, ns);
    }
  }
  return 0;
}

/* "a, b" of the policies ns/root may use, or "none". */
static char *allowed_list(const json_t *bindings, const char *ns, const char *root) {
  struct json_buf b = {0};
  for (size_t i = 0; i < bindings->u.object.len; i++) {
    if (!admits(bindings->u.object.values[i], ns, root))
      continue;
    if (b.len)
      json_buf_lit(&b, ", ");
    json_buf_raw(&b, bindings->u.object.keys[i], strlen(bindings->u.object.keys[i]));
  }
  return b.s ? b.s : xstrdup("none");
}

int policy_binding_resolve(const struct host_config *cfg, const char *requested, const char *ns,
                           const char *root, char **out, tg_error **err) {
  *out = NULL;
  const json_t *bindings = cfg->policy_bindings;
  const char *chosen = requested;
  if (chosen == NULL && ns != NULL)
    chosen = json_string_value(json_object_get(cfg->namespace_policies, ns));
  if (chosen == NULL)
    return 0;
  if (!json_is(bindings, JSON_OBJECT)) {
    *out = xstrdup(chosen);
    return 0;
  }
  const json_t *b = json_object_get(bindings, chosen);
  /* Why: the annotation is the workload's word; the binding is the node
   * owner's.  Only a policy bound to the pod's namespace (or to this
   * runtime root) may be selected. */
  if (b == NULL || !admits(b, ns, root)) {
    cleanup_free char *allowed = allowed_list(bindings, ns, root);
    const char *dflt = ns ? json_string_value(json_object_get(cfg->namespace_policies, ns)) : NULL;
    return tg_error_set(err, 0,
                        "policy \"%s\" may not be used by %s%s%s (root %s): the host config's "
                        "policy_bindings %s; this workload may use: %s%s%s%s",
                        chosen, ns ? "namespace \"" : "a workload outside Kubernetes",
                        ns ? ns : "", ns ? "\"" : "", root,
                        b ? "binds it to other namespaces and roots" : "does not list it",
                        allowed, dflt ? " (the namespace's default is \"" : "", dflt ? dflt : "",
                        dflt ? "\")" : "");
  }
  *out = xstrdup(chosen);
  return 0;
}

/* A ceiling file: absolute (the host config is read from anywhere with
 * --config; a relative path would depend on the caller's directory) and
 * there now, so that a typo is found when the config loads rather than at
 * the first create. */
static int ceiling_path_ok(const char *path, const char *key, const char *file, tg_error **err) {
  struct stat st;
  if (file == NULL || file[0] != '/')
    return tg_error_set(err, 0,
                        "host config %s: %s must be the absolute path of a ceiling policy file, "
                        "e.g. \"/etc/tollgate/ceiling.json\"",
                        path, key);
  if (stat(file, &st) < 0)
    return tg_error_set(err, errno, "host config %s: %s is %s, which cannot be read: install "
                        "the ceiling policy there or fix the path", path, key, file);
  if (!S_ISREG(st.st_mode))
    return tg_error_set(err, 0, "host config %s: %s is %s, which is not a regular file", path,
                        key, file);
  return 0;
}

int policy_ceiling_validate(const char *path, const struct host_config *cfg, tg_error **err) {
  if (cfg->policy_ceiling != NULL &&
      ceiling_path_ok(path, "policy_ceiling", cfg->policy_ceiling, err) < 0)
    return -1;
  const json_t *nc = cfg->namespace_ceilings;
  if (nc == NULL || json_is(nc, JSON_NULL))
    return 0;
  if (!json_is(nc, JSON_OBJECT))
    return tg_error_set(err, 0, "host config %s: \"namespace_ceilings\" must be an object: "
                        "{\"NAMESPACE\": \"/path/of/ceiling.json\"}", path);
  for (size_t i = 0; i < nc->u.object.len; i++) {
    cleanup_free char *key = xasprintf("namespace_ceilings.%s", nc->u.object.keys[i]);
    if (ceiling_path_ok(path, key, json_string_value(nc->u.object.values[i]), err) < 0)
      return -1;
  }
  return 0;
}

size_t policy_ceilings_for(const struct host_config *cfg, const char *ns, const char *out[2]) {
  size_t n = 0;
  if (cfg->policy_ceiling != NULL)
    out[n++] = cfg->policy_ceiling;
  const char *own = ns ? json_string_value(json_object_get(cfg->namespace_ceilings, ns)) : NULL;
  if (own != NULL)
    out[n++] = own;
  return n;
}
