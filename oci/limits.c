/* Resource limits: rlimits and the cgroup memory, pids and cpu limits.
 * Each is lowered to the profile's value and a tighter input value stays,
 * but for memory: the caller's own limit stands (the profile's applies
 * only where it gave none) unless it is above the host's ceiling, which
 * is refused (docs/hardening.md "Limits"). */
#include <string.h>

#include "oci/transform.h"
#include "base/util.h"

static long long get_ll(const json_t *v, long long fallback) {
  long long x;
  return json_integer_value(v, &x) ? x : fallback;
}

/* Under runsc the cgroup limits bind the whole sandbox, Sentry included,
 * and the host tasks it holds are not the guest's processes.  On the
 * ptrace platform every guest address space runs in a stub process that
 * the Sentry never kills (it goes back to a pool, gVisor's
 * pkg/sentry/platform/ptrace/subprocess.go, Release), and each stub gains
 * a traced thread for every Sentry thread that enters it: measured on
 * runsc 20240729, 8 shell loops of /bin/true (at most 16 live guest
 * processes) hold 1090 host tasks after 20 s and never give them back;
 * 126 sleeping guest processes hold 885.  (systrap: 84 for the same
 * churn.)  A host pids.max of 1024 there killed the Sentry, and the
 * whole sandbox, at the first fork it refused.  So the guest's limit
 * goes to RLIMIT_NPROC, which gVisor enforces inside the sandbox per
 * user (pkg/sentry/kernel/kernel.go, incRLimitNProc: a clean EAGAIN; it
 * does not apply linux.resources.pids inside: that reaches the host
 * cgroup only), at half the profile's pids so that a full process table
 * stays well inside the memory limit; the cgroup gets a bound on the
 * Sentry's own tasks: 64 per guest process, over 7 times the worst
 * measured, and still a fraction of the host's pid space.  A hit of
 * either is reported by `tollgate run` (shim/lifecycle/limit_report.h). */
#define RUNSC_GUEST_PIDS(p) ((p) / 2)
#define RUNSC_HOST_TASKS_PER_GUEST 64

static void rlimit_lower(json_t *rls, const char *type, long long value) {
  json_t *found = NULL;
  for (size_t i = 0; i < json_array_len(rls); i++) {
    const char *t = json_string_value(json_object_get(json_array_get(rls, i), "type"));
    if (t && strcmp(t, type) == 0)
      found = json_array_get(rls, i);
  }
  if (found == NULL) {
    found = json_new_object();
    json_object_set(found, "type", json_new_string(type));
    json_array_append(rls, found);
  }
  /* rlimit values are unsigned 64-bit; a huge or negative-looking value
   * means "unlimited" to the runtime, so treat it as looser. */
  long long hard = get_ll(json_object_get(found, "hard"), -1);
  long long soft = get_ll(json_object_get(found, "soft"), -1);
  if (hard < 0 || hard > value)
    hard = value;
  if (soft < 0 || soft > hard)
    soft = hard;
  json_object_set(found, "hard", json_new_integer(hard));
  json_object_set(found, "soft", json_new_integer(soft));
}

/* runsc_guest: the guest's process limit under runsc (0: runc, none). */
static void rlimits_harden(json_t *process, const struct oci_profile *p, long long runsc_guest) {
  json_t *rls = json_object_ensure_array(process, "rlimits");
  for (size_t k = 0; k < p->n_rlimits; k++)
    rlimit_lower(rls, p->rlimits[k].type, p->rlimits[k].value);
  if (runsc_guest > 0)
    rlimit_lower(rls, "RLIMIT_NPROC", runsc_guest);
}

/* min() where <= 0 (or missing) means unlimited. */
static long long tighter(long long have, long long want) {
  if (want <= 0)
    return have;
  if (have <= 0 || have > want)
    return want;
  return have;
}

long long oci_cpu_millis(const json_t *config) {
  const json_t *cpu = json_get_path(config, "linux.resources.cpu");
  long long quota = get_ll(json_object_get(cpu, "quota"), 0);
  long long period = get_ll(json_object_get(cpu, "period"), 100000);
  if (quota <= 0 || period <= 0)
    return 0;
  return quota * 1000 / period;
}

