"""`tollgate mcp`: the host SDK's sandbox as an MCP server (docs/mcp.md).

    python -m tollgate_sdk.mcp --tollgate PATH --root DIR [--policy FILE] ...
"""
from ._server import main

__all__ = ["main"]
