"""Pages of previews, comparisons and goldens (web.md screens 3, 4, 5), and the home page; the session pages are in
`session_views`.

Every page works without JavaScript: reads are GET pages, writes are POST forms (CSRF-checked by Django) that
redirect back on success and re-render the page with the refusal inline on failure, with the refusal's status
(400 bad input, 403 not allowed, 404, 409). Permissions are checked through `access` before any service is called;
templates only hide controls a role could not use anyway.
"""

from __future__ import annotations

import dataclasses
import json
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponseRedirect, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assembly import AssemblyError, get_placement_capabilities
from assembly.errors import CodedError
from assembly.turn_projection import DEFAULT_TURNS, MAX_TURNS, project_turns
from preview_app import presenters, services
from preview_app.access import (
    APPROVE_GOLDEN,
    DELETE_GOLDEN,
    can_approve_goldens,
    can_create_sessions,
    can_delete_goldens,
    can_edit_session,
    golden_for_read,
    session_for_edit,
    session_for_read,
)
from preview_app.compare import align_messages, alignment_range, alignment_window
from preview_app.forms import CommitForm, PinForm, PreviewOptionsForm
from preview_app.goldens import golden_status, golden_statuses
from preview_app.macro_variables import macro_variables_panel
from preview_app.models import Session
from preview_app.previews import host_records, session_request, with_options
from preview_app.request_rows import render_window
from preview_app.result_display import client_messages, display
from preview_app.selectors import golden_count, golden_of, last_seq, listed_goldens, sessions_with_strategy
from preview_app.strategy_choice import APPLIED, choice_options, query_choice, resolve_choice
from preview_app.token_window import across_models, golden_window
from preview_app.world_info_chance import chance_log, reroll_change
from strategies_app.access import require, revision_for_read, strategy_for_read
from strategies_app.presenters import named, strategy_name
from strategies_app.selectors import resources_by_kind, visible_revisions_by_strategy, visible_strategies
from studio.engine_runs import assemble
from studio.errors import ServiceError, invalid, not_found
from studio.history_window import history_window, notable_messages, range_window
from studio.http import error_response
from studio.input_boundary import is_row_id, whole_number
from studio.paging import list_head, list_page
from studio.users import role_word


