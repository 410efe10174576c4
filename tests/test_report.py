from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .conftest import PROFILES, ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden" / "report"
UPDATE = os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"missing golden file {path}; run with ADVISOR_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file; review and rerun with ADVISOR_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_report_golden(profile: Path) -> None:
    r = run_cli("report", str(profile.relative_to(ROOT)), "-o", "-")
    assert r.code == 0, r.err
    _golden(f"{profile.stem}.md", r.out)


def test_comparison_report_golden() -> None:
    names = ["profiles/llm-chatbot.yaml", "profiles/moe-serving.yaml", "profiles/tabular-cpu.yaml"]
    r = run_cli("report", *names, "-o", "-")
    assert r.code == 0, r.err
    assert r.out.startswith("# advisor: comparison of 3 workloads")
    _golden("comparison.md", r.out)


SECTIONS = [
    "Verdict",
    "The workload at a glance",
    "Candidates",
    "Charts",
    "Why",
    "What would change the verdict",
    "Setup path",
    "Assumptions",
    "Sources",
]


def _parse(text: str):  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").parse(text)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_report_is_commonmark_with_tables_and_wellformed_mermaid(profile: Path) -> None:
    text = run_cli("report", str(profile), "-o", "-").out
    tokens = _parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    order = [next(i for i, h in enumerate(headings) if h.startswith(s)) for s in SECTIONS if any(h.startswith(s) for h in headings)]
    assert order == sorted(order), headings
    assert {s for s in SECTIONS if s != "Charts"} <= {s for s in SECTIONS if any(h.startswith(s) for h in headings)}
    assert sum(t.type == "table_open" for t in tokens) >= 4
    charts = [t.content for t in tokens if t.type == "fence" and t.info == "mermaid"]
    for chart in charts:
        lines = chart.strip().splitlines()
        assert lines[0] in ("xychart-beta", "xychart-beta horizontal")
        assert re.fullmatch(r'\s+title ".+"', lines[1])
        x = re.fullmatch(r"\s+x-axis \[(.+)\]", lines[2])
        assert x and re.fullmatch(r'\s+y-axis "[^"]+" 0 --> [0-9.e+]+', lines[3])
        bar = re.fullmatch(r"\s+bar \[(.+)\]", lines[4])
        assert bar
        labels = re.findall(r'"[^"]*"', x.group(1))
        values = [float(v) for v in bar.group(1).split(",")]
        assert len(labels) == len(values) >= 2 and all(v > 0 for v in values)


def test_markdown_from_recommend_is_the_same() -> None:
    a = run_cli("report", "profiles/llm-chatbot.yaml", "-o", "-").out
    b = run_cli("recommend", "profiles/llm-chatbot.yaml", "--format", "markdown").out
    assert a == b


def test_deterministic_unless_timestamp() -> None:
    a = run_cli("report", "profiles/llm-chatbot.yaml").out
    assert a == run_cli("report", "profiles/llm-chatbot.yaml").out
    stamped = run_cli("report", "profiles/llm-chatbot.yaml", "--timestamp").out
    assert stamped != a and "UTC" in stamped.splitlines()[-1]


def test_written_atomically(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    r = run_cli("report", "profiles/llm-chatbot.yaml", "-o", str(out))
    assert r.code == 0 and out.read_text().startswith("# llama3-8b-support-bot")
    before = out.read_bytes()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    r = run_cli("report", str(bad), "-o", str(out))
    assert r.code == 2 and out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "report.md"]


def test_custom_template(tmp_path: Path) -> None:
    tpl = tmp_path / "mine.md.j2"
    tpl.write_text("{% for r in reports %}{{ r.name }} -> {{ r.verdict.device }} ({{ r.verdict.config }})\n{% endfor %}")
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 0 and r.out.startswith("llama3-8b-support-bot -> TPU (")
    tpl.write_text("{{ reports[0].__class__.__mro__ }}")
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 2 and "template error" in r.err  # sandboxed: no access to internals
    tpl.write_text("{% for r in reports %}")
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 2 and f"{tpl}:1:1: error: template error" in r.err


def test_every_bounded_filter_works_in_a_template(tmp_path: Path) -> None:
    """The filters wrapped to bound their numbers still work (truncate and wordwrap need their
    environment passed through the wrapper), and still refuse a width beyond the bound."""
    tpl = tmp_path / "f.md.j2"
    tpl.write_text(
        "{% set n = reports[0].name %}{{ n|truncate(9, True, '') }}|{{ 'aa bb cc'|wordwrap(5) }}|{{ 'x'|center(5) }}|"
        "{{ 'a\nb'|indent(2) }}|{{ [1,2,3]|batch(2)|list|length }}|{{ [1,2,3]|slice(2)|list|length }}\n"
    )
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 0, r.err
    assert r.out == "llama3-8b|aa bb\ncc|  x  |a\n  b|2|2\n"
    tpl.write_text("{{ 'x'|truncate(10**9) }}")
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 2 and "too large" in r.err


@pytest.mark.slow
def test_runaway_template_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.report

    monkeypatch.setattr(advisor.report, "TEMPLATE_SECONDS", 1)
    tpl = tmp_path / "loop.md.j2"
    # Ranges are counted (see test_hostile_templates); loops over strings meet the clock.
    tpl.write_text('{% for i in "x" * 100000 %}{% for j in "x" * 100000 %}{% endfor %}{% endfor %}')
    r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
    assert r.code == 2 and "longer than 1 s" in r.err, r.err
    for body, needle in (
        ("{{ 1/0 }}", "ZeroDivisionError"),
        ('{{ "a"*100000000000 }}', "repetition too large"),
        ('{{ 1 + "a" }}', "TypeError"),
    ):
        tpl.write_text(body)
        r = run_cli("report", "profiles/llm-chatbot.yaml", "--template", str(tpl))
        assert r.code == 2 and needle in r.err, r.err


def test_a_verdict_nothing_meets_is_never_called_feasible(tmp_path: Path) -> None:
    # review 25: a 70B chat service whose every configuration misses a $60,000 budget printed 'feasible: no' and, in the
    # same report, 'tpu-v6e × 8 is the best feasible one for goal cost'
    import yaml

    data = yaml.safe_load((ROOT / "profiles" / "llm-chatbot.yaml").read_text())
    data["goal"] = {"optimize": "cost", "budget_usd": 10}
    path = tmp_path / "broke.yaml"
    path.write_text(yaml.safe_dump(data))
    text = run_cli("report", str(path), "-o", "-").out
    assert "best feasible one" not in text
    assert "No catalog configuration meets every constraint" in text and "is the nearest to it" in text
