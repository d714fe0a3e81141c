"""A golden's stored result is the whole approved answer (megabytes on a long session). The session page only counts
goldens and the preview page only says whether its revision is pinned, so neither reads that column (a
20,000-event session's page took 1.35 s decoding it)."""

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.web.conftest import client_for


def _golden_result_reads(queries) -> list[str]:
    return [q["sql"] for q in queries
            if "goldensnapshot" in q["sql"] and re.search(r'goldensnapshot"\."result"', q["sql"])]


def test_the_session_and_preview_pages_never_read_a_goldens_stored_result(users, world):
    session, own, revision = world["session"], world["own"], world["revision"]
    client = client_for(users["qa"])
    for url, shown in ((f"/sessions/{session.pk}/", "1 golden"),
                       (f"/sessions/{session.pk}/preview/?strategy={own.slug}&revision={revision.revision}",
                        'data-pinned="true"')):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200 and shown in response.content.decode()
        assert any("goldensnapshot" in q["sql"] for q in queries.captured_queries)  # the golden is looked at
        assert _golden_result_reads(queries.captured_queries) == []
    with CaptureQueriesContext(connection) as queries:  # the check itself does read it: the pattern is right
        assert client.get("/goldens/").status_code == 200
    assert _golden_result_reads(queries.captured_queries)
