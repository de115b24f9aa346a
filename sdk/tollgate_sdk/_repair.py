"""Self-repair on the SDK: run the model's program; on failure feed the
tail of stderr back and run its next program, with budgets that span the
attempts (as bundles/examples/agent/harness.py does with bare tollgate).

    outcome = repair(sb, lambda feedback: model.write(task, feedback), retries=2)

Every attempt is a fresh container with its own audit log.  Before each
attempt the policy is rewritten with every budget lowered by what earlier
attempts used (max_tool_calls by every attempt, denied ones too, as
tollgate counts them; cost, irreversible and per-tool max_calls by what
ran) and with a deny rule, first in line, for each irreversible call an
earlier attempt made or may have made (an intent with no outcome, a
timeout or a stopped container counts as made).  So a refund a failed
attempt issued is refused on the host the second time, whatever the
model's rewrite does, and the refusal lands in the new audit log.
"""
from __future__ import annotations

import copy
import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ._audit import may_have_run
from ._errors import ProgramFailed

if TYPE_CHECKING:
    from ._sandbox import Result, Sandbox

DEFAULT_MAX_TOOL_CALLS = 50  # tollgate's cap when a policy sets none


class Usage:
    """What earlier attempts used, from their Results."""

    def __init__(self, once: Mapping[str, Sequence[str]] | None = None) -> None:
        self.calls = 0
        self.cost: float = 0
        self.irreversible = 0
        self.per_tool: dict[str, int] = {}
        # (tool, args, audit log, seq) of irreversible calls that (may have) run
        self.done: list[tuple[str, Any, str, int]] = []
        self.once = dict(once or {})  # tool -> argument names that identify "the same" call

    def add(self, result: Result, policy: dict[str, Any] | None) -> None:
        tools = (policy or {}).get("tools", {})
        for c in result.calls:
            self.calls += 1
            self.per_tool[c.tool] = self.per_tool.get(c.tool, 0) + 1
            spec = tools.get(c.tool, {})
            if c.decision == "allow":
                self.cost += spec.get("cost", 0)
            if spec.get("irreversible") and may_have_run(c):
                self.irreversible += 1
                self.done.append((c.tool, c.args or {}, result.audit_log, c.seq))

    def lowered(self, policy: dict[str, Any]) -> dict[str, Any]:
        """policy with every budget lowered by what was used and the
        irreversible calls already made turned into denials."""
        p = copy.deepcopy(policy)
        b = p.setdefault("budgets", {})
        b["max_tool_calls"] = max(b.get("max_tool_calls", DEFAULT_MAX_TOOL_CALLS) - self.calls, 0)
        if "max_cost" in b:
            b["max_cost"] = max(b["max_cost"] - self.cost, 0)
        if "max_irreversible" in b:
            b["max_irreversible"] = max(b["max_irreversible"] - self.irreversible, 0)
        for name, spec in p.get("tools", {}).items():
            if "max_calls" in spec:
                spec["max_calls"] = max(spec["max_calls"] - self.per_tool.get(name, 0), 0)
        for tool, args, log, seq in self.done:
            spec = p["tools"].get(tool)
            if spec is None or not isinstance(args, dict):
                continue
            keys = self.once.get(tool) or sorted(args)
            conds = [{"arg": k, "op": "==", "value": args[k]} for k in keys if k in args]
            if not conds:
                continue
            spec["rules"] = [{"if": conds[0] if len(conds) == 1 else {"all": conds},
                              "effect": "deny",
                              "reason": "already done by an earlier attempt (%s, seq %s); irreversible "
                                        "calls are not repeated" % (os.path.basename(log), seq)}] + spec["rules"]
        return p


@dataclasses.dataclass
class RepairOutcome:
    succeeded: bool
    attempts: list[Result]  # one per attempt
    feedback: list[str]     # what was fed back to the model, per failed attempt
    usage: Usage


def repair(sandbox: Sandbox, write_program: Callable[[str | None], str], *, retries: int = 1,
           once: Mapping[str, Sequence[str]] | None = None, tail_lines: int = 15,
           timeout: float | None = None) -> RepairOutcome:
    """Run write_program(None)'s program; while it fails and retries are
    left, call write_program(feedback) with the failure's stderr tail and
    run that.  Budgets span the attempts (see the module's doc).  once maps
    a tool to the arguments that identify a repeat ({"issue_refund":
    ["order_id"]}); by default all of a call's arguments do."""
    usage = Usage(once)
    attempts: list[Result] = []
    feedback: list[str] = []
    fb: str | None = None
    for _ in range(retries + 1):
        code = write_program(fb)
        path = sandbox.policy_for(usage)
        policy = sandbox._policy_document(usage)
        if policy["budgets"]["max_tool_calls"] <= 0:
            break
        try:
            result = sandbox._run(code, check=True, timeout=timeout, policy_path=path, policy=policy)
        except ProgramFailed as e:
            result = e.result
            usage.add(result, sandbox.policy)
            attempts.append(result)
            fb = ("Your program exited with status %d. The end of its stderr:\n%s"
                  % (e.exit_status, "\n".join(e.stderr_tail.split("\n")[-tail_lines:])))
            feedback.append(fb)
            continue
        usage.add(result, sandbox.policy)
        attempts.append(result)
        return RepairOutcome(True, attempts, feedback, usage)
    return RepairOutcome(False, attempts, feedback, usage)
