"""Terminal view of recommendations and estimates (rich).

Numbers and ids never wrap and are never cut off with an ellipsis: their columns
are ``no_wrap`` (a narrow terminal wraps the prose columns first) and every column
folds as a last resort instead of truncating. Panels fill a terminal; in a file
or a pipe they take only the width of their content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from advisor.families import family
from advisor.fmt import hours, money, per_unit, unit_label, unit_usd

if TYPE_CHECKING:
    from advisor.estimate.result import Estimate
    from advisor.recommend import Recommendation



def _value(t: Table, header: str, justify: str = "left", **kw: Any) -> None:
    """A column of numbers or ids: never wrapped between words, never truncated."""
    t.add_column(header, justify=justify, no_wrap=True, overflow="fold", **kw)  # type: ignore[arg-type]


def _prose(t: Table, header: str) -> None:
    """A column of sentences: wraps between words first, folds long words, never truncates."""
    t.add_column(header, overflow="fold")


def _print_table(console: Console, t: Table) -> None:
    """Print ``t`` with every value column at full width. Prose columns give way first; a
    terminal too narrow for the values gets the table at the width they need (the terminal
    wraps the lines) rather than numbers cut short."""
    from rich.cells import cell_len

    def longest(cell: Any) -> int:
        plain = cell.plain if isinstance(cell, Text) else str(cell)
        return max((cell_len(line) for line in plain.splitlines()), default=0)

    for col in t.columns:
        if col.no_wrap and col.width is None:
            col.min_width = max(longest(col.header), *(longest(c) for c in col.cells))
    wide = console.options.update_width(max(console.width, 10_000))
    need = t._extra_width + sum(t._measure_column(console, wide, c).minimum for c in t.columns)
    if need <= console.width:
        console.print(t)
        return
    width = console.width
    console.width = need
    try:
        console.print(t)
    finally:
        console.width = width


def _kind(est: Any) -> str:
    """The price kind beside a cost: which cloud and which rate (on-demand, spot, on-prem ...)."""
    return f", {est.price_cloud} {est.price_kind}" if est.price_kind and est.price_cloud != "on-prem" else (
        f", {est.price_kind}" if est.price_kind else "")


def verdict_line(rec: Recommendation) -> str:
    est = rec.estimate
    dev = rec.device.upper()
    if est is None:
        return dev
    if est.mode == "training":
        return (
            f"{dev}: {est.accelerator} x {est.count} ({est.shape}) - {hours(est.hours)} "
            f"(range {hours(est.hours_low)}-{hours(est.hours_high)}), {money(est.cost_usd)} "
            f"(range {money(est.cost_low)}-{money(est.cost_high)}{_kind(est)})"
        )
    reps = f" x {est.replicas} replica{'s' if (est.replicas or 1) > 1 else ''}"
    return (
        f"{dev}: {est.accelerator} x {est.count} ({est.shape}){reps} - {money(est.cost_usd)}/month "
        f"(range {money(est.cost_low)}-{money(est.cost_high)}{_kind(est)}), "
        f"{est.latency_ms:,.0f} ms per request, {per_unit(est.unit_cost)}"
    )


def candidates_table(rec: Recommendation, limit: int = 14) -> Table:
    chosen = rec.estimate
    training = rec.profile.is_training
    t = Table(box=box.SIMPLE_HEAD, title="Candidates (best shape per accelerator)", title_justify="left")
    t.add_column("", width=1)
    _value(t, "accelerator")
    _value(t, "count", "right")
    _value(t, "time" if training else "latency", "right")
    _value(t, "cost" if training else "cost/month", "right")
    if not training:
        _value(t, unit_label(chosen.unit_cost if chosen is not None else None), "right")
        _value(t, "replicas", "right")
    _value(t, "mem/chip", "right")
    _prose(t, "why not")
    for e in rec.table[:limit]:
        mark = "*" if chosen is not None and (e.accelerator, e.count) == (chosen.accelerator, chosen.count) else ""
        row = [mark, e.accelerator, str(e.count)]
        row.append(hours(e.hours) if training else (f"{e.latency_ms:,.0f} ms" if e.latency_ms else "-"))
        row.append(money(e.cost_usd) + (f" ({e.price_kind})" if e.price_kind else ""))
        if not training:
            row.append(unit_usd((e.unit_cost or {}).get("usd")))
            row.append(str(e.replicas or "-"))
        row.append(f"{e.memory_per_chip_gb:,.1f}/{e.memory_capacity_gb:,.0f} GB")
        row.append(e.why_not or "")
        style = "bold" if mark else ("dim" if not e.feasible else "")
        t.add_row(*row, style=style)
    return t


def render_recommendation(rec: Recommendation, console: Console) -> None:
    color = family(rec.device).colour
    head = Text()
    head.append(f"{rec.profile.name}", style="bold")
    head.append(f"  ({rec.label})\n", style="dim")
    head.append(verdict_line(rec), style=f"bold {color}")
    head.append(f"\nconfidence {rec.confidence:.2f}   scores: ")
    head.append("  ".join(f"{k} {v:+.1f}" for k, v in rec.decision.scores.items() if v or family(k).role == "accelerator"))
    if rec.decision.sensitivity:
        head.append(f"\nmost sensitive to: {rec.decision.sensitivity}")
    if not rec.decision.feasible:
        head.append("\nnothing meets the constraints: this is the closest configuration (see what would change the verdict)")
    if rec.setup:
        head.append(f"\nsetup path: {rec.setup.path.id} - {rec.setup.path.title}")
    console.print(Panel(head, title="advisor verdict", title_align="left", border_style=color, expand=console.is_terminal))

    if rec.decision.excluded:
        ex = Table(box=box.SIMPLE_HEAD, title="Excluded", title_justify="left")
        _value(ex, "device")
        _value(ex, "rule")
        _prose(ex, "why")
        for x in rec.decision.excluded:
            ex.add_row(x.device, x.rule, x.reason + (f" Fix: {x.fix}" if x.fix else ""))
        _print_table(console, ex)

    ct = Table(box=box.SIMPLE_HEAD, title="Why (every point)", title_justify="left")
    _value(ct, "points", "right")
    _value(ct, "device")
    _value(ct, "rule")
    _prose(ct, "reason")
    _value(ct, "source")  # one source per line: a URL is an id
    for c in rec.decision.contributions:
        ct.add_row(f"{c.points:+.1f}", c.device, c.rule, c.reason, ("\n" if console.is_terminal else ", ").join(c.sources))
    _print_table(console, ct)

    if rec.candidates:
        _print_table(console, candidates_table(rec))

    if rec.setup:
        lines: list[Text] = [Text(rec.setup.path.summary, style="italic")]
        for i, (title, cmds, note) in enumerate(rec.setup.steps, 1):
            lines.append(Text(f"{i}. {title}", style="bold"))
            for cmd in cmds:
                lines.append(Text("   " + cmd.replace("\n", "\n   "), style="cyan"))
            if note:
                lines.append(Text(f"   note: {note}", style="dim"))
        console.print(Panel(Group(*lines), title=f"Setup: {rec.setup.path.title}", title_align="left", expand=console.is_terminal))

    if rec.flip:
        console.print(Text("What would change the verdict:", style="bold"))
        for f in rec.flip:
            console.print(f"  - {f}")
    for w in rec.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    console.print(Text(f"catalog as of {rec.catalog_as_of}", style="dim"))


def render_estimate(e: Estimate, console: Console) -> None:
    t = Table(box=box.SIMPLE_HEAD, title=f"{e.accelerator} x {e.count} ({e.shape})", title_justify="left", show_header=False)
    _value(t, "what")
    _prose(t, "value")
    rows: list[tuple[str, str]] = []
    if e.mode == "training":
        rows += [
            ("hours", f"{hours(e.hours)} (range {hours(e.hours_low)}-{hours(e.hours_high)})"),
            ("cost", f"{money(e.cost_usd)} (range {money(e.cost_low)}-{money(e.cost_high)})"),
            ("tokens/s", f"{e.tokens_per_second:,.0f}" if e.tokens_per_second else "-"),
            ("meets deadline", str(e.meets_deadline) if e.meets_deadline is not None else "no deadline"),
        ]
    else:
        rows += [
            ("batch", str(e.batch)),
            ("TTFT / TPOT", f"{e.ttft_ms or 0:,.1f} ms / {e.tpot_ms or 0:,.2f} ms"),
            ("latency per request", f"{e.latency_ms or 0:,.0f} ms"),
            ("output tokens/s per replica", f"{e.tokens_per_second or 0:,.0f}"),
            ("replicas", str(e.replicas)),
            ("cost per month", f"{money(e.cost_usd)} ({e.hours:,.0f} h)" if e.hours else money(e.cost_usd)),
            ("cost per unit", per_unit(e.unit_cost, 4)),
            ("meets latency", str(e.meets_latency) if e.meets_latency is not None else "no target"),
        ]
    rows += [
        ("price", f"${e.usd_per_chip_hour:,.4f}/chip-h ({e.price_cloud}, {e.price_kind})" if e.usd_per_chip_hour is not None else "unpriced"),
        ("memory per chip", f"{e.memory_per_chip_gb:,.2f} GB of {e.memory_capacity_gb:,.1f} GB ({'fits' if e.fits_memory else 'does NOT fit'})"),
        ("feasible", "yes" if e.feasible else f"no: {e.why_not}"),
    ]
    for k, v in rows:
        t.add_row(k, v)
    _print_table(console, t)
    for w in e.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))


def render_catalog(cat: Any, console: Console) -> None:
    t = Table(box=box.SIMPLE_HEAD, title=f"Accelerator catalog (as of {cat.as_of.isoformat()})", title_justify="left")
    for col, just in (
        ("id", "left"), ("device", "left"), ("bf16 TFLOP/s", "right"), ("memory", "right"),
        ("GB/s", "right"), ("shapes (chips)", "left"), ("on-demand $/chip-h", "left"), ("spot", "left"),
    ):
        if col in ("shapes (chips)", "on-demand $/chip-h", "spot"):
            _prose(t, col)  # lists: wrap between items
        else:
            _value(t, col, just)
    for acc in cat.accelerators.values():
        tf = acc.specs.peak_tflops
        peak = tf.get("bf16") or tf.get("fp16")
        counts = acc.counts()
        shapes = ", ".join(map(str, counts[:6])) + (f", ... {counts[-1]}" if len(counts) > 6 else "")

        def prices(kind: str, acc: Any = acc) -> str:
            ps = [p for p in acc.prices if p.kind == kind]
            return ", ".join(f"{p.cloud} {p.usd_per_chip_hour:,.2f}" for p in ps) or "unpriced"

        t.add_row(
            acc.id, acc.device, f"{peak:,.0f}" + ("" if "bf16" in tf else " (fp16)"), f"{acc.specs.memory_gib:g} GiB",
            f"{acc.specs.memory_bandwidth_gbps:,.0f}", shapes, prices("on-demand"), prices("spot"),
        )
    _print_table(console, t)
    console.print(Text("GPU prices include the host VM share; every figure has a source: advisor catalog --format json", style="dim"))


def render_check(report: Any, console: Console) -> None:
    t = Table(box=box.SIMPLE_HEAD, title="advisor check", title_justify="left")
    for col in ("status", "proposal", "asks for", "cost", "recommended", "cost "):
        _value(t, col, "right" if col.startswith("cost") else "left")
    _prose(t, "findings")
    style = {"pass": "green", "warning": "yellow", "error": "red", "skipped": "dim"}
    for r in report.results:
        p = r.proposal or {}
        asks = f"{p['accelerator']} x {p['count']}, {p['hours']:g} h" if p else "-"
        if r.source is not None and r.source.get("kind") != "profile" and r.request is not None:
            q = r.request
            asks = f"{q.get('accelerator') or q.get('hardware')} x {q.get('count')} x {q.get('replicas')}, {p['hours']:g} h"
        b = r.chosen
        found = ", ".join(f.rule for f in r.findings if not f.waived and f.severity != "note") or ("-" if r.status != "skipped" else "no proposal")
        cost = "-" if not p else "unpriced" if r.proposal_cost is None else money(r.proposal_cost) + ("/month" if r.kind_of_cost == "monthly" else " one-off")
        t.add_row(r.status, r.label, asks, cost,
                  f"{b.accelerator} x {b.count}" if b else ("no workload linked: link one with match:" if r.unlinked else "-"), money(b.cost_usd) if b else "-", found, style=style[r.status])
    for path, why in report.skipped_files:
        t.add_row("skipped", path, "-", "-", "-", "-", why, style="dim")
    for bad in report.invalid:
        t.add_row("invalid", bad.path, "-", "-", "-", "-", f"{len(bad.problems)} input error(s)", style="red")
    _print_table(console, t)
    for p in report.problems:
        line = Text(f"{p.path}:{p.line}:{p.col}: ", style="bold")
        line.append("error:", style="red")
        line.append(f" {p.message}")
        console.print(line)
    for r in report.results:
        for f in r.findings:
            tag = "waived " if f.waived else ""
            color = {"error": "red", "warning": "yellow", "note": "cyan"}[f.severity]
            line = Text(f"{r.path}:{f.line}:{f.col}: ", style="bold")
            line.append(f"{tag}{f.severity}", style=color)
            line.append(f" [{f.rule}] {f.message}")
            console.print(line)
    for r in report.results:
        for note in r.assumptions:
            console.print(Text(f"{r.path}:{r.line}: cost assumes: {note}", style="dim"))
    s = report.summary
    console.print(Text(
        f"{s['proposals']} proposal(s): {s['passed']} pass, {s['warning']} warning, {s['error']} error; "
        f"{s['skipped']} skipped; {s['skipped_files']} file(s) skipped; {s['invalid']} invalid (not checked); {s['waived']} waived. catalog as of {report.catalog_as_of}", style="bold"))
    if report.diff is not None:
        d = report.diff
        console.print(f"baseline: {d['new_findings']} new finding(s), {d['fixed_findings']} fixed, cost delta {money(abs(d['cost_delta_usd'] or 0))}{' more' if (d['cost_delta_usd'] or 0) > 0 else ' less' if (d['cost_delta_usd'] or 0) < 0 else ''}")
