"""The refusals of the studio's services and views, in the engine's error shape.

As JSON: {"ok": false, "code", "status", "error", "detail"}: the same shape as `assembly.AssemblyError`,
`StrategyError` and `ImportInvalid`, so a view answers all of them the same way.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    def __init__(self, code: str, message: str, *, status: int = 400, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.detail = detail or {}

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "status": self.status, "error": self.message, "detail": self.detail}


def not_found(what: str, key: Any) -> ServiceError:
    return ServiceError("NOT_FOUND", f"{what} {key!r} does not exist", status=404, detail={"id": str(key)})


def forbidden(message: str) -> ServiceError:
    return ServiceError("FORBIDDEN", message, status=403)


def invalid(field: str, expected: str, *, status: int = 400, code: str = "INPUT_INVALID") -> ServiceError:
    return ServiceError(code, f"{field}: expected {expected}", status=status, detail={"path": field,
                                                                                     "expected": expected})
