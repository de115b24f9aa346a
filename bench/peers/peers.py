"""The peers bench (bench/peers/run.sh): one task, run by tollgate and by
the code executors an agent framework could use instead.

    PEERS_ROWS=FILE python peers.py PEER...      (peers: see PEERS below)

The task is the orders program of the SDK's tests and examples, at 40
orders: list the orders, get_order each of them (40 calls), sum the EU
amounts, then three refunds, two small and one over the 50 limit, which
needs an approval that the approver denies.  A second program, the cap
probe, calls get_order 100 times in a row to see whether anything stops
it.  Each peer runs both, $PEERS_REPS times (default 3; the median run
is kept); for each, one JSON line appended to $PEERS_ROWS: per-call latency (the
40 get_order calls, timed inside the program), the task's wall time (from
the host's call to its result, container start included), and what was
governed: was the refund over the limit stopped (and did the program see
its refusal as an exception, or as a result it takes for success), was an
approval asked,
is there an audit record (and does it verify), was the call count capped.
Everything is measured on the host side (what the tools really did), not
taken from the program's word.  A peer that cannot run here says why.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Callable

N_ORDERS = 40
ORDERS = {"A-%d" % (1001 + i): {"id": "A-%d" % (1001 + i), "region": "EU" if i % 3 else "US",
                                "amount": round(100 + i * 10.5, 1)} for i in range(N_ORDERS)}
REFUNDS = [("A-1003", 25.0), ("A-1007", 40.0), ("A-1004", 640.0)]   # the last is over the limit
LIMIT = 50.0
CAP = 50          # every peer that has a call cap gets this one

# The model's program, the same text for every peer; only how the tools
# are reached differs (a preamble).  No imports but time, which smolagents'
# local executor allows.
BODY = '''import time
ids = list_orders()
t0 = time.perf_counter()
orders = [get_order(order_id=i) for i in ids]
per_call = (time.perf_counter() - t0) / len(ids)
eu = sum(o["amount"] for o in orders if o["region"] == "EU")
print("EU total %.1f over %d orders" % (eu, len(orders)))
seen = []
for oid, amount in REFUNDS:
    try:
        r = issue_refund(order_id=oid, amount=amount, reason="bench")
        seen.append(oid + "=returned")
        print("refund", oid, amount, "issued:", r)
    except Exception as e:
        seen.append(oid + "=raised")
        print("refund", oid, amount, "not issued:", e)
print("RESULT: done PERCALL_US %.2f SEEN %s" % (per_call * 1e6, ",".join(seen)))
'''.replace("REFUNDS", repr(REFUNDS))
PROBE = '''n = 0
for i in range(100):
    try:
        get_order(order_id="A-1001")
        n += 1
    except Exception as e:
        print("stopped after", n, ":", e)
        break
print("RESULT: probe", n)
'''


class Host:
    """The tools' real side: what ran, and the approvals asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[dict[str, Any]] = []

    def list_orders(self) -> list[str]:
        self.calls.append(("list_orders", {}))
        return sorted(ORDERS)

    def get_order(self, order_id: str) -> dict[str, Any]:
        self.calls.append(("get_order", {"order_id": order_id}))
        return ORDERS[order_id]

    def issue_refund(self, order_id: str, amount: float, reason: str = "") -> dict[str, Any]:
        self.calls.append(("issue_refund", {"order_id": order_id, "amount": amount}))
        return {"refund_id": "R-%d" % len(self.calls), "order_id": order_id, "amount": amount}

    def refunded(self) -> list[float]:
        return [a["amount"] for t, a in self.calls if t == "issue_refund"]

    def gets(self) -> int:
        return sum(1 for t, _ in self.calls if t == "get_order")


def percall(stdout: str) -> float | None:
    m = re.search(r"PERCALL_US ([\d.]+)", stdout)
    return float(m.group(1)) if m else None


def program_saw(stdout: str, ran: bool) -> str:
    """What the program saw of the refund over the limit: it ran, its
    refusal raised an exception, or the refusal came back as a result
    (which the program takes for success)."""
    m = re.search(r"%s=(\w+)" % REFUNDS[-1][0], stdout)
    if ran:
        return "it ran"
    if not m:
        return "unknown"
    return "an exception" if m.group(1) == "raised" else "a result, as if it had run"


