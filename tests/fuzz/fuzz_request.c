/* libFuzzer target: the bridge's request parser and validator, and the
 * classification of file names found in calls/req -- everything the host
 * does with container bytes before the gate sees them.
 *
 * FUZZ_SOURCES: bridge/protocol.c base/json.c base/json_parse.c base/json_write.c base/utf8.c base/util.c base/error.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *why = NULL;
  json_t *req = bridge_parse_request((const char *)data, size, &why);
  if (req != NULL) {
    /* What the validator promises the gate. */
    const json_t *tool = json_object_get(req, "tool");
    if (!json_is(tool, JSON_STRING) || !json_is(json_object_get(req, "args"), JSON_OBJECT))
      abort();
    if (why != NULL)
      abort();
    size_t len = 0;
    free(json_dump(req, false, &len));
    json_free(req);
  } else if (why == NULL) {
    abort();
  }
  free(why);

  /* The same bytes as a file name (up to NUL or 255 bytes). */
  char name[256];
  size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
  memcpy(name, data, n);
  name[n] = '\0';
  char id[BRIDGE_ID_MAX + 1];
  enum bridge_name_kind k = bridge_classify_name(name, id);
  if (k == BRIDGE_NAME_MARKER || k == BRIDGE_NAME_BODY) {
    /* An id that reaches a path is always a valid one. */
    if (!bridge_id_is_valid(id, strlen(id)) || strchr(id, '/') || strchr(id, '.'))
      abort();
  }
  return 0;
}
