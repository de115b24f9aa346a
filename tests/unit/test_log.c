#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/log.h"
#include "base/util.h"

Test(log, json_line_is_runc_shaped) {
  char *line = log_format_json("error", "container x does not exist",
                               "2026-12-02T16:00:00Z");
  cr_assert_str_eq(line, "{\"level\":\"error\",\"msg\":\"container x does "
                         "not exist\",\"time\":\"2026-12-02T16:00:00Z\"}\n");
  free(line);
}

Test(log, json_line_escapes_quotes_and_newlines) {
  char *line = log_format_json("error", "bad \"x\"\nnext\ttab\x01", "t");
  cr_assert_eq(strchr(line, '\n'), line + strlen(line) - 1,
               "one line only: %s", line);
  json_t *v = json_parse(line, strlen(line), NULL, NULL);
  cr_assert_not_null(v);
  cr_assert_str_eq(json_string_value(json_object_get(v, "msg")),
                   "bad \"x\"\nnext\ttab\x01");
  json_free(v);
  free(line);
}

Test(log, text_line) {
  char *line = log_format_text("error", "boom");
  cr_assert_str_eq(line, "tollgate: boom\n");
  free(line);
  line = log_format_text("warning", "careful");
  cr_assert_str_eq(line, "tollgate: warning: careful\n");
  free(line);
}

Test(log, appends_json_lines_with_rfc3339_utc_time) {
  char path[] = "/tmp/tg-log-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  int saved = dup(STDERR_FILENO);
  int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDERR_FILENO);
  log_line(path, true, "error", "first");
  log_line(path, true, "error", "second");
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(devnull);
  char *buf = NULL;
  cr_assert_eq(read_file(path, 4096, &buf, NULL, NULL), 0);
  unlink(path);
  char *nl = strchr(buf, '\n');
  cr_assert_not_null(nl);
  *nl = '\0';
  json_t *a = json_parse(buf, strlen(buf), NULL, NULL);
  json_t *b = json_parse(nl + 1, strlen(nl + 1) - 1, NULL, NULL);
  cr_assert_not_null(a);
  cr_assert_not_null(b);
  cr_assert_str_eq(json_string_value(json_object_get(a, "msg")), "first");
  cr_assert_str_eq(json_string_value(json_object_get(b, "level")), "error");
  const char *t = json_string_value(json_object_get(b, "time"));
  cr_assert_not_null(t);
  /* 2026-12-02T16:21:10.123456789Z */
  cr_assert_eq(strlen(t), 30, "%s", t);
  cr_assert_eq(t[10], 'T');
  cr_assert_eq(t[strlen(t) - 1], 'Z');
  json_free(a);
  json_free(b);
  free(buf);
}
