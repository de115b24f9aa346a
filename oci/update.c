/* tollgate update's resources against the container they change: the
 * request hardened (oci_update_harden() in limits.c), laid over the
 * container's effective config, and the proof that neither is looser than
 * what it must not exceed.  The CLI verb (shim/cli/cmd_update.c) reads
 * the request and hands runc the result; the rules are all here. */
#include "oci/harden.h"
#include "oci/profile.h"
#include "oci/transform.h"
#include "base/util.h"

/* base with every key of upd laid over it, one level down. */
static void overlay(json_t *base, const json_t *upd) {
  for (size_t i = 0; json_is(upd, JSON_OBJECT) && i < upd->u.object.len; i++) {
    json_t *sec = json_object_ensure_object(base, upd->u.object.keys[i]);
    const json_t *v = upd->u.object.values[i];
    for (size_t k = 0; k < v->u.object.len; k++)
      json_object_set(sec, v->u.object.keys[k], json_copy(v->u.object.values[k]));
  }
}

/* The hardened request no looser than what was asked, and the container
 * with it applied no looser than what create would give a config that
 * asks for nothing under profile p (the ceiling).  Devices and the
 * process are no part of an update. */
static int check_ceiling(const json_t *asked, const json_t *req, const json_t *effective,
                         const struct oci_profile *p, long long memory_ceiling, tg_error **err) {
  cleanup_json json_t *ceiling = json_new_object();
  if (oci_limits_harden(ceiling, p, "runc", 0, err) < 0)
    return -1;
  cleanup_json json_t *wa = json_new_object(), *wr = json_new_object(), *we = json_new_object();
  json_object_set(json_object_ensure_object(wa, "linux"), "resources", json_copy(asked));
  json_object_set(json_object_ensure_object(wr, "linux"), "resources", json_copy(req));
  json_object_set(json_object_ensure_object(we, "linux"), "resources",
                  json_copy(json_get_path(effective, "linux.resources")));
  json_object_del(json_get_path(ceiling, "linux.resources"), "devices");
  json_object_del(json_get_path(we, "linux.resources"), "devices");
  json_object_del(ceiling, "process");
  /* Memory is bounded by the host's ceiling, not the profile's default:
   * a container may hold the limit its caller asked for at create. */
  json_object_del(json_get_path(ceiling, "linux.resources"), "memory");
  json_t *wem = json_get_path(we, "linux.resources.memory");
  long long lim = 0;
  if (json_integer_value(json_object_get(wem, "limit"), &lim) && memory_ceiling > 0 && lim > memory_ceiling)
    return tg_error_set(err, 0, "update: the memory limit %lld MiB would be above this host's ceiling of %lld MiB",
                        lim >> 20, memory_ceiling >> 20);
  json_object_del(json_get_path(we, "linux.resources"), "memory");
  if (oci_check_tighter(wa, wr, err) < 0 || oci_check_tighter(ceiling, we, err) < 0)
    return tg_error_wrap(err, "internal error: update hardening with profile %s loosened the limits; this is a tollgate bug",
                         p->name);
  return 0;
}

int oci_update_resources(json_t *resources, json_t *effective_config, const struct oci_profile *p,
                         long long memory_ceiling, tg_error **err) {
  cleanup_json json_t *asked = json_copy(resources);
  if (!p->passthrough && oci_update_harden(resources, p, memory_ceiling, err) < 0)
    return -1;
  json_t *res = json_object_ensure_object(json_object_ensure_object(effective_config, "linux"), "resources");
  overlay(res, resources);
  if (p->passthrough)
    return 0;
  return check_ceiling(asked, resources, effective_config, p, memory_ceiling, err);
}
