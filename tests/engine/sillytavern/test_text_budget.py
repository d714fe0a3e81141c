"""The estimate and the context fill for text completion (assembly/sillytavern/text_budget.py;
text-completion.md "st-estimate"; sillytavern-text-completion.md §5)."""

from __future__ import annotations

from assembly.sillytavern.text_budget import estimate_tokens, fill_chat, fitting_examples


def test_estimate_is_utf8_bytes_over_3_35_rounded_up():
    assert estimate_tokens("") == 0
    assert estimate_tokens("", 10) == 10
    assert estimate_tokens("abcd") == 2  # 4 / 3.35 = 1.19
    assert estimate_tokens("é" * 5) == 3  # 10 bytes
    assert estimate_tokens("abcd", 64) == 66


def test_injected_messages_are_kept_first_then_the_newest():
    items = ["n0 " * 4, "i1", "o2 " * 4]  # newest first; place 1 is an injection
    kept, oldest, taken = fill_chat(items, [1], count=0, budget=6)
    assert kept == {1: "i1", 0: "n0 " * 4}  # 1 + 4 = 5 < 6; the oldest (4 more) does not fit
    assert oldest == 1 and taken == "i1" + "n0 " * 4


def test_a_place_past_the_chat_is_skipped_and_the_fill_stops_at_the_first_misfit():
    kept, oldest, _ = fill_chat(["aaaa", "bbbbbbbbbbbb", "cc"], [7], count=0, budget=5)
    assert kept == {0: "aaaa"} and oldest == 0


def test_examples_fit_while_the_count_stays_under_the_budget():
    assert fitting_examples(["aaaa", "aaaa", "aaaa"], count=1, budget=6) == 2
