"""Selecting material within a budget (engine.md §3, seed 002): worked numbers, the seed's tests and experiments."""

import copy
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembly.budget import BudgetError, select_within_budget

GOAL = "目标：查退款"  # seed 002 prefixes the goal with 目标： and prints it that way


def seed_rows():
    return [
        {"text": "昨天问过天气", "cost": 5, "relevant": False},
        {"text": "退款期限7天，来源policy", "cost": 4, "relevant": True},
        {"text": "完整订单历史", "cost": 9, "relevant": True},
    ]


def texts(selection):
    return [entry.text for entry in selection.selected]


def skips(selection):
    return [(entry.text, entry.reason) for entry in selection.skipped]


def raises(code, *args, **kwargs):
    with pytest.raises(BudgetError) as info:
        select_within_budget(*args, **kwargs)
    assert info.value.code == code, (info.value.code, str(info.value))
    return info.value


# --- seed 002's printed outputs and hand count ----------------------------------------------------------------------

def test_seed_limit_8_keeps_goal_and_policy():
    # 8 - 4 for the goal = 4; the weather is irrelevant; the policy costs 4 (0 left); the history (9) stays out.
    selection = select_within_budget(GOAL, seed_rows(), 8, goal_cost=4)
    assert texts(selection) == ["目标：查退款", "退款期限7天，来源policy"]
    assert skips(selection) == [("昨天问过天气", "irrelevant"), ("完整订单历史", "over_budget")]
    assert (selection.limit, selection.used, selection.remaining) == (8, 8, 0)


def test_seed_limit_17_keeps_goal_policy_and_history():
    # 17 - 4 = 13; the policy (4) leaves 9; the history (9) leaves 0; the weather is still filtered out.
    selection = select_within_budget(GOAL, seed_rows(), 17, goal_cost=4)
    assert texts(selection) == ["目标：查退款", "退款期限7天，来源policy", "完整订单历史"]
    assert skips(selection) == [("昨天问过天气", "irrelevant")]
    assert (selection.used, selection.remaining) == (17, 0)


@pytest.mark.parametrize("limit", [4, 8, 17, 100, 10_000])
def test_irrelevant_weather_is_filtered_whatever_the_room(limit):
    selection = select_within_budget(GOAL, seed_rows(), limit, goal_cost=4)
    assert ("昨天问过天气", "irrelevant") in skips(selection)
    assert "昨天问过天气" not in texts(selection)


def test_goal_entry_shape():
    goal = select_within_budget(GOAL, [], 8, goal_cost=4).selected[0]
    assert goal.model_dump() == {"kind": "goal", "index": None, "id": None, "text": GOAL, "cost": 4, "priority": 0}


# --- seed 002's four unit tests, for this function ------------------------------------------------------------------

def test_keep():
    rows = [{"text": "旧资料", "cost": 5, "relevant": False}, {"text": "退款7天", "cost": 4, "relevant": True}]
    assert texts(select_within_budget(GOAL, rows, 8, goal_cost=4)) == ["目标：查退款", "退款7天"]


def test_budget():
    selection = select_within_budget(GOAL, [{"text": "过长", "cost": 9, "relevant": True}], 8, goal_cost=4)
    assert texts(selection) == ["目标：查退款"]
    assert skips(selection) == [("过长", "over_budget")]


@pytest.mark.parametrize("cost", [-1, True, 1.5])
def test_invalid_cost(cost):
    error = raises("BUDGET_INVALID_COST", GOAL, [{"text": "资料", "cost": cost, "relevant": True}], 8, goal_cost=4)
    assert error.field == "cost" and error.index == 0 and repr(cost) in str(error)


def test_invalid_limit():
    raises("BUDGET_INVALID_LIMIT", GOAL, [], True, goal_cost=4)


# --- seed 002's experiments, worked by hand -------------------------------------------------------------------------

def experiment_rows(weather_relevant, weather_cost):
    rows = seed_rows()
    rows[0] = {**rows[0], "relevant": weather_relevant, "cost": weather_cost}
    return rows


