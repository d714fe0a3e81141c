"""Strategy documents (engine.md §4; reference A.2–A.5, A.11 overrides, A.12 catalogue, A.13, A.14.3 C2, A.14.7).

Expected values are written out from the reference text, never taken from the code's own output.
"""

import copy
import hashlib
import json
from types import MappingProxyType

import pytest

from assembly.strategy import (
    MODULE_KINDS,
    PRIORITY_STAGES,
    StrategyError,
    normalize_strategy,
    normalized_strategy_revision,
    priority_order,
    strategy_backend,
    strategy_revision,
)
from tests.engine.strategy_documents import (
    DEFAULT_PRIORITY,
    DROP,
    FORMAT,
    doc,
    layout,
    layout_doc,
    normalized_rule,
    override,
    position,
    rule_doc,
    rules_of,
)

FMT = "Unsupported assembly preset format/version"
NAME = "Preset name is required (max 200 characters)"
RULES = "Expected at most 128 assembly rules"
LAYOUT = "Invalid resource layout policy"
OVERRIDE = "Invalid layout override"
PRIORITY = "Invalid position priority order"
POSITION = "Invalid resource position"
ANCHOR = "Invalid position anchor"

# (case id, document, path, message fragments)
INVALID = [
    # A.2 step 1: format and version
    ("not-an-object-list", [], "", [FMT, "JSON object"]),
    ("not-an-object-string", "builtin-st", "", [FMT]),
    ("not-an-object-null", None, "", [FMT]),
    ("empty-object", {}, "format", [FMT, FORMAT]),
    ("other-format", doc(format="sillytavern"), "format", [FMT, "'sillytavern'"]),
    ("version-2", doc(version=2), "version", [FMT, "must be 1"]),
    ("version-string", doc(version="1"), "version", [FMT]),
    ("version-bool", doc(version=True), "version", [FMT, "got true"]),
    ("version-missing", doc(version=DROP), "version", [FMT, "got null"]),
    # step 2: name
    ("name-missing", doc(name=DROP), "name", [NAME]),
    ("name-empty", doc(name=""), "name", [NAME]),
    ("name-blank-unicode", doc(name=" \u3000\ufeff\t"), "name", [NAME, "non-blank"]),
    ("name-201", doc(name="a" * 201), "name", [NAME, "at most 200"]),
    ("name-untrimmed-201", doc(name=" " * 150 + "a" * 51), "name", [NAME]),
    ("name-101-emoji-is-202-units", doc(name="😀" * 101), "name", [NAME]),
    ("name-number", doc(name=7), "name", [NAME, "the number 7"]),
    ("name-lone-surrogate", doc(name="ab\ud800"), "name", [NAME, "Unicode"]),
    # step 3: rules
    ("rules-missing", doc(rules=DROP), "rules", [RULES]),
    ("rules-object", doc(rules={"id": "x"}), "rules", [RULES, "an object"]),
    ("rules-129", doc(rules=rules_of(129)), "rules", [RULES, "a list of 129 items"]),
    # step 4: backend
    ("backend-unknown", doc(backend="cloud"), "backend", ["Invalid assembly backend", "'cloud'"]),
    ("backend-number", doc(backend=1), "backend", ["Invalid assembly backend"]),
    # step 5: layout policy (A.5)
    ("layout-string", doc(layout="slots"), "layout", [LAYOUT]),
    ("layout-version", layout_doc(version=2), "layout.version", [LAYOUT]),
    ("layout-source", layout_doc(source="auto"), "layout.source", [LAYOUT, "manual, preset-slots"]),
    ("layout-identity", layout_doc(identity="keep"), "layout.identity", [LAYOUT, "preserve, position"]),
    ("layout-fallback", layout_doc(fallback="skip"), "layout.fallback", [LAYOUT, "source-order, error"]),
    ("layout-fallback-missing", layout_doc(fallback=DROP), "layout.fallback", [LAYOUT]),
    ("overrides-object", layout_doc(overrides={}), "layout.overrides", [LAYOUT, "at most 128"]),
    ("overrides-129", layout_doc(overrides=[override(target=f"t{i}") for i in range(129)]), "layout.overrides",
     [LAYOUT]),
    ("layout-unknown-field", layout_doc(blocks=[]), "layout.blocks", ["Unknown strategy field", "a layout"]),
    # A.5 overrides {target, anchor, side, detach}
    ("override-not-object", layout_doc(overrides=["block:a:0"]), "layout.overrides[0]", [OVERRIDE]),
    ("override-target-empty", layout_doc(overrides=[override(target="")]), "layout.overrides[0].target",
     [OVERRIDE, "1 to 4096"]),
    ("override-target-4097", layout_doc(overrides=[override(target="x" * 4097)]), "layout.overrides[0].target",
     [OVERRIDE]),
    ("override-anchor-missing", layout_doc(overrides=[override(anchor=DROP)]), "layout.overrides[0].anchor",
     [OVERRIDE]),
    ("override-anchor-is-target", layout_doc(overrides=[override(anchor="block:a:0")]),
     "layout.overrides[0].anchor", [OVERRIDE, "other than the target"]),
    ("override-duplicate-target", layout_doc(overrides=[override(), override(anchor="block:c:0")]),
     "layout.overrides[1].target", [OVERRIDE, "unique"]),
    ("override-side", layout_doc(overrides=[override(side="middle")]), "layout.overrides[0].side",
     [OVERRIDE, "'before' or 'after'"]),
    ("override-detach-string", layout_doc(overrides=[override(detach="yes")]), "layout.overrides[0].detach",
     [OVERRIDE, "a boolean"]),
    ("override-detach-missing", layout_doc(overrides=[override(detach=DROP)]), "layout.overrides[0].detach",
     [OVERRIDE]),
    ("override-unknown-field", layout_doc(overrides=[override(note="x")]), "layout.overrides[0].note",
     ["Unknown strategy field"]),
    # A.5 priority
    ("priority-other-string", layout_doc(priority="resource"), "layout.priority", [PRIORITY]),
    ("priority-too-short", layout_doc(priority=["preset", "resource"]), "layout.priority", [PRIORITY]),
    ("priority-129", layout_doc(priority=DEFAULT_PRIORITY + [f"s{i}" for i in range(126)]), "layout.priority",
     [PRIORITY]),
    ("priority-duplicate", layout_doc(priority=["preset", "resource", "default", "preset"]), "layout.priority[3]",
     [PRIORITY, "'preset' repeats"]),
    ("priority-missing-default", layout_doc(priority=["user", "preset", "resource"]), "layout.priority",
     [PRIORITY, "missing default"]),
    ("priority-bad-id", layout_doc(priority=["preset", "resource", "default", "no spaces"]), "layout.priority[3]",
     [PRIORITY]),
    ("priority-number", layout_doc(priority=[1, "preset", "resource", "default"]), "layout.priority[0]",
     [PRIORITY]),
    # A.5 positions
    ("positions-object", layout_doc(positions={}), "layout.positions", ["Expected at most 512 resource positions"]),
    ("positions-513", layout_doc(positions=[position(positionId=f"p{i}") for i in range(513)]), "layout.positions",
     ["Expected at most 512 resource positions"]),
    ("position-not-object", layout_doc(positions=["worldbook#after"]), "layout.positions[0]", [POSITION]),
    ("position-source-id", layout_doc(positions=[position(sourceId="-bad")]), "layout.positions[0].sourceId",
     [POSITION]),
    ("position-id-missing", layout_doc(positions=[position(positionId=DROP)]), "layout.positions[0].positionId",
     [POSITION]),
    ("position-enabled-missing", layout_doc(positions=[position(enabled=DROP)]), "layout.positions[0].enabled",
     [POSITION, "a boolean"]),
    ("position-placement", layout_doc(positions=[position(placement="free")]), "layout.positions[0].placement",
     [POSITION, "'source' or 'list'"]),
    ("position-duplicate-key", layout_doc(positions=[position(), position(placement="source")]),
     "layout.positions[1]", [POSITION, "worldbook#after"]),
    ("position-duplicate-key-across-spellings",
     layout_doc(positions=[position(), {"source_id": "worldbook", "position_id": "after", "enabled": False,
                                        "placement": "source"}]), "layout.positions[1]", [POSITION]),
    ("position-both-spellings", layout_doc(positions=[position(source_id="worldbook")]),
     "layout.positions[0].sourceId", [POSITION, "source_id"]),
    ("position-anchor-string", layout_doc(positions=[position(anchor="start")]), "layout.positions[0].anchor",
     [ANCHOR, "'end'"]),
    ("position-anchor-side", layout_doc(positions=[position(anchor={"sourceId": "character",
                                                                     "positionId": "description",
                                                                     "side": "over"})]),
     "layout.positions[0].anchor", [ANCHOR]),
    ("position-anchor-self", layout_doc(positions=[position(anchor={"sourceId": "worldbook", "positionId": "after",
                                                                     "side": "before"})]),
     "layout.positions[0].anchor", [ANCHOR, "worldbook#after"]),
    ("position-unknown-field", layout_doc(positions=[position(order=1)]), "layout.positions[0].order",
     ["Unknown strategy field"]),
    # step 6: rules
    ("rule-not-object", doc(rules=["preset"]), "rules[0]", ["Invalid assembly rule"]),
    ("rule-id-missing", doc(rules=[{"kind": "preset"}]), "rules[0].id", ["Rule ids must be unique", "1 to 80"]),
    ("rule-id-space", rule_doc(id="a b"), "rules[0].id", ["Rule ids must be unique", "'a b'"]),
    ("rule-id-dot", rule_doc(id="dsh.text"), "rules[0].id", ["Rule ids must be unique"]),
    ("rule-id-81", rule_doc(id="a" * 81), "rules[0].id", ["Rule ids must be unique"]),
    ("rule-id-trailing-newline", rule_doc(id="a\n"), "rules[0].id", ["Rule ids must be unique"]),
    ("rule-id-duplicate", doc(rules=[{"id": "x", "kind": "preset"}, {"id": "x", "kind": "persona"}]), "rules[1].id",
     ["Rule ids must be unique", "'x' is already used"]),
    ("kind-missing", rule_doc(kind=DROP), "rules[0].kind", ["Invalid or duplicate module"]),
    ("kind-leading-dot", rule_doc(kind=".text"), "rules[0].kind", ["Invalid or duplicate module"]),
    ("kind-161", rule_doc(kind="k" * 161), "rules[0].kind", ["Invalid or duplicate module"]),
    ("kind-number", rule_doc(kind=3), "rules[0].kind", ["Invalid or duplicate module", "the number 3"]),
    ("delivery", rule_doc(delivery="later"), "rules[0].delivery", ["Invalid native user delivery", "pre-step"]),
    ("role", rule_doc(role="narrator"), "rules[0].role", ["Invalid role", "preserve, system, user, assistant"]),
    ("role-case", doc(rules=[{"id": "p", "kind": "preset", "role": "System"}]), "rules[0].role", ["Invalid role"]),
    ("lifetime", rule_doc(lifetime="forever"), "rules[0].lifetime", ["Invalid lifetime", "'request' or 'snapshot'"]),
    ("depth-negative", rule_doc(depth=-1), "rules[0].depth", ["Invalid insertion depth", "0 to 10000"]),
    ("depth-10001", rule_doc(depth=10001), "rules[0].depth", ["Invalid insertion depth"]),
    ("depth-fraction", rule_doc(depth=1.5), "rules[0].depth", ["Invalid insertion depth"]),
    ("depth-bool", rule_doc(depth=True), "rules[0].depth", ["Invalid insertion depth", "got true"]),
    ("depth-string", rule_doc(depth="3"), "rules[0].depth", ["Invalid insertion depth"]),
    ("depth-infinite", rule_doc(depth=float("inf")), "rules[0].depth", ["Invalid insertion depth"]),
    ("text-number", rule_doc(text=5), "rules[0].text", ["Custom text exceeds limit", "a string"]),
    ("text-lone-surrogate", rule_doc(text="x\udfff"), "rules[0].text", ["Unicode"]),
    ("input-mode", rule_doc(inputMode="both"), "rules[0].inputMode", ["Invalid rule inputMode", "'source' or 'text'"]),
    ("input-mode-both-spellings", rule_doc(inputMode="text", input_mode="text"), "rules[0].inputMode",
     ["Invalid rule inputMode", "input_mode"]),
    ("enabled-string", rule_doc(enabled="no"), "rules[0].enabled", ["a boolean", "'no'"]),
    ("rule-name-number", rule_doc(name=3), "rules[0].name", ["a string"]),
    ("rule-unknown-field", rule_doc(position="after"), "rules[0].position", ["Unknown strategy field", "a rule"]),
    # ours: unknown top-level fields are errors, not dropped
    ("top-unknown-field", doc(description="x"), "description", ["Unknown strategy field", "a strategy"]),
]


