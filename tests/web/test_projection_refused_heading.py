"""A refused turn projection's heading says what was refused, not "After N more turns"; in both languages."""

import re

import pytest

from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def _heading(world, users, query, language, htmx=False):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    answer = client.get(f"/sessions/{world['session'].pk}/preview/projection/{query}", **headers)
    return answer.status_code, re.search(r'id="projection-title">([^<]*)</h2>', answer.content.decode()).group(1)


@pytest.mark.parametrize(("language", "query", "status", "heading"), [
    ("en", "?turns=99", 400, "No projection: 99 turns were refused (choose 1 to 20)"),
    ("en", "?turns=0", 400, "No projection: 0 turns were refused (choose 1 to 20)"),
    ("en", "?turns=-1", 400, "No projection: -1 turns were refused (choose 1 to 20)"),
    ("en", "?strategy=no-such-strategy", 404, "No projection: the preview it starts from was refused"),
    ("en", "?generation=bogus", 400, "No projection: an option of the preview is not valid"),
    ("zh-hans", "?generation=bogus", 400, "没有推演：预览的某个选项无效"),
    ("en", "?turns=3", 200, "After 3 more turns"),
    ("zh-hans", "?turns=99", 400, "没有推演：99 轮被拒绝（请选择 1 到 20 轮）"),
    ("zh-hans", "?strategy=no-such-strategy", 404, "没有推演：作为起点的预览被拒绝"),
    ("zh-hans", "?turns=3", 200, "再过 3 轮之后"),
])
def test_the_heading_says_what_was_refused(world, users, language, query, status, heading):
    assert _heading(world, users, query, language) == (status, heading)
    assert _heading(world, users, query, language, htmx=True) == (200, heading)  # the fragment htmx swaps in