@pytest.mark.parametrize(
    ("weather_relevant", "weather_cost", "kept", "skipped"),
    [
        # Weather relevant, cost 5, limit 8: 4 left, the weather (5) does not fit, the policy (4) still does.
        (True, 5, ["目标：查退款", "退款期限7天，来源policy"],
         [("昨天问过天气", "over_budget"), ("完整订单历史", "over_budget")]),
        # Weather cost 4: it comes first and takes the 4 left, so the policy no longer fits.
        (True, 4, ["目标：查退款", "昨天问过天气"],
         [("退款期限7天，来源policy", "over_budget"), ("完整订单历史", "over_budget")]),
        # Restored (irrelevant, cost 5): the policy is back.
        (False, 5, ["目标：查退款", "退款期限7天，来源policy"],
         [("昨天问过天气", "irrelevant"), ("完整订单历史", "over_budget")]),
    ],
)
def test_changing_the_weather_row(weather_relevant, weather_cost, kept, skipped):
    selection = select_within_budget(GOAL, experiment_rows(weather_relevant, weather_cost), 8, goal_cost=4)
    assert texts(selection) == kept
    assert skips(selection) == skipped


def test_policy_after_history_loses_its_place_when_history_fits_first():
    # Limit 13: 9 left after the goal. History first takes all 9; the policy (4) is left out.
    weather, policy, history = seed_rows()
    selection = select_within_budget(GOAL, [weather, history, policy], 13, goal_cost=4)
    assert texts(selection) == ["目标：查退款", "完整订单历史"]
    assert skips(selection) == [("昨天问过天气", "irrelevant"), ("退款期限7天，来源policy", "over_budget")]
    # At 17 both still fit (13 left: 9 then 4).
    assert texts(select_within_budget(GOAL, [weather, history, policy], 17, goal_cost=4)) == [
        "目标：查退款", "完整订单历史", "退款期限7天，来源policy"]


# --- priority -------------------------------------------------------------------------------------------------------

def test_priority_keeps_the_policy_in_a_small_budget():
    # The seed's suggestion: give rows a priority, sort, then fill. With the weather relevant and costing 4, the
    # policy (priority 2) now comes before it and takes the 4 left.
    rows = experiment_rows(True, 4)
    rows[1] = {**rows[1], "priority": 2}
    selection = select_within_budget(GOAL, rows, 8, goal_cost=4)
    assert texts(selection) == ["目标：查退款", "退款期限7天，来源policy"]
    assert skips(selection) == [("昨天问过天气", "over_budget"), ("完整订单历史", "over_budget")]


def test_priority_beats_list_order_for_history_and_policy():
    # Limit 13 with the history listed first (see above), but the policy has the higher priority:
    # policy 4 (5 left), history 9 > 5 stays out.
    weather, policy, history = seed_rows()
    selection = select_within_budget(GOAL, [weather, history, {**policy, "priority": 1}], 13, goal_cost=4)
    assert texts(selection) == ["目标：查退款", "退款期限7天，来源policy"]
    assert skips(selection) == [("昨天问过天气", "irrelevant"), ("完整订单历史", "over_budget")]


def test_selected_in_taken_order_ties_in_input_order_skipped_in_input_order():
    items = [
        {"id": "a", "text": "A", "cost": 1, "relevant": True, "priority": 0},
        {"id": "b", "text": "B", "cost": 1, "relevant": True, "priority": 5},
        {"id": "c", "text": "C", "cost": 1, "relevant": True},            # priority 0 by default
        {"id": "d", "text": "D", "cost": 1, "relevant": True, "priority": 5},
        {"id": "e", "text": "E", "cost": 1, "relevant": True, "priority": -1.5},
        {"id": "f", "text": "F", "cost": 1, "relevant": True, "priority": 0.5},
    ]
    # Order taken: b, d (5, input order), f (0.5), a, c (0, input order), e (-1.5). Limit 4 with goal 0 takes 4.
    selection = select_within_budget("goal", items, 4, goal_cost=0)
    assert [entry.id for entry in selection.selected] == [None, "b", "d", "f", "a"]
    assert [entry.index for entry in selection.selected] == [None, 1, 3, 5, 0]
    assert [(entry.id, entry.reason) for entry in selection.skipped] == [("c", "over_budget"),
                                                                          ("e", "over_budget")]


