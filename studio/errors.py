"""The refusals of the studio's services and views, in the engine's error shape.

As JSON: {"ok": false, "code", "status", "error", "detail"}: `ServiceError` is a `CodedError` like every engine
refusal, so a view or command catches `CodedError` and answers all of them the same way.
"""

from __future__ import annotations

from typing import Any

from assembly.errors import CodedError


class ServiceError(CodedError):
    """A refused service call or view request."""


class FormInvalid(ServiceError):
    """A form the browser posted is malformed (400), with the first problem in words. Pages that answer a bad form
    differently from other refusals (a message and a redirect, no kept text) catch this class first."""

    def __init__(self, message: str):
        super().__init__("INPUT_INVALID", message)


def not_found(what: str, key: Any) -> ServiceError:
    shown = key if len(str(key)) <= 80 else f"{str(key)[:80]}… ({len(str(key))} characters)"
    return ServiceError("NOT_FOUND", f"{what} {shown!r} does not exist", status=404, detail={"id": str(shown)})


def forbidden(message: str) -> ServiceError:
    return ServiceError("FORBIDDEN", message, status=403)


def invalid(field: str, expected: str, *, status: int = 400, code: str = "INPUT_INVALID") -> ServiceError:
    return ServiceError(code, f"{field}: expected {expected}", status=status, detail={"path": field,
                                                                                     "expected": expected})
