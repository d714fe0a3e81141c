"""World info chance (sillytavern.md §7.3): the probability roll and the weighted group pick. Unseeded they are the
preview's fixed, most likely outcome; with `generation.seed` they are drawn, the same for the same seed and turn."""

from __future__ import annotations

from assembly import assemble
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.sillytavern.worldinfo_chance import PREVIEW_ROLL, Chance

NAMES = {"user": "Ona", "char": "Pell"}
COIN = WorldBookEntry(uid=1, keys=("coin",), probability=40, content="Tails.")
GROUP = (WorldBookEntry(uid=2, keys=("card",), group="deck", group_weight=10, content="Ace."),
         WorldBookEntry(uid=3, keys=("card",), group="deck", group_weight=90, content="King."))


def _run(*entries: WorldBookEntry, seed: int | None = None, turn: int = 0):
    book = WorldBook(activation="keywords", recursive=False, entries=entries)
    return activate_world_info(book, chat=[{"role": "user", "content": "a coin and a card"}], names=NAMES,
                               max_context=100_000, seed=seed, turn=turn)


def _uids(result) -> list:
    return sorted(a.uid for a in result.active)


def test_unseeded_rolls_are_the_most_likely_outcome():
    assert Chance().probability_roll() == PREVIEW_ROLL
    assert Chance().group_pick([10, 90, 90]) == (1, None)  # the highest weight, ties to the earlier member
    result = _run(COIN, *GROUP)
    assert _uids(result) == [3]  # 40% loses to the roll of 50; the heavier card wins
    assert all("roll" not in s.reason.model_dump(exclude_none=True) for s in result.skipped)


def test_a_seed_draws_the_same_rolls_for_the_same_turn():
    draws = [Chance(seed=7, turn=2).probability_roll() for _ in range(2)]
    assert draws[0] == draws[1] and 0 <= draws[0] < 100
    assert Chance(seed=7, turn=3).probability_roll() != draws[0]
    assert _run(COIN, *GROUP, seed=7, turn=2) == _run(COIN, *GROUP, seed=7, turn=2)


def test_a_seeded_probability_roll_decides_and_is_reported():
    outcomes = {uid: 0 for uid in (1,)}
    for seed in range(200):
        result = _run(COIN, seed=seed)
        if _uids(result) == [1]:
            outcomes[1] += 1
            assert result.active[0].reason.roll <= 40
        else:
            skipped = result.skipped[0].reason
            assert skipped.kind == "probability" and skipped.roll > 40
    assert 50 < outcomes[1] < 110  # about 40% of 200


def test_a_seeded_group_pick_follows_the_weights():
    wins = {2: 0, 3: 0}
    for seed in range(200):
        (winner,) = _uids(_run(*GROUP, seed=seed))
        wins[winner] += 1
    assert 5 < wins[2] < 40 and wins[2] + wins[3] == 200  # about 10% for the light member


def test_the_weighted_pick_takes_the_first_member_whose_running_weight_reaches_the_roll():
    chance = Chance(seed=1)
    index, roll = chance.group_pick([30, 70])
    assert (index == 0) == (roll <= 30)


def test_the_request_seed_reaches_the_scan():
    def request(seed):
        generation = {"type": "normal", **({"seed": seed} if seed is not None else {})}
        return {"strategy": "builtin-st", "host": {"core_available": True}, "names": {"user": "Ona"},
                "generation": generation, "resources": {"character": {"name": "Pell"}, "worldbook": {
                    "activation": "keywords", "entries": {"1": {"uid": 1, "key": ["coin"], "probability": 40,
                                                                "content": "Tails."}}}},
                "conversation": {"input": [{"id": "m1", "role": "user", "content": "a coin"}]}}
    assert assemble(request(None)).world_info.active == ()
    rolls = set()
    for seed in range(20):
        world = assemble(request(seed)).world_info
        decided = world.active[0].reason if world.active else world.skipped[0].reason
        rolls.add(decided.roll)
    assert None not in rolls and len(rolls) == 20
