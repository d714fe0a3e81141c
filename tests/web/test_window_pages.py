"""The model picker and the request total against the window on the editor's live preview, the compare page and
the goldens page (web.md screens 2, 4 and 5): one bar partial everywhere, with integer data attributes for tests."""

import re

from preview_app.models import Session
from tests.web.conftest import client_for

HTMX = {"HTTP_HX_REQUEST": "true"}
SMALL_WINDOW_MODEL = "gpt-4"  # 8,192 tokens billed by the API (with the chat framing), 1,024 reserved for the reply


def windows(html):
    """Every bar's (request total, context window or None) as integers."""
    found = []
    for element in re.findall(r'<section class="window"[^>]*>', html):
        total = re.search(r'data-request-total="(\d+)"', element)
        window = re.search(r'data-context-window="(\d+)"', element)
        assert total is not None, element
        found.append((int(total.group(1)), int(window.group(1)) if window else None))
    return found


def over_by(html):
    return [int(n.replace(",", "")) for n in re.findall(r"over by ([\d,]+)", html)]


def long_input(session):
    """The session's input made longer than a small window (about 9,000 tokens)."""
    Session.objects.filter(pk=session.pk).update(current_input="lighthouse " * 9000)


def editor_page(client, world, query=""):
    response = client.get(f"/strategies/{world['own'].slug}/edit/?session={world['session'].pk}{query}")
    assert response.status_code == 200
    return response.content.decode()


# ---------------------------------------------------------------------------------------------- editor


def test_the_editor_offers_the_model_picker_with_tokenizer_and_exactness(world, users):
    html = editor_page(client_for(users["designer"]), world)
    picker = re.search(r'<select id="preview-model" name="model"[^>]*>(.*?)</select>', html, re.S).group(1)
    assert '<option value="" selected>' in picker
    assert '<option value="llama-3.1-8b-instruct">llama-3.1-8b-instruct · llama3 · exact</option>' in picker
    assert '<option value="claude">claude · cl100k_base · approximate</option>' in picker
    [(total, window)] = windows(html)
    assert total > 0 and window is None  # no model, no budget: the total stands alone


def test_the_editors_live_preview_counts_with_the_picked_model(world, users):
    client = client_for(users["designer"])
    html = editor_page(client, world, "&model=qwen2.5-7b-instruct")
    api = client.get(f"/api/sessions/{world['session'].pk}/preview?strategy={world['own'].slug}"
                     "&model=qwen2.5-7b-instruct").json()["tokens"]
    assert windows(html) == [(api["request_total"], 32_768)]
    assert f'{api["request_total"]} / 32,768 tokens billed by the API (with the chat framing), 1,024 reserved for the reply' in html
    assert '<option value="qwen2.5-7b-instruct" selected>' in html
    assert "(qwen2)" in html and 'data-model="qwen2.5-7b-instruct"' in html
    assert "model=qwen2.5-7b-instruct" in re.search(r'href="(/sessions/\d+/preview/[^"]+)"', html).group(1)


def test_an_unknown_model_in_the_editor_is_no_model(world, users):
    html = editor_page(client_for(users["designer"]), world, "&model=nope")
    assert windows(html)[0][1] is None and 'data-model=""' in html


def test_the_model_travels_with_the_editors_writes(world, users):
    client = client_for(users["designer"])
    strategy = world["own"]
    html = editor_page(client, world, "&model=mistral-nemo")
    assert 'type="hidden" name="model" value="mistral-nemo"' in html
    strategy.refresh_from_db()
    data = {"version": strategy.version, "session": world["session"].pk, "model": "mistral-nemo",
            "name": "Renamed", "backend": "native", "placement": "native-slots"}
    done = client.post(f"/strategies/{strategy.slug}/settings/", data)
    assert done.status_code == 303 and "model=mistral-nemo" in done["Location"]
    strategy.refresh_from_db()
    data["version"] = strategy.version
    answered = client.post(f"/strategies/{strategy.slug}/settings/", data, **HTMX).content.decode()
    assert windows(answered)[0][1] == 131_072 and 'data-model="mistral-nemo"' in answered


def test_the_editor_shows_over_by_for_a_small_window(world, users):
    long_input(world["session"])
    html = editor_page(client_for(users["designer"]), world, f"&model={SMALL_WINDOW_MODEL}")
    [(total, window)] = windows(html)
    assert window == 8192 and 'data-fits="false"' in html
    assert over_by(html) == [total + 1024 - 8192]


# ---------------------------------------------------------------------------------------------- compare


