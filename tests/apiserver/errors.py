"""API errors and the `Status` bodies the real API server sends with them.

Clients branch on `code` and `reason` (a controller retries a 409 ``Conflict``, re-lists on a 410
``Expired``), so every failure the emulator reports carries the same pair the real server would.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

REASONS: dict[int, str] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A request the API server refuses; rendered as a `Status` object with the HTTP `code`."""

    def __init__(
        self, code: int, message: str, reason: str | None = None, details: Obj | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> Obj:
        """The `Status` body, shaped like the real server's (`kind: Status`, `status: Failure`)."""
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(group: str, plural: str, name: str) -> ApiError:
    """404 for a missing object: ``services "web" not found``."""
    return ApiError(
        404,
        f'{_qualified(group, plural)} "{name}" not found',
        details=_details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    """409 ``AlreadyExists`` for a create whose name is taken."""
    return ApiError(
        409,
        f'{_qualified(group, plural)} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str) -> ApiError:
    """409 ``Conflict`` for a write based on a stale resourceVersion (optimistic concurrency)."""
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": the object has '
        "been modified; please apply your changes to the latest version and try again",
        details=_details(group, plural, name),
    )


def expired(requested: int, oldest: int) -> ApiError:
    """410 ``Expired``: the requested resourceVersion was compacted out of the history."""
    return ApiError(410, f"too old resource version: {requested} ({oldest})")


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(group: str, plural: str, name: str) -> Obj:
    details: Obj = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details