def summary(peer: str, host: Host, wall: float, stdout: str, probe_host: Host, *, asked: bool,
            audit: str, note: str = "") -> dict[str, Any]:
    over = [a for a in host.refunded() if a > LIMIT]
    return {"peer": peer, "per_call_us": percall(stdout), "task_wall_ms": round(wall * 1000, 1),
            "program_saw": program_saw(stdout, bool(over)),
            "gets": host.gets(), "refunds_made": host.refunded(),
            "over_limit_stopped": not over, "approval_asked": asked, "audit": audit,
            "probe_calls_run": probe_host.gets(), "call_count_capped": probe_host.gets() < 100,
            "note": note}


def verify(tg: str, log: str) -> bool:
    return subprocess.run([tg, "audit", "verify", log], capture_output=True).returncode == 0


# ---------------------------------------------------------------- tollgate, directly

def tollgate_direct(runtime: str) -> dict[str, Any]:
    from tollgate_sdk import Sandbox, tool

    def tools(h: Host) -> list[Any]:
        @tool
        def list_orders() -> list[str]:
            """The ids of every order."""
            return h.list_orders()

        @tool
        def get_order(order_id: str) -> dict[str, Any]:
            """One order."""
            return h.get_order(order_id)

        @tool(irreversible=True, cost=1, approve="amount > %g" % LIMIT)
        def issue_refund(order_id: str, amount: float, reason: str = "") -> dict[str, Any]:
            """Refund part or all of an order."""
            return h.issue_refund(order_id, amount, reason)
        return [list_orders, get_order, issue_refund]

    pre = "from tollgate import list_orders, get_order, issue_refund\n"
    out = []
    for program in (BODY, PROBE):
        h = Host()

        def approve(call: Any) -> bool:
            h.asked.append(dict(call.args))
            return False
        sb = Sandbox(tools=tools(h), runtime=runtime, approval=approve,
                     budgets={"max_tool_calls": CAP}, audit_dir=os.environ["AUDIT_DIR"])
        try:
            sb.start()
            t = time.perf_counter()
            res = sb.run(pre + program, check=False)
            wall = time.perf_counter() - t
        finally:
            sb.close()
        out.append((h, wall, res))
    (h, wall, res), (ph, _, pres) = out
    ok = verify(os.environ["TG"], res.audit_log) and verify(os.environ["TG"], pres.audit_log)
    return summary("tollgate %s (Sandbox.run)" % runtime, h, wall, res.stdout, ph, asked=bool(h.asked),
                   audit="hash-chained log, %d records, verifies: %s" % (len(res.calls), ok),
                   note="fresh container per run; tollgate's cap %d counts every attempt" % CAP)


# ---------------------------------------------------------------- smolagents

def smol_tools(h: Host) -> list[Any]:
    from smolagents import tool as smol_tool

    @smol_tool
    def list_orders() -> list:
        """The ids of every order."""
        return h.list_orders()

    @smol_tool
    def get_order(order_id: str) -> dict:
        """One order.

        Args:
            order_id: the order's id.
        """
        return h.get_order(order_id)

    @smol_tool
    def issue_refund(order_id: str, amount: float, reason: str = "") -> dict:
        """Refund part or all of an order.

        Args:
            order_id: the order's id.
            amount: how much.
            reason: why.
        """
        return h.issue_refund(order_id, amount, reason)
    return [list_orders, get_order, issue_refund]


def smolagents_local() -> dict[str, Any]:
    from smolagents.local_python_executor import LocalPythonExecutor

    out = []
    for program in (BODY, PROBE):
        h = Host()
        ex = LocalPythonExecutor(additional_authorized_imports=["time"])
        ex.send_tools({t.name: t for t in smol_tools(h)})
        t = time.perf_counter()
        res = ex(program)
        wall = time.perf_counter() - t
        out.append((h, wall, res.logs))
    (h, wall, logs), (ph, _, _) = out
    return summary("smolagents LocalPythonExecutor (in process)", h, wall, logs, ph, asked=False,
                   audit="none", note="no isolation: the program runs in the agent's process "
                   "(an AST interpreter with an import allowlist); tools run unchecked")


