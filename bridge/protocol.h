/* The bridge wire protocol, host side: call ids, file names under
 * calls/req and calls/resp, request validation and error bodies.
 *
 * Everything here works on bytes that came from the container, so nothing
 * trusts its input: ids are checked before they become part of a path,
 * requests are parsed with a nesting limit and checked field by field.
 * docs/bridge-protocol.md is the full description for client writers.
 */
#ifndef TOLLGATE_BRIDGE_PROTOCOL_H
#define TOLLGATE_BRIDGE_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/json.h"

#define BRIDGE_PROTOCOL_VERSION 1
#define BRIDGE_ID_MAX 64              /* longest call id accepted */
#define BRIDGE_TOOL_NAME_MAX 128      /* longest tool name accepted */
#define BRIDGE_REQUEST_DEPTH 32       /* nesting limit of a request body */
#define BRIDGE_DEFAULT_REQUEST_MAX (64 * 1024)

/* True when s[0..len) is a call id: [A-Za-z0-9_-]{1,64}.  Only such an id
 * may ever be joined into a file name. */
bool bridge_id_is_valid(const char *s, size_t len);

/* What a directory entry under calls/req is. */
enum bridge_name_kind {
  BRIDGE_NAME_TEMP,       /* ".<anything>" not ending in .done: a client's
                             file being written */
  BRIDGE_NAME_BODY,       /* "<id>.json" */
  BRIDGE_NAME_MARKER,     /* "<id>.done": the request is ready */
  BRIDGE_NAME_BAD_MARKER, /* "<not an id>.done" (".x.done", "..done" too):
                             an attempt with a bad id */
  BRIDGE_NAME_JUNK,       /* anything else */
};

/* Classify a file name found in calls/req.  For BODY and MARKER the id is
 * copied NUL-terminated into id (BRIDGE_ID_MAX + 1 bytes). */
enum bridge_name_kind bridge_classify_name(const char *name,
                                           char id[BRIDGE_ID_MAX + 1]);

/* Parse and validate a request body: {"v":1,"tool":NAME,"args":{...}},
 * nothing else, nesting at most BRIDGE_REQUEST_DEPTH.  Returns the parsed
 * tree (owned by the caller), or NULL with *bad_reason set to an owned
 * message that tells the client writer what is wrong and how to fix it. */
json_t *bridge_parse_request(const char *buf, size_t len, char **bad_reason);

/* An error response body {"v":1,"ok":false,"error":{"code":..,"message":..}}.
 * Owned by the caller; *len (optional) gets its length. */
char *bridge_error_body(const char *code, const char *message, size_t *len);

#endif
