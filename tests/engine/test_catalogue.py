"""The catalogue (engine.md §4; reference A.3 built-ins, A.4 control rows, A.12 position catalogue, A.14.7).

Expected values are written out from the reference text, never taken from the code's own output.
"""

import copy

import pytest

from assembly.catalogue import (
    DEFAULT_BUILTIN_ID,
    POSITION_CATALOGUE,
    builtin_strategies,
    get_builtin_strategy,
    resolve_strategy,
    with_context_control_rows,
)
from assembly.strategy import StrategyError, normalize_strategy, strategy_backend, strategy_revision
from tests.engine.strategy_documents import FORMAT, TAVERN_KINDS, doc, normalized_rule

# --- built-ins (A.3, A.14.7) ----------------------------------------------------------------------------------------

SLOT_LAYOUT = {"version": 1, "source": "preset-slots", "identity": "position", "fallback": "source-order",
               "overrides": [], "priority": ["preset", "resource", "default"]}
BUILTINS = [  # (id, backend or None for absent, placement, layout, name), A.3 table
    ("builtin-native-slots", "native", "native-slots", SLOT_LAYOUT,
     "预设插槽优先（标准） / Preset slots first (standard)"),
    ("builtin-native-roles", "native", "native-roles", None, "身份优先（标准） / Roles first (standard)"),
    ("builtin-st", None, "st", SLOT_LAYOUT, "预设插槽优先（进阶） / Preset slots first (advanced)"),
]


def test_builtin_catalogue_ids():
    ids = [strategy["id"] for strategy in builtin_strategies()]
    assert sorted(ids) == ["builtin-native-roles", "builtin-native-slots", "builtin-st"]  # A.14.7 B1
    assert DEFAULT_BUILTIN_ID == "builtin-native-slots" == ids[0]


@pytest.mark.parametrize(("builtin_id", "backend", "placement", "expected_layout", "name"), BUILTINS)
def test_builtin_matches_reference(builtin_id, backend, placement, expected_layout, name):
    strategy = get_builtin_strategy(builtin_id)
    expected = {"id": builtin_id, "format": FORMAT, "version": 1, "name": name, "placement": placement,
                "rules": [normalized_rule(kind, kind) for kind in TAVERN_KINDS]}
    if backend is not None:
        expected["backend"] = backend
    if expected_layout is not None:
        expected["layout"] = expected_layout
    assert strategy == expected
    assert [strategy for strategy in builtin_strategies() if strategy["id"] == builtin_id] == [expected]
    assert strategy_backend(strategy) == (backend or "core")
    without_id = {key: value for key, value in strategy.items() if key != "id"}
    assert normalize_strategy(strategy) == without_id == normalize_strategy(without_id)
    assert "ST 风格" not in strategy["name"]  # B1: the withdrawn wording is gone


def test_builtins_are_pairwise_distinct_and_native_ones_adaptive():
    strategies = builtin_strategies()
    assert len({strategy_revision(strategy) for strategy in strategies}) == 3
    adaptive = [s.get("backend") == "native" and s["placement"] in ("native-roles", "native-slots") for s in strategies]
    assert adaptive == [True, True, False]


def test_builtins_cannot_be_mutated_through_results():
    first = builtin_strategies()
    first[0]["rules"][0]["enabled"] = False
    first[0]["layout"]["priority"].reverse()
    one = get_builtin_strategy("builtin-st")
    one["rules"].clear()
    assert builtin_strategies()[0]["rules"][0]["enabled"] is True
    assert builtin_strategies()[0]["layout"]["priority"] == ["preset", "resource", "default"]
    assert len(get_builtin_strategy("builtin-st")["rules"]) == 8


@pytest.mark.parametrize("unknown", ["builtin-native-st", "builtin-cache", "nope", "", None, 5])
def test_unknown_builtin_is_404(unknown):
    with pytest.raises(StrategyError) as caught:
        get_builtin_strategy(unknown)
    assert (caught.value.code, caught.value.status, caught.value.path) == ("STRATEGY_NOT_FOUND", 404, "id")
    assert "builtin-native-slots" in str(caught.value)


