"""Terminal view of recommendations and estimates (rich).

Numbers and ids never wrap and are never cut off with an ellipsis: their columns
are ``no_wrap`` (a narrow terminal wraps the prose columns first) and every column
folds as a last resort instead of truncating. Panels fill a terminal; in a file
or a pipe they take only the width of their content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from advisor.families import family
from advisor.fmt import GENERATED_TOKENS, hours, log_text, money, per_unit, request_asks, unit_label, unit_usd

if TYPE_CHECKING:
    from advisor.estimate.result import Estimate
    from advisor.recommend import Recommendation



def _value(t: Table, header: str, justify: str = "left", **kw: Any) -> None:
    """A column of numbers (right-justified: never wrapped, never cut) or of ids (left: kept
    whole while the table fits, folded only when it would not)."""
    t.add_column(header, justify=justify, no_wrap=True, overflow="fold", **kw)  # type: ignore[arg-type]


def _prose(t: Table, header: str) -> None:
    """A column of sentences: wraps between words first, folds long words, never truncates."""
    t.add_column(header, overflow="fold")


# The narrowest a prose or id column is made before the table gives up fitting the width.
_FLOOR = 10


def _longest(cell: Any) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in _plain(cell).splitlines()), default=0)


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _shrink(widths: list[int], floors: list[int], cols: list[int], excess: int) -> int:
    """Take up to ``excess`` characters from ``cols``, in proportion to what each has above its
    floor; returns what is still to take."""
    room = sum(widths[i] - floors[i] for i in cols)
    take = min(excess, room)
    if take <= 0:
        return excess
    shares = {i: take * (widths[i] - floors[i]) / room for i in cols}
    cut = {i: int(v) for i, v in shares.items()}
    left = take - sum(cut.values())
    for i in sorted(cols, key=lambda i: shares[i] - cut[i], reverse=True)[:left]:
        cut[i] += 1
    for i in cols:
        widths[i] -= cut[i]
    return excess - take


def fit_table(t: Table, width: int) -> int:
    """Make ``t`` fit ``width`` columns: number columns (right-justified, no wrap) keep their
    full width, prose columns give way first, then id columns; what does not fit wraps between
    words and folds long words (URLs). Returns the width the table needs: ``width``, or more
    when even the numbers and the narrowest other columns do not fit."""
    cols = t.columns
    if not cols:
        return width
    number = [bool(c.no_wrap and c.justify == "right") for c in cols]
    ident = [bool(c.no_wrap and not number[i]) for i, c in enumerate(cols)]
    fixed = [c.width for c in cols]
    body = [max((_longest(x) for x in c.cells), default=0) for c in cols]
    word = [max((len(w) for w in _plain(c.header).split()), default=0) for c in cols]
    body_word = [max((len(w) for x in c.cells for w in _plain(x).split()), default=0) for c in cols]
    want = [max(_longest(c.header), body[i], 1) for i, c in enumerate(cols)]
    widths: list[int] = [w if f is None else f for f, w in zip(fixed, want, strict=True)]
    n_prose = max(1, sum(1 for i in range(len(cols)) if not number[i] and not ident[i]))
    # headers and prose wrap between words first; a number is never cut or folded
    floors: list[int] = [
        widths[i] if fixed[i] is not None
        else max(body_word[i], word[i], 1) if number[i]
        else max(min(want[i], max(_FLOOR + 2, word[i])), 1) if ident[i]
        else max(min(want[i], max(_FLOOR, min(body_word[i], width // (3 * n_prose)))), 1)
        for i in range(len(cols))
    ]

    def overhead() -> int:
        return t._extra_width + sum(t._get_padding_width(i) for i in range(len(cols)))

    excess = overhead() + sum(widths) - width
    if excess > 0 and t.box is not None and not t.collapse_padding:
        # narrow: one space of padding between columns instead of two, none at the edges
        before = overhead()
        t.collapse_padding, t.pad_edge, t.show_edge = True, False, False
        excess -= before - overhead()
    free = [i for i in range(len(cols)) if fixed[i] is None]
    prose = [i for i in free if not number[i] and not ident[i]]
    excess = _shrink(widths, floors, prose, excess)
    excess = _shrink(widths, floors, [i for i in free if number[i]], excess)
    if excess > 0 and t.box is not None and t.padding != (0, 0, 0, 0):
        # narrower still: the box's one-space separator alone between columns
        before = overhead()
        t.padding = (0, 0, 0, 0)
        excess -= before - overhead()
        for i in sorted(prose, key=lambda i: want[i] - widths[i], reverse=True):
            give = min(-excess, want[i] - widths[i]) if excess < 0 else 0
            widths[i] += give
            excess += give
    excess = _shrink(widths, floors, [i for i in free if ident[i]], excess)
    # then prose down to its narrowest
    excess = _shrink(widths, [min(want[i], _FLOOR) if i in prose else floors[i] for i in range(len(cols))], prose, excess)
    # last resort: a number column's header folds down to the width of its values
    values = [max(body_word[i], 1) if number[i] else floors[i] for i in range(len(cols))]
    excess = _shrink(widths, values, [i for i in free if number[i]], excess)
    for i, c in enumerate(cols):
        c.width = widths[i]
        c.min_width = None
        c.max_width = None
        c.no_wrap = False  # a value as wide as its column never wraps; a header may
        c.overflow = "fold"
    return width + max(excess, 0)


def print_table(console: Console, t: Table) -> None:
    """Print ``t`` fitted to the console's width (``fit_table``); a console too narrow for its
    numbers gets the table at the width they need rather than numbers cut short."""
    need = fit_table(t, console.width)
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
    # a configuration the catalog does not price (a chip sold by quote) says so, not a range of "unpriced"
    cost = (f"(range {money(est.cost_low)}-{money(est.cost_high)}{_kind(est)})" if est.cost_usd is not None
            else "(no catalog price)")
    if est.mode == "training":
        return (
            f"{dev}: {est.accelerator} x {est.count} ({est.shape}) - {hours(est.hours)} "
            f"(range {hours(est.hours_low)}-{hours(est.hours_high)}), {money(est.cost_usd)} {cost}"
        )
    reps = f" x {est.replicas} replica{'s' if (est.replicas or 1) > 1 else ''}"
    return (
        f"{dev}: {est.accelerator} x {est.count} ({est.shape}){reps} - {money(est.cost_usd)}/month {cost}, "
        f"{est.latency_ms:,.0f} ms per request, {per_unit(est.unit_cost)}"
    )


def candidates_table(rec: Recommendation, limit: int = 14, compact: bool = False) -> Table:
    chosen = rec.estimate
    training = rec.profile.is_training
    kinds = {e.price_kind for e in rec.table[:limit] if e.price_kind}
    one_kind = next(iter(kinds)) if len(kinds) == 1 else None  # then said once, in the title
    title = "Candidates (best shape per accelerator" + (f"; {one_kind} prices)" if one_kind else ")")
    if compact:
        title = f"Top candidates ({min(limit, len(rec.table))} of {len(rec.table)}; all: --explain)"
    t = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", show_edge=not compact)
    t.add_column("", width=1)
    _value(t, "accelerator")
    _value(t, "count", "right")
    _value(t, "time" if training else "latency", "right")
    cost = "cost" if training else "cost/month"
    _value(t, cost, "right")
    if not training:
        _value(t, unit_label(chosen.unit_cost if chosen is not None else None), "right")
        if not compact:
            _value(t, "replicas", "right")
    if not compact:
        _value(t, "mem/chip (GB)", "right")
    _prose(t, "why not")
    for e in rec.table[:limit]:
        mark = "*" if chosen is not None and (e.accelerator, e.count) == (chosen.accelerator, chosen.count) else ""
        row = [mark, e.accelerator, str(e.count)]
        row.append(hours(e.hours) if training else (f"{e.latency_ms:,.0f} ms" if e.latency_ms else "-"))
        row.append(money(e.cost_usd) + (f" ({e.price_kind})" if e.price_kind and not compact and not one_kind else ""))
        if not training:
            row.append(unit_usd((e.unit_cost or {}).get("usd")))
            if not compact:
                row.append(str(e.replicas or "-"))
        if not compact:
            row.append(f"{e.memory_per_chip_gb:,.1f}/{e.memory_capacity_gb:,.0f}")
        row.append(e.why_not or "")
        style = "bold" if mark else ("dim" if not e.feasible else "")
        t.add_row(*row, style=style)
    return t


def deciding(rec: Recommendation, n: int = 3) -> list[tuple[str, str, str]]:
    """The ``n`` points that decided the verdict, as (points, device, what): a hard constraint
    that excluded another accelerator family first, then the contributions that moved the chosen
    family furthest ahead of the runner-up (points for it, or points against the runner-up)."""
    d = rec.decision
    out: list[tuple[str, str, str]] = []
    excluded = {x.device for x in d.excluded}
    for x in d.excluded:
        if x.device != d.device and family(x.device).role == "accelerator":
            out.append(("excl.", x.device, x.reason))
    rivals = sorted(((v, k) for k, v in d.scores.items() if k != d.device and k not in excluded), reverse=True)
    runner = rivals[0][1] if rivals else None

    def impact(c: Any) -> float:
        return float(c.points) if c.device == d.device else (-float(c.points) if c.device == runner else 0.0)

    ranked = sorted((c for c in d.contributions if impact(c) > 0), key=impact, reverse=True)
    for c in ranked:
        out.append((f"{c.points:+.1f}", c.device, c.title or c.reason))
    return out[:n]


def _header(rec: Recommendation, color: str) -> Text:
    head = Text()
    head.append(log_text(rec.profile.name), style="bold")
    head.append(f"  ({log_text(rec.label)})\n", style="dim")
    head.append(verdict_line(rec), style=f"bold {color}")
    head.append(f"\nconfidence {rec.confidence:.2f}   scores: ")
    head.append("  ".join(f"{k} {v:+.1f}" for k, v in rec.decision.scores.items() if v or family(k).role == "accelerator"))
    if rec.decision.sensitivity:
        head.append(f"\nmost sensitive to: {rec.decision.sensitivity}")
    if not rec.decision.feasible:
        head.append("\nnothing meets the constraints: this is the closest configuration (see what would change the verdict)")
    return head


def render_recommendation(rec: Recommendation, console: Console, explain: bool = False) -> None:
    """The verdict. By default compact: the verdict, the three points that decided it, the top
    candidates, the setup path one line per step and what would change the verdict; with
    ``explain`` every point with its source, every candidate and every setup command."""
    if explain:
        _render_explained(rec, console)
        return
    color = family(rec.device).colour
    console.print(_header(rec, color))
    reasons = deciding(rec)
    if reasons:
        console.print(Text("Why (the points that decided it; every point: --explain)", style="bold"))
        g = Table.grid(padding=(0, 1))
        _value(g, "points", "right")
        _value(g, "device")
        _prose(g, "what")
        for pts, dev, what in reasons:
            g.add_row(pts, dev, what)
        print_table(console, g)
    if rec.candidates:
        print_table(console, candidates_table(rec, limit=5, compact=True))
    if rec.setup:
        console.print(Text(f"Setup: {rec.setup.path.id} - {rec.setup.path.title} (commands: --explain)", style="bold"))
        for i, (title, _cmds, _note) in enumerate(rec.setup.steps, 1):
            console.print(f"  {i}. {title}")
    if rec.flip:
        console.print(Text("What would change the verdict:", style="bold"))
        for f in rec.flip[:5]:
            console.print(f"  - {f}")
    for w in rec.warnings:
        console.print(Text(f"warning: {log_text(w)}", style="yellow"))
    console.print(Text(f"catalog as of {rec.catalog_as_of}", style="dim"))


def _render_explained(rec: Recommendation, console: Console) -> None:
    color = family(rec.device).colour
    head = _header(rec, color)
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
        print_table(console, ex)

    ct = Table(box=box.SIMPLE_HEAD, title="Why (every point)", title_justify="left")
    _value(ct, "points", "right")
    _value(ct, "device")
    _value(ct, "rule")
    _prose(ct, "reason")
    _prose(ct, "source")  # one source per line; a URL folds
    for c in rec.decision.contributions:
        ct.add_row(f"{c.points:+.1f}", c.device, c.rule, c.reason, "\n".join(c.sources))
    print_table(console, ct)

    if rec.candidates:
        print_table(console, candidates_table(rec))

    if rec.setup:
        console.print(Text(f"Setup: {rec.setup.path.title}", style="bold"))
        console.print(Text(rec.setup.path.summary, style="italic"))
        for i, (title, cmds, note) in enumerate(rec.setup.steps, 1):
            console.print(Text(f"{i}. {title}", style="bold"))
            for cmd in cmds:
                console.print(Padding(Text(cmd, style="cyan"), (0, 0, 0, 3)))
            if note:
                console.print(Padding(Text(f"note: {note}", style="dim"), (0, 0, 0, 3)))

    if rec.flip:
        console.print(Text("What would change the verdict:", style="bold"))
        for f in rec.flip:
            console.print(f"  - {f}")
    for w in rec.warnings:
        console.print(Text(f"warning: {log_text(w)}", style="yellow"))
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
            *([("TTFT / TPOT", f"{e.ttft_ms or 0:,.1f} ms / {e.tpot_ms:,.2f} ms")] if e.tpot_ms is not None else []),
            ("latency per request", f"{e.latency_ms or 0:,.0f} ms"),
            (f"{e.throughput_unit or GENERATED_TOKENS} per replica", f"{e.tokens_per_second or 0:,.0f}"),
            ("replicas", str(e.replicas)),
            ("cost per month", f"{money(e.cost_usd)} ({e.hours:,.0f} h)" if e.hours else money(e.cost_usd)),
            ("cost per unit", per_unit(e.unit_cost, 4)),
            ("meets latency", str(e.meets_latency) if e.meets_latency is not None else "no target"),
        ]
    rows += [
        (
            "price",
            f"${e.usd_per_chip_hour:,.4f}/chip-h ({e.price_cloud}, {e.price_kind})" if e.usd_per_chip_hour is not None else "unpriced",
        ),
        (
            "memory per chip",
            f"{e.memory_per_chip_gb:,.2f} GB of {e.memory_capacity_gb:,.1f} GB ({'fits' if e.fits_memory else 'does NOT fit'})",
        ),
        ("feasible", "yes" if e.feasible else f"no: {e.why_not}"),
    ]
    for k, v in rows:
        t.add_row(k, v)
    print_table(console, t)
    for w in e.warnings:
        console.print(Text(f"warning: {log_text(w)}", style="yellow"))


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
    print_table(console, t)
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
            asks = f"{request_asks(q)}, {p['hours']:g} h"
        b = r.chosen
        found = ", ".join(f.rule for f in r.findings if not f.waived and f.severity != "note") or (
            "-" if r.status != "skipped" else "no proposal"
        )
        # the kind after a space, so a narrow column folds there and the figure stays whole
        cost = "-" if not p else "unpriced" if r.proposal_cost is None else money(r.proposal_cost) + (
            " monthly" if r.kind_of_cost == "monthly" else " one-off"
        )
        recd = f"{b.accelerator} x {b.count}" if b else ("no workload linked" if r.unlinked else "-")  # the note says how to link one
        # paths, addresses and hardware names come from the files checked (a pull request's): plain text on one line,
        # never console markup, never a workflow command a CI log would run (fmt.log_text)
        t.add_row(r.status, Text(log_text(r.label)), Text(log_text(asks)), cost, recd, money(b.cost_usd) if b else "-", found,
                  style=style[r.status])
    for bad in report.invalid:
        t.add_row("invalid", Text(log_text(bad.path)), "-", "-", "-", "-", f"{len(bad.problems)} input error(s)", style="red")
    print_table(console, t)
    for p in report.problems:
        line = Text(f"{log_text(p.path)}:{p.line}:{p.col}: ", style="bold")
        line.append("error:", style="red")
        line.append(f" {log_text(p.message)}")
        console.print(line)
    for r in report.results:
        for f in r.findings:
            tag = "waived " if f.waived else ""
            color = {"error": "red", "warning": "yellow", "note": "cyan"}[f.severity]
            line = Text(f"{log_text(r.path)}:{f.line}:{f.col}: ", style="bold")
            line.append(f"{tag}{f.severity}", style=color)
            line.append(f" [{f.rule}] {log_text(f.message)}")
            console.print(line)
    for r in report.results:
        for note in r.assumptions:
            console.print(Text(f"{log_text(r.path)}:{r.line}: cost assumes: {log_text(note)}", style="dim"))
    for path, why in report.skipped_files:  # every file passed over, and why (a line each: paths stay whole)
        console.print(Text(f"{log_text(path)}: skipped: {log_text(why)}", style="dim"))
    s = report.summary
    console.print(
        Text(
            f"{s['proposals']} proposal(s): {s['passed']} pass, {s['warning']} warning, {s['error']} error; "
            f"{s['skipped']} skipped; {s['skipped_files']} file(s) skipped; {s['invalid']} invalid (not checked); "
            f"{s['waived']} waived. catalog as of {report.catalog_as_of}",
            style="bold",
        )
    )
    if report.diff is not None:
        d = report.diff
        def moved(delta: float) -> str:
            return money(abs(delta)) + (" more" if delta > 0 else " less" if delta < 0 else "")

        once = d.get("one_off_delta_usd") or 0
        runs = f", one-off runs {moved(once)}" if once or d.get("one_off_after_usd") or d.get("one_off_before_usd") else ""
        console.print(f"baseline: {d['new_findings']} new finding(s), {d['fixed_findings']} fixed, "
                      f"monthly cost {moved(d['cost_delta_usd'] or 0)}{runs}")


# --------------------------------------------------------------------------- the formats (formats.py)


def _console_to_text(opts: Any, draw: Any) -> str:
    """What ``draw(console)`` prints, at the options' width, with terminal codes only for a terminal."""
    import io

    buf = io.StringIO()
    # markup off: profiles, rule files and checked files reach these lines, and their '[...]' is text, never a style
    console = Console(
        file=buf, no_color=not opts.color, highlight=False, soft_wrap=False, width=opts.width or 100, force_terminal=opts.color,
        markup=False,
    )
    draw(console)
    return buf.getvalue()


def recommendations(recs: list[Recommendation], opts: Any) -> str:
    def draw(console: Console) -> None:
        for i, rec in enumerate(recs):
            if i:
                console.print()
            render_recommendation(rec, console, explain=opts.explain)

    return _console_to_text(opts, draw)


def estimate(results: list[tuple[str, Estimate]], opts: Any) -> str:
    """One estimate per profile (each under its label when there are several)."""

    def draw(console: Console) -> None:
        for i, (label, est) in enumerate(results):
            if len(results) > 1:
                if i:
                    console.print()
                console.print(Text(label, style="bold"))
            render_estimate(est, console)

    return _console_to_text(opts, draw)


def check(report: Any, opts: Any) -> str:
    return _console_to_text(opts, lambda console: render_check(report, console))


def catalog(cat: Any, opts: Any) -> str:
    return _console_to_text(opts, lambda console: render_catalog(cat, console))
