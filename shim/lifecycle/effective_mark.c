/* The effective config's mark (shim/lifecycle/effective_mark.h). */
#include "shim/lifecycle/effective_mark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/util.h"

#define MARK_MAX_BYTES 4096
/* What older tollgates put in the effective config instead of the mark:
 * still recognised, so a bundle they rewrote is not hardened twice. */
#define LEGACY_EFFECTIVE_ANNOTATION "dev.tollgate.effective"

/* The mark beside config.json (untrusted: the bundle is the user's), or
 * an empty owned string. */
static char *read_mark(int bundle_fd) {
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(bundle_fd, EFFECTIVE_MARK, MARK_MAX_BYTES, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return xstrdup("");
  }
  return buf;
}

bool effective_mark_is_ours(int bundle_fd, const char *data, size_t len, const json_t *parsed) {
  const char *legacy = json_string_value(json_object_get(
      json_object_get(parsed, "annotations"), LEGACY_EFFECTIVE_ANNOTATION));
  if (legacy != NULL && strcmp(legacy, "true") == 0)
    return true;
  char digest[DIGEST_TEXT_SIZE];
  /* No digest, no match: the config is taken as the user's and hardened,
   * never trusted as already ours. */
  if (digest_buffer_text(data, len, digest, NULL) < 0)
    return false;
  cleanup_free char *mark = read_mark(bundle_fd);
  size_t dl = strlen(digest);
  for (const char *line = mark; *line != '\0';) {
    const char *end = strchr(line, '\n');
    size_t ll = end ? (size_t)(end - line) : strlen(line);
    if (ll == dl && memcmp(line, digest, dl) == 0)
      return true;
    if (end == NULL)
      break;
    line = end + 1;
  }
  return false;
}

int effective_mark_write(int bundle_fd, const char *bundle, const char *eff, size_t eff_len,
                         const char *replaced, size_t replaced_len, bool replaced_ours,
                         tg_error **err) {
  char now[DIGEST_TEXT_SIZE], before[DIGEST_TEXT_SIZE];
  if (digest_buffer_text(eff, eff_len, now, err) < 0)
    return tg_error_wrap(err, "bundle %s", bundle);
  cleanup_free char *text = NULL;
  if (replaced_ours) {
    if (digest_buffer_text(replaced, replaced_len, before, err) < 0)
      return tg_error_wrap(err, "bundle %s", bundle);
    text = xasprintf("%s\n%s\n", now, before);
  } else {
    text = xasprintf("%s\n", now);
  }
  if (write_file_atomic(bundle_fd, EFFECTIVE_MARK, text, strlen(text), 0644, false, err) < 0)
    return tg_error_wrap(err, "bundle %s", bundle);
  return 0;
}
