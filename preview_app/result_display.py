"""An AssemblyResult turned into what the preview page shows: one row per request message with its parts, the words
for every status and reason code, the token bar, the budget bar and the world book entries in and out. Pure
functions over the result's typed parts: no queries, so the page costs the same however long the history is."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext, gettext_lazy

from assembly.results import AssemblyResult, NodeView, PresetBudget, RequestMessage
from assembly.sillytavern.regex_changes import RegexChange
from preview_app.world_info_log import WorldBookView, world_book_log
from studio.wording import (
    DECISION_WORDS,
    HISTORY_STATUS_WORDS,
    diagnostic_details,
    engine_word,
    excerpt,
    lock_words,
    meaning,
    node_name,
)

LONG_CHARS = 600  # content longer than this (or than LONG_LINES lines) is collapsed behind a summary
LONG_LINES = 12

HISTORY_STATUS_ORDER = ("request-only", "appended", "snapshot", "native", "reused")
# The same statuses in SillyTavern's words for SillyTavern-order work: SillyTavern re-sends everything at every
# generation, so "kept" and "sent once" mean nothing there; what it knows is the chat (its messages, the new one it
# saves) and the prompts it builds for each generation. Snapshots do not exist there: no word, no chip.
SILLYTAVERN_HISTORY_WORDS = {
    "native": gettext_lazy("from the chat"),
    "appended": gettext_lazy("new message, saved to the chat"),
    "request-only": gettext_lazy("built for each generation"),
}


@dataclass(frozen=True)
class HistoryTotal:
    status: str
    words: str
    messages: int
    tokens: int


def history_totals(messages: Iterable[RequestMessage], sillytavern: bool = False) -> list[HistoryTotal]:
    """The History entry column summed: per status, how many messages and tokens (statuses absent left out); on
    SillyTavern work in SillyTavern's words, statuses it has no word for left out."""
    counts: dict[str, list[int]] = {}
    for message in messages:
        total = counts.setdefault(message.history_status, [0, 0])
        total[0] += 1
        total[1] += message.tokens
    order = {status: i for i, status in enumerate(HISTORY_STATUS_ORDER)}
    words = SILLYTAVERN_HISTORY_WORDS if sillytavern else HISTORY_STATUS_WORDS
    return [HistoryTotal(status, str(words.get(status, status)), n, tokens)
            for status, (n, tokens) in sorted(counts.items(), key=lambda item: order.get(item[0], 99))
            if not sillytavern or status in words]


DELIVERY_WORDS = {
    "system": gettext_lazy("the system prompt"),
    "history": gettext_lazy("a message of the durable history"),
    "input": gettext_lazy("the user's input of this turn"),
    "context": gettext_lazy("a runtime-context snapshot after the input"),
    "pre-step": gettext_lazy("a pre-step message next to the input"),
    "request": gettext_lazy("part of the request only"),
    "snapshot": gettext_lazy("a retained snapshot"),
}
EVENT_KIND_WORDS = {  # source.kind of a durable history record (assembly.host)
    "user": gettext_lazy("the user's message"),
    "assistant": gettext_lazy("the assistant's reply"),
    "system-prompt": gettext_lazy("a record of the system prompt"),
    "runtime-context": gettext_lazy("a runtime-context snapshot"),
    "dsh-prompt-assembler": gettext_lazy("a pre-step message"),
    "assembly-snapshot": gettext_lazy("a snapshot record"),
    "request-assembly": gettext_lazy("a log record of the strategy revision"),
}
# On SillyTavern work the studio's log record is a note SillyTavern would keep hidden (the session page's word)
SILLYTAVERN_EVENT_KIND_WORDS = {"request-assembly": gettext_lazy("a studio note, hidden like SillyTavern's hidden "
                                                                 "messages")}
TRUST_WORDS = {
    "system": gettext_lazy("host"),
    "operator": gettext_lazy("operator (designer's resources, the model's replies)"),
    "user": gettext_lazy("end user"),
    "tool": gettext_lazy("tool output"),
}


class Words:
    """The translated words of one page, looked up once each (a thousand rows would otherwise ask gettext for the
    same strings thousands of times)."""

    def __init__(self, sillytavern: bool = False):
        history = SILLYTAVERN_HISTORY_WORDS if sillytavern else HISTORY_STATUS_WORDS
        self.sillytavern = sillytavern
        # SillyTavern names its chat's messages by what they are; the studio's message ids are no word of its
        self.chat = {"history": gettext("chat message"), "input": gettext("the user's input")} if sillytavern else {}
        self.history = {k: str(v) for k, v in history.items()}
        self.delivery = {k: str(v) for k, v in DELIVERY_WORDS.items()}
        self.decision = {k: str(v) for k, v in DECISION_WORDS.items()}
        self.trust = {k: str(v) for k, v in TRUST_WORDS.items()}
        self.activation: dict[str, str] = {}  # world book part id -> why it is in, in words (the world-info panel's)
        self._locks: dict[tuple[str | None, str | None], str] = {}

    def lock(self, lock_reason: str | None, slot_id: str | None) -> str:
        key = (lock_reason, slot_id)
        if key not in self._locks:
            self._locks[key] = lock_words(lock_reason, slot_id)
        return self._locks[key]