def smolagents_tollgate(runtime: str) -> dict[str, Any]:
    try:
        from tollgate_sdk.integrations.smolagents import TollgateExecutor  # type: ignore[import-not-found]
    except ImportError as e:
        return {"peer": "tollgate %s via smolagents' executor" % runtime,
                "skipped": "tollgate_sdk.integrations.smolagents is not in this checkout (%s)" % e}
    out = []
    for program in (BODY, PROBE):
        h = Host()

        def approve(call: Any) -> bool:
            h.asked.append(dict(call.args))
            return False
        ex = TollgateExecutor(runtime=runtime, approval=approve,
                              governance={"issue_refund": {"irreversible": True, "cost": 1,
                                                           "approve": "amount > %g" % LIMIT}},
                              budgets={"max_tool_calls": CAP}, audit_dir=os.environ["AUDIT_DIR"])
        t = time.perf_counter()   # send_tools starts the session's container
        ex.send_tools({t.name: t for t in smol_tools(h)})
        try:
            res = ex(program)
            logs = res.logs
        except Exception as e:  # a step that raised: its logs are on the error
            logs = getattr(e, "logs", "") + str(e)
        wall = time.perf_counter() - t
        logs_paths = list(ex.audit_logs)
        ex.cleanup()
        out.append((h, wall, logs, logs_paths))
    (h, wall, logs, paths), (ph, _, _, ppaths) = out
    ok = all(verify(os.environ["TG"], p) for p in paths + ppaths)
    return summary("tollgate %s via smolagents' executor (session)" % runtime, h, wall, logs, ph,
                   asked=bool(h.asked), audit="hash-chained log, verifies: %s" % ok,
                   note="one session (container start included); a step is a cell in it")


# ---------------------------------------------------------------- Promptise

def promptise_docker() -> dict[str, Any]:
    from promptise import build_agent
    from promptise.approval import ApprovalDecision, ApprovalPolicy
    from promptise.sandbox import config as sandbox_config
    from promptise.testing import ScriptedModel

    # Promptise drops capabilities by name, CAP_BPF, CAP_PERFMON and
    # CAP_CHECKPOINT_RESTORE among them, which Debian 12's docker.io
    # (20.10) does not know: it refuses the container.  Docker never grants
    # those three by default, so leaving them off the list changes nothing
    # the container gets; without it Promptise cannot run here at all.
    docker_api = tuple(int(x) for x in os.environ.get("PEERS_DOCKER_VERSION", "99").split(".")[:2])
    if docker_api < (23, 0):
        for cap in ("CAP_BPF", "CAP_PERFMON", "CAP_CHECKPOINT_RESTORE"):
            if cap in sandbox_config.DEFAULT_CAP_DROP:
                sandbox_config.DEFAULT_CAP_DROP.remove(cap)

    async def one(program: str, h: Host) -> tuple[float, str]:
        def list_orders() -> list:
            """The ids of every order."""
            return h.list_orders()

        def get_order(order_id: str) -> dict:
            """One order."""
            return h.get_order(order_id)

        def issue_refund(order_id: str, amount: float, reason: str = "") -> dict:
            """Refund part or all of an order."""
            return h.issue_refund(order_id, amount, reason)

        def handler(req: Any) -> ApprovalDecision:
            args = getattr(req, "raw_arguments", None) or req.arguments
            h.asked.append(dict(args))
            return ApprovalDecision(approved=float(args.get("amount", 0)) <= LIMIT, reviewer_id="bench")

        agent = await build_agent(
            model=ScriptedModel(["```python\n%s```" % program]), extra_tools=[list_orders, get_order, issue_refund],
            agent_pattern="code-action", code_action={"max_repairs": 0, "max_tool_calls": CAP},
            sandbox={"image": os.environ["PEERS_IMAGE"], "network": "none"},
            approval=ApprovalPolicy(tools=["issue_refund"], handler=handler, max_retries_after_deny=None))
        try:
            t = time.perf_counter()
            try:
                out = await agent.ainvoke({"messages": [{"role": "user", "content": "orders"}]})
                answer = str(out["messages"][-1].content)
            except Exception as e:  # a program stopped by the cap fails the run
                answer = "error: %s" % e
            wall = time.perf_counter() - t
        finally:
            await agent.shutdown()
        return wall, answer

    h, ph = Host(), Host()
    wall, answer = asyncio.run(one(BODY, h))
    asyncio.run(one(PROBE, ph))
    return summary("Promptise code-action (its Docker sandbox, runc)", h, wall, answer, ph,
                   asked=bool(h.asked), audit="none built in (an on_decision callback, hooks)",
                   note="approval is per tool name, so every refund asked the handler, which "
                   "applied the limit; tool calls go through docker exec polling")


