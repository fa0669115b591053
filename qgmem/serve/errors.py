"""One error type for every refusal the server makes, with the HTTP status both front ends report.

The HTTP API sends `{"detail": message, "field": field}` with `status` (and `Retry-After` when set);
the MCP tools return the same line as an error result. Messages are one line and name the field.
"""

from __future__ import annotations

FORBIDDEN = "this key may not use that namespace"  # the same words whether the namespace exists or not


class ServeError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.field, self.retry_after = status, message, field, retry_after

    def line(self) -> str:
        """`403: message` (what an MCP client shows)."""
        return f"{self.status}: {self.message}"


def forbidden() -> ServeError:
    return ServeError(403, FORBIDDEN)
