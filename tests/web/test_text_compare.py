"""Two templates of one kind compared on one session: each side's prompt with its spans, and the lines only in A
or only in B."""

import pytest

from tests.web.conftest import client_for
from tests.web.text_sessions import builtin, make_text_session


@pytest.fixture
def text_session(users):
    return make_text_session(users["designer"], users["admin"])


def test_two_instruct_templates_side_by_side_with_their_different_lines(text_session, users):
    chatml, alpaca = builtin("instruct", "ChatML"), builtin("instruct", "Alpaca")
    page = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/compare/",
                                       {"kind": "instruct", "a": chatml.pk, "b": alpaca.pk})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-side="a"' in html and 'data-side="b"' in html
    assert '<span class="removed" data-op="removed">− &lt;|im_start|&gt;user</span>' in html
    assert '<span class="added" data-op="added">+ ### Instruction:</span>' in html


def test_the_same_template_twice_gives_the_same_prompt(text_session, users):
    chatml = builtin("instruct", "ChatML")
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/compare/",
                                       {"kind": "instruct", "a": chatml.pk}).content.decode()
    assert "data-same-prompt" in html  # b empty: the session's own, which is ChatML


def test_a_template_of_another_kind_is_refused_naming_the_side(text_session, users):
    page = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/compare/",
                                       {"kind": "instruct", "b": builtin("context", "Chat").pk})
    assert page.status_code == 400
    assert "b: expected the id of a template of kind instruct" in page.content.decode()


def test_the_strategy_compare_of_a_text_session_leads_to_the_template_compare(text_session, users):
    answer = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/compare/")
    assert answer.status_code == 302 and answer["Location"] == f"/sessions/{text_session.pk}/text/compare/"


def test_the_strategy_editor_previews_a_text_session_as_its_chat_request(text_session, users, world):
    html = client_for(users["designer"]).get(f"/strategies/{world['own'].slug}/edit/?session={text_session.pk}")
    assert html.status_code == 200
    assert "Show me the cards." in html.content.decode()
