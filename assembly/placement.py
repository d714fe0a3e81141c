"""The placement primitive (seed 000): put context blocks where the model will actually see them.

A caller already has a list of chat messages and some context blocks (lore, rules, summaries). The layout says where
the anchors are in that list: the character range, the examples range, the real chat history, the author-note message
and the `{{outlet::name}}` hosts. Each block asks for one of eight positions. Six of them are *standalone*: the block
becomes a new message at an insertion point (an index of the original list, "before message i"). Author-note and
outlet blocks are *embedded*: their text goes into the host message, which keeps its role.

Everything is validated before anything is built, so a caller either gets the whole result or a `PlacementError`
whose `code` says what was wrong and whose message names the block id or layout field. Inputs are never mutated:
untouched messages are passed through as they are, an embedded host is a copy with new content.

Ordering at one insertion point (engine.md §2): blocks closing the region that ends there, then `at_depth` blocks
(deeper request first), then blocks opening the region that starts there; within one position ascending `order`,
then `id`. The spec leaves open where an empty region (start == end) goes, as it both ends and starts at its point.
We keep its `before_*` blocks before its `after_*` blocks and put them after a depth-0 block (which belongs to the
last history message, before the point) but before other `at_depth` blocks (which belong to the history message
after the point, or to the empty history, and history follows the character and examples as in SillyTavern).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from assembly.errors import CodedError
from assembly.reading import describe, rename_fields

POSITIONS = (
    "before_character",
    "after_character",
    "before_examples",
    "after_examples",
    "at_depth",
    "author_note_top",
    "author_note_bottom",
    "outlet",
)
STANDALONE_ROLES = ("system", "user", "assistant")
# The part every outlet marker starts with; block text containing it would be an outlet inside an outlet.
OUTLET_MARKER_PREFIX = "{{outlet::"

# Which layout anchor each position needs (engine.md §2, table).
_ANCHOR_OF_POSITION = {
    "before_character": "character",
    "after_character": "character",
    "before_examples": "examples",
    "after_examples": "examples",
    "at_depth": "conversation",
    "author_note_top": "author_note",
    "author_note_bottom": "author_note",
    "outlet": "outlets",
}
# Input spellings -> field names. The seeds write camelCase; JSON and Python write snake_case.
_LAYOUT_FIELDS = {
    "character": "character",
    "examples": "examples",
    "conversation": "conversation",
    "author_note": "author_note",
    "authorNote": "author_note",
    "outlets": "outlets",
}
_CONVERSATION_FIELDS = {
    "message_indices": "message_indices",
    "messageIndices": "message_indices",
    "empty_index": "empty_index",
    "emptyIndex": "empty_index",
}
_RANGE_FIELDS = {"start": "start", "end": "end"}
_BLOCK_CAMEL_FIELDS = {"outletName": "outlet_name"}
_REGIONS = ("character", "examples")


class PlacementError(CodedError):
    """A block or layout that cannot be placed (422). `code` is stable; `detail` names the block id or layout field."""

    def __init__(self, code: str, message: str, **detail: Any) -> None:
        super().__init__(code, message, status=422, detail=detail)


class ContextBlock(BaseModel):
    """A block as the hooks see it: normalized field names, the effective role, any extra caller fields kept.

    `render_block` receives it with the caller's `content`; `render_messages` receives it with the rendered text.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    position: str
    order: int = 0
    role: str | None = None  # as input: None means the default; the hooks always see the effective role
    content: Any = None
    depth: int | None = None
    outlet_name: str | None = None


class PlacementRecord(BaseModel):
    """Where one block ended up. `insertion_point` (an original index) and the depths are None where they do not
    apply: embedded blocks are not inserted, only `at_depth` blocks have depths."""

    model_config = ConfigDict(frozen=True)

    id: str
    position: str
    message_index: int
    embedded: bool
    role: str
    insertion_point: int | None
    requested_depth: int | None
    effective_depth: int | None
    order: int


