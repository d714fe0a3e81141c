"""The HTTP plumbing both apps share: one decorator for every JSON API route, the readers of request bodies,
uploads and posted forms, and the refusals they raise.

Every answer that is not a success has the engine's error shape {"ok": false, "code", "status", "error", "detail"}:
401 for anonymous callers (not a redirect to the login page), 403 for a missing permission or a failed CSRF check,
404, 405, 409 from services, 400 / 413 / 415 for bad bodies. API routes are session-authenticated, so every write
carries the CSRF token (the `X-CSRFToken` header htmx sends, or the form field).
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.translation import gettext, pgettext
from django.views.decorators.csrf import csrf_exempt

from assembly.errors import CodedError
from assembly.reading import MAX_IMPORT_BYTES
from assembly.sillytavern.png import PNG_SIGNATURE, card_json_from_png
from studio import input_boundary
from studio.errors import FormInvalid, ServiceError
from studio.wording import label_colon

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
MAX_BODY_BYTES = MAX_IMPORT_BYTES  # 5 MiB, quality.md "Bad input"


def not_json_where(error: json.JSONDecodeError) -> str:
    """The decoder's words and where it stopped: "Expecting value: line 1, column 1". Some of its messages end in
    "at" ("Unterminated string starting at"), so the place follows a colon, never another "at"."""
    return f"{error.msg}: line {error.lineno}, column {error.colno}"


def error_response(error: CodedError) -> JsonResponse:
    return JsonResponse(error.to_json(), status=error.status, json_dumps_params={"ensure_ascii": False})


def ok(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, safe=False, json_dumps_params={"ensure_ascii": False})


def _csrf_refusal(request) -> ServiceError | None:
    refused = CsrfViewMiddleware(lambda _request: None).process_view(request, None, (), {})
    if refused is None:
        return None
    return ServiceError("CSRF_FAILED", "CSRF check failed: send the csrftoken cookie's token in the X-CSRFToken "
                        "header", status=403)


def api_route(*methods: str):
    """Login (401), allowed methods (405), CSRF on writes (403) and refusals -> error JSON, for one API view."""

    def decorate(view):
        @functools.wraps(view)
        def handler(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return error_response(ServiceError("NOT_AUTHENTICATED", "log in first (/accounts/login/)",
                                                   status=401))
            if request.method not in methods:
                response = error_response(ServiceError(
                    "METHOD_NOT_ALLOWED", f"{request.method} is not allowed here (use {', '.join(methods)})",
                    status=405, detail={"allowed": list(methods)}))
                response["Allow"] = ", ".join(methods)
                return response
            if request.method not in SAFE_METHODS:
                refusal = _csrf_refusal(request)
                if refusal is not None:
                    return error_response(refusal)
            try:
                return view(request, *args, **kwargs)
            except CodedError as error:
                return error_response(error)

        # Our own 401 JSON instead of the login redirect; our own CSRF check (above) instead of Django's HTML 403.
        return login_not_required(csrf_exempt(handler))

    return decorate


def _body_bytes(request) -> bytes:
    length = request.META.get("CONTENT_LENGTH") or "0"
    if length.isdecimal() and int(length) > MAX_BODY_BYTES:
        raise too_large("body", int(length))
    try:
        body = request.body
    except RequestDataTooBig:
        raise too_large("body", None) from None
    if len(body) > MAX_BODY_BYTES:
        raise too_large("body", len(body))
    return body


def too_large(field: str, size: int | None) -> ServiceError:
    got = f", got {size} bytes" if size is not None else ""
    return ServiceError("PAYLOAD_TOO_LARGE", f"{field}: expected at most 5 MiB ({MAX_BODY_BYTES} bytes){got}",
                        status=413, detail={"path": field, "limit": MAX_BODY_BYTES})


def parse_json(raw: bytes, field: str) -> Any:
    """JSON bytes through the input boundary: 415 for non-UTF-8, 400 for not JSON or unsafe values (naming where)."""
    try:
        return input_boundary.loads(raw.decode("utf-8-sig"), field)
    except UnicodeDecodeError:
        raise ServiceError("UNSUPPORTED_MEDIA_TYPE", f"{field}: expected UTF-8 JSON text", status=415,
                           detail={"path": field}) from None
    except json.JSONDecodeError as error:
        raise ServiceError("INPUT_NOT_JSON", f"{field}: not JSON ({not_json_where(error)})",
                           detail={"path": field}) from None


def json_body(request) -> Any:
    """The request body as JSON: Content-Type application/json (415), at most 5 MiB (413), valid JSON (400)."""
    if request.content_type != "application/json":
        raise ServiceError("UNSUPPORTED_MEDIA_TYPE",
                           f"Content-Type: expected application/json, got {request.content_type or 'none'}",
                           status=415, detail={"path": "Content-Type"})
    return parse_json(_body_bytes(request), "body")


def json_object(request) -> dict[str, Any]:
    body = json_body(request)
    if not isinstance(body, dict):
        raise ServiceError("INPUT_INVALID", "body: expected a JSON object", detail={"path": "body"})
    return body


def uploaded_file(request, field: str = "file") -> tuple[bytes, str]:
    """An upload as (bytes, file name): a multipart `file` field, or the raw body (JSON or PNG)."""
    if request.content_type == "multipart/form-data":
        try:
            upload = request.FILES.get(field)
        except RequestDataTooBig:
            raise too_large(field, None) from None
        if upload is None:
            raise ServiceError("INPUT_INVALID", f"{field}: expected a file upload", detail={"path": field})
        if upload.size > MAX_BODY_BYTES:
            raise too_large(field, upload.size)
        return upload.read(), upload.name or ""
    if request.content_type not in ("application/json", "image/png", "application/octet-stream"):
        raise ServiceError("UNSUPPORTED_MEDIA_TYPE", f"Content-Type: expected multipart/form-data, application/json "
                           f"or image/png, got {request.content_type or 'none'}", status=415,
                           detail={"path": "Content-Type"})
    return _body_bytes(request), ""


def file_content(raw: bytes, *, kind: str, field: str = "file") -> Any:
    """File bytes -> what an importer takes: PNG bytes for a card (or a card's world book), JSON otherwise."""
    if raw.startswith(PNG_SIGNATURE):
        if kind in ("character", "worldbook"):
            # The card JSON inside the PNG passes the input boundary too (the engine reads PNGs leniently).
            try:
                text, path = card_json_from_png(raw)
            except CodedError:
                return raw  # the importer refuses it, with its own words
            with contextlib.suppress(json.JSONDecodeError):  # not JSON: the importer refuses it, in its own words
                input_boundary.loads(text, f"{field}.{path}")
            return raw
        raise ServiceError("UNSUPPORTED_MEDIA_TYPE", f"{field}: expected a JSON {kind} file, got a PNG image",
                           status=415, detail={"path": field})
    return parse_json(raw, field)


def flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes", "on")


def valid_form(form_class, request, *, of: str | None = None, **kwargs):
    """`form_class` bound to the POST data, valid, or `FormInvalid` naming the first field and its first error.
    A field with a label of its own (the one its page shows) is named by it, and `of` (the rule a form edits, as
    the page names it) says whose field it is; a field without one is named as it is posted."""
    form = form_class(request.POST, **kwargs)
    if not form.is_valid():
        field, errors = next(iter(form.errors.as_data().items()))
        if field == "__all__":
            raise FormInvalid(errors[0].messages[0])
        raise FormInvalid(_form_error_line(form.fields[field], field, errors[0], of))
    return form


def _form_error_line(field, name: str, error, of: str | None) -> str:
    """`<where>: <what was wrong>` in the page's language: where is the field's label (of the rule `of`), what
    is the number range for a bounded whole number, else the field's own message (its own `name: ` left out)."""
    message = error.messages[0]
    if field.label is None:
        return f"{name}{label_colon()}{message}"
    where = str(field.label)
    if of:
        where = gettext("%(field)s of the rule “%(rule)s”") % {"field": where, "rule": of}
    low, high = getattr(field, "min_value", None), getattr(field, "max_value", None)
    if error.code in ("invalid", "min_value", "max_value") and low is not None and high is not None:
        expected = pgettext("expected", "a whole number from %(low)s to %(high)s") % {"low": low, "high": high}
    elif error.code == "max_length":
        expected = pgettext("expected", "at most %(limit)s characters long") % {"limit": field.max_length}
    else:
        expected = None
    if expected is not None:
        return pgettext("expected", "%(where)s: expected%(expected)s") % {
            "where": where, "expected": f" {expected}" if expected[:1].isascii() else expected}
    for colon in (": ", "："):  # a form's own message that names its field
        message = message.removeprefix(f"{name}{colon}")
    return f"{where}{label_colon()}{message}"
