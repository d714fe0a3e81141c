"""assembly.reading.texts_are_safe, which joins the texts a few hundred at a time: a refusal anywhere is found, and
a request whose safe-string pass meets a key that is not a string is refused as a request, not a crash."""

import pytest

from assembly import AssemblyError, assemble
from assembly.reading import texts_are_safe


@pytest.mark.parametrize("at", [0, 255, 256, 257, 999])
def test_a_bad_text_is_found_in_any_chunk(at):
    texts = ["plain", "中文"] * 500
    assert texts_are_safe(texts) and texts_are_safe(texts, nul=False)
    surrogate, nul = list(texts), list(texts)
    surrogate[at] = "lone \udc00"
    nul[at] = "nul \x00"
    assert not texts_are_safe(surrogate) and not texts_are_safe(surrogate, nul=False)
    assert not texts_are_safe(nul) and texts_are_safe(nul, nul=False)


def test_a_surrogate_pair_split_across_two_texts_is_still_two_lone_surrogates():
    texts = ["x"] * 255 + ["\ud83d", "\ude00"]
    assert not texts_are_safe(texts)
    assert not texts_are_safe(["\ud83d", "\ude00"])


def test_a_text_that_is_not_a_string_raises_as_before():
    with pytest.raises(TypeError):
        texts_are_safe(["a", 1])


def test_a_key_that_is_not_a_string_is_a_refused_request():
    request = {"host": {"core_available": True, "variables": {1: "x"}},
               "conversation": {"history": [{"role": "user", "content": "hello"}]}}
    for _ in range(2):
        with pytest.raises(AssemblyError) as refused:
            assemble(request)
        assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
        assert "host.variables" in refused.value.message
