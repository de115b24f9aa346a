/* What every verb and lifecycle step is given: the global flags of the
 * command line and the host config loaded before the verb runs.  It is
 * its own header so that shim/lifecycle/ needs nothing of shim/cli/.
 */
#ifndef TOLLGATE_CONTEXT_H
#define TOLLGATE_CONTEXT_H

#include <stdbool.h>

#include "base/hostconfig.h"

struct cli {
  const char *root;             /* --root, default TG_DEFAULT_ROOT */
  const char *log_path;         /* --log, or NULL for stderr */
  bool log_json;                /* --log-format json */
  bool debug;                   /* --debug */
  bool systemd_cgroup;          /* --systemd-cgroup */
  const char *runtime_override; /* --runtime runsc|runc|PATH */
  const char *config_path;      /* --config, or NULL for the default */
  struct host_config config;    /* loaded before the verb runs */
};

#endif
