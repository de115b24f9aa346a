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

Install with `pip install ./sdk` from a tollgate checkout (Python 3.11+;
no dependencies; the extra [mcp] adds the MCP server).  The code inside the
container uses the in-container client (`from tollgate import NAME`), not
this package.  Everything not in __all__ is private and may change.
"""
from ._aio import AsyncFiles, AsyncSandbox, AsyncSession
from ._approvals import ApprovalRequest
from ._audit import Call
from ._errors import (AnomalyDetected, ApprovalTimeout, BadRequest, BudgetExhausted, CellTimeout,
                      ContainerError, CustomToolError, FileOperationError, InvalidArgument, PauseError, PolicyError,
                      ProgramFailed, SandboxUnavailable, SessionClosed, SessionLimit, TollgateSDKError,
                      ToolDefinitionError, ToolDenied, UnknownTool)
from ._remote import RemoteResult, RemoteSandbox, RemoteSession, ServiceRefused
from ._repair import RepairOutcome, Usage, repair
from ._sandbox import Result, Sandbox, find_rootfs, find_tollgate
from ._schema import hint_schema, signature_schema, to_policy_schema
from ._server import ToolServer
from ._session import FileInfo, Files, Session, live_sessions, max_sessions, set_max_sessions
from ._tools import Tool, as_tool, condition, from_langchain, tool

__all__ = [
    # running code
    "Sandbox", "Session", "Result", "Call", "ApprovalRequest", "Files", "FileInfo",
    "AsyncSandbox", "AsyncSession", "AsyncFiles",
    "set_max_sessions", "max_sessions", "live_sessions", "find_rootfs", "find_tollgate",
    # the client mode: the same, against a `tollgate serve` daemon (docs/serve.md)
    "RemoteSandbox", "RemoteSession", "RemoteResult",
    # tools
    "tool", "Tool", "as_tool", "from_langchain", "condition", "signature_schema", "hint_schema",
    "to_policy_schema", "ToolServer",
    # self-repair
    "repair", "RepairOutcome", "Usage",
    # errors: every one a TollgateSDKError
    "TollgateSDKError", "InvalidArgument", "ToolDefinitionError", "SandboxUnavailable", "ContainerError",
    "PolicyError", "ProgramFailed", "CellTimeout", "SessionLimit", "SessionClosed", "FileOperationError",
    "PauseError", "ToolDenied", "ApprovalTimeout", "BudgetExhausted", "BadRequest", "UnknownTool",
    "AnomalyDetected", "ServiceRefused", "CustomToolError",
]
