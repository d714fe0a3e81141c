"""What regex scripts changed, per part (AssemblyResult.regex_changes): the preview names the script that changed a
text, with the text before and after it."""

import json

from assembly import assemble
from assembly.macros import MacroContext
from assembly.sillytavern.models import RegexScript
from assembly.sillytavern.regex import AI_OUTPUT, USER_INPUT, regexed_chat_steps, regexed_steps
from assembly.sillytavern.regex_changes import RegexStep

NAMES = MacroContext(user="Ada", char="Nell")


def run(scripts, *, preset_scripts=(), input_text="a grey wolf"):
    prompts = [{"identifier": "chatHistory", "marker": True}]
    preset = {"prompts": prompts, "extensions": {"regex_scripts": list(preset_scripts)},
              "prompt_order": [{"character_id": 100001, "order": [{"identifier": "chatHistory", "enabled": True}]}]}
    return assemble({"strategy": "builtin-st", "resources": {"preset": preset, "regex_scripts": list(scripts),
                                                              "character": {"name": "Nell"}},
                     "names": {"user": "Ada"}, "host": {"core_available": True},
                     "conversation": {"history": [{"id": "h1", "role": "assistant", "content": "one old wolf"}],
                                      "input": [{"id": "i", "role": "user", "content": input_text}]}})


def wolf(**fields):
    return {"scriptName": "wolf to hound", "findRegex": "/wolf/g", "replaceString": "hound", "placement": [1, 2],
            "promptOnly": True, **fields}


def test_each_script_that_changed_a_text_is_named_with_before_and_after():
    grey = {"scriptName": "grey to silver", "findRegex": "/grey/", "replaceString": "silver", "placement": [1],
            "promptOnly": True}
    result = run([wolf()], preset_scripts=[grey])
    parts = {m.content: m.parts for m in result.request.messages}
    changes = [(c.part, c.script, c.before, c.after) for c in result.regex_changes]
    assert changes == [
        (parts["one old hound"][0], "wolf to hound", "one old wolf", "one old hound"),
        (parts["a silver hound"][0], "wolf to hound", "a grey wolf", "a grey hound"),
        (parts["a silver hound"][0], "grey to silver", "a grey hound", "a silver hound"),
    ]


def test_no_change_leaves_the_json_as_it_was():
    unchanged = run([wolf(findRegex="/bear/g")])
    assert unchanged.regex_changes == []
    assert "regex_changes" not in unchanged.model_dump(mode="json")
    assert "regex_changes" not in json.loads(unchanged.model_dump_json())
    changed = run([wolf()]).model_dump(mode="json")
    assert changed["regex_changes"][0] == {"part": changed["request"]["messages"][0]["parts"][0],
                                           "script": "wolf to hound", "before": "one old wolf",
                                           "after": "one old hound"}


def test_a_script_that_matches_nothing_or_is_skipped_is_no_step():
    scripts = [RegexScript(script_name="a", find_regex="/a/g", replace_string="1", placement=(AI_OUTPUT,)),
               RegexScript(script_name="z", find_regex="/z/g", replace_string="2", placement=(AI_OUTPUT,)),
               RegexScript(script_name="b", find_regex="/b/g", replace_string="3", placement=(USER_INPUT,))]
    assert regexed_steps("abc", AI_OUTPUT, scripts, NAMES) == ("1bc", [RegexStep(script="a", before="abc",
                                                                                 after="1bc")])


def test_the_typed_input_records_its_stored_scripts_before_its_prompt_scripts():
    stored = RegexScript(script_name="stored", find_regex="/a/", replace_string="b", placement=(USER_INPUT,))
    prompt = RegexScript(script_name="prompt", find_regex="/b/", replace_string="c", placement=(USER_INPUT,),
                         prompt_only=True)
    [(text, steps)] = regexed_chat_steps([("user", "a")], [stored, prompt], NAMES, generation_type="normal",
                                         typed=[True])
    assert text == "c"
    assert [(s.script, s.before, s.after) for s in steps] == [("stored", "a", "b"), ("prompt", "b", "c")]
