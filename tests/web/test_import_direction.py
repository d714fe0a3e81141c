"""The apps' imports run one way: preview_app may use strategies_app (its models, selectors, access), never the
reverse; the studio core imports neither app. Checked on the source with ast, so a lazy import inside a function
counts too."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize(("package", "forbidden"), [("strategies_app", ("preview_app",)),
                                                    ("studio", ("preview_app", "strategies_app"))])
def test_package_never_imports(package, forbidden):
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = sorted(m for m in _imported_modules(path) if m.split(".")[0] in forbidden)
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_check_sees_imports():
    # the walk itself works: preview_app does import strategies_app
    assert any("strategies_app.models" in _imported_modules(path) for path in (ROOT / "preview_app").rglob("*.py"))


def test_preview_app_provides_the_sessions_strategy_pages_preview_on():
    from preview_app.strategy_sessions import StrategySessions
    from strategies_app.session_previews import session_previews

    assert isinstance(session_previews(), StrategySessions)