def refusals_as_pages(view):
    """A refusal nobody handled inline (403, 404, ...) becomes an error page with its status."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except CodedError as error:
            return render(request, "preview/error.html", {"error": presenters.error_context(error)},
                          status=error.status)

    return wrapped


def home(request):
    """Landing page after login: what the studio holds (strategies, sessions, resources) and the positions the
    engine supports."""
    resources = resources_by_kind()
    return render(request, "home.html", {
        "positions": get_placement_capabilities(_FULL_LAYOUT)["positions"],
        "strategies": _head(visible_strategies().select_related("owner")),
        "sessions": _head(sessions_with_strategy()),
        "resources": [(_("Presets"), _head(resources["preset"])), (_("Characters"), _head(resources["character"])),
                      (_("Personas"), _head(resources["persona"])), (_("World books"), _head(resources["worldbook"]))],
        "golden_count": golden_count(),
        "roles": sorted(request.user.groups.values_list("name", flat=True)),
        "role_words": [role_word(role) for role in sorted(request.user.groups.values_list("name", flat=True))],
        "can_create_session": can_create_sessions(request.user),
    })


HOME_ROWS = 10  # rows each list of the home page shows; its own page lists them all


def _head(rows) -> dict[str, Any]:
    """The first rows of a list and how many it has (the home page names the rest, and links to them)."""
    head, count = list_head(rows, HOME_ROWS)
    return {"rows": head, "count": count}


# A layout that declares every anchor, so the home page can list all placement positions the engine knows.
_FULL_LAYOUT = {
    "character": {"start": 0, "end": 1},
    "examples": {"start": 1, "end": 2},
    "conversation": {"message_indices": [], "empty_index": 2},
    "author_note": 2,
    "outlets": {"example": 2},
}


# ---------------------------------------------------------------------------------------------- preview


def _preview_request(session: Session, choice, options: PreviewOptionsForm | None = None) -> dict[str, Any]:
    request = session_request(session, choice.document)
    return with_options(request, options.request_fields()) if options is not None else request


PROJECTED_BY_DEFAULT = 400  # history messages up to which the preview page loads the projection without being asked
COUNTED_BY_DEFAULT = 400  # ... and the across-models table (every tokenizer counts the whole request)


def _turns(request) -> int | str:
    """`?turns=`: absent, the default; anything but a count from 1 to MAX_TURNS is left for the projection to refuse,
    and its heading to name as it was asked (a text cut to 20 characters)."""
    raw = request.GET.get("turns", "")
    if raw == "":
        return DEFAULT_TURNS
    return int(raw) if is_row_id(raw) else raw[:20]


def _projection(request, request_data: dict[str, Any]) -> dict[str, Any]:
    """The turn projection of the preview (`?turns=N`, default 5): N+1 engine runs, so its own request."""
    strategy = request_data.get("strategy")
    # SillyTavern's words on SillyTavern work: dsh's host-record columns only where its backends are in play
    base = {"turns": _turns(request), "max": MAX_TURNS,
            "sillytavern": isinstance(strategy, dict) and strategy.get("placement") == "st"}
    try:
        result = project_turns(request_data, base["turns"])
    except CodedError as error:
        return {**base, "error": presenters.error_context(error)}
    worldbook = (request_data.get("resources") or {}).get("worldbook")
    return {**base, "result": result, "rows": presenters.projection_rows(result.turns, worldbook)}


def _projection_link(request, session: Session, request_data: dict[str, Any]) -> dict[str, Any]:
    """Where the preview page loads its projection from: on load (htmx) unless the history is long and no
    `?turns=` asked for it; the link and the form reach the projection page without JavaScript."""
    action = reverse("preview:preview-projection", args=[session.pk])
    asked = "turns" in request.GET
    return {"turns": _turns(request), "max": MAX_TURNS, "action": action,
            "url": action + (f"?{request.GET.urlencode()}" if request.GET else ""),
            "auto": asked or len(request_data["conversation"]["history"]) <= PROJECTED_BY_DEFAULT}


def _across_link(request, session: Session, request_data: dict[str, Any]) -> dict[str, Any]:
    """Where the preview page loads its across-models table from: every tokenizer counts the whole request, so it is
    a request of its own, loaded on load (htmx) for a short history and when asked for a long one."""
    url = reverse("preview:preview-across", args=[session.pk])
    return {"url": url + (f"?{request.GET.urlencode()}" if request.GET else ""),
            "auto": len(request_data["conversation"]["history"]) <= COUNTED_BY_DEFAULT}


def _canonical_preview_url(session: Session, choice, options: PreviewOptionsForm) -> str:
    query = {**choice.query, **options.query()}
    url = reverse("preview:preview", args=[session.pk])
    return url + ("?" + urlencode(query) if query else "")


@refusals_as_pages
@require_GET
def preview(request, pk):
    """The request a session sends with a strategy, read-only (web.md screen 3); a text-completion session's is
    its prompt string, on the text page."""
    session = session_for_read(pk)
    if session.completion == "text":
        return redirect("preview:text", pk=session.pk)
    if "pick" in request.GET:  # the picker's GET form: turn it into the bookmarkable ?strategy=&revision= URL
        options = PreviewOptionsForm(request.GET or None)
        return redirect(_canonical_preview_url(session, resolve_choice(session, request.GET["pick"]), options))
    return _preview_page(request, session)


def _preview_page(request, session: Session, *, template: str = "preview/preview.html",
                  extra: dict[str, Any] | None = None, ran: tuple[dict[str, Any], Any] | None = None):
    """The preview page for `request.GET`'s strategy and options; `ran`: the engine request and its result when the
    caller already ran it on this session as it now stands."""
    options = PreviewOptionsForm(request.GET or None)
    context: dict[str, Any] = {
        "session": session, "options": choice_options(session), "preview_options": options,
        "editable": can_edit_session(request.user, session), "can_pin": can_approve_goldens(request.user),
        "commit_form": CommitForm(), "query": request.GET.urlencode(), **(extra or {}),
    }
    status = 200
    try:
        choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
        context["choice"] = choice
        if options.is_bound and not options.is_valid():  # the preview leaves every option out, and says so
            status = 400
            context["options_invalid"] = [str(options.fields[name].label) if name in options.fields else name
                                          for name in options.errors]
        request_data, result = ran if ran is not None else (_preview_request(session, choice, options), None)
        result = result if result is not None else assemble(request_data)
        context["view"] = display(result, host_records(request_data))
        if request.GET.get("wb") == "all" and context["view"].world_book is not None:  # "List every entry"
            context["view"].world_book = dataclasses.replace(context["view"].world_book, listed=None)
        context["chance"] = chance_log(result, request_data)
        context["macro_variables"] = macro_variables_panel(result)
        context["projection"] = _projection_link(request, session, request_data)
        context["across"] = _across_link(request, session, request_data)
        context["rows_html"] = _window_rows(request, session, context["view"])
        context["sillytavern_work"] = context["view"].result.placement == "st"
        context["last_seq"] = last_seq(session)
        if choice.revision is not None:
            context["golden"] = golden_of(session, choice.revision)
    except CodedError as error:
        if error.code == "SESSION_ASSEMBLY_OFF":  # not a refusal to show: an offer to apply a strategy
            context["assembly_off"] = True
            if context["editable"]:
                context["apply_options"] = presenters.apply_options(
                    visible_strategies().only("id", "slug", "name"), visible_revisions_by_strategy())
        else:
            context["error"] = presenters.error_context(error)
            status = error.status
    return render(request, template, context, status=status)


def _run_or_none(session: Session, choice, options: PreviewOptionsForm) -> tuple[dict[str, Any], Any] | None:
    """(request, result) of the preview, or None when the engine refuses it (what changed is then not stated)."""
    try:
        request_data = _checked_request(session, choice, options)
        return request_data, assemble(request_data)
    except CodedError:
        return None


@refusals_as_pages
@require_POST
def preview_reroll(request, pk):
    """"Roll again": a new chance seed for the session, then the preview with what it changed (the world-info entries
    newly in and out, from a run before and one after). The form posts the preview's own query (`query`), so the
    page comes back with the same strategy and options: the preview partial for htmx, a redirect otherwise."""
    session = session_for_edit(request.user, pk)
    query = QueryDict(request.POST.get("query", ""))
    options = PreviewOptionsForm(query or None)
    choice = query_choice(session, query.get("strategy"), query.get("revision"))
    before = _run_or_none(session, choice, options)
    services.session_reroll(session=session)
    session = session_for_read(pk)
    after = _run_or_none(session, choice, options)
    statement = (reroll_change(before[1], after[1], session.chance_seed) if before is not None and after is not None
                 else _("Rolled again with seed %(seed)s.") % {"seed": session.chance_seed})
    if request.headers.get("HX-Request") == "true":
        request.GET = query  # the page of that query, as its GET would render it
        return _preview_page(request, session, template="preview/preview.html#page",
                             extra={"reroll_change": statement}, ran=after)
    messages.success(request, statement)
    url = reverse("preview:preview", args=[session.pk])
    return HttpResponseRedirect(url + (f"?{query.urlencode()}" if query else "") + "#chance")


def _checked_request(session: Session, choice, options: PreviewOptionsForm) -> dict[str, Any]:
    """The engine request of a fragment beside the preview (same query as the preview page); a bad option refuses
    naming its field."""
    if options.is_bound and not options.is_valid():
        raise invalid(*options.first_error())
    return _preview_request(session, choice, options)


@refusals_as_pages
@require_GET
def preview_projection(request, pk):
    """The turn projection of a preview (same query as the preview page): a page of its own without JavaScript,
    the fragment the preview page loads with htmx. A refusal shows in the projection; the fragment answers 200 so
    htmx swaps it in, the page answers the refusal's status."""
    session = session_for_read(pk)
    options = PreviewOptionsForm(request.GET or None)
    query = request.GET.urlencode()
    context: dict[str, Any] = {"session": session, "query": query, "projection": {
        "turns": _turns(request), "max": MAX_TURNS,
        "action": reverse("preview:preview-projection", args=[session.pk])},
        "preview_url": reverse("preview:preview", args=[session.pk]) + (f"?{query}" if query else "")}
    try:
        context["choice"] = choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
        request_data = _checked_request(session, choice, options)
        context["projection"].update(_projection(request, request_data))
    except CodedError as error:
        context["projection"]["error"] = presenters.error_context(error)
    if request.htmx:
        return render(request, "preview/projection.html#projection", context)
    error = context["projection"].get("error")
    return render(request, "preview/projection.html", context, status=error["status"] if error else 200)


