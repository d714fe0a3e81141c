"""Property tests for strategy normalization (engine.md §4, quality.md: normalization is idempotent, never crashes)."""

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly.catalogue import builtin_strategies
from assembly.strategy import StrategyError, normalize_strategy, strategy_revision

ROLES = ["preserve", "system", "user", "assistant"]
KINDS = ["native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi", "custom",
         "dsh.text", "dsh.runtime-context", "dsh.sandbox-policy", "dsh.approval-policy", "vendor.plugin/source"]
STAGE_IDS = st.from_regex(r"[a-z][a-z0-9_.:/-]{0,12}", fullmatch=True)
POSITION_IDS = st.sampled_from(["worldbook#before", "worldbook#after", "worldbook#depth", "character#description",
                                "character#examples", "persona#persona", "phi#content", "preset#main"])
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(
    alphabet=st.characters(blacklist_categories=()), max_size=20)  # lone surrogates included on purpose
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _depth(draw):
    return draw(st.none() | st.integers(0, 10_000) | st.integers(0, 10_000).map(float))


def _edit_rule(draw, doc):
    if not doc["rules"]:
        return
    rule = doc["rules"][draw(st.integers(0, len(doc["rules"]) - 1))]
    field = draw(st.sampled_from(["enabled", "role", "delivery", "depth", "lifetime", "text", "name", "inputMode"]))
    value = {
        "enabled": lambda: draw(st.booleans() | st.none()),
        "role": lambda: draw(st.sampled_from([*ROLES, None])),
        "delivery": lambda: draw(st.sampled_from(["context", "pre-step", None])),
        "depth": lambda: _depth(draw),
        "lifetime": lambda: draw(st.sampled_from(["request", "snapshot", None])),
        "text": lambda: draw(st.text(max_size=50) | st.none()),
        "name": lambda: draw(st.text(max_size=230) | st.none()),
        "inputMode": lambda: draw(st.sampled_from(["source", "text", None])),
    }[field]()
    if field == "inputMode":
        # one spelling at a time: a second edit of the same rule must not leave both (that is a refused input)
        rule.pop("input_mode", None)
        if draw(st.booleans()):
            rule.pop("inputMode", None)
            field = "input_mode"
    rule[field] = value


def _add_rule(draw, doc):
    if len(doc["rules"]) >= 128:
        return
    taken = {rule["id"] for rule in doc["rules"]}
    rule_id = draw(st.from_regex(r"[a-zA-Z0-9_-]{1,20}", fullmatch=True).filter(lambda i: i not in taken))
    rule = {"id": rule_id, "kind": draw(st.sampled_from(KINDS))}
    for field, values in (("role", st.sampled_from(ROLES)), ("text", st.text(max_size=40)),
                          ("inputMode", st.sampled_from(["source", "text"])), ("name", st.text(max_size=40)),
                          ("delivery", st.sampled_from(["context", "pre-step"]))):
        if draw(st.booleans()):
            rule[field] = draw(values)
    doc["rules"].insert(draw(st.integers(0, len(doc["rules"]))), rule)


def _remove_rule(draw, doc):
    if doc["rules"]:
        doc["rules"].pop(draw(st.integers(0, len(doc["rules"]) - 1)))


def _shuffle_rules(draw, doc):
    doc["rules"] = draw(st.permutations(doc["rules"]))


def _top_level(draw, doc):
    field = draw(st.sampled_from(["backend", "placement", "name", "id"]))
    if field == "backend":
        choice = draw(st.sampled_from(["native", "core", None, "absent"]))
        if choice == "absent":
            doc.pop("backend", None)
        else:
            doc["backend"] = choice
    elif field == "placement":
        doc["placement"] = draw(st.sampled_from(["modules", "st", "native-roles", "native-slots", "list", 3, None]))
    elif field == "name":
        doc["name"] = draw(st.sampled_from(["", " ", "\u3000"])) + "N" + draw(st.text(max_size=60))[:60]
    else:
        doc["id"] = draw(st.text(max_size=10))


