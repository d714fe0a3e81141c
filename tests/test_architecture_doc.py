"""docs/architecture.md names code that exists: a function renamed or moved without the doc fails here.

Checked, by reading the sources with `ast` (nothing is imported):
- every backticked `module.name`, `Class.attr` and `path/to/file.py` in the module map (§1), the seeds and the
  "Rule -> where" table (§3), and in "How assemble() runs" (§2);
- in the engine's module table, every name in a row's "public names" column is defined in that row's modules;
- in §1 and §3, every other backticked identifier that looks like code (snake_case, CamelCase, UPPER_CASE) is
  defined somewhere in the packages, or is a string the code uses (a diagnostic code, a permission, a JSON key).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("assembly", "studio", "strategies_app", "preview_app")
DATA_SUFFIXES = {"json", "jsonl", "html", "js", "css", "po", "mo", "md", "txt", "png", "toml", "cfg"}

_TICKED = re.compile(r"`([^`]+)`")
_DOTTED = re.compile(r"[A-Za-z_][\w/]*(?:\.[A-Za-z_]\w*)+")
_CODE_WORD = re.compile(r"_?[a-z][a-z0-9]*(?:_[a-z0-9]+)+|_?[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


class Module:
    """What one source file defines: top-level names, and each class's own names (with those set on `self`)."""

    def __init__(self, path: Path):
        self.path = path
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.names: set[str] = set()
        self.classes: dict[str, set[str]] = {}
        for node in tree.body:
            self.names.update(_defined(node))
            if isinstance(node, ast.ClassDef):
                own = {n for child in node.body for n in _defined(child)}
                own |= {t.attr for t in ast.walk(node) if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)
                        and isinstance(t.value, ast.Name) and t.value.id == "self"}  # attributes set in methods
                self.classes[node.name] = own
        self.words: set[str] = set()  # every name, argument, attribute and string the file uses (not docstrings)
        prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.words.add(node.name)
            elif isinstance(node, ast.Name):
                self.words.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.words.add(node.attr)
            elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
                self.words.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
                self.words.add(node.value)
                self.words.update(re.findall(r"\w+", node.value))


def _defined(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):  # a package's __init__ re-exports
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


