"""The markdown report: one view model per recommendation, rendered by a Jinja2 template.

The default template ships in the package (``advisor/templates/report.md.j2``);
``--template FILE`` renders a team's own with the same view model, in a
sandboxed environment (a template cannot reach Python objects' internals).
Output is deterministic: no timestamps unless asked for.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from advisor import __version__, families
from advisor.catalog import Catalog
from advisor.context import Context
from advisor.errors import InputError
from advisor.estimate.result import Estimate
from advisor.families import family
from advisor.fmt import (
    cell,
    hours,
    load_phrase,
    md_code,
    md_message,
    md_text,
    money,
    one_line,
    per_unit,
    unit_label,
    unit_usd,
)
from advisor.models import Profile
from advisor.recommend import Recommendation, decide
from advisor.sandbox import TemplateFiles, TemplateRefused, load_user_template, render_in_child
from advisor.yamlsrc import load_file

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_SECONDS = 10  # a user template that renders longer is an input error, not a hang
DEFAULT_TEMPLATE = "report.md.j2"
_SEED_CLAIMS: dict[str, str] | None = None


def seed_claims() -> dict[str, str]:
    global _SEED_CLAIMS
    if _SEED_CLAIMS is None:
        from advisor.knowledge import builtin_rules_dir

        path = builtin_rules_dir() / "seed-claims.yaml"
        docs = load_file(str(path)) if path.is_file() else []
        data = docs[0].data if docs and isinstance(docs[0].data, dict) else {}
        claims = data.get("claims", {}) if isinstance(data, dict) else {}
        _SEED_CLAIMS = {str(k): str(v) for k, v in claims.items()}
    return _SEED_CLAIMS


# --------------------------------------------------------------------------- formatting


_SAFE_URL = re.compile(r"https://[^\s<>()\[\]`\\|\"']+")
_SAFE_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


def source_link(src: str) -> str:
    """A source as markdown: a link for a plain https URL, else a code span (never raw text)."""
    if _SAFE_URL.fullmatch(src):
        host = src.split("/")[2]
        return f"[{host}]({src})"
    return md_code(src, table=True)


def _label(e: Estimate) -> str:
    return f"{e.accelerator} ×{e.count}"


# --------------------------------------------------------------------------- break-even


def _scaled_catalog(catalog: Catalog, device: str, factor: float) -> Catalog:
    accs = {}
    for aid, acc in catalog.accelerators.items():
        if acc.device == device:
            prices = [p.model_copy(update={"usd_per_chip_hour": p.usd_per_chip_hour * factor}) for p in acc.prices]
            acc = acc.model_copy(update={"prices": prices})
        accs[aid] = acc
    return replace(catalog, accelerators=accs)


def price_break_even(rec: Recommendation, ctx: Context) -> str | None:
    """The price cut at which the other accelerator family would win (recomputed, bisected)."""
    other = family(rec.device).rival
    if other is None:
        return None
    if other in {x.device for x in rec.decision.excluded} or rec.decision.best_by_device.get(other) is None:
        return None

    def wins(factor: float) -> bool:
        d, _ = decide(rec.profile, ctx.kb, _scaled_catalog(ctx.catalog, other, factor), ctx.constants)
        return d.device == other

    if not wins(0.05):
        return (
            f"Even at 5% of today's {families.name(other)} prices the verdict stays {rec.device_name}: "
            "the rules, not the prices, decide it."
        )
    lo, hi = 0.05, 1.0
    if wins(hi):
        return None
    for _ in range(9):
        mid = (lo + hi) / 2
        if wins(mid):
            lo = mid
        else:
            hi = mid
    return (
        f"{families.name(other)} would win if its prices were {lo:.0%} of today's catalog prices or less "
        f"(a {1 - lo:.0%} discount, e.g. committed-use or negotiated)."
    )


# --------------------------------------------------------------------------- view model


# A chart shows at most this many bars (the first by the goal; the title says of how many);
# from HORIZONTAL_FROM bars (or when the labels are long) they lie horizontal, so that every
# label stays readable.
MAX_BARS = 10
HORIZONTAL_FROM = 7


def _chart(title: str, axis: str, rows: list[tuple[str, float]]) -> dict[str, Any] | None:
    rows = [(n, v) for n, v in rows if v is not None and math.isfinite(v) and v > 0]
    if len(rows) < 2:
        return None
    if len(rows) > MAX_BARS:
        title += f", the first {MAX_BARS} of {len(rows)}"
        rows = rows[:MAX_BARS]
    top = max(v for _, v in rows)
    return {
        "title": title,
        "labels": ", ".join(f'"{n}"' for n, _ in rows),
        "axis": axis,
        "max": _nice(top),
        "data": ", ".join(f"{v:.4g}" if v < 1000 else f"{v:.0f}" for _, v in rows),
        # many bars, or long labels side by side: horizontal bars keep every label readable
        "horizontal": len(rows) >= HORIZONTAL_FROM or sum(len(n) + 2 for n, _ in rows) > 60,
    }


def _nice(x: float) -> str:
    exp = 10 ** math.floor(math.log10(x)) if x > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if x <= m * exp:
            v = m * exp
            return f"{v:.4g}" if v < 1000 else f"{v:.0f}"
    return f"{x:.4g}"


def view(rec: Recommendation, ctx: Context, *, break_even: bool = True) -> dict[str, Any]:
    """The template's view model of one recommendation: every value already formatted and escaped."""
    p = rec.profile
    est = rec.estimate
    training = p.is_training
    claims = seed_claims()
    return {
        "name": md_text(p.name, line_start=False),
        "profile": one_line(rec.label),
        "profile_code": md_code(rec.label, table=True),
        "training": training,
        "verdict": _verdict_view(rec),
        "why": md_message(_why_paragraph(rec)),
        "workload": [{"key": k, "value": cell(v)} for k, v in _workload_rows(p)],
        "candidates": _candidate_rows(rec),
        "unit_header": unit_label(est.unit_cost if est is not None else None, long=True).replace("per ", "$ per ", 1),
        "charts": _charts(rec),
        "why_groups": _why_groups(rec),
        "excluded": [{"device": x.device.upper(), "rule": x.rule, "reason": cell(x.reason), "fix": cell(x.fix) if x.fix else None,
                      "sources": ", ".join(source_link(s) for s in x.sources)} for x in rec.decision.excluded],
        "flip": [md_message(f) for f in rec.flip],
        "break_even": price_break_even(rec, ctx) if break_even else None,
        "setup": _setup_view(rec),
        "assumptions": _assumptions(rec, ctx),
        "sources": _sources(rec, ctx, claims),
        "warnings": [md_message(w, line_start=False) for w in rec.warnings],
        "catalog_as_of": rec.catalog_as_of,
    }


