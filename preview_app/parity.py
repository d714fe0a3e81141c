"""The parity check: what SillyTavern actually sent, beside what the studio assembles for the session with
`builtin-st`, message by message (engine.md §5, SillyTavern parity).

Three steps, each a function: `read_sent` turns a pasted or uploaded chat-completion body (or a bare messages
array) into typed messages, refusing a wrong shape with the path of the bad field; `session_parity` runs the engine
(a read: nothing is stored); `parity_rows` aligns the two lists with the compare view's `align_messages` and names
every difference in role, content and name.

`align_messages` pairs messages by their parts, then by role and content. SillyTavern's messages have no parts, so
only equal messages pair there; a run of unpaired messages between two pairs is then matched in order, so a message
whose text changed shows as one changed row rather than as one removed and one added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from preview_app.compare import align_messages
from preview_app.models import Session
from preview_app.previews import session_request, strategy_document, with_options
from strategies_app.access import strategy_for_read
from strategies_app.selectors import latest_revision
from studio.engine_runs import assemble
from studio.errors import invalid

PARITY_STRATEGY = "builtin-st"
FIELDS = ("role", "content", "name")
# Characters of unchanged text shown around a content difference, and of each differing part.
CONTEXT_CHARS = 60
PART_CHARS = 400


# ---------------------------------------------------------------------------------------------- what was sent


@dataclass(frozen=True)
class PlainMessage:
    """A message as a chat-completion client sends it (either side of the comparison)."""

    role: str
    content: str
    name: str = ""
    # What compare.align_messages reads besides role and content: SillyTavern's messages have no parts, and
    # delivery and history status are the studio's own, so they never differ here.
    parts = ()
    delivery = history_status = ""

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content, **({"name": self.name} if self.name else {})}


@dataclass(frozen=True)
class Sent:
    """What SillyTavern sent, as the studio compares it, and notes on what it read but does not compare."""

    messages: tuple[PlainMessage, ...]
    notes: tuple[str, ...] = ()


_SHAPE = 'a chat-completion request body ({"messages": [...]}) or a messages array'


def read_sent(value: Any, *, path: str = "sent") -> Sent:
    """A chat-completion request body or a bare messages array -> `Sent`; a wrong shape is a 400 naming the path
    of the bad field and what it expects."""
    notes: list[str] = []
    if isinstance(value, dict):
        if "messages" not in value:
            raise invalid(path, _SHAPE)
        others = sorted(key for key in value if key != "messages")
        if others:
            notes.append(_("Not compared: the request's other fields (%(fields)s).") % {"fields": ", ".join(others)})
        path, value = f"{path}.messages", value["messages"]
        if not isinstance(value, list):
            raise invalid(path, "a list of messages")
    elif not isinstance(value, list):
        raise invalid(path, _SHAPE)
    messages = tuple(_sent_message(item, f"{path}[{index}]", index, notes) for index, item in enumerate(value))
    return Sent(messages, tuple(notes))


def _sent_message(item: Any, path: str, index: int, notes: list[str]) -> PlainMessage:
    if not isinstance(item, dict):
        raise invalid(path, 'a message object {"role", "content"}')
    role = item.get("role")
    if not isinstance(role, str) or not role:
        raise invalid(f"{path}.role", "a role (system, user, assistant or tool)")
    if "content" not in item:
        raise invalid(f"{path}.content", "a text or a list of content parts")
    content = _content(item["content"], f"{path}.content", index, notes)
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise invalid(f"{path}.name", "a text")
    others = sorted(key for key in item if key not in FIELDS)
    if others:
        notes.append(_("Message #%(index)s: not compared: %(fields)s.") % {"index": index,
                                                                           "fields": ", ".join(others)})
    return PlainMessage(role, content, name or "")


def _content(value: Any, path: str, index: int, notes: list[str]) -> str:
    """A text, null (read as empty), or content parts: the text parts joined as they are; any other part is
    named in a note, not dropped in silence."""
    if isinstance(value, str):
        return value
    if value is None:
        notes.append(_("Message #%(index)s: its content is null, read as empty.") % {"index": index})
        return ""
    if not isinstance(value, list):
        raise invalid(path, "a text or a list of content parts")
    texts: list[str] = []
    for number, part in enumerate(value):
        part_path = f"{path}[{number}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise invalid(part_path, 'a content part {"type": "text", "text": ...}')
        if kind != "text":
            notes.append(_("Message #%(index)s: content part %(part)s (%(type)s) is not compared: the studio "
                           "compares text only.") % {"index": index, "part": number, "type": kind})
            continue
        if not isinstance(part.get("text"), str):
            raise invalid(f"{part_path}.text", "a text")
        texts.append(part["text"])
    if len(texts) > 1:
        notes.append(_("Message #%(index)s: %(count)s text parts joined into one text.") % {
            "index": index, "count": len(texts)})
    return "".join(texts)


# ---------------------------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Difference:
    """One field of a message pair that differs. For content: where (0-based character offset, 1-based line and
    column of the assembled text), the differing middles after the common start and end, and some unchanged text
    around them (`before`, `after`, cut with an ellipsis)."""

    field: str
    assembled: str
    sent: str
    at: int | None = None
    line: int | None = None
    column: int | None = None
    before: str = ""
    after: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"field": self.field, "assembled": self.assembled, "sent": self.sent}
        if self.field == "content":
            data.update(at=self.at, line=self.line, column=self.column)
        return data

    @property
    def shown_assembled(self) -> str:
        return _visible(_cut(self.assembled))

    @property
    def shown_sent(self) -> str:
        return _visible(_cut(self.sent))


def _cut(text: str) -> str:
    return text if len(text) <= PART_CHARS else text[:PART_CHARS] + "…"


def _visible(text: str) -> str:
    """Whitespace that would otherwise be invisible in a highlighted difference: line breaks, tabs, and a middle
    made only of spaces."""
    if text and not text.strip(" "):
        return text.replace(" ", "·")
    return text.replace("\n", "↵\n").replace("\t", "⇥")


def content_difference(assembled: str, sent: str) -> Difference:
    """The first and last differing characters of two texts, as a `Difference` with some unchanged text around."""
    limit = min(len(assembled), len(sent))
    start = 0
    while start < limit and assembled[start] == sent[start]:
        start += 1
    end = 0
    while end < limit - start and assembled[-1 - end] == sent[-1 - end]:
        end += 1
    line = assembled.count("\n", 0, start) + 1
    column = start - (assembled.rfind("\n", 0, start) + 1) + 1
    before = ("…" if start > CONTEXT_CHARS else "") + assembled[max(0, start - CONTEXT_CHARS):start]
    after = (assembled[len(assembled) - end:][:CONTEXT_CHARS] if end else "") + ("…" if end > CONTEXT_CHARS else "")
    return Difference("content", assembled[start:len(assembled) - end], sent[start:len(sent) - end], at=start,
                      line=line, column=column, before=before, after=after)


def differences(assembled: PlainMessage, sent: PlainMessage) -> tuple[Difference, ...]:
    found = []
    if assembled.role != sent.role:
        found.append(Difference("role", assembled.role, sent.role))
    if assembled.content != sent.content:
        found.append(content_difference(assembled.content, sent.content))
    if assembled.name != sent.name:
        found.append(Difference("name", assembled.name, sent.name))
    return tuple(found)


# Row kinds: the same message, a pair that differs, a pair that is out of order, and a message only one side has.
SAME, CHANGED, MOVED, ONLY_ASSEMBLED, ONLY_SENT = "same", "changed", "moved", "only_assembled", "only_sent"


@dataclass(frozen=True)
class ParityRow:
    kind: str
    assembled_index: int | None
    sent_index: int | None
    assembled: PlainMessage | None
    sent: PlainMessage | None
    differences: tuple[Difference, ...] = ()
    parts: tuple[str, ...] = ()  # the assembled message's node ids: where its text comes from

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "assembled_index": self.assembled_index, "sent_index": self.sent_index,
                "differences": [difference.to_json() for difference in self.differences]}


def _pair_row(i: int, j: int, a: PlainMessage, b: PlainMessage, parts: tuple[str, ...], *, moved: bool) -> ParityRow:
    found = differences(a, b)
    return ParityRow(MOVED if moved else CHANGED if found else SAME, i, j, a, b, found, parts)


def parity_rows(assembled: list[dict[str, Any]], sent: tuple[PlainMessage, ...]) -> list[ParityRow]:
    """`assembled`: the result's `request.messages` JSON; rows in SillyTavern's order, as the compare view's."""
    ours = [PlainMessage(m["role"], m["content"], m.get("name") or "") for m in assembled]
    parts = [tuple(m.get("parts") or ()) for m in assembled]
    # Only what SillyTavern sends is compared: the studio's delivery and history status are left out.
    alignment = align_messages(ours, list(sent))
    rows: list[ParityRow] = []
    left: list[int] = []
    right: list[int] = []

    def flush() -> None:
        for k in range(max(len(left), len(right))):
            i = left[k] if k < len(left) else None
            j = right[k] if k < len(right) else None
            if i is not None and j is not None:
                rows.append(_pair_row(i, j, ours[i], sent[j], parts[i], moved=False))
            elif i is not None:
                rows.append(ParityRow(ONLY_ASSEMBLED, i, None, ours[i], None, parts=parts[i]))
            else:
                rows.append(ParityRow(ONLY_SENT, None, j, None, sent[j]))
        left.clear()
        right.clear()

    for row in alignment.rows:
        if row.b_index is None:
            left.append(row.a_index)
        elif row.a_index is None:
            right.append(row.b_index)
        else:
            flush()
            rows.append(_pair_row(row.a_index, row.b_index, ours[row.a_index], sent[row.b_index],
                                  parts[row.a_index], moved="moved" in row.changes))
    flush()
    return rows


