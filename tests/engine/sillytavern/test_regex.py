"""SillyTavern's regex scripts (sillytavern.md §13.1) and the JavaScript regex translation."""

import pytest

from assembly import assemble
from assembly.macros import MacroContext
from assembly.sillytavern.js_regex import JsRegex
from assembly.sillytavern.models import RegexScript
from assembly.sillytavern.pattern_matcher import regex_from_string
from assembly.sillytavern.regex import AI_OUTPUT, USER_INPUT, WORLD_INFO, regexed, run_regex_script

NAMES = MacroContext(user="Ada", char="Nell")


def sub(find, text, replacement="#"):
    regex = regex_from_string(find)
    return regex.replace_each(text, lambda m: replacement) if isinstance(regex, JsRegex) else None


@pytest.mark.parametrize(("find", "text", "expected"), [
    ("cat", "cat cat", "# cat"),  # a plain string is a pattern without flags: the first match only
    ("/cat/g", "cat cat", "# #"),
    ("/CAT/gi", "cat Cat", "# #"),
    ("/c.t/", "c\nt", "c\nt"),  # no s flag: . does not match a newline
    ("/c.t/s", "c\nt", "#"),
    ("/\\bé/g", "xé é", "x# é"),  # without u, \b and \w are ASCII: é is not a word character, so "xé" has an
    # edge before é and " é" has none
    ("/end$/", "end\n", "end\n"),  # $ without m: only at the very end
    ("/^b/gm", "a\nb", "a\n#"),
    ("/(?<w>cat)\\k<w>/", "catcat", "#"),
    ("/[/", "[", None),  # JavaScript cannot compile it
    ("/cat/q", "/cat/q", "#"),  # flags SillyTavern does not accept: the whole text is the pattern
])
def test_javascript_regex_strings(find, text, expected):
    assert sub(find, text) == expected


def script(**fields):
    return RegexScript(**{"find_regex": "/(\\w+) (wolf)/g", "replace_string": "[$2 of $1]",
                          "placement": (USER_INPUT, AI_OUTPUT, WORLD_INFO), "prompt_only": True, **fields})


def test_the_replacement_fills_groups_match_and_macros_and_trims_group_values():
    s = script(replace_string="{{MATCH}}: $1/$<kind>/$3 for {{user}}", find_regex="/(\\w+) (?<kind>wolf)/",
               trim_strings=("gr",))
    # {{match}} is $0, a group like the others: the trim strings leave it too
    assert run_regex_script(s, "a grey wolf", NAMES) == "a ey wolf: ey/wolf/ for Ada"
    assert run_regex_script(s, "no match here", NAMES) == "no match here"
    assert run_regex_script(s.model_copy(update={"disabled": True}), "a grey wolf", NAMES) == "a grey wolf"


@pytest.mark.parametrize(("mode", "name", "expected"), [
    (0, "N.ll", "N.ll and Nell"),  # the find is used as written: {{char}} is not a macro there
    (1, "N.ll", "# and #"),  # raw macros: "N.ll" is a pattern that matches "Nell" too
    (2, "N.ll", "# and Nell"),  # escaped macros: only the literal name
])
def test_macros_in_the_find(mode, name, expected):
    s = RegexScript(find_regex="/{{char}}/g", replace_string="#", placement=(AI_OUTPUT,), substitute_regex=mode)
    assert run_regex_script(s, f"{name} and Nell", MacroContext(char=name)) == expected


def test_which_scripts_a_call_runs():
    everywhere = RegexScript(find_regex="/a/g", replace_string="1", placement=(AI_OUTPUT,))
    prompt = RegexScript(find_regex="/b/g", replace_string="2", placement=(AI_OUTPUT,), prompt_only=True,
                         min_depth=1, max_depth=2)
    shown = RegexScript(find_regex="/c/g", replace_string="3", placement=(AI_OUTPUT,), markdown_only=True)
    scripts = [everywhere, prompt, shown]
    assert regexed("abc", AI_OUTPUT, scripts, NAMES) == "1bc"  # unmarked: neither prompt-only nor markdown-only
    assert regexed("abc", USER_INPUT, scripts, NAMES) == "abc"  # placement must match
    assert [regexed("abc", AI_OUTPUT, scripts, NAMES, is_prompt=True, depth=d) for d in (0, 1, 2, 3)] == [
        "abc", "a2c", "a2c", "abc"]


def run(scripts, *, preset_scripts=(), card_scripts=(), lore=(), history=None, input_text="a grey wolf"):
    prompts = [{"identifier": "worldInfoBefore", "marker": True}, {"identifier": "chatHistory", "marker": True}]
    preset = {"prompts": prompts, "extensions": {"regex_scripts": list(preset_scripts)},
              "prompt_order": [{"character_id": 100001, "order": [
                  {"identifier": p["identifier"], "enabled": True} for p in prompts]}]}
    resources = {"preset": preset, "regex_scripts": list(scripts),
                 "character": {"name": "Nell", "extensions": {"regex_scripts": list(card_scripts)}},
                 "worldbook": {"entries": list(lore), "activation": "keywords"}}
    history = history if history is not None else [{"id": "h1", "role": "assistant", "content": "one old wolf"},
                                                   {"id": "h2", "role": "user", "content": "two young wolf"}]
    return assemble({"strategy": "builtin-st", "resources": resources, "names": {"user": "Ada"},
                     "host": {"core_available": True},
                     "conversation": {"history": history,
                                      "input": [{"id": "i", "role": "user", "content": input_text}]}})


