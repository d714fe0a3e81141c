"""The editor and the new-session form start from the user's own last choices, kept across logins (studio.models
UserChoices): the editor reopens a strategy on the session the user last previewed it on; another strategy opens
on the user's last session only when its host runs that strategy; the new-session form starts with the last new
session's strategy and host backends that run it."""

import re

import pytest
from django.contrib.auth import get_user_model

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from studio.user_choices import MAX_CHOICES, user_choice, user_choice_remember
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_hosts(users):
    designer = users["designer"]
    standard = session_services.session_create(user=designer, name="A standard host", current_input="Hi",
                                               host={"core_available": False})
    advanced = session_services.session_create(user=designer, name="B advanced host", current_input="Hi",
                                               host={"core_available": True})
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                          name="Mine")
    return {"standard": standard, "advanced": advanced, "own": own}


def _editor_session(client, slug: str) -> str:
    html = client.get(f"/strategies/{slug}/edit/").content.decode()
    return re.search(r'data-session="(\d*)"', html).group(1)


def test_the_editor_reopens_a_strategy_on_the_users_last_pick_after_a_new_login(users, two_hosts):
    own, standard, advanced = two_hosts["own"], two_hosts["standard"], two_hosts["advanced"]
    first = client_for(users["designer"])
    assert _editor_session(first, own.slug) == str(standard.pk)  # first by name, and it runs the standard backend
    first.get(f"/strategies/{own.slug}/edit/?session={advanced.pk}")
    again = client_for(users["designer"])  # a new login: nothing in its session
    assert _editor_session(again, own.slug) == str(advanced.pk)
    assert _editor_session(client_for(users["admin"]), own.slug) == str(standard.pk)  # per user


def test_the_users_last_session_opens_another_strategy_only_when_its_host_runs_it(users, two_hosts):
    standard, advanced = two_hosts["standard"], two_hosts["advanced"]
    client = client_for(users["designer"])
    client.get(f"/strategies/{two_hosts['own'].slug}/edit/?session={standard.pk}")
    assert user_choice(users["designer"], "session") == standard.pk
    # builtin-native-roles runs on the standard host: the user's last session it is, though another comes first
    Session.objects.filter(pk=advanced.pk).update(name="0 advanced host first by name")
    assert _editor_session(client_for(users["designer"]), "builtin-native-roles") == str(standard.pk)
    # builtin-st needs the advanced backend: the standard host is passed over for one that runs it
    assert _editor_session(client_for(users["designer"]), "builtin-st") == str(advanced.pk)


def _checked_strategy(html: str) -> str:
    return re.search(r'<input type="radio" name="strategy" value="([^"]+)"[^>]*checked', html).group(1)


def _checked(html: str, name: str) -> bool:
    return bool(re.search(rf'<input type="checkbox" name="{name}"[^>]*checked', html))


def test_the_new_session_form_starts_with_the_last_strategy_and_a_host_that_runs_it(users):
    client = client_for(users["designer"])
    html = client.get("/sessions/new/").content.decode()
    assert _checked_strategy(html) == "builtin-st" and _checked(html, "core_available")
    answer = client.post("/sessions/new/", {"name": "Plain", "strategy": "builtin-native-roles",
                                            "native_available": "on", "system_prompt_update": "head",
                                            "world_info_activation": "keywords"})
    assert answer.status_code == 302
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()  # a new login
    assert _checked_strategy(html) == "builtin-native-roles"
    assert not _checked(html, "core_available") and _checked(html, "native_available")
    assert user_choice(users["designer"], "session") == Session.objects.get(name="Plain").pk


def test_a_remembered_core_strategy_starts_on_a_host_with_the_advanced_backend(users):
    user_choice_remember(user=users["designer"], values={"new-session": {
        "strategy": "builtin-st", "core_available": False, "native_available": True}})
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()
    assert _checked_strategy(html) == "builtin-st" and _checked(html, "core_available")


def test_a_remembered_strategy_no_longer_offered_falls_back_to_the_default(users):
    user_choice_remember(user=users["designer"], values={"new-session": {"strategy": "gone"}})
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()
    assert _checked_strategy(html) == "builtin-st"


def test_choices_are_bounded_and_an_unchanged_pick_writes_nothing(users, django_assert_num_queries):
    user = get_user_model().objects.get(pk=users["designer"].pk)
    user_choice_remember(user=user, values={f"editor:s{i}": i for i in range(MAX_CHOICES + 5)})
    assert len(user.studio_choices.choices) == MAX_CHOICES
    user_choice_remember(user=user, values={"session": 7})
    with django_assert_num_queries(3):  # savepoint, the locked read, release: no UPDATE
        user_choice_remember(user=user, values={"session": 7})
