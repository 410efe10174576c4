"""Text output fits the width: COLUMNS on a terminal and off one (else 100 columns), every table of
`recommend` (compact and --explain), `check`, `catalog` and `rules list`; prose wraps, long words
and URLs fold, numbers are never cut. The default `recommend` is compact: at most 40 lines a
profile at 80 columns, for every bundled profile."""

from __future__ import annotations

import json
import re

import pytest
from rich.cells import cell_len

from .conftest import PROFILES, ROOT, run_cli

LABELS = [f"profiles/{p.name}" for p in PROFILES]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # labels are the relative paths, as a user types them


def _widest(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _blocks(text: str) -> dict[str, list[str]]:
    """The output of `recommend` on several profiles, cut at each profile's first line."""
    lines = text.splitlines()
    starts = [(i, label) for i, line in enumerate(lines) for label in LABELS if f"  ({label})" in line]
    assert [label for _, label in starts] == LABELS, starts
    ends = [i for i, _ in starts[1:]] + [len(lines)]
    return {label: [ln for ln in lines[i:end] if ln.strip()] for (i, label), end in zip(starts, ends, strict=True)}


def test_default_recommend_is_compact_and_fits_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("recommend", *LABELS)
    assert r.code == 0, r.err
    assert _widest(r.out) <= 80
    for label, block in _blocks(r.out).items():
        assert len(block) <= 40, (label, len(block), "\n".join(block))
        text = "\n".join(block)
        # what it holds: the verdict, the deciding points, the top candidates, the setup path
        assert "confidence" in text and "Why (the points that decided it" in text, label
        assert "Top candidates" in text and re.search(r"^\s+1\. ", text, re.M), label
        assert "Why (every point)" not in text and "https://" not in text, label


@pytest.mark.parametrize("columns", ["80", "120"])
def test_explain_is_every_point_and_fits(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    r = run_cli("recommend", *LABELS, "--explain", "--no-flip")
    assert r.code == 0, r.err
    assert _widest(r.out) <= int(columns)
    assert "…" not in r.out
    assert r.out.count("Why (every point)") == len(LABELS)
    # every contribution's rule id is there, with its sources (URLs folded, not cut)
    data = json.loads(run_cli("recommend", LABELS[0], "--format", "json", "--no-flip").out)
    first = _blocks(r.out)[LABELS[0]]
    flat = "\n".join(first)
    # the source is the last column: a folded URL continues at the end of the next lines
    tails = "".join(line.split()[-1] for line in first if line.split())
    for c in data["contributions"]:
        assert c["rule"] in flat
        for src in c["sources"]:
            assert src in tails, src


def test_v_is_explain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    a = run_cli("recommend", LABELS[0], "-v", "--no-flip")
    b = run_cli("recommend", LABELS[0], "--explain", "--no-flip")
    assert a.code == b.code == 0 and a.out == b.out and "Why (every point)" in a.out


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("args", [
    ("check", "--no-config", "profiles/proposals"),
    ("catalog",),
    ("rules", "list"),
    ("rules", "list", "--kind", "all"),
    ("estimate", "profiles/llm-chatbot.yaml", "-a", "h100", "-n", "8"),
], ids=["check", "catalog", "rules-list", "rules-list-all", "estimate"])
def test_tables_fit(monkeypatch: pytest.MonkeyPatch, columns: str, args: tuple[str, ...]) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    r = run_cli(*args)
    assert r.code in (0, 1), r.err
    assert r.out and _widest(r.out) <= int(columns), args
    assert "…" not in r.out
    # no column squeezed to a sliver: every header word is whole on some line
    if args[0] == "catalog":
        assert re.search(r"\bid\s+device\b", r.out) and "tpu-v6e" in r.out
    if args[0] == "rules" and args[-1] != "all":
        assert re.search(r"^id\s+category\s+effect\s+title and sources", r.out, re.M), r.out[:800]


def test_off_a_terminal_without_columns_is_100(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS")
    r = run_cli("recommend", LABELS[0], "--explain", "--no-flip")
    assert r.code == 0 and 80 < _widest(r.out) <= 100


def test_numbers_stay_whole_when_columns_are_narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns every candidate's cost appears whole on one line, as the JSON has it."""
    from advisor.fmt import money

    monkeypatch.setenv("COLUMNS", "80")
    label = "profiles/llm-batch-summarise.yaml"
    data = json.loads(run_cli("recommend", label, "--format", "json", "--no-flip").out)
    out = run_cli("recommend", label, "--explain", "--no-flip").out
    words = {w for line in out.splitlines() for w in line.split()}
    for c in data["candidates"][:14]:  # the table's rows
        if c["cost_usd"] is not None:
            assert money(c["cost_usd"]) in words, c["accelerator"]