@refusals_as_pages
@require_GET
def preview_across(request, pk):
    """The preview's request counted by every tokenizer (same query as the preview page): the fragment the preview
    page loads with htmx, a page of its own without JavaScript. A refusal shows in the fragment (answering 200 so
    htmx swaps it in); the page answers the refusal's status."""
    session = session_for_read(pk)
    options = PreviewOptionsForm(request.GET or None)
    query = request.GET.urlencode()
    context: dict[str, Any] = {
        "session": session,
        "preview_url": reverse("preview:preview", args=[session.pk]) + (f"?{query}" if query else "")}
    try:
        if session.completion == "text":  # its prompt string, whatever strategy is applied (the text page's link)
            request_data = session_request(session, "builtin-st")
        else:
            context["choice"] = choice = query_choice(session, request.GET.get("strategy"),
                                                      request.GET.get("revision"))
            request_data = _checked_request(session, choice, options)
        result = assemble(request_data)
        context["rows"], context["text_prompt"] = across_models(result), result.request.prompt is not None
    except CodedError as error:
        context["error"] = presenters.error_context(error)
    if request.htmx:
        return render(request, "preview/across_models.html#across", context)
    error = context.get("error")
    return render(request, "preview/across_models.html", context, status=error["status"] if error else 200)


def _range_href(request, session: Session):
    """The URL of a collapsed run's rows: the page's own query (strategy, revision, options) and the range."""
    base = _rows_query(request, "preview:preview-rows", session)
    return lambda run: f"{base}from={run.first}&to={run.last}"


