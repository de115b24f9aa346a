/* Error and debug lines as runc writes them, so containerd can read ours.
 *
 * containerd's runc.v2 shim passes `--log FILE --log-format json` and, when
 * a command fails, shows the msg of the last error line in FILE.  With
 * --log-format text (or no --log) a line goes to stderr (or FILE) as plain
 * text.  Lines are appended with O_APPEND in one write(), so concurrent
 * tollgate and backend processes never interleave within a line.
 */
#ifndef TOLLGATE_LOG_H
#define TOLLGATE_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Format one runc-style JSON log line (with its trailing newline):
 * {"level":LEVEL,"msg":MSG,"time":TIME}.  Returns an owned string. */
char *log_format_json(const char *level, const char *msg, const char *time);

/* Format one text line: "tollgate: MSG\n" for errors, "tollgate: LEVEL:
 * MSG\n" otherwise.  Returns an owned string. */
char *log_format_text(const char *level, const char *msg);

/* Append one line at level ("error", "warning", "debug") to path, or to
 * stderr when path is NULL; json picks the format.  An error that has a
 * log file is also printed once on stderr, as runc does, so a person
 * running the command sees it.  Never fails (a log that cannot be written
 * falls back to stderr). */
void log_line(const char *path, bool json, const char *level, const char *msg);

#endif