@cache
def modules() -> dict[str, Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[dotted.removesuffix(".__init__")] = Module(path)
    return found


def matching(part: str) -> list[str]:
    """Modules whose dotted name is `part` or ends with `.part`."""
    return [m for m in modules() if m == part or m.endswith("." + part)]


def file_modules(ref: str, near: str | None = None) -> list[str]:
    """The modules a `file.py` / `dir/file.py` reference names; a bare file name is looked for beside `near` first."""
    dotted = ref.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    if near is not None and "/" not in ref:
        sibling = (near.rsplit(".", 1)[0] + "." + dotted).removesuffix(".__init__")
        if sibling in modules():
            return [sibling]
    return matching(dotted)


def file_exists(ref: str) -> bool:
    """A path outside the packages (config/urls.py, bench/fixtures.py, templates/...) exists in the project."""
    if (ROOT / ref).exists():
        return True
    if "/" not in ref:
        return any(p for p in ROOT.glob(f"*/**/{ref}") if ".venv" not in p.parts and "node_modules" not in p.parts)
    return False


def resolve(ref: str) -> str | None:
    """None when `ref` names code that exists, else what is wrong."""
    parts = ref.split(".")
    if parts[-1] in DATA_SUFFIXES:
        return None if "/" not in ref or file_exists(ref) else "no such file"
    if parts[-1] == "py":
        return None if file_modules(ref) or file_exists(ref) else "no such module or file"
    parts = ref.replace("/", ".").split(".")
    if matching(".".join(parts)):
        return None  # a module itself
    for k in range(len(parts) - 1, 0, -1):
        found = matching(".".join(parts[:k]))
        if not found:
            continue
        rest = parts[k:]
        for name in found:
            module = modules()[name]
            if rest[0] not in module.names:
                continue
            if len(rest) == 1 or rest[0] not in module.classes or rest[1] in module.classes[rest[0]]:
                return None
        return f"{rest[0]!r} is not defined in {', '.join(found)}"
    owners = [m for m in modules().values() if parts[0] in m.classes]
    if owners and len(parts) == 2:
        return None if any(parts[1] in m.classes[parts[0]] for m in owners) else f"class {parts[0]} has no {parts[1]}"
    return "names no module or class"


def sections() -> dict[str, str]:
    """The doc's `## ` sections by title, and the rule table (`### Rule -> where`) on its own."""
    text = DOC.read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for chunk in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = chunk.partition("\n")
        out[title.strip()] = body
    seeds = out[next(t for t in out if t.startswith("3."))]
    out["rules"] = seeds.split("### Rule -> where", 1)[1]
    return out


def checked_sections() -> dict[str, str]:
    found = sections()
    return {title: body for title, body in found.items() if title[:2] in ("1.", "2.", "3.")}


def dotted_refs(text: str) -> list[str]:
    """Backticked texts that are one dotted name or one path (`a.b`, `a.b()`, `dir/file.py`)."""
    return [t.removesuffix("()") for t in _TICKED.findall(text) if _DOTTED.fullmatch(t.removesuffix("()"))]


def test_the_checked_sections_exist():
    found = checked_sections()
    assert len(found) == 3, sorted(found)
    assert "| rule | where |" in sections()["rules"]


def test_every_dotted_reference_resolves():
    bad = []
    for title, body in checked_sections().items():
        for ref in dotted_refs(body):
            problem = resolve(ref)
            if problem:
                bad.append(f"§{title[:2]} `{ref}`: {problem}")
    assert not bad, "\n".join(sorted(set(bad)))


def engine_rows() -> list[tuple[str, str]]:
    """(modules cell, public names cell) of each row of the engine's module table."""
    body = sections()[next(t for t in sections() if t.startswith("1."))]
    table = body.split("| module | what it owns | public names |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 3, line
        rows.append((cells[0], cells[2]))
    return rows


def test_engine_table_names_are_defined_in_their_row():
    bad = []
    for files, names in engine_rows():
        row_modules: list[str] = []
        for ref in _TICKED.findall(files):
            found = file_modules(f"assembly/{ref}" if "/" in ref else ref,
                                 near=row_modules[-1] if row_modules else "assembly.x")
            assert found, f"module cell {files}: `{ref}` is no module of assembly/"
            row_modules.append(found[0])
        defined = set().union(*(modules()[m].names | {n for c in modules()[m].classes.values() for n in c}
                                for m in row_modules))
        for ticked in _TICKED.findall(names):
            name = ticked.removesuffix("()")
            if "." in name or not re.fullmatch(r"\w+", name):
                continue  # dotted ones are checked by test_every_dotted_reference_resolves
            if name not in defined:
                bad.append(f"{files}: `{name}` is not defined there")
    assert not bad, "\n".join(bad)


def test_code_words_in_map_and_rules_exist():
    everywhere = set().union(*(m.words for m in modules().values()))
    everywhere |= {name.rsplit(".", 1)[-1] for name in modules()}
    commands = ROOT / "preview_app" / "management" / "commands"
    everywhere |= {p.stem for p in commands.glob("*.py")}
    for path in [*(ROOT / "config").glob("*.py"), ROOT / "Makefile", ROOT / ".ci" / "run"]:  # settings, variables
        everywhere |= set(re.findall(r"\w+", path.read_text(encoding="utf-8")))
    bad = []
    for title, body in checked_sections().items():
        if not title.startswith(("1.", "3.")):
            continue
        for ticked in _TICKED.findall(body):
            word = ticked.strip().removesuffix("()")
            if _CODE_WORD.fullmatch(word) and word not in everywhere:
                bad.append(f"§{title[:2]} `{word}`")
    assert not bad, "\n".join(sorted(set(bad)))


def test_a_renamed_function_is_caught():
    assert resolve("sillytavern.steps.inject_in_chat") is None
    assert resolve("steps.inject_in_chat") is None
    assert resolve("steps.inject_into_chat") is not None
    assert resolve("st_parity.inject_in_chat") is not None
    assert resolve("AssemblyResult.regex_changes") is None
    assert resolve("config/urls.py") is None
    assert resolve("assembly/resources.py") is not None


def test_the_map_stays_a_map_under_400_lines():
    assert len(DOC.read_text(encoding="utf-8").splitlines()) < 400
