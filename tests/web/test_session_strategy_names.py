"""The session pages show a built-in's name in the page's language only (as the editor does): the session page's
"Applied strategy" card and apply picker, the sessions list, the new-session form and the preview's header."""

from html import unescape

import pytest

from assembly.catalogue import BUILTIN_NAMES
from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for

BOTH = [f"{names['zh']} / {names['en']}" for names in BUILTIN_NAMES.values()]
ST = BUILTIN_NAMES["builtin-st"]


@pytest.fixture
def pages(users):
    copy = strategy_services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-st"))
    strategy_services.revision_save(strategy=copy, user=users["designer"], note="first")
    session = services.session_create(user=users["designer"], name="Names", host={"core_available": True},
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    off = services.session_create(user=users["designer"], name="Off", host={"core_available": True})
    return {"session": f"/sessions/{session.pk}/", "list": "/sessions/", "new": "/sessions/new/",
            "preview": f"/sessions/{session.pk}/preview/", "off preview": f"/sessions/{off.pk}/preview/"}


def _get(users, url, language):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


@pytest.mark.parametrize(("language", "shown", "hidden"), [("en", "en", "zh"), ("zh-hans", "zh", "en")])
def test_built_in_names_in_one_language(users, pages, language, shown, hidden):
    for page, url in pages.items():
        html = _get(users, url, language)
        assert not any(both in html for both in BOTH), page
        assert ST[hidden] not in html, page
    session = _get(users, pages["session"], language)
    assert f'<strong>{ST[shown]}</strong> @' in session  # the Applied strategy card
    assert f'<optgroup label="{ST[shown]}">' in session  # the apply picker
    assert f">{ST[shown]} @ " in session and ">builtin-st @ " not in session  # its revisions, by name
    assert f">{ST[shown]}</strong>" in _get(users, pages["preview"], language)  # the preview's header
    new = _get(users, pages["new"], language)
    copy_label = {"en": "Preset slots first (advanced) (copy): your studio's strategy",
                  "zh": "预设插槽优先（进阶）（副本）"}[shown]
    assert copy_label in unescape(new)  # a copy of a built-in, in the strategy radios
    assert 'value="builtin-st" id="id_strategy_0" required checked' in new  # the radios still work as before


def test_the_preview_picker_names_strategies_as_the_lists_do(users):
    """The picker's options (applied, working draft, revisions) name a strategy by its name, not its id."""
    from preview_app import services as preview_services
    from preview_app.strategy_choice import choice_options
    from strategies_app.models import Strategy as StrategyRow

    session = preview_services.session_create(user=users["designer"], name="Pick")
    session = preview_services.strategy_apply(session=session,
                                              strategy=StrategyRow.objects.get(slug="builtin-native-slots"))
    from django.utils import translation

    with translation.override("en"):
        groups = choice_options(session)
    assert groups[0].options[0].label.startswith("applied: Preset slots first (standard) @ ")
    slots = next(g for g in groups if g.label.startswith("Preset slots first (standard) (builtin-native-slots)"))
    assert slots.options[0].label == "Preset slots first (standard) (working draft)"
    assert all(o.label.startswith("Preset slots first (standard) @ ") for o in slots.options[1:])
