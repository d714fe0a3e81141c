"""The blocks of a request's preset, card and persona remembered across requests: the next turn of a chat (or a
re-preview) sends the same resources, which the resource memo hands back as the very same parsed object, and these
sources read nothing of the conversation, so the same object under the same settings gives the same blocks.

The key is everything these sources read of their context (assembly.sources: the placement, the enabled rule kinds,
the generation type, the world book and override settings, the manual and disabled positions) plus the rule; the
resources are matched by identity through a weak reference (a reused id finds a dead or other object, so it misses,
and the memo keeps no resources alive: a preview's per-request models cost nothing here). Blocks are frozen and
shared; each hit gets its own list and its own copies of the diagnostics the source reported.
"""

from __future__ import annotations

import marshal
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from assembly.blocks import Block
from assembly.sources import SourceContext

MEMO_KINDS = frozenset({"preset", "character", "persona"})
_SIZE = 192
_remembered: OrderedDict[tuple, tuple[weakref.ref, tuple[Block, ...], tuple[dict[str, Any], ...]]] = OrderedDict()
_lock = threading.Lock()

Source = Callable[[SourceContext, dict[str, Any]], list[Block]]


def _key(kind: str, ctx: SourceContext, rule: dict[str, Any]) -> tuple | None:
    try:
        rule_bytes = marshal.dumps(rule, 2)
    except ValueError:  # not plain JSON data: no key, the source runs
        return None
    # under SillyTavern's own macros the card's blocks hold its fields as this generation's macros left them
    env = ctx.macro_env
    macros = None if env is None else (env.engine, tuple(env.fields.items()))
    return (kind, id(ctx.resources), rule_bytes, ctx.placement, frozenset(ctx.enabled_kinds()), ctx.generation_type,
            ctx.adaptive_worldbook, ctx.preset_beats_default, ctx.manual_keys, ctx.disabled_keys, macros)


def source_blocks(kind: str, source: Source, ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    """`source(ctx, rule)`, answered from memory when the same resources and settings were seen before."""
    if kind not in MEMO_KINDS:
        return source(ctx, rule)
    key = _key(kind, ctx, rule)
    if key is None:
        return source(ctx, rule)
    with _lock:
        hit = _remembered.get(key)
        if hit is not None and hit[0]() is ctx.resources:
            _remembered.move_to_end(key)
        else:
            hit = None
    if hit is not None:
        ctx.diagnostics.extend(dict(d) for d in hit[2])
        return list(hit[1])
    reported = len(ctx.diagnostics)
    blocks = source(ctx, rule)
    try:
        resources = weakref.ref(ctx.resources)
    except TypeError:  # an object without weak references: not remembered
        return blocks
    entry = (resources, tuple(blocks), tuple(dict(d) for d in ctx.diagnostics[reported:]))
    with _lock:
        _remembered[key] = entry
        if len(_remembered) > _SIZE:
            _remembered.popitem(last=False)
    return blocks


def clear_source_memo() -> None:
    with _lock:
        _remembered.clear()
