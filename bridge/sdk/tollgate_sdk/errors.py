"""The SDK's exceptions: one class per way a governed run can fail.

Every one of them is a TollgateSDKError.  None of them is ever raised after
running anything on the host instead of in the sandbox: when no sandbox can
be had, the answer is SandboxUnavailable, never a fallback.
"""


class TollgateSDKError(Exception):
    """Base of every exception the SDK raises."""


class ToolDefinitionError(TollgateSDKError, ValueError):
    """A Python callable cannot be made a tool as it stands: an unsupported
    type hint, *args, a bad name, an approve expression the policy language
    cannot say.  The message names the function, the parameter and the fix."""


class SandboxUnavailable(TollgateSDKError):
    """No hardened sandbox can be started here (runsc or tollgate missing,
    not root, no rootfs).  The message names the fix.  Nothing ran."""


class PolicyError(TollgateSDKError):
    """tollgate refused the policy the SDK wrote or was given.  .messages
    holds tollgate's positioned messages (FILE:LINE:COLUMN: FIELD: what is
    wrong), .policy_path the file they refer to."""

    def __init__(self, messages, policy_path=None):
        self.messages = list(messages)
        self.policy_path = policy_path
        super().__init__("the policy was refused:\n" + "\n".join(self.messages))


class ProgramFailed(TollgateSDKError):
    """The sandboxed program exited non-zero (or was killed).  .exit_status,
    .stderr_tail (its last lines, ready to feed back to a model) and .result
    (the whole Result: stdout, calls, budget used, audit log)."""

    def __init__(self, result, tail_lines=15):
        self.result = result
        self.exit_status = result.exit_status
        lines = (result.stderr or "").rstrip("\n").split("\n")
        self.stderr_tail = "\n".join(lines[-tail_lines:])
        super().__init__("the program exited with status %d; the end of its stderr:\n%s"
                         % (self.exit_status, self.stderr_tail))
