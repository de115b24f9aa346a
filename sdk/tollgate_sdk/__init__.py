"""tollgate for the host: Python functions as governed tools, and a
Sandbox that runs model-written code in a fresh hardened container whose
only way out is those tools (docs/sdk.md).

    from tollgate_sdk import Sandbox, tool

    @tool(irreversible=True, cost=1, approve="amount > 50")
    def issue_refund(order_id: str, amount: float) -> dict:
        "Refund part or all of an order."
        ...

    sb = Sandbox(tools=[issue_refund], approval=lambda call: False)
    print(sb.run("from tollgate import issue_refund\\nprint(issue_refund(order_id='A-1', amount=5))").stdout)

Standard library only, Python 3.11+.  The code inside the container uses
the in-container client (`from tollgate import NAME`), not this package.
"""
from ._aio import AsyncFiles, AsyncSandbox, AsyncSession
from ._audit import Call
from ._errors import (AnomalyDetected, ApprovalTimeout, BadRequest, BudgetExhausted, CellTimeout,
                     FileOperationError, PolicyError, ProgramFailed, SandboxUnavailable, SessionLimit,
                     TollgateSDKError, ToolDefinitionError, ToolDenied, UnknownTool)
from ._pause import PauseError
from ._repair import RepairOutcome, Usage, repair
from ._sandbox import ApprovalRequest, Result, Sandbox, find_rootfs, find_tollgate
from ._session import FileInfo, Files, Session, live_sessions, max_sessions, set_max_sessions
from ._schema import hint_schema, signature_schema, to_policy_schema
from ._server import ToolServer
from ._tools import Tool, as_tool, condition, from_langchain, tool

__all__ = [
    "Sandbox", "Session", "Result", "Call", "ApprovalRequest", "tool", "Tool", "as_tool",
    "from_langchain", "condition", "signature_schema", "hint_schema", "to_policy_schema",
    "ToolServer", "repair", "RepairOutcome", "Usage", "find_rootfs", "find_tollgate",
    "TollgateSDKError", "ToolDefinitionError", "SandboxUnavailable", "PolicyError", "ProgramFailed",
    "CellTimeout", "SessionLimit", "FileOperationError", "ToolDenied", "ApprovalTimeout", "BudgetExhausted",
    "BadRequest", "UnknownTool", "AnomalyDetected", "Files", "FileInfo", "set_max_sessions", "max_sessions",
    "live_sessions", "AsyncSandbox", "AsyncSession", "AsyncFiles", "PauseError",
]
