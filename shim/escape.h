/* Text from a container made safe for a terminal.
 *
 * Anything a container wrote (tool names, argument keys and values,
 * reasons, messages) may hold newlines, which would forge table rows, and
 * escape sequences, which a terminal would obey.  Table output passes
 * every such string through here first.
 */
#ifndef TOLLGATE_ESCAPE_H
#define TOLLGATE_ESCAPE_H

#include <stdbool.h>

/* s with every control byte (C0, DEL), every C1 control (U+0080..U+009F)
 * and every byte that is not valid UTF-8 written as an escape: \n, \r, \t
 * and \xNN (C1 as \u0080..\u009f), and a backslash doubled, so the result
 * is one line of printable text and unambiguous.  json_text: s is JSON
 * text (a dump), whose backslashes are its own escapes: they are left
 * alone and the escapes are \u00NN, so the result stays valid JSON.
 * NULL gives "".  Owned by the caller. */
char *escape_for_terminal(const char *s, bool json_text);

#endif
