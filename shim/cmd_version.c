/* tollgate version / --version: no backend call, so it is always fast. */
#include <stdio.h>

#include "shim/backend.h"
#include "shim/commands.h"

#define TOLLGATE_VERSION "0.1.0"
#define TOLLGATE_SPEC_VERSION "1.0.2"

int cmd_version(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)argv;
  if (argc > 1)
    return tg_error_set(err, 0, "version: takes no arguments");
  printf("tollgate version %s\nspec: %s\n", TOLLGATE_VERSION,
         TOLLGATE_SPEC_VERSION);
  if (cli->config.runtime != NULL) {
    struct backend b;
    tg_error *e = NULL;
    if (backend_choose(cli, &b, &e) == 0) {
      printf("backend: %s (%s)\n", b.name, b.path);
      backend_free(&b);
    } else {
      printf("backend: %s (not installed)\n", cli->config.runtime);
    }
    tg_error_free(&e);
  }
  return 0;
}
