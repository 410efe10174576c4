from __future__ import annotations

import time

import pytest

from advisor.errors import InputError
from advisor.yamlsrc import decode, load_documents


def one(text: str):
    (doc,) = load_documents(text, "f.yaml")
    return doc


def error(text: str) -> str:
    with pytest.raises(InputError) as exc:
        load_documents(text, "f.yaml")
    (problem,) = exc.value.problems
    return str(problem)


def test_positions_of_keys_and_values() -> None:
    doc = one("a: 1\nb:\n  c: [1, 2.5, x]\n  d: {e: null}\n")
    assert doc.data == {"a": 1, "b": {"c": [1, 2.5, "x"], "d": {"e": None}}}
    assert doc.key_pos[("b", "c")] == (3, 3)
    assert doc.value_pos[("b", "c", 2)] == (3, 15)
    assert doc.where(("b", "d", "e", "missing")) == (4, 10)


def test_scalars_are_plain_types() -> None:
    doc = one("i: 0x10\nf: 1.5e3\nb: yes\nn: ~\nd: 2026-12-31\ns: '1'\n")
    assert doc.data == {"i": 16, "f": 1500.0, "b": True, "n": None, "d": "2026-12-31", "s": "1"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\na: 2\n", "f.yaml:2:1: error: a: duplicate key 'a' (first defined at line 1, column 1)"),
        ("a: 1\na: '1'\n", "f.yaml:2:1: error: a: duplicate key 'a' (first defined at line 1, column 1)"),
        ("s:\n  r: {gpu: 1}\n  r: {gpu: 8}\n", "f.yaml:3:3: error: s.r: duplicate key 'r' (first defined at line 2, column 3)"),
        (
            "a: !!python/object/apply:os.system [x]\n",
            "f.yaml:1:4: error: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed (plain data only)",
        ),
        ("a: !custom 1\n", "f.yaml:1:4: error: YAML tag '!custom' is not allowed (plain data only)"),
        ("a: [1,\n", "f.yaml:2:1: error: invalid YAML: did not find expected node content"),
        ("base: &b {x: 1}\nc:\n  <<: *b\n", "f.yaml:3:3: error: merge keys (<<) are not supported"),
        ("? [a]\n: 1\n", "f.yaml:1:3: error: a mapping or list cannot be a mapping key"),
        ("a: *nope\n", "f.yaml:1:4: error: unknown alias *nope"),
    ],
)
def test_rejected(text: str, expected: str) -> None:
    assert error(text) == expected


def test_a_key_repeated_with_the_same_value_reads_the_same_either_way() -> None:
    """vllm-project/aibrix config/overlays/dev/gpu-optimizer/kustomization.yaml repeats its apiVersion line;
    whichever copy a parser keeps, the value is the same, so it is not refused (a different value is)."""
    assert one("apiVersion: v1\nkind: K\nb: {x: [1]}\napiVersion: v1\nb: {x: [1]}\n").data == {
        "apiVersion": "v1", "kind": "K", "b": {"x": [1]}}


def test_alias_bomb_is_cut_short() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    start = time.perf_counter()
    msg = error("\n".join(lines) + "\n")
    assert "alias expansion limit" in msg
    assert time.perf_counter() - start < 2


def test_deep_nesting_is_refused_without_recursion() -> None:
    msg = error("[" * 50_000 + "]" * 50_000)
    assert "nest" in msg


def test_multi_document() -> None:
    docs = load_documents("---\na: 1\n---\nb: 2\n", "f.yaml")
    assert [d.data for d in docs] == [{"a": 1}, {"b": 2}]
    assert docs[1].label == "f.yaml#2"


def test_bom_is_accepted_and_bad_utf8_located() -> None:
    assert decode(b"\xef\xbb\xbfa: 1\n", "f.yaml") == "a: 1\n"
    with pytest.raises(InputError) as exc:
        decode(b"a: 1\nb: \xff\n", "f.yaml")
    assert str(exc.value) == "f.yaml:2:4: error: not valid UTF-8 text"
    with pytest.raises(InputError) as exc:
        decode(b"a: \x00\n", "f.yaml")
    assert "NUL byte" in str(exc.value)