def compare_page(client, world, query=""):
    session = world["session"]
    response = client.get(f"/sessions/{session.pk}/compare/?a={world['own'].slug}&b=builtin-native-roles{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_compare_offers_the_model_picker_and_a_bar_per_side(world, users):
    client = client_for(users["qa"])
    html = compare_page(client, world)
    assert re.search(r'<select name="model"[^>]*>', html)
    assert '<option value="deepseek-chat">deepseek-chat · deepseek · exact</option>' in html
    assert [window for _total, window in windows(html)] == [None, None]
    html = compare_page(client, world, "&model=llama-3.1-8b-instruct")
    session = world["session"]
    totals = [client.get(f"/api/sessions/{session.pk}/preview?strategy={slug}&model=llama-3.1-8b-instruct")
              .json()["tokens"]["request_total"] for slug in (world["own"].slug, "builtin-native-roles")]
    assert windows(html) == [(totals[0], 131_072), (totals[1], 131_072)]
    assert 'id="window-title-A"' in html and 'id="window-title-B"' in html
    assert "model=llama-3.1-8b-instruct" in re.search(r'href="([^"]+)">Open its preview', html).group(1)


def test_compare_shows_over_by_for_a_small_window(world, users):
    long_input(world["session"])
    html = compare_page(client_for(users["qa"]), world, f"&model={SMALL_WINDOW_MODEL}")
    bars = windows(html)
    assert [window for _total, window in bars] == [8192, 8192]
    assert over_by(html) == [total + 1024 - 8192 for total, _window in bars]


# ---------------------------------------------------------------------------------------------- goldens


def test_goldens_offer_the_model_picker_and_a_bar_per_golden(world, users):
    client = client_for(users["qa"])
    html = client.get("/goldens/").content.decode()
    assert re.search(r'<select name="model"[^>]*>', html)
    golden = world["golden"]
    [(total, window)] = windows(html)
    assert window is None and total == golden.result["tokens"]["request_total"]
    assert f'id="window-title-{golden.pk}"' in html
    html = client.get("/goldens/?model=llama-3.1-8b-instruct").content.decode()
    api = client.get(f"/api/sessions/{world['session'].pk}/preview?strategy={world['own'].slug}"
                     f"&revision={world['revision'].revision}&model=llama-3.1-8b-instruct").json()["tokens"]
    assert windows(html) == [(api["request_total"], 131_072)]
    assert re.search(r'data-status="matches"', html)  # the model counts the bar, it does not change the check
    assert '<option value="llama-3.1-8b-instruct" selected>' in html


def test_goldens_show_over_by_for_a_small_window(world, users):
    long_input(world["session"])
    html = client_for(users["qa"]).get(f"/goldens/?model={SMALL_WINDOW_MODEL}").content.decode()
    [(total, window)] = windows(html)
    assert window == 8192 and over_by(html) == [total + 1024 - 8192]


def test_the_session_filter_travels_with_the_goldens_model_form(world, users):
    session = world["session"]
    html = client_for(users["qa"]).get(f"/goldens/?session={session.pk}").content.decode()
    form = re.search(r'<form method="get" class="model-form compare-form card"(.*?)</form>', html, re.S).group(1)
    assert f'type="hidden" name="session" value="{session.pk}"' in form


# ---------------------------------------------------------------------------------------------- wording


def test_the_module_panel_says_content_tokens_as_the_labelled_total_does(world, users):
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/preview/?model=gpt-4o").content.decode()
    assert "<td>content tokens</td>" in html and "<td>request total</td>" not in html
    total = re.search(r'data-message-tokens="(\d+)"', html).group(1)
    assert f'data-content-total="{total}"' in html


def test_the_editors_bar_reads_in_chinese(world, users):
    from django.utils import translation

    client = client_for(users["designer"])
    with translation.override("en"):  # the requests activate Chinese in this thread; leave it as it was
        client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/strategies/"})
        html = editor_page(client, world, "&model=llama-3.1-8b-instruct")
        preview = client.get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    assert "个为回复预留" in html and "精确" in html and "模型" in html
    assert "内容 token" in preview


def test_a_submitted_options_form_keeps_the_models_own_tokenizer(world, users):
    html = client_for(users["qa"]).get(
        f"/sessions/{world['session'].pk}/preview/?generation=&quiet_prompt=&model=llama-3.1-8b-instruct&tokenizer="
    ).content.decode()
    assert "(llama3)" in html and 'data-exact="true"' in html
    assert '<option value="" selected>— the model&#x27;s, else o200k_base —</option>' in html


def test_the_window_bar_says_what_set_the_window_in_one_phrase_spaced_as_its_language_writes(world, users):
    """The phrase is whole in each language, so the Chinese spaces the Latin word it names on both sides."""
    client = client_for(users["qa"])
    for language, source in (("en", "window from the SillyTavern preset&#x27;s context size"),
                             ("zh-hans", "窗口取自 SillyTavern 预设的上下文大小")):
        page = client.get(f"/sessions/{world['session'].pk}/compare/?a=applied&b=builtin-st",
                          HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert f"· {source}</span>" in page, language
