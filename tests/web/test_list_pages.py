"""Long lists stay bounded (quality.md): the sessions, users, resources and strategies pages show a page of rows with
links to the others, the home page names the rest, and no page runs a query per row."""

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Persona, Strategy
from studio.paging import PER_PAGE
from tests.web.conftest import client_for, make_user


def _sessions(owner, count: int, prefix: str = "session") -> None:
    Session.objects.bulk_create([Session(name=f"{prefix} {i:04d}", owner=owner, host={"core_available": True})
                                 for i in range(count)])


def _listed_sessions(html: str) -> list[str]:
    return re.findall(r'<tr data-session-id="(\d+)">', html)


def test_the_sessions_page_shows_a_page_of_sessions_and_links_to_the_next(users):
    _sessions(users["designer"], PER_PAGE + 20)
    client = client_for(users["qa"])
    first = client.get("/sessions/").content.decode()
    assert len(_listed_sessions(first)) == PER_PAGE
    assert f"1–{PER_PAGE} of {PER_PAGE + 20}" in first and 'href="?page=2"' in first
    second = client.get("/sessions/?page=2").content.decode()
    assert len(_listed_sessions(second)) == 20 and 'href="?page=1"' in second
    assert not set(_listed_sessions(first)) & set(_listed_sessions(second))


def test_a_session_search_lists_the_sessions_whose_name_holds_it(users):
    _sessions(users["designer"], 30)
    _sessions(users["designer"], 3, prefix="harbour watch")
    client = client_for(users["qa"])
    found = client.get("/sessions/", {"q": "HARBOUR"}).content.decode()
    assert len(_listed_sessions(found)) == 3 and 'value="HARBOUR"' in found
    missing = client.get("/sessions/", {"q": "<b>gate</b>"}).content.decode()
    assert not _listed_sessions(missing) and "data-no-match" in missing and "&lt;b&gt;gate&lt;/b&gt;" in missing


def test_the_sessions_page_counts_messages_and_goldens_each_on_its_own(world, users):
    session = world["session"]
    for text in ("one", "two"):
        session_services.event_append(session=session, role="user", content=text)
    later, _ = strategy_services.revision_save(strategy=world["other"], user=users["admin"], note="another")
    session_services.golden_approve(session=session, revision=later, user=users["qa"])
    html = client_for(users["qa"]).get("/sessions/").content.decode()
    row = html[html.index(f'data-session-id="{session.pk}"'):]
    row = row[:row.index("</tr>")]
    events, goldens = session.events.count(), session.goldens.count()
    assert (events, goldens) == (3, 2)
    assert re.findall(r'<td class="num">(?:<a [^>]*>)?(\d+)', row) == ["3", "2"]