class PlacementResult(BaseModel):
    """The new message list (host message objects as the caller built them) and one record per block."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    messages: list[Any]
    placements: list[PlacementRecord]


@dataclass(frozen=True)
class _Layout:
    character: tuple[int, int] | None = None
    examples: tuple[int, int] | None = None
    history: tuple[int, ...] | None = None  # None: no conversation anchor declared
    empty_index: int | None = None
    author_note: int | None = None
    outlets: dict[str, int] = field(default_factory=dict)

    def declares(self, anchor: str) -> bool:
        if anchor == "conversation":
            return self.history is not None
        if anchor == "outlets":
            return bool(self.outlets)
        return getattr(self, anchor) is not None


@dataclass
class _Placed:
    block: dict  # normalized fields: effective role, the caller's content, extra caller fields
    text: str  # rendered content
    point: int | None = None  # standalone: insertion point in the original list
    sort_key: tuple = ()
    host: int | None = None  # embedded: original index of the host message
    effective_depth: int | None = None


# --- reading input -------------------------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_mapping(value: Any) -> Mapping | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump()
    return None


def _rename(raw: Mapping, names: Mapping[str, str], where: str, code: str, *, strict: bool, **detail: Any) -> dict:
    """Map the input spellings onto field names; both spellings of one field, or (strict) unknown keys, are errors."""
    def unknown(key: Any) -> PlacementError:
        known = ", ".join(sorted(set(names)))
        return PlacementError(code, f"{where}: unknown field {key!r} (expected one of: {known})", **detail)

    def twice(name: str, first: Any, key: Any) -> PlacementError:
        return PlacementError(code, f"{where}: {first!r} and {key!r} both give {name!r}; use one", **detail)

    return rename_fields(raw, names, unknown=unknown if strict else None, twice=twice)


def _layout_fields(layout: Any) -> dict:
    if layout is None:
        return {}
    raw = _as_mapping(layout)
    if raw is None:
        raise PlacementError("INVALID_LAYOUT", f"layout: expected an object, got {type(layout).__name__}",
                             field="layout")
    fields = _rename(raw, _LAYOUT_FIELDS, "layout", "INVALID_LAYOUT", strict=True, field="layout")
    # An explicit null means "not declared", as in JSON.
    return {name: value for name, value in fields.items() if value is not None}


def _layout_error(field_name: str, expected: str, got: Any) -> PlacementError:
    return PlacementError("INVALID_LAYOUT", f"layout.{field_name}: expected {expected}, got {describe(got)}", field=field_name)


def _outlet_hosts(value: Any) -> Mapping:
    raw = _as_mapping(value)
    if raw is None:
        raise _layout_error("outlets", "an object {name: message index}", value)
    return raw


def _read_index(value: Any, field_name: str, upper: int, *, inclusive: bool) -> int:
    top = upper if inclusive else upper - 1
    if not _is_int(value) or not 0 <= value <= top:
        raise _layout_error(field_name, f"an integer from 0 to {top}", value)
    return value


def _read_range(value: Any, name: str, count: int) -> tuple[int, int]:
    raw = _as_mapping(value)
    if raw is None:
        raise _layout_error(name, "a half-open range {start, end}", value)
    fields = _rename(raw, _RANGE_FIELDS, f"layout.{name}", "INVALID_LAYOUT", strict=True, field=name)
    for bound in ("start", "end"):
        if bound not in fields:
            raise PlacementError("INVALID_LAYOUT", f"layout.{name}.{bound} is missing", field=f"{name}.{bound}")
    start = _read_index(fields["start"], f"{name}.start", count, inclusive=True)
    end = _read_index(fields["end"], f"{name}.end", count, inclusive=True)
    if start > end:
        raise _layout_error(name, f"start <= end (the list has {count} messages)", {"start": start, "end": end})
    return start, end


def _read_layout(layout: Any, count: int) -> _Layout:
    fields = _layout_fields(layout)
    character = _read_range(fields["character"], "character", count) if "character" in fields else None
    examples = _read_range(fields["examples"], "examples", count) if "examples" in fields else None
    if character and examples and character[0] < examples[1] and examples[0] < character[1]:
        raise PlacementError("INVALID_LAYOUT", f"layout.character {list(character)} and layout.examples "
                             f"{list(examples)} overlap; the half-open ranges must be disjoint", field="examples")

    author_note = None
    if "author_note" in fields:
        author_note = _read_index(fields["author_note"], "author_note", count, inclusive=False)

    outlets: dict[str, int] = {}
    if "outlets" in fields:
        for name, index in _outlet_hosts(fields["outlets"]).items():
            if not isinstance(name, str) or not name or "{" in name or "}" in name:
                raise _layout_error("outlets", "outlet names that are non-empty strings without braces", name)
            outlets[name] = _read_index(index, f"outlets.{name}", count, inclusive=False)

    history = empty_index = None
    if "conversation" in fields:
        history, empty_index = _read_conversation(fields["conversation"], count, character, examples,
                                                  author_note, outlets)
    return _Layout(character, examples, history, empty_index, author_note, outlets)


def _read_conversation(value, count, character, examples, author_note, outlets) -> tuple[tuple[int, ...], int]:
    raw = _as_mapping(value)
    if raw is None:
        raise _layout_error("conversation", "an object {message_indices, empty_index}", value)
    fields = _rename(raw, _CONVERSATION_FIELDS, "layout.conversation", "INVALID_LAYOUT", strict=True,
                     field="conversation")
    for name in ("message_indices", "empty_index"):
        if fields.get(name) is None:
            raise PlacementError("INVALID_LAYOUT", f"layout.conversation.{name} is missing",
                                 field=f"conversation.{name}")
    indices = fields["message_indices"]
    if not isinstance(indices, list | tuple):
        raise _layout_error("conversation.message_indices", "a list of message indices", indices)
    not_history = {author_note: "the author-note message"} if author_note is not None else {}
    for name, host in outlets.items():
        not_history.setdefault(host, f"the host of outlet {name!r}")
    previous = -1
    for position, index in enumerate(indices):
        where = f"conversation.message_indices[{position}]"
        _read_index(index, where, count, inclusive=False)
        if index <= previous:
            raise _layout_error(where, f"an index greater than the previous one ({previous}), strictly increasing",
                                index)
        for region_name, region in (("character", character), ("examples", examples)):
            if region and region[0] <= index < region[1]:
                raise _layout_error(where, f"an index outside layout.{region_name} {list(region)}", index)
        if index in not_history:
            raise _layout_error(where, f"a chat history message, not {not_history[index]}", index)
        previous = index
    empty_index = _read_index(fields["empty_index"], "conversation.empty_index", count, inclusive=True)
    return tuple(indices), empty_index


def _message_field(message: Any, name: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def _host_role_and_text(messages: tuple, index: int, anchor: str) -> tuple[str, str]:
    message = messages[index]
    role, content = _message_field(message, "role"), _message_field(message, "content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise PlacementError("INVALID_LAYOUT", f"layout.{anchor}: message {index} must have a string role and "
                             "string content to host embedded blocks", field=anchor)
    return role, content


def _check_hosts(layout: _Layout, messages: tuple) -> None:
    if layout.author_note is not None:
        _host_role_and_text(messages, layout.author_note, "author_note")
    for name, index in layout.outlets.items():
        _, text = _host_role_and_text(messages, index, f"outlets.{name}")
        marker = _outlet_marker(name)
        found = text.count(marker)
        if found != 1:
            raise PlacementError("OUTLET_MARKER_COUNT", f"layout.outlets.{name}: message {index} must contain "
                                 f"{marker} exactly once, found {found}", field=f"outlets.{name}", outlet=name)


def _outlet_marker(name: str) -> str:
    return f"{OUTLET_MARKER_PREFIX}{name}}}}}"


# --- blocks --------------------------------------------------------------------------------------------------------


def _block_error(code: str, block_id: Any, problem: str, **detail: Any) -> PlacementError:
    return PlacementError(code, f"block {block_id!r}: {problem}", block_id=block_id, **detail)


def _read_block(raw_block: Any, number: int, seen: set[str]) -> dict:
    raw = _as_mapping(raw_block)
    if raw is None:
        raise PlacementError("INVALID_BLOCK", f"blocks[{number}]: expected an object, got {type(raw_block).__name__}",
                             block_index=number)
    fields = _rename(raw, _BLOCK_CAMEL_FIELDS, f"blocks[{number}]", "INVALID_BLOCK", strict=False,
                     block_index=number)
    block_id = fields.get("id")
    if not isinstance(block_id, str) or not block_id:
        raise PlacementError("INVALID_BLOCK", f"blocks[{number}].id: expected a non-empty string, got {describe(block_id)}",
                             block_index=number)
    if block_id in seen:
        raise _block_error("DUPLICATE_BLOCK_ID", block_id, "this id is used by an earlier block; ids must be unique")
    seen.add(block_id)

    position = fields.get("position")
    if position not in POSITIONS:
        raise _block_error("INVALID_BLOCK", block_id, f"position {describe(position)} is not one of {', '.join(POSITIONS)}")
    if fields.get("order") is None:
        fields["order"] = 0
    order = fields["order"]
    if not _is_int(order):
        raise _block_error("INVALID_BLOCK", block_id, f"order must be an integer, got {describe(order)}")

    depth = fields.get("depth")
    if position == "at_depth":
        if not _is_int(depth) or depth < 0:
            raise _block_error("INVALID_BLOCK", block_id, f"at_depth needs an integer depth >= 0, got {describe(depth)}")
    elif depth is not None:
        raise _block_error("INVALID_BLOCK", block_id, f"depth {describe(depth)} only applies to at_depth, not {position}")

    outlet_name = fields.get("outlet_name")
    if position == "outlet":
        if not isinstance(outlet_name, str) or not outlet_name:
            raise _block_error("INVALID_BLOCK", block_id, f"outlet needs a non-empty outlet_name, got {describe(outlet_name)}")
    elif outlet_name is not None:
        raise _block_error("INVALID_BLOCK", block_id, f"outlet_name {describe(outlet_name)} only applies to outlet blocks")
    return fields


def _resolve_role(fields: dict, host_role: str | None) -> str:
    role = fields.get("role")
    block_id, position = fields["id"], fields["position"]
    if host_role is None:
        if role is None:
            return "system"  # lore and rules are instructions unless the caller says otherwise
        if role not in STANDALONE_ROLES:
            raise _block_error("INVALID_ROLE", block_id, f"role {describe(role)} is not one of {', '.join(STANDALONE_ROLES)}")
        return role
    if role is not None and role != host_role:
        raise _block_error("INVALID_ROLE", block_id,
                           f"{position} content joins a {host_role!r} message, so its role cannot be {describe(role)}")
    return host_role


def _hook_block(fields: dict, **changes: Any) -> ContextBlock:
    # Built only for the hooks: constructing a model per block is the slowest step at 10,000 blocks.
    return ContextBlock.model_construct(**{**fields, **changes})


def _render(fields: dict, render_block: Callable | None) -> str:
    text = render_block(_hook_block(fields)) if render_block is not None else fields.get("content")
    if not isinstance(text, str):
        source = "render_block returned" if render_block is not None else "content must be a string, got"
        raise _block_error("INVALID_BLOCK", fields["id"], f"{source} {type(text).__name__}")
    if OUTLET_MARKER_PREFIX in text:
        raise _block_error("NESTED_OUTLET", fields["id"],
                           f"its content contains {OUTLET_MARKER_PREFIX!r}; outlets do not nest")
    return text


def _region_ranks(layout: _Layout) -> dict[str, int]:
    declared = [(getattr(layout, name), number, name) for number, name in enumerate(_REGIONS)]
    ordered = sorted((bounds, number, name) for bounds, number, name in declared if bounds is not None)
    return {name: rank for rank, (_, _, name) in enumerate(ordered)}


def _standalone_point(fields: dict, layout: _Layout, ranks: dict[str, int]) -> tuple[int, tuple, int | None]:
    """Insertion point, sort key at that point, effective depth. The key's first item is the tier described in the
    module docstring."""
    position, order, block_id = fields["position"], fields["order"], fields["id"]
    if position == "at_depth":
        depth, history = fields["depth"], layout.history
        count = len(history)
        if count == 0:
            point, tier = layout.empty_index, 3
        elif depth == 0:
            point, tier = history[-1] + 1, 1  # belongs to the last history message: before empty regions there
        else:
            point, tier = history[max(count - depth, 0)], 3
        return point, (tier, -depth, order, block_id), min(depth, count)

    side, region = position.split("_", 1)
    start, end = getattr(layout, region)
    rank = ranks[region]
    point = start if side == "before" else end
    if start == end:
        return point, (2, rank, 0 if side == "before" else 1, order, block_id), None
    return point, (0 if side == "after" else 4, rank, order, block_id), None


def _read_blocks(blocks: Any, layout: _Layout, messages: tuple, render_block: Callable | None) -> list[_Placed]:
    if not isinstance(blocks, list | tuple):
        raise PlacementError("INVALID_BLOCK", f"blocks: expected a list, got {type(blocks).__name__}", field="blocks")
    ranks = _region_ranks(layout)
    seen: set[str] = set()
    placed = []
    for number, raw_block in enumerate(blocks):
        fields = _read_block(raw_block, number, seen)
        position = fields["position"]
        anchor = _ANCHOR_OF_POSITION[position]
        if not layout.declares(anchor):
            raise _block_error("ANCHOR_MISSING", fields["id"], f"{position} needs layout.{anchor}", field=anchor)
        host = None
        if position == "outlet":
            host = layout.outlets.get(fields["outlet_name"])
            if host is None:
                declared = ", ".join(layout.outlets)
                raise _block_error("ANCHOR_MISSING", fields["id"],
                                   f"outlet {fields['outlet_name']!r} is not declared in layout.outlets ({declared})",
                                   field="outlets")
        elif position.startswith("author_note"):
            host = layout.author_note
        host_role = _message_field(messages[host], "role") if host is not None else None
        fields["role"] = _resolve_role(fields, host_role)
        entry = _Placed(block=fields, text=_render(fields, render_block), host=host)
        if host is None:
            entry.point, entry.sort_key, entry.effective_depth = _standalone_point(fields, layout, ranks)
        placed.append(entry)
    return placed


# --- building the result -------------------------------------------------------------------------------------------


def _with_content(message: Any, content: str) -> Any:
    """A copy of a host message with new content; the caller's object is left alone."""
    if isinstance(message, Mapping):
        return {**message, "content": content}
    if isinstance(message, BaseModel):
        return message.model_copy(update={"content": content})
    duplicate = copy.copy(message)
    duplicate.content = content
    return duplicate


