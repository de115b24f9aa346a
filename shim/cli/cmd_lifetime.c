/* tollgate lifetime [--owner-pid PID|none] [--deadline SECONDS|RFC3339|none] ID:
 * show a container's owner and deadline (docs/reliability.md) as JSON, or
 * change them: a service moves a sandbox's deadline (e2b's set_timeout)
 * or re-adopts it after a restart (a new owner) without recreating it.
 * The change is made under the container's exclusive lock, so a reaper
 * (which skips a locked container) never judges half of it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/lifetime.h"
#include "shim/lifecycle/state.h"

static int change(const char *dir, const char *owner, const char *deadline, tg_error **err) {
  struct lifetime lt;
  if (lifetime_read(dir, &lt, err) < 0)
    return -1;
  if (owner != NULL) {
    lt.owner_pid = 0;
    lt.owner_start = lt.owner_pidns = 0;
    if (strcmp(owner, "none") != 0 && lifetime_parse_owner(owner, &lt, err) < 0)
      return -1;
  }
  if (deadline != NULL) {
    lt.deadline = 0;
    if (strcmp(deadline, "none") != 0 && lifetime_parse_deadline(deadline, time(NULL), &lt.deadline, err) < 0)
      return -1;
  }
  if (lifetime_is_set(&lt))
    return lifetime_write(dir, &lt, err);
  cleanup_free char *path = xasprintf("%s/%s", dir, LIFETIME_FILE);
  if (unlink(path) < 0 && errno != ENOENT)
    return tg_error_set(err, errno, "remove %s", path);
  return 0;
}

int cmd_lifetime(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *owner = NULL, *deadline = NULL;
  struct opt opts[] = {{"owner-pid", 0, OPT_STRING, &owner}, {"deadline", 0, OPT_STRING, &deadline}, {0}};
  int i = args_parse("lifetime", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (argc - i != 1)
    return tg_error_set(err, 0, "lifetime: usage: tollgate lifetime [--owner-pid PID|none] "
                        "[--deadline SECONDS|RFC3339|none] ID");
  const char *id = argv[i];
  cleanup_json json_t *state = NULL;
  cleanup_free char *dir = NULL;
  if (state_load(cli->root, id, &state, &dir, err) < 0)
    return -1;
  if (owner != NULL || deadline != NULL) {
    cleanup_close int lock = state_lock(dir);
    if (lock < 0)
      return tg_error_set(err, errno, "lifetime: container %s", id);
    if (change(dir, owner, deadline, err) < 0)
      return tg_error_wrap(err, "lifetime %s", id);
  }
  struct lifetime lt;
  if (lifetime_read(dir, &lt, err) < 0)
    return -1;
  cleanup_json json_t *o = lifetime_json(&lt);
  cleanup_free char *text = json_dump(o, false, NULL);
  printf("%s\n", text);
  return 0;
}
