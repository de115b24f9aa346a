"""Reading a run's calls and budget use back from its audit log.

The audit log (docs/audit.md) is the record of what happened, written by
the gate before each answer; the SDK reports from it rather than from what
its own tool server saw, so calls that never reached Python (denied,
over budget, malformed, exec or MCP tools) are in the result too.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from ._errors import REFUSALS, ToolDenied

# one audit record: a JSON object of the log (docs/audit.md)
Record = dict[str, Any]

# "unknown": a call the sidecar had in flight when it died (docs/audit.md)
ATTEMPT_EVENTS = ("call", "intent", "unanswerable", "unknown")


@dataclasses.dataclass
class Call:
    """One governed call attempt, as the gate recorded it."""
    call_id: str
    tool: str
    args: Any
    decision: str          # "allow" or "deny"
    reason: str
    approver: str          # "policy", "uid:0", "hook:NAME", "timeout", ...
    outcome: str           # "ok" or the error code the program got
    message: str = ""
    seq: int = 0
    intent: bool = False   # an irreversible tool: its intent was on disk before it ran

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def refused(self) -> bool:
        """True when tollgate refused the call (it never ran)."""
        return self.outcome in REFUSALS

    def error(self) -> ToolDenied | None:
        """The refusal as the host-side ToolDenied subclass the program saw
        (its in-container twin), or None when the call was not refused."""
        cls = REFUSALS.get(self.outcome)
        return cls(self.message, tool=self.tool, call_id=self.call_id) if cls else None


def read_records(path: str) -> list[Record]:
    """The audit log's records, [] when there is none yet."""
    out: list[Record] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    break  # a torn last line: what is before it still stands
                if isinstance(r, dict):
                    out.append(r)
    except FileNotFoundError:
        pass
    return out


def calls_of_last_run(records: list[Record]) -> list[Call]:
    """The calls after the last `open` record (one container run)."""
    start = 0
    for i, r in enumerate(records):
        if r.get("event") == "open":
            start = i
    calls: list[Call] = []
    by_id: dict[str, Call] = {}
    for r in records[start:]:
        ev = r.get("event")
        if ev == "outcome" or (ev == "unknown" and r.get("call") in by_id):
            # an intent's outcome, or the sidecar died with it in flight
            known = by_id.get(str(r.get("call")))
            if known is not None:
                known.outcome = r.get("outcome") or ""
                known.message = r.get("message") or ""
            continue
        if ev not in ATTEMPT_EVENTS:
            continue
        c = Call(call_id=r.get("call") or "", tool=r.get("tool") or "", args=r.get("args"),
                 decision=r.get("decision") or "", reason=r.get("reason") or "",
                 approver=r.get("approver") or "", outcome=r.get("outcome") or "",
                 message=r.get("message") or "", seq=r.get("seq") or 0,
                 intent=(ev == "intent"))
        if ev == "intent" and not c.outcome:
            c.outcome = "no outcome recorded"
        calls.append(c)
        if c.call_id:
            by_id[c.call_id] = c
    return calls


def anomalies_of_last_run(records: list[Record]) -> list[Record]:
    """The "anomaly" records after the last `open` record (docs/policy.md,
    "Anomaly limits")."""
    start = 0
    for i, r in enumerate(records):
        if r.get("event") == "open":
            start = i
    return [r for r in records[start:] if r.get("event") == "anomaly"]


def anomaly_stop_of_last_run(records: list[Record]) -> Record | None:
    """The first "anomaly" record of the last run whose action is stop (the
    one that stopped it), or None."""
    for r in anomalies_of_last_run(records):
        if r.get("action") == "stop":
            return r
    return None


def budget_used(calls: list[Call], policy: dict[str, Any], records: list[Record] | None = None) -> dict[str, Any]:
    """What the calls spent of the policy's budgets: every attempt counts
    toward calls (as tollgate counts them); cost and irreversible count the
    calls that were allowed to run; anomalies, the anomaly limits the run
    reached (from the log's records, when given)."""
    tools = policy.get("tools", {})
    tool_counts: dict[str, int] = {}
    used: dict[str, Any] = {"calls": 0, "cost": 0, "irreversible": 0, "tools": tool_counts,
            "anomalies": len(anomalies_of_last_run(records or []))}
    for c in calls:
        used["calls"] += 1
        if c.tool:
            tool_counts[c.tool] = tool_counts.get(c.tool, 0) + 1
        if c.decision == "allow":
            spec = tools.get(c.tool, {})
            used["cost"] += spec.get("cost", 0)
            if spec.get("irreversible"):
                used["irreversible"] += 1
    return used


def may_have_run(call: Call) -> bool:
    """Did an irreversible call (possibly) do its work?  After an intent
    record only "ok" and "tool_failed" are certain; no outcome, a timeout or
    a stopped container leave it possibly done, so it counts as done, and
    so does a call the sidecar died with (outcome_unknown), allowed or not
    as far as the log knows."""
    if call.outcome == "outcome_unknown":
        return True
    if call.decision != "allow":
        return False
    if call.intent:
        return call.outcome != "tool_failed"
    return call.outcome == "ok"
