"""The goldens' result diffs (web.md screen 5): equal documents answer at once; the page's part diff names each
differing part (a top-level key, one request message, one field of it) and is bounded; the full unified diff (`goldens
check`, the API) is the one difflib gives over the whole indented documents."""

import difflib
import json
import re

import pytest

from preview_app import json_diff, services
from preview_app.goldens import golden_status
from preview_app.json_diff import documents_equal, full_diff, part_diff
from preview_app.models import GoldenSnapshot
from tests.web.conftest import client_for


def _message(i, content=None):
    return {"role": "user" if i % 2 == 0 else "assistant", "content": content or f"Message {i}: the road bends.",
            "parts": [f"history:m{i}"], "delivery": "in-context"}


def _result(size=6, **changes):
    messages = [_message(i) for i in range(size)]
    document = {"ok": True, "request": {"messages": messages}, "tokens": {"total": size * 9}, "diagnostics": []}
    for key, value in changes.items():
        document[key] = value
    return document


def _with(document, index, **fields):
    changed = json.loads(json.dumps(document))
    changed["request"]["messages"][index].update(fields)
    return changed


def _inserted(document, index, message):
    changed = json.loads(json.dumps(document))
    changed["request"]["messages"].insert(index, message)
    return changed


def _removed_key(document, key):
    return {k: v for k, v in document.items() if k != key}


BASE = _result()
LABELS = ("approved", "now")

# (name, after, the parts' headers, lines added, lines removed)
CASES = [
    ("equal", json.loads(json.dumps(BASE)), [], [], []),
    ("one message changed", _with(BASE, 2, content="Changed."),
     ["@@ request.messages[2].content @@"], ['+"Changed."'], ['-"Message 2: the road bends."']),
    ("one message inserted", _inserted(BASE, 3, _message(99, "Inserted.")),
     ["@@ request.messages[3] @@"], ["+{", '+  "content": "Inserted.",', '+  "delivery": "in-context",',
                                     '+  "parts": [', '+    "history:m99"', "+  ],", '+  "role": "assistant"', "+}"], []),
    ("two messages changed", _with(_with(BASE, 0, role="system"), 5, content="Last."),
     ["@@ request.messages[0].role @@", "@@ request.messages[5].content @@"], ['+"system"', '+"Last."'],
     ['-"user"', '-"Message 5: the road bends."']),
    ("a message removed", {**BASE, "request": {"messages": BASE["request"]["messages"][:4] + BASE["request"]["messages"][5:]}},
     ["@@ request.messages[4] @@"], [], ["-{", '-  "content": "Message 4: the road bends.",', '-  "delivery": "in-context",',
                                         '-  "parts": [', '-    "history:m4"', "-  ],", '-  "role": "user"', "-}"]),
    ("a key added", _result(extra={"note": "new"}),
     ["@@ extra @@"], ["+{", '+  "note": "new"', "+}"], []),
    ("a key removed", _removed_key(BASE, "diagnostics"), ["@@ diagnostics @@"], [], ["-[]"]),
    ("a number changed", _result(tokens={"total": 1}),
     ["@@ tokens.total @@"], ["+1"], ["-54"]),
]


@pytest.mark.parametrize(("name", "after", "headers", "added", "removed"), CASES, ids=[c[0] for c in CASES])
def test_part_diff_names_each_differing_part(name, after, headers, added, removed):
    diff = part_diff(BASE, after, LABELS)
    assert documents_equal(BASE, after) is (name == "equal")
    if name == "equal":
        assert (diff.lines, diff.more, bool(diff)) == ([], 0, False)
        return
    assert diff.lines[:2] == ["--- approved", "+++ now"] and diff.more == 0
    assert [line for line in diff.lines if line.startswith("@@")] == headers
    changed = [line for line in diff.lines[2:] if line.startswith(("+", "-"))]
    assert [line for line in changed if line.startswith("+")] == added
    assert [line for line in changed if line.startswith("-")] == removed


