"""The preview's request options: the generation type (SillyTavern sends other prompts for continue, impersonate and
quiet generations), the tokenizer, and how they travel with the strategy picker, the budget form and the exports."""

import re

import pytest

from tests.web.conftest import client_for

IMPERSONATION_START = "[Write your next reply from the point of view of"  # SillyTavern's default impersonation_prompt


def preview(client, session, query):
    return client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st&{query}")


def test_an_impersonation_preview_sends_the_impersonation_prompt(world, users):
    session, client = world["session"], client_for(users["qa"])
    normal = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()
    assert all(IMPERSONATION_START not in m["content"] for m in normal["request"]["messages"])
    api = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st&generation=impersonate").json()
    last = api["request"]["messages"][-1]
    assert last["role"] == "system" and last["content"].startswith(IMPERSONATION_START)
    html = preview(client, session, "generation=impersonate").content.decode()
    assert 'data-generation="impersonate"' in html and "impersonate generation" in html
    assert IMPERSONATION_START in html


def test_a_quiet_preview_sends_the_quiet_prompt_last(world, users):
    session, client = world["session"], client_for(users["qa"])
    api = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st&generation=quiet"
                     "&quiet_prompt=Summarize+the+scene.").json()
    assert api["request"]["messages"][-1]["content"] == "Summarize the scene."


def test_the_tokenizer_option_counts_with_the_chosen_encoding(world, users):
    session, client = world["session"], client_for(users["qa"])
    default = client.get(f"/api/sessions/{session.pk}/preview").json()
    cl100k = client.get(f"/api/sessions/{session.pk}/preview?tokenizer=cl100k_base").json()
    assert (default["tokens"]["tokenizer"], cl100k["tokens"]["tokenizer"]) == ("o200k_base", "cl100k_base")
    html = client.get(f"/sessions/{session.pk}/preview/?tokenizer=cl100k_base").content.decode()
    assert f'data-content-total="{cl100k["tokens"]["total"]}"' in html  # the one labelled total
    assert f'{cl100k["tokens"]["request_total"]} tokens billed by the API (cl100k_base, with its chat framing)' in html


def test_options_travel_with_the_picker_the_budget_form_and_the_exports(world, users):
    session, client = world["session"], client_for(users["qa"])
    html = preview(client, session, "generation=continue&context_window=5000").content.decode()
    forms = dict(re.findall(r'<form method="get" class="([^"]+)"(.*?)</form>', html, re.S))
    assert 'type="hidden" name="generation" value="continue"' in forms["budget-form"]
    assert 'type="hidden" name="context_window" value="5000"' in forms["options-form"]
    assert 'type="hidden" name="generation" value="continue"' in forms["picker"]
    assert "generation=continue" in re.search(r'href="([^"]+result\.json[^"]*)"', html).group(1)
    picked = client.get(f"/sessions/{session.pk}/preview/?pick=builtin-st&generation=continue")
    assert picked.status_code == 302 and "generation=continue" in picked["Location"]
    exported = client.get(f"/sessions/{session.pk}/preview/result.json?strategy=builtin-st&tokenizer=cl100k_base")
    assert exported.json()["tokens"]["tokenizer"] == "cl100k_base"


@pytest.mark.parametrize(("query", "field", "expected"), [
    ("generation=reroll", "generation", "one of normal, continue, impersonate, swipe, regenerate, quiet"),
    ("tokenizer=gpt2", "tokenizer",
     "one of o200k_base, cl100k_base, llama3, mistral-tekken, mistral-v3, qwen2, deepseek"),
    ("context_window=-3", "context_window", "a whole number of tokens from 1 to 100000000"),
    ("context_window=99999999999999999999", "context_window", "a whole number of tokens from 1 to 100000000"),
    ("reserve_output=100000001&context_window=5", "reserve_output", "a whole number of tokens from 0 to 100000000"),
])
def test_a_bad_option_is_refused_naming_the_field(world, users, query, field, expected):
    session, client = world["session"], client_for(users["qa"])
    api = client.get(f"/api/sessions/{session.pk}/preview?{query}")
    assert api.status_code == 400
    assert api.json()["detail"] == {"path": field, "expected": expected}
    exported = client.get(f"/sessions/{session.pk}/preview/result.json?{query}")
    assert exported.status_code == 400 and exported.json()["detail"]["path"] == field
    page = client.get(f"/sessions/{session.pk}/preview/?{query}")
    assert page.status_code == 400
    group = re.search(rf'<div class="field[^"]*">(?:(?!<div class="field).)*id="id_{field}"', page.content.decode(),
                      re.S)
    assert group is not None and "errorlist" in group.group(0)
    # the top of the page says the preview shown leaves the options out; the projection says why it has none
    assert "data-options-invalid" in page.content.decode() and "This preview leaves every option out" in (
        page.content.decode())
    projection = client.get(f"/sessions/{session.pk}/preview/projection/?{query}")
    assert "No projection: an option of the preview is not valid" in projection.content.decode()


