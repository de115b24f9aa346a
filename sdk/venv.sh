#!/bin/sh
# sdk/venv.sh DIR: the project-local virtual environment of the host side,
# made once by `make deps` from sdk/requirements.lock (pinned, with hashes)
# and the SDK itself installed editable from sdk/.  Nothing is fetched
# when the lock has not changed since the last run (a stamp in DIR holds
# its digest), so tests and the demo never reach a registry.
set -eu
venv=${1:-.venv}
here=$(cd "$(dirname "$0")" && pwd)
lock=$here/requirements.lock
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.lock-sha256" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
py=${PYTHON:-python3}
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "sdk/venv.sh: $py is older than Python 3.11, which the SDK needs; set PYTHON=/path/to/python3.11+" >&2
  exit 1
}
echo "make deps: the Python environment $venv (from sdk/requirements.lock)"
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$lock"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --no-index -e "$here"
echo "$want" > "$venv/.lock-sha256"
