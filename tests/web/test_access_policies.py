"""One permission policy per model (strategies_app.access, preview_app.access): the yes/no answer the pages use to
show controls, the raising check every write goes through and the editable queryset agree for every role."""

import pytest

from assembly.errors import CodedError
from preview_app.access import can_edit_session, editable_sessions, session_for_edit
from preview_app.models import Session
from strategies_app.access import can_edit_strategy, strategy_for_edit
from strategies_app.models import Strategy
from tests.web.conftest import make_user

ROLES = ("qa", "designer", "admin")


def _passes(check) -> bool:
    try:
        check()
    except CodedError:
        return False
    return True


@pytest.mark.parametrize("role", ROLES)
def test_the_strategy_answer_is_the_check(world, users, role):
    user = users[role]
    for strategy in Strategy.objects.filter(slug__in=[world["own"].slug, world["other"].slug, "builtin-st"]):
        assert can_edit_strategy(user, strategy) == _passes(lambda s=strategy: strategy_for_edit(user, s.slug))


@pytest.mark.parametrize("role", ROLES)
def test_the_session_answer_is_the_check_and_the_queryset(world, users, role):
    user = users[role]
    other = Session.objects.create(name="Someone else's", owner=make_user("someone-else", "designer"))
    editable = set(editable_sessions(user).values_list("pk", flat=True))
    for session in (world["session"], other):
        allowed = can_edit_session(user, session)
        assert allowed == _passes(lambda s=session: session_for_edit(user, s.pk)) == (session.pk in editable)