def st_script(**fields):
    return {"scriptName": "s", "findRegex": "/(\\w+) wolf/g", "replaceString": "$1 hound", "placement": [1, 2],
            "promptOnly": True, **fields}


def test_chat_messages_get_the_prompt_scripts_at_their_depth():
    result = run([st_script(minDepth=1)])  # depth 0 is the newest message: it keeps its wolf
    assert [m.content for m in result.request.messages] == ["one old hound", "two young hound", "a grey wolf"]


def test_global_then_preset_then_card_scripts():
    result = run([st_script(replaceString="$1 dog")],
                 preset_scripts=[st_script(findRegex="/dog/g", replaceString="cat")],
                 card_scripts=[st_script(findRegex="/cat/g", replaceString="fox")])
    assert [m.content for m in result.request.messages][-1] == "a grey fox"


def test_the_typed_input_gets_the_unmarked_user_input_scripts_then_its_macros():
    typed = {"scriptName": "t", "findRegex": "/grey/", "replaceString": "{{char}}'s", "placement": [1]}
    result = run([typed], history=[], input_text="a grey wolf, {{user}}")
    assert [m.content for m in result.request.messages] == ["a Nell's wolf, Ada"]


def test_world_info_scans_the_regexed_chat_and_an_emptied_entry_stays_active_but_is_not_sent():
    lore = [{"uid": 1, "content": "HOUND LORE", "keys": ["hound"], "position": "before"},
            {"uid": 2, "content": "WOLF LORE", "keys": ["wolf"], "position": "before"}]
    emptier = {"scriptName": "e", "findRegex": "/^WOLF LORE$/", "replaceString": "", "placement": [5],
               "promptOnly": True}
    result = run([st_script(), emptier], lore=lore, input_text="a grey hare")
    assert sorted(e.uid for e in result.world_info.active) == [1]  # no wolf is left for the scan
    assert [m.content for m in result.request.messages][0] == "HOUND LORE"
    result = run([emptier], lore=lore)
    assert sorted(e.uid for e in result.world_info.active) == [2]
    assert "WOLF LORE" not in [m.content for m in result.request.messages]


def test_a_find_sillytavern_cannot_compile_changes_nothing_and_is_named():
    result = run([st_script(findRegex="/(wolf/g", scriptName="broken")])
    assert [m.content for m in result.request.messages][-1] == "a grey wolf"
    assert {"code": "ST_REGEX_FIND_INVALID", "script": "broken", "find": "/(wolf/g"} in [d.model_dump() for d in result.diagnostics]


def test_the_greeting_has_its_macros_before_the_scripts_and_later_messages_after():
    # §3: chat[0] is macro-substituted when the chat is read; the others only as the history is filled, after the
    # prompt scripts ran on them
    first_letter = st_script(findRegex="/^(.)/", replaceString="<$1>", placement=[1, 2])
    history = [{"id": "g", "role": "assistant", "content": "{{char}} greets you"},
               {"id": "u", "role": "user", "content": "{{char}}, hello"}]
    result = run([first_letter], history=history, input_text="ok")
    assert [m.content for m in result.request.messages] == ["<N>ell greets you", "<{>{char}}, hello", "<o>k"]


def test_the_chat_is_regexed_once_per_request(monkeypatch):
    # SillyTavern regexes coreChat once; the world info scan and the prompt both read that pass
    from assembly.sillytavern import regex as regex_module

    calls = []
    real = regex_module._regexed_message
    monkeypatch.setattr(regex_module, "_regexed_message", lambda *a: calls.append(a[1]) or real(*a))
    lore = [{"uid": 1, "keys": ["hound"], "content": "Hounds hunt in packs.", "position": "before"}]
    history = [{"id": "h1", "role": "assistant", "content": "one lone wolf, asked once"},
               {"id": "h2", "role": "user", "content": "two pale wolf, asked once"}]
    result = run([st_script()], lore=lore, history=history, input_text="a once-asked wolf")
    assert sorted(calls) == sorted(["one lone wolf, asked once", "two pale wolf, asked once", "a once-asked wolf"])
    assert [m.content for m in result.request.messages][0] == "Hounds hunt in packs."  # found in the regexed chat
    assert "wolf" not in " ".join(m.content for m in result.request.messages if m.delivery == "history")


def test_patterns_over_their_limits_are_reported_by_owner():
    slow = st_script(scriptName="slow", findRegex="/(a|aa)+$/")
    lore = [{"uid": 4, "keys": ["/(a|aa)+$/"], "content": "never", "position": "before"}]
    result = run([slow], lore=lore, history=[], input_text="a" * 40 + "!")
    limits = {(d.details["owner"], d.details["limit"]) for d in result.diagnostics if d.code == "ST_PATTERN_LIMIT"}
    assert limits == {("regex script 'slow'", "time"), ("world info entry 4", "time")}
