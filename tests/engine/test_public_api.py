"""The public API (engine.md §1): exactly these names import from `assembly`, each from its one home."""

import assembly
from assembly.api import assemble, capabilities, require_available
from assembly.catalogue import builtin_strategies
from assembly.request import AssemblyRequest, HostSettings
from assembly.results import AssemblyResult
from assembly.strategy import StrategyError, normalize_strategy

PUBLIC = [
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


def test_all_is_pinned():
    assert assembly.__all__ == PUBLIC


def test_every_public_name_imports():
    for name in PUBLIC:
        assert getattr(assembly, name) is not None, name


def test_public_names_are_the_homes_objects():
    assert (assembly.assemble, assembly.capabilities, assembly.require_available) == (
        assemble, capabilities, require_available)
    assert (assembly.AssemblyRequest, assembly.HostSettings, assembly.AssemblyResult) == (
        AssemblyRequest, HostSettings, AssemblyResult)
    assert (assembly.builtin_strategies, assembly.normalize_strategy, assembly.StrategyError) == (
        builtin_strategies, normalize_strategy, StrategyError)