def _window_rows(request, session: Session, view) -> str:
    """The request's rows with long runs of plain history folded (a window, not 5,000 rows)."""
    messages = view.result.request.messages
    return render_window(view.rows, history_window(messages, notable_messages(view.result)),
                         _range_href(request, session), sillytavern=view.result.placement == "st")


def _range_bounds(request) -> tuple[int, int]:
    bounds = []
    for field in ("from", "to"):
        raw = request.GET.get(field, "")
        bounds.append(whole_number(raw, field, high=10**9 - 1))  # a message index
    if bounds[1] < bounds[0]:
        raise invalid("to", "an index at or after `from`")
    return bounds[0], bounds[1]


@refusals_as_pages
@require_GET
def preview_rows(request, pk):
    """The request messages `?from=a&to=b` of a preview (a collapsed run expanded): at most RANGE_ROWS rows and a
    "show more" row for the rest. htmx gets the rows alone (they replace the collapsed row); without JavaScript it
    is a page of its own. `?layout=editor` answers htmx with the editor's live preview list items instead."""
    session = session_for_read(pk)
    first, last = _range_bounds(request)
    choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
    options = PreviewOptionsForm(request.GET)
    if not options.is_valid():
        raise invalid(*options.first_error())
    request_data = _preview_request(session, choice, options)
    result = assemble(request_data)
    segments = range_window(result.request.messages, first, last)
    htmx = request.headers.get("HX-Request") == "true"
    if htmx and request.GET.get("layout") == "editor":
        from strategies_app.presenters import preview_window_items

        return render(request, "strategies/editor.html#preview-items", {
            "items": preview_window_items(result, segments), "session": session,
            "sillytavern_work": result.placement == "st",
            "strategy": {"slug": request.GET.get("strategy", "")}, "model": request.GET.get("model", ""),
            "generation": request.GET.get("generation", "")})
    view = display(result, host_records(request_data))
    context = {"session": session, "choice": choice, "first": first, "last": min(last, len(view.rows) - 1),
               "sillytavern_work": result.placement == "st",
               "rows_html": render_window(view.rows, segments, _range_href(request, session),
                                          sillytavern=result.placement == "st"),
               "back": _canonical_preview_url(session, choice, options)}
    return render(request, "preview/preview_rows.html#rows" if htmx else "preview/preview_rows.html", context)