def test_a_smaller_item_further_down_still_fits():
    items = [{"text": "big", "cost": 5, "relevant": True, "priority": 2},
             {"text": "small", "cost": 2, "relevant": True, "priority": 1}]
    selection = select_within_budget("g", items, 4, goal_cost=1)
    assert texts(selection) == ["g", "small"]
    assert (selection.used, selection.remaining) == (3, 1)


# --- validation happens before anything is selected ----------------------------------------------------------------

@pytest.mark.parametrize("limit", [True, False, -1, 8.0, "8", None])
def test_invalid_limits(limit):
    raises("BUDGET_INVALID_LIMIT", GOAL, seed_rows(), limit, goal_cost=4)


@pytest.mark.parametrize("goal_cost", [True, -1, 4.0, None])
def test_invalid_goal_cost(goal_cost):
    raises("BUDGET_INVALID_GOAL_COST", GOAL, seed_rows(), 8, goal_cost=goal_cost)


def test_a_bad_cost_late_in_the_list_fails_the_whole_call():
    rows = seed_rows() + [{"id": "late", "text": "晚到", "cost": 2.0, "relevant": True}]
    error = raises("BUDGET_INVALID_COST", GOAL, rows, 17, goal_cost=4)
    assert error.index == 3 and "'late'" in str(error)


def test_invalid_items_are_reported_before_the_goal_is_checked():
    rows = [{"text": "x", "cost": -3, "relevant": True}]
    raises("BUDGET_INVALID_COST", GOAL, rows, 3, goal_cost=4)


def test_goal_must_fit():
    error = raises("BUDGET_GOAL_TOO_LARGE", GOAL, seed_rows(), 3, goal_cost=4)
    assert "4" in str(error) and "3" in str(error)
    # Exactly fitting is fine, and leaves no room for anything else.
    selection = select_within_budget(GOAL, seed_rows(), 4, goal_cost=4)
    assert texts(selection) == [GOAL] and selection.remaining == 0


def test_zero_costs_and_zero_limit():
    items = [{"text": "free", "cost": 0, "relevant": True}, {"text": "paid", "cost": 1, "relevant": True}]
    selection = select_within_budget("g", items, 0, goal_cost=0)
    assert texts(selection) == ["g", "free"]
    assert skips(selection) == [("paid", "over_budget")]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"cost": 1, "relevant": True}, "text"),
        ({"text": 3, "cost": 1, "relevant": True}, "text"),
        ({"text": "t", "cost": 1}, "relevant"),
        ({"text": "t", "cost": 1, "relevant": 1}, "relevant"),
        ({"text": "t", "cost": 1, "relevant": "yes"}, "relevant"),
        ({"text": "t", "cost": 1, "relevant": True, "priority": True}, "priority"),
        ({"text": "t", "cost": 1, "relevant": True, "priority": float("nan")}, "priority"),
        ({"text": "t", "cost": 1, "relevant": True, "priority": "high"}, "priority"),
        ({"text": "t", "cost": 1, "relevant": True, "id": 7}, "id"),
    ],
)
def test_invalid_item_fields(item, field):
    error = raises("BUDGET_INVALID_ITEM", GOAL, [item], 8, goal_cost=4)
    assert error.field == field and field in str(error) and "#0" in str(error)


def test_missing_cost_is_an_invalid_cost():
    error = raises("BUDGET_INVALID_COST", GOAL, [{"text": "t", "relevant": True}], 8, goal_cost=4)
    assert "missing" in str(error)


@pytest.mark.parametrize("items", ["rows", {"text": "t"}, None])
def test_items_must_be_a_list(items):
    raises("BUDGET_INVALID_ITEMS", GOAL, items, 8, goal_cost=4)


def test_goal_must_be_text():
    raises("BUDGET_INVALID_GOAL", {"text": "g"}, [], 8, goal_cost=4)


# --- items as objects, immutability, JSON ---------------------------------------------------------------------------

