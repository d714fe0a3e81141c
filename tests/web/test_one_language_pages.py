"""Every page that names a built-in names it in the page's language only (compare pickers, strategies list, apply,
revisions, sessions list, home), and a built-in revision's note "built-in" is translated where it is shown."""

from html import unescape

import pytest

from assembly.catalogue import BUILTIN_NAMES
from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for

BOTH = [f"{names['zh']} / {names['en']}" for names in BUILTIN_NAMES.values()]
SLOTS = BUILTIN_NAMES["builtin-native-slots"]


@pytest.fixture
def session(users):
    copy = strategy_services.strategy_copy(user=users["designer"],
                                           source=Strategy.objects.get(slug="builtin-native-slots"))
    strategy_services.revision_save(strategy=copy, user=users["designer"], note="first")
    return services.session_create(user=users["designer"], name="Names", host={"core_available": True},
                                   strategy=Strategy.objects.get(slug="builtin-st"))


def _get(users, url, language):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    response = client.get(url)
    assert response.status_code == 200, url
    return unescape(response.content.decode())


def _apply(users, session, language):
    """The apply page (the apply panel's answer without htmx)."""
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    response = client.post("/strategies/builtin-native-slots/apply/", {"revision": "", "sessions": [session.pk]})
    assert response.status_code == 200
    return unescape(response.content.decode())


def _pages(session):
    return {"home": "/", "strategies": "/strategies/",
            "revisions": "/strategies/builtin-native-slots/revisions/", "sessions": "/sessions/",
            "compare": f"/sessions/{session.pk}/compare/",
            "compare two": f"/sessions/{session.pk}/compare/?a=applied&b=builtin-native-slots",
            "copy revisions": "/strategies/builtin-native-slots-copy/revisions/", "goldens": "/goldens/",
            "session": f"/sessions/{session.pk}/", "preview": f"/sessions/{session.pk}/preview/",
            "editor": "/strategies/builtin-native-slots/edit/", "new session": "/sessions/new/",
            "projection": f"/sessions/{session.pk}/preview/projection/?strategy=builtin-native-slots"}


@pytest.mark.parametrize(("language", "shown", "hidden"), [("en", "en", "zh"), ("zh-hans", "zh", "en")])
def test_pages_name_built_ins_in_one_language(users, session, language, shown, hidden):
    for page, url in _pages(session).items():
        html = _get(users, url, language)
        assert not any(both in html for both in BOTH), page
        assert SLOTS[hidden] not in html, page
    apply = _apply(users, session, language)
    assert not any(both in apply for both in BOTH) and SLOTS[hidden] not in apply
    assert f">{SLOTS[shown]}</a> ›" in apply  # the breadcrumb names the strategy
    compare = _get(users, _pages(session)["compare"], language)
    assert f'<optgroup label="{SLOTS[shown]} (builtin-native-slots)' in compare  # the pickers' groups
    copy = {"en": f"{SLOTS['en']} (copy)", "zh": f"{SLOTS['zh']}（副本）"}[shown]
    assert f'<optgroup label="{copy} (builtin-native-slots-copy)">' in compare
    assert f"<strong>{SLOTS[shown]}</strong>" in _get(users, "/strategies/", language)


@pytest.mark.parametrize(("language", "note"), [("en", "built-in"), ("zh-hans", "内置")])
def test_the_built_in_note_is_translated_where_shown(users, session, language, note):
    revisions = _get(users, "/strategies/builtin-native-slots/revisions/", language)
    assert f"<td>{note}</td>" in revisions  # the table's Note column
    assert f" · {note}</option>" in revisions  # the diff pickers
    assert f" · {note} · " in revisions  # the apply panel's revision picker
    assert f" · {note} · " in _apply(users, session, language)
    assert f"</code> {note} <div" in _get(users, "/strategies/", language)  # the list's latest revision
    assert f" · {note}</option>" in _get(users, _pages(session)["compare"], language)
    if language != "en":
        assert "built-in</td>" not in revisions and "· built-in<" not in revisions
    assert f"<td>{note}</td>" not in _get(users, "/strategies/builtin-native-slots-copy/revisions/", language)