def _embedded_key(entry: _Placed) -> tuple:
    return entry.block["order"], entry.block["id"]


def _edit_host(index: int, text: str, layout: _Layout, embedded: list[_Placed]) -> tuple[str, list[_Placed]]:
    """The host's new text and its blocks in reading order (top, outlets by marker position, bottom)."""
    by_outlet: dict[str, list[_Placed]] = {name: [] for name, host in layout.outlets.items() if host == index}
    top, bottom = [], []
    for entry in embedded:
        position = entry.block["position"]
        if position == "outlet":
            by_outlet[entry.block["outlet_name"]].append(entry)
        else:
            (top if position == "author_note_top" else bottom).append(entry)

    # Splice every marker of this host in one pass, so inserted text is never scanned for markers.
    markers = sorted((text.index(_outlet_marker(name)), name) for name in by_outlet)
    pieces, reading_order, cursor = [], [], 0
    for offset, name in markers:
        entries = sorted(by_outlet[name], key=_embedded_key)
        pieces += [text[cursor:offset], "\n".join(entry.text for entry in entries)]
        reading_order += entries
        cursor = offset + len(_outlet_marker(name))
    body = "".join(pieces) + text[cursor:]

    if index == layout.author_note and (top or bottom):
        top.sort(key=_embedded_key)
        bottom.sort(key=_embedded_key)
        body = "\n".join([*(entry.text for entry in top), body, *(entry.text for entry in bottom)])
        reading_order = top + reading_order + bottom
    return body, reading_order


