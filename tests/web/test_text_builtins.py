"""The built-in text-completion templates (`strategies_app.text_builtins`) are the model families' documented chat
formats: each one's sequences are pinned to the format's own markers, and a short chat assembled with each gives the
prompt the format's documentation writes (ChatML; Meta's Llama 3 prompt format; the Mistral Instruct chat template;
Gemma's turn format; the Alpaca instruction format; FastChat's vicuna_v1.1; Pygmalion's Metharme), the plain story
what SillyTavern sends without instruct mode. Expected strings are written here by hand from those formats."""

import pytest

from assembly import assemble
from preview_app.previews import session_request
from strategies_app.text_builtins import BUILTIN_TEMPLATES, CONTEXT, INSTRUCT, SYSPROMPT
from strategies_app.text_templates import SEQUENCE_FIELDS
from tests.web.text_sessions import make_text_session

INSTRUCT_BY_NAME = {template["name"]: template for template in INSTRUCT}
CHAT_CONTEXT = next(template for template in CONTEXT if template["name"] == "Chat")

# each family's sequences as its format documents them (every sequence field not named here is empty)
DOCUMENTED_SEQUENCES = {
    "ChatML": {"input_sequence": "<|im_start|>user", "output_sequence": "<|im_start|>assistant",
               "system_sequence": "<|im_start|>system", "input_suffix": "<|im_end|>\n",
               "output_suffix": "<|im_end|>\n", "system_suffix": "<|im_end|>\n",
               "story_string_prefix": "<|im_start|>system", "story_string_suffix": "<|im_end|>\n",
               "stop_sequence": "<|im_end|>"},
    "Llama 3": {"input_sequence": "<|start_header_id|>user<|end_header_id|>\n\n",
                "output_sequence": "<|start_header_id|>assistant<|end_header_id|>\n\n",
                "system_sequence": "<|start_header_id|>system<|end_header_id|>\n\n",
                "input_suffix": "<|eot_id|>", "output_suffix": "<|eot_id|>", "system_suffix": "<|eot_id|>",
                "story_string_prefix": "<|start_header_id|>system<|end_header_id|>\n\n",
                "story_string_suffix": "<|eot_id|>", "stop_sequence": "<|eot_id|>"},
    "Mistral": {"input_sequence": "[INST] ", "input_suffix": " [/INST]", "output_suffix": "</s>",
                "story_string_prefix": "[INST] ", "story_string_suffix": " [/INST]", "stop_sequence": "</s>"},
    "Gemma": {"input_sequence": "<start_of_turn>user", "output_sequence": "<start_of_turn>model",
              "input_suffix": "<end_of_turn>\n", "output_suffix": "<end_of_turn>\n",
              "story_string_prefix": "<start_of_turn>user", "story_string_suffix": "<end_of_turn>\n",
              "stop_sequence": "<end_of_turn>"},
    "Alpaca": {"input_sequence": "### Instruction:", "output_sequence": "### Response:",
               "system_sequence": "### Input:", "input_suffix": "\n\n", "output_suffix": "\n\n",
               "system_suffix": "\n\n", "story_string_suffix": "\n\n"},
    "Vicuna": {"input_sequence": "USER: ", "output_sequence": "ASSISTANT: ", "last_output_sequence": "ASSISTANT:",
               "input_suffix": " ", "output_suffix": "</s>", "story_string_suffix": " ", "stop_sequence": "</s>"},
    "Metharme": {"input_sequence": "<|user|>", "output_sequence": "<|model|>", "system_sequence": "<|system|>",
                 "story_string_prefix": "<|system|>", "stop_sequence": "</s>"},
    "Plain story": {"input_suffix": "\n", "output_suffix": "\n", "system_suffix": "\n", "story_string_suffix": "\n"},
}

# wrap (a newline between a role marker and the text) where the format's marker line ends in one newline; formats
# without a system role send system text with the user's marker
DOCUMENTED_SHAPE = {
    "ChatML": {"wrap": True, "system_same_as_user": False, "names_behavior": "force"},
    "Llama 3": {"wrap": False, "system_same_as_user": False, "names_behavior": "force"},
    "Mistral": {"wrap": False, "system_same_as_user": True, "names_behavior": "force"},
    "Gemma": {"wrap": True, "system_same_as_user": True, "names_behavior": "force"},
    "Alpaca": {"wrap": True, "system_same_as_user": False, "names_behavior": "force"},
    "Vicuna": {"wrap": False, "system_same_as_user": True, "names_behavior": "force"},
    "Metharme": {"wrap": False, "system_same_as_user": False, "names_behavior": "force"},
    "Plain story": {"wrap": False, "system_same_as_user": False, "names_behavior": "always"},
}

# system prompt "You are Ada.", Ada's greeting "Hello.", Sam: "Hi Ada.", Ada: "Hi Sam.", Sam types "Tell me more."
DOCUMENTED_PROMPTS = {
    "ChatML": "<|im_start|>system\nYou are Ada.<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
              "<|im_start|>user\nHi Ada.<|im_end|>\n<|im_start|>assistant\nHi Sam.<|im_end|>\n"
              "<|im_start|>user\nTell me more.<|im_end|>\n<|im_start|>assistant\n",
    "Llama 3": "<|start_header_id|>system<|end_header_id|>\n\nYou are Ada.<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHi Ada.<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHi Sam.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nTell me more.<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "Mistral": "[INST] You are Ada. [/INST]Hello.</s>[INST] Hi Ada. [/INST]Hi Sam.</s>[INST] Tell me more. [/INST]",
    "Gemma": "<start_of_turn>user\nYou are Ada.<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
             "<start_of_turn>user\nHi Ada.<end_of_turn>\n<start_of_turn>model\nHi Sam.<end_of_turn>\n"
             "<start_of_turn>user\nTell me more.<end_of_turn>\n<start_of_turn>model\n",
    "Alpaca": "You are Ada.\n\n### Response:\nHello.\n\n### Instruction:\nHi Ada.\n\n### Response:\nHi Sam.\n\n"
              "### Instruction:\nTell me more.\n\n### Response:\n",
    "Vicuna": "You are Ada. ASSISTANT: Hello.</s>USER: Hi Ada. ASSISTANT: Hi Sam.</s>USER: Tell me more. ASSISTANT:",
    "Metharme": "<|system|>You are Ada.<|model|>Hello.<|user|>Hi Ada.<|model|>Hi Sam.<|user|>Tell me more.<|model|>",
    "Plain story": "You are Ada.\nAda: Hello.\nSam: Hi Ada.\nAda: Hi Sam.\nSam: Tell me more.\nAda:",
}


