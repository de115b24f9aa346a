/* The credentials a running container's processes actually hold, checked
 * against what its effective config gives them.
 *
 * Used where tollgate did not set the credentials itself: a restore of an
 * image without a valid seal (host config allow_unsealed_restore) brings
 * back whatever uid and capabilities the saved process had, so the
 * restored processes are read from /proc and the container is refused
 * unless each one runs as the config says. */
#ifndef TOLLGATE_PROC_CREDS_H
#define TOLLGATE_PROC_CREDS_H

#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"

/* Every thread of every process in init's pid namespace (init included)
 * must have real, effective, saved and filesystem uid and gid equal to
 * process.user's (mapped to host ids through linux.uidMappings /
 * gidMappings), each capability set equal to process.capabilities', and
 * NoNewPrivs set when noNewPrivileges is.  0, or -1 with *err naming the
 * process and the field that differs. */
int proc_creds_check(pid_t init, const json_t *config, tg_error **err);

#endif
