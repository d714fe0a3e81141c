"""The assembly engine: pure Python over pydantic models; it never imports Django.

The public API is engine.md §1; everything a caller needs imports from here.
"""

from importlib import import_module
from typing import Any

from assembly.api import assemble, capabilities, require_available
from assembly.catalogue import builtin_strategies
from assembly.errors import AssemblyError
from assembly.host import commit_turn
from assembly.request import AssemblyRequest, HostSettings
from assembly.results import AssemblyResult
from assembly.strategy import StrategyError, normalize_strategy
from assembly.tokens import count_tokens

__all__ = [
    "AssemblyError",
    "AssemblyRequest",
    "AssemblyResult",
    "HostSettings",
    "assemble",
    "BudgetError",
    "FragmentError",
    "PlacementError",
    "StrategyError",
    "builtin_strategies",
    "capabilities",
    "commit_turn",
    "count_tokens",
    "define_context_fragments",
    "get_placement_capabilities",
    "normalize_strategy",
    "place_context_blocks",
    "require_available",
    "select_within_budget",
]

# The budgeted selector, the fragments and the placement primitive load with their first use: an assembly request
# that needs none of them does not pay for their models at the first request of a process.
_LOADED_WITH_FIRST_USE = {
    "BudgetError": "assembly.budget", "select_within_budget": "assembly.budget",
    "FragmentError": "assembly.fragments", "define_context_fragments": "assembly.fragments",
    "PlacementError": "assembly.placement", "get_placement_capabilities": "assembly.placement",
    "place_context_blocks": "assembly.placement",
}


def __getattr__(name: str) -> Any:
    module = _LOADED_WITH_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'assembly' has no attribute {name!r}")
    return getattr(import_module(module), name)
