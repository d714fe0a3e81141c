"""The engine's error for assembly requests: a stable code, an HTTP status and a detail (engine.md §1, §9)."""

from __future__ import annotations

from typing import Any


class AssemblyError(Exception):
    """A refused assembly. As JSON: {"ok": false, "code", "status", "error", "detail"}."""

    def __init__(self, code: str, message: str, *, status: int = 400, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.detail = detail or {}

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "status": self.status, "error": self.message, "detail": self.detail}