def _standalone_messages(group: list[_Placed], create_message: Callable | None,
                         render_messages: Callable | None) -> tuple[list, list[int]]:
    """Messages for one insertion point and, per block, the offset of its message within them."""
    if render_messages is None:
        made = [{"role": entry.block["role"], "content": entry.text} for entry in group]
        return ([create_message(m) for m in made] if create_message else made), list(range(len(group)))
    rendered = [_hook_block(entry.block, content=entry.text) for entry in group]
    made = render_messages(rendered)
    ids = [entry.block["id"] for entry in group]
    if not isinstance(made, list | tuple) or not made:
        raise PlacementError("INVALID_BLOCK", f"blocks {ids}: render_messages must return a non-empty list of"
                             f" messages, got {made!r}", block_ids=ids)
    # One message per block maps one to one; any other count points every block at the group's first message.
    offsets = list(range(len(group))) if len(made) == len(group) else [0] * len(group)
    return list(made), offsets


def _record(entry: _Placed, message_index: int) -> dict:
    # A plain dict: PlacementResult validates all records at once, much faster than one model per call.
    block = entry.block
    return {
        "id": block["id"],
        "position": block["position"],
        "message_index": message_index,
        "embedded": entry.host is not None,
        "role": block["role"],
        "insertion_point": entry.point,
        "requested_depth": block.get("depth"),
        "effective_depth": entry.effective_depth,
        "order": block["order"],
    }


