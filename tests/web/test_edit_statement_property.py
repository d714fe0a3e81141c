"""Property (quality.md): for random sequences of editor edits, the sentence each edit states is the diff of the
request before and after it. The diff is recomputed here independently of the alignment the statement is built
from: the message count and the multiset of (role, content) before and after."""

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly import edits
from assembly.catalogue import CONTEXT_CONTROL_KINDS
from preview_app import services as session_services
from strategies_app import services
from strategies_app.edit_effects import edit_effect
from strategies_app.models import Strategy
from strategies_app.session_previews import DraftPreviews
from tests.web.test_editor import editor  # noqa: F401

pytestmark = pytest.mark.django_db

EDIT = st.one_of(
    st.tuples(st.just("move"), st.integers(0, 20), st.integers(0, 20)),  # a module from one place to another
    st.tuples(st.just("switch"), st.integers(0, 20), st.booleans()),  # a module on or off
    st.tuples(st.just("role"), st.integers(0, 20), st.sampled_from(["system", "user", "assistant"])),
    st.tuples(st.just("control"), st.sampled_from(sorted(CONTEXT_CONTROL_KINDS)), st.booleans()),
)


def _apply(draft, edit, productive: list[str]):
    """`productive`: the modules with output in this session, which the edits pick from (an edit of a module with
    no output states "nothing changed", rightly, but tests little)."""
    movable = [r["id"] for r in draft["rules"] if r["kind"] not in CONTEXT_CONTROL_KINDS]
    picked = [rule for rule in movable if rule in productive] or movable
    kind, first, second = edit
    if kind == "move":
        order = [rule for rule in movable if rule != picked[first % len(picked)]]
        order.insert(second % (len(order) + 1), picked[first % len(picked)])
        return edits.rules_reordered(draft, order)
    if kind == "switch":
        return edits.rule_updated(draft, picked[first % len(picked)], {"enabled": second})
    if kind == "role":
        return edits.rule_updated(draft, picked[first % len(picked)], {"role": second})
    return edits.context_control_switched(draft, first, second)


@pytest.fixture(params=["builtin-native-slots", "builtin-native-roles"])
def edited(request, editor, users):  # noqa: F811
    """The editor's session with a copy of a strategy whose module order places its output (roles) or whose slots
    hold most of it."""
    strategy = services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug=request.param),
                                      name=f"Copy of {request.param}")
    locking = editor["session"]
    session = session_services.session_create(  # no preset: no slot holds the modules' output
        user=users["designer"], name="No preset", current_input="Is the lamp lit?", persona=locking.persona,
        character=locking.character, world_books=list(locking.world_books.all()))
    session_services.event_append(session=session, role="assistant", content="Evening, keeper.")
    return {"strategy": strategy, "session": session}


def _counts(sentence: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (added|removed|moved|with new content)", sentence)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=st.lists(EDIT, min_size=1, max_size=4))
def test_each_statement_matches_the_diff_of_its_two_requests(edited, sequence):
    strategy = Strategy.objects.get(pk=edited["strategy"].pk)
    previews = DraftPreviews(strategy, edited["session"])
    draft = strategy.draft
    for edit in sequence:
        before, _refused = previews.shown(draft)
        productive = [c.rule_id for c in before.placement_controls if c.control != "empty"] if before else []
        try:
            after_draft = _apply(draft, edit, productive)
        except edits.EditRefused:
            continue  # a refused edit stores nothing and states no effect
        after, refused = previews.shown(after_draft)
        if before is None or after is None:
            assert edit_effect("modules", before, after, None) is None
            draft = after_draft
            continue
        effect = edit_effect("modules", before, after, None)
        old = [(m.role, m.content, m.delivery, m.history_status) for m in before.request.messages]
        new = [(m.role, m.content, m.delivery, m.history_status) for m in after.request.messages]
        if old == new:
            assert effect.changed == 0 and effect.sentence.startswith("Nothing changed in the request.")
        else:
            assert effect.changed > 0 and re.match(rf"{effect.changed} messages? changed in the request", effect.sentence)
            counts = _counts(effect.sentence)
            assert counts.get("added", 0) - counts.get("removed", 0) == len(new) - len(old)
            if Counter(m[:2] for m in old) != Counter(m[:2] for m in new):  # some text came or went
                assert counts.get("added", 0) + counts.get("removed", 0) + counts.get("with new content", 0) > 0
            assert len(effect.removed) == counts.get("removed", 0)
        draft = after_draft
