"""Reading a tollgate audit log (JSON lines) as a list of calls.

Shared by the orders demo's report and the agent harness.  The log's format
is documented in docs/audit.md; `tollgate audit verify` checks its chain,
this only reads it.
"""
import json


def read_audit(path):
    """The records of one audit log (JSON lines), or [] if there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def record_kind(record):
    return record.get("event") or record.get("type") or record.get("kind") or "call"


def calls_in(records):
    """One entry per call attempt in a log: {"call", "tool", "args",
    "decision", "outcome", "seq"}.  An irreversible tool's call has an
    `intent` record written before the tool runs and an `outcome` record
    after; they share a call id and are merged here."""
    calls = {}
    order = []
    for r in records:
        kind = record_kind(r)
        if kind in ("open", "opened", "closed", "close"):
            continue
        key = r.get("call_id") or r.get("call") or "seq-%s" % r.get("seq")
        c = calls.get(key)
        if c is None:
            c = calls[key] = {"call": key, "tool": r.get("tool"), "args": r.get("args"),
                              "decision": None, "outcome": None, "seq": r.get("seq"),
                              "intent": False}
            order.append(key)
        for k in ("decision", "reason", "approver"):
            if r.get(k):
                c[k] = r[k]
        if kind == "intent":
            c["intent"] = True
        if r.get("outcome"):
            c["outcome"] = r["outcome"]
        if c["args"] is None and r.get("args") is not None:
            c["args"] = r["args"]
    return [calls[k] for k in order]


def outcome_is_ok(outcome):
    if isinstance(outcome, dict):
        return outcome.get("ok") is True or outcome.get("status") in ("ok", "success")
    return outcome in ("ok", "success", "executed")


def may_have_run(call):
    """Did the tool (possibly) do its work?  An intent record means tollgate
    was about to start an irreversible tool.  After that, only two outcomes
    are certain: "ok", and "tool_failed" (the tool itself exited non-zero,
    saying it did nothing).  No outcome at all (a crash), a timeout or a
    stopped container leave the refund possibly made, so it counts as
    made: paying twice is worse than asking a person."""
    if call["intent"]:
        return call["outcome"] != "tool_failed"
    return outcome_is_ok(call["outcome"])