/* The memory limit a container gets: the caller's own (what Kubernetes
 * asked for), or the profile's where it gave none; a limit above the
 * host's ceiling (0: none) is refused, never silently lowered: the API
 * would go on showing a limit the container does not have. */
static int memory_limit(long long asked, const struct oci_profile *p, long long ceiling, const char *field,
                        long long *out, tg_error **err) {
  if (asked > 0 && ceiling > 0 && asked > ceiling)
    return tg_error_set(err, 0,
                        "%s %lld MiB is above this host's memory ceiling of %lld MiB: ask for at most %lld MiB, "
                        "or raise memory_ceiling_mib in the host config",
                        field, asked >> 20, ceiling >> 20, ceiling >> 20);
  *out = asked > 0 ? asked : p->memory_bytes;
  return 0;
}

int oci_limits_harden(json_t *config, const struct oci_profile *p, const char *backend, long long memory_ceiling,
                      tg_error **err) {
  bool runsc = backend == NULL || strcmp(backend, "runsc") == 0;
  json_t *res = json_object_ensure_object(json_object_ensure_object(config, "linux"), "resources");
  json_t *mem = json_object_ensure_object(res, "memory");
  long long limit = 0;
  if (memory_limit(get_ll(json_object_get(mem, "limit"), 0), p, memory_ceiling, "linux.resources.memory.limit",
                   &limit, err) < 0)
    return -1;
  /* runsc: a caller's own pids limit is a bound on its processes too, so
   * it goes inside with the profile's (a host cgroup of 100 tasks would
   * end the sandbox at the first churn, as 1024 did). */
  long long asked_pids = get_ll(json_get_path(res, "pids.limit"), 0);
  long long guest = runsc ? tighter(asked_pids, RUNSC_GUEST_PIDS(p->pids)) : 0;
  rlimits_harden(json_object_ensure_object(config, "process"), p, guest);
  if (limit > 0) {
    json_object_set(mem, "limit", json_new_integer(limit));
    /* memory+swap equal to memory: no swap, so a hog meets the OOM killer
     * instead of dragging the host into swapping. */
    json_object_set(mem, "swap", json_new_integer(limit));
  }
  /* With the OOM killer off, a container at its limit hangs forever
   * instead of being killed. */
  if (json_is_true(json_object_get(mem, "disableOOMKiller")))
    json_object_set(mem, "disableOOMKiller", json_new_bool(false));
  if (mem->u.object.len == 0)
    json_object_del(res, "memory");

  long long pids = runsc ? guest * RUNSC_HOST_TASKS_PER_GUEST : tighter(asked_pids, p->pids);
  if (pids > 0)
    json_object_set(json_object_ensure_object(res, "pids"), "limit", json_new_integer(pids));

  long long have = oci_cpu_millis(config);
  if (p->cpu_millis > 0 && (have == 0 || have > p->cpu_millis)) {
    json_t *cpu = json_object_ensure_object(res, "cpu");
    json_object_set(cpu, "period", json_new_integer(100000));
    json_object_set(cpu, "quota", json_new_integer(p->cpu_millis * 100));
  }

  /* A negative score shields the container from the OOM killer at the
   * host's expense. */
  json_t *process = json_object_get(config, "process");
  long long adj;
  if (json_integer_value(json_object_get(process, "oomScoreAdj"), &adj) && adj < 0)
    json_object_set(process, "oomScoreAdj", json_new_integer(0));
  return 0;
}

void oci_runsc_pids_meaning(json_t *config) {
  json_t *pids = json_get_path(config, "linux.resources.pids");
  long long limit = get_ll(json_object_get(pids, "limit"), 0);
  if (limit <= 0)
    return;
  json_object_set(pids, "limit", json_new_integer(limit * RUNSC_HOST_TASKS_PER_GUEST));
  rlimit_lower(json_object_ensure_array(json_object_ensure_object(config, "process"), "rlimits"), "RLIMIT_NPROC", limit);
}

/* The keys `update` may carry, per linux.resources section.  Anything
 * else (devices, hugepage or rdma limits, the realtime CPU budget, raw
 * cgroup v2 "unified" files) is refused: update is for the limits a
 * profile bounds, not a way around create's hardening. */
