"""The strategy editor (web.md screen 2) and the strategy list with create and copy (screen 1).

The editor is one page built from template partials (`strategies/editor.html`). Every write is a plain form POST
carrying the draft `version` the page showed: without JavaScript it answers with a redirect back to the page (or the
page with the refusal and its status); with htmx (`request.htmx`) it answers the re-rendered `#workspace` partial:
the changed draft, the resource positions and the live preview of the chosen session, all from one engine run.
A refusal (stale version, a locked row moved, an order that is not a permutation, ...) is answered with its status
(409 mostly) and the fresh state, and nothing is written. Permissions are checked through `strategies_app.access`
before a service runs; templates only hide controls. The sessions a draft is previewed on come from
`session_previews` (preview_app provides them).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from django import forms as django_forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from assembly import edits
from assembly.catalogue import CONTEXT_CONTROL_KINDS
from assembly.edits import layout_or_default, position_keys
from assembly.errors import CodedError
from assembly.model_catalogue import CATALOGUE
from assembly.strategy import (
    DELIVERIES,
    LAYOUT_FALLBACKS,
    LAYOUT_IDENTITIES,
    LAYOUT_SOURCES,
    LIFETIMES,
    PLACEMENTS,
    ROLES,
    TEXT_RULE_KINDS,
    strategy_backend,
    strategy_revision,
)
from strategies_app import edit_effects, forms, presenters, services
from strategies_app.access import (
    EDIT_STRATEGY,
    can_create_strategies,
    can_edit_strategy,
    require,
    strategy_for_edit,
)
from strategies_app.models import Strategy
from strategies_app.selectors import latest_revision, listed_strategies, preset_prompts, strategy_or_404
from strategies_app.session_previews import DraftPreviews, PreviewSession, session_previews
from studio.errors import FormInvalid, ServiceError, invalid
from studio.http import MAX_BODY_BYTES, parse_json, too_large, valid_form
from studio.paging import list_page, search_text
from studio.user_choices import EDITOR_SESSION, LAST_SESSION, user_choice_remember, user_choices
from studio.wording import LockWords, known_meaning, refusal_words

EDITOR = "strategies/editor.html"
CATALOGUE_MODELS = frozenset(entry.model for entry in CATALOGUE)


def _edit_url(strategy: Strategy, session: PreviewSession | None, model: str | None = None,
              generation: str | None = None) -> str:
    url = reverse("strategies:edit", args=[strategy.slug])
    query = {**({"session": session.pk} if session is not None else {}), **({"model": model} if model else {}),
             **({"generation": generation} if generation else {})}
    return f"{url}?{urlencode(query)}" if query else url


def _preview_model(raw: str | None) -> str | None:
    """The live preview's model (`?model=`, or the form's): a catalogue model, else none (o200k_base, no window)."""
    return raw if raw in CATALOGUE_MODELS else None


def _preview_generation(raw: str | None) -> str | None:
    return raw if raw in forms.GENERATIONS else None


# The live preview's options are remembered in Django's session storage: per strategy the session last previewed,
# per strategy and session the model and generation type (web.md screen 2).
OPTIONS_KEY = "editor-preview"


def _remembered(request, slug: str, session_pk: Any = None) -> dict[str, Any]:
    stored = request.session.get(OPTIONS_KEY, {})
    if session_pk is None:
        return {"session": stored.get(slug)}
    return stored.get(f"{slug}:{session_pk}", {})


def _remember(request, slug: str, session: PreviewSession | None, previews: DraftPreviews) -> None:
    """The model and generation in the login session; the session itself for the user, across logins."""
    if session is None:
        return
    stored = dict(request.session.get(OPTIONS_KEY, {}))
    wanted = {slug: session.pk, f"{slug}:{session.pk}": {"model": previews.model, "generation": previews.generation}}
    if any(stored.get(key) != value for key, value in wanted.items()):
        request.session[OPTIONS_KEY] = {**stored, **wanted}
        user_choice_remember(user=request.user, values={EDITOR_SESSION.format(slug=slug): session.pk,
                                                        LAST_SESSION: session.pk})


def _previews_for(request, strategy: Strategy, data) -> tuple[PreviewSession | None, DraftPreviews]:
    """The chosen session and its engine runs from the query or form (`data`), else the remembered options: this
    login's pick, else the user's pick for this strategy (kept across logins), else the user's last session when
    its host runs the strategy."""
    raw_session = data.get("session") or _remembered(request, strategy.slug)["session"]
    picks = {} if raw_session else user_choices(request.user)
    raw_session = raw_session or picks.get(EDITOR_SESSION.format(slug=strategy.slug))
    session = session_previews().chosen(raw_session, strategy, picks.get(LAST_SESSION))
    kept = _remembered(request, strategy.slug, session.pk if session is not None else None)
    model = data.get("model") if "model" in data else kept.get("model")
    generation = data.get("generation") if "generation" in data else kept.get("generation")
    previews = DraftPreviews(strategy, session, model=_preview_model(model), generation=_preview_generation(generation))
    _remember(request, strategy.slug, session, previews)
    return session, previews


def _lock_words(draft: dict[str, Any], session: PreviewSession | None) -> LockWords:
    return LockWords(draft, preset_prompts(session.preset_id if session is not None else None))


# ---------------------------------------------------------------------------------------------- the editor page


def _editor_context(request, strategy: Strategy, session: PreviewSession | None, *, notice: str | None = None,
                    refusal: dict[str, Any] | None = None, kept: dict[str, Any] | None = None,
                    previews: DraftPreviews | None = None, model: str | None = None,
                    effect: tuple[str, Any, str | None] | None = None,
                    confirm: edit_effects.WideEdit | None = None) -> dict[str, Any]:
    user = request.user
    draft = strategy.draft
    previews = previews or DraftPreviews(strategy, session, model=model)
    result, preview_error = previews.shown(draft)
    layout = draft.get("layout")
    policy = layout_or_default(draft=draft)
    latest = latest_revision(strategy)
    draft_revision = strategy_revision(draft)
    # Every edit form carries these four; built once, not once per form (the page has dozens of forms).
    hidden_fields = format_html(
        '<input type="hidden" name="csrfmiddlewaretoken" value="{}"><input type="hidden" name="version" value="{}">'
        '<input type="hidden" name="session" value="{}"><input type="hidden" name="model" value="{}">'
        '<input type="hidden" name="generation" value="{}">',
        get_token(request), strategy.version, session.pk if session is not None else "", previews.model or "",
        previews.generation or "")
    sessions = session_previews()
    words = _lock_words(draft, session)  # the preset's prompt names, read once for the rows and the blocks
    # (kind, result before the write, moved row): the write's effect against the result shown now
    edit_effect = edit_effects.edit_effect(effect[0], effect[1], result, effect[2], preview_error) if effect else None
    return {
        "edit_effect": edit_effect, "panel": effect[0] if effect else None, "confirm": confirm,
        "undo": _undo_offer(request, strategy),
        "window": presenters.window_line(result),
        "strategy": strategy, "draft": draft, "session": session, "model": previews.model,
        "generation": previews.generation or "", "generations": forms.generation_choices(), "can_edit": can_edit_strategy(user, strategy),
        "hidden_fields": hidden_fields,
        "urls": {name.replace("-", "_"): reverse(f"strategies:{name}", args=[strategy.slug]) for name in (
            "block-move", "block-reset", "control", "layout", "position-update", "positions-order", "priority-order",
            "revision-save", "rule-add", "rules-order", "settings")},
        "can_copy": can_create_strategies(user), "backend": strategy_backend(draft),
        "sillytavern_work": draft.get("placement") == "st",  # SillyTavern's words, dsh's folded away
        "backend_given": draft.get("backend"), "native": strategy_backend(draft) == "native",
        "rules": presenters.rule_rows(strategy, result, kept), "display_name": presenters.strategy_name(draft), "context_rules": presenters.context_rule_rows(draft, result),
        "has_layout": layout is not None, "policy": policy, "priority": presenters.priority_rows(policy["priority"]),
        "positions": presenters.editor_positions(draft, result, words),
        **presenters.block_context(draft, result, words),
        "preview": presenters.preview_view(result, edit_effect), "preview_result": result, "preview_error": preview_error,
        "preview_error_meaning": known_meaning(preview_error["code"]) if preview_error else "",
        "sessions": sessions.picker(),
        "latest": latest, "draft_revision": draft_revision,
        "saved": latest is not None and latest.revision == draft_revision,
        "notice": notice, "refusal": refusal, "kept": kept,
        "roles": ROLES, "deliveries": DELIVERIES, "lifetimes": LIFETIMES, "placements": PLACEMENTS,
        "placement_choices": presenters.placement_choices(PLACEMENTS),
        "placement_words": presenters.PLACEMENT_MODES.get(draft.get("placement"), draft.get("placement")),
        "layout_sources": LAYOUT_SOURCES, "layout_identities": LAYOUT_IDENTITIES, "layout_fallbacks": LAYOUT_FALLBACKS,
        "text_kinds": TEXT_RULE_KINDS,
        **sessions.apply_panel(user, strategy),
    }


@require_GET
def strategy_edit(request, slug):
    strategy = strategy_or_404(slug)
    session, previews = _previews_for(request, strategy, request.GET)
    context = _editor_context(request, strategy, session, previews=previews)
    if request.htmx:
        return render(request, f"{EDITOR}#workspace", context)
    return render(request, EDITOR, context)


# ---------------------------------------------------------------------------------------------- writes


def _answer(request, strategy: Strategy, session: PreviewSession | None, *, status: int = 200, notice: str | None = None,
            refusal: dict[str, Any] | None = None, kept: dict[str, Any] | None = None,
            previews: DraftPreviews | None = None, effect: tuple[str, Any, str | None] | None = None,
            confirm: edit_effects.WideEdit | None = None) -> HttpResponse:
    strategy = Strategy.objects.select_related("owner").get(pk=strategy.pk)  # the fresh state
    context = _editor_context(request, strategy, session, notice=notice, refusal=refusal, kept=kept,
                              previews=previews, model=previews.model if previews is not None else None,
                              effect=effect, confirm=confirm)
    if refusal is not None:
        refusal["words"] = refusal_words(refusal, context["positions"])
    if request.htmx:
        return render(request, f"{EDITOR}#workspace", context, status=status)
    return render(request, EDITOR, context, status=status)


def editor_write(keeps_text: bool = False, effect: str | None = "rule"):
    """An editor POST: permission (403 / 409 for a built-in), then the handler, which returns the notice to show.
    Refusals answer the fresh state with their status; success answers the workspace (htmx) or a redirect, with
    the write's `effect` (a kind of `edit_effects.EFFECT_KINDS`; None for a write that changes no request, as a
    saved revision) on the session's request. A handler that takes
    `previews` gets the request's engine runs, which the answer then reuses."""

    def decorate(handler):
        wants_previews = "previews" in inspect.signature(handler).parameters

        @require_POST
        @functools.wraps(handler)
        def view(request, slug, **kwargs):
            strategy = strategy_or_404(slug)
            session, previews = _previews_for(request, strategy, request.POST)
            before, _refused = previews.shown(strategy.draft) if session is not None else (None, None)
            moved = next((request.POST[name] for name in ("moved", "row", "key", "target") if request.POST.get(name)),
                         None)
            moved = moved or kwargs.get("rule_id")
            try:
                strategy_for_edit(request.user, slug)
                notice = handler(request, strategy, session, **kwargs,
                                 **({"previews": previews} if wants_previews else {}))
            except ConfirmFirst as asked:  # nothing stored: the computed effect, and the same edit to confirm
                return _answer(request, strategy, session, previews=previews, confirm=asked.wide)
            except FormInvalid as error:  # a malformed form keeps no text
                return _answer(request, strategy, session, status=400, refusal=error.to_json(), previews=previews)
            except CodedError as error:
                refusal = error.to_json()
                if error.status == 403 and request.htmx:
                    response = render(request, f"{EDITOR}#status", {"refusal": {
                        **refusal, "words": refusal_words(refusal, [])}}, status=403)
                    return reswap(retarget(response, "#editor-status"), "innerHTML")
                kept = None
                if keeps_text and "text" in request.POST:
                    kept = {"rule": kwargs.get("rule_id"), "text": request.POST.get("text")}
                return _answer(request, strategy, session, status=error.status, refusal=refusal, kept=kept,
                               previews=previews)
            if effect:  # a saved revision leaves the draft as it was: nothing to undo
                _keep_undo(request, strategy, notice)
            if request.htmx:
                return _answer(request, strategy, session, notice=notice, previews=previews,
                               effect=(effect, before, moved) if effect else None)
            fresh = Strategy.objects.get(pk=strategy.pk)
            after, refused = previews.shown(fresh.draft)
            found = edit_effects.edit_effect(effect, before, after, moved, refused) if effect else None
            messages.success(request, notice + (" " + found.sentence if found else ""))
            return HttpResponseRedirect(_edit_url(strategy, session, previews.model, previews.generation), status=303)

        return view

    return decorate


