/* Internal to bridge/: the bridge server's responses (see server_state.h
 * for how the server's parts fit).  What a worker does with a job: pass
 * the call through the gate, write its response, keep the space reserve
 * that lets a full bridge area still be reported, and remove the request
 * files once answered.
 *
 * Nothing here reads container bytes: requests arrive parsed (the
 * watcher, server_watcher.c, read them), responses are written and
 * request files removed only through respond.h, which never opens what it
 * removes and never follows a link, and only with ids the watcher
 * validated (bridge_classify_name).
 */
#ifndef TOLLGATE_BRIDGE_SERVER_ANSWER_H
#define TOLLGATE_BRIDGE_SERVER_ANSWER_H

#include <stdbool.h>

#include "bridge/server_state.h"

struct job;

/* Run one job on a worker thread: govern and answer a call, record a
 * refusal, remake the reserve or flush the refusal summaries.  j stays the
 * caller's to free. */
void answer_job(struct bridge_service *s, struct job *j);

/* A taken call's request files, once it is answered (or dropped): the
 * body, then the marker, then the mark that the marker is gone. */
void answer_remove_request_files(struct bridge_service *s, struct job *j);

/* Hold RESERVE_BYTES of the area in <area>/.reserve, unless held already. */
void answer_make_reserve(struct bridge_service *s);

/* Whether the reserve was given up (to answer on a full area) and is to
 * be made again (a JOB_RESERVE). */
bool answer_reserve_missing(struct bridge_service *s);

#endif