def promptise_tollgate(runtime: str) -> dict[str, Any]:
    from promptise import build_agent
    from promptise.testing import ScriptedModel

    from tollgate_sdk.integrations.promptise import TollgateCodeAction

    async def one(program: str, h: Host) -> tuple[float, str, list[str]]:
        def list_orders() -> list:
            """The ids of every order."""
            return h.list_orders()

        def get_order(order_id: str) -> dict:
            """One order."""
            return h.get_order(order_id)

        def issue_refund(order_id: str, amount: float, reason: str = "") -> dict:
            """Refund part or all of an order."""
            return h.issue_refund(order_id, amount, reason)

        def approve(call: Any) -> bool:
            h.asked.append(dict(call.args))
            return False
        schema = {"type": "object", "properties": {"order_id": {"type": "string"},
                                                   "amount": {"type": "number"},
                                                   "reason": {"type": "string"}},
                  "required": ["order_id", "amount"], "additionalProperties": False}
        with TollgateCodeAction(runtime=runtime, approval=approve, budgets={"max_tool_calls": CAP},
                                audit_dir=os.environ["AUDIT_DIR"],
                                governance={"issue_refund": {"irreversible": True, "cost": 1,
                                                             "approve": "amount > %g" % LIMIT,
                                                             "args_schema": schema}}) as tg:
            agent = await build_agent(model=ScriptedModel(["```python\n%s```" % program]),
                                      extra_tools=[list_orders, get_order, issue_refund],
                                      agent_pattern=tg.graph(max_repairs=0, max_tool_calls=CAP + 10))
            try:
                t = time.perf_counter()
                try:
                    out = await agent.ainvoke({"messages": [{"role": "user", "content": "orders"}]})
                    answer = str(out["messages"][-1].content)
                except Exception as e:
                    answer = "error: %s" % e
                wall = time.perf_counter() - t
            finally:
                await agent.shutdown()
            return wall, answer, [r.audit_log for r in tg.results]

    h, ph = Host(), Host()
    wall, answer, logs = asyncio.run(one(BODY, h))
    _, _, plogs = asyncio.run(one(PROBE, ph))
    ok = bool(logs) and all(verify(os.environ["TG"], p) for p in logs + plogs)
    return summary("tollgate %s via Promptise code-action (integrations.promptise)" % runtime, h, wall,
                   answer, ph, asked=bool(h.asked), audit="hash-chained log, verifies: %s" % ok,
                   note="tollgate's gate first, then Promptise's own bridge runs the allowed call "
                   "(it polls every 30 ms); Promptise's cap set above tollgate's to see tollgate's")


# ---------------------------------------------------------------- llm-sandbox