def _export(request, pk, shape: str):
    if shape not in ("result", "messages"):
        raise not_found("export", f"{shape}.json")
    session = session_for_read(pk)
    choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
    options = PreviewOptionsForm(request.GET)
    if not options.is_valid():
        raise invalid(*options.first_error())
    result = assemble(_preview_request(session, choice, options))
    if shape == "result":
        body = result.model_dump(mode="json")
        body["strategy"] = named(body["strategy"])
    else:
        body = {"messages": client_messages(result)}
    revision = (choice.revision.revision[:12] if choice.revision else "draft")
    response = JsonResponse(body, json_dumps_params={"ensure_ascii": False, "indent": 2})
    name = f"session-{session.pk}-{choice.strategy.slug}-{revision}-{shape}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def preview_export(request, pk, shape):
    """`result.json`: the AssemblyResult; `messages.json`: {"messages": [...]} as a chat client sends them.
    Refusals answer in the API's error JSON."""
    try:
        return _export(request, pk, shape)
    except CodedError as error:
        return error_response(error)


# ---------------------------------------------------------------------------------------------- compare


def _sides(session: Session, a_spec: str | None, b_spec: str | None,
           options: PreviewOptionsForm) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides of a comparison, each its choice and result or the refusal that stopped it. The session's
    history is read once for both: only the strategy differs between the two requests, and two sides with the same
    document (a revision against the applied copy of it) are one engine run."""
    shared: dict[str, Any] = {}
    runs: dict[str, Any] = {}  # the strategy document's JSON -> its result, or the refusal it met

    def side(spec: str | None) -> dict[str, Any]:
        try:
            choice = resolve_choice(session, spec)
        except CodedError as error:
            return {"spec": spec or "", "error": presenters.error_context(error)}
        key = json.dumps(choice.document, sort_keys=True, default=str)
        if key not in runs:
            try:
                if not shared:
                    shared.update(with_options(session_request(session, {}), options.request_fields()))
                runs[key] = {"result": assemble({**shared, "strategy": choice.document})}
            except CodedError as error:
                runs[key] = {"error": presenters.error_context(error)}
        # its preview asks as this comparison did (the same options and budget)
        return {"spec": choice.spec, "choice": choice, "preview_url": _canonical_preview_url(session, choice, options),
                **runs[key]}

    return side(a_spec), side(b_spec)


@refusals_as_pages
@require_GET
def compare(request, pk):
    """Two strategies or revisions on one session, aligned message by message (web.md screen 4); a text-completion
    session compares two templates instead."""
    session = session_for_read(pk)
    if session.completion == "text":
        return redirect("preview:text-compare", pk=session.pk)
    a_spec = request.GET.get("a") or (APPLIED if session.applied_document is not None else "")
    b_spec = request.GET.get("b") or ""
    options = PreviewOptionsForm(request.GET or None)
    context: dict[str, Any] = {"session": session, "options": choice_options(session), "a_spec": a_spec,
                               "b_spec": b_spec, "only_changes": request.GET.get("only") == "1",
                               "preview_options": options}
    status = 200
    if options.is_bound and not options.is_valid():
        status = 400  # the form shows which option is wrong; nothing is compared
    elif a_spec and b_spec:
        a, b = _sides(session, a_spec, b_spec, options)
        context.update(a=a, b=b)
        if "result" in a and "result" in b:
            alignment = align_messages(a["result"].request.messages, b["result"].request.messages)
            context.update(alignment=alignment, aligned_rows=alignment_window(alignment),
                           rows_url=_rows_query(request, "preview:compare-rows", session))
        else:
            status = (a.get("error") or b.get("error"))["status"]
    return render(request, "preview/compare.html", context, status=status)


def _kept_query(request) -> str:
    """The page's query (strategy, sides, options) without the range and the one-off keys."""
    query = request.GET.copy()
    for key in ("from", "to", "turns", "pick", "layout"):
        query.pop(key, None)
    return query.urlencode()


def _rows_query(request, route: str, session: Session) -> str:
    """A range route with the page's own query, ready for `from=&to=`."""
    kept = _kept_query(request)
    return reverse(route, args=[session.pk]) + "?" + (kept + "&" if kept else "")


