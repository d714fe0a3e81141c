"""Slots of SillyTavern's prompt collection that hold no node (sillytavern.md §2.6, §4.2-4.4, §4.8).

Logical assembly makes no node for a prompt that sends nothing, but SillyTavern keeps its slot: a disabled or empty
Main still anchors what attaches to it (the author's note before / after Main), and an empty prompt that is not a
system one is a message until the very end, so it breaks a run of system messages that squashing would merge. Such
slots are put back before the first node whose prompt comes after them in `prompt_order`.

Also the other rules of the collection's slots: a pulled marker set in-chat becomes an in-chat prompt, in-chat
prompts merge in collection order, a disabled in-chat Main still has its bucket, and the continue collection lands
where SillyTavern's sparse slot list puts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from assembly.blocks import Node
from assembly.sillytavern.messages import StInjection, StMessage
from assembly.sillytavern.models import kept_on
from assembly.sillytavern.worldinfo_emission import format_world_info
from assembly.sources import ordered_prompts


def collection_identifier(node: Node) -> str | None:
    """The preset prompt a node is sent through: its own identifier, or the marker whose slot holds it."""
    if node.module == "preset" and node.field:
        return node.field
    if node.slot_id and ":" in node.slot_id:
        return node.slot_id.split(":")[1]
    return None


@dataclass(frozen=True)
class Collection:
    """What a preset's prompt collection says for one generation type: the same for every request of the preset,
    so it is worked out once (see `collection`). Read-only: tuples and mapping proxies over prompts, which are
    frozen."""

    prompts: tuple[Any, ...]  # the enabled prompts in order (`sources.ordered_prompts`)
    order: tuple[str, ...]  # every identifier of prompt_order, enabled or not
    index: MappingProxyType  # identifier -> place among `prompts`
    in_chat_markers: MappingProxyType  # identifier -> prompt, for the pulled markers set in-chat
    sends_history: bool  # the Chat History prompt is enabled
    silent: tuple[Any, ...]  # the prompts that are an empty message when they have no node (empty_prompt_messages)


def collection(preset: Any, kind: str) -> Collection:
    """The preset's `Collection` for generation type `kind`, kept on the preset (`models.kept_on`)."""
    return kept_on(preset, f"_kept_collection_{kind}", (preset.prompts, preset.prompt_order),
                   lambda: _collection(preset, kind))


def _collection(preset: Any, kind: str) -> Collection:
    prompts = tuple(ordered_prompts(preset, kind))
    index = {p.identifier: i for i, p in enumerate(prompts)}
    return Collection(
        prompts, tuple([e.identifier for e in preset.prompt_order]), MappingProxyType(index),
        MappingProxyType({p.identifier: p for p in prompts
                          if p.injection_position == 1 and p.identifier in _PULLED_MARKERS}),
        "chatHistory" in index, tuple([p for p in prompts if _silent(p)]))


@dataclass
class _Pending:
    index: int
    after: frozenset[str]
    messages: list[StMessage]


class EmptySlots:
    """Messages waiting for their slot while the nodes are walked in request order."""

    def __init__(self, preset: Any):
        self.order = collection(preset, "normal").order if preset is not None else ()
        self.pending: list[_Pending] = []

    def add(self, identifier: str, messages: list[StMessage]) -> bool:
        """Wait for `identifier`'s slot; False (nothing kept) when the order has no such prompt."""
        if identifier not in self.order:
            return False
        index = self.order.index(identifier)
        self.pending.append(_Pending(index, frozenset(self.order[index + 1:]), messages))
        self.pending.sort(key=lambda p: p.index)
        return True

    def before(self, node: Node) -> list[StMessage]:
        """The messages of every waiting slot that comes before this node's prompt."""
        if not self.pending:  # the usual case: every prompt of the order has its node
            return []
        identifier = collection_identifier(node)
        if identifier is None:
            return []
        due = [p for p in self.pending if identifier in p.after]
        self.pending = [p for p in self.pending if identifier not in p.after]
        return [m for p in due for m in p.messages]

    def rest(self) -> list[StMessage]:
        """The slots after every node: at the end of the ordered prompts."""
        out = [m for p in self.pending for m in p.messages]
        self.pending = []
        return out


def empty_prompt_messages(preset: Any, prompts: list[Any], nodes: list[Node]) -> list[tuple[str, StMessage]]:
    """The enabled relative prompts without a node whose role is not system: each an empty message at its slot."""
    present = {n.field for n in nodes if n.module == "preset" and n.field}
    return [(p.identifier, StMessage(id=p.identifier, role=p.role, content="", kind="prompt", sources=()))
            for p in prompts if _silent(p) and p.identifier not in present]


def _silent(prompt: Any) -> bool:
    """A relative prompt, not a marker, not a system one, with no text: it sends an empty message of its own."""
    return not prompt.marker and prompt.injection_position == 0 and prompt.role != "system" and \
        not (prompt.content or "").strip()


