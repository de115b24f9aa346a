#!/usr/bin/env bash
# The session cell channel (issue 41, bridge/client/kernel.py and
# sdk/tollgate_sdk/_cells.py) under a hostile program, per backend:
# requests it cannot write, planted answers, FIFOs and links the host
# never takes, a flood of the area, output caps, CellTimeout, streaming
# (tests/sdk/cells_hostile.py says what each check proves).
. "$(dirname "$0")/lib.sh"
sdk_tests=$(cd "$(dirname "$0")/../sdk" && pwd)
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python"
for backend in $BACKENDS; do
  TG=$TG TOLLGATE=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python timeout 600 python3 "$sdk_tests/cells_hostile.py" "$backend" "$TG_ROOT"
  check_eq "$backend: the cell channel driver exits 0" 0 "$?"
done