# ---------------------------------------------------------------------------------------------- wide edits, undo


class ConfirmFirst(Exception):  # noqa: N818 (a request for confirmation, not an error)
    """A wide edit posted without its confirmation: the editor shows what it would change, and stores nothing."""

    def __init__(self, wide: edit_effects.WideEdit):
        super().__init__("confirmation wanted")
        self.wide = wide


HIDDEN_FIELDS = frozenset({"csrfmiddlewaretoken", "version", "session", "model", "generation", "confirm"})


def _confirmed_or_ask(request, strategy: Strategy, previews: DraftPreviews, candidate: dict[str, Any]) -> None:
    """Returns when the edit may go ahead: it was confirmed, or it changes only its own row (same placement, same
    locked rows). Otherwise raises `ConfirmFirst` with the effect computed from both drafts' engine runs."""
    if request.POST.get("confirm") == "yes":
        return
    draft = strategy.draft
    before, before_refusal = previews.shown(draft)
    after, after_refusal = previews.shown(candidate)
    wide = (candidate.get("placement") != draft.get("placement") or candidate.get("backend") != draft.get("backend")
            or edits.locked_rows(draft, before) != edits.locked_rows(candidate, after))
    if not wide:
        return
    items = edit_effects.wide_edit_items(draft, before, before_refusal, candidate, after, after_refusal)
    fields = [(name, value) for name, values in request.POST.lists() if name not in HIDDEN_FIELDS
              for value in values]
    raise ConfirmFirst(edit_effects.WideEdit(items, fields, request.path))


