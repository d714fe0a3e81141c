"""Session pages' view data: the history rows with their edit forms and button labels, the apply picker, refusals
with their meaning. The preview's rows are in `result_display` and `request_rows`, the comparison in `compare`.
Pure functions over rows already read: no queries of their own."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from assembly.core import SNAPSHOT_KIND
from assembly.errors import CodedError
from assembly.host import CONTEXT_KIND, LOG_KIND, PRE_STEP_KIND, SYSTEM_KIND
from preview_app.forms import EventForm
from preview_app.models import Session, SessionEvent
from strategies_app.models import Strategy, StrategyRevision
from strategies_app.presenters import strategy_name
from strategies_app.revision_notes import revision_note
from studio.wording import engine_word, excerpt, meaning


def error_context(error: CodedError) -> dict[str, Any]:
    """A refusal as the error partials show it: its JSON and the meaning of its code."""
    data = error.to_json()
    return {**data, "meaning": meaning(data["code"])}


def apply_options(strategies: list[Strategy], revisions: dict[int, list[StrategyRevision]],
                  ) -> list[tuple[str, list[tuple[str, str]]]]:
    """The session page's apply picker: per strategy its latest saved revision and each revision (drafts cannot be
    applied); `revisions`: strategy pk -> its saved revisions, newest first."""
    groups = [(_("Assembly"), [("off", _("off: send the conversation unchanged"))])]
    for strategy in strategies:
        saved = revisions.get(strategy.pk, [])
        if not saved:
            continue
        name = strategy_name(strategy.name)  # names, not slugs, as the lists show them
        options = [(strategy.slug, _("%(strategy)s: latest saved revision (%(sha)s)") % {
            "strategy": name, "sha": saved[0].revision[:12]})]
        options += [(f"{strategy.slug}@{r.revision}", f"{name} @ {r.revision[:12]}" +
                     (f" · {revision_note(r.note)}" if r.note else "")) for r in saved]
        groups.append((name, options))
    return groups


def host_records(*, sillytavern: bool = False) -> dict[str, tuple[str, str]]:
    """Per host record kind: what it is and what it does to later requests (the chat shows it apart, collapsed).
    On SillyTavern work the studio's log record is said as SillyTavern would: a hidden note, never sent."""
    if sillytavern:
        return {LOG_KIND: (_("Studio note"), _(
            "Which strategy revision the studio built this request with. Like a hidden message in SillyTavern, it "
            "is never sent."))}
    return {
        SYSTEM_KIND: (_("System prompt record"), _(
            "The system prompt this request sent, kept by the host; a later request whose system prompt differs "
            "records it again.")),
        CONTEXT_KIND: (_("Runtime-context snapshot"), _(
            "A copy of the runtime context kept in the history: every later request sends it again, and an "
            "identical snapshot is reused instead of added.")),
        SNAPSHOT_KIND: (_("Runtime-context snapshot"), _(
            "A copy of an assembled context kept in the history: every later request sends it again, and an "
            "identical snapshot is reused instead of added.")),
        PRE_STEP_KIND: (_("Pre-step message"), _(
            "Text the strategy sends as a user message with your turn (before or after your message), kept in the "
            "history: every later request sends this copy again, and each turn adds another copy.")),
        LOG_KIND: (_("Assembly log"), _("Which strategy revision built this request; it is never sent.")),
    }


def logged_strategy_slugs(events: list[SessionEvent]) -> set[str]:
    """The strategies the history's log records name (their names are read once for `event_rows`)."""
    return {(event.source or {}).get("strategy_id") for event in events
            if (event.source or {}).get("kind") == LOG_KIND} - {None}


def _record_line(event: SessionEvent, names: dict[str, str]) -> str:
    """A log record's strategy and revision in words (its own content is empty: the record is its source)."""
    source = event.source or {}
    if source.get("kind") != LOG_KIND or not source.get("strategy_id"):
        return ""
    slug = source["strategy_id"]
    return _("Built with “%(strategy)s”, revision %(revision)s.") % {
        "strategy": strategy_name(names[slug]) if slug in names else slug, "revision": str(source.get("revision"))[:12]}


