#include "base/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "base/term_escape.h"
#include "base/util.h"

char *log_format_json(const char *level, const char *msg, const char *time) {
  /* yajl does the escaping, so a message holding quotes, newlines or
   * control bytes from a backend still yields one valid JSON line. */
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  const char *keys[] = {"level", "msg", "time"};
  const char *vals[] = {level, msg, time};
  yajl_gen_map_open(g);
  for (size_t i = 0; i < 3; i++) {
    yajl_gen_string(g, (const unsigned char *)keys[i], strlen(keys[i]));
    yajl_gen_string(g, (const unsigned char *)vals[i], strlen(vals[i]));
  }
  yajl_gen_map_close(g);
  const unsigned char *buf = NULL;
  size_t len = 0;
  yajl_gen_get_buf(g, &buf, &len);
  char *line = xasprintf("%.*s\n", (int)len, (const char *)buf);
  yajl_gen_free(g);
  return line;
}

char *log_format_text(const char *level, const char *msg) {
  if (strcmp(level, "error") == 0)
    return xasprintf("tollgate: %s\n", msg);
  return xasprintf("tollgate: %s: %s\n", level, msg);
}

void log_line(const char *path, bool json, const char *level, const char *raw) {
  /* A message can quote what a container or a config.json author wrote (a
   * tool's error, a path, the backend's stderr): a person reads it, in a
   * terminal or through containerd, so it is escaped like a table cell. */
  cleanup_free char *msg = escape_message(raw);
  char now[40];
  rfc3339_now(now, sizeof now);
  cleanup_free char *line =
      json ? log_format_json(level, msg, now) : log_format_text(level, msg);
  bool is_error = strcmp(level, "error") == 0;
  if (path != NULL) {
    cleanup_close int fd =
        open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd >= 0 && write_all(fd, line, strlen(line)) == 0) {
      if (is_error) {
        cleanup_free char *text = log_format_text(level, msg);
        (void)write_all(STDERR_FILENO, text, strlen(text));
      }
      return;
    }
  }
  if (path != NULL || !json) {
    cleanup_free char *text = log_format_text(level, msg);
    (void)write_all(STDERR_FILENO, text, strlen(text));
    return;
  }
  (void)write_all(STDERR_FILENO, line, strlen(line));
}
