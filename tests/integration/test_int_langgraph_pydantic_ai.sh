#!/usr/bin/env bash
# The LangGraph and Pydantic AI adapters (sdk/tollgate_sdk/integrations/,
# docs/integrations.md) with the real pinned packages and scripted models
# (no network, no LLM), under each backend: the model's code runs in a
# tollgate container, one governed call is allowed, one denied by policy,
# two parked calls are answered through the framework's own mechanism
# (LangGraph: interrupt() and Command(resume=...); Pydantic AI: deferred
# tool requests and DeferredToolResults), the audit log verifies, and an
# abandoned graph or run leaves nothing running; docs/integrations.md's
# examples run as written.  The drivers are
# tests/integrations/{langgraph,pydantic_ai}_run.py, one Sandbox each per
# backend.
. "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
drivers=$repo/tests/integrations
project_python
check "make built the Python rootfs beside build/tollgate" test -x "$BUILD/rootfs/python/usr/bin/python3"

# docs/integrations.md's examples, as written (the drivers run them under runsc)
for ex in langgraph_example.py pydantic_ai_example.py; do
  doc_block "$repo/docs/integrations.md" "$ex" > "$TG_ROOT/$ex"
  check "docs/integrations.md has the $ex block" test -s "$TG_ROOT/$ex"
done

for backend in $BACKENDS; do
  for fw in langgraph pydantic_ai; do
    TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python timeout 300 "$PY" "$drivers/${fw}_run.py" "$backend" "$TG_ROOT"
    check_eq "$backend: $fw: the driver exits 0" 0 "$?"
    # The driver's Sandbox kept its containers under this root: none may be left.
    left=$("$TG" --root "$TG_ROOT/root-$fw-$backend" list -q 2>/dev/null)
    check_eq "$backend: $fw: no container left in the Sandbox's root" "" "$left"
  done
done