# The last write's draft before it, per strategy, in the user's login session: "Undo" puts it back (once).
UNDO_KEY = "editor-undo"


class UndoNotice(str):
    """The notice of an undo (or of a redo): what it took back, so the next offer names that edit again."""

    def __new__(cls, text: str, *, what: str, redo: bool):
        notice = super().__new__(cls, text)
        notice.what, notice.redo = what, redo
        return notice


def _keep_undo(request, strategy: Strategy, notice: str) -> None:
    fresh_version = Strategy.objects.values_list("version", flat=True).get(pk=strategy.pk)
    kept = dict(request.session.get(UNDO_KEY, {}))
    # Undoing an undo puts the edit back: the offer after an undo is a redo of the same edit, and the reverse.
    what, redo = ((notice.what, not notice.redo) if isinstance(notice, UndoNotice) else (str(notice), False))
    kept[strategy.slug] = {"draft": strategy.draft, "version": fresh_version, "what": what, "redo": redo}
    request.session[UNDO_KEY] = kept


def _undo_offer(request, strategy: Strategy) -> dict[str, Any] | None:
    """The undo the page offers: the last write of this user, while the draft is still the one it left."""
    kept = request.session.get(UNDO_KEY, {}).get(strategy.slug)
    if not kept or kept["version"] != strategy.version or not can_edit_strategy(request.user, strategy):
        return None
    return {"what": kept["what"], "redo": kept.get("redo", False), "url": reverse("strategies:undo", args=[strategy.slug])}


