/* The host side in Python (sdk/tollgate_sdk): the verbs that are Python
 * programs (mcp, serve) find the SDK beside this binary and the Python
 * that has its pinned dependencies, and exec it. */
#ifndef TOLLGATE_HOST_PYTHON_H
#define TOLLGATE_HOST_PYTHON_H

#include "base/error.h"
#include "shim/context.h"

/* exec `PYTHON -m MODULE --tollgate SELF ARGS...` with the SDK first on
 * PYTHONPATH.  The interpreter is $TOLLGATE_PYTHON, else the project's
 * virtual environment beside the SDK that `make deps` made (.venv in the
 * source tree, lib/tollgate/venv in an install), else the
 * distribution's; never whatever a PATH happens to put first.  Returns
 * only on failure: -1 with *err naming VERB. */
int host_python_exec(struct cli *cli, const char *verb, const char *module, char **args,
                     size_t nargs, tg_error **err);

#endif