def test_resolve_strategy_by_id_or_document():
    builtin_id, strategy = resolve_strategy("builtin-native-roles")
    assert builtin_id == "builtin-native-roles" and "id" not in strategy and strategy["placement"] == "native-roles"
    assert resolve_strategy(doc(id="mine")) == ("mine", normalize_strategy(doc()))
    assert resolve_strategy(doc()) == (None, normalize_strategy(doc()))
    with pytest.raises(StrategyError) as caught:
        resolve_strategy("unknown")
    assert caught.value.status == 404


# --- A.4 control rows ----------------------------------------------------------------------------------------------


def control_row(rule_id, kind):
    return {"id": rule_id, "kind": kind, "enabled": True, "role": "preserve", "lifetime": "request", "depth": None,
            "text": "", "name": ""}


def test_context_control_rows_are_added_once_per_uncovered_kind():
    assert with_context_control_rows([]) == [
        control_row("dsh-runtime-context", "dsh.runtime-context"),
        control_row("dsh-sandbox-policy", "dsh.sandbox-policy"),
        control_row("dsh-approval-policy", "dsh.approval-policy"),
    ]
    present = [normalized_rule(f"c{i}", kind, enabled=False)
               for i, kind in enumerate(["dsh.runtime-context", "dsh.sandbox-policy", "dsh.approval-policy"])]
    assert with_context_control_rows(present) == present  # C2: nothing added when all three are present


def test_context_control_row_ids_stay_unique():
    # A.14.3 C2: an unrelated rule already uses the id
    taken = [normalized_rule("dsh-runtime-context", "dsh.text", role="user")]
    rows = with_context_control_rows(taken, ["dsh.runtime-context"])
    assert rows == taken + [control_row("dsh-runtime-context-control", "dsh.runtime-context")]
    taken.append(normalized_rule("dsh-runtime-context-control", "custom", role="user"))
    snapshot = copy.deepcopy(taken)
    rows = with_context_control_rows(taken, ["dsh.runtime-context", "dsh.sandbox-policy"])
    assert [row["id"] for row in rows[2:]] == ["dsh-runtime-context-control-control", "dsh-sandbox-policy"]
    assert taken == snapshot
    assert normalize_strategy(doc(rules=rows))["rules"] == rows


# --- the position catalogue (A.12) --------------------------------------------------------------------------------


def test_position_catalogue_matches_reference_a12():
    by_module = {}
    for category in POSITION_CATALOGUE:
        by_module.setdefault(category["module"], []).append(category["position"])
        assert category["id"] == f"{category['module']}#{category['position']}"
        assert category["name_en"] and category["name_zh"] and category["help_en"] and category["help_zh"]
    assert by_module == {
        "preset": ["main", "jailbreak", "depth", "body"],
        "character": ["description", "personality", "scenario", "examples", "system", "phi", "greeting",
                      "depth_prompt"],
        "persona": ["persona"],
        "worldbook": ["before", "after", "before_example_messages", "after_example_messages", "before_author_note",
                      "after_author_note", "depth", "outlet"],  # A.14.5 P1
        "phi": ["content"],
    }
    rows = {category["id"]: category for category in POSITION_CATALOGUE}
    assert "description" in rows["character#description"]["macros"]  # P1
    assert rows["preset#depth"]["match"] == {"depth": True}
    assert rows["worldbook#before"]["anchor"] == {"source_id": "character", "side": "before",
                                                  "fields": ("description", "personality", "scenario", "system")}
    assert rows["worldbook#after_example_messages"]["anchor"] == {"source_id": "character", "side": "after",
                                                                  "fields": ("examples",)}
    assert rows["worldbook#before_author_note"]["anchor"] == {"source_id": "preset", "side": "before",
                                                              "fields": ("authorNote", "authorsNote")}


def test_builtin_copies_are_fresh_and_carry_their_known_revision():
    from assembly.catalogue import resolved_revision
    from assembly.strategy import normalized_strategy_revision

    first = get_builtin_strategy("builtin-st")
    first["rules"].clear()
    first["layout"]["priority"].append("changed")
    again = get_builtin_strategy("builtin-st")
    assert again["rules"] and "changed" not in again["layout"]["priority"]
    for builtin in builtin_strategies():
        strategy_id, strategy = resolve_strategy(builtin["id"])
        assert resolved_revision(strategy_id, strategy) == normalized_strategy_revision(strategy)
    document = copy.deepcopy(get_builtin_strategy("builtin-st"))
    document["name"] = "Mine"
    _, normalized = resolve_strategy(document)
    assert resolved_revision(document, normalized) == normalized_strategy_revision(normalized)
