"""Fit the levelled constants of rules/estimator.yaml (``levels``) on the fit rows of tests/data/published.yaml.

``python -m tests.fit_levels`` prints, for each constant, every level whose rows qualify (>= 3 fit rows from >= 2
independent publications; global always) with its value (the median of measured / estimated throughput of its rows
with the constant set to 1), its spread (the smallest and largest of them) and its rows, as YAML to paste under
``levels:``. Held-out rows are never read. ``--intensity`` prints the fit of training_intensity.value (the memory-bound share
of a training step, fitted before the levels: the grid value with the smallest mean |log error| on the fit training
rows, the training levels refitted at each). The constants are fitted in order, each with the ones before applied:

1. dense_training_factor: dense training rows computed in 16 bits (what they reach of the stack's MFU table);
2. low_precision_training_factor: dense training rows computed in 8 bits (fp8, mxfp8, int8);
3. moe_training_factor: mixture-of-experts training rows, solved like the two below: the MoE's own time (1 / factor - 1
   of its 16-bit matmul time) does not shrink with an 8-bit peak, so the factor is no ratio of throughputs on FP8 rows;
4. loaded_prefill_factor: serving rows under load (concurrency above 1: throughput, TPOT, latency), the share of
   the prefill MFU that other requests' prompt chunks reach inside a decode step; not a ratio of throughputs
   (memory-bound steps do not read it), so it is solved: the factor at which the group's median speed ratio is 1
   (bisection in SOLVE_RANGE, 0.05-4; a factor at its edge fails), spread by the group's smallest and largest ratio there (dense models);
5. moe_serving_factor: the same for the efficiency of a mixture of experts' routed-expert GEMMs relative to a
   dense GEMM's (grouped GEMMs of small per-expert batches, routing; attention and the dense parts compute like a
   dense model's), solved on the MoE serving rows under load.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import sys
from collections import defaultdict
from typing import Any

from advisor.api import Context
from advisor.constants import LEVEL_KEY, MIN_FIT_ROWS, MIN_FIT_SOURCES, MIN_SPREAD_ROWS, LevelRow
from advisor.estimate.efficiency import stack_for
from advisor.estimate.training import LOW_PRECISION, level_attrs

from . import calibration_published as cp

SERVING_LEVELS = ("family", "generation", "stack", "vendor")
ORDER: list[tuple[str, Any, tuple[str, ...]]] = [
    # what dense 16-bit training reaches of the stack's MFU at each level (about 1 where the MFU table was
    # right): its spread is the range of every training estimate
    (
        "dense_training_factor",
        lambda r, prec: r["kind"] == "training" and not r["model"].get("active_params_b") and prec not in LOW_PRECISION,
        ("family", "generation", "stack", "vendor"),
    ),
    (
        "low_precision_training_factor",
        lambda r, prec: r["kind"] == "training" and not r["model"].get("active_params_b") and prec in LOW_PRECISION,
        ("family", "generation", "stack", "vendor", "precision"),
    ),
    # the precision of a MoE run is the low-precision factor's (applied first): no precision level here
    (
        "moe_training_factor",
        lambda r, prec: r["kind"] == "training" and bool(r["model"].get("active_params_b")),
        ("family", "generation", "stack", "vendor", "routing"),
    ),
    ("loaded_prefill_factor", lambda r, prec: _loaded(r) and not r["model"].get("active_params_b"), SERVING_LEVELS),
    ("moe_serving_factor", lambda r, prec: _loaded(r) and bool(r["model"].get("active_params_b")), SERVING_LEVELS),
    # the step model's misses on every serving row (any concurrency, any metric but TTFT under queueing), after the
    # serving constants above: not applied to the estimate, only its range (low / high = the level's smallest and
    # largest measured / estimated throughput)
    (
        "serving_spread",
        lambda r, prec: r["kind"] == "serving" and (r["metric"] in LOADED_METRICS or r["metric"] == "output_tokens_per_s"),
        ("family", "generation", "stack", "vendor"),
    ),
]
def _loaded(r: dict[str, Any]) -> bool:
    """A serving row under load (concurrency above 1) of a metric a loaded step decides."""
    return r["kind"] == "serving" and (r.get("concurrency") or 1) > 1 and r["metric"] in LOADED_METRICS


LOADED_METRICS = ("output_tokens_per_s", "output_tokens_per_s_per_chip", "throughput_tokens_per_s", "tpot_ms", "latency_s")
SOLVED = {"loaded_prefill_factor", "moe_serving_factor", "moe_training_factor"}
SOLVE_RANGE = (0.05, 4.0)  # where a solved factor is searched (bisection); a factor at its edge is an error, not a fit
# constants that are only a range: the smallest..largest of n fit rows holds a new row with probability (n - 1) / (n + 1)
# (order statistics of n exchangeable draws), so a level of its own needs n >= 9 (MIN_SPREAD_ROWS) for 80%; with fewer
# it inherits. The training factors' ranges follow the same rule at estimate time (EstimatorConstants.spread)
SPREADS = {"serving_spread"}
# the groups a level is fitted for: the attributes it matches (the level's own key, with the family above it; a
# mixture of experts' routing alone: a coarse expert's GEMMs are dense-sized on any chip, docs/estimator.md "Levels")
GROUPS = {"family": ("device",), "generation": ("device", "accelerator"), "stack": ("device", "stack"),
          "vendor": ("device", "vendor"), "routing": ("routing",), "precision": ("device", "precision")}


def _with_levels(ctx: Context, levels: list[LevelRow]) -> Context:
    est = ctx.constants.estimator.model_copy(update={"levels": levels})
    return dataclasses.replace(ctx, constants=dataclasses.replace(ctx.constants, estimator=est))


def _row_attrs(r: dict[str, Any], ctx: Context) -> tuple[dict[str, str], str | None]:
    """What a row's levels match on, and the precision its chip computes in; serving rows match the serving
    stack (calibration_published's mapping)."""
    acc = ctx.catalog.get(r["accelerator"])
    profile = cp.profile_for(r)
    used = acc.compute_precision(profile.model.precision)[0]
    attrs = level_attrs(profile, acc, stack_for(profile, acc.device), used)
    if r["kind"] == "serving":
        attrs = dict(attrs, stack=cp.SERVING_STACK.get(r["stack"], "none"))
    return attrs, used


def fit(constant: str, select: Any, levels: tuple[str, ...], ctx: Context) -> list[LevelRow]:
    """The qualifying levels of ``constant`` (global first), evaluated with ``ctx``'s levels minus this one's."""
    ctx = _with_levels(ctx, [x for x in ctx.constants.estimator.levels if x.constant != constant])
    if constant in SOLVED:
        return solve(constant, select, levels, ctx)
    data: list[tuple[dict[str, str], float, str, str]] = []
    for r in cp.rows():
        if r["split"] != "fit" or cp.not_evaluable(r):
            continue
        attrs, prec = _row_attrs(r, ctx)
        if not select(r, prec):
            continue
        res = cp.evaluate(r, ctx)
        if res.estimated is None:
            continue
        data.append((attrs, 1.0 / res.speed_ratio, r["id"], r["source_id"]))
    out: list[LevelRow] = []

    def row(level: str, match: dict[str, str], members: list[tuple[dict[str, str], float, str, str]]) -> None:
        vals = [m[1] for m in members]
        out.append(LevelRow(
            constant=constant, level=level, match=match,  # type: ignore[arg-type]
            value=round(statistics.median(vals), 3), low=round(min(vals), 3), high=round(max(vals), 3),
            fit_rows=[m[2] for m in members], fit_sources=sorted({m[3] for m in members}), source=["S_PUBLISHED_FIT"],
        ))

    if data:
        row("global", {}, data)
    for level in levels:
        keys = GROUPS[level]
        groups: dict[tuple[str, ...], list[tuple[dict[str, str], float, str, str]]] = defaultdict(list)
        for m in data:
            groups[tuple(m[0][k] for k in keys)].append(m)
        for key, members in sorted(groups.items()):
            if "" in key:
                continue  # rows that do not say (a mixture of experts without its routing): they inherit
            parent = [m for m in data if m[0]["device"] == dict(zip(keys, key, strict=True)).get("device", m[0]["device"])]
            same = level != "family" and {m[2] for m in members} == {m[2] for m in parent}
            enough = MIN_SPREAD_ROWS if constant in SPREADS else MIN_FIT_ROWS
            if len(members) >= enough and len({m[3] for m in members}) >= MIN_FIT_SOURCES and not same:
                row(level, _match(keys, key, [m[0] for m in members]), members)  # (a level that only repeats its family adds nothing)
    assert all(LEVEL_KEY[x.level] in x.match for x in out if x.level != "global")
    return out


def _match(keys: tuple[str, ...], key: tuple[str, ...], attrs: list[dict[str, str]]) -> dict[str, str]:
    """What a level's group matches: its attributes, and the routing of a mixture of experts where all its rows share
    one (v6e's MoE rows are all coarse Mixtral: a fine-grained MoE on v6e inherits the family's, not theirs)."""
    match = dict(zip(keys, key, strict=True))
    shared = {a.get("routing", "") for a in attrs}
    if len(shared) == 1 and "" not in shared:
        match["routing"] = shared.pop()
    return match


def _members(select: Any, ctx: Context) -> list[tuple[dict[str, str], dict[str, Any]]]:
    out = []
    for r in cp.rows():
        if r["split"] != "fit" or cp.not_evaluable(r):
            continue
        attrs, prec = _row_attrs(r, ctx)
        if select(r, prec):
            out.append((attrs, r))
    return out


def solve(constant: str, select: Any, levels: tuple[str, ...], ctx: Context) -> list[LevelRow]:
    members = _members(select, ctx)
    out: list[LevelRow] = []

    def ratios(level: str, match: dict[str, str], f: float, group: list[tuple[dict[str, str], dict[str, Any]]]) -> list[float]:
        tmp = LevelRow.model_construct(constant=constant, level=level, match=match, value=f, low=f, high=f,  # type: ignore[arg-type]
                                       fit_rows=[], fit_sources=[], source=["x"], note=None)
        c2 = _with_levels(ctx, [*ctx.constants.estimator.levels, tmp])
        found = [cp.evaluate(r, c2) for _, r in group]
        return [x.speed_ratio for x in found if x.estimated is not None]

    def one(level: str, match: dict[str, str], group: list[tuple[dict[str, str], dict[str, Any]]]) -> None:
        lo, hi = SOLVE_RANGE
        for _ in range(30):
            mid = (lo + hi) / 2
            if statistics.median(ratios(level, match, mid, group)) > 1.0:
                hi = mid
            else:
                lo = mid
        f = round((lo + hi) / 2, 3)
        assert SOLVE_RANGE[0] < f < SOLVE_RANGE[1], f"{constant} at {level} {match} solved to the edge of {SOLVE_RANGE}: widen it"
        inv = [1.0 / x for x in ratios(level, match, f, group)]
        out.append(LevelRow(
            constant=constant, level=level, match=match,  # type: ignore[arg-type]
            value=f, low=round(min(f, f * min(inv)), 3), high=round(max(f, f * max(inv)), 3),
            fit_rows=[r["id"] for _, r in group], fit_sources=sorted({r["source_id"] for _, r in group}), source=["S_PUBLISHED_FIT"],
        ))

    if members:
        one("global", {}, members)
    for level in levels:
        keys = GROUPS[level]
        groups: dict[tuple[str, ...], list[tuple[dict[str, str], dict[str, Any]]]] = defaultdict(list)
        for m in members:
            groups[tuple(m[0][k] for k in keys)].append(m)
        for key, group in sorted(groups.items()):
            if "" in key:
                continue  # rows that do not say (a mixture of experts without its routing): they inherit
            match = dict(zip(keys, key, strict=True))
            parent = [m for m in members if m[0]["device"] == match.get("device")]
            same = level != "family" and {m[1]["id"] for m in group} == {m[1]["id"] for m in parent}
            if len(group) >= MIN_FIT_ROWS and len({m[1]["source_id"] for m in group}) >= MIN_FIT_SOURCES and not same:
                one(level, _match(keys, key, [m[0] for m in group]), group)
    return out


def fit_all(ctx: Context | None = None) -> list[LevelRow]:
    ctx = ctx or Context.load()
    done: list[LevelRow] = []
    for constant, select, levels in ORDER:
        done += fit(constant, select, levels, _with_levels(ctx, done))
    return done


# the grid each family's k is chosen on: 0 (one MFU per stack, whatever the chip) to 0.006 in steps of 0.0002
INTENSITY_GRID = [round(i * 0.0002, 4) for i in range(31)]


def families(ctx: Context) -> tuple[str, ...]:
    """The families with a reference chip, each fitting its own k (training_intensity.reference)."""
    return tuple(ctx.constants.estimator.training_intensity.reference)


def _with_intensity(ctx: Context, k: float, family: str) -> Context:
    """``ctx`` with ``family``'s k (training_intensity.reference[family].k) set to ``k``."""
    est = ctx.constants.estimator
    ti = est.training_intensity
    ref = ti.reference[family].model_copy(update={"k": k})
    ti = ti.model_copy(update={"reference": {**ti.reference, family: ref}})
    est = est.model_copy(update={"training_intensity": ti})
    return dataclasses.replace(ctx, constants=dataclasses.replace(ctx.constants, estimator=est))


def intensity_bound(ctx: Context, family: str) -> float:
    """The largest k a family's MFU rows allow: with the memory-bound share removed (a chip of infinite bandwidth)
    a step would reach MFU_ref x (1 + k x ref) of its peak, which cannot exceed what its matmuls attain (the reference
    chip's specs.attained.matmul bf16, 1 where no microbenchmark was read); MFU_ref the family's highest training_mfu
    expected (its best-tuned stack)."""
    est = ctx.constants.estimator
    ref = est.training_intensity.reference[family]
    top = max(row.expected for row in est.training_mfu if row.device == family)
    attained = ref.matmul.get("bf16", 1.0)
    return (attained / top - 1.0) / ref.flop_per_byte


def intensity_errors(family: str, ctx: Context | None = None) -> list[tuple[float, float]]:
    """(k, mean |log error|) of ``family``'s fit training rows for each k of the grid up to intensity_bound, with the
    training levels refitted at each k (held-out rows are never read). The mean, not the median: with one continuous
    parameter the median jumps from row to row (the levels absorb k on the chips that have one), the mean (least
    absolute deviation in log space) is smooth, with its minimum where the chips without a level of their own put it."""
    ctx = ctx or Context.load()
    train = [r for r in cp.rows() if r["split"] == "fit" and r["kind"] == "training" and not cp.not_evaluable(r)
             and ctx.catalog.get(r["accelerator"]).device == family]
    bound = intensity_bound(ctx, family)
    out = []
    for k in [k for k in INTENSITY_GRID if k <= bound]:
        c = _with_intensity(ctx, k, family)
        done: list[LevelRow] = []
        for constant, select, levels in ORDER[:3]:  # the training constants
            done += fit(constant, select, levels, _with_levels(c, done))
        found = [cp.evaluate(r, _with_levels(c, done)) for r in train]
        out.append((k, statistics.mean(abs(math.log(x.ratio)) for x in found if x.estimated is not None)))
    return out


def fit_intensity(ctx: Context | None = None) -> dict[str, float]:
    """Each family's k (training_intensity.reference[family].k): the k of the grid, within its bound, with the
    smallest mean |log error| on the family's fit training rows."""
    ctx = ctx or Context.load()
    return {fam: best_intensity(intensity_errors(fam, ctx)) for fam in families(ctx)}


def best_intensity(errors: list[tuple[float, float]]) -> float:
    return min(errors, key=lambda kv: (round(kv[1], 6), kv[0]))[0]


def main() -> None:
    if "--intensity" in sys.argv:
        ctx = Context.load()
        for fam in families(ctx):
            errors = intensity_errors(fam, ctx)
            print(f"{fam}: bound k <= {intensity_bound(ctx, fam):.5f}")
            for k, err in errors:
                print(f"  k = {k:.4f}: mean |log error| of the {fam} fit training rows {err:.4f}")
            print(f"training_intensity.reference.{fam}.k: {best_intensity(errors)}")
        return
    for x in fit_all():
        match = ", ".join(f"{k}: {v}" for k, v in x.match.items())
        print(f"  - constant: {x.constant}\n    level: {x.level}\n    match: {{{match}}}\n"
              f"    value: {x.value}\n    low: {x.low}\n    high: {x.high}\n"
              f"    fit_sources: [{', '.join(x.fit_sources)}]\n    fit_rows: [{', '.join(x.fit_rows)}]\n"
              f"    source: [S_PUBLISHED_FIT]")


if __name__ == "__main__":
    main()
