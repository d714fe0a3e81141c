"""The resource pages (web.md screen 6): every imported SillyTavern resource with its export, and the import page
(admins)."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from assembly.errors import CodedError
from assembly.sillytavern.detect import KIND_NAMES, detect_upload
from strategies_app import services
from strategies_app.access import MANAGE_RESOURCES, can_manage_resources, regex_script_for_manage, require
from strategies_app.presenters import regex_script_row
from strategies_app.selectors import regex_scripts, resource_rows
from strategies_app.sillytavern import upload_content
from studio.errors import ServiceError
from studio.http import MAX_BODY_BYTES, flag, parse_json, too_large
from studio.paging import list_page

AUTO = "auto"
KINDS = [(AUTO, gettext_lazy("Detect from the file")),
         ("preset", gettext_lazy("Chat-completion preset (JSON, or settings.json)")),
         ("character", gettext_lazy("Character card (JSON or PNG)")),
         ("worldbook", gettext_lazy("World book (JSON, or a card that embeds one)")),
         ("persona", gettext_lazy("Persona (JSON, or settings.json)")),
         ("regex", gettext_lazy("Regex scripts (JSON: one script, a list, or a settings.json)")),
         ("template", gettext_lazy("Text-completion template (instruct, context, system prompt, or a master "
                                   "export of them)"))]


ADMIN_CHANGE = {"template": "admin:strategies_app_texttemplate_change"}


def _section_words() -> dict[str, tuple[str, str | None]]:
    """kind -> (section title, what its item count counts)."""
    return {"preset": (_("Presets"), _("prompts")), "character": (_("Character cards"), None),
            "worldbook": (_("World books"), _("entries")), "persona": (_("Personas"), None),
            "template": (_("Text-completion templates"), None)}


ITEMS_LISTED = 200  # items an import report names (a 50,000-entry world book's list was 1.5 MB of HTML)


def _import_items_heading(kind: str) -> str | None:
    """What an import report's list names, by kind; None where the list only repeats the name above it."""
    return {"strategy": _("Its rules, in order:"), "preset": _("Its prompts, in the preset's order:"),
            "character": _("The card fields that hold text:"), "worldbook": _("Its entries:"),
            "regex": _("Its scripts:"), "template": _("Its parts:")}.get(kind)


@require_GET
def resource_list(request):
    """Every imported SillyTavern resource with its export back to the same format (web.md screen 6); admins also
    find the import page and each resource's admin page."""
    words = _section_words()
    regex_page = list_page(request, regex_scripts(), param="regex_page")
    return render(request, "resources/list.html", {
        # each kind a page of its own (`<kind>_page`): one kind's thousands of rows never make the page long
        "sections": [{"kind": kind, "title": words[kind][0], "page": list_page(request, rows, param=f"{kind}_page"),
                      "items_label": words[kind][1],
                      "admin_change": ADMIN_CHANGE.get(kind, f"admin:strategies_app_{kind}_change")}
                     for kind, rows in resource_rows()],
        "regex_page": regex_page, "regex_rows": [regex_script_row(s) for s in regex_page.rows],
        "manage": can_manage_resources(request.user), "admin": request.user.is_staff})


@require_POST
def regex_script_toggle(request, pk):
    """Enable or disable a global regex script (`disabled` = 1 or 0); htmx gets the row back, a form the page."""
    try:
        script = regex_script_for_manage(request.user, pk)
        script = services.regex_script_update(script=script, disabled=flag(request.POST.get("disabled")))
    except CodedError as error:
        return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=error.status)
    if request.htmx:
        return render(request, "resources/list.html#regex-row", {
            "row": regex_script_row(script), "manage": True, "admin": request.user.is_staff})
    return redirect("resources")


def resource_import(request):
    """The import page: pick a file (its kind detected, and changeable); a dry run keeps the upload under a token
    so its report's "Import it" imports the same bytes without picking the file again."""
    try:
        require(request.user, MANAGE_RESOURCES, "import resources")
    except ServiceError as error:
        return render(request, "resources/import.html", {"error": error.to_json(), "kinds": KINDS},
                      status=error.status)
    # a fresh form starts with a dry run; a refused upload comes back as the user sent it
    context = {"kinds": KINDS, "import_kinds": KINDS[1:], "kind": request.POST.get("kind", AUTO), "allowed": True,
               "dry_run": True}
    status = 200
    if request.method == "POST":
        try:
            context["report"] = _import(request)
            context["kind"] = context["report"]["kind"]
            context["items_heading"] = _import_items_heading(context["kind"])
            # a big book's report names its first entries and counts the rest
            items = context["report"]["items"] or []
            context["listed_items"], context["unlisted_items"] = items[:ITEMS_LISTED], max(len(items) - ITEMS_LISTED, 0)
        except CodedError as error:
            context["error"], status = error.to_json(), error.status
            if not request.POST.get("token"):  # the upload form's own post: its choice is kept
                context["dry_run"] = flag(request.POST.get("dry_run"))
            # "Import it" as another kind that failed: the upload is still kept, so offer it again
            if request.POST.get("token") and _still_kept(request):
                context["retry"] = {"token": request.POST["token"], "kind": context["kind"],
                                    "detected": (error.detail or {}).get("detected")}
    return render(request, "resources/import.html", context, status=status)


