/* Minimal gate until the governance issue lands: no policy language yet,
 * so every call is denied "no policy" and nothing runs.  Fails closed. */
#include "governance/gate.h"

#include <stdlib.h>
#include <string.h>

#include "shim/util.h"

struct gate {
  char *container_id;
};

int gate_open(const struct gate_config *cfg, struct gate **out, tg_error **err) {
  (void)err;
  struct gate *g = xcalloc(1, sizeof *g);
  g->container_id = xstrdup(cfg->container_id);
  *out = g;
  return 0;
}

int gate_write_tools_json(struct gate *g, int dirfd, const char *name,
                          tg_error **err) {
  (void)g;
  return write_file_atomic(dirfd, name, "{\"tools\":[]}", 12, 0644, false, err);
}

char *gate_handle(struct gate *g, const char *call_id, const json_t *request,
                  const char *bad_reason, size_t *len) {
  (void)g; (void)call_id; (void)request; (void)bad_reason;
  char *s = xstrdup("{\"v\":1,\"ok\":false,\"error\":{\"code\":\"denied\",\"message\":\"denied: no policy\"}}");
  if (len)
    *len = strlen(s);
  return s;
}

void gate_record_unanswerable(struct gate *g, const char *what) { (void)g; (void)what; }
void gate_container_stopped(struct gate *g) { (void)g; }

void gate_close(struct gate *g) {
  if (g == NULL)
    return;
  free(g->container_id);
  free(g);
}
