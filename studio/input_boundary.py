"""The one input boundary: every JSON body, posted form, upload name and importer passes these checks before a
service sees the value. Refused with 400 naming the field: NUL characters and lone surrogates (PostgreSQL and the
UTF-8 encoder choke on them), NaN / Infinity (JSON has none; Python's parser accepts them), JSON nested deeper than
MAX_JSON_DEPTH, a key given twice in one object (with its path). Every importer's JSON passes them: API bodies, JSON
files, the card JSON in a PNG or a CharX archive, each line of a chat file, and the JSON fields of forms. Django's own refusals of a body (too big, too many fields, a broken multipart) become the same
friendly 400 / 413, as a page or, under /api/, as the error JSON. The engine runs the same checks
(`assembly.reading.find_unsafe`) in its request parser and importers.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from assembly.reading import MAX_JSON_DEPTH, find_unsafe, join_path, unsafe_text
from studio.errors import ServiceError, invalid
from studio.limits import MAX_FILE_NAME

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def unsafe_input(field: str, expected: str) -> ServiceError:
    return ServiceError("INPUT_UNSAFE", f"{field}: expected {expected}", detail={"path": field, "expected": expected})


def refuse_unsafe(value: Any, field: str) -> Any:
    """`value` (decoded JSON, or text) unchanged, or a 400 naming where under `field` it breaks the rules."""
    problem = find_unsafe(value, field)
    if problem is not None:
        raise unsafe_input(problem.path, problem.expected)
    return value


class _Repeated(dict):
    """An object whose text gave a key twice (`key`); only ever seen by `_repeated_key_path`, which refuses it."""

    key: str = ""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    repeated = _Repeated(value)
    repeated.key = next(key for key, _ in pairs if key in seen or seen.add(key))
    return repeated


def _repeated_key_path(value: Any, field: str) -> str | None:
    """The path of the first key given twice in one object (depth already bounded by `find_unsafe`)."""
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _Repeated):
            return join_path(where, item.key)
        if isinstance(item, dict | list):
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((child, join_path(where, key)) for key, child in children if isinstance(child, dict | list))
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def loads(raw: str | bytes, field: str) -> Any:
    """JSON text -> a safe value: no NaN / Infinity, no number beyond Python's int-digits limit, no NUL or lone
    surrogate, no nesting deeper than MAX_JSON_DEPTH, no key given twice in one object (JavaScript keeps the last
    silently; here it is refused naming its path). json.JSONDecodeError still means "not JSON" (callers word that
    themselves)."""
    try:
        value = json.loads(raw, parse_constant=_refuse_constant, object_pairs_hook=_object)
    except RecursionError:
        raise unsafe_input(field, f"JSON nested at most {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError as error:  # NaN / Infinity, or more digits than int() reads
        raise unsafe_input(field, f"a finite number of at most 4300 digits ({str(error)[:80]})") from None
    refuse_unsafe(value, field)
    repeated = _repeated_key_path(value, field)
    if repeated is not None:
        raise ServiceError("INPUT_DUPLICATE_KEY", f"{repeated}: expected each key once in an object (this one is "
                           "given twice)", detail={"path": repeated, "expected": "each key once"})
    return value


def lines_refused(data: bytes | str, field: str) -> None:
    """Every JSON line of a JSON-lines file through `loads` (a line that is not JSON is left to the importer, which
    words it)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return
    for number, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            try:
                loads(line, f"{field} line {number}")
            except json.JSONDecodeError:
                continue


class StrictJSONField(forms.JSONField):
    """A form JSON field behind the boundary: NaN / Infinity, NUL, lone surrogates and deep JSON are the field's
    validation error, saying which; the refused text is kept in the form as typed."""

    def to_python(self, value):
        if self.disabled or not isinstance(value, str) or not value.strip():
            return super().to_python(value)
        try:
            parsed = loads(value, "")
        except json.JSONDecodeError:
            return super().to_python(value)  # Django's own "Enter a valid JSON."
        except ServiceError as error:
            where = f" ({error.detail['path']})" if error.detail.get("path") else ""
            values = {"field": self.label, "expected": error.detail.get("expected", error.message), "where": where}
            # a labelled field is named, as its other refusals name it
            raise forms.ValidationError((_("%(field)s: expected %(expected)s%(where)s.") if self.label
                                         else _("Expected %(expected)s%(where)s.")) % values) from None
        return super().to_python(json.dumps(parsed))

    def bound_data(self, data, initial):
        if isinstance(data, str) and _refused_text(data):
            return forms.fields.InvalidJSONInput(data)
        return super().bound_data(data, initial)


def _refused_text(text: str) -> bool:
    try:
        loads(text, "")
    except (ValueError, ServiceError):
        return True
    return False


# -------------------------------------------------------------------------------------------------- numbers

MAX_ROW_ID = 2**63 - 1  # the largest primary key either database stores