@pytest.mark.parametrize(("document", "path", "fragments"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_documents_name_the_field(document, path, fragments):
    with pytest.raises(StrategyError) as caught:
        normalize_strategy(document)
    error = caught.value
    assert (error.code, error.status, error.path) == ("STRATEGY_INVALID", 400, path)
    assert error.detail["path"] == path
    for fragment in fragments:
        assert fragment in str(error)
    if path:
        assert path in error.message


def test_text_over_the_limit_is_413_and_counts_utf16_units():
    # A.2: at most 524,288 characters, JavaScript length: a character outside the BMP counts twice.
    assert normalize_strategy(rule_doc(text="x" * 524_288))["rules"][0]["text"] == "x" * 524_288
    assert normalize_strategy(rule_doc(text="😀" * 262_144))["rules"][0]["text"] == "😀" * 262_144
    for text in ("x" * 524_289, "😀" * 262_144 + "x"):
        with pytest.raises(StrategyError) as caught:
            normalize_strategy(rule_doc(text=text))
        assert (caught.value.code, caught.value.status, caught.value.path) == ("STRATEGY_INVALID", 413,
                                                                               "rules[0].text")
        assert "Custom text exceeds limit" in str(caught.value) and "524288" in str(caught.value)


# A.2 "Checks run in this order": a document with two faults reports the earlier check.
ORDER = [
    ("name-before-rules", doc(name="", rules="x"), "name"),
    ("rules-before-backend", doc(rules="x", backend="cloud"), "rules"),
    ("backend-before-layout", doc(backend="cloud", layout="x"), "backend"),
    ("layout-before-rules", doc(layout="x", rules=[{"id": "a b"}]), "layout"),
    ("format-before-name", doc(format="x", name=""), "format"),
    ("id-before-kind", doc(rules=[{"id": "a b", "kind": "."}]), "rules[0].id"),
    ("kind-before-delivery", rule_doc(kind=".", delivery="x"), "rules[0].kind"),
    ("delivery-before-role", rule_doc(delivery="x", role="x"), "rules[0].delivery"),
    ("role-before-lifetime", rule_doc(role="x", lifetime="x"), "rules[0].role"),
    ("lifetime-before-depth", rule_doc(lifetime="x", depth=-1), "rules[0].lifetime"),
    ("depth-before-text", rule_doc(depth=-1, text=1), "rules[0].depth"),
    ("text-before-input-mode", rule_doc(text=1, inputMode="x"), "rules[0].text"),
    ("rules-in-order", doc(rules=[{"id": "a", "kind": "custom", "depth": -1}, {"id": "a b"}]), "rules[0].depth"),
    ("duplicate-after-earlier-rules", doc(rules=[{"id": "a", "kind": "custom"}, {"id": "a", "kind": "."}]),
     "rules[1].id"),
    ("layout-version-before-source", layout_doc(version=2, source="x"), "layout.version"),
    ("overrides-before-priority", layout_doc(overrides=[override(side="x")], priority="x"),
     "layout.overrides[0].side"),
    ("priority-before-positions", layout_doc(priority="x", positions="x"), "layout.priority"),
]


@pytest.mark.parametrize(("document", "path"), [c[1:] for c in ORDER], ids=[c[0] for c in ORDER])
def test_checks_run_in_reference_order(document, path):
    with pytest.raises(StrategyError) as caught:
        normalize_strategy(document)
    assert caught.value.path == path


# --- defaults and normalization ---------------------------------------------------------------------------------


def test_minimal_rule_gets_every_default():
    assert normalize_strategy(doc()) == {"format": FORMAT, "version": 1, "name": "Test", "placement": "modules",
                                         "rules": [normalized_rule("preset", "preset")]}


def test_output_key_order_follows_the_reference():
    out = normalize_strategy(doc(backend="native", layout=layout(), rules=[
        {"name": "n", "text": "t", "depth": 1, "lifetime": "request", "role": "user", "enabled": True,
         "kind": "custom", "id": "c", "inputMode": "text", "delivery": "pre-step"}]))
    assert list(out) == ["backend", "format", "version", "name", "placement", "layout", "rules"]
    assert list(out["rules"][0]) == ["delivery", "inputMode", "id", "kind", "enabled", "role", "lifetime", "depth",
                                     "text", "name"]
    assert list(out["layout"]) == ["version", "source", "identity", "fallback", "overrides", "priority"]


ROLE_DEFAULTS = [  # (kind, given role, normalized role), A.2 "Default role"
    ("custom", DROP, "user"),
    ("custom", None, "user"),
    ("custom", "preserve", "system"),
    ("custom", "assistant", "assistant"),
    ("dsh.text", DROP, "user"),
    ("dsh.text", "preserve", "system"),
    ("dsh.text", "system", "system"),
    ("preset", DROP, "preserve"),
    ("worldbook", "system", "system"),
    ("history", "preserve", "preserve"),
    ("dsh.runtime-context", DROP, "preserve"),
    ("vendor.plugin/source", DROP, "preserve"),
]


@pytest.mark.parametrize(("kind", "given", "expected"), ROLE_DEFAULTS)
def test_role_defaults_depend_on_the_kind(kind, given, expected):
    assert normalize_strategy(rule_doc(kind=kind, role=given))["rules"][0]["role"] == expected


RULE_FIELDS = [  # (given fields, expected normalized fields)
    ({"lifetime": "snapshot"}, {"lifetime": "snapshot"}),
    ({"lifetime": None}, {"lifetime": "request"}),
    ({"depth": None}, {"depth": None}),
    ({"depth": 0}, {"depth": 0}),
    ({"depth": 10000}, {"depth": 10000}),
    ({"depth": 2.0}, {"depth": 2}),
    ({"text": None}, {"text": ""}),
    ({"enabled": False}, {"enabled": False}),
    ({"enabled": None}, {"enabled": True}),
    ({"name": None}, {"name": ""}),
    ({"name": "x" * 250}, {"name": "x" * 200}),
    ({"name": "x" * 199 + "😀"}, {"name": "x" * 199}),  # 201 UTF-16 units; the pair is not split
    ({"name": "x" * 198 + "😀"}, {"name": "x" * 198 + "😀"}),
    ({"inputMode": "source"}, {}),
    ({"inputMode": "text"}, {"inputMode": "text"}),
    ({"input_mode": "text"}, {"inputMode": "text"}),
    ({"delivery": "context"}, {"delivery": "context"}),
    ({"delivery": "pre-step"}, {"delivery": "pre-step"}),
    ({"delivery": None}, {}),
]


@pytest.mark.parametrize(("given", "expected"), RULE_FIELDS)
def test_rule_fields_normalize(given, expected):
    out = normalize_strategy(rule_doc(**given))["rules"][0]
    assert out == normalized_rule("r", "custom", role="user", **expected)
    if "depth" in expected and expected["depth"] is not None:
        assert type(out["depth"]) is int


NAMES = [  # (given, kept): trimmed with JavaScript's trim set, length checked before trimming
    ("  Mine\u3000", "Mine"),
    ("\ufeffX\u2028", "X"),
    ("a" * 200, "a" * 200),
    ("😀" * 100, "😀" * 100),
    ("\u001fY", "\u001fY"),  # not JavaScript whitespace, so it stays
]


@pytest.mark.parametrize(("given", "kept"), NAMES)
def test_name_is_trimmed_like_javascript(given, kept):
    assert normalize_strategy(doc(name=given))["name"] == kept


@pytest.mark.parametrize(("backend", "has_key"), [(DROP, False), (None, False), ("native", True), ("core", True)])
def test_backend_absent_stays_absent(backend, has_key):
    out = normalize_strategy(doc(backend=backend))
    assert ("backend" in out) is has_key
    assert strategy_backend(out) == (backend if has_key else "core")


@pytest.mark.parametrize(("given", "placement"), [
    (DROP, "modules"), ("modules", "modules"), ("st", "st"), ("native-roles", "native-roles"),
    ("native-slots", "native-slots"), ("list", "modules"), ("ST", "modules"), (7, "modules"), (None, "modules"),
])
def test_placement_is_coerced_without_a_layout(given, placement):
    assert normalize_strategy(doc(placement=given))["placement"] == placement


@pytest.mark.parametrize(("backend", "source", "identity", "given", "placement"), [
    # A.2 step 7, newest version: an explicit layout decides the placement
    ("native", "preset-slots", "position", "modules", "native-slots"),
    ("native", "preset-slots", "preserve", "native-slots", "native-roles"),
    ("native", "manual", "position", "native-slots", "native-roles"),
    ("native", "manual", "preserve", "modules", "native-roles"),
    ("core", "preset-slots", "preserve", "modules", "st"),
    ("core", "manual", "position", "st", "modules"),
    (DROP, "preset-slots", "position", "native-slots", "st"),
    (DROP, "manual", "preserve", "st", "modules"),
])
def test_layout_decides_the_placement(backend, source, identity, given, placement):
    out = normalize_strategy(doc(backend=backend, placement=given, layout=layout(source=source, identity=identity)))
    assert out["placement"] == placement


@pytest.mark.parametrize(("given", "priority"), [
    (DROP, DEFAULT_PRIORITY),
    (None, DEFAULT_PRIORITY),
    ("user", DEFAULT_PRIORITY),  # legacy strings
    ("preset", DEFAULT_PRIORITY),
    (["user", "preset", "resource", "default"], DEFAULT_PRIORITY),
    (["default", "resource", "preset"], ["default", "resource", "preset"]),
    (["resource", "user", "vendor.order", "default", "preset"], ["resource", "vendor.order", "default", "preset"]),
])
def test_priority_list(given, priority):
    assert normalize_strategy(layout_doc(priority=given))["layout"]["priority"] == priority


def test_layout_defaults_and_stored_parts():
    out = normalize_strategy(layout_doc(overrides=DROP, source="manual", identity="preserve", fallback="error"))
    assert out["layout"] == {"version": 1, "source": "manual", "identity": "preserve", "fallback": "error",
                             "overrides": [], "priority": DEFAULT_PRIORITY}
    assert normalize_strategy(layout_doc(overrides=None))["layout"]["overrides"] == []


def test_overrides_and_positions_are_kept_in_order():
    overrides = [override(target="block:x:0", side="after", detach=True), override()]
    positions = [
        position(anchor="end"),
        {"source_id": "character", "position_id": "description", "enabled": False, "placement": "source"},
        position(positionId="before", placement="list",
                 anchor={"source_id": "character", "position_id": "description", "side": "after"}),
        position(positionId="depth", anchor=None),
    ]
    out = normalize_strategy(layout_doc(overrides=overrides, positions=positions))["layout"]
    assert out["overrides"] == [
        {"target": "block:x:0", "anchor": "block:b:0", "side": "after", "detach": True},
        {"target": "block:a:0", "anchor": "block:b:0", "side": "before", "detach": False},
    ]
    assert out["positions"] == [
        {"sourceId": "worldbook", "positionId": "after", "enabled": True, "placement": "list", "anchor": "end"},
        {"sourceId": "character", "positionId": "description", "enabled": False, "placement": "source"},
        {"sourceId": "worldbook", "positionId": "before", "enabled": True, "placement": "list",
         "anchor": {"sourceId": "character", "positionId": "description", "side": "after"}},
        {"sourceId": "worldbook", "positionId": "depth", "enabled": True, "placement": "list"},
    ]
    assert "positions" not in normalize_strategy(layout_doc())["layout"]
    assert normalize_strategy(layout_doc(positions=[]))["layout"]["positions"] == []


def test_context_control_rule_keeps_enabled_false():
    # A.14.3 C2
    out = normalize_strategy(doc(rules=[{"id": "dsh-runtime-context", "kind": "dsh.runtime-context",
                                         "enabled": False}]))
    assert out["rules"] == [normalized_rule("dsh-runtime-context", "dsh.runtime-context", enabled=False)]


def test_attached_id_is_not_part_of_the_document():
    assert "id" not in normalize_strategy(doc(id="mine"))


def test_input_is_not_mutated_and_output_is_independent():
    given = layout_doc(positions=[position(anchor={"sourceId": "character", "positionId": "description",
                                                   "side": "before"})], overrides=[override()])
    given["rules"] = [{"id": "c", "kind": "custom", "role": "preserve", "depth": 3.0, "input_mode": "text"}]
    snapshot = copy.deepcopy(given)
    out = normalize_strategy(given)
    assert given == snapshot
    out["rules"][0]["text"] = "changed"
    out["layout"]["positions"][0]["anchor"]["side"] = "after"
    out["layout"]["priority"].append("x")
    out["layout"]["overrides"][0]["side"] = "after"
    assert given == snapshot


def test_read_only_mappings_and_tuples_come_out_as_plain_json():
    given = MappingProxyType({"format": FORMAT, "version": 1.0, "name": "T",
                              "rules": (MappingProxyType({"id": "a", "kind": "preset"}),),
                              "layout": {"version": 1, "source": "manual", "identity": "preserve",
                                         "fallback": "error", "overrides": (), "priority": ("preset", "resource",
                                                                                             "default")}})
    out = normalize_strategy(given)
    assert type(out) is dict and type(out["rules"]) is list and type(out["rules"][0]) is dict
    assert json.loads(json.dumps(out)) == out  # tuples would compare unequal to the decoded lists
    assert type(out["version"]) is int


def test_normalizing_twice_changes_nothing():
    given = doc(name="  Spaced ", backend="native", placement="weird",
                layout=layout(priority="user", positions=[position(sourceId=DROP, source_id="phi", positionId="content")]),
                rules=[{"id": "c", "kind": "custom", "role": "preserve", "depth": 5.0, "name": "n" * 300,
                        "input_mode": "source"}, {"id": "h", "kind": "history"}])
    once = normalize_strategy(given)
    assert normalize_strategy(once) == once


# --- revision -------------------------------------------------------------------------------------------------------

MINI = {"format": FORMAT, "version": 1, "name": "Mini 迷你", "rules": [{"id": "c", "kind": "custom", "text": "Hi"}]}
# Written by hand from A.2's defaults: sorted keys, no spaces, UTF-8 as is.
MINI_CANONICAL = ('{"format":"dsh-tavern-request-assembly","name":"Mini 迷你","placement":"modules","rules":'
                  '[{"depth":null,"enabled":true,"id":"c","kind":"custom","lifetime":"request","name":"",'
                  '"role":"user","text":"Hi"}],"version":1}')


def test_revision_is_sha256_of_canonical_json():
    assert strategy_revision(MINI) == hashlib.sha256(MINI_CANONICAL.encode("utf-8")).hexdigest()


def test_revision_ignores_key_order_id_and_implicit_defaults():
    reordered = {"rules": [{"text": "Hi", "kind": "custom", "id": "c"}], "name": "Mini 迷你", "version": 1,
                 "format": FORMAT}
    explicit = {**MINI, "id": "store-id", "placement": "modules",
                "rules": [{"id": "c", "kind": "custom", "text": "Hi", "enabled": True, "role": "user",
                           "lifetime": "request", "depth": None, "name": "", "inputMode": "source"}]}
    revision = strategy_revision(MINI)
    assert strategy_revision(reordered) == revision
    assert strategy_revision(explicit) == revision
    assert strategy_revision(normalize_strategy(MINI)) == revision


@pytest.mark.parametrize("change", [
    {"rules": [{"id": "c", "kind": "custom", "text": "Hi!"}]},
    {"rules": [{"id": "c", "kind": "custom", "text": "Hi", "enabled": False}]},
    {"rules": [{"id": "c", "kind": "custom", "text": "Hi"}, {"id": "p", "kind": "preset"}]},
    {"name": "Mini"},
    {"backend": "core"},  # explicit core is not the legacy absent backend
    {"placement": "st"},
])
def test_revision_changes_with_content(change):
    assert strategy_revision({**MINI, **change}) != strategy_revision(MINI)


def test_revision_depends_on_rule_order():
    a = doc(rules=[{"id": "p", "kind": "preset"}, {"id": "h", "kind": "history"}])
    b = doc(rules=[{"id": "h", "kind": "history"}, {"id": "p", "kind": "preset"}])
    assert strategy_revision(a) != strategy_revision(b)


def test_revision_of_a_normalized_document_needs_no_second_normalization():
    for document in (MINI, doc(id="stored", backend="native"), layout_doc(priority=["default", "preset", "resource"])):
        normalized = normalize_strategy(document)
        assert normalized_strategy_revision(normalized) == strategy_revision(document)


def test_revision_of_invalid_document_raises():
    with pytest.raises(StrategyError):
        strategy_revision(doc(version=2))


# --- A.5 priority order and constants ------------------------------------------------------------------------------


def test_priority_order():
    legacy = normalize_strategy(doc())
    custom = normalize_strategy(layout_doc(priority=["default", "preset", "resource"]))
    assert priority_order(legacy) == DEFAULT_PRIORITY
    assert priority_order(custom) == ["default", "preset", "resource"]


def test_module_and_stage_names():
    assert MODULE_KINDS == ("native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi",
                            "custom", "dsh.text", "dsh.runtime-context", "dsh.sandbox-policy", "dsh.approval-policy")
    assert PRIORITY_STAGES == ("user", "preset", "resource", "default")


def test_error_as_json():
    with pytest.raises(StrategyError) as caught:
        normalize_strategy(rule_doc(depth=-1))
    assert caught.value.to_json() == {"ok": False, "code": "STRATEGY_INVALID", "status": 400,
                                      "error": caught.value.message,
                                      "detail": {"path": "rules[0].depth", "expected": "null or an integer from 0 "
                                                 "to 10000"}}
