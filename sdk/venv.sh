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
# The build backend's wheel (setuptools, pinned and hashed by the lock) in
# DIR/wheels: `pip install --no-index --find-links DIR/wheels ./sdk` then
# builds the SDK in a fresh virtual environment with nothing fetched
# (tests/integration/test_sdk.sh does, as the README's quick start says).
# lock_entry NAME [--without]: NAME's entry of the lock (its pin and
# hashes), or with --without the lock but that entry.
lock_entry() {
  awk -v name="$1==" -v without="${2:-}" '
    index($0, name) == 1 {p = 1}
    (p && without == "") || (!p && without != "") {print}
    p && !/\\$/ {p = 0}' "$lock"
}
backend_wheel() {
  ls "$venv"/wheels/setuptools-*.whl >/dev/null 2>&1 && return 0
  lock_entry setuptools > "$venv/backend.req"
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
    -r "$venv/backend.req" -d "$venv/wheels"
}
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.lock-sha256" 2>/dev/null)" = "$want" ]; then
  backend_wheel
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
# The lock's packages through uv, pinned and hashed in the lock itself:
# pip takes 75-90 s here to fetch and install them one after another (a
# fresh clone's `make check` pays it), uv 15 s with the bytecode.  pip
# alone when uv cannot be installed on this platform.
lock_entry uv > "$venv/uv.req"
if "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$venv/uv.req" &&
   "$venv/bin/uv" pip install -q --no-cache --compile-bytecode --python "$venv/bin/python" \
     --require-hashes --no-deps -r "$lock"; then
  :
else
  echo "sdk/venv.sh: uv could not install the lock; installing it with pip" >&2
  # (without uv itself: where it failed, it has no wheel for this platform)
  lock_entry uv --without > "$venv/rest.req"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$venv/rest.req"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --no-index -e "$here"
backend_wheel
echo "$want" > "$venv/.lock-sha256"