@dataclass
class Part:
    id: str
    node: NodeView | None
    words: Words
    regex_changes: tuple[RegexChange, ...] = ()  # builtin-st: each regex script that changed this part's text

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None if self.node is None else getattr(self.node, name, None)

    @property
    def label(self) -> str:
        """The item's name; conversation messages are all called "history" / "input", so their id says more."""
        if self.node is None:
            return self.id
        if self.node.module in self.words.chat:
            return self.words.chat[self.node.module]
        if self.node.module in ("history", "input"):
            return f"{engine_word('module', self.node.module)} {self.id.split(':', 1)[-1]}"
        return node_name(self.node.name) or self.id

    @property
    def shown_id(self) -> str:
        """The part's id as the parts table shows it: none for a SillyTavern chat message (its label says it)."""
        return "" if self.node is not None and self.node.module in self.words.chat else self.id

    @property
    def activation_words(self) -> str | None:
        """Why a world book entry is in, in the page's language (the engine's own line is English)."""
        return self.words.activation.get(self.id) or self.activation

    @property
    def lock_words(self) -> str:
        return self.words.lock(self.lock_reason, self.slot_id) if self.node else ""

    @property
    def decision_words(self) -> str:
        return self.words.decision.get(self.position_decision or "", "") if self.node else ""

    @property
    def trust_words(self) -> str:
        return self.words.trust.get(self.trust or "", "") if self.node else ""


@dataclass
class Row:
    index: int
    message: RequestMessage
    parts: list[Part]
    words: Words
    host_kind: str | None = None

    @property
    def host_record_words(self) -> str:
        """What a host record in the history is ("a pre-step message"), or "" for the user's own messages."""
        return str(EVENT_KIND_WORDS.get(self.host_kind, self.host_kind)) if self.host_kind else ""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.message, name, None)

    @property
    def long(self) -> bool:
        content = self.message.content
        return len(content) > LONG_CHARS or content.count("\n") >= LONG_LINES

    @property
    def excerpt(self) -> str:
        return excerpt(self.message.content)

    @property
    def history_words(self) -> str:
        return self.words.history.get(self.message.history_status, "")

    @property
    def delivery_words(self) -> str:
        return self.words.delivery.get(self.message.delivery, "")

    @property
    def tool_calls_json(self) -> str:
        calls = self.message.tool_calls
        return json.dumps(calls, indent=2, ensure_ascii=False) if calls else ""


@dataclass
class Segment:
    module: str
    tokens: int
    percent: float
    colour: int  # index into the stylesheet's palette


@dataclass
class BudgetView:
    limit: int
    total: int
    over_by: int
    fixed_tokens: int
    applied: bool
    total_after: int | None
    plan: list[dict[str, Any]]
    used_percent: float  # of the limit, at most 100


@dataclass
class PresetBudgetView:
    """SillyTavern's budget from the preset (context size minus reply length): what it dropped and why."""

    limit: int
    used: int
    remaining: int
    used_percent: float
    dropped: list[dict[str, Any]]
    failure: dict[str, Any] | None


@dataclass
class PreviewDisplay:
    result: AssemblyResult
    rows: Rows
    diagnostics: list[dict[str, Any]]
    segments: list[Segment]
    budget: BudgetView | None
    preset_budget: PresetBudgetView | None
    world_book: WorldBookView | None
    durable_events: list[dict[str, Any]]

    @property
    def message_count(self) -> int:
        return len(self.rows)

    @property
    def history_totals(self) -> list[HistoryTotal]:
        return history_totals(self.result.request.messages, sillytavern=self.result.placement == "st")

    @property
    def diagnostic_count(self) -> int:
        return sum(len(d["occurrences"]) for d in self.diagnostics)


