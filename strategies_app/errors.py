"""The refusals of the studio's services and views, in the engine's error shape.

As JSON: {"ok": false, "code", "status", "error", "detail"}: the same shape as `assembly.AssemblyError`,
`StrategyError` and `ImportInvalid`, so a view answers all of them the same way.
"""

from __future__ import annotations

from typing import Any

from assembly.errors import CodedError


class ServiceError(CodedError):
    """A refused service call or view request."""


def not_found(what: str, key: Any) -> ServiceError:
    return ServiceError("NOT_FOUND", f"{what} {key!r} does not exist", status=404, detail={"id": str(key)})


def forbidden(message: str) -> ServiceError:
    return ServiceError("FORBIDDEN", message, status=403)


def invalid(field: str, expected: str, *, status: int = 400, code: str = "INPUT_INVALID") -> ServiceError:
    return ServiceError(code, f"{field}: expected {expected}", status=status, detail={"path": field,
                                                                                     "expected": expected})
