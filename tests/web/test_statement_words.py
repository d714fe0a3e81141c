"""An edit's statement in the page's words: its counts and lists joined as the language joins them (", " in
English; "，" between clauses and "、" between items in Chinese), and the engine's reason for an unchanged request in
words, never its code."""

import html
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import translation

from preview_app.models import Session
from strategies_app import services
from strategies_app.models import Strategy
from studio.wording import list_words
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def test_lists_are_joined_as_the_language_joins_them():
    with translation.override("en"):
        assert (list_words(["a", "b"]), list_words(["1 moved", "2 added"], clauses=True)) == ("a, b", "1 moved, 2 added")
    with translation.override("zh-hans"):
        assert (list_words(["甲", "乙"]), list_words(["移动 1 条", "新增 2 条"], clauses=True)) == (
            "甲、乙", "移动 1 条，新增 2 条")


@pytest.fixture
def tavern(reference_data):
    """The demo's SillyTavern session and the designer's copy of builtin-st, with a client for the designer."""
    call_command("seed_demo", stdout=io.StringIO())
    designer = get_user_model().objects.get(username="designer")
    copy = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"), name="Tavern")
    return {"client": client_for(designer), "copy": copy,
            "session": Session.objects.get(applied_strategy__slug="builtin-st")}


def _statement(tavern, tail, data, language="en"):
    fresh = Strategy.objects.get(pk=tavern["copy"].pk)
    tavern["client"].cookies["django_language"] = language
    answer = tavern["client"].post(f"/strategies/{fresh.slug}/{tail}", {
        "version": fresh.version, "session": tavern["session"].pk, **data}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    return html.unescape(re.search(r"data-edit-effect[^>]*>([^<]*)", answer.content.decode()).group(1))


def _free_every_slot(tavern, language):
    layout = Strategy.objects.get(pk=tavern["copy"].pk).draft["layout"]
    return _statement(tavern, "layout/", {"source": "manual", "identity": layout["identity"],
                                          "fallback": layout["fallback"], "confirm": "yes"}, language)


def test_a_chinese_statement_joins_its_counts_with_the_chinese_comma(tavern):
    sentence = _free_every_slot(tavern, "zh-hans")
    counts = sentence.split("：", 1)[1]
    assert "，" in counts and ", " not in counts, sentence


def test_an_unchanged_request_names_the_engines_reason_in_words(tavern):
    _free_every_slot(tavern, "en")
    sentence = _statement(tavern, "positions/order/", {"row": "persona#persona", "direction": "down"})
    assert sentence.startswith("Nothing changed in the request.")
    assert "(a manual position set in the strategy)" in sentence and " by user" not in sentence
