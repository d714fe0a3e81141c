"""The editor's placement controls and the preview's diagnostics show what dsh-prompt-assembler itself answered
(quality.md, Fidelity).

Each case of the dsh oracle (`../shared/oracle/dsh/cases.json`, read here, never copied) becomes studio data through
the services, as a designer would bring it in: the strategy document imported, the preset, character, persona and
world book imported, a session with the case's host, history and input. The pages are then read as HTML and held
against the oracle's expected answer: every placement control (rule id and control) on the editor, the runtime
contexts the preview session sends, and the diagnostic codes (or the refusal's code) on the preview page.
"""

import json
import os
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from assembly.catalogue import CONTEXT_CONTROL_KINDS
from assembly.strategy import StrategyError, normalize_strategy, stated_placement
from preview_app import services as session_services
from strategies_app import services as strategy_services
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook
from tests.web.conftest import client_for

SHARED = Path(os.environ.get("PAS_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))
CASES_FILE = SHARED / "oracle" / "dsh" / "cases.json"
ADAPTIVE = ("native-roles", "native-slots")
# The words each control reads as on the editor (the badge), so a class alone cannot pass for the right text.
CONTROL_WORDS = {"preset": "placed by preset slots", "native": "conversation: the host places it",
                 "mixed": "partly placed by preset slots", "independent": "placed by rule order",
                 "empty": "no output in this preview"}


def _cases() -> list[dict]:
    assert CASES_FILE.is_file(), f"the dsh oracle {CASES_FILE} is missing; set PAS_SHARED to the shared folder"
    return json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def _placement(case: dict) -> str | None:
    document = case["request"]["strategy"]
    return None if isinstance(document, str) else normalize_strategy(document)["placement"]


def library_codes(diagnostics: list[dict]) -> list[str]:
    """The library's codes as its checker reads them (../shared/oracle/dsh/check.py): a capability note of its
    preview and the plugin-only runtime-context sources are not assembly."""
    return sorted(d["code"] for d in diagnostics if d["code"] != "SYSTEM_UPDATE_CAPABILITY_UNVERIFIED" and not (
        d["code"] == "ASSEMBLY_SOURCE_UNAVAILABLE" and str(d.get("sourceId", "")).startswith("dsh.")
        and d.get("sourceId") != "dsh.text"))


def _studio_reproducible(case: dict) -> bool:
    """The studio stores a strategy normalized, so a document whose own placement its layout replaced runs as the
    normalized one (assembly.strategy.stated_placement); such a document, and a refusal without a code (the
    library's TypeErrors: the import refuses those), cannot be brought in unchanged."""
    request, expected = case["request"], case["expected"]
    document = request["strategy"]
    if not expected["ok"] and not expected["error"].get("code"):
        return False
    if isinstance(document, dict):
        try:
            normalized = normalize_strategy(document)
        except StrategyError:  # refused on import: not a page matter
            return False
        if stated_placement(document, normalized) != normalized["placement"]:
            return False
    return len(request["conversation"]["input"]) <= 1 and all(
        m["role"] == "user" for m in request["conversation"]["input"])


def covering_cases() -> list[dict]:
    """In id order: the first case for every (placement, control) pair the library reported, for every diagnostic
    code it reported, for every refusal code, and the first case of each built-in strategy."""
    chosen: dict[str, dict] = {}
    seen: set[tuple] = set()
    for case in _cases():
        if not _studio_reproducible(case):
            continue
        expected, document = case["expected"], case["request"]["strategy"]
        if expected["ok"]:
            placement = _placement(case) or document
            wants = {("control", placement, c["control"]) for c in expected.get("placement_controls") or []}
            wants |= {("code", code) for code in library_codes(expected["diagnostics"])}
        else:
            wants = {("refusal", expected["error"]["code"])}
        if isinstance(document, str):
            wants.add(("builtin", document))
        if wants - seen:
            seen |= wants
            chosen[case["id"]] = case
    return list(chosen.values())


CHOSEN = covering_cases()


def studio_data(case: dict, user) -> tuple[Strategy, object]:
    """The case as a designer's studio data, through the services."""
    request = case["request"]
    resources = request["resources"]
    document = request["strategy"]
    if isinstance(document, str):
        strategy = Strategy.objects.get(slug=document)
    else:
        report = strategy_services.strategy_import(user=user, document={**document, "id": f"oracle-{case['id']}"})
        strategy = Strategy.objects.get(slug=report.id)
    chosen = {}
    if "preset" in resources:
        chosen["preset"] = Preset.objects.get(pk=strategy_services.preset_import(
            user=user, data=resources["preset"], name="Oracle preset").id)
    if "character" in resources:
        chosen["character"] = Character.objects.get(pk=strategy_services.character_import(
            user=user, data=resources["character"]).id)
    if "persona" in resources:
        chosen["persona"] = Persona.objects.get(pk=strategy_services.persona_import(
            user=user, data=resources["persona"]).id)
    books, activation = [], "book"
    if "worldbook" in resources:
        book = dict(resources["worldbook"])
        activation = book.pop("activation", "book")  # a session setting in the studio, not part of the book
        books.append(WorldBook.objects.get(pk=strategy_services.worldbook_import(
            user=user, data=book, name="Oracle world book").id))
    inputs = request["conversation"]["input"]
    session = session_services.session_create(
        user=user, name=f"Oracle {case['id']}", host=request.get("host") or {},
        current_input=inputs[0]["content"] if inputs else "", world_books=books, world_info_activation=activation,
        **chosen)
    for message in request["conversation"]["history"]:
        session_services.event_append(
            session=session, role=message["role"], content=message.get("content") or "",
            name=message.get("name", ""), source=message.get("source"), tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id", ""))
    return strategy, session


class _Page(HTMLParser):
    """What the two pages say about controls and diagnostics, read from their markup."""

    def __init__(self, html: str):
        super().__init__()
        self.controls: dict[str, tuple[str, str, str]] = {}  # rule id or context kind -> (class, words, title)
        self.contexts: list[tuple[str, bool]] = []
        self.codes: Counter[str] = Counter()
        self.refusal: str | None = None
        self._owner: str | None = None  # the row (or switch) being read
        self._badge: str | None = None
        self._words = self._title = ""
        self._code: str | None = None
        self._times = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "li" and (a.get("id") or "").startswith("rule-row-"):
            self._owner = a["id"].removeprefix("rule-row-")
        elif tag == "li" and "data-control" in a:
            self._owner = a["data-control"]
        elif tag == "li" and "data-code" in a:
            self._code = a["data-code"]
            self.codes[self._code] += 1
        elif tag == "span" and self._owner is not None and any(c.startswith("control-") for c in classes):
            self._badge = next(c.removeprefix("control-") for c in classes if c.startswith("control-"))
            self._words, self._title = "", a.get("title") or ""
        elif tag == "span" and "muted" in classes and self._code is not None:
            self._times = True
        elif tag == "div" and "refusal" in classes:
            self.refusal = a.get("data-code")
        elif tag == "code" and "data-context" in a:
            self.contexts.append((a["data-context"], a.get("data-sent") == "true"))

    def handle_endtag(self, tag):
        if tag == "span" and self._badge is not None:
            assert self._owner not in self.controls, f"two controls shown for {self._owner}"
            self.controls[self._owner] = (self._badge, " ".join(self._words.split()), self._title)
            self._badge = None
        elif tag == "span":
            self._times = False
        elif tag == "li":
            self._owner = self._code = None

    def handle_data(self, data):
        if self._badge is not None:
            self._words += data
        elif self._times and self._code is not None and data.strip().startswith("×"):
            self.codes[self._code] += int(data.strip().removeprefix("×")) - 1
            self._times = False


def _kinds(case: dict) -> dict[str, str]:
    document = case["request"]["strategy"]
    if isinstance(document, str):
        return {r["id"]: r["kind"] for r in Strategy.objects.get(slug=document).draft["rules"]}
    return {r["id"]: r["kind"] for r in document["rules"]}


def test_the_chosen_cases_cover_every_control_in_both_adaptive_placements_every_code_and_refusals():
    pairs = {(_placement(c) or c["request"]["strategy"], p["control"])
             for c in CHOSEN if c["expected"]["ok"] for p in c["expected"].get("placement_controls") or []}
    assert {control for _, control in pairs} == set(CONTROL_WORDS)
    assert {"native-slots" if "slots" in placement else "native-roles" for placement, _ in pairs} == set(ADAPTIVE)
    codes = {code for c in CHOSEN if c["expected"]["ok"] for code in library_codes(c["expected"]["diagnostics"])}
    every = {code for c in _cases() if c["expected"]["ok"] and _studio_reproducible(c)
             for code in library_codes(c["expected"]["diagnostics"])}
    assert codes == every
    assert {"NATIVE_ROLE_ADJUSTED", "NATIVE_DEPTH_BOUNDARY", "LAYOUT_DUPLICATE_SLOT", "UNSUPPORTED_MACRO"} <= codes
    assert len({c["expected"]["error"]["code"] for c in CHOSEN if not c["expected"]["ok"]}) >= 3
    contexts = [ctx for c in CHOSEN for ctx in c["expected"].get("runtime_context_controls") or []]
    assert {ctx["enabled"] for ctx in contexts} == {True, False}


@pytest.mark.parametrize("case", [c for c in CHOSEN if c["expected"]["ok"] and c["expected"].get("placement_controls")],
                         ids=lambda c: c["id"])
def test_the_editor_shows_the_librarys_placement_controls(case, users):
    strategy, session = studio_data(case, users["designer"])
    response = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={session.pk}")
    assert response.status_code == 200
    page = _Page(response.content.decode())
    expected = {c["ruleId"]: c["control"] for c in case["expected"]["placement_controls"]}
    kinds = _kinds(case)
    # A runtime-context rule is shown as its switch (by kind), every other rule as its row in the module list.
    shown = {rule_id: page.controls.get(kinds[rule_id] if kinds[rule_id] in CONTEXT_CONTROL_KINDS else rule_id)
             for rule_id in expected}
    assert {rule_id: shown_control and shown_control[0] for rule_id, shown_control in shown.items()} == expected
    assert {rule_id: shown_control[1] for rule_id, shown_control in shown.items()} == {
        rule_id: CONTROL_WORDS[control] for rule_id, control in expected.items()}
    # A module row's badge says how many of the rule's text blocks slots hold and how many stand free.
    assert {rule_id: page.controls[rule_id][2] for rule_id in expected if kinds[rule_id] not in CONTEXT_CONTROL_KINDS} == {
        c["ruleId"]: f"{c['owned']} held by slots, {c['independent']} free"
        for c in case["expected"]["placement_controls"] if kinds[c["ruleId"]] not in CONTEXT_CONTROL_KINDS}
    rtc = case["expected"].get("runtime_context_controls") or []
    assert page.contexts == [(c["name"], c["enabled"]) for c in rtc]


@pytest.mark.parametrize("case", CHOSEN, ids=lambda c: c["id"])
def test_the_preview_shows_the_librarys_diagnostic_codes_or_its_refusal(case, users):
    strategy, session = studio_data(case, users["designer"])
    response = client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/?strategy={strategy.slug}")
    page = _Page(response.content.decode())
    expected = case["expected"]
    if expected["ok"]:
        assert response.status_code == 200
        assert page.refusal is None
        assert sorted(page.codes.elements()) == library_codes(expected["diagnostics"])
    else:
        assert response.status_code == expected["error"]["status"]
        assert page.refusal == expected["error"]["code"]