def test_compare_runs_both_sides_with_the_same_options(world, users):
    session, client = world["session"], client_for(users["qa"])
    base = f"/sessions/{session.pk}/compare/?a=builtin-st&b=builtin-st"
    plain = client.get(base).content.decode()
    assert "Both send exactly the same messages." in plain and IMPERSONATION_START not in plain
    html = client.get(base + "&generation=impersonate&tokenizer=cl100k_base").content.decode()
    assert IMPERSONATION_START in html and "cl100k_base" in html
    assert re.search(r'<option value="impersonate" selected>', html)
    bad = client.get(base + "&generation=reroll")
    assert bad.status_code == 400 and "errorlist" in bad.content.decode()
    # the preview's compare link carries the options (not the budget: compare has none)
    page = preview(client, session, "generation=continue&context_window=5000").content.decode()
    link = re.search(r'href="(/sessions/\d+/compare/[^"]+)"', page).group(1)
    assert "generation=continue" in link and "context_window" not in link


def test_the_request_options_come_before_the_request_messages(world, users):
    """A long request would push the options far down the side column: they sit above the request instead,
    folded until an option is set."""
    session, client = world["session"], client_for(users["qa"])
    html = preview(client, session, "").content.decode()
    assert html.index('id="options-title"') < html.index('id="request-title"')
    assert "data-request-options>" in html  # folded: no option is set
    html = preview(client, session, "generation=continue").content.decode()
    assert "data-request-options open>" in html


def test_start_reply_with_is_sent_as_the_last_assistant_message(world, users):
    """engine.md §1 `generation.start_reply_with`: SillyTavern's Start Reply With, its macros filled in."""
    session, client = world["session"], client_for(users["qa"])
    api = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st"
                     "&start_reply_with=%7B%7Bchar%7D%7D+smiles,").json()
    last = api["request"]["messages"][-1]
    assert (last["role"], last["content"]) == ("assistant", "Ada smiles,")  # the world's card is Ada
    html = preview(client, session, "start_reply_with=Softly,").content.decode()
    forms = dict(re.findall(r'<form method="get" class="([^"]+)"(.*?)</form>', html, re.S))
    assert 'name="start_reply_with"' in forms["options-form"] and 'value="Softly,"' in forms["options-form"]
    assert 'type="hidden" name="start_reply_with" value="Softly,"' in forms["budget-form"]


def test_applying_the_eviction_plan_leaves_out_what_it_drops(world, users):
    """engine.md §8: with `apply` the plan is applied and the request leaves the dropped items out."""
    session, client = world["session"], client_for(users["qa"])
    base = f"/api/sessions/{session.pk}/preview?strategy=builtin-st&context_window=15&reserve_output=0"
    planned, applied = client.get(base).json(), client.get(base + "&apply_budget=on").json()
    plan = planned["budget"]["eviction_plan"]
    assert plan and planned["budget"]["applied"] is False and applied["budget"]["applied"] is True
    sent = {m["id"] for m in applied["request"]["messages"]}
    planned_sent = {m["id"] for m in planned["request"]["messages"]}
    assert sent < planned_sent
    assert applied["budget"]["total_after"] < planned["budget"]["total"]
    html = preview(client, session, "context_window=15&reserve_output=0&apply_budget=on").content.decode()
    assert "Applied: the request above already leaves these out" in html
    forms = dict(re.findall(r'<form method="get" class="([^"]+)"(.*?)</form>', html, re.S))
    assert 'type="hidden" name="apply_budget" value="on"' in forms["options-form"]
    assert re.search(r'<input type="checkbox" name="apply_budget"[^>]*checked', forms["budget-form"])
