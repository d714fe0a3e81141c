"""JSON API for strategies and resources (web.md "HTTP API"): thin views over access checks and services."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.text import slugify

from assembly.strategy import strategy_backend
from strategies_app import services, sillytavern
from strategies_app.access import (
    EDIT_STRATEGY,
    MANAGE_RESOURCES,
    require,
    resource_for_read,
    revision_for_read,
    strategy_for_edit,
    strategy_for_read,
)
from strategies_app.models import Strategy
from strategies_app.presenters import named
from strategies_app.selectors import listed_strategies, resources_by_kind
from studio.errors import ServiceError, not_found
from studio.http import api_route, flag, json_body, json_object, ok, uploaded_file


def _strategy_row(strategy: Strategy, latest: str | None) -> dict:
    return named({"id": strategy.slug, "name": strategy.name, "builtin": strategy.builtin,
                  "backend": strategy_backend(strategy.draft), "placement": strategy.draft["placement"],
                  "version": strategy.version, "latest_revision": latest})


@api_route("GET", "POST")
def strategies(request):
    if request.method == "POST":
        require(request.user, EDIT_STRATEGY, "import strategies")
        report = services.strategy_import(user=request.user, document=json_body(request),
                                          dry_run=flag(request.GET.get("dry_run")))
        return ok(report.to_json(), status=200 if report.dry_run else 201)
    return ok([_strategy_row(strategy, strategy.latest_revision) for strategy in listed_strategies()])


@api_route("GET")
def strategy_detail(request, slug):
    strategy = strategy_for_read(slug)
    revision = request.GET.get("revision")
    if request.GET.get("format") == "export":
        document = revision_for_read(strategy, revision).document if revision else strategy.draft
        response = ok({**document, "id": strategy.slug})
        response["Content-Disposition"] = f'attachment; filename="{strategy.slug}.json"'
        return response
    revisions = [{"revision": r.revision, "note": r.note, "created_at": r.created_at.isoformat(),
                  "author": r.author.get_username() if r.author else None}
                 for r in strategy.revisions.select_related("author")]
    return ok(named({"id": strategy.slug, "name": strategy.name, "builtin": strategy.builtin,
                     "owner": strategy.owner.get_username() if strategy.owner else None,
                     "version": strategy.version, "draft": strategy.draft, "revisions": revisions}))


@api_route("PUT")
def strategy_draft(request, slug):
    """{"version": <the version the edit started from>, "draft": <A.2 document>} -> the new version."""
    strategy = strategy_for_edit(request.user, slug)
    body = json_object(request)
    if "draft" not in body:
        raise ServiceError("INPUT_INVALID", "draft: expected the strategy document", detail={"path": "draft"})
    updated = services.draft_update(strategy=strategy, user=request.user, document=body["draft"],
                                    expected_version=body.get("version"))
    return ok({"ok": True, "id": updated.slug, "version": updated.version, "draft": updated.draft})


@api_route("GET", "POST")
def strategy_revisions(request, slug):
    if request.method == "GET":
        strategy = strategy_for_read(slug)
        return ok([{"revision": r.revision, "note": r.note, "created_at": r.created_at.isoformat()}
                   for r in strategy.revisions.all()])
    strategy = strategy_for_edit(request.user, slug)
    body = json_object(request) if request.body else {}
    note = body.get("note", "")
    if not isinstance(note, str):
        raise ServiceError("INPUT_INVALID", "note: expected a string", detail={"path": "note"})
    revision, created = services.revision_save(strategy=strategy, user=request.user, note=note)
    return ok({"ok": True, "id": strategy.slug, "revision": revision.revision, "created": created},
              status=201 if created else 200)


@api_route("POST")
def strategy_copy(request, slug):
    require(request.user, EDIT_STRATEGY, "copy strategies")
    source = strategy_for_read(slug)
    body = json_object(request) if request.body else {}
    copy = services.strategy_copy(user=request.user, source=source, name=body.get("name"))
    return ok({"ok": True, "id": copy.slug, "version": copy.version}, status=201)


# ---------------------------------------------------------------------------------------------- resources


@api_route("GET")
def resources(request):
    return ok({kind: [{"id": row.pk, "name": row.name} for row in rows] for kind, rows in resources_by_kind().items()})


@api_route("POST")
def resource_import(request, kind):
    """Upload a SillyTavern file (multipart `file`, or the raw JSON / PNG body); `?dry_run=1` reports only."""
    require(request.user, MANAGE_RESOURCES, "import resources")
    if kind not in services.IMPORTERS:
        raise not_found("resource kind", kind)
    raw, filename = uploaded_file(request)
    duplicate = request.GET.get("duplicate") or request.POST.get("duplicate")
    extra = {"duplicate": duplicate} if duplicate and kind in services.TWIN_KINDS else {}
    report = services.IMPORTERS[kind](user=request.user, data=sillytavern.upload_content(raw, kind=kind),
                                      name=request.GET.get("name") or filename.rsplit(".", 1)[0] or None,
                                      dry_run=flag(request.GET.get("dry_run") or request.POST.get("dry_run")), **extra)
    return ok(report.to_json(), status=200 if report.dry_run else 201)


@api_route("GET")
def resource_export(request, kind, pk):
    """The resource as the SillyTavern file it came from (`?format=png` for a character: a PNG card)."""
    row = resource_for_read(kind, pk)
    if kind == "character" and request.GET.get("format") == "png":
        response = HttpResponse(sillytavern.character_png(row), content_type="image/png")
        response["Content-Disposition"] = f'attachment; filename="{_export_name(row, kind, "png")}"'
        return response
    response = ok(sillytavern.resource_document(kind, row))
    response["Content-Disposition"] = f'attachment; filename="{_export_name(row, kind, "json")}"'
    return response


def _export_name(row, kind: str, extension: str) -> str:
    """`<slug of the name>-<kind>.<extension>`, e.g. `default-preset.json` (the id when the name has no letters);
    when another resource of the kind has the same name, its id too (`seraphina-character-7.json`)."""
    shared = type(row).objects.filter(name=row.name).exclude(pk=row.pk).exists()
    return f"{slugify(row.name)[:80].strip('-') or row.pk}-{kind}{f'-{row.pk}' if shared else ''}.{extension}"


@api_route("GET")
def character_avatar(request, pk):
    row = resource_for_read("character", pk)
    if not row.avatar:
        raise not_found("avatar of character", pk)
    return HttpResponse(bytes(row.avatar), content_type="image/png")
