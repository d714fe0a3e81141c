"""SillyTavern 1.18's Macros 2.0 (the `v2` engine): nesting, scoped macros, {{if}}/{{else}}, variable shorthands,
escapes. Expected values are what the st-macros oracle's v2 runs answer for the same constructs."""

import pytest

from assembly.sillytavern.macro_environment import MacroEnvironment
from assembly.sillytavern.macro_variables import MacroVariables


def env(local=None, global_=None, **card):
    fields = {"description": "", "personality": "", "scenario": "", "mesExamples": "", "persona": "",
              "system": "", "jailbreak": "", "version": "", "creatorNotes": "", "charDepthPrompt": "",
              "greeting": "Hello {{user}}, I am {{char}}."}
    fields.update(card)
    return MacroEnvironment(user="Alex", char="Zoe", engine="v2", card=fields,
                            variables=MacroVariables(local=dict(local or {}), global_=dict(global_ or {})))


@pytest.mark.parametrize(("text", "expected"), [
    ("{{ user }} and {{char }}", "Alex and Zoe"),  # whitespace inside the braces
    ("{{reverse::{{user}}}}", "xelA"),  # nested macros first
    ("{{{user}}}", "{Alex}"),  # the innermost pair is the macro
    ("\\{\\{user\\}\\}", "{{user}}"),  # escaped braces are text
    ("{{newline::2}}|{{space::3}}|{{space}}|", "\n\n|   | |"),
    ("{{space::-1}}|{{space::}}", "{{space::-1}}|{{space::}}"),  # a count it cannot read: as written
    ("{{noop}}{{comment::gone}}{{// gone too}}|", "|"),
    ("{{greeting}}", "Hello Alex, I am Zoe."),
    ("{{Nope}} {{foo::{{user}}}} {{x-y}}", "{{Nope}} {{foo::Alex}} {{x-y}}"),  # unknown: nested ones still run
    ("{{if}}bare{{/if}}", "{{if}}bare{{/if}}"),
    ("{{if ::empty condition}}", "{{if ::empty condition}}"),
    ("text {{else}} more", "text  more"),  # an {{else}} no {{if}} took is empty
    ("{{trim}}   near  {{/trim}}!", "near!"),
    ("<USER> <bot>", "Alex Zoe"),
])
def test_macros(text, expected):
    assert env().evaluate(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("{{if user}}yes{{else}}no{{/if}}", "yes"),
    ("{{if description}}D{{else}}no description{{/if}}", "no description"),  # an empty field is false
    ("{{if !personality}}no personality{{/if}}", "no personality"),
    ("{{if 0}}zero{{else}}nonzero-branch{{/if}}", "nonzero-branch"),
    ("{{if false}}never{{else}}always{{/if}}", "always"),
    ("{{if .flag}}outer{{if $season}} inner{{/if}}{{else}}outer-else{{/if}}", "outer-else"),
    ("{{if user}}\n    indented {{user}}\n    second line\n{{/if}}", "indented Alex\nsecond line"),
    ("{{#if user}}  keep spaces  {{/if}}", "  keep spaces  "),  # '#' keeps the scope's whitespace
])
def test_if_takes_one_branch(text, expected):
    assert env().evaluate(text) == expected


def test_only_the_branch_taken_runs():
    environment = env()
    assert environment.evaluate("{{if user}}{{.a = 1}}{{else}}{{.b = 1}}{{/if}}") == ""
    assert environment.variables.local == {"a": "1"}


@pytest.mark.parametrize(("text", "expected", "stored"), [
    ("{{.mood = calm}}[{{.mood}}]", "[calm]", {"mood": "calm"}),
    ("{{.hp = 5}}{{.hp += 2}}{{.hp}}", "7", {"hp": 7}),
    ("{{.hp = 5}}{{.hp -= 2}}{{.hp}}", "3", {"hp": 3}),
    ("{{.c++}} {{.c++}} {{.d--}}", "1 2 -1", {"c": 2, "d": -1}),
    ("{{.x ?? fallback}}", "fallback", {}),
    ("{{.x ??= first}} {{.x ??= second}}", "first first", {"x": "first"}),
    ("{{.flag || empty}}", "empty", {}),
    ("{{.n = 3}}{{.n == 3}} {{.n != 3}} {{.n > 6}} {{.n <= 4}}", "true false false true", {"n": "3"}),
    ("{{setvar::who::{{user}}}}{{getvar::who}}", "Alex", {"who": "Alex"}),
    ("{{incvar tone}}", "1", {"tone": 1}),  # an argument after a space
    ("{{hasvar::who}} {{varexists::who}}", "false false", {}),
    ("{{setvar::a::1}}{{deletevar::a}}{{hasvar::a}}", "false", {}),
])
def test_local_variables(text, expected, stored):
    environment = env()
    assert environment.evaluate(text) == expected
    assert environment.variables.local == stored


