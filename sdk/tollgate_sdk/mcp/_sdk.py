"""The host SDK's names this package uses, each with the type this package
relies on: one place that meets the core, so the MCP server type-checks
whether or not the core's own annotations have landed (a cast is no call,
and a typed core only confirms it)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .. import Sandbox as _Sandbox
from .. import as_tool as _as_tool
from .. import set_max_sessions as _set_max_sessions
from .._approvals import control_request as _control_request
from .._text import escape_json as _escape_json
from .._text import one_line as _one_line

one_line = cast(Callable[..., str], _one_line)
"""one_line(value, limit=...): value on one line, control and format characters escaped."""

escape_json = cast(Callable[[Any], str], _escape_json)
"""JSON of a value with every non-ASCII character escaped."""

control_request = cast(Callable[..., Any], _control_request)
"""control_request(socket_path, request, timeout=...): one JSON request to a container's control socket."""

as_tool = cast(Callable[[Any], Any], _as_tool)
set_max_sessions = cast(Callable[[int], None], _set_max_sessions)
Sandbox = cast(Callable[..., Any], _Sandbox)
