/* Temporary pass-through so the CLI can be built first; the hardening
 * issue replaces this file. */
#include "oci/harden.h"

#include <stdlib.h>

#include "shim/util.h"

int oci_harden(json_t *config, const struct harden_options *opts,
               struct harden_result *res, tg_error **err) {
  (void)config; (void)err;
  res->profile = xstrdup(opts->profile ? opts->profile : "none");
  return 0;
}

int oci_harden_process(json_t *process, const json_t *effective_config,
                       tg_error **err) {
  (void)process; (void)effective_config; (void)err;
  return 0;
}

void harden_result_free(struct harden_result *res) {
  free(res->profile);
  res->profile = NULL;
}