def place_context_blocks(
    messages: list,
    layout: Mapping | BaseModel | None,
    blocks: list,
    *,
    create_message: Callable[[dict], Any] | None = None,
    render_block: Callable[[ContextBlock], str] | None = None,
    render_messages: Callable[[list[ContextBlock]], list] | None = None,
) -> PlacementResult:
    """Place every block at its position (engine.md §2) and return the new messages with one record per block.

    `render_block(block)` turns each block into its text (default: its `content`, which must then be a string).
    `render_messages(blocks)` turns the standalone blocks of one insertion point, in final order and with rendered
    text, into messages; when it returns one message per block each record points at its own message, otherwise all
    of them point at the first one. Without it each block becomes `create_message({"role", "content"})` (default: the
    dict itself). Embedded blocks never go through either message hook: their host is copied with new content.
    """
    if not isinstance(messages, list | tuple):
        raise PlacementError("INVALID_LAYOUT", f"messages: expected a list, got {type(messages).__name__}",
                             field="messages")
    messages = tuple(messages)
    layout_read = _read_layout(layout, len(messages))
    _check_hosts(layout_read, messages)
    placed = _read_blocks(blocks, layout_read, messages, render_block)

    at_point: dict[int, list[_Placed]] = {}
    in_host: dict[int, list[_Placed]] = {index: [] for index in layout_read.outlets.values()}
    for entry in placed:
        if entry.host is None:
            at_point.setdefault(entry.point, []).append(entry)
        else:
            in_host.setdefault(entry.host, []).append(entry)

    result: list = []
    records: list[dict] = []
    for index in range(len(messages) + 1):
        group = at_point.get(index)
        if group:
            group.sort(key=lambda entry: entry.sort_key)
            made, offsets = _standalone_messages(group, create_message, render_messages)
            base = len(result)
            result.extend(made)
            records.extend(_record(entry, base + offset) for entry, offset in zip(group, offsets, strict=True))
        if index == len(messages):
            break
        embedded = in_host.get(index)
        if embedded is None:
            result.append(messages[index])
            continue
        text = _message_field(messages[index], "content")
        body, reading_order = _edit_host(index, text, layout_read, embedded)
        result.append(_with_content(messages[index], body))
        records.extend(_record(entry, len(result) - 1) for entry in reading_order)
    return PlacementResult(messages=result, placements=records)


def get_placement_capabilities(layout: Mapping | BaseModel | None) -> dict:
    """The positions and outlet names the declared anchors allow. Only the anchors' presence is looked at; indices,
    ranges and markers are checked by `place_context_blocks`."""
    fields = _layout_fields(layout)
    outlets = [str(name) for name in _outlet_hosts(fields["outlets"])] if "outlets" in fields else []
    declared = {name for name in fields if name != "outlets"} | ({"outlets"} if outlets else set())
    positions = [position for position in POSITIONS if _ANCHOR_OF_POSITION[position] in declared]
    return {"positions": positions, "outlets": outlets}