def _workload_rows(p: Profile) -> list[tuple[str, str]]:
    """The workload as the profile states it, one (key, text) row per block."""
    training = p.is_training
    workload: list[tuple[str, str]] = [("task", p.task), ("domain", p.domain)]
    m = p.model
    size = f"{m.params_b:g} B parameters" + (f" ({m.active_params_b:g} B active)" if m.active_params_b else "")
    workload.append(("model", f"{m.architecture}, {size}, {m.precision}" + (f", `{m.hf_id}`" if m.hf_id else "")))
    if p.training is not None and training:
        t = p.training
        workload.append(
            (
                "training",
                f"{t.tokens_b:g} B tokens, sequence {t.seq_len}, {t.method}"
                + (f", deadline {t.deadline_hours:g} h" if t.deadline_hours else ""),
            )
        )
    if p.inference is not None and not training:
        i = p.inference
        volume = i.mode == "batch" and i.requests_per_day
        rate = load_phrase(i)
        workload.append(("serving", f"{i.mode}, {rate}, {i.input_tokens} in / {i.output_tokens} out tokens"
                         + (f", p99 ≤ {i.latency_p99_ms:g} ms" if i.latency_p99_ms else "")
                         + ("" if volume else f", {i.run_hours_per_day:g} h/day")))
    sw = p.software
    flags = [n for n, v in (("custom CUDA kernels", sw.custom_cuda_kernels), ("dynamic shapes", sw.dynamic_shapes), ("fp64", sw.fp64)) if v]
    workload.append(
        (
            "software",
            f"{sw.framework}"
            + (f", serving with {sw.serving_stack}" if sw.serving_stack != "none" else "")
            + (f"; {', '.join(flags)}" if flags else "")
            + (f"; CUDA libraries: {', '.join(sw.cuda_libraries)}" if sw.cuda_libraries else ""),
        )
    )
    dep = p.deployment
    workload.append(
        (
            "deployment",
            f"clouds {', '.join(dep.clouds)}"
            + (f", region {dep.region}" if dep.region else "")
            + f", {dep.pricing} prices"
            + (", edge devices" if dep.edge else ""),
        )
    )
    workload.append(("team", f"TPU experience {p.team.tpu_experience}, GPU experience {p.team.gpu_experience}"))
    workload.append(
        (
            "goal",
            f"optimise {p.goal.optimize}"
            + (f", budget {money(p.goal.budget_usd)}" + ("" if training else " per month") if p.goal.budget_usd else ""),
        )
    )
    return workload


