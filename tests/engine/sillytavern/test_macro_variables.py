"""SillyTavern's variable store (variables.js) as the macros read and change it: numbers when a value reads as one,
addvar adding numbers, joining text, or appending to a JSON array."""

import pytest

from assembly.sillytavern.macro_variables import MacroVariables, js_variable_value, parse_macro_variables


@pytest.mark.parametrize(("stored", "read"), [
    ("5", 5), ("1e3", 1000), ("0x10", 16), (" ", 0), ("", ""), ("abc", "abc"), (None, ""), (2.5, 2.5),
    ([1, "a"], '[1,"a"]'), ({"k": 1}, '{"k":1}'),
])
def test_a_value_reads_as_getLocalVariable_returns_it(stored, read):
    assert js_variable_value(stored) == read


@pytest.mark.parametrize(("start", "added", "after"), [
    (None, "2", 2), ("5", "2", 7), ("5", "x", "5x"), ("ab", "cd", "abcd"), ('["a"]', "b", '["a","b"]'),
    ("1.5", "-0.5", 1), (None, "text", "text"),
])
def test_addvar(start, added, after):
    variables = MacroVariables(local={} if start is None else {"v": start})
    variables.add("v", added)
    assert variables.local["v"] == after


def test_scopes_are_apart():
    variables = MacroVariables()
    variables.set("x", "local")
    variables.set("x", "global", is_global=True)
    assert (variables.get("x"), variables.get("x", is_global=True)) == ("local", "global")
    variables.delete("x")
    assert not variables.has("x") and variables.has("x", is_global=True)


@pytest.mark.parametrize("bad", [[], "x", {"local": []}, {"other": {}}, {"global": {"": 1}}])
def test_a_bad_request_value_is_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="macro_variables"):
        parse_macro_variables(bad)


def test_a_value_longer_than_the_bound_is_refused_in_either_scope():
    from assembly.errors import AssemblyError
    from assembly.sillytavern.macro_variables import MAX_MACRO_TEXT_CHARS

    variables = MacroVariables()
    variables.set("fits", "x" * MAX_MACRO_TEXT_CHARS)
    for is_global, macro in ((False, "setvar"), (True, "setglobalvar")):
        with pytest.raises(AssemblyError) as refused:
            variables.set("long", "x" * (MAX_MACRO_TEXT_CHARS + 1), is_global=is_global)
        assert refused.value.code == "ASSEMBLY_TOO_LARGE" and refused.value.detail["macro"] == macro
    with pytest.raises(AssemblyError) as refused:
        variables.add("fits", "y")  # addvar joins the text past the bound
    assert refused.value.detail["macro"] == "addvar"
    assert variables.snapshot()["global"] == {} and len(variables.get("fits")) == MAX_MACRO_TEXT_CHARS