class Rows(Sequence):
    """One row per request message, each built when first read: a page of a 5,000-message request shows a window
    of a few dozen (quality.md, Performance), so the rest are never built; its length and totals come from the messages."""

    def __init__(self, result: AssemblyResult, host_records: dict[str, str] | None = None):
        self._messages = result.request.messages
        self._host_records = host_records or {}
        self._nodes = {node.id: node for node in result.nodes}
        self._words = Words(sillytavern=result.placement == "st")
        self._changes: dict[str, list[RegexChange]] = {}
        for change in result.regex_changes:
            self._changes.setdefault(change.part, []).append(change)
        self._built: dict[int, Row] = {}

    def activation_words(self, words: dict[str, str]) -> None:
        """The world-info panel's reasons (part id -> words) for the parts tables, so both say the same."""
        self._words.activation.update(words)

    def __len__(self) -> int:
        return len(self._messages)

    def _row(self, index: int) -> Row:
        row = self._built.get(index)
        if row is None:
            message, nodes, changes = self._messages[index], self._nodes, self._changes
            row = self._built[index] = Row(index, message, [
                Part(part, nodes.get(part), self._words, tuple(changes.get(part, ()))) for part in message.parts],
                self._words, self._host_records.get(message.id))
        return row

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._row(index)


def _segments(by_module: dict[str, int]) -> list[Segment]:
    total = sum(by_module.values())
    if not total:
        return []
    return [Segment(module, tokens, round(100 * tokens / total, 2), index % 10)
            for index, (module, tokens) in enumerate(by_module.items()) if tokens]


def _budget(result: AssemblyResult) -> tuple[BudgetView | None, PresetBudgetView | None]:
    """The request's budget report (engine.md §8, when a budget was given) and SillyTavern's own budget from the
    preset (builtin-st); either may be absent. The engine nests the second in the first when both exist."""
    budget = result.budget
    if budget is None:
        return None, None
    preset_report = budget if isinstance(budget, PresetBudget) else budget.preset_budget
    preset = None
    if preset_report is not None:
        limit = preset_report.limit
        used = max(0, limit - preset_report.remaining)
        preset = PresetBudgetView(limit=limit, used=used, remaining=preset_report.remaining,
                                  used_percent=_percent(used, limit), dropped=preset_report.dropped,
                                  failure=preset_report.failure)
    if isinstance(budget, PresetBudget):
        return None, preset
    names = {node.id: _plan_name(node) for node in result.nodes}
    limit = budget.limit
    return BudgetView(limit=limit, total=budget.total, over_by=budget.over_by, fixed_tokens=budget.fixed_tokens,
                      applied=budget.applied, total_after=budget.total_after,
                      plan=[{**item.model_dump(), "name": names.get(item.id, item.id)} for item in budget.eviction_plan],
                      used_percent=_percent(budget.total, limit)), preset


def _plan_name(node: Any) -> str:
    """An evicted item in words: a chat message by its role and opening words, anything else by its name."""
    if node.module == "history":
        return f"{engine_word('role', node.role)}: “{excerpt(node.text, 48)}”"
    return node_name(node.name) or node.id


def _percent(part: int, whole: int) -> float:
    return 100.0 if not whole else min(100.0, round(100 * part / whole, 2))


def diagnostic_entries(result: AssemblyResult) -> list[dict[str, Any]]:
    """The result's diagnostics as the pages list them: one entry per code, in order of first appearance, with its
    meaning and every occurrence's details."""
    diagnostics: dict[str, dict[str, Any]] = {}
    for found in result.diagnostics:
        entry = diagnostics.setdefault(found.code, {"code": found.code, "meaning": meaning(found.code),
                                                    "occurrences": []})
        entry["occurrences"].append(diagnostic_details(found.details))
    return list(diagnostics.values())


def display(result: AssemblyResult, host_records: dict[str, str] | None = None) -> PreviewDisplay:
    """Everything the preview page shows, from an AssemblyResult; `host_records` (message id -> source kind) names
    the host's records in the history as what they are."""
    events = []
    kinds = {**EVENT_KIND_WORDS, **(SILLYTAVERN_EVENT_KIND_WORDS if result.placement == "st" else {})}
    for event in result.durable_events:
        kind = event.kind
        events.append({**event.model_dump(mode="json"), "kind": kind,
                       "kind_words": str(kinds.get(kind, kind)), "excerpt": excerpt(event.content)})
    budget, preset_budget = _budget(result)
    rows, world_book = Rows(result, host_records), world_book_log(result)
    if world_book is not None:
        rows.activation_words({f"worldbook:{entry.uid}": entry.reason for entry in world_book.active})
    return PreviewDisplay(result=result, rows=rows, diagnostics=diagnostic_entries(result),
                          segments=_segments(result.tokens.by_module), budget=budget,
                          preset_budget=preset_budget, world_book=world_book, durable_events=events)


def client_messages(result: AssemblyResult) -> list[dict[str, Any]]:
    """The request messages as a chat-completion client sends them: role, content, and name / tool fields when
    set; none of the studio's annotations."""
    out = []
    for message in result.request.messages:
        plain: dict[str, Any] = {"role": message.role, "content": message.content}
        for key in ("name", "tool_calls", "tool_call_id"):
            if getattr(message, key):
                plain[key] = getattr(message, key)
        out.append(plain)
    return out
