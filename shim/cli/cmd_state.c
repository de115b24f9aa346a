/* tollgate state ID: runc's state JSON plus the applied profile. */
#include <stdio.h>
#include <stdlib.h>

#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/term_escape.h"
#include "shim/lifecycle/idrange.h"
#include "base/util.h"

int cmd_state(struct cli *cli, int argc, char **argv, tg_error **err) {
  if (argc != 2)
    return tg_error_set(err, 0, "state: usage: tollgate state ID");
  struct container c;
  cleanup_close int lock = -1; /* a delete waits for this call (or it for one) */
  if (container_load_shared(cli, argv[1], &c, &lock, err) < 0)
    return -1;
  json_t *s = container_query(cli, &c, err);
  container_free(&c);
  if (s == NULL)
    return -1;
  /* The host's id pool beside the container's own range: how many ranges
   * are left for the next container (docs/cli.md, "state"). */
  json_t *pool = idrange_usage_json(&cli->config);
  json_t *tg = json_object_get(s, "tollgate");
  if (pool != NULL && tg != NULL)
    json_object_set(tg, "id_pool", pool);
  else
    json_free(pool);
  cleanup_free char *text = json_dump(s, true, NULL);
  json_free(s);
  /* annotations are the config.json author's: JSON's own escapes for what
   * a terminal must not get raw (the same value to containerd) */
  cleanup_free char *shown = escape_for_terminal(text, true);
  printf("%s\n", shown);
  return 0;
}
