"""Connect RPC (JSON codec) as envd speaks it: unary calls in plain JSON,
server streams as envelopes of flags(1) | length(4, big-endian) | JSON,
and errors as {"code", "message"} (docs/serve.md, "envd")."""
from __future__ import annotations

import json
import struct
from typing import Any

from .._errors import TollgateSDKError

__all__ = ["ConnectError", "STATUS", "connect_error", "envelope", "end_of_stream", "read_envelope", "read_unary"]

# Connect codes and the HTTP status each maps to on a unary call.
STATUS = {
    "invalid_argument": 400, "unauthenticated": 401, "permission_denied": 403, "not_found": 404,
    "already_exists": 409, "resource_exhausted": 429, "failed_precondition": 400, "internal": 500,
    "unknown": 500, "unimplemented": 501, "unavailable": 503, "deadline_exceeded": 504,
}
# A request message is small (a command line, a path, some stdin): more is
# refused rather than buffered.
MESSAGE_MAX = 4 << 20


def connect_error(status: int, message: str) -> ConnectError:
    """The Connect form of a refusal the service words as an HTTP status
    (a sandbox removed, 404, or paused, 409, while an RPC ran)."""
    code = {401: "unauthenticated", 403: "permission_denied", 404: "not_found", 409: "unavailable",
            429: "resource_exhausted"}.get(status, "internal" if status >= 500 else "invalid_argument")
    return ConnectError(code, message)


class ConnectError(TollgateSDKError):
    """An RPC refused with a Connect code and a message for the client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code if code in STATUS else "internal"
        self.message = message

    @property
    def http_status(self) -> int:
        return STATUS[self.code]

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def envelope(message: dict[str, Any], flags: int = 0) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return struct.pack(">BI", flags, len(body)) + body


def end_of_stream(error: ConnectError | None = None) -> bytes:
    """The stream's trailer: always sent, carrying a mid-stream error."""
    return envelope({"error": error.as_json()} if error else {}, flags=0x02)


def _object(raw: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as e:
        raise ConnectError("invalid_argument", "the request is not JSON: %s" % e) from None
    if not isinstance(obj, dict):
        raise ConnectError("invalid_argument", "the request must be a JSON object")
    return obj


def read_unary(raw: bytes) -> dict[str, Any]:
    if len(raw) > MESSAGE_MAX:
        raise ConnectError("resource_exhausted", "the request is over %d bytes" % MESSAGE_MAX)
    return _object(raw)


def read_envelope(raw: bytes) -> dict[str, Any]:
    """The one message of a server-streaming request."""
    if len(raw) < 5:
        raise ConnectError("invalid_argument", "a streaming request is one Connect envelope")
    flags, n = struct.unpack(">BI", raw[:5])
    if flags & 0x01:
        raise ConnectError("unimplemented", "compressed messages are not supported")
    if n > MESSAGE_MAX or len(raw) != 5 + n:
        raise ConnectError("invalid_argument", "the envelope's length does not match the body")
    return _object(raw[5:])
