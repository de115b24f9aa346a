/* The per-container state directory <root>/<id>/ and its state.json.
 *
 * state.json records what later verbs need to reach the same container
 * the same way: backend name, binary, root and global flags, bundle,
 * profile, policy, created time, init and sidecar pids, owner.  The
 * effective config is kept beside it as config.json (exec builds its
 * process from it).  <root>/backend/ holds the backends' own roots, so
 * "backend" is not a usable container id.
 */
#ifndef TOLLGATE_STATE_H
#define TOLLGATE_STATE_H

#include "base/error.h"
#include "base/json.h"

/* An id that may become a path component: runc's pattern, and not one of
 * the names tollgate itself uses under --root.  -1 with *err naming the
 * rule otherwise. */
int state_check_id(const char *id, tg_error **err);

/* Claim <root>/<id> (mode 0700; root itself 0711).  Fails with "container
 * <id> already exists" when it is taken.  *dir is owned by the caller. */
int state_create_dir(const char *root, const char *id, char **dir,
                     tg_error **err);

/* Remove the state directory dir (<root>/<id>).  It is renamed out of
 * the way first, to <root>/.removing-<id>.<pid>.<ns>: the verbs that do not
 * hold its lock through a backend call (list, ps, update, a foreground
 * exec) make their call's log in it by path, and one that did so while it
 * was being removed left it behind ("rmdir: Directory not empty"), the id
 * taken for ever and the run that deleted it failed.  After the rename
 * those paths lead nowhere, and a create of the same id may begin.  0, or
 * -1 with *err. */
int state_remove_dir(const char *dir, tg_error **err);

/* Remove what a delete killed between that rename and the end of the
 * removal left under root (.removing-* of a process that is gone). */
void state_remove_leftovers(const char *root);

/* Take the container's lock: flock(LOCK_EX) on its state directory,
 * waiting while another create or delete of the same id runs.  Returns
 * the fd that holds it (close it to release; O_CLOEXEC, so backends never
 * inherit it), or -1 with errno (ENOENT: no such container). */
int state_lock(const char *dir);

/* state_lock() shared: kill, state and exec hold it while they call the
 * backend, so a delete (exclusive) waits for them and they wait for it.
 * A directory removed (or replaced) while this waited is ENOENT: the
 * container the caller asked about is gone. */
int state_lock_shared(const char *dir);

/* Load <root>/<id>/state.json.  A missing directory is "container <id>
 * does not exist" (runc's wording, which containerd matches).  *state and
 * *dir are owned by the caller. */
int state_load(const char *root, const char *id, json_t **state, char **dir,
               tg_error **err);

/* The id the backend knows the container by: state.json's "backend_id"
 * (see backend_container_id), or tollgate's id for a state.json written
 * before tollgate recorded one.  NULL when the recorded value is not a
 * valid id (state.json was tampered with).  Points into state or is id. */
const char *state_backend_id(const json_t *state, const char *id);

/* Replace <dir>/<name> atomically with json (mode 0600). */
int state_write_json(const char *dir, const char *name, const json_t *json,
                     tg_error **err);

/* Read and parse <dir>/<name> (a file tollgate wrote).  Owned tree. */
json_t *state_read_json(const char *dir, const char *name, tg_error **err);

/* Write a pid file the way containerd wants it: digits only, no newline,
 * replaced atomically (temp file + rename in the same directory). */
int state_write_pid_file(const char *path, long pid, tg_error **err);

/* Read a pid file a backend wrote (digits, maybe a newline). */
int state_read_pid_file(const char *path, long *pid, tg_error **err);

#endif