def _candidate_rows(rec: Recommendation) -> list[dict[str, Any]]:
    training = rec.profile.is_training
    chosen_key = (rec.estimate.accelerator, rec.estimate.count) if rec.estimate else None
    return [{
        "chosen": chosen_key == (e.accelerator, e.count),
        "accelerator": e.accelerator,
        "device": e.device.upper(),
        "shape": cell(e.shape),
        "count": e.count,
        "time": hours(e.hours) if training else (f"{e.latency_ms:,.0f} ms" if e.latency_ms else "–"),
        "cost": money(e.cost_usd),
        "per_m_tokens": unit_usd((e.unit_cost or {}).get("usd"), missing="–"),
        "replicas": e.replicas or "–",
        "fits": "yes" if e.fits_memory else "no",
        "feasible": "yes" if e.feasible and e.priced else ("unpriced" if e.feasible else "no"),
        "why_not": cell(e.why_not or ("no price on the allowed clouds" if not e.priced else "")),
    } for e in rec.table]


def _charts(rec: Recommendation) -> list[dict[str, Any]]:
    training = rec.profile.is_training
    priced = [e for e in rec.table if e.priced and e.fits_memory]
    return [c for c in (
        _chart("Cost per candidate (USD" + (")" if training else " per month)"), "USD", [(_label(e), e.cost_usd or 0.0) for e in priced]),
        _chart("Training time per candidate (hours)" if training else "Latency per request (ms)", "hours" if training else "ms",
               [(_label(e), (e.hours if training else e.latency_ms) or 0.0) for e in priced]),
        _chart(f"Chance the {rec.device.upper()} verdict holds, per estimate scenario (%)", "%",
               [(name, max(p, 0.1)) for name, p in rec.decision.scenarios]),
    ) if c]


