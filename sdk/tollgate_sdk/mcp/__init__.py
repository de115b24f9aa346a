"""`tollgate mcp`: the host SDK's sandbox as an MCP server, on the official
MCP Python SDK (the `mcp` package), over stdio or Streamable HTTP
(docs/mcp.md).

    python -m tollgate_sdk.mcp --tollgate PATH --root DIR [--policy FILE] [--http HOST:PORT] ...
"""
from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Serve until the client leaves or a signal comes; 0, or exit 1 with a
    message naming `make deps` when the `mcp` package is missing."""
    try:
        import mcp  # noqa: F401  (pinned in sdk/requirements.lock)
    except ImportError:
        sys.exit("tollgate mcp: the Python package `mcp` is missing for %s: run `make deps` (it makes "
                 "the project's .venv, which `tollgate mcp` uses), or set TOLLGATE_PYTHON to a Python "
                 "that has it (pip install './sdk[mcp]')" % sys.executable)
    from .._pid1 import split_when_pid1
    split_when_pid1()  # PID 1 of a container with no init: stay its init
    from ._server import main as serve
    return serve(argv)
