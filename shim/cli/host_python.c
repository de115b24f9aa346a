/* See host_python.h. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/cli/host_python.h"
#include "base/hostconfig.h"
#include "base/util.h"

int host_python_exec(struct cli *cli, const char *verb, const char *module, char **args,
                     size_t nargs, tg_error **err) {
  cleanup_free char *pkg = host_config_data_path(&cli->config, "sdk/tollgate_sdk", err);
  if (pkg == NULL)
    return tg_error_wrap(err, "%s: the host SDK (tollgate_sdk) is needed", verb);
  cleanup_free char *pkg_parent = xstrdup(pkg);
  char *slash = strrchr(pkg_parent, '/');
  if (slash != NULL)
    *slash = '\0';
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0)
    return tg_error_set(err, errno, "%s: cannot find tollgate's own binary", verb);
  self[n] = '\0';

  const char *python = getenv("TOLLGATE_PYTHON");
  cleanup_free char *venv = NULL;
  if (python == NULL || *python == '\0') {
    static const char lib[] = "/lib/tollgate";
    size_t len = strlen(pkg_parent);
    bool installed = len >= sizeof lib - 1 && strcmp(pkg_parent + len - (sizeof lib - 1), lib) == 0;
    venv = xasprintf(installed ? "%s/venv/bin/python3" : "%s/../.venv/bin/python3", pkg_parent);
    if (access(venv, X_OK) == 0)
      python = venv;
    else
      python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  }
  char **argv = xmalloc((nargs + 6) * sizeof *argv);
  size_t k = 0;
  argv[k++] = (char *)python;
  argv[k++] = "-m";
  argv[k++] = (char *)module;
  argv[k++] = "--tollgate";
  argv[k++] = self;
  for (size_t i = 0; i < nargs; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  const char *old = getenv("PYTHONPATH");
  cleanup_free char *pp = old && *old ? xasprintf("%s:%s", pkg_parent, old) : xstrdup(pkg_parent);
  if (setenv("PYTHONPATH", pp, 1) < 0) {
    free(argv);
    return tg_error_set(err, errno, "%s: setenv PYTHONPATH", verb);
  }
  fflush(NULL);
  execvp(python, argv);
  int e = errno;
  free(argv);
  return tg_error_set(err, e, "%s: cannot run %s (set TOLLGATE_PYTHON to a Python 3.11 or newer)",
                      verb, python);
}
