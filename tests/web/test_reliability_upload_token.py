"""A dry run's upload token imports once (web.md screen 6): three concurrent "Import it" with one token through a
real 3-worker gunicorn on a SQLite file create exactly one resource; the others are told the token was used."""

import json
import re
import urllib.error
import urllib.request
import uuid

import pytest

from tests.web.test_reliability_races import GUNICORN, Browser, race
from tests.web.test_reliability_races import server as server  # noqa: PLC0414 - the races' gunicorn fixture

pytestmark = pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is a dev dependency: make install-dev")
CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Token Tess", "description": "Imported once.", "first_mes": "Hi."}}


def _post_form(browser: Browser, fields: dict, file: tuple[str, bytes] | None = None) -> tuple[int, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in {**fields, "csrfmiddlewaretoken": browser.csrf}.items()]
    if file is not None:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file[0]}"\r\n'
                     f"Content-Type: application/json\r\n\r\n".encode() + file[1] + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    request = urllib.request.Request(browser.base + "/resources/import/", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "Referer": browser.base + "/"})
    try:
        with browser.opener.open(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_three_concurrent_import_its_with_one_token_create_one_resource(server):
    browser = Browser(server)
    status, page = _post_form(browser, {"kind": "character", "dry_run": "1"},
                              ("tess.json", json.dumps(CARD).encode()))
    assert status == 200, page[:500]
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    results = race([lambda: _post_form(browser, {"kind": "character", "token": token})] * 3)
    statuses = sorted(status for status, _ in results)
    # the losers are told the token is used (409), or, when the winner committed before they read it, unknown (400)
    assert statuses[0] == 200 and all(status in (400, 409) for status in statuses[1:]), statuses
    assert sum('data-dry-run="false"' in page for _, page in results) == 1
    status, resources = browser.call("GET", "/api/resources")
    assert status == 200
    assert [c["name"] for c in resources["character"]].count("Token Tess") == 1
