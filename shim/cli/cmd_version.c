/* tollgate version / --version: at most one `runsc --version`, cached. */
#include <stdio.h>

#include "shim/lifecycle/backend.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/runsc_version.h"
#include "base/util.h"

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
      /* runsc: its release (from the cache create keeps in
       * <root>/backend/, so this stays fast) and the flags chosen for it. */
      struct runsc_version v;
      cleanup_free char *cache = xasprintf("%s/backend", cli->root);
      if (b.kind == BACKEND_RUNSC && runsc_version_of(b.path, cache, &v, &e) == 0) {
        printf("backend version: %s\n", v.text[0] ? v.text : "unknown");
        runsc_version_free(&v);
      }
      printf("backend flags:");
      for (size_t i = 0; b.args[i]; i++)
        printf(" %s", b.args[i]);
      printf("\n");
      backend_free(&b);
    } else {
      printf("backend: %s (unusable: %s)\n", cli->config.runtime, e ? e->msg : "unknown");
    }
    tg_error_free(&e);
  }
  return 0;
}
