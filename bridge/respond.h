/* Writing responses into, and removing entries from, the directories the
 * container shares (calls/req, calls/resp), without following anything it
 * planted there.  Used by the bridge server's workers and by the sidecar's
 * supervisor, which answers the calls a dead sidecar left in flight.
 */
#ifndef TOLLGATE_BRIDGE_RESPOND_H
#define TOLLGATE_BRIDGE_RESPOND_H

#include <stdbool.h>
#include <stddef.h>

/* Remove parent/name: a file, or a directory tree up to a small depth
 * (deeper trees stay; the area's size bounds them).  No link is followed.
 * true when this call removed it (an entry reported twice is counted
 * once). */
bool bridge_remove_entry(int parent, const char *name);

/* Write resp/<id>.json, then the resp/<id>.done marker (a client reads
 * the body only once the marker exists).  Whatever the container planted
 * at either name is removed, never written through.  id must be valid
 * (bridge_id_is_valid).  0, or -1 with errno (ENOSPC: the area is full;
 * nothing half-written is left). */
int bridge_write_response(int resp_fd, const char *id, const char *body, size_t len);

/* The calls a dead sidecar left behind: every valid request marker still
 * in calls/req, answered with one error body and removed. */
struct bridge_orphans {
  char **ids;               /* the first `max_listed` ids found (owned):
                               answered, already answered or failed */
  size_t nids;
  unsigned long long unlisted; /* ids found past the list */
  unsigned long long already;  /* markers whose response was already out */
  unsigned long long failed;   /* markers that could not be answered */
};

/* Answer every call marker in req_fd with body (an error response) in
 * resp_fd, unless its response marker is already there, and remove its
 * request files, so no later sidecar runs a call that may have run.  The
 * work is bounded by the directory's entries, which the area's inode limit
 * bounds: each entry costs a few system calls, the body is never read and
 * nothing but valid ids becomes a path.  Returns the number answered. */
unsigned long long bridge_answer_orphans(int req_fd, int resp_fd, const char *body, size_t len,
                                         size_t max_listed, struct bridge_orphans *out);

void bridge_orphans_free(struct bridge_orphans *o);

#endif
