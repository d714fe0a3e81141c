"""The preview's model picker, the request total against the window and the "across models" table (web.md screen 3)."""

import re

from assembly.tokens import ENCODINGS
from tests.web.conftest import client_for


def page(client, session, query=""):
    response = client.get(f"/sessions/{session.pk}/preview/?{query}")
    assert response.status_code == 200
    return response.content.decode()


def window_element(html):
    return re.search(r'<section class="window"[^>]*>', html).group(0)


def test_the_model_picker_lists_the_catalogue_with_tokenizer_and_exactness(world, users):
    html = page(client_for(users["qa"]), world["session"])
    picker = re.search(r'<select name="model"[^>]*>(.*?)</select>', html, re.S).group(1)
    assert '<option value="llama-3.1-8b-instruct">llama-3.1-8b-instruct · llama3 · exact</option>' in picker
    assert '<option value="claude">claude · cl100k_base · approximate</option>' in picker


def test_a_picked_model_counts_with_its_tokenizer_against_its_window(world, users):
    session, client = world["session"], client_for(users["qa"])
    api = client.get(f"/api/sessions/{session.pk}/preview?model=llama-3.1-8b-instruct").json()
    tokens = api["tokens"]
    assert (tokens["tokenizer"], tokens["model"], tokens["exact"], tokens["context_window"]) == \
        ("llama3", "llama-3.1-8b-instruct", True, 131_072)
    html = page(client, session, "model=llama-3.1-8b-instruct")
    element = window_element(html)
    assert f'data-request-total="{tokens["request_total"]}"' in element
    assert 'data-context-window="131072"' in element and 'data-fits="true"' in element
    assert f'{tokens["request_total"]} / 131,072 tokens billed by the API (with the chat framing), 1,024 reserved for the reply' in html
    assert '<option value="llama-3.1-8b-instruct" selected>' in html


def test_the_bar_takes_the_budget_as_the_window(world, users):
    session, client = world["session"], client_for(users["qa"])
    tokens = client.get(f"/api/sessions/{session.pk}/preview?context_window=10&reserve_output=5").json()["tokens"]
    element = window_element(page(client, session, "context_window=10&reserve_output=5"))
    assert f'data-request-total="{tokens["request_total"]}"' in element
    assert 'data-context-window="10"' in element and 'data-reply-reserve="5"' in element
    assert 'data-fits="false"' in element


def test_without_a_model_or_budget_the_total_stands_alone(world, users):
    session, client = world["session"], client_for(users["qa"])
    html = page(client, session, "strategy=builtin-native-slots")
    element = window_element(html)
    assert "data-request-total=" in element and "data-context-window" not in element
    assert "Pick a model or set a budget" in html


def test_builtin_st_is_measured_against_the_presets_context_size(world, users):
    session, client = world["session"], client_for(users["qa"])
    tokens = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()["tokens"]
    assert tokens["window_source"] == "preset"
    element = window_element(page(client, session, "strategy=builtin-st"))
    assert f'data-context-window="{tokens["context_window"]}"' in element


def across_url(html):
    """The across-models table's own URL, as the preview page links it (not counted inline)."""
    return re.search(r'data-across-url="([^"]+)"', html).group(1).replace("&amp;", "&")


def test_the_across_models_table_lists_every_encoding(world, users):
    session, client = world["session"], client_for(users["qa"])
    url = across_url(page(client, session, "model=mistral-nemo"))
    assert url == f"/sessions/{session.pk}/preview/across-models/?model=mistral-nemo"
    response = client.get(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="panel" id="across"') and "<html" not in html
    rows = re.findall(r'<tr data-encoding="([^"]+)" data-request-total="(\d+)" data-context-window="(\d+)"'
                      r'( class="current")?', html)
    assert [row[0] for row in rows] == list(ENCODINGS)
    assert [row[0] for row in rows if row[3]] == ["mistral-tekken"]
    tokens = client.get(f"/api/sessions/{session.pk}/preview?model=mistral-nemo").json()["tokens"]
    assert dict((row[0], int(row[1])) for row in rows)["mistral-tekken"] == tokens["request_total"]


def test_an_unknown_model_in_the_options_is_refused_naming_the_field(world, users):
    response = client_for(users["qa"]).get(f"/api/sessions/{world['session'].pk}/preview?model=nope")
    assert response.status_code == 400
    assert response.json()["detail"] == {"path": "model", "expected": "a model of the catalogue"}


def test_the_model_travels_with_the_budget_form_and_the_exports(world, users):
    session, client = world["session"], client_for(users["qa"])
    html = page(client, session, "model=qwen2.5-7b-instruct")
    forms = dict(re.findall(r'<form method="get" class="([^"]+)"(.*?)</form>', html, re.S))
    assert 'type="hidden" name="model" value="qwen2.5-7b-instruct"' in forms["budget-form"]
    exported = client.get(f"/sessions/{session.pk}/preview/result.json?model=qwen2.5-7b-instruct")
    assert exported.json()["tokens"]["tokenizer"] == "qwen2"


def test_the_window_and_the_table_read_in_chinese(world, users):
    from django.utils import translation

    session, client = world["session"], client_for(users["qa"])
    with translation.override("en"):  # the requests activate Chinese in this thread; leave it as it was
        client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/sessions/"})
        html = page(client, session, "model=llama-3.1-8b-instruct")
    assert "各模型对比" in html and "个为回复预留" in html and "精确" in html
