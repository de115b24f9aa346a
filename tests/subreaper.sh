# Sourced first by tests/integration/run.sh and bench/run.sh: run the
# calling script again under a subreaper that reaps at once (tini -s).
#
# A runsc sandbox is an orphan once `runsc create` returns, and `runsc
# delete` waits until the sandbox's process is gone.  Without a subreaper
# the orphan is PID 1's to reap, and where PID 1 reaps late (this
# machine's does: zombies seconds old) every delete of a runsc container
# waited for it, 1-2 s each (5 create/start/kill/delete cycles: 10.1 s,
# 1.1 s under tini -s).  A host's init, or containerd's shim, reaps at
# once, so this is the host the scripts are meant to see.
if [ "${TG_SUBREAPED:-}" != 1 ]; then
  command -v tini >/dev/null || { echo "$0: tini is missing: run 'make deps'" >&2; exit 2; }
  export TG_SUBREAPED=1
  exec tini -s -- bash "$0" "$@"
fi
