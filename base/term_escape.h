/* Text from a container made safe for a terminal.
 *
 * Anything a container wrote (tool names, argument keys and values,
 * reasons, messages) may hold newlines, which would forge table rows,
 * escape sequences, which a terminal would obey, and Unicode format
 * characters (bidi overrides such as U+202E, zero-width characters), which
 * make a terminal show text other than what it holds: a parked call's
 * arguments reordered in front of the person approving it.  Every place
 * that shows such text to a person passes it through here first: the
 * tables of pending, calls and audit show, their --format json output, and
 * every error and log line (log.c).
 */
#ifndef TOLLGATE_ESCAPE_H
#define TOLLGATE_ESCAPE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether code point cp is one a terminal must not be handed raw though it
 * is valid UTF-8: a C1 control (U+0080..U+009F), a format character
 * (general category Cf: bidi marks, embeddings, overrides and isolates,
 * zero-width characters, word joiner and invisible operators, U+FEFF,
 * soft hyphen, interlinear annotation, tags, and the rest of Cf), the
 * line and paragraph separators U+2028/U+2029, or a code point reserved
 * as invisible (U+2065, U+E0000..U+E007F).  C0 and DEL are single bytes
 * and escaped separately. */
bool escape_code_point_is_hidden(uint32_t cp);

/* s with every control byte (C0, DEL), every code point that
 * escape_code_point_is_hidden() names and every byte that is not valid
 * UTF-8 written as an escape: \n, \r, \t, \xNN for other bytes, \uNNNN
 * for a code point (\UNNNNNNNN past U+FFFF), and a backslash doubled, so
 * the result is one line of printable text and unambiguous.  json_text: s
 * is JSON text (a dump), whose backslashes are its own escapes: they are
 * left alone, so are newlines, tabs and carriage returns (whitespace
 * between its tokens: a dump escapes them inside strings), and the escapes
 * are JSON's own (\u00NN, \uNNNN, a surrogate pair past U+FFFF, \ufffd
 * for a byte that is not UTF-8), so the result is valid JSON that decodes
 * to the same value, pretty or compact.  NULL gives "".  Owned by the
 * caller. */
char *escape_for_terminal(const char *s, bool json_text);

/* An error or log message made safe the same way, but kept readable: a
 * newline and a tab stay (a message may span lines), a backslash is not
 * doubled.  Everything else escape_for_terminal escapes is escaped.
 * NULL gives "".  Owned by the caller. */
char *escape_message(const char *s);

#endif
