"""The one error the service answers with: an HTTP status and a message
in e2b's shape ({"code", "message"})."""
from __future__ import annotations

from .._errors import TollgateSDKError

__all__ = ["ServiceError"]


class ServiceError(TollgateSDKError):
    """A request the service refuses: an HTTP status and a message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
