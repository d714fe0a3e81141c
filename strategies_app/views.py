"""The resource import page (admins): upload a SillyTavern file, see the dry-run report, then import it."""

from django.shortcuts import render

from strategies_app import services
from strategies_app.access import MANAGE_RESOURCES, require
from strategies_app.api import MAX_BODY_BYTES, REFUSALS, file_content, flag, too_large
from strategies_app.errors import ServiceError

KINDS = [("preset", "Chat-completion preset (JSON, or settings.json)"), ("character", "Character card (JSON or PNG)"),
         ("worldbook", "World book (JSON, or a card that embeds one)"), ("persona", "Persona (JSON, or settings.json)")]


def resource_import(request):
    try:
        require(request.user, MANAGE_RESOURCES, "import resources")
    except ServiceError as error:
        return render(request, "resources/import.html", {"error": error.to_json(), "kinds": KINDS},
                      status=error.status)
    context = {"kinds": KINDS, "kind": request.POST.get("kind", "preset"), "allowed": True}
    status = 200
    if request.method == "POST":
        try:
            context["report"] = _import(request)
        except REFUSALS as error:
            context["error"], status = error.to_json(), error.status
    return render(request, "resources/import.html", context, status=status)


def _import(request) -> dict:
    kind, upload = request.POST.get("kind"), request.FILES.get("file")
    if kind not in services.IMPORTERS:
        raise ServiceError("INPUT_INVALID", "kind: expected one of " + ", ".join(services.IMPORTERS),
                           detail={"path": "kind"})
    if upload is None:
        raise ServiceError("INPUT_INVALID", "file: expected a file upload", detail={"path": "file"})
    if upload.size > MAX_BODY_BYTES:
        raise too_large("file", upload.size)
    name = (upload.name or "").rsplit(".", 1)[0] or None
    return services.IMPORTERS[kind](user=request.user, data=file_content(upload.read(), kind=kind), name=name,
                                    dry_run=flag(request.POST.get("dry_run"))).to_json()