def test_global_shorthand_and_macros():
    environment = env(global_={"gflag": 2})
    assert environment.evaluate("{{$gflag++}} {{getglobalvar::gflag}} {{$unset}}|{{hasglobalvar::gflag}}") == \
        "3 3 |true"


def test_card_fields_inside_card_fields_are_empty():
    environment = env(description="about {{personality}}", personality="calm")
    assert environment.evaluate("{{description}}") == "about "


def test_a_bare_trim_takes_the_newlines_around_it_and_is_not_reported():
    environment = env()
    assert environment.evaluate("a\n{{trim}}\nb") == "ab"
    assert "trim" not in environment.unsupported


@pytest.mark.parametrize(("text", "expected"), [("{{roll 2d6}}", "8"), ("{{roll::d20}}", "11"), ("{{roll::6}}", "4")])
def test_dice_take_the_middle_face_as_the_legacy_engine_does(text, expected):
    assert env().evaluate(text) == expected


def test_macros_after_an_opening_that_never_closes_run_twice_and_read_as_the_first_run():
    macros = env()
    assert macros.evaluate("{{user\n{{incvar::n}} left") == "{{user\n1 left"
    assert macros.variables.local == {"n": 2}
    closed = env()  # a closed macro before them, or none after, changes nothing
    assert closed.evaluate("{{user}} {{incvar::n}} {{user") == "Alex 1 {{user"
    assert closed.variables.local == {"n": 1}


@pytest.mark.parametrize(("text", "macro"), [
    # each {{setvar}} doubles the value: 2^40 characters would run the process out of memory (the second
    # {{getvar}} of the 22nd makes the text too long)
    ("{{setvar::a::x}}" + "{{setvar::a::{{getvar::a}}{{getvar::a}}}}" * 40, "getvar"),
    ("{{space::10000000000}}", "space"),
    ("{{newline::3000000}}", "newline"),
    ("{{setvar::a::" + "x" * 1_100_000 + "}}{{addvar::a::{{getvar::a}}}}", "addvar"),
    ("{{.a = " + "x" * 1_100_000 + "}}{{.a += {{getvar::a}}}}", "addvar"),
])
def test_macros_that_would_make_more_text_than_the_bound_are_refused_naming_the_macro(text, macro):
    from assembly.errors import AssemblyError
    from assembly.sillytavern.macro_variables import MAX_MACRO_TEXT_CHARS

    with pytest.raises(AssemblyError) as refused:
        env().evaluate(text)
    assert refused.value.code == "ASSEMBLY_TOO_LARGE" and refused.value.status == 413
    assert refused.value.detail == {"macro": macro, "limit": MAX_MACRO_TEXT_CHARS}
    assert str(refused.value).startswith(f"{{{{{macro}}}}}: expected a text of at most {MAX_MACRO_TEXT_CHARS}")


def test_text_up_to_the_bound_is_made():
    doubled = env().evaluate("{{setvar::a::x}}" + "{{setvar::a::{{getvar::a}}{{getvar::a}}}}" * 20 + "{{getvar::a}}")
    assert doubled == "x" * 2**20
    assert env().evaluate("{{space::100000}}") == " " * 100_000


def _evaluations(monkeypatch, text: str, e: MacroEnvironment) -> tuple[str, int]:
    from assembly.sillytavern import macros_v2

    calls = []
    real = macros_v2._evaluate
    monkeypatch.setattr(macros_v2, "_evaluate", lambda tag, call: calls.append(1) or real(tag, call))
    return e.evaluate(text), len(calls)


@pytest.mark.parametrize("head", ["{{foo::", "{{setvar::", "{{char ", "{{user:", "{{upper::"])
def test_nested_macros_left_as_written_are_evaluated_in_work_linear_in_their_depth(monkeypatch, head):
    # each level runs its nested macros for its arguments and again for the text it keeps: the second run is reused
    counts = {}
    for depth in (5, 10, 15):
        out, counts[depth] = _evaluations(monkeypatch, head * depth + "{{user}}" + "}}" * depth, env())
        assert out == head * depth + "Alex" + "}}" * depth
    assert counts[15] - counts[10] == counts[10] - counts[5] <= 4 * 5


def test_nested_macros_that_change_variables_still_run_as_often_as_sillytavern_runs_them(monkeypatch):
    # nothing is reused across a change: {{incvar}} runs once per reading, two readings per level kept as written
    e = env(local={"n": 0})
    out, _count = _evaluations(monkeypatch, "{{foo::{{foo::{{incvar::n}}}}}}{{getvar::n}}", e)
    assert out == "{{foo::{{foo::4}}}}4"
    assert e.variables.local["n"] == 4
