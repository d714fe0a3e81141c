"""Refusals with a stable code, an HTTP status and a detail (engine.md §1, §9).

As JSON every refusal reads {"ok": false, "code", "status", "error", "detail"}, so the web app answers all of them
the same way. `CodedError` holds that shape once; each concept's error is a named subclass.
"""

from __future__ import annotations

from typing import Any


class CodedError(Exception):
    def __init__(self, code: str, message: str, *, status: int = 400, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.detail = detail or {}

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "status": self.status, "error": self.message, "detail": self.detail}


class AssemblyError(CodedError):
    """A refused assembly."""