def _prompt(instruct, generation="normal"):
    history = [{"id": "m1", "role": "assistant", "name": "Ada", "content": "Hello."},
               {"id": "m2", "role": "user", "name": "Sam", "content": "Hi Ada."},
               {"id": "m3", "role": "assistant", "name": "Ada", "content": "Hi Sam."}]
    typed = [{"id": "i", "role": "user", "content": "Tell me more."}] if generation == "normal" else []
    request = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate",
               "resources": {"character": {"name": "Ada"}, "instruct_template": instruct,
                             "context_template": CHAT_CONTEXT,
                             "system_prompt": {"name": "S", "content": "You are Ada.", "post_history": ""},
                             "text_settings": {"instruct_enabled": True, "sysprompt_enabled": True}},
               "conversation": {"history": history, "input": typed}, "generation": {"type": generation},
               "names": {"user": "Sam"}}
    return assemble(request).model_dump(mode="json")["request"]


def test_every_documented_family_has_a_built_in_instruct_template():
    assert set(INSTRUCT_BY_NAME) == set(DOCUMENTED_SEQUENCES)


@pytest.mark.parametrize("name", sorted(DOCUMENTED_SEQUENCES))
def test_each_built_in_writes_its_family_s_documented_sequences(name):
    template = INSTRUCT_BY_NAME[name]
    expected = {field: DOCUMENTED_SEQUENCES[name].get(field, "") for field in SEQUENCE_FIELDS}
    assert {field: template[field] for field in SEQUENCE_FIELDS} == expected
    assert {key: template[key] for key in DOCUMENTED_SHAPE[name]} == DOCUMENTED_SHAPE[name]


@pytest.mark.parametrize("name", sorted(DOCUMENTED_PROMPTS))
def test_each_built_in_assembles_the_prompt_its_format_documents(name):
    assert _prompt(INSTRUCT_BY_NAME[name])["prompt"] == DOCUMENTED_PROMPTS[name]


def test_the_documented_end_of_turn_markers_stop_the_reply():
    for name, marker in (("ChatML", "<|im_end|>"), ("Llama 3", "<|eot_id|>"), ("Gemma", "<end_of_turn>"),
                         ("Mistral", "</s>"), ("Vicuna", "</s>"), ("Metharme", "</s>")):
        stop = _prompt(INSTRUCT_BY_NAME[name])["stop"]
        assert marker in stop or "\n" + marker in stop, name
    # the plain story stops where the user would speak next, and on no sequence
    assert _prompt(INSTRUCT_BY_NAME["Plain story"])["stop"] == ["\nSam:"]


def test_the_plain_story_is_the_transcript_sillytavern_sends_without_instruct_mode():
    assert _prompt(INSTRUCT_BY_NAME["Plain story"], "continue")["prompt"] == \
        "You are Ada.\nAda: Hello.\nSam: Hi Ada.\nAda: Hi Sam."
    assert _prompt(INSTRUCT_BY_NAME["Plain story"], "impersonate")["prompt"] == \
        "You are Ada.\nAda: Hello.\nSam: Hi Ada.\nAda: Hi Sam.\nSam:"


def test_built_in_names_are_distinct_within_each_kind():
    names = [(kind, template["name"]) for kind, template in BUILTIN_TEMPLATES]
    assert len(names) == len(set(names))
    assert {template["name"] for template in CONTEXT} == {"Chat", "Plain story"}
    assert [template["name"] for template in SYSPROMPT] == ["Role-play"]


def test_a_chatml_session_sends_the_prompt_built_by_hand_from_chatml_s_sequences(users):
    """tests/web/text_sessions.py: Ada (an engineer, curious, one example exchange), Sam (a visitor), Ada's
    greeting, Sam's line and a typed line; ChatML, the "Chat" context template and the "Role-play" system prompt."""
    session = make_text_session(users["designer"], users["admin"])
    result = assemble(session_request(session, "builtin-st")).model_dump(mode="json")["request"]
    system = ("You are Ada in an ongoing role-play with Sam. Stay in character and write only Ada's next reply.\n"
              "An engineer.\nAda's personality: curious\nA visitor.")
    assert result["prompt"] == (
        "<|im_start|>system\n" + system + "<|im_end|>\n"
        "<|im_start|>user\nSam: What is this?<|im_end|>\n"  # the card's example: the user's line named ("force")
        "<|im_start|>assistant\nA loom.<|im_end|>\n"
        "<|im_start|>assistant\nWelcome to the mill.<|im_end|>\n"
        "<|im_start|>user\nHello Ada.<|im_end|>\n"
        "<|im_start|>user\nShow me the cards.<|im_end|>\n"
        "<|im_start|>assistant\n")
    assert result["stop"] == ["\nSam:", "\n<|im_end|>", "\n<|im_start|>user", "\n<|im_start|>assistant",
                              "\n<|im_start|>system"]
