"""What a request that went wrong answers: a refusal (`CodedError`) a page view let through becomes the small
refusal page (the error JSON under /api/), and under /api/ every error answer is the error JSON, 404, 405 and 500
included (Django's own are HTML)."""

from __future__ import annotations

from django.http import JsonResponse
from django.utils.translation import gettext as _

from assembly.errors import CodedError
from studio.errors import ServiceError
from studio.input_boundary import refusal_response

_API_ERRORS = {
    404: ("NOT_FOUND", "no such API route or object: see web.md \"HTTP API\" for the routes"),
    405: ("METHOD_NOT_ALLOWED", "this method is not allowed here"),
    500: ("INTERNAL_ERROR", "the server failed on this request; it is logged, and nothing was stored"),
}


def _api_error(status: int, response) -> JsonResponse:
    code, message = _API_ERRORS.get(status, ("HTTP_ERROR", f"the request failed with HTTP {status}"))
    detail = {}
    if status == 405 and response.has_header("Allow"):
        detail["allowed"] = [m.strip() for m in response["Allow"].split(",")]
    answer = JsonResponse(ServiceError(code, message, status=status, detail=detail).to_json(), status=status)
    if response.has_header("Allow"):
        answer["Allow"] = response["Allow"]
    return answer


def _page_405(request, response):
    allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
    if "POST" in allowed:
        message = _("This address takes the form on its page (%(methods)s), not a visit: nothing was done. Go "
                    "back and use the page's button.") % {"methods": ", ".join(allowed)}
    else:
        message = _("This address does not take %(method)s (it takes %(methods)s): nothing was done.") % {
            "method": request.method, "methods": ", ".join(allowed) or "—"}
    answer = refusal_response(request, ServiceError("METHOD_NOT_ALLOWED", message, status=405,
                                                    detail={"allowed": allowed}))
    if response.has_header("Allow"):
        answer["Allow"] = response["Allow"]
    return answer


class ErrorAnswersMiddleware:
    """Placed near the top of MIDDLEWARE so that it sees every answer, Django's own refusals included."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (request.path.startswith("/api/") and response.status_code >= 400
                and not response.get("Content-Type", "").startswith("application/json")):
            return _api_error(response.status_code, response)
        if response.status_code == 405 and not response.content and not request.path.startswith("/api/"):
            return _page_405(request, response)  # Django's own 405 is an empty page: say what the address takes
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, CodedError):
            return refusal_response(request, exception)
        return None