def whole_number(raw: Any, field: str, *, low: int = 0, high: int = MAX_ROW_ID) -> int:
    """`raw` (form or query text, or a JSON number) as a whole number from `low` to `high`, else a 400 naming
    `field`. Only ASCII digits: "²" or "٣" are not numbers a person types here, and a text longer than `high` has
    digits is refused before Python parses it (a 5,000-digit text would raise past its int-digits limit)."""
    expected = f"a whole number from {low} to {high}"
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.isascii() and raw.isdecimal() and len(raw) <= len(str(high)):
        value = int(raw)
    else:
        raise invalid(field, expected)
    if not low <= value <= high:
        raise invalid(field, expected)
    return value


def is_row_id(raw: Any) -> bool:
    """Could `raw` (a URL part, a query value, a JSON value) be a primary key? Anything else is simply not found."""
    text = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw
    return (isinstance(text, str) and text.isascii() and text.isdecimal() and len(text) <= 19
            and int(text) <= MAX_ROW_ID)


# -------------------------------------------------------------------------------------------------- middleware


class UploadNameTooLong(MultiPartParserError):
    def __init__(self, field: str, length: int):
        super().__init__(f"{field}: a file name of {length} characters")
        self.field, self.length = field, length


class FileNameLimit(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: sees an upload's name before Django cuts it to 255 characters silently."""

    def new_file(self, field_name, file_name, *args, **kwargs):
        if len(file_name or "") > MAX_FILE_NAME:
            raise UploadNameTooLong(field_name, len(file_name))

    def receive_data_chunk(self, raw_data, start):
        return raw_data

    def file_complete(self, file_size):
        return None


def _length_refusal(request) -> ServiceError | None:
    """A form body longer than its fields and one upload may be, refused by its declared length before it is read:
    Django streams a file part past FILE_UPLOAD_MAX_MEMORY_SIZE to a temporary file whatever its size, and forms are
    read here before the login and CSRF checks."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    length = request.META.get("CONTENT_LENGTH") or "0"
    if not length.isdecimal() or int(length) <= limit:
        return None
    return ServiceError("PAYLOAD_TOO_LARGE", f"body: expected at most {limit} bytes of form data and upload "
                        f"(DATA_UPLOAD_MAX_MEMORY_SIZE + FILE_UPLOAD_MAX_MEMORY_SIZE), got {int(length)}", status=413,
                        detail={"path": "body", "limit": limit})


def _form_refusal(request) -> ServiceError | None:
    """Read the posted form once (Django caches it) and check every field name, value and upload name."""
    try:
        fields, files = request.POST, request.FILES
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return ServiceError("PAYLOAD_TOO_LARGE", f"body: expected at most {limit} bytes of form data "
                            f"(DATA_UPLOAD_MAX_MEMORY_SIZE); send large files as an upload", status=413,
                            detail={"path": "body", "limit": limit})
    except TooManyFieldsSent:
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return ServiceError("INPUT_INVALID", f"body: expected at most {limit} form fields", status=400,
                            detail={"path": "body", "limit": limit})
    except TooManyFilesSent:
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return ServiceError("INPUT_INVALID", f"body: expected at most {limit} files", status=400,
                            detail={"path": "body", "limit": limit})
    except UploadNameTooLong as error:
        return unsafe_input(error.field, f"a file name of at most {MAX_FILE_NAME} characters, got {error.length}")
    except MultiPartParserError as error:
        return ServiceError("INPUT_INVALID", f"body: expected a well-formed multipart form, with part headers "
                            f"(file names included) of at most 10 KiB ({error})", status=400,
                            detail={"path": "body", "limit": 10 * 1024})
    for name, values in fields.lists():
        for text in (name, *values):
            problem = unsafe_text(text)
            if problem:
                return unsafe_input(name if text is not name else "field names", problem)
    for name, uploads in files.lists():
        for upload in uploads:
            problem = unsafe_text(upload.name or "")
            if problem:
                return unsafe_input(f"{name} (file name)", problem)
    return None


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class InputBoundaryMiddleware:
    """Checks posted forms before CSRF and the views read them (placed before CsrfViewMiddleware, which would
    otherwise meet Django's own refusals first and answer a bare "Bad Request (400)")."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in WRITE_METHODS and request.content_type in FORM_TYPES:
            refusal = _length_refusal(request) or _form_refusal(request)
            if refusal is not None:
                return refusal_response(request, refusal)
        return self.get_response(request)


def refusal_response(request, error: ServiceError) -> HttpResponse:
    """The error JSON under /api/, otherwise a small page (or an htmx fragment) saying the same."""
    if request.path.startswith("/api/"):
        return JsonResponse(error.to_json(), status=error.status, json_dumps_params={"ensure_ascii": False})
    title = {404: _("Not found"), 403: _("Not allowed"), 413: _("Too large"), 503: _("Took too long"),
             422: _("Could not assemble")}.get(error.status, _("Not accepted"))
    page = render_to_string("errors/refused.html", {
        "title": title, "error": error, "refusal": error.to_json(), "back": _back(request),
        "writing": request.method in WRITE_METHODS})
    return HttpResponse(page, status=error.status)


def _back(request) -> str:
    # Same-site pages only: the Referer is the user's page when it names our own host.
    referer = request.headers.get("Referer", "")
    host = request.get_host() if request.headers.get("Host") else ""
    if host and referer.split("/")[2:3] == [host]:
        return referer
    return "/"