def _still_kept(request) -> bool:
    try:
        services.upload_claimed(user=request.user, token=request.POST["token"])
    except CodedError:
        return False
    return True


def _upload(request) -> tuple[bytes, str, object | None]:
    """(bytes, file name, the kept upload they came from or None): a new file, or a dry run's token."""
    upload = request.FILES.get("file")
    if upload is None and request.POST.get("token"):
        kept = services.upload_claimed(user=request.user, token=request.POST["token"])
        return bytes(kept.content), kept.filename, kept
    if upload is None:
        raise ServiceError("INPUT_INVALID", "file: expected a file upload", detail={"path": "file"})
    if upload.size > MAX_BODY_BYTES:
        raise too_large("file", upload.size)
    return upload.read(), upload.name or "", None


# in the engine's refusal shape, so that a page in another language says it in its words (studio.refusal_lines)
UNTOLD_KIND = "the kind the file is, chosen from the list (it could not be told from the file)"
NOT_A_CARD_FILE = "a PNG image or a CharX archive, as the file's name says (its bytes are neither)"


def _import(request) -> dict:
    kind = request.POST.get("kind") or AUTO
    if kind != AUTO and kind not in services.IMPORTERS:
        raise ServiceError("INPUT_INVALID", "kind: expected one of " + ", ".join([AUTO, *services.IMPORTERS]),
                           detail={"path": "kind"})
    raw, filename, kept = _upload(request)
    detected = detect_upload(raw)
    if kind == AUTO:
        if detected == "chat":  # a chat belongs to a session, whose page imports it
            raise ServiceError("INPUT_INVALID", "kind: the file is a SillyTavern chat (.jsonl), which is imported "
                               "into a session: open the session and use Import chat",
                               detail={"path": "kind", "detected": detected})
        if detected is None and filename.lower().endswith((".png", ".charx")):  # named as a card, not one
            raise ServiceError("INPUT_INVALID", f"file: expected {NOT_A_CARD_FILE}",
                               detail={"path": "file", "expected": NOT_A_CARD_FILE})
        if detected is None:
            parse_json(raw, "file")  # a file that is not JSON says so, with where, before "choose the kind"
        if detected not in services.IMPORTERS:
            what = KIND_NAMES.get(detected or "", "")
            expected = (f"the kind the file is, chosen from the list (it looks like a {what}, which this page does "
                        "not import)" if what else UNTOLD_KIND)
            raise ServiceError("INPUT_INVALID", f"kind: expected {expected}",
                               detail={"path": "kind", "expected": expected, "detected": detected})
        kind = detected
    dry_run = flag(request.POST.get("dry_run"))
    name = filename.rsplit(".", 1)[0] or None
    try:
        duplicate = request.POST.get("duplicate")
        extra = {"duplicate": duplicate} if duplicate and kind in services.TWIN_KINDS else {}
        if kept is not None and not dry_run:  # "Import it": the token is consumed with the import
            report = services.upload_import(user=request.user, upload=kept, kind=kind,
                                            data=upload_content(raw, kind=kind), name=name, extra=extra)
        else:
            report = services.IMPORTERS[kind](user=request.user, data=upload_content(raw, kind=kind), name=name,
                                              dry_run=dry_run, **extra)
    except CodedError as error:
        if detected and detected != kind:  # a wrong choice explains itself, not "name: expected a string"
            raise ServiceError("INPUT_INVALID", f"kind: the file looks like a {KIND_NAMES[detected]}, not a "
                               f"{KIND_NAMES[kind]} ({error.message})", status=error.status,
                               detail={"path": "kind", "detected": detected, "chosen": kind,
                                       "reason": error.to_json()}) from None
        raise
    if dry_run:
        report.token = kept.token if kept else services.upload_keep(user=request.user, content=raw,
                                                                    filename=filename)
    return {**report.to_json(), "detected": detected}