@refusals_as_pages
@require_GET
def compare_rows(request, pk):
    """B's messages `?from=&to=` of a comparison (a folded run of unchanged history expanded): the aligned rows,
    at most RANGE_ROWS, the rest folded again. htmx gets the rows alone; without JavaScript a page of its own."""
    session = session_for_read(pk)
    first, last = _range_bounds(request)
    options = PreviewOptionsForm(request.GET)
    if not options.is_valid():
        raise invalid(*options.first_error())
    a, b = _sides(session, request.GET.get("a") or "", request.GET.get("b") or "", options)
    for side in (a, b):
        if "error" in side:
            raise ServiceError(side["error"]["code"], side["error"]["error"], status=side["error"]["status"])
    alignment = align_messages(a["result"].request.messages, b["result"].request.messages)
    context = {"session": session, "a": a, "b": b, "first": first, "last": last, "only_changes": False,
               "aligned_rows": alignment_range(alignment, first, last),
               "rows_url": _rows_query(request, "preview:compare-rows", session),
               "back": reverse("preview:compare", args=[session.pk]) + "?" + _kept_query(request)}
    htmx = request.headers.get("HX-Request") == "true"
    return render(request, "preview/compare_rows.html#rows" if htmx else "preview/compare_rows.html", context)


# ---------------------------------------------------------------------------------------------- goldens


GOLDENS_PER_PAGE = 20  # goldens a page checks: each is an engine run of its session


@refusals_as_pages
@require_GET
def goldens(request):
    """Every golden, a page at a time, with matches / differs and, when it differs, what changed (web.md screen 5)."""
    rows = listed_goldens()
    session_filter = request.GET.get("session")
    if session_filter:
        rows = rows.filter(session=session_for_read(session_filter))
    page = list_page(request, rows, per_page=GOLDENS_PER_PAGE)
    statuses = golden_statuses(page.rows)
    options = PreviewOptionsForm(request.GET or None)
    model = options.cleaned_data.get("model") if options.is_bound and options.is_valid() else None
    return render(request, "preview/goldens.html", {
        "statuses": statuses, "page": page, "session_filter": session_filter, "preview_options": options,
        "rows": [(s, golden_window(s, model)) for s in statuses],
        "differing": sum(1 for s in statuses if s.status == "differs"),
        "can_pin": can_approve_goldens(request.user), "can_delete": can_delete_goldens(request.user),
    })


@refusals_as_pages
@require_GET
def golden_latest(request, pk):
    """What the strategy's latest revision would change in one golden: the goldens page's line for it, a request of
    its own (loaded there by htmx, or opened by its link), so the goldens page runs the engine once per golden."""
    golden = golden_for_read(pk)
    context = {"s": golden_status(golden), "g": golden, "can_pin": can_approve_goldens(request.user)}
    htmx = request.headers.get("HX-Request") == "true"
    return render(request, "preview/golden_latest.html#latest" if htmx else "preview/golden_latest.html", context)


@refusals_as_pages
@require_http_methods(["GET", "POST"])
def golden_delete(request, pk):
    """Delete one golden (admin): the page asks first (GET), the form deletes (POST) and goes back to the goldens."""
    require(request.user, DELETE_GOLDEN, "delete golden snapshots")
    golden = golden_for_read(pk)
    if request.method == "GET":
        return render(request, "preview/golden_delete.html", {"g": golden})
    services.golden_delete(golden=golden)
    messages.success(request, _("Golden deleted: session %(session)s with %(strategy)s @ %(revision)s. The session "
                                "and the strategy stay.") % {
        "session": golden.session.name, "strategy": strategy_name(golden.revision.strategy.name),
        "revision": golden.revision.revision[:12]})
    return redirect("preview:goldens")


@refusals_as_pages
@require_POST
def golden_pin(request):
    """Approve the current result of a session with a revision (qa, admin); the page the form came from is `next`."""
    require(request.user, APPROVE_GOLDEN, "approve golden snapshots")
    form = PinForm(request.POST)
    if not form.is_valid():
        field = next(iter(form.errors))
        raise invalid(field, {"session": "a session id", "strategy": "a strategy id",
                              "revision": "a revision sha"}.get(field, "a value"))
    session = session_for_read(form.cleaned_data["session"])
    revision = revision_for_read(strategy_for_read(form.cleaned_data["strategy"]), form.cleaned_data["revision"])
    try:
        golden = services.golden_pin(session=session, revision=revision, user=request.user)
    except AssemblyError as error:
        raise ServiceError(error.code, _("This preview cannot be pinned: %(error)s") % {"error": error.message},
                           status=error.status) from None
    messages.success(request, _("Pinned as golden: session %(session)s with %(strategy)s @ %(revision)s.") % {
        "session": session.name, "strategy": strategy_name(revision.strategy.name), "revision": revision.revision[:12]})
    return HttpResponseRedirect(reverse("preview:goldens") + f"#golden-{golden.pk}")