@dataclass
class Row:
    text: str
    cost: int
    relevant: bool
    priority: int = 0


def test_items_may_be_objects():
    rows = [Row("昨天问过天气", 5, False), SimpleNamespace(text="退款期限7天，来源policy", cost=4, relevant=True),
            Row("完整订单历史", 9, True)]
    assert texts(select_within_budget(GOAL, rows, 8, goal_cost=4)) == ["目标：查退款", "退款期限7天，来源policy"]


def test_inputs_are_not_mutated_and_result_dumps_to_json():
    rows = seed_rows()
    before = copy.deepcopy(rows)
    dumped = select_within_budget(GOAL, rows, 8, goal_cost=4).model_dump(mode="json")
    assert rows == before
    assert dumped["skipped"][0] == {"kind": "item", "index": 0, "id": None, "text": "昨天问过天气", "cost": 5,
                                    "priority": 0, "reason": "irrelevant"}
    assert [s["reason"] for s in dumped["skipped"]] == ["irrelevant", "over_budget"]


# --- properties -----------------------------------------------------------------------------------------------------

items_strategy = st.lists(
    st.fixed_dictionaries({"text": st.text(max_size=5), "cost": st.integers(0, 30), "relevant": st.booleans(),
                           "priority": st.integers(-3, 3)}),
    max_size=12,
)


@given(items=items_strategy, limit=st.integers(0, 80), goal_cost=st.integers(0, 20))
def test_selection_properties(items, limit, goal_cost):
    before = copy.deepcopy(items)
    if goal_cost > limit:
        raises("BUDGET_GOAL_TOO_LARGE", "g", items, limit, goal_cost=goal_cost)
        return
    selection = select_within_budget("g", items, limit, goal_cost=goal_cost)
    assert items == before
    chosen = [entry.index for entry in selection.selected[1:]]
    left_out = [entry.index for entry in selection.skipped]
    # Every item is accounted for exactly once; the goal leads.
    assert sorted(chosen + left_out) == list(range(len(items)))
    assert selection.selected[0].kind == "goal"
    assert selection.used == goal_cost + sum(items[i]["cost"] for i in chosen) <= limit
    assert selection.remaining == limit - selection.used
    # Irrelevant items are never taken; relevant ones are skipped only when they no longer fit.
    for entry in selection.skipped:
        if items[entry.index]["relevant"]:
            assert entry.reason == "over_budget" and entry.cost > selection.remaining
        else:
            assert entry.reason == "irrelevant"
    assert all(items[i]["relevant"] for i in chosen)
    # Taken by descending priority, ties in input order.
    keys = [(-items[i]["priority"], i) for i in chosen]
    assert keys == sorted(keys)
    assert left_out == sorted(left_out)


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("priority", [10**400, -(10**400), float("nan"), float("inf")])
def test_a_priority_a_double_cannot_hold_is_refused(priority):
    with pytest.raises(BudgetError) as error:
        select_within_budget(GOAL, [{"text": "x", "cost": 1, "relevant": True, "priority": priority}], 10, goal_cost=1)
    assert error.value.code == "BUDGET_INVALID_ITEM" and error.value.field == "priority"


def test_a_large_but_finite_integer_priority_still_sorts_first():
    items = [{"text": "a", "cost": 1, "relevant": True, "priority": 1.5},
             {"text": "b", "cost": 1, "relevant": True, "priority": 10**300}]
    assert texts(select_within_budget(GOAL, items, 10, goal_cost=1)) == [GOAL, "b", "a"]


@pytest.mark.parametrize("args", [dict(limit=_deep(5000)), dict(goal_cost=_deep(5000)),
                                  dict(items=[{"text": "x", "cost": _deep(5000), "relevant": True}])])
def test_a_deeply_nested_value_is_refused_with_a_short_description(args):
    call = {"items": [], "limit": 10, "goal_cost": 1, **args}
    with pytest.raises(BudgetError) as error:
        select_within_budget(GOAL, call["items"], call["limit"], goal_cost=call["goal_cost"])
    assert error.value.message.endswith("got list of 1 item(s)")
