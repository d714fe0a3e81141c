"""One error base (engine.md §1): every refusal of the engine core is a `CodedError` and reads the same as JSON."""

import pytest

from assembly import assemble
from assembly.budget import BudgetError, select_within_budget
from assembly.errors import AssemblyError, CodedError
from assembly.fragments import FragmentError
from assembly.placement import PlacementError, place_context_blocks
from assembly.strategy import StrategyError, normalize_strategy
from assembly.tokens import TokenizerError, encode


@pytest.mark.parametrize("error_class", [AssemblyError, StrategyError, BudgetError, FragmentError, PlacementError,
                                         TokenizerError])
def test_every_core_error_is_a_coded_error(error_class):
    assert issubclass(error_class, CodedError)


def test_a_strategy_refusal_is_an_assembly_refusal():
    # assemble() refuses a bad strategy with the strategy's own error; callers catching AssemblyError still see it.
    assert issubclass(StrategyError, AssemblyError)
    with pytest.raises(AssemblyError) as caught:
        assemble({"strategy": {"format": "dsh-tavern-request-assembly", "version": 1, "name": " ", "rules": []}})
    assert isinstance(caught.value, StrategyError)
    # The refusal is the strategy's own, detail included (assemble() no longer narrows it to the path).
    assert caught.value.to_json() == {
        "ok": False, "code": "STRATEGY_INVALID", "status": 400, "error": caught.value.message,
        "detail": {"path": "name", "expected": "a non-blank string of at most 200 characters"}}


def test_strategy_error_json():
    with pytest.raises(StrategyError) as caught:
        normalize_strategy({"format": "nope"})
    error = caught.value
    assert error.path == "format" and str(error) == error.message
    assert error.to_json() == {"ok": False, "code": "STRATEGY_INVALID", "status": 400, "error": error.message,
                               "detail": {"path": "format", "expected": "'dsh-tavern-request-assembly'"}}


def test_budget_error_json():
    with pytest.raises(BudgetError) as caught:
        select_within_budget("goal", [], -1, goal_cost=0)
    error = caught.value
    assert (error.field, error.index) == ("limit", None)
    assert error.to_json() == {"ok": False, "code": "BUDGET_INVALID_LIMIT", "status": 400, "error": str(error),
                               "detail": {"field": "limit", "index": None}}


def test_fragment_error_json():
    error = FragmentError("FRAGMENT_INVALID_VALUE", "q: bad", fragment_id="q", field="format", extra=1)
    assert (error.fragment_id, error.field, str(error)) == ("q", "format", "q: bad")
    assert error.to_json() == {"ok": False, "code": "FRAGMENT_INVALID_VALUE", "status": 400, "error": "q: bad",
                               "detail": {"fragment_id": "q", "field": "format", "extra": 1}}


def test_placement_error_json():
    with pytest.raises(PlacementError) as caught:
        place_context_blocks([], {}, "not a list")
    error = caught.value
    assert error.status == 422
    assert error.to_json() == {"ok": False, "code": "INVALID_BLOCK", "status": 422, "error": str(error),
                               "detail": {"field": "blocks"}}


def test_tokenizer_error_json():
    with pytest.raises(TokenizerError) as caught:
        encode("x", "p50k_base")
    error = caught.value
    assert error.to_json() == {"ok": False, "code": "TOKENIZER_UNKNOWN", "status": 400, "error": str(error),
                               "detail": {}}
