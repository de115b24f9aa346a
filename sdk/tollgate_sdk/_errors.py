"""The SDK's exceptions: one class per way a governed run can fail.

Every one of them is a TollgateSDKError.  None of them is ever raised after
running anything on the host instead of in the sandbox: when no sandbox can
be had, the answer is SandboxUnavailable, never a fallback.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ._sandbox import Result

import re


class TollgateSDKError(Exception):
    """Base of every exception the SDK raises."""


class ToolDefinitionError(TollgateSDKError, ValueError):
    """A Python callable cannot be made a tool as it stands: an unsupported
    type hint, *args, a bad name, an approve expression the policy language
    cannot say.  The message names the function, the parameter and the fix."""


class InvalidArgument(TollgateSDKError, ValueError):
    """An argument the SDK cannot take as given (a Sandbox option, a
    session cell, a mount, a size).  The message names it and the fix.
    A ValueError too, as such mistakes were before."""


class CustomToolError(TollgateSDKError):
    """An agent-written tool (Sandbox.create_tool) was refused: over
    max_custom_tools, or the host's policy ceiling forbids such tools; or
    one of its calls gave no result.  The message names the limit and the
    fix.  Nothing of the tool ran on the host."""


class SandboxUnavailable(TollgateSDKError):
    """No hardened sandbox can be started here (runsc or tollgate missing,
    not root, no rootfs).  The message names the fix.  Nothing ran."""


class PolicyError(TollgateSDKError):
    """tollgate refused the policy the SDK wrote or was given.  .messages
    holds tollgate's positioned messages (FILE:LINE:COLUMN: FIELD: what is
    wrong), .policy_path the file they refer to."""

    def __init__(self, messages: list[str], policy_path: str | None = None) -> None:
        self.messages = list(messages)
        self.policy_path = policy_path
        super().__init__("the policy was refused:\n" + "\n".join(self.messages))


class ProgramFailed(TollgateSDKError):
    """The sandboxed program exited non-zero (or was killed).  .exit_status,
    .stderr_tail (its last lines, ready to feed back to a model) and .result
    (the whole Result: stdout, calls, budget used, audit log)."""

    def __init__(self, result: Result, tail_lines: int = 15, what: str | None = None) -> None:
        self.result = result
        self.exit_status = result.exit_status
        lines = (result.stderr or "").rstrip("\n").split("\n")
        self.stderr_tail = "\n".join(lines[-tail_lines:])
        if what is None and result.stopped_by:
            what = "an anomaly limit stopped the run: %s; the program's status %d" % (
                result.stopped_by, self.exit_status)
        if what is None:
            what = "the program exited with status %d" % self.exit_status
            if result.oom_killed:
                what += " (killed for running out of memory: its memory limit is %s)" % result.memory_limit
        super().__init__("%s; the end of its stderr:\n%s" % (what, self.stderr_tail))


class CellTimeout(ProgramFailed):
    """A program or session cell ran past its timeout.  In a session the
    cell was interrupted (.interrupted: it got KeyboardInterrupt and
    stopped) or, when it ignored that, abandoned (.abandoned: it still
    runs in the session's interpreter and its effects go on); either way
    the session, its variables and files live on.  A fresh run's container
    is killed.  .result holds what it printed before."""

    def __init__(self, result: Result, timeout: float,
                 how: Literal["interrupted", "abandoned", "killed", "lost"]) -> None:
        self.timeout = timeout
        self.how = how
        self.interrupted = how == "interrupted"
        self.abandoned = how == "abandoned"
        what = {
            "interrupted": "the cell ran past %s s and was interrupted (KeyboardInterrupt); the session "
                           "and its variables are kept",
            "abandoned": "the cell ran past %s s and ignored KeyboardInterrupt, so it was abandoned: it "
                         "keeps running in the session's interpreter (its output is discarded; files it "
                         "writes and tools it calls still happen); later cells run beside it with the same "
                         "variables",
            "killed": "the program ran past %s s and its container was killed",
            "lost": "the cell ran past %s s and the session's interpreter did not answer, so the "
                    "session was closed",
        }[how] % timeout
        super().__init__(result, what=what)


class SessionLimit(TollgateSDKError):
    """This process already holds as many live sessions as its cap allows."""


class SessionClosed(TollgateSDKError):
    """A run or a file operation on a session that is closed: by close(),
    its with block, its Sandbox's close(), pause(), or an interpreter that
    ended.  Open another with sandbox.session()."""


class ContainerError(TollgateSDKError):
    """tollgate could not make, start or describe a container (`tollgate
    spec`, `create` or `start` failed, or did not answer in time).  The
    message carries tollgate's own words; nothing of the program ran."""


class PauseError(TollgateSDKError):
    """A session could not be paused or resumed; the message says why."""


class FileOperationError(TollgateSDKError):
    """session.files refused or failed an operation: a path outside the
    writable area, a link on the way, a missing file, a size over the cap.
    .path names the file."""

    def __init__(self, message: str, path: object = None) -> None:
        self.path = path
        super().__init__(message)


class ToolDenied(TollgateSDKError):
    """A tool call that tollgate refused (it never ran): the host-side twin
    of the in-container client's ToolDenied, with the same subclasses, so
    one `except ToolDenied` catches every refusal.  Call.error() gives one
    for a refused call of a Result.  .code, .message, .tool, .call_id."""

    code = "denied"

    def __init__(self, message: str, tool: str | None = None, call_id: str | None = None,
                 code: str | None = None) -> None:
        self.message = message
        self.tool = tool
        self.call_id = call_id
        if code is not None:
            self.code = code
        super().__init__(message)

    def __str__(self) -> str:
        return refusal_text(self.code, self.message)


class ApprovalTimeout(ToolDenied):
    code = "approval_timeout"


class BudgetExhausted(ToolDenied):
    code = "budget_exhausted"


class BadRequest(ToolDenied):
    code = "bad_request"


class UnknownTool(ToolDenied):
    code = "unknown_tool"


class AnomalyDetected(ToolDenied):
    """An anomaly limit of the policy stopped (or parks) the run.  .limit
    names it ("denials_in_a_row", "denials_in_window", ...), when the
    message says; the message has its figures."""

    code = "anomaly"

    @property
    def limit(self) -> str | None:
        m = re.search(r"\((denials_in_a_row|denials_in_window|calls_per_second|failures_in_a_row|"
                      r"result_bytes): ", self.message or "")
        return m.group(1) if m else None


REFUSALS: dict[str, type[ToolDenied]] = {c.code: c for c in (ToolDenied, ApprovalTimeout, BudgetExhausted, BadRequest,
                                UnknownTool, AnomalyDetected)}


def refusal_text(code: str, message: str) -> str:
    """'code: message', without saying the code twice when the message
    already starts with it (the gate's denials read 'denied: why')."""
    m = message or ""
    if not code or m.startswith((code + ":", "denied", "approval timed out")):
        return m
    return "%s: %s" % (code, m)
