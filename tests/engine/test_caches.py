"""The engine's process-wide state (engine.md; assembly/caches.py): a few bounded, content-keyed caches in one module,
one eviction policy, one `clear_caches()`; no other module of the engine keeps a cache, and the engine stays in
modules of at most 600 lines and functions of at most 80."""

import ast
from pathlib import Path

from assembly import caches
from assembly.caches import Cache, clear_caches

ENGINE = Path(caches.__file__).resolve().parent
MEMO_DECORATORS = {"lru_cache", "cache", "cached_property"}


def _modules():
    return sorted(ENGINE.rglob("*.py"))


def test_a_full_cache_lets_its_oldest_entry_go_first():
    cache = Cache("test", 2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a read does not renew an entry
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (None, 2, 3, 2)


def test_a_value_is_computed_once_per_key():
    cache, calls = Cache("test", 4), []
    for _ in range(3):
        assert cache.computed("k", lambda: calls.append(1) or "v") == "v"
    assert calls == [1]


def test_clear_caches_empties_every_cache():
    for cache in caches.CACHES:
        cache.put(("test key",), "value")
    clear_caches()
    assert all(cache.get(("test key",)) is None for cache in caches.CACHES)


def test_the_engine_keeps_at_most_five_caches_all_in_one_module():
    declared = [value for value in vars(caches).values() if isinstance(value, Cache)]
    assert 1 <= len(declared) <= 5 and set(map(id, declared)) == set(map(id, caches.CACHES))
    for path in _modules():
        if path.name == "caches.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Cache":
                raise AssertionError(f"{path.relative_to(ENGINE)}:{node.lineno} makes a cache outside caches.py")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    name = getattr(target, "id", getattr(target, "attr", ""))
                    assert name not in MEMO_DECORATORS, f"{path.relative_to(ENGINE)}:{node.lineno} memoizes {name}"


def test_no_engine_module_over_600_lines_and_no_function_over_80():
    too_long = []
    for path in _modules():
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > 600:
            too_long.append(f"{path.relative_to(ENGINE)}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                too_long.append(f"{path.relative_to(ENGINE)}:{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert too_long == []