@dataclass(frozen=True)
class ParityReport:
    rows: tuple[ParityRow, ...]
    assembled: tuple[PlainMessage, ...]
    sent: Sent
    strategy: str
    revision: str | None  # the builtin-st revision the studio assembled with (the one a golden would pin)

    @property
    def identical(self) -> bool:
        return all(row.kind == SAME for row in self.rows)

    @property
    def counts(self) -> dict[str, int]:
        found = dict.fromkeys((SAME, CHANGED, MOVED, ONLY_ASSEMBLED, ONLY_SENT), 0)
        for row in self.rows:
            found[row.kind] += 1
        return found

    @property
    def field_counts(self) -> dict[str, int]:
        """How many message pairs differ in each field."""
        found = dict.fromkeys(FIELDS, 0)
        for row in self.rows:
            for difference in row.differences:
                found[difference.field] += 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "identical": self.identical, "strategy": self.strategy, "revision": self.revision,
                "rows": [row.to_json() for row in self.rows],
                "assembled": [message.to_json() for message in self.assembled],
                "sent": [message.to_json() for message in self.sent.messages], "notes": list(self.sent.notes)}


def session_parity(*, session: Session, sent: Sent, options: dict[str, Any]) -> ParityReport:
    """Assemble `session` with builtin-st's latest revision (`options`: the preview's generation and tokenizer
    fields) and align the answer with `sent`. A read: nothing is stored; an engine refusal is raised."""
    strategy = strategy_for_read(PARITY_STRATEGY)
    revision = latest_revision(strategy)
    document = strategy_document(strategy, revision.document) if revision is not None else PARITY_STRATEGY
    result = assemble(with_options(session_request(session, document), options)).model_dump(mode="json")
    messages = result["request"]["messages"]
    rows = parity_rows(messages, sent.messages)
    assembled = tuple(PlainMessage(m["role"], m["content"], m.get("name") or "") for m in messages)
    return ParityReport(tuple(rows), assembled, sent, PARITY_STRATEGY,
                        revision.revision if revision is not None else None)
