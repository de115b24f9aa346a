/* User namespaces under the hardened profiles: whose host ids a container
 * may use.  A mapping is the one thing in config.json that decides which
 * host user a container's processes are; a mapping to host 0 makes the
 * container's "nobody" root on every bind mount.  So input mappings are
 * checked against the host's id pool, and a runc container without any is
 * given a range of its own (docs/hardening.md "Identities"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/harden.h"
#include "oci/transform.h"
#include "base/util.h"

#define ID_MAX 0xFFFFFFFFULL /* (uid_t)-1 is never a valid id */

static json_t *find_userns(json_t *config, size_t *index) {
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *t = json_string_value(json_object_get(ns, "type"));
    if (t && strcmp(t, "user") == 0) {
      *index = i;
      return ns;
    }
  }
  return NULL;
}

/* One mapping's numbers, or false when it is not three integers in range. */
static bool mapping_fields(const json_t *m, unsigned long long *c, unsigned long long *h, unsigned long long *n) {
  long long lc, lh, ln;
  if (!json_integer_value(json_object_get(m, "containerID"), &lc) ||
      !json_integer_value(json_object_get(m, "hostID"), &lh) || !json_integer_value(json_object_get(m, "size"), &ln) ||
      lc < 0 || lh < 0 || ln <= 0 || (unsigned long long)lc + (unsigned long long)ln > ID_MAX ||
      (unsigned long long)lh + (unsigned long long)ln > ID_MAX)
    return false;
  *c = (unsigned long long)lc;
  *h = (unsigned long long)lh;
  *n = (unsigned long long)ln;
  return true;
}

bool oci_joins_a_namespace(const json_t *config) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *path = json_string_value(json_object_get(ns, "path"));
    const char *type = json_string_value(json_object_get(ns, "type"));
    if (path && path[0] != '\0' && (type == NULL || strcmp(type, "network") != 0))
      return true;
  }
  return false;
}

static bool has_mappings(const json_t *config) {
  return json_array_len(json_get_path(config, "linux.uidMappings")) > 0 ||
         json_array_len(json_get_path(config, "linux.gidMappings")) > 0;
}

void oci_userns_slots(const json_t *config, unsigned long long first, unsigned long long size,
                      unsigned long long count, unsigned long long **slots, size_t *n, bool *maps) {
  static const char *const keys[] = {"linux.uidMappings", "linux.gidMappings"};
  *slots = NULL;
  *n = 0;
  *maps = has_mappings(config);
  if (size == 0 || count == 0)
    return;
  size_t cap = 0;
  for (size_t k = 0; k < 2; k++) {
    const json_t *arr = json_get_path(config, keys[k]);
    for (size_t i = 0; i < json_array_len(arr); i++) {
      unsigned long long c, h, len;
      if (!mapping_fields(json_array_get(arr, i), &c, &h, &len) || h < first || h + len > first + size * count)
        continue;
      for (unsigned long long s = (h - first) / size; s <= (h + len - 1 - first) / size; s++) {
        bool dup = false;
        for (size_t j = 0; j < *n && !dup; j++)
          dup = (*slots)[j] == s;
        if (dup)
          continue;
        if (*n == cap) {
          cap = cap ? cap * 2 : 4;
          *slots = realloc(*slots, cap * sizeof **slots);
          if (*slots == NULL)
            abort();
        }
        (*slots)[(*n)++] = s;
      }
    }
  }
}

static int check_mappings(const json_t *config, const char *key, const struct harden_options *o, tg_error **err) {
  const json_t *arr = json_get_path(config, key);
  for (size_t i = 0; i < json_array_len(arr); i++) {
    unsigned long long c, h, n;
    if (!mapping_fields(json_array_get(arr, i), &c, &h, &n))
      return tg_error_set(err, 0, "%s[%zu] must have integer containerID, hostID and size (size at least 1, "
                          "every id below 4294967295)", key, i);
    /* Host id 0 is refused even with no pool configured: it is root. */
    bool in_pool = o->id_pool_end > o->id_pool_first ? h >= o->id_pool_first && h + n <= o->id_pool_end : h > 0;
    if (!in_pool)
      return tg_error_set(err, 0, "%s[%zu] maps container ids %llu-%llu to host ids %llu-%llu, outside the host's "
                          "container id pool %llu-%llu%s: map only to host ids of the pool (see docs/hardening.md), "
                          "or leave out the user namespace so tollgate allocates a range",
                          key, i, c, c + n - 1, h, h + n - 1, o->id_pool_first,
                          o->id_pool_end ? o->id_pool_end - 1 : 0, h == 0 ? " (host id 0 is host root)" : "");
  }
  return 0;
}

static json_t *one_mapping(unsigned long long host, unsigned long long size) {
  json_t *arr = json_new_array();
  json_t *m = json_new_object();
  json_object_set(m, "containerID", json_new_integer(0));
  json_object_set(m, "hostID", json_new_integer((long long)host));
  json_object_set(m, "size", json_new_integer((long long)size));
  json_array_append(arr, m);
  return arr;
}