def _layout(draw, doc):
    if draw(st.integers(0, 4)) == 0:
        doc.pop("layout", None)
        return
    layout = {"version": draw(st.sampled_from([1, 1.0])),
              "source": draw(st.sampled_from(["manual", "preset-slots"])),
              "identity": draw(st.sampled_from(["preserve", "position"])),
              "fallback": draw(st.sampled_from(["source-order", "error"]))}
    targets = draw(st.lists(st.text(min_size=1, max_size=12), unique=True, max_size=5))
    if targets or draw(st.booleans()):
        layout["overrides"] = [
            {"target": target, "anchor": target + "~", "side": draw(st.sampled_from(["before", "after"])),
             "detach": draw(st.booleans())} for target in targets]
    priority_kind = draw(st.integers(0, 3))
    if priority_kind == 1:
        layout["priority"] = draw(st.sampled_from(["user", "preset", None]))
    elif priority_kind >= 2:
        extras = draw(st.lists(STAGE_IDS.filter(lambda s: s not in {"preset", "resource", "default", "user"}),
                               unique=True, max_size=3))
        stages = ["preset", "resource", "default", *extras] + (["user"] if draw(st.booleans()) else [])
        layout["priority"] = draw(st.permutations(stages))
    if draw(st.booleans()):
        keys = draw(st.lists(POSITION_IDS, unique=True, max_size=6))
        rows = []
        for key in keys:
            source_id, position_id = key.split("#")
            row = {"enabled": draw(st.booleans()), "placement": draw(st.sampled_from(["source", "list"]))}
            row.update({"source_id": source_id} if draw(st.booleans()) else {"sourceId": source_id})
            row.update({"position_id": position_id} if draw(st.booleans()) else {"positionId": position_id})
            others = [other for other in keys if other != key]
            anchor = draw(st.sampled_from(["none", "end", *others]))
            if anchor == "end":
                row["anchor"] = "end"
            elif anchor != "none":
                other_source, other_position = anchor.split("#")
                row["anchor"] = {"sourceId": other_source, "positionId": other_position,
                                 "side": draw(st.sampled_from(["before", "after"]))}
            rows.append(row)
        layout["positions"] = rows
    doc["layout"] = layout


EDITS = [_edit_rule, _add_rule, _remove_rule, _shuffle_rules, _top_level, _layout]


@st.composite
def edited_builtins(draw):
    doc = copy.deepcopy(draw(st.sampled_from(builtin_strategies())))
    for _ in range(draw(st.integers(0, 8))):
        draw(st.sampled_from(EDITS))(draw, doc)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited_builtins())
def test_normalize_is_idempotent_on_edited_builtins(doc):
    before = copy.deepcopy(doc)
    once = normalize_strategy(doc)
    assert doc == before  # never mutated
    assert normalize_strategy(once) == once
    assert json.loads(json.dumps(once, ensure_ascii=False)) == once  # plain JSON: lists, dicts, str, int, bool, None
    assert strategy_revision(doc) == strategy_revision(once)
    assert [rule["id"] for rule in once["rules"]] == [rule["id"] for rule in doc["rules"]]  # nothing dropped/reordered


def _only_strategy_errors(value):
    try:
        result = normalize_strategy(value)
    except StrategyError as error:
        assert error.code == "STRATEGY_INVALID" and error.status in (400, 413)
        assert isinstance(error.path, str) and str(error)
        return
    assert normalize_strategy(result) == result
    assert len(strategy_revision(result)) == 64


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_arbitrary_json_raises_only_strategy_error(value):
    _only_strategy_errors(value)


@st.composite
def near_valid(draw):
    """A built-in with one field somewhere replaced by arbitrary JSON (or a random key added)."""
    doc = copy.deepcopy(draw(st.sampled_from(builtin_strategies())))
    doc["layout"] = {"version": 1, "source": "preset-slots", "identity": "position", "fallback": "error",
                     "overrides": [{"target": "a", "anchor": "b", "side": "after", "detach": False}],
                     "positions": [{"sourceId": "worldbook", "positionId": "after", "enabled": True,
                                    "placement": "list",
                                    "anchor": {"sourceId": "character", "positionId": "scenario", "side": "before"}}]}
    where = draw(st.sampled_from(["top", "rule", "layout", "override", "position", "anchor"]))
    target = {"top": doc, "rule": doc["rules"][draw(st.integers(0, len(doc["rules"]) - 1))], "layout": doc["layout"],
              "override": doc["layout"]["overrides"][0], "position": doc["layout"]["positions"][0],
              "anchor": doc["layout"]["positions"][0]["anchor"]}[where]
    key = draw(st.sampled_from(sorted(target)) | st.sampled_from(["inputMode", "input_mode", "source_id", "priority",
                                                                    "positions", "backend"]) | st.text(max_size=6))
    target[key] = draw(JSON_VALUES)
    return doc


@settings(max_examples=500, deadline=None)
@given(near_valid())
def test_near_valid_documents_raise_only_strategy_error(doc):
    before = copy.deepcopy(doc)
    _only_strategy_errors(doc)
    assert doc == before  # deepcopy keeps the same float objects, so even NaN compares equal by identity