def llm_sandbox_docker() -> dict[str, Any]:
    """llm-sandbox has no way for the program to reach host tools (no bridge,
    no network here): the tools are copied into the program, over a copy of
    the data, which is what its users do.  Their effects stay in the
    container, so what "ran" is read from the program's output."""
    from llm_sandbox import SandboxSession

    pre = ("ORDERS = %r\nCALLS = []\n"
           "def list_orders():\n    return sorted(ORDERS)\n"
           "def get_order(order_id):\n    CALLS.append(order_id)\n    return ORDERS[order_id]\n"
           "def issue_refund(order_id, amount, reason=''):\n    return {'order_id': order_id}\n" % ORDERS)
    def text(res: Any) -> str:
        return "%s\n%s\nexit %s" % (res.stdout, res.stderr, res.exit_code)
    t = time.perf_counter()   # the session's container start is part of the task, as for the others
    with SandboxSession(lang="python", image=os.environ["PEERS_IMAGE"], skip_environment_setup=True,
                        runtime_configs={"network_mode": "none"},  # its default user: root
                        keep_template=True, verbose=False) as s:
        out = text(s.run(pre + BODY))
        wall = time.perf_counter() - t
        pout = text(s.run(pre + PROBE))
    refunds = [float(m) for m in re.findall(r"refund A-\d+ ([\d.]+) issued", out)]
    probe = re.search(r"RESULT: probe (\d+)", pout)
    n = int(probe.group(1)) if probe else 0
    if percall(out) is None or not probe:
        raise RuntimeError("the program did not finish in llm-sandbox: %s | %s" % (out[-300:], pout[-300:]))
    return {"peer": "llm-sandbox (Docker backend, runc)", "per_call_us": percall(out),
            "task_wall_ms": round(wall * 1000, 1), "gets": out.count("EU total") and N_ORDERS,
            "refunds_made": refunds, "over_limit_stopped": not [a for a in refunds if a > LIMIT],
            "program_saw": program_saw(out, bool([a for a in refunds if a > LIMIT])),
            "approval_asked": False, "audit": "none", "probe_calls_run": n,
            "call_count_capped": n < 100,
            "note": "no host tools: the tools were copied into the program, so nothing it does "
                    "reaches the host (and nothing on the host can govern it); its "
                    "SecurityPolicy matches the code's text, not calls"}


PEERS: dict[str, Callable[[], dict[str, Any]]] = {
    "tollgate-runsc": lambda: tollgate_direct("runsc"),
    "tollgate-runc": lambda: tollgate_direct("runc"),
    "smolagents-tollgate-runsc": lambda: smolagents_tollgate("runsc"),
    "smolagents-tollgate-runc": lambda: smolagents_tollgate("runc"),
    "promptise-tollgate-runsc": lambda: promptise_tollgate("runsc"),
    "promptise-tollgate-runc": lambda: promptise_tollgate("runc"),
    "smolagents-local": smolagents_local,
    "promptise-docker": promptise_docker,
    "llm-sandbox-docker": llm_sandbox_docker,
}

def measured(name: str, reps: int) -> dict[str, Any]:
    """The peer run reps times (the machine is shared: one run is noise):
    the run of median wall time, with the median per-call latency and
    every run's wall time beside it."""
    rows = [PEERS[name]() for _ in range(reps)]
    if any("skipped" in r or "failed" in r for r in rows):
        return next(r for r in rows if "skipped" in r or "failed" in r)
    rows.sort(key=lambda r: r["task_wall_ms"])
    row = dict(rows[len(rows) // 2])
    calls = sorted(r["per_call_us"] for r in rows if r.get("per_call_us") is not None)
    row["per_call_us"] = calls[len(calls) // 2] if calls else None
    row["runs"] = reps
    row["task_wall_ms_all"] = [r["task_wall_ms"] for r in rows]
    # What was governed must not differ between runs.
    keys = ("refunds_made", "over_limit_stopped", "program_saw", "approval_asked", "call_count_capped",
            "probe_calls_run")
    row["same_every_run"] = all(all(r[k] == rows[0][k] for k in keys) for r in rows)
    return row


if __name__ == "__main__":
    reps = int(os.environ.get("PEERS_REPS", "3"))
    for name in sys.argv[1:]:
        try:
            row = measured(name, reps)
        except Exception as e:  # a peer that cannot run here says why
            row = {"peer": name, "failed": "%s: %s" % (type(e).__name__, str(e)[:400])}
        # To a file: the peers print to stdout themselves ("[promptise] ...").
        with open(os.environ["PEERS_ROWS"], "a") as f:
            f.write(json.dumps(row) + "\n")