def _why_groups(rec: Recommendation) -> list[dict[str, Any]]:
    """Every point of the score, grouped by device, with its sources."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in rec.decision.contributions:
        groups.setdefault(c.device.upper(), []).append({
            "points": f"{c.points:+.1f}", "rule": c.rule, "title": cell(c.title), "reason": cell(c.reason),
            "sources": ", ".join(source_link(s) for s in c.sources),
        })
    return [
        {"device": d, "total": f"{rec.decision.scores[d.lower()]:+.1f}", "rows": groups[d]}
        for d in ("TPU", "GPU", "CPU", "EDGE")
        if d in groups
    ]


def _setup_view(rec: Recommendation) -> dict[str, Any] | None:
    if rec.setup is None:
        return None
    return {
        "id": rec.setup.path.id, "title": rec.setup.path.title, "summary": rec.setup.path.summary,
        "steps": [{"title": t, "commands": cmds, "note": n} for t, cmds, n in rec.setup.steps],
        "sources": ", ".join(source_link(s) for s in rec.setup.path.sources),
    }


def _verdict_view(rec: Recommendation) -> dict[str, Any]:
    est = rec.estimate
    verdict: dict[str, Any] = {
        "device": rec.device.upper(), "confidence": f"{rec.confidence:.2f}", "config": None,
        "sensitive_to": cell(rec.decision.sensitivity) if rec.decision.sensitivity else None, "feasible": rec.decision.feasible,
    }
    if est is not None:
        verdict["config"] = f"{est.accelerator} × {est.count} ({est.shape})"
        if rec.profile.is_training:
            verdict["time"] = f"{hours(est.hours)} (range {hours(est.hours_low)} – {hours(est.hours_high)})"
            verdict["cost"] = f"{money(est.cost_usd)} (range {money(est.cost_low)} – {money(est.cost_high)})"
        else:
            first = f", TTFT {est.ttft_ms:,.0f} ms" if est.tpot_ms is not None else ""  # no first token without generated ones
            verdict["time"] = f"{est.latency_ms:,.0f} ms per request{first}, {est.replicas} replica(s), batch {est.batch}"
            if est.p99 and "ttft_ms" in est.p99:  # the tail the targets are held to (an upper bound), at the server's budget
                verdict["time"] += f"; p99 {est.p99['latency_ms']:,.0f} ms per request"
                if "tpot_ms" in est.p99:
                    verdict["time"] += (
                        f", TTFT {est.p99['ttft_ms']:,.0f} ms, TPOT {est.p99['tpot_ms']:,.1f} ms, "
                        f"slowest token {est.p99.get('itl_ms', est.p99['tpot_ms']):,.1f} ms"
                    )
                verdict["time"] += " (an upper bound)"
            elif est.p99:  # a replica serving batches: about two batches at the p99
                verdict["time"] += f"; p99 {est.p99['latency_ms']:,.0f} ms per request (the rest of a batch in flight, then its own)"
                if est.prefill_budget:
                    verdict["time"] += f"; the server takes {est.prefill_budget:,} prompt tokens per step, set for the p99 targets"
            verdict["cost"] = (
                f"{money(est.cost_usd)} per month (range {money(est.cost_low)} – {money(est.cost_high)}), {per_unit(est.unit_cost)}"
            )
    return verdict


def _why_paragraph(rec: Recommendation) -> str:
    d = rec.decision
    scores = d.scores
    live = [k for k in families.ids() if k not in {x.device for x in d.excluded}]
    runner = max((k for k in live if k != rec.device), key=lambda k: scores[k], default=None)
    top = [c for c in d.contributions if c.device == rec.device and c.points > 0][:3]
    parts = [f"{families.name(rec.device)} scores {scores[rec.device]:+.1f}"]
    if runner:
        parts.append(f"against {scores[runner]:+.1f} for {families.name(runner)}")
    text = " ".join(parts) + "."
    if d.excluded:
        ex = sorted({x.device.upper() for x in d.excluded})
        text += f" Excluded by hard constraints: {', '.join(ex)}."
    if top:
        text += " The strongest reasons: " + "; ".join(c.reason.rstrip(".") for c in top) + "."
    if rec.estimate is not None and d.feasible:
        text += (
            f" Of every catalog configuration, {rec.estimate.accelerator} × {rec.estimate.count} "
            f"is the best feasible one for goal “{rec.profile.goal.optimize}”."
        )
    elif rec.estimate is not None:  # nothing meets the constraints: never called feasible (review 25)
        text += (
            f" No catalog configuration meets every constraint: {rec.estimate.accelerator} × {rec.estimate.count} is the "
            "nearest to it (what would change the verdict says what makes it feasible)."
        )
    return text


def _assumptions(rec: Recommendation, ctx: Context) -> list[str]:
    out = []
    est = rec.estimate
    c = ctx.constants
    if est is not None:
        a = est.assumptions
        if est.mode == "training":
            mfu = a["mfu"]
            out.append(
                f"Training FLOPs {a['flops']} ({a['flops_formula']}); model FLOPs utilisation {mfu['low']:.0%} / {mfu['expected']:.0%} / "
                f"{mfu['high']:.0%} (low/expected/high) for stack `{a['stack']}` (sources: {', '.join(mfu['source'])})."
            )
            out.append(
                f"Peak {a['peak_tflops_per_chip']} TFLOP/s per chip; scaling efficiency {a['scaling_efficiency']:.0%} at {est.count} "
                f"chips; small-model factor {a['small_model_factor']}; start-up and compile {hours(a['startup_hours'])}."
            )
            out.append(
                f"Memory: {a['memory']['sharding']}; {est.memory_per_chip_gb:,.1f} GB needed per chip of {est.memory_capacity_gb:,.1f} GB."
            )
        else:
            bw, pre = a["decode_bandwidth_utilisation"], a["prefill_mfu"]
            out.append(
                f"Decode is memory-bandwidth-bound at {bw['low']:.0%} / {bw['expected']:.0%} / {bw['high']:.0%} of peak bandwidth; "
                f"prefill compute-bound at {pre['low']:.0%} / {pre['expected']:.0%} / {pre['high']:.0%} of peak (sources: "
                f"{', '.join(bw['source'] + pre['source'])})."
            )
            out.append(
                f"{a['latency_model']}; tensor parallel {a['tensor_parallel']} per replica; {a['hours_per_month']:g} hours per month; "
                f"$/M tokens counts {a['usd_per_million_tokens_basis']}."
            )
            mem = a["memory"]
            if "kv_cache_mb_per_token" in mem:
                out.append(
                    f"Weights {mem['weights_gb']} GB; KV cache {mem['kv_cache_mb_per_token']} MB per token; "
                    f"{100 * a['serving_memory_fraction']:.0f}% of memory usable."
                )
            else:
                out.append(f"Weights {mem['weights_gb']} GB; per-request FLOPs {mem['request_flops']} ({mem['request_model']}).")
        if est.usd_per_chip_hour is not None:
            acc = ctx.catalog.accelerators[est.accelerator]
            price = acc.price(list(rec.profile.deployment.clouds), est.price_kind or "on-demand", rec.profile.deployment.region)
            when = f", as of {price.as_of.isoformat()}" if price else ""
            region = f", {price.region}" if price and price.region else ""
            basis = (
                (
                    "purchase amortised plus power and hosting, catalog `onprem` defaults or deployment.onprem"
                    if est.price_kind == "on-prem (amortised)"
                    else "power and hosting only, catalog `onprem` defaults or deployment.onprem"
                )
                if est.price_cloud == "on-prem"
                else "GPU prices include the host VM"
            )
            out.append(
                f"Price {money(est.usd_per_chip_hour)} per chip-hour "
                f"({est.price_kind if est.price_cloud == 'on-prem' else f'{est.price_cloud} {est.price_kind}'}{region}{when}; {basis})."
            )
        approx = a.get("model_shape", {}).get("approximated") or a.get("memory", {}).get("model_shape", {}).get("approximated")
        if approx:
            out.append(f"Not given and approximated from params_b: {', '.join(approx)}.")
    out.append(
        f"Catalog as of {rec.catalog_as_of}; estimator constants: {len(c.estimator.training_mfu)} utilisation rows, each sourced "
        "(`advisor catalog --format json`, `rules/estimator.yaml`)."
    )
    return out


def _sources(rec: Recommendation, ctx: Context, claims: dict[str, str]) -> list[str]:
    seen: dict[str, str] = {}
    all_src = [s for c in rec.decision.contributions for s in c.sources]
    all_src += [s for x in rec.decision.excluded for s in x.sources]
    if rec.setup:
        all_src += list(rec.setup.path.sources)
    for s in all_src:
        if s in seen:
            continue
        if s.startswith("seed:"):
            cid = s.removeprefix("seed:")
            seen[s] = f"`{s}` — {claims.get(cid, 'seed claim')} (seed article claim)"
        else:
            seen[s] = f"<{s}>" if _SAFE_URL.fullmatch(s) or _SAFE_PATH.fullmatch(s) else md_code(s)
    if rec.estimate is not None:
        acc = ctx.catalog.accelerators[rec.estimate.accelerator]
        for sid in [*acc.specs.source, *(sid for p in acc.prices for sid in p.source)]:
            ref = ctx.catalog.sources.get(sid)
            if ref is None or sid in seen:
                continue
            where = ref.url or " ".join(x for x in (ref.repo, ref.path) if x)
            seen[sid] = f"{sid}: {where} (retrieved {ref.retrieved.isoformat()})"
    return sorted(seen.values(), key=lambda x: (not x.startswith("`seed:"), x))


# --------------------------------------------------------------------------- rendering


def _environment() -> Any:
    """The environment of the built-in template (trusted: it ships in the package)."""
    import jinja2

    from advisor.sandbox import environment

    # The built-in template gets the same sandbox, in-process.
    files = TemplateFiles(DEFAULT_TEMPLATE, (TEMPLATE_DIR / DEFAULT_TEMPLATE).read_text(encoding="utf-8"), TEMPLATE_DIR)
    env = environment(files)
    assert isinstance(env, jinja2.Environment)
    return env


def render(recs: list[Recommendation], ctx: Context, *, template: str | None = None, timestamp: str | None = None) -> str:
    reports = [view(r, ctx) for r in recs]
    comparison = None
    if len(recs) > 1:
        comparison = [
            {
                "name": cell(r.profile.name),
                "profile": one_line(r.label),
                "profile_code": md_code(r.label, table=True),
                "device": r.device.upper(),
                "config": f"{r.estimate.accelerator} × {r.estimate.count}" if r.estimate else "–",
                "time": (hours(r.estimate.hours) if r.profile.is_training else f"{r.estimate.latency_ms:,.0f} ms") if r.estimate else "–",
                "cost": (money(r.estimate.cost_usd) + ("" if r.profile.is_training else "/month")) if r.estimate else "–",
                "confidence": f"{r.confidence:.2f}",
                "setup": r.setup.path.id if r.setup else "–",
            }
            for r in recs
        ]
    context = {"reports": reports, "comparison": comparison, "version": __version__, "timestamp": timestamp}
    if template is None:
        text: str = _environment().get_template(DEFAULT_TEMPLATE).render(**context)
    else:
        # A user's template is untrusted input: loaded with no links, dotfiles or outside files,
        # rendered in a child process under memory and time limits; every failure is exit 2.
        try:
            text = render_in_child(load_user_template(template), context, TEMPLATE_SECONDS)
        except TemplateRefused as exc:
            raise InputError.single(exc.path or template, exc.line, 1, exc.message) from None
    # One trailing newline, no trailing spaces: stable diffs.
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    out: list[str] = []
    for ln in lines:  # collapse runs of blank lines
        if ln or (out and out[-1]):
            out.append(ln)
    return "\n".join(out) + "\n"
