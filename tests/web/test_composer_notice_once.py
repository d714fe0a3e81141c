"""Without JavaScript the composer's commit notice is shown once (in the composer), not also in the page's top flash;
other messages still go to the top flash."""

import pytest

from tests.web.conftest import client_for
from tests.web.test_composer_notice import _commit, _session


@pytest.mark.parametrize(("language", "notice"), [("en", "Turn committed: "), ("zh-hans", "已提交本轮")])
def test_the_commit_notice_appears_once(users, language, notice):
    session = _session(users, "builtin-st")
    response = _commit(client_for(users["designer"]), session, htmx=False, language=language,
                       content="Is the lamp lit?", reply="It is.")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count(notice) == 1
    assert "data-composer-notice>" + notice in html  # the one shown is the composer's
    top = html[html.index('<main id="main">'):html.index('<main id="main">') + 200]
    assert 'class="flash"' not in top


def test_other_messages_still_reach_the_top_flash(users):
    session = _session(users, "builtin-st")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/copy/", follow=True)
    top = response.content.decode()
    top = top[top.index('<main id="main">'):]
    assert top.index('<ul class="flash">') < top.index("This is a copy; the original is unchanged.") < top.index("</ul>")