def test_the_users_page_reads_the_same_queries_for_five_users_as_for_fifty(users):
    client = client_for(users["admin"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/users/").status_code == 200
        return len(captured)

    for i in range(5):
        make_user(f"reader-{i}", "qa")
    few = queries()
    for i in range(45):
        make_user(f"writer-{i}", "designer")
    assert queries() == few
    html = client.get("/users/", {"q": "writer-4"}).content.decode()
    assert re.findall(r'data-user="([^"]+)" data-role="([^"]*)"', html) == [
        (name, "designer") for name in ("writer-4", "writer-40", "writer-41", "writer-42", "writer-43", "writer-44")]


def test_each_resource_kind_is_paged_on_its_own(users):
    Persona.objects.bulk_create([Persona(name=f"persona {i:04d}") for i in range(PER_PAGE + 5)])
    client = client_for(users["admin"])
    html = client.get("/resources/", {"persona_page": 2}).content.decode()
    personas = html[html.index('data-kind="persona"'):]
    personas = personas[:personas.index("</section>")]
    assert f"({PER_PAGE + 5})" in personas and len(re.findall(r"<tr data-resource-id=", personas)) == 5
    assert f"{PER_PAGE + 1}–{PER_PAGE + 5} of {PER_PAGE + 5}" in personas and "?persona_page=1" in personas


def test_the_home_page_names_the_first_sessions_and_links_to_the_rest(users):
    _sessions(users["designer"], 12)
    html = client_for(users["qa"]).get("/").content.decode()
    sessions = html[html.index('<ul data-list="sessions">'):]
    sessions = sessions[:sessions.index("</ul>")]
    assert len(re.findall(r"<li data-session-id=", sessions)) == 10
    assert re.search(r'<a href="/sessions/">All 12 sessions</a>', sessions)


def test_the_strategy_list_names_three_sessions_applying_a_strategy_and_counts_the_others(users):
    designer = users["designer"]
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                               name="Shared strategy")
    strategy_services.revision_save(strategy=strategy, user=designer, note="first")
    _sessions(designer, 5, prefix="applied")
    for session in Session.objects.filter(name__startswith="applied"):
        session_services.strategy_apply(session=session, strategy=strategy)
    html = client_for(users["qa"]).get("/strategies/").content.decode()
    row = html[html.index(f'data-strategy="{strategy.slug}"'):]
    row = row[:row.index("</tr>")]
    assert re.findall(r'<a href="/sessions/\d+/">([^<]+)</a>', row) == ["applied 0000", "applied 0001", "applied 0002"]
    assert "and 2 more" in row


def test_the_goldens_page_checks_a_page_of_goldens_and_says_how_many_of_those_differ(world, users):
    from preview_app.views import GOLDENS_PER_PAGE

    qa = users["qa"]
    for i in range(GOLDENS_PER_PAGE + 2):
        session = session_services.session_create(user=users["designer"], name=f"pinned {i:02d}",
                                                   host={"core_available": True}, current_input=f"Hello {i}")
        session_services.golden_approve(session=session, revision=world["revision"], user=qa)
    first = client_for(qa).get("/goldens/").content.decode()
    assert len(re.findall(r'data-golden-id="\d+" data-status="matches"', first)) == GOLDENS_PER_PAGE
    assert f"Every golden of the {GOLDENS_PER_PAGE} on this page matches." in first
    assert f"1–{GOLDENS_PER_PAGE} of {GOLDENS_PER_PAGE + 3}" in first
    last = client_for(qa).get("/goldens/", {"page": 2}).content.decode()
    assert len(re.findall(r'data-golden-id="\d+" data-status=', last)) == 3
    # one session's goldens are one page: the sentence is the whole list's
    alone = client_for(qa).get("/goldens/", {"session": world["session"].pk}).content.decode()
    assert "Every golden matches." in alone and "data-pager" not in alone


def test_a_user_without_a_role_is_not_shown_as_qa_in_the_role_picker(users):
    loner = make_user("loner")  # no group: no studio role
    html = client_for(users["admin"]).get("/users/", {"q": "loner"}).content.decode()
    picker = re.search(rf'<select id="role-{loner.pk}" name="role">(.*?)</select>', html, re.S).group(1)
    assert re.findall(r"<option [^>]*selected[^>]*>([^<]+)</option>", picker) == ["no role"]
    assert '<option value="" selected disabled>' in picker


def test_a_strategy_search_lists_the_strategies_whose_name_or_id_holds_it(users):
    designer = users["designer"]
    for name in ("Harbour night", "Harbour day", "Forest"):
        strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"), name=name)
    client = client_for(users["qa"])
    found = client.get("/strategies/", {"q": "harbour"}).content.decode()
    assert sorted(re.findall(r'<tr data-strategy="([^"]+)"', found)) == ["harbour-day", "harbour-night"]
    by_id = client.get("/strategies/", {"q": "builtin-native"}).content.decode()
    assert sorted(re.findall(r'<tr data-strategy="([^"]+)"', by_id)) == ["builtin-native-roles",
                                                                          "builtin-native-slots"]
    none = client.get("/strategies/", {"q": "desert"}).content.decode()
    assert "data-no-match" in none and "<table" not in none


def test_the_goldens_api_lists_one_sessions_goldens_when_asked(world, users):
    qa = users["qa"]
    other = session_services.session_create(user=users["designer"], name="other", host={"core_available": True},
                                            current_input="Hi")
    session_services.golden_approve(session=other, revision=world["revision"], user=qa)
    client = client_for(qa)
    assert sorted(row["session"] for row in client.get("/api/goldens").json()) == sorted(
        [world["session"].pk, other.pk])
    [row] = client.get("/api/goldens", {"session": other.pk}).json()
    assert row["session"] == other.pk and row["status"] == "matches"
    refused = client.get("/api/goldens", {"session": "x"})
    assert refused.status_code == 400 and refused.json()["detail"]["path"] == "session"
    assert client.get("/api/goldens", {"session": 999999}).status_code == 404


def test_the_apply_panel_offers_a_bounded_list_and_finds_the_other_sessions_by_name(users):
    from preview_app.strategy_sessions import APPLY_LISTED

    designer = users["designer"]
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                               name="Applied widely")
    strategy_services.revision_save(strategy=strategy, user=designer, note="first")
    _sessions(designer, APPLY_LISTED + 5)
    _sessions(designer, 2, prefix="zz harbour")
    client = client_for(designer)

    def offered(html: str) -> list[str]:
        return re.findall(r'<input type="checkbox" name="sessions" value="\d+"> ([^<]+)</label>', html)

    editor = client.get(f"/strategies/{strategy.slug}/edit/").content.decode()
    assert len(offered(editor)) == APPLY_LISTED and f'data-apply-count="{APPLY_LISTED + 7}"' in editor
    found = client.get(f"/strategies/{strategy.slug}/apply/", {"q": "harbour"}, HTTP_HX_REQUEST="true")
    assert offered(found.content.decode()) == ["zz harbour 0000", "zz harbour 0001"]
    assert "<html" not in found.content.decode()  # htmx gets the panel alone
    page = client.get(f"/strategies/{strategy.slug}/apply/", {"q": "harbour"}).content.decode()
    assert offered(page) == ["zz harbour 0000", "zz harbour 0001"] and "<html" in page  # without JavaScript
    target = Session.objects.get(name="zz harbour 0001")
    applied = client.post(f"/strategies/{strategy.slug}/apply/", {"sessions": [target.pk], "q": "harbour"},
                          HTTP_HX_REQUEST="true").content.decode()
    assert offered(applied) == ["zz harbour 0000", "zz harbour 0001"]  # the search is kept after the apply
    target.refresh_from_db()
    assert target.applied_strategy_id == strategy.pk
    none = client.get(f"/strategies/{strategy.slug}/apply/", {"q": "desert"}).content.decode()
    assert "data-no-match" in none and not offered(none)
