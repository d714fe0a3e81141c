"""The glossary (linked from every page's header): SillyTavern's words and dsh's words apart, one line each, in
the page's language; a term on a page links to its line with the line as hover text."""

import re

from django.utils import translation

from studio.glossary import DSH_TERMS, SILLYTAVERN_TERMS, term_link
from tests.web.conftest import client_for


def test_the_glossary_lists_each_vocabulary_apart(users):
    html = client_for(users["qa"]).get("/glossary/").content.decode()
    assert 'href="/glossary/"' in html  # the header link
    st, dsh = html.index("SillyTavern&#x27;s words"), html.index("dsh&#x27;s words")
    for word in ("Prompt Manager", "in-chat @ depth", "Author&#x27;s Note", "character&#x27;s note"):
        assert st < html.index(word) < dsh
    for slug in ("pre-step", "runtime-context", "native-system", "delivery"):
        assert html.index(f'<dt id="{slug}">') > dsh
    assert len(re.findall(r"<dt id=", html)) == len(SILLYTAVERN_TERMS) + len(DSH_TERMS)


def test_the_glossary_reads_in_chinese(users):
    html = client_for(users["qa"]).get("/glossary/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "术语表" in html and "预步骤消息" in html and "Pre-step" not in html


def test_a_term_links_to_its_line_with_the_line_on_hover():
    with translation.override("en"):
        link = term_link("pre-step", "pre-step <copy>")
    assert link.startswith('<a class="term" href="/glossary/#pre-step" title="A message the host sends')
    assert "pre-step &lt;copy&gt;</a>" in link  # the shown words are escaped
