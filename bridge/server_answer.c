/* The bridge server's responses: govern a job and answer it; see
 * server_answer.h.  Runs on the workers.  Reads no container bytes: the
 * container-shared directories are written and cleaned only through
 * respond.h, with ids the watcher validated. */
#include "bridge/server_answer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bridge/protocol.h"
#include "bridge/respond.h"
#include "bridge/server_pool.h"
#include "base/util.h"

#define RESERVE_NAME ".reserve"
#define RESERVE_BYTES (128 * 1024)    /* room for error responses when full */
#define BRIDGE_FULL "bridge_full"

void answer_remove_request_files(struct bridge_service *s, struct job *j) {
  if (j->kind != JOB_CALL || (j->seen == NULL && !j->claimed))
    return;
  char name[BRIDGE_ID_MAX + 8];
  snprintf(name, sizeof name, "%s.json", j->id);
  bridge_remove_entry(s->opt.req_fd, name);
  if (j->claimed) { /* its marker is gone already, and it is not in the set */
    j->claimed = false;
    return;
  }
  snprintf(name, sizeof name, "%s.done", j->id);
  bridge_remove_entry(s->opt.req_fd, name);
  atomic_store(&j->seen->marker_gone, true);
  j->seen = NULL;
}

static int write_response_once(struct bridge_service *s, const char *id,
                               const char *body, size_t len) {
  return bridge_write_response(s->opt.resp_fd, id, body, len);
}

/* The reserve lives in the area's root, which is host root's (0755,
 * read-only in the container): nothing there was planted. */
static void release_reserve(struct bridge_service *s) {
  pthread_mutex_lock(&s->reserve_mu);
  if (s->reserve_present) {
    unlinkat(s->opt.area_fd, RESERVE_NAME, 0);
    s->reserve_present = false;
  }
  pthread_mutex_unlock(&s->reserve_mu);
}

void answer_make_reserve(struct bridge_service *s) {
  pthread_mutex_lock(&s->reserve_mu);
  if (!s->reserve_present) {
    int fd = openat(s->opt.area_fd, RESERVE_NAME,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      if (posix_fallocate(fd, 0, RESERVE_BYTES) == 0)
        s->reserve_present = true;
      else
        unlinkat(s->opt.area_fd, RESERVE_NAME, 0);
      close(fd);
    }
  }
  pthread_mutex_unlock(&s->reserve_mu);
}

bool answer_reserve_missing(struct bridge_service *s) {
  pthread_mutex_lock(&s->reserve_mu);
  bool need_reserve = !s->reserve_present;
  pthread_mutex_unlock(&s->reserve_mu);
  return need_reserve;
}

static void write_response(struct bridge_service *s, const char *id,
                           const char *body, size_t len) {
  if (write_response_once(s, id, body, len) == 0) {
    atomic_fetch_add(&s->st.answered, 1);
    return;
  }
  if (errno != ENOSPC && errno != EDQUOT)
    return; /* nothing more we can do; the client times out */
  /* The container filled the bridge area.  Give back the space held in
   * reserve so the caller hears why, rather than waiting for a timeout. */
  atomic_fetch_add(&s->st.no_space, 1);
  release_reserve(s);
  if (write_response_once(s, id, body, len) == 0) {
    atomic_fetch_add(&s->st.answered, 1);
    return;
  }
  char *msg = xasprintf("the bridge area /run/tollgate/calls is full, so the "
                        "response (%zu bytes) could not be written; remove "
                        "files from /run/tollgate/calls and call again", len);
  size_t elen;
  char *err_body = bridge_error_body(BRIDGE_FULL, msg, &elen);
  if (write_response_once(s, id, err_body, elen) == 0)
    atomic_fetch_add(&s->st.answered, 1);
  free(msg);
  free(err_body);
}

void answer_job(struct bridge_service *s, struct job *j) {
  switch (j->kind) {
  case JOB_CALL: {
    if (j->withdrawn) {
      gate_record_refused(s->opt.gate, GATE_REFUSED_WITHDRAWN, j->id, j->reason);
      answer_remove_request_files(s, j);
      break;
    }
    size_t len = 0;
    char *body = gate_handle(s->opt.gate, j->id, j->request,
                             j->request ? NULL : j->reason, &len);
    if (body != NULL)
      write_response(s, j->id, body, len);
    free(body);
    answer_remove_request_files(s, j);
    break;
  }
  case JOB_REFUSED:
    gate_record_refused(s->opt.gate, j->refusal, j->id[0] ? j->id : NULL, j->reason);
    if (j->refusal == GATE_REFUSED_UNREMEMBERED) {
      size_t len;
      char *body = bridge_error_body(BRIDGE_FULL, j->reason, &len);
      write_response(s, j->id, body, len);
      free(body);
    }
    break;
  case JOB_RESERVE:
    answer_make_reserve(s);
    break;
  case JOB_FLUSH:
    gate_flush_refusals(s->opt.gate);
    break;
  }
}
