/* The private bundle the backend reads (backend_bundle.h says why). */
#include "shim/lifecycle/backend_bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define BACKEND_BUNDLE_DIR "bundle"

char *backend_bundle_path(const char *state_dir) {
  return xasprintf("%s/" BACKEND_BUNDLE_DIR, state_dir);
}

static bool is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  if (type != NULL && strcmp(type, "bind") == 0)
    return true;
  const json_t *opts = json_object_get(m, "options");
  for (size_t i = 0; i < json_array_len(opts); i++) {
    const char *o = json_string_value(json_array_get(opts, i));
    if (o != NULL && (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0))
      return true;
  }
  return false;
}

static bool is_relative(const char *p) {
  return p != NULL && p[0] != '\0' && p[0] != '/';
}

/* Make *field (a string) absolute against bundle when it is relative.
 * true when it changed. */
static bool absolutise(json_t *obj, const char *key, const char *bundle) {
  const char *p = json_string_value(json_object_get(obj, key));
  if (!is_relative(p))
    return false;
  char *abs = xasprintf("%s/%s", bundle, p);
  json_object_set(obj, key, json_new_string(abs));
  free(abs);
  return true;
}

/* A copy of config with its relative root.path and bind sources made
 * absolute against bundle, or NULL when it has none. */
static json_t *absolute_copy(const json_t *config, const char *bundle) {
  bool relative = is_relative(json_string_value(json_get_path(config, "root.path")));
  const json_t *mounts = json_object_get(config, "mounts");
  for (size_t i = 0; !relative && i < json_array_len(mounts); i++) {
    const json_t *m = json_array_get(mounts, i);
    relative = is_bind(m) && is_relative(json_string_value(json_object_get(m, "source")));
  }
  if (!relative)
    return NULL;
  json_t *copy = json_copy(config);
  json_t *root = json_object_get(copy, "root");
  if (json_is(root, JSON_OBJECT))
    absolutise(root, "path", bundle);
  json_t *ms = json_object_get(copy, "mounts");
  for (size_t i = 0; i < json_array_len(ms); i++) {
    json_t *m = json_array_get(ms, i);
    if (json_is(m, JSON_OBJECT) && is_bind(m))
      absolutise(m, "source", bundle);
  }
  return copy;
}

int backend_bundle_write(const char *state_dir, const char *user_bundle,
                         const json_t *config, const char *eff, size_t eff_len,
                         tg_error **err) {
  cleanup_free char *dir = backend_bundle_path(state_dir);
  /* 0711: the backend (host root) reads it; a container's mapped root
   * may need to pass it as its init's working directory, and the state
   * directory above keeps every other host user out. */
  if (mkdir(dir, 0711) < 0 && errno != EEXIST)
    return tg_error_set(err, errno, "the backend's bundle %s", dir);
  cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return tg_error_set(err, errno, "open the backend's bundle %s", dir);
  cleanup_json json_t *copy = absolute_copy(config, user_bundle);
  cleanup_free char *dumped = NULL;
  if (copy != NULL) {
    dumped = json_dump_checked(copy, true, &eff_len, err);
    if (dumped == NULL)
      return tg_error_wrap(err, "the backend's bundle %s", dir);
    eff = dumped;
  }
  if (write_file_atomic(fd, "config.json", eff, eff_len, 0600, false, err) < 0)
    return tg_error_wrap(err, "the backend's bundle %s", dir);
  return 0;
}
