"""Every page meets the Content-Security-Policy. Chromium visits every page an admin can reach
from home (the demo data loaded), and each `securitypolicyviolation` event or CSP console error fails the test
(quality.md, Security)."""

from urllib.parse import urljoin, urlsplit

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__csp.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${event.sourceFile}:${event.lineNumber}`);
});
"""
SKIP = ("/accounts/logout/", "/i18n/", "/admin/logout/", "/api/", "/static/")
MAX_PAGES = 150


def links(page) -> list[str]:
    return page.eval_on_selector_all("a[href]:not([download])", "nodes => nodes.map(n => n.getAttribute('href'))")


def test_every_page_meets_the_content_security_policy(live_server, page, login_as):
    call_command("seed_demo", verbosity=0)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"{page.url}: {message.text}")
            if message.type == "error" and "Content Security Policy" in message.text else None)
    page.add_init_script(RECORD_VIOLATIONS)
    login_as("admin")

    origin = live_server.url
    queue, seen, violations = ["/", "/admin/"], set(), []
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        response = page.goto(origin + path)
        assert response is not None and response.status < 500, path
        if response.headers.get("content-type", "").startswith("text/html"):
            assert "script-src 'self'" in response.headers.get("content-security-policy", ""), path
        page.wait_for_load_state("load")
        violations += [f"{path}: {entry}" for entry in page.evaluate("window.__csp || []")]
        for href in links(page):
            target = urlsplit(urljoin(origin + path, href))
            if target.netloc != urlsplit(origin).netloc or target.path.startswith(SKIP):
                continue
            if target.path.endswith((".json", ".jsonl")):
                continue
            queue.append(target.path + (f"?{target.query}" if target.query else ""))
    assert len(seen) > 15, seen  # the crawl really reached the studio's pages
    assert {"/", "/sessions/", "/strategies/", "/resources/", "/goldens/"} <= {urlsplit(p).path for p in seen}
    assert not violations, violations
    assert not errors, errors