@editor_write(effect="layout")
def draft_undo(request, strategy, session):
    form = valid_form(forms.VersionedForm, request)
    kept = request.session.get(UNDO_KEY, {}).get(strategy.slug)
    version = form.cleaned_data["version"]
    if not kept or kept["version"] != version:
        raise ServiceError("UNDO_UNAVAILABLE", "version: the last edit of this page is no longer the draft's latest "
                           "change; nothing to undo", status=409, detail={"path": "version"})
    services.draft_update(strategy=strategy, user=request.user, document=kept["draft"], expected_version=version)
    redo = kept.get("redo", False)
    text = (_("Redone: %(what)s") if redo else _("Undone: %(what)s")) % {"what": kept["what"]}
    return UndoNotice(text, what=kept["what"], redo=redo)


@editor_write(effect="modules")
def rules_order(request, strategy, session):
    form = valid_form(forms.MoveForm, request)
    current = [rule["id"] for rule in strategy.draft["rules"] if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    try:
        order, moved = form.order_for(current)
    except django_forms.ValidationError as error:
        raise FormInvalid(error.messages[0]) from None
    services.rules_reorder(strategy=strategy, user=request.user, order=order,
                           expected_version=form.cleaned_data["version"])
    return _("Module order saved (moved: %(rule)s).") % {"rule": presenters.rule_display(strategy.draft, moved)}


@editor_write(keeps_text=True)
def rule_update(request, strategy, session, rule_id):
    form = valid_form(forms.RuleForm, request, of=presenters.rule_display(strategy.draft, rule_id))
    services.rule_update(strategy=strategy, user=request.user, rule_id=rule_id, changes=form.changes(),
                         expected_version=form.cleaned_data["version"])
    return _("Rule “%(rule)s” saved.") % {"rule": rule_id}


@editor_write()
def rule_add(request, strategy, session):
    form = valid_form(forms.NewRuleForm, request)
    data = form.cleaned_data
    _updated, rule_id = services.rule_add(strategy=strategy, user=request.user, kind=data["kind"], name=data["name"],
                                          text=data["text"], role=data["role"] or None,
                                          expected_version=data["version"])
    added = _("Custom rule “%(rule)s” added at the end of the module list.") % {"rule": rule_id}
    if not (data["text"] or "").strip():
        added += " " + _("It has no text yet, so it sends nothing until you write some.")
    return added


@editor_write()
def rule_remove(request, strategy, session, rule_id):
    form = valid_form(forms.VersionedForm, request)
    services.rule_remove(strategy=strategy, user=request.user, rule_id=rule_id,
                         expected_version=form.cleaned_data["version"])
    return _("Custom rule “%(rule)s” removed.") % {"rule": rule_id}


@editor_write(effect="control")
def control_set(request, strategy, session):
    form = valid_form(forms.ControlForm, request)
    data = form.cleaned_data
    services.context_control_set(strategy=strategy, user=request.user, kind=data["kind"], enabled=data["enabled"],
                                 expected_version=data["version"])
    return _("Runtime-context switch saved.")


@editor_write(effect="positions")
def positions_order(request, strategy, session, previews):
    form = valid_form(forms.MoveForm, request)
    try:
        order, moved = form.order_for(position_keys(draft=strategy.draft))
    except django_forms.ValidationError as error:
        raise FormInvalid(error.messages[0]) from None
    version = form.cleaned_data["version"]
    had_layout = bool(strategy.draft.get("layout"))
    services.positions_reorder(strategy=strategy, user=request.user, order=order, run=previews.run,
                               expected_version=version, moved=moved)
    notice = _("Resource position order saved.")
    return notice if had_layout else notice + " " + _("The strategy adopted a layout policy to store it.")


@editor_write(effect="positions")
def position_update(request, strategy, session, previews):
    form = valid_form(forms.PositionForm, request)
    data = form.cleaned_data
    services.position_update(strategy=strategy, user=request.user, key=data["key"], enabled=data["enabled"],
                             placement=data["placement"], anchor=data["anchor"], run=previews.run,
                             expected_version=data["version"])
    return _("Position “%(row)s” saved.") % {"row": data["key"]}


@editor_write(effect="priority")
def priority_order(request, strategy, session):
    form = valid_form(forms.MoveForm, request)
    try:
        order, _moved = form.order_for(list(layout_or_default(draft=strategy.draft)["priority"]))
    except django_forms.ValidationError as error:
        raise FormInvalid(error.messages[0]) from None
    services.priority_reorder(strategy=strategy, user=request.user, order=order,
                              expected_version=form.cleaned_data["version"])
    return _("Priority order saved.")


@editor_write(effect="layout")
def layout_update(request, strategy, session, previews):
    form = valid_form(forms.LayoutForm, request)
    data = form.cleaned_data
    _confirmed_or_ask(request, strategy, previews, edits.layout_updated(
        strategy.draft, source=data["source"], identity=data["identity"], fallback=data["fallback"]))
    services.layout_update(strategy=strategy, user=request.user, source=data["source"], identity=data["identity"],
                           fallback=data["fallback"], expected_version=data["version"])
    return _("Layout policy saved.")


@editor_write(effect="blocks")
def block_move(request, strategy, session, previews):
    form = valid_form(forms.BlockMoveForm, request)
    data = form.cleaned_data
    services.block_move(strategy=strategy, user=request.user, run=previews.run, target=data["target"],
                        anchor=data["anchor"], side=data["side"], detach=data["detach"],
                        expected_version=data["version"])
    return _("Block moved; the strategy keeps the move as a layout override.")


@editor_write(effect="blocks")
def block_reset(request, strategy, session):
    form = valid_form(forms.BlockResetForm, request)
    services.block_override_remove(strategy=strategy, user=request.user, target=form.cleaned_data["target"],
                                   expected_version=form.cleaned_data["version"])
    return _("The block's stored move was removed; it goes back to its source's place.")


@editor_write()
def settings_update(request, strategy, session, previews):
    form = valid_form(forms.SettingsForm, request)
    data = form.cleaned_data
    _confirmed_or_ask(request, strategy, previews, edits.settings_updated(
        strategy.draft, name=data["name"], backend=data["backend"] or None, placement=data["placement"]))
    services.strategy_update(strategy=strategy, user=request.user, name=data["name"], backend=data["backend"] or None,
                             placement=data["placement"], expected_version=data["version"])
    return _("Strategy settings saved.")


@editor_write(effect=None)
def revision_save(request, strategy, session):
    form = valid_form(forms.RevisionForm, request)
    revision, created = services.draft_revision_save(strategy=strategy, user=request.user,
                                                     note=form.cleaned_data["note"],
                                                     expected_version=form.cleaned_data["version"])
    if created:
        return _("Saved revision %(revision)s.") % {"revision": revision.revision[:12]}
    return _("The draft is unchanged since revision %(revision)s; nothing new was saved.") % {
        "revision": revision.revision[:12]}


# ---------------------------------------------------------------------------------------------- list, create, copy


@require_GET
def strategy_list(request):
    return _list_page(request)


def _list_page(request, *, import_refusal: dict[str, Any] | None = None, status: int = 200):
    search = search_text(request.GET)
    page = list_page(request, listed_strategies(search))
    using = session_previews().applied_by_strategy([s.pk for s in page.rows])
    rows = presenters.strategy_rows(page.rows, request.user, using, can_edit_strategy)
    return render(request, "strategies/list.html", {"rows": rows, "page": page, "search": search,
                                                    "can_create": can_create_strategies(request.user),
                                                    "import_refusal": import_refusal}, status=status)


@require_POST
def strategy_import(request):
    """A strategy's JSON file (its export, reference A.2) -> a new strategy of the user's with that draft and a first
    revision; the editor opens on it. A refused file stores nothing and the list says why."""
    try:
        require(request.user, EDIT_STRATEGY, "import strategies")
        upload = request.FILES.get("file")
        if upload is None:
            raise invalid("file", "a strategy's JSON file (a strategy export)")
        if upload.size > MAX_BODY_BYTES:
            raise too_large("file", upload.size)
        report = services.strategy_import(user=request.user, document=parse_json(upload.read(), "file"))
    except CodedError as error:
        return _list_page(request, import_refusal=error.to_json(), status=error.status)
    messages.success(request, _("Imported “%(name)s” with its first revision.") % {
        "name": presenters.strategy_name(report.name)})
    for note in report.notes:
        messages.info(request, note)
    return HttpResponseRedirect(reverse("strategies:edit", args=[report.id]), status=303)


@require_POST
def strategy_create(request):
    try:
        require(request.user, EDIT_STRATEGY, "create strategies")
        name = valid_form(forms.NameForm, request).cleaned_data["name"].strip() or _("New strategy")
        created = services.strategy_create(user=request.user, name=name)
    except FormInvalid as error:
        messages.error(request, str(error))
        return HttpResponseRedirect(reverse("strategies:list"), status=303)
    except CodedError as error:
        return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=error.status)
    messages.success(request, _("Created “%(name)s”.") % {"name": created.name})
    return HttpResponseRedirect(reverse("strategies:edit", args=[created.slug]), status=303)


@require_POST
def strategy_copy(request, slug):
    source = strategy_or_404(slug)
    try:
        require(request.user, EDIT_STRATEGY, "copy strategies")
        name = valid_form(forms.NameForm, request).cleaned_data["name"].strip() or None
        copy = services.strategy_copy(user=request.user, source=source, name=name)
    except FormInvalid as error:
        messages.error(request, str(error))
        return HttpResponseRedirect(reverse("strategies:edit", args=[source.slug]), status=303)
    except CodedError as error:
        return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=error.status)
    messages.success(request, _("Copied “%(source)s”: this copy is yours to edit.") % {"source": presenters.strategy_name(source.name)})
    url = reverse("strategies:edit", args=[copy.slug])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url, status=303)