/* Docker asks for net.ipv4.ping_group_range "0 2147483647" (unprivileged
 * ping for every group).  The kernel takes that sysctl only for gids the
 * writer's user namespace maps, so in a container's own user namespace
 * runc's write fails EINVAL and the container never starts.  A range the
 * gid mappings do not hold whole is dropped (ping then needs CAP_NET_RAW,
 * which the profile has removed anyway): removing a sysctl only tightens;
 * rewriting it to a smaller range would change what was asked for. */
static void drop_unmapped_ping_range(json_t *config) {
  json_t *sysctl = json_get_path(config, "linux.sysctl");
  const char *v = json_string_value(json_object_get(sysctl, "net.ipv4.ping_group_range"));
  if (v == NULL)
    return;
  unsigned long long lo = 0, hi = 0;
  char tail = 0;
  bool mapped = false;
  if (sscanf(v, "%llu %llu%c", &lo, &hi, &tail) == 2 && lo <= hi) {
    const json_t *arr = json_get_path(config, "linux.gidMappings");
    for (size_t i = 0; i < json_array_len(arr) && !mapped; i++) {
      unsigned long long c, h, n;
      mapped = mapping_fields(json_array_get(arr, i), &c, &h, &n) && lo >= c && hi < c + n;
    }
  }
  if (!mapped)
    json_object_del(sysctl, "net.ipv4.ping_group_range");
}

int oci_userns_harden(json_t *config, const struct harden_options *o, tg_error **err) {
  size_t index = 0;
  json_t *ns = find_userns(config, &index);
  const char *path = json_string_value(json_object_get(ns, "path"));
  if (path && path[0] != '\0')
    return tg_error_set(err, 0, "linux.namespaces[%zu]: joining the user namespace %s is not allowed under a "
                        "hardened profile: its host ids cannot be checked against the id pool; remove the "
                        "namespace (tollgate gives each container its own)", index, path);
  if (has_mappings(config)) {
    if (ns == NULL)
      return tg_error_set(err, 0, "linux.uidMappings/gidMappings are set but linux.namespaces has no user "
                          "namespace: add {\"type\": \"user\"} or remove the mappings");
    if (check_mappings(config, "linux.uidMappings", o, err) < 0 ||
        check_mappings(config, "linux.gidMappings", o, err) < 0)
      return -1;
    drop_unmapped_ping_range(config);
    return 0;
  }
  bool runc = o->backend && strcmp(o->backend, "runc") == 0;
  /* A joiner enters its owner's ipc/uts/pid namespaces, which a new user
   * namespace of its own could not administer (runc's mqueue and proc
   * mounts fail): create gives it its owner's user namespace and range
   * after this (oci_userns_join_pod), or, when the owner has none, it
   * keeps the host's (docs/hardening.md "Known limits"). */
  if (runc && oci_joins_a_namespace(config))
    return 0;
  if (!runc || o->id_range_size == 0) {
    /* runsc: the sentry is the container's kernel and gVisor's sandbox
     * runs as its own unprivileged host user either way. */
    if (ns != NULL && runc)
      return tg_error_set(err, 0, "linux.namespaces has a user namespace without linux.uidMappings/gidMappings "
                          "and the host config has no id pool (id_range_count 0): add mappings or configure a pool");
    return 0;
  }
  json_t *linux_ = json_object_ensure_object(config, "linux");
  if (ns == NULL) {
    json_t *nss = json_object_ensure_array(linux_, "namespaces");
    json_t *u = json_new_object();
    json_object_set(u, "type", json_new_string("user"));
    json_array_append(nss, u);
  }
  json_object_set(linux_, "uidMappings", one_mapping(o->id_range_first, o->id_range_size));
  json_object_set(linux_, "gidMappings", one_mapping(o->id_range_first, o->id_range_size));
  drop_unmapped_ping_range(config);
  return 0;
}

int oci_userns_join_pod(json_t *config, int owner_pid, unsigned long long host_first, unsigned long long size,
                        tg_error **err) {
  if (owner_pid <= 0 || size == 0)
    return tg_error_set(err, EINVAL, "joining a pod's user namespace needs its sandbox's pid and range");
  if (has_mappings(config))
    return tg_error_set(err, 0, "linux.uidMappings/gidMappings are set on a container of a pod: a pod shares "
                        "its sandbox container's user namespace; remove the mappings");
  json_t *linux_ = json_object_ensure_object(config, "linux");
  size_t index = 0;
  json_t *ns = find_userns(config, &index);
  if (ns == NULL) {
    ns = json_new_object();
    json_object_set(ns, "type", json_new_string("user"));
    json_array_append(json_object_ensure_array(linux_, "namespaces"), ns);
  }
  /* The owner's user namespace by its init's /proc entry: the pid was
   * checked alive and recorded as that container's init by the caller
   * (a pid reused since would fail runc's setns on a different owner,
   * never map the container elsewhere: the mappings below are what runc
   * checks and chowns with, and they are the owner's range). */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/user", owner_pid);
  json_object_set(ns, "path", json_new_string(path));
  json_object_set(linux_, "uidMappings", one_mapping(host_first, size));
  json_object_set(linux_, "gidMappings", one_mapping(host_first, size));
  drop_unmapped_ping_range(config);
  return 0;
}
