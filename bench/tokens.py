"""Token counting (engine.md §3): `count_tokens` with a cold and a warm cache against a bare tiktoken encode.

A bare encode is `get_encoding(name).encode(text, disallowed_special=())`, the same call `count_tokens` makes, so the
ratio shows what the content-hash cache costs when cold (hashing and storing) and saves when warm.
quality.md gives no throughput figure; its target that counting serves is the realistic request assembling in under
20 ms with warm token caches (200 history messages, 300 world book entries, the default preset).
"""

from __future__ import annotations

from bench.fixtures import chat_corpus
from bench.report import Table, format_rate
from bench.timing import measure

TITLE = "tokens"
ENCODINGS = ("o200k_base", "cl100k_base")
MESSAGE_COUNT = 2_000
REALISTIC_TEXTS = 200 + 300 + 10  # history messages, world book entries, preset prompts


def run() -> list[Table]:
    from assembly.tokens import clear_token_cache, count_tokens, get_encoding

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
        encoder = get_encoding(encoding)  # loaded here, so file loading is not charged to any row
        for label, texts in workloads.items():
            tokens = sum(len(encoder.encode(text, disallowed_special=())) for text in texts)

            def bare(texts=texts, encoder=encoder):
                for text in texts:
                    encoder.encode(text, disallowed_special=())

            def counted(texts=texts, encoding=encoding):
                for text in texts:
                    count_tokens(text, encoding)

            bare_timing = measure(bare, budget_s=0.8)
            cold_timing = measure(counted, setup=clear_token_cache, budget_s=0.8)
            counted()  # fill the cache
            warm_timing = measure(counted, budget_s=0.8)
            for mode, timing, target in (("bare tiktoken", bare_timing, "-"),
                                         ("count_tokens cold", cold_timing, "-"),
                                         ("count_tokens warm", warm_timing, "well under bare (cache hit)")):
                ratio = timing.median_s / bare_timing.median_s
                throughput.add(label, encoding, mode, f"{tokens:,}", f"{timing.median_ms:.2f}",
                               format_rate(tokens, timing.median_s), f"x{ratio:.2f}", target)
    throughput.notes.append("vs bare: median time divided by the bare tiktoken encode of the same texts.")
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
