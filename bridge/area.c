/* The bridge area on the host and its mounts in the container.  See area.h. */
#include "bridge/area.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge/protocol.h"
#include "base/util.h"

#define DEFAULT_TMPFS_BYTES (16u * 1024 * 1024)
#define CLIENT_MAX (16u * 1024 * 1024)

static int copy_client(int area_fd, const char *src, const char *name,
                       tg_error **err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(src, CLIENT_MAX, &buf, &len, err) < 0)
    return tg_error_wrap(err, "bridge: copy the client into the bridge area");
  return write_file_atomic(area_fd, name, buf, len, 0644, false, err);
}

static int populate(const char *area, const struct bridge_area_params *p,
                    tg_error **err) {
  cleanup_close int afd = open(area, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (afd < 0)
    return tg_error_set(err, errno, "bridge: open %s", area);
  /* calls/ stays root's, so the container can neither rename req/ and
   * resp/ nor put a symlink in their place. */
  if (mkdirat(afd, "calls", 0755) < 0)
    return tg_error_set(err, errno, "bridge: mkdir %s/calls", area);
  cleanup_close int cfd = openat(afd, "calls", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cfd < 0)
    return tg_error_set(err, errno, "bridge: open %s/calls", area);
  /* calls/cells: the session interpreter's answers and output (the cell
   * channel, bridge/client/kernel.py); cells/ (read-only in the
   * container, as the whole area is): the host's cell requests, which
   * no process in the container can forge. */
  static const char *const sub[] = {"req", "resp", "cells"};
  if (mkdirat(afd, "cells", 0755) < 0)
    return tg_error_set(err, errno, "bridge: mkdir %s/cells", area);
  for (int i = 0; i < 3; i++) {
    if (mkdirat(cfd, sub[i], 0700) < 0)
      return tg_error_set(err, errno, "bridge: mkdir %s/calls/%s", area, sub[i]);
    if (fchownat(cfd, sub[i], p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0)
      return tg_error_set(err, errno, "bridge: chown %s/calls/%s to %u:%u",
                          area, sub[i], (unsigned)p->uid, (unsigned)p->gid);
  }
  char params[256];
  int n = snprintf(params, sizeof params,
                   "{\"v\":%d,\"request_max_bytes\":%zu,"
                   "\"approval_timeout_ms\":%d,\"calls_dir\":\"%s\"}\n",
                   BRIDGE_PROTOCOL_VERSION,
                   p->request_max_bytes ? p->request_max_bytes
                                        : (size_t)BRIDGE_DEFAULT_REQUEST_MAX,
                   p->approval_timeout_ms > 0 ? p->approval_timeout_ms : 60000,
                   BRIDGE_CONTAINER_CALLS);
  if (write_file_atomic(afd, "bridge.json", params, (size_t)n, 0644, false, err) < 0)
    return -1;
  /* Until the gate writes the real list, clients see no tools. */
  if (write_file_atomic(afd, "tools.json", "{\"tools\":[]}\n", 13, 0644, false,
                        err) < 0)
    return -1;
  if (p->python_client &&
      copy_client(afd, p->python_client, "tollgate.py", err) < 0)
    return -1;
  int fd = openat(afd, "tollgate-call",
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
  if (fd < 0)
    return tg_error_set(err, errno, "bridge: create the tollgate-call mount point");
  close(fd);
  return 0;
}

/* The static client bound on the host at <state_dir>/bridge-call (an
 * empty file beside the area), private and read-only.  The container's
 * bind then takes a mount tollgate made, not the one the client was
 * installed on: under rootfsPropagation "unbindable" runc makes the host's
 * "/" unbindable in the container's mount namespace, and a bind from it
 * fails (EINVAL, "flags: 0x1007").  Not inside the area: a mount below it
 * is locked in the container's user namespace, and the area's own
 * (non-recursive) bind would then fail the same way. */
static int bind_client(const char *state_dir, const char *client, tg_error **err) {
  cleanup_free char *target = xasprintf("%s/" BRIDGE_CLIENT_MOUNT, state_dir);
  int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
  if (fd < 0)
    return tg_error_set(err, errno, "bridge: create the client's mount point %s", target);
  close(fd);
  if (mount(client, target, NULL, MS_BIND, NULL) < 0) {
    int e = errno;
    unlink(target);
    return tg_error_set(err, e, "bridge: bind the client %s onto %s", client, target);
  }
  if (mount(NULL, target, NULL, MS_PRIVATE, NULL) < 0 ||
      mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
    int e = errno;
    umount2(target, MNT_DETACH);
    unlink(target);
    return tg_error_set(err, e, "bridge: make the client's bind %s private and read-only", target);
  }
  return 0;
}

int bridge_area_create(const char *state_dir, const struct bridge_area_params *p,
                       tg_error **err) {
  cleanup_free char *area = xasprintf("%s/bridge", state_dir);
  if (mkdir(area, 0755) < 0)
    return tg_error_set(err, errno, "bridge: mkdir %s%s", area,
                        errno == EEXIST ? " (a leftover of an earlier container "
                        "with this id? run `tollgate delete --force ID`)" : "");
  size_t bytes = p->tmpfs_bytes ? p->tmpfs_bytes : DEFAULT_TMPFS_BYTES;
  /* One inode per KiB: room for thousands of calls in flight, while a
   * flood of empty files still ends at a limit. */
  size_t inodes = bytes / 1024 < 1024 ? 1024 : bytes / 1024;
  char opts[128];
  snprintf(opts, sizeof opts, "size=%zu,nr_inodes=%zu,mode=0755", bytes, inodes);
  if (mount("tollgate-bridge", area, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            opts) < 0) {
    int e = errno;
    rmdir(area);
    return tg_error_set(err, e, "bridge: mount a tmpfs on %s (tollgate needs "
                        "root, CAP_SYS_ADMIN, to set up the bridge)", area);
  }
  if (populate(area, p, err) < 0 || (p->call_client && bind_client(state_dir, p->call_client, err) < 0)) {
    umount2(area, MNT_DETACH);
    rmdir(area);
    return tg_error_wrap(err, "bridge: set up %s", area);
  }
  return 0;
}

int bridge_area_open(const char *state_dir, int *area_fd, int *req_fd,
                     int *resp_fd, tg_error **err) {
  cleanup_free char *area = xasprintf("%s/bridge", state_dir);
  int a = open(area, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (a < 0)
    return tg_error_set(err, errno, "bridge: open %s", area);
  int r = openat(a, "calls/req", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int q = r < 0 ? -1
                : openat(a, "calls/resp",
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (r < 0 || q < 0) {
    int e = errno;
    close(a);
    if (r >= 0)
      close(r);
    return tg_error_set(err, e, "bridge: open %s/calls/req and resp", area);
  }
  *area_fd = a;
  *req_fd = r;
  *resp_fd = q;
  return 0;
}

int bridge_area_destroy(const char *state_dir, tg_error **err) {
  cleanup_free char *area = xasprintf("%s/bridge", state_dir);
  /* The client's bind beside it: a plain unmount first; a lazy one if
   * something still holds it (a backend process on its way out), so
   * delete always completes.  The same for the tmpfs. */
  cleanup_free char *client = xasprintf("%s/" BRIDGE_CLIENT_MOUNT, state_dir);
  if (umount2(client, UMOUNT_NOFOLLOW) < 0 && errno == EBUSY &&
      umount2(client, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
    return tg_error_set(err, errno, "bridge: unmount %s", client);
  if (unlink(client) < 0 && errno != ENOENT)
    return tg_error_set(err, errno, "bridge: remove %s", client);
  struct stat st;
  if (lstat(area, &st) < 0 && errno == ENOENT)
    return 0;
  if (umount2(area, UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT) {
    if (umount2(area, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
      return tg_error_set(err, errno, "bridge: unmount %s", area);
  }
  return remove_tree(area, err);
}

static int map_id(const json_t *mappings, long long id, long long *out) {
  if (mappings == NULL || json_array_len(mappings) == 0) {
    *out = id;
    return 0;
  }
  for (size_t i = 0; i < json_array_len(mappings); i++) {
    const json_t *m = json_array_get(mappings, i);
    long long c, h, n;
    if (json_integer_value(json_object_get(m, "containerID"), &c) &&
        json_integer_value(json_object_get(m, "hostID"), &h) &&
        json_integer_value(json_object_get(m, "size"), &n) && id >= c &&
        id < c + n) {
      *out = h + (id - c);
      return 0;
    }
  }
  return -1;
}

int bridge_container_owner(const json_t *config, uid_t *uid, gid_t *gid,
                           tg_error **err) {
  long long u = 0, g = 0, hu, hg;
  const json_t *user = json_get_path(config, "process.user");
  json_t *ju = json_object_get(user, "uid"), *jg = json_object_get(user, "gid");
  if ((ju && !json_integer_value(ju, &u)) || (jg && !json_integer_value(jg, &g)) ||
      u < 0 || g < 0 || u > UINT32_MAX - 1 || g > UINT32_MAX - 1)
    return tg_error_set(err, 0, "bridge: process.user.uid/gid in config.json "
                        "must be non-negative integers");
  const json_t *linux_ = json_object_get(config, "linux");
  if (map_id(json_object_get(linux_, "uidMappings"), u, &hu) < 0 ||
      map_id(json_object_get(linux_, "gidMappings"), g, &hg) < 0)
    return tg_error_set(err, 0, "bridge: process.user %lld:%lld is not mapped "
                        "by linux.uidMappings/gidMappings; map it or run as a "
                        "mapped user", u, g);
  *uid = (uid_t)hu;
  *gid = (gid_t)hg;
  return 0;
}

char *bridge_client_path(const struct host_config *host, const char *name,
                         tg_error **err) {
  cleanup_free char *dir = executable_dir();
  char *cand[8] = {0};
  int n = 0;
  if (host && host->data_dir)
    cand[n++] = xasprintf("%s/client/%s", host->data_dir, name);
  if (dir) {
    cand[n++] = xasprintf("%s/../lib/tollgate/%s", dir, name);
    cand[n++] = xasprintf("%s/%s", dir, name);
    cand[n++] = xasprintf("%s/../%s", dir, name);
    cand[n++] = xasprintf("%s/../bridge/client/%s", dir, name);
    cand[n++] = xasprintf("%s/../../bridge/client/%s", dir, name);
    /* build/<variant>/tests/ (make asan) */
    cand[n++] = xasprintf("%s/../../%s", dir, name);
    cand[n++] = xasprintf("%s/../../../bridge/client/%s", dir, name);
  }
  char *found = NULL;
  for (int i = 0; i < n; i++) {
    if (found == NULL && access(cand[i], R_OK) == 0)
      found = realpath(cand[i], NULL);
  }
  if (found == NULL) {
    char tried[2048] = "";
    for (int i = 0; i < n; i++) {
      strncat(tried, " ", sizeof tried - strlen(tried) - 1);
      strncat(tried, cand[i], sizeof tried - strlen(tried) - 1);
    }
    tg_error_set(err, 0, "bridge: the in-container client %s was not found "
                 "(looked in:%s); run `make` or set data_dir in the host config",
                 name, tried);
  }
  for (int i = 0; i < n; i++)
    free(cand[i]);
  return found;
}

static json_t *bind_mount(const char *dest, const char *src, bool ro, bool exec) {
  json_t *m = json_new_object();
  json_object_set(m, "destination", json_new_string(dest));
  json_object_set(m, "type", json_new_string("bind"));
  json_object_set(m, "source", json_new_string(src));
  json_t *o = json_new_array();
  json_array_append(o, json_new_string("bind"));
  json_array_append(o, json_new_string(ro ? "ro" : "rw"));
  json_array_append(o, json_new_string("nosuid"));
  json_array_append(o, json_new_string("nodev"));
  if (!exec)
    json_array_append(o, json_new_string("noexec"));
  json_object_set(m, "options", o);
  return m;
}

static void set_env(json_t *process, const char *key, const char *value,
                    bool append) {
  json_t *env = json_object_ensure_array(process, "env");
  size_t k = strlen(key);
  for (size_t i = 0; i < json_array_len(env); i++) {
    const char *e = json_string_value(json_array_get(env, i));
    if (e && strncmp(e, key, k) == 0 && e[k] == '=') {
      if (!append)
        return; /* the workload's own setting wins */
      /* Already listed (an effective config being hardened again). */
      const char *v = e + k + 1;
      size_t vl = strlen(value);
      for (const char *q = v; (q = strstr(q, value)) != NULL; q += vl)
        if ((q == v || q[-1] == ':') && (q[vl] == '\0' || q[vl] == ':'))
          return;
      char *joined = xasprintf("%s:%s", e, value);
      json_free(env->u.array.items[i]);
      env->u.array.items[i] = json_new_string(joined);
      free(joined);
      return;
    }
  }
  char *kv = xasprintf("%s=%s", key, value);
  json_array_append(env, json_new_string(kv));
  free(kv);
}

int bridge_add_mounts(json_t *config, const char *state_dir,
                      const char *call_client, tg_error **err) {
  if (!json_is(config, JSON_OBJECT))
    return tg_error_set(err, 0, "bridge: config.json is not an object");
  cleanup_free char *area = xasprintf("%s/bridge", state_dir);
  cleanup_free char *calls = xasprintf("%s/bridge/calls", state_dir);
  json_t *mounts = json_object_ensure_array(config, "mounts");
  /* /run/tollgate belongs to the bridge: drop whatever the config already
   * mounts there or below (a workload's own mount, or the bridge mounts of
   * an earlier run of this bundle, which point at a removed area). */
  for (size_t i = json_array_len(mounts); i-- > 0;) {
    const char *d = json_string_value(
        json_object_get(json_array_get(mounts, i), "destination"));
    size_t k = strlen(BRIDGE_CONTAINER_DIR);
    if (d && strncmp(d, BRIDGE_CONTAINER_DIR, k) == 0 &&
        (d[k] == '\0' || d[k] == '/'))
      json_array_remove(mounts, i);
  }
  /* Parent before child: the read-only view, then the writable calls
   * directory and the static client (exec allowed, read-only) inside it. */
  json_array_append(mounts, bind_mount(BRIDGE_CONTAINER_DIR, area, true, false));
  json_array_append(mounts, bind_mount(BRIDGE_CONTAINER_CALLS, calls, false, false));
  if (call_client)
    json_array_append(mounts, bind_mount(BRIDGE_CONTAINER_CLIENT,
                                         call_client, true, true));
  bridge_process_env(json_object_ensure_object(config, "process"));
  return 0;
}

void bridge_process_env(json_t *process) {
  set_env(process, "TOLLGATE_DIR", BRIDGE_CONTAINER_DIR, false);
  set_env(process, "PYTHONPATH", BRIDGE_CONTAINER_DIR, true);
}
