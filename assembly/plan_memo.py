"""Logical plans remembered across requests: the next turn of a chat (or a re-preview) sends the same strategy and
resources again, and what logical assembly decides from them (claims, text nodes, slots, diagnostics) does not read
the conversation beyond where its messages stand, so the plan is made once and only the message nodes are new.

The key is made by the caller (assembly.logical) from everything the plan reads but the resources; the resources
are matched by identity through a weak reference, as in assembly.source_memo (the memo keeps no resources alive, and
a reused id finds a dead or other object, so it misses). Plans are immutable; a hit copies what it hands out.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

_SIZE = 64
_plans: OrderedDict[tuple, tuple[weakref.ref, Any]] = OrderedDict()
_lock = threading.Lock()


def recalled_plan(key: tuple, resources: Any) -> Any:
    """The plan kept under `key` for these very resources, or None."""
    with _lock:
        hit = _plans.get(key)
        if hit is None or hit[0]() is not resources:
            return None
        _plans.move_to_end(key)
        return hit[1]


def keep_plan(key: tuple, resources: Any, plan: Any) -> None:
    try:
        ref = weakref.ref(resources)
    except TypeError:  # an object without weak references: not remembered
        return
    with _lock:
        _plans[key] = (ref, plan)
        if len(_plans) > _SIZE:
            _plans.popitem(last=False)


def clear_plan_memo() -> None:
    with _lock:
        _plans.clear()
