"""The report's charts stay readable at any number of candidates (at most MAX_BARS bars, the
title says of how many; many bars or long labels lie horizontal), and the report renders to HTML
as a reader sees it: tables are tables, mermaid blocks are there, code is not double-escaped."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from .conftest import ROOT, run_cli

MANY = str(ROOT / "profiles" / "llm-chatbot.yaml")  # 15 priced candidates


def _charts(text: str) -> list[list[str]]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return [t.content.strip().splitlines() for t in tokens if t.type == "fence" and t.info == "mermaid"]


def _bars(chart: list[str]) -> tuple[list[str], list[float]]:
    x = re.fullmatch(r"\s+x-axis \[(.+)\]", chart[2])
    bar = re.fullmatch(r"\s+bar \[(.+)\]", chart[4])
    assert x and bar, chart
    return re.findall(r'"([^"]*)"', x.group(1)), [float(v) for v in bar.group(1).split(",")]


def test_charts_with_many_candidates_stay_readable() -> None:
    import json

    from advisor.report import MAX_BARS

    data = json.loads(run_cli("recommend", MANY, "--format", "json", "--no-flip").out)
    priced = [c for c in data["candidates"] if c["cost_usd"] and c["fits_memory"]]
    assert len(priced) >= 12  # the case this test is about
    charts = _charts(run_cli("report", MANY).out)
    per_candidate = [c for c in charts if "per candidate" in c[1] or "Latency" in c[1]]
    assert len(per_candidate) == 2
    for chart in per_candidate:
        labels, values = _bars(chart)
        assert chart[0] == "xychart-beta horizontal"
        assert len(labels) == len(values) == MAX_BARS
        assert f"the first {MAX_BARS} of {len(priced)}" in chart[1]
        assert len(set(labels)) == len(labels)
    # the cost chart's bars are the first candidates by the goal, with their costs
    labels, values = _bars(per_candidate[0])
    assert labels[0] == f"{priced[0]['accelerator']} ×{priced[0]['count']}"
    assert values[:3] == [round(c["cost_usd"]) for c in priced[:3]]


def test_few_short_bars_stay_vertical() -> None:
    from advisor.report import _chart

    few = _chart("t", "USD", [("a ×1", 1.0), ("b ×2", 2.0)])
    many = _chart("t", "USD", [(f"x{i} ×8", float(i + 1)) for i in range(14)])
    long = _chart(
        "t",
        "%",
        [("expected", 50.0), ("TPU optimistic", 60.0), ("TPU pessimistic", 40.0), ("GPU optimistic", 50.0), ("GPU pessimistic", 70.0)],
    )
    assert few is not None and not few["horizontal"] and "first" not in few["title"]
    assert many is not None and many["horizontal"] and many["title"] == "t, the first 10 of 14"
    assert long is not None and long["horizontal"]


@pytest.mark.parametrize("profiles", [
    ["llm-chatbot"], ["llama3-8b-lora"], ["tabular-cpu"], ["llm-chatbot", "bert-tpu", "aws-only-team"],
], ids=["inference", "training", "cpu", "comparison"])
def test_report_renders_to_html(profiles: list[str]) -> None:
    text = run_cli("report", *(str(ROOT / "profiles" / f"{p}.yaml") for p in profiles)).out
    out = MarkdownIt("commonmark").enable("table").render(text)
    # tables render as tables: no table syntax left as a paragraph
    assert out.count("<table>") >= (4 if len(profiles) == 1 else 2)
    assert not re.search(r"<p>\|.*\|</p>", out), "a table that did not render"
    # the mermaid blocks are there, as code blocks GitHub draws
    blocks = re.findall(r'<pre><code class="language-mermaid">(.*?)</code></pre>', out, re.S)
    assert blocks and all(html.unescape(b).startswith("xychart-beta") for b in blocks)
    # code is escaped once: a reader never sees a literal &lt; in a code block or span
    for code in re.findall(r"<code[^>]*>(.*?)</code>", out, re.S):
        assert not re.search(r"&amp;(lt|gt|amp|quot|#\d+);", code), code[:200]
    assert not re.search(r"&(lt|gt|amp);", "\n".join(t for t in re.findall(r"```.*?```", text, re.S))), "escaped text inside a fence"
