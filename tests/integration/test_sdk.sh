#!/usr/bin/env bash
# The host Python SDK (sdk/tollgate_sdk, docs/sdk.md): its unit tests
# (schema derivation, the socket tool server under hostile input, the
# LangChain-shaped adapter), then, under each backend, real containers: the
# orders example on the SDK, a session of two cells, an async tool, approval
# callbacks that deny, ProgramFailed, PolicyError, the self-repair helper,
# and SandboxUnavailable with nothing run on the host.
. "$(dirname "$0")/lib.sh"
sdk_tests=$(cd "$(dirname "$0")/../sdk" && pwd)

"$PY" "$sdk_tests/run_unit.py" 2>"$TG_ROOT/unit.err"
[ -s "$TG_ROOT/unit.err" ] && grep -v '^$' "$TG_ROOT/unit.err" | grep -iv 'warning' | sed 's/^/   # /' | tail -n 40

bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python"
# run_shell needs a shell in the rootfs (cached like the other).
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python-shell" --shell
for backend in $BACKENDS; do
  TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python TOLLGATE_SHELL_ROOTFS=$BUILD/rootfs/python-shell timeout 600 "$PY" "$sdk_tests/integration.py" "$backend" "$TG_ROOT"
  status=$?
  check_eq "$backend: the SDK integration driver exits 0" 0 "$status"
done