def continue_collection_place(preset: Any, prompts: list[Any]) -> str:
    """Where SillyTavern's continue collection (the continued message and the nudge) ends up (§4.2, §4.6).

    It is pushed onto the sparse list of slots while the history is filled: at one past the highest slot filled so
    far (every enabled relative prompt and Chat History; the examples come after the history). If that index is the
    Chat Examples slot, the examples written there later replace it ("lost": nothing of it is sent); if the Chat
    Examples slot is further on, it goes before the examples ("before_examples"); else after every slot ("end").
    `prompts` are the enabled prompts in order (`sources.ordered_prompts`)."""
    identifiers = [p.identifier for p in prompts]
    if "main" not in identifiers and any(e.identifier == "main" for e in preset.prompt_order):
        order = [e.identifier for e in preset.prompt_order]
        # a disabled Main keeps its (empty) place in the collection
        identifiers = [i for i in order if i in identifiers or i == "main"]
    relative = {p.identifier for p in prompts if p.injection_position == 0} | {"main"}
    if "dialogueExamples" not in identifiers or "dialogueExamples" not in relative:
        return "end"
    filled = [i for i, ident in enumerate(identifiers) if ident in relative and ident != "dialogueExamples"]
    pushed_at = max(filled) + 1 if filled else 0
    examples_at = identifiers.index("dialogueExamples")
    if examples_at == pushed_at:
        return "lost"
    return "before_examples" if examples_at > pushed_at else "end"


_PULLED_MARKERS = ("charDescription", "charPersonality", "scenario", "personaDescription", "worldInfoBefore",
                   "worldInfoAfter")


def in_chat_markers(ordered: list[Node], preset: Any, kind: str) -> tuple[list[Node], list[StInjection]]:
    """A pulled marker whose prompt is in-chat sends its content at the prompt's depth, role and order (§4.1 step
    4): the nodes it holds leave the ordered prompts and become one in-chat prompt."""
    if preset is None or not preset.has_prompt_order:
        return ordered, []
    in_chat = collection(preset, kind).in_chat_markers
    if not in_chat:
        return ordered, []
    held: dict[str, list[Node]] = {}
    for node in ordered:
        identifier = collection_identifier(node)
        if identifier in in_chat and node.message is None:
            held.setdefault(identifier, []).append(node)
    injections = []
    for identifier, nodes in held.items():
        prompt = in_chat[identifier]
        texts = [n.text for n in nodes]
        content = format_world_info(texts, preset.wi_format) if identifier.startswith("worldInfo") else \
            "\n".join(texts)
        injections.append(StInjection(sources=tuple(n.id for n in nodes), content=content, role=prompt.role,
                                      depth=prompt.injection_depth, order=prompt.injection_order))
    moved = {id(n) for nodes in held.values() for n in nodes}
    return [n for n in ordered if id(n) not in moved], injections


def in_collection_order(injections: list[StInjection], preset: Any, kind: str,
                         by_id: dict[str, Node]) -> list[StInjection]:
    """Prompt Manager in-chat prompts in collection order (they merge in that order within a bucket); the others
    after them, as they were."""
    if preset is None or not injections:
        return injections
    order = collection(preset, kind).index
    after = len(order)
    places = []
    for injection in injections:
        place = after
        for source in injection.sources:
            node = by_id.get(source)
            if node is not None:
                name = collection_identifier(node)
                if name in order and order[name] < place:
                    place = order[name]
        places.append(place)
    if places.count(after) == len(places):  # no Prompt Manager prompt among them (world info at depth): as they are
        return injections
    return [injections[i] for i in sorted(range(len(places)), key=places.__getitem__)]  # stable, as before


def place_continue_collection(plan: list[StMessage], place: str) -> list[StMessage]:
    """The continued message and the nudge where SillyTavern's slot list leaves them (see slots.py)."""
    moved = [m for m in plan if m.kind in ("continue_message", "continue_nudge")]
    if not moved or place == "end":
        return plan
    rest = [m for m in plan if m.kind not in ("continue_message", "continue_nudge")]
    if place == "lost":
        return rest
    at = next((i for i, m in enumerate(rest) if m.kind in ("example_header", "example")), None)
    return plan if at is None else rest[:at] + moved + rest[at:]


def empty_in_chat_main(preset: Any) -> StInjection | None:
    """Main's in-chat bucket when its prompt is in-chat but sends nothing (disabled, or empty)."""
    prompt = preset.prompt("main") if preset is not None and preset.has_prompt_order else None
    if prompt is None or prompt.injection_position != 1 or all(e.identifier != "main" for e in preset.prompt_order):
        return None
    return StInjection(sources=("preset:main:empty",), content="", role=prompt.role, depth=prompt.injection_depth,
                       order=prompt.injection_order)
