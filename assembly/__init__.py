"""The assembly engine: pure Python over pydantic models; it never imports Django.

The public API is engine.md §1; everything a caller needs imports from here.
"""

from assembly.api import assemble, capabilities, require_available
from assembly.budget import BudgetError, select_within_budget
from assembly.catalogue import builtin_strategies
from assembly.errors import AssemblyError
from assembly.fragments import FragmentError, define_context_fragments
from assembly.host import commit_turn
from assembly.placement import PlacementError, get_placement_capabilities, place_context_blocks
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
