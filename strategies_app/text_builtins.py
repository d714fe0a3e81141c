"""The studio's built-in text-completion templates, written from each model family's documented chat format (the
model cards and tokenizer chat templates of ChatML, Llama 3, Mistral Instruct, Gemma, Alpaca, Vicuna 1.1 and
Pygmalion's Metharme), in SillyTavern's instruct / context / system-prompt fields (text-completion.md). They are
data: `reference_data.ensure_text_templates` keeps one read-only `TextTemplate` row per template.

SillyTavern joins a message as [sequence, text + suffix], with a newline between them when `wrap` is on (and a
newline as the suffix when the suffix is empty), so formats whose role header ends in a newline set `wrap`, and the
others (Llama 3's header ends in two) write the newlines into the sequences.
"""

from __future__ import annotations

from typing import Any


def _instruct(name: str, **fields: Any) -> dict[str, Any]:
    base = {"input_sequence": "", "output_sequence": "", "system_sequence": "", "input_suffix": "",
            "output_suffix": "", "system_suffix": "", "first_input_sequence": "", "last_input_sequence": "",
            "first_output_sequence": "", "last_output_sequence": "", "last_system_sequence": "",
            "story_string_prefix": "", "story_string_suffix": "", "stop_sequence": "", "user_alignment_message": "",
            "wrap": False, "macro": True, "names_behavior": "force", "skip_examples": False,
            "system_same_as_user": False, "sequences_as_stop_strings": True, "activation_regex": ""}
    return {**base, **fields, "name": name}


INSTRUCT: tuple[dict[str, Any], ...] = (
    # ChatML: <|im_start|>{role}\n{content}<|im_end|>\n
    _instruct("ChatML", input_sequence="<|im_start|>user", output_sequence="<|im_start|>assistant",
              system_sequence="<|im_start|>system", input_suffix="<|im_end|>\n", output_suffix="<|im_end|>\n",
              system_suffix="<|im_end|>\n", story_string_prefix="<|im_start|>system",
              story_string_suffix="<|im_end|>\n", stop_sequence="<|im_end|>", wrap=True),
    # Llama 3: <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|> (the backend adds <|begin_of_text|>)
    _instruct("Llama 3", input_sequence="<|start_header_id|>user<|end_header_id|>\n\n",
              output_sequence="<|start_header_id|>assistant<|end_header_id|>\n\n",
              system_sequence="<|start_header_id|>system<|end_header_id|>\n\n", input_suffix="<|eot_id|>",
              output_suffix="<|eot_id|>", system_suffix="<|eot_id|>",
              story_string_prefix="<|start_header_id|>system<|end_header_id|>\n\n",
              story_string_suffix="<|eot_id|>", stop_sequence="<|eot_id|>"),
    # Mistral Instruct: [INST] {user} [/INST]{assistant}</s> (no system role: system text goes in as the user's)
    _instruct("Mistral", input_sequence="[INST] ", input_suffix=" [/INST]", output_suffix="</s>",
              story_string_prefix="[INST] ", story_string_suffix=" [/INST]", stop_sequence="</s>",
              system_same_as_user=True),
    # Gemma: <start_of_turn>{user|model}\n{content}<end_of_turn>\n (no system role)
    _instruct("Gemma", input_sequence="<start_of_turn>user", output_sequence="<start_of_turn>model",
              input_suffix="<end_of_turn>\n", output_suffix="<end_of_turn>\n", story_string_prefix="<start_of_turn>user",
              story_string_suffix="<end_of_turn>\n", stop_sequence="<end_of_turn>", wrap=True,
              system_same_as_user=True),
    # Alpaca: ### Instruction:\n{user}\n\n### Response:\n{assistant}\n\n
    _instruct("Alpaca", input_sequence="### Instruction:", output_sequence="### Response:",
              system_sequence="### Input:", input_suffix="\n\n", output_suffix="\n\n", system_suffix="\n\n",
              wrap=True, story_string_suffix="\n\n"),
    # Vicuna 1.1 (FastChat's vicuna_v1.1: separators " " and "</s>"): {system} USER: {user} ASSISTANT: {assistant}</s>
    # and the reply asked for with "ASSISTANT:" (no trailing space; so a continued reply follows "ASSISTANT:" without
    # one); no system role: system text goes in as the user's
    _instruct("Vicuna", input_sequence="USER: ", output_sequence="ASSISTANT: ", last_output_sequence="ASSISTANT:",
              input_suffix=" ", output_suffix="</s>", story_string_suffix=" ", stop_sequence="</s>",
              system_same_as_user=True),
    # Metharme (Pygmalion): <|system|>{system}<|user|>{user}<|model|>{assistant}
    _instruct("Metharme", input_sequence="<|user|>", output_sequence="<|model|>", system_sequence="<|system|>",
              story_string_prefix="<|system|>", stop_sequence="</s>"),
    # Plain story: no model format, the transcript SillyTavern sends without instruct mode: one "Name: text" line a
    # message, and the reply asked for with "Char:" (names always, no sequences, no wrap)
    _instruct("Plain story", input_suffix="\n", output_suffix="\n", system_suffix="\n", story_string_suffix="\n",
              names_behavior="always", sequences_as_stop_strings=False),
)

CONTEXT: tuple[dict[str, Any], ...] = (
    {"story_string": "{{#if system}}{{system}}\n{{/if}}{{#if wiBefore}}{{wiBefore}}\n{{/if}}"
                     "{{#if description}}{{description}}\n{{/if}}"
                     "{{#if personality}}{{char}}'s personality: {{personality}}\n{{/if}}"
                     "{{#if scenario}}Scenario: {{scenario}}\n{{/if}}{{#if wiAfter}}{{wiAfter}}\n{{/if}}"
                     "{{#if persona}}{{persona}}\n{{/if}}{{trim}}",
     "example_separator": "", "chat_start": "", "use_stop_strings": False, "names_as_stop_strings": True,
     "story_string_position": 0, "story_string_depth": 1, "story_string_role": 0, "always_force_name2": True,
     "trim_sentences": False, "single_line": False, "name": "Chat"},
    {"story_string": "{{#if description}}{{description}}\n{{/if}}{{#if scenario}}{{scenario}}\n{{/if}}"
                     "{{#if wiAfter}}{{wiAfter}}\n{{/if}}{{trim}}",
     "example_separator": "***", "chat_start": "***", "use_stop_strings": True, "names_as_stop_strings": True,
     "story_string_position": 0, "story_string_depth": 1, "story_string_role": 0, "always_force_name2": True,
     "trim_sentences": False, "single_line": False, "name": "Plain story"},
)

SYSPROMPT: tuple[dict[str, Any], ...] = (
    {"name": "Role-play", "content": "You are {{char}} in an ongoing role-play with {{user}}. Stay in character and "
                                     "write only {{char}}'s next reply.", "post_history": ""},
)

BUILTIN_TEMPLATES: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("instruct", t) for t in INSTRUCT), *(("context", t) for t in CONTEXT), *(("sysprompt", t) for t in SYSPROMPT))
