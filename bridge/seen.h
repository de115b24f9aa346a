/* The bridge's set of taken call ids (FNV-1a, open addressing): how the
 * watcher answers each id at most once, with memory bounded whatever the
 * container writes.
 *
 * Ids are remembered for replay checks.  At most max_tool_calls of them
 * can ever be answered with a result (every attempt counts toward the
 * cap), so the watcher never adds more than that (server_watcher.c); a
 * policy with a larger cap is served up to `max` ids at once, and ids
 * whose responses were collected make room (seen_purge).  Touched only by
 * the watcher thread, except the entries' marker_gone flags.
 */
#ifndef TOLLGATE_BRIDGE_SEEN_H
#define TOLLGATE_BRIDGE_SEEN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* An id the watcher has taken.  marker_gone: the worker removed its
 * req/<id>.done after answering (set after the unlink, read by the
 * watcher to tell a duplicate report of that marker from a replay). */
struct seen_id {
  atomic_bool marker_gone;
  char id[];
};

/* A set of taken ids, touched only by the watcher thread (the entries'
 * marker_gone flags excepted). */
struct seen_set {
  struct seen_id **slots;
  size_t cap, len;
  long long cap_calls;          /* the policy's max_tool_calls */
  size_t max;                   /* opt.seen_max */
  atomic_size_t count;          /* len, for the stats */
  unsigned long long last_purge; /* monotonic ns */
  bool last_purge_freed;        /* it freed a quarter of the set or more */
};

/* The entry for id, or NULL. */
struct seen_id *seen_find(struct seen_set *set, const char *id);

/* Remember id.  NULL when the set holds `max` ids: the caller then
 * refuses the call, because an id it cannot remember is an id it could
 * answer twice.  Entries never move (the table holds pointers), so a job
 * may keep one; the set owns it. */
struct seen_id *seen_add(struct seen_set *set, const char *id);

/* Forget the ids whose call is answered and whose response the caller
 * has collected (resp/<id>.done and .json gone from resp_fd): a later
 * marker for such an id is a fresh attempt, counted and governed like any
 * other, and can no longer overwrite an answer its first caller has not
 * read.  Entries still in flight (marker not gone) are kept, so no job's
 * pointer dies.  Sets last_purge_freed. */
void seen_purge(struct seen_set *set, int resp_fd);

/* Free every entry and the table. */
void seen_free(struct seen_set *set);

#endif
