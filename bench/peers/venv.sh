#!/bin/sh
# bench/peers/venv.sh DIR: the bench's own virtual environment for the peers
# (bench/peers/requirements.lock: llm-sandbox, docker), made once by
# `make bench` from PyPI and never at test time.  The peers are installed
# --no-deps with their hashes checked; everything else (smolagents,
# promptise, pydantic, requests, the SDK) is the project's .venv, seen
# through a .pth placed after DIR's own site-packages.  Nothing is fetched
# when the lock and .venv are what the stamp says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${1:-$here/.venv}
base=$repo/.venv
lock=$here/requirements.lock
[ -x "$base/bin/python" ] || { echo "bench/peers/venv.sh: $base is missing: run 'make deps' first" >&2; exit 1; }
want=$( { sha256sum "$lock"; readlink -f "$base/bin/python"; } | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "bench: the peers' environment $venv (from bench/peers/requirements.lock)" >&2
rm -rf "$venv"
# The same interpreter as .venv's, so the .pth'd packages (compiled ones
# too: pydantic-core) fit.
"$base/bin/python" -m venv --without-pip "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
base_site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$base/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps \
  --target "$site" -r "$lock"
# After the venv's own packages: a peer here wins, the rest is .venv's.
# addsitedir, not a bare path, so .venv's own .pth files (the SDK's
# editable install) are read too.
echo "import site; site.addsitedir('$base_site')" > "$site/zz-project-venv.pth"
echo "$want" > "$venv/.stamp"
