"""The tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) for long
programs: the smallest correct piece of it, which the pinned `mcp` package
does not provide (docs/mcp.md).

A 2026-07-28 client that declares the extension on its tools/call of
run_python or run_shell gets a task handle at once (`resultType: "task"`)
while the program runs; it polls `tasks/get` (working, input_required with
the questions for the person, completed with the CallToolResult, failed,
cancelled), answers questions with `tasks/update`, and stops the program
with `tasks/cancel`.  A task id is an unguessable token that selects one
task of this server, nothing else; a task is forgotten TTL seconds after
it was created.  Notifications (`notifications/tasks`) are not sent:
clients poll, at the interval given.
"""
from __future__ import annotations

import datetime
import secrets
import threading
import time
from typing import Any

from pydantic import ConfigDict

import mcp_types as types

from ._core import Core, Run, text_result
from ._runs import Question

EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = 3600 * 1000        # a task is kept an hour from its creation
POLL_MS = 1000


class TaskParams(types.RequestParams):
    """tasks/get, tasks/cancel: {taskId}; tasks/update adds inputResponses."""
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str
    input_responses: dict[str, Any] | None = None


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def wants_task(ctx_caps: Any) -> bool:
    """Did this request's client capabilities declare the extension?"""
    ext = getattr(ctx_caps, "extensions", None)
    return isinstance(ext, dict) and EXTENSION in ext


class Task:
    """One run as a task: the run, and what became of it."""

    def __init__(self, run: Run) -> None:
        self.id = secrets.token_urlsafe(24)
        self.run = run
        self.created = self.updated = time.time()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.cancelled = False
        self.done = threading.Event()
        self.asked: dict[str, Question] = {}

    def state(self) -> dict[str, Any]:
        """The DetailedTask of tasks/get (and the seed of CreateTaskResult)."""
        d: dict[str, Any] = {"taskId": self.id, "createdAt": _iso(self.created),
                             "lastUpdatedAt": _iso(self.updated), "ttlMs": TTL_MS, "pollIntervalMs": POLL_MS}
        if self.cancelled:
            return dict(d, status="cancelled", statusMessage="the run was cancelled")
        if self.error is not None:
            return dict(d, status="failed", error=self.error)
        if self.result is not None:
            return dict(d, status="completed", result=self.result)
        open_q = self.run.job.open_questions()
        if open_q:
            for q in open_q:
                self.asked[q.key] = q
            return dict(d, status="input_required", statusMessage="a call waits for a person's approval",
                        inputRequests={q.key: {"method": "elicitation/create", "params": {
                            "mode": "form", "message": q.message, "requestedSchema": _schema()}}
                            for q in open_q})
        return dict(d, status="working", statusMessage=self.run.job.progress_text())


def _schema() -> dict[str, Any]:
    from ._approve import SCHEMA
    return SCHEMA


class Tasks:
    """This server's tasks, by id."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.lock = threading.Lock()
        self.tasks: dict[str, Task] = {}

    def start(self, run: Run) -> dict[str, Any]:
        """Follow a started run as a task; its CreateTaskResult."""
        task = Task(run)
        with self.lock:
            self._forget_old()
            self.tasks[task.id] = task
        threading.Thread(target=self._follow, args=(task,), name="tollgate-mcp-task", daemon=True).start()
        return dict(task.state(), resultType="task")

    def _follow(self, task: Task) -> None:
        try:
            r = self.core.finish_run(task.run)
            if r is None:
                task.cancelled = True
            else:
                task.result = r
        except Exception as e:  # the SDK's error: a tool error result, as tools/call gives
            task.result = text_result(str(e), None, True)
        task.updated = time.time()
        task.done.set()

    def _forget_old(self) -> None:
        now = time.time()
        for tid, t in list(self.tasks.items()):
            if t.done.is_set() and now - t.created > TTL_MS / 1000:
                del self.tasks[tid]

    def get(self, task_id: str) -> Task:
        with self.lock:
            t = self.tasks.get(task_id)
        if t is None:
            raise KeyError("no task %s on this server (it ended more than an hour ago, or was never "
                           "this server's)" % task_id[:64])
        return t

    def update(self, task_id: str, responses: dict[str, Any]) -> None:
        t = self.get(task_id)
        for key, answer in responses.items():
            q = t.asked.get(key)
            if q is not None and isinstance(answer, dict):
                q.settle(answer)
        t.updated = time.time()

    def cancel(self, task_id: str, who: str) -> None:
        t = self.get(task_id)
        if t.done.is_set():
            return
        self.core.cancel_run(t.run, "cancelled by the MCP client %s: tasks/cancel" % who)
        t.done.wait(60)
        t.cancelled, t.updated = True, time.time()

    def close(self) -> None:
        with self.lock:
            self.tasks.clear()
