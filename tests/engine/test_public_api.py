"""The public API (engine.md §1): exactly these names import from `assembly`, each from its one home."""

import subprocess
import sys
from pathlib import Path

import pytest

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


# Modules a plain SillyTavern chat request (JSON card, no regex scripts, no dialogue examples) never uses.
_LOADED_WITH_FIRST_USE = ("assembly.budget", "assembly.fragments", "assembly.placement",
                          "assembly.sillytavern.examples", "assembly.sillytavern.js_regex",
                          "assembly.sillytavern.pattern_matcher", "assembly.sillytavern.png",
                          "assembly.sillytavern.worldinfo_scan")


def test_modules_a_plain_chat_request_does_not_use_load_with_their_first_use():
    # a fresh interpreter: importing the package and assembling a SillyTavern request loads none of them
    code = ("import sys, assembly; assembly.assemble({'strategy': 'builtin-st', 'host': {'core_available': True}, "
            "'resources': {'preset': {'prompts': [{'identifier': 'main', 'content': 'Hi'}, "
            "{'identifier': 'dialogueExamples', 'marker': True}, {'identifier': 'chatHistory', 'marker': True}]}, "
            "'character': {'name': 'Ann', 'description': 'A sailor.'}}, "
            "'conversation': {'input': [{'role': 'user', 'content': 'hi'}]}}); "
            f"print(sorted(m for m in {_LOADED_WITH_FIRST_USE!r} if m in sys.modules)); "
            "from assembly import place_context_blocks, select_within_budget; "
            "print(place_context_blocks.__module__, select_within_budget.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.splitlines() == ["[]", "assembly.placement assembly.budget"]


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        assembly.no_such_name  # noqa: B018
