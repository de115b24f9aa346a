/* One bridge call as the benchmark client makes it.
 *
 * The benchmark must measure the client that ships, not a private variant
 * of the protocol: client_call.c takes exactly the steps of the static
 * client bridge/client/tollgate-call.c (see the comment there for why it is
 * a copy), and callbench -x also times that program itself.
 */
#ifndef TOLLGATE_BENCH_CLIENT_CALL_H
#define TOLLGATE_BENCH_CLIENT_CALL_H

#include <stdbool.h>

/* Call tool with args (a JSON object text) through calls_dir (the
 * container's /run/tollgate/calls; the first call fixes it for the whole
 * process).  Returns 0 and the whole response body in *resp (malloc'd,
 * owned by the caller; it may be an error response), or a negative errno
 * with *resp NULL when no response arrived. */
int bench_client_call(const char *calls_dir, const char *tool,
                      const char *args, char **resp);

#endif