def _shown(event: SessionEvent, records: dict[str, tuple[str, str]], names: dict[str, str], sillytavern: bool,
           ) -> dict[str, Any]:
    """What a history row shows of its message beyond the text: the host record it is, a line naming a log
    record's revision, the chip of its record kind, and its id (none on SillyTavern work: SillyTavern shows none)."""
    kind = (event.source or {}).get("kind")
    record = records.get(kind)
    chip = ""
    if kind and kind != event.role:
        chip = record[0].lower() if sillytavern and record else engine_word("record_kind", kind)
    return {"host_record": record, "record_line": _record_line(event, names), "kind_words": chip,
            "message_id": "" if sillytavern else event.message_id}


def event_form(event: SessionEvent) -> EventForm:
    return EventForm(prefix=f"e{event.seq}", initial={
        "role": event.role, "content": event.content, "name": event.name, "tool_call_id": event.tool_call_id,
        "tool_calls": event.tool_calls})


def event_rows(session: Session, events: list[SessionEvent], editable: bool, editing: str,
               edit_errors: dict[int, EventForm], *, first_seq: int = 0, last_seq: int = 0, sillytavern: bool = False,
               strategy_names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Per history message (of the window shown): its edit form when it is being edited, and the URLs and
    accessible names of its buttons (built here once, not with a url and a translate tag per message in the
    template); `first_seq`/`last_seq` are the whole history's ends, so "move up" is off only on its first message.
    `sillytavern`: the session is SillyTavern work (its words, no ids); `strategy_names`: slug -> name of the
    strategies the log records name (`logged_strategy_slugs`)."""
    records, names = host_records(sillytavern=sillytavern), strategy_names or {}

    if not editable:
        return [{"event": event, "seq": str(event.seq), **_shown(event, records, names, sillytavern)}
                for event in events]
    base = reverse("preview:session", args=[session.pk])
    up, down, delete = _("Move message %(seq)s up"), _("Move message %(seq)s down"), _("Delete message %(seq)s")
    edit = _("Edit message %(seq)s")
    rows = []
    for event in events:
        show_form = event.seq in edit_errors or editing == str(event.seq)
        seq = {"seq": event.seq}
        rows.append({"event": event, "seq": str(event.seq),
                     "form": (edit_errors.get(event.seq) or event_form(event)) if show_form else None,
                     "move_url": f"{base}events/{event.seq}/move/", "delete_url": f"{base}events/{event.seq}/delete/",
                     "up_label": up % seq, "down_label": down % seq, "delete_label": delete % seq,
                     "edit_label": edit % seq, **_shown(event, records, names, sillytavern),
                     "first": event.seq <= first_seq, "last": event.seq >= last_seq})
    return rows


def greeting_choices(greetings: list[str]) -> list[tuple[int, str]]:
    """The card's greetings a new history can start with: (index, excerpt), blank ones left out."""
    return [(i, excerpt(text)) for i, text in enumerate(greetings) if text.strip()]


def projection_rows(turns: list[Any], worldbook: Any) -> list[dict[str, Any]]:
    """The projection's table rows: each projected turn with the names of the world-info entries it activates
    (None: no keyword world info), named as the book names them (the comment, else the uid)."""
    entries = getattr(worldbook, "entries", None) or ()
    names = {str(e.uid): e.display_name for e in entries}
    return [{"turn": t, "world_info": None if t.world_info is None else
             [names.get(str(uid), str(uid)) for uid in t.world_info]} for t in turns]


def clock_words(clock: str) -> str:
    """A session's stored clock (ISO 8601 with its offset) as the settings list shows it: "2026-12-06 15:05
    UTC+08:00", seconds only when set, "UTC" alone at offset zero; "" when not set. Breaks between its parts only."""
    if not clock:
        return ""
    from datetime import datetime

    moment = datetime.fromisoformat(clock)
    time = moment.strftime("%H:%M:%S" if moment.second else "%H:%M")
    offset = moment.strftime("%z")  # +0800
    zone = "UTC" if offset in ("", "+0000") else f"UTC{offset[:3]}:{offset[3:]}"
    return f"{moment:%Y-%m-%d} {time} {zone}"