@pytest.mark.parametrize(("name", "after"), [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_full_diff_is_difflibs_over_the_whole_documents(name, after):
    """Trimming the common head and tail changes nothing in the answer, hunk numbers included."""
    def lines(document):
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    expected = list(difflib.unified_diff(lines(BASE), lines(after), *LABELS, lineterm=""))
    assert full_diff(BASE, after, LABELS) == expected
    assert bool(expected) is (name != "equal")


def test_one_changed_message_of_five_thousand_is_one_small_part():
    big = _result(5000)
    changed = _with(big, 4321, content="Now different.")
    diff = part_diff(big, changed, LABELS)
    assert [line for line in diff.lines if line.startswith("@@")] == ["@@ request.messages[4321].content @@"]
    assert len(diff.lines) == 5 and diff.more == 0
    full = full_diff(big, changed, LABELS)
    assert [line for line in full if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))] == [
        '-        "content": "Message 4321: the road bends.",', '+        "content": "Now different.",']
    hunk = re.match(r"@@ -(\d+),7 \+(\d+),7 @@", full[2])
    assert hunk and hunk.group(1) == hunk.group(2) and int(hunk.group(1)) > 4321 * 8


def test_a_long_diff_is_bounded_and_counts_the_parts_left_out():
    """300 messages changed: 300 parts of 3 lines; at 50 lines the page shows the first 16 parts (the 17th cut
    short) and counts the other parts without diffing them."""
    after = _result(300)
    for message in after["request"]["messages"]:
        message["content"] = "All new."
    diff = part_diff(_result(300), after, LABELS, limit=50)
    whole = part_diff(_result(300), after, LABELS, limit=10_000)
    assert (whole.parts, whole.more, len(whole.lines)) == (300, 0, 2 + 300 * 3)
    assert len(diff.lines) == 50 and diff.lines == whole.lines[:50]
    assert (diff.parts, diff.more) == (300, 300 - 16)


def test_a_replaced_run_of_another_length_is_paired_then_the_rest():
    """Every message rewritten and one fewer: pairs in place, then the one left over as removed."""
    after = json.loads(json.dumps(BASE))
    after["request"]["messages"] = [{**m, "content": "New."} for m in after["request"]["messages"][:5]]
    diff = part_diff(BASE, after, LABELS)
    assert [line for line in diff.lines if line.startswith("@@")] == [
        *(f"@@ request.messages[{i}].content @@" for i in range(5)), "@@ request.messages[5] @@"]


def test_the_page_shows_the_bounded_diff_and_the_note(world, users, monkeypatch):
    services.event_append(session=world["session"], role="assistant", content="A new reply.", name="")
    status = golden_status(GoldenSnapshot.objects.get(pk=world["golden"].pk))
    assert status.status == "differs" and len(status.page_diff.lines) > 6 and status.page_diff.parts > 1
    monkeypatch.setattr(json_diff, "PAGE_LINES", 6)
    bounded = part_diff(status.approved.before, status.fresh, LABELS, limit=6)
    html = client_for(users["qa"]).get("/goldens/").content.decode()
    shown = re.search(r'<pre class="unified-diff">(.*?)</pre>', html, re.S).group(1)
    assert shown.count("<span") == 6 and bounded.more > 0
    assert f'data-diff-more="{bounded.more}"' in html
    assert re.search(rf"{bounded.more} changed parts? not shown in full\.", html)
    assert re.search(rf"Result JSON diff \({bounded.parts} changed parts?\)", html)


def test_the_check_command_and_the_api_give_the_full_diff(world, users):
    services.event_append(session=world["session"], role="assistant", content="A new reply.", name="")
    golden = GoldenSnapshot.objects.get(pk=world["golden"].pk)
    status = golden_status(golden)
    expected = full_diff(golden.result, status.fresh, LABELS)
    assert status.diff == expected and any("A new reply." in line for line in expected)
    rows = client_for(users["qa"]).get("/api/goldens").json()
    row = rows[0] if isinstance(rows, list) else rows["goldens"][0]
    assert (row["status"], row["diff"]) == ("differs", expected)