static const struct {
  const char *section;
  const char *const keys[10];
} update_keys[] = {
    {"memory", {"limit", "reservation", "swap", "kernel", "kernelTCP", "swappiness", "disableOOMKiller", "checkBeforeUpdate"}},
    {"cpu", {"shares", "quota", "period", "cpus", "mems", "idle", "burst"}},
    {"pids", {"limit"}},
    {"blockIO", {"weight", "leafWeight"}},
};

static int check_update_keys(const json_t *res, tg_error **err) {
  if (!json_is(res, JSON_OBJECT))
    return tg_error_set(err, 0, "update: the resources must be a JSON object (linux.resources of the runtime spec)");
  for (size_t i = 0; i < res->u.object.len; i++) {
    const char *sec = res->u.object.keys[i];
    const json_t *v = res->u.object.values[i];
    size_t k = 0;
    while (k < sizeof update_keys / sizeof update_keys[0] && strcmp(update_keys[k].section, sec) != 0)
      k++;
    if (k == sizeof update_keys / sizeof update_keys[0])
      return tg_error_set(err, 0, "update: resources.%s cannot be updated by tollgate (only memory, cpu, pids, blockIO); recreate the container to change it",
                          sec);
    if (!json_is(v, JSON_OBJECT))
      return tg_error_set(err, 0, "update: resources.%s must be an object", sec);
    for (size_t j = 0; j < v->u.object.len; j++) {
      bool ok = false;
      for (size_t n = 0; update_keys[k].keys[n]; n++)
        ok |= strcmp(update_keys[k].keys[n], v->u.object.keys[j]) == 0;
      if (!ok)
        return tg_error_set(err, 0, "update: resources.%s.%s cannot be updated by tollgate; remove it (realtime CPU budgets are never granted)",
                            sec, v->u.object.keys[j]);
    }
  }
  return 0;
}

int oci_update_harden(json_t *res, const struct oci_profile *p, long long memory_ceiling, tg_error **err) {
  if (check_update_keys(res, err) < 0)
    return -1;
  json_t *mem = json_object_get(res, "memory");
  if (mem) {
    long long have = get_ll(json_object_get(mem, "limit"), 0);
    if (json_object_get(mem, "limit")) {
      long long limit = 0;
      if (memory_limit(have, p, memory_ceiling, "update: memory.limit", &limit, err) < 0)
        return -1;
      if (limit > 0)
        json_object_set(mem, "limit", json_new_integer(limit));
    }
    /* No swap, as at create: swap follows the limit, or is left as it is. */
    json_object_del(mem, "swap");
    if (json_object_get(mem, "limit") && get_ll(json_object_get(mem, "limit"), 0) > 0)
      json_object_set(mem, "swap", json_copy(json_object_get(mem, "limit")));
    if (json_is_true(json_object_get(mem, "disableOOMKiller")))
      json_object_set(mem, "disableOOMKiller", json_new_bool(false));
  }
  json_t *pids = json_object_get(res, "pids");
  if (pids && json_object_get(pids, "limit")) {
    long long v = tighter(get_ll(json_object_get(pids, "limit"), 0), p->pids);
    if (v > 0)
      json_object_set(pids, "limit", json_new_integer(v));
  }
  json_t *cpu = json_object_get(res, "cpu");
  if (cpu && (json_object_get(cpu, "quota") || json_object_get(cpu, "period")) && p->cpu_millis > 0) {
    long long period = get_ll(json_object_get(cpu, "period"), 100000);
    long long quota = get_ll(json_object_get(cpu, "quota"), -1);
    /* A period alone would rescale the quota the container has now (a
     * period of 1 ms with a 100 ms quota is 100 CPUs): both are set. */
    if (period <= 0)
      period = 100000;
    if (quota <= 0 || quota * 1000 / period > p->cpu_millis || !json_object_get(cpu, "quota"))
      quota = p->cpu_millis * period / 1000;
    json_object_set(cpu, "period", json_new_integer(period));
    json_object_set(cpu, "quota", json_new_integer(quota));
  }
  return 0;
}
