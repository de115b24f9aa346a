/* Hardening profiles: bundles/profiles/<name>.json.
 *
 * A profile holds every default the hardening applies (the format is
 * documented in docs/hardening.md).  This module loads and validates one,
 * and decides whether one profile is at least as strict as another, which
 * is the rule for the workload annotation dev.tollgate.profile.
 */
#ifndef TOLLGATE_OCI_PROFILE_H
#define TOLLGATE_OCI_PROFILE_H

#include <stdbool.h>

#include "oci/namelist.h"
#include "base/error.h"
#include "base/json.h"

struct profile_tmpfs {
  char *path;
  long long size_bytes;
};

struct profile_rlimit {
  char *type; /* "RLIMIT_NOFILE" */
  long long value; /* soft = hard = value */
};

struct oci_profile {
  char *name;
  int strictness;          /* 0 (passthrough) .. 100; see profile_at_least_as_strict */
  bool passthrough;        /* apply nothing; only with allow_passthrough */
  struct namelist caps;     /* capability keep-list, "CAP_CHOWN" style */
  bool no_new_privileges;
  bool readonly_rootfs;
  json_t *seccomp;         /* validated OCI linux.seccomp object, or NULL */
  char *seccomp_file;      /* its file name inside the seccomp dir */
  bool network_none;       /* a fresh network namespace, loopback only */
  bool allow_root;         /* may process.user stay uid 0 */
  long long uid, gid;      /* used instead of root */
  struct profile_tmpfs *tmpfs;
  size_t n_tmpfs;
  struct namelist masked_paths, readonly_paths;
  struct namelist devices;  /* "null", "zero", ... (names under /dev) */
  struct namelist sysctls;  /* the sysctls a config may set */
  struct profile_rlimit *rlimits;
  size_t n_rlimits;
  long long memory_bytes;  /* 0 = no limit */
  long long pids;          /* 0 = no limit */
  long long cpu_millis;    /* 1000 = one CPU; 0 = no limit */
};

/* The devices a profile may list, with their fixed numbers. */
struct std_device {
  const char *name;
  char type;
  long long major, minor;
};
const struct std_device *profile_std_device(const char *name);

/* Load <profiles_dir>/<name>.json and, when it names one, its seccomp list
 * from seccomp_dir.  name must be a plain name ([A-Za-z0-9][A-Za-z0-9_.-]*);
 * an unknown key, a wrong type, an unknown capability, device, rlimit or
 * syscall name is an error naming it and the file.  0 or -1 with *err;
 * *out is filled and released with profile_free(). */
int profile_load(const char *profiles_dir, const char *seccomp_dir,
                 const char *name, struct oci_profile *out, tg_error **err);

/* Same, from already parsed JSON (tests, embedded profiles).  source names
 * the origin in errors. */
int profile_from_json(const json_t *doc, const char *seccomp_dir,
                      const char *source, struct oci_profile *out,
                      tg_error **err);

void profile_free(struct oci_profile *p);

/* "a is at least as strict as b": a.strictness >= b.strictness AND a is
 * not looser than b on any axis (capabilities a subset, every boolean
 * protection b has a has too, seccomp a subset, limits no higher, masked
 * and read-only paths a superset, devices and sysctls a subset, tmpfs no
 * larger).  When false, *why (if not NULL) gets an owned sentence naming
 * the first looser axis. */
bool profile_at_least_as_strict(const struct oci_profile *a,
                                const struct oci_profile *b, char **why);

#endif
