"""Fit the levelled constants of rules/estimator.yaml (``levels``) on the fit rows of tests/data/published.yaml.

``python -m tests.fit_levels`` prints, for each constant, every level whose rows qualify (>= 3 fit rows from >= 2
independent publications; global always) with its value (the median of measured / estimated throughput of its rows
with the constant set to 1), its spread (the smallest and largest of them) and its rows, as YAML to paste under
``levels:``. Held-out rows are never read. The constants are fitted in order, each with the ones before applied:

1. low_precision_training_factor: dense training rows computed in 8 bits (fp8, mxfp8, int8);
2. moe_training_factor: mixture-of-experts training rows.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from typing import Any

from advisor.api import Context
from advisor.constants import LEVEL_KEY, MIN_FIT_ROWS, MIN_FIT_SOURCES, LevelRow
from advisor.estimate.efficiency import stack_for
from advisor.estimate.training import LOW_PRECISION, level_attrs

from . import calibration_published as cp

ORDER: list[tuple[str, Any, tuple[str, ...]]] = [
    ("low_precision_training_factor", lambda r, prec: r["kind"] == "training" and not r["model"].get("active_params_b") and prec in LOW_PRECISION,
     ("family", "generation", "stack", "vendor", "precision")),
    # the precision of a MoE run is the low-precision factor's (applied first): no precision level here
    ("moe_training_factor", lambda r, prec: r["kind"] == "training" and bool(r["model"].get("active_params_b")),
     ("family", "generation", "stack", "vendor")),
]
# the groups a level is fitted for: the attributes it matches (the level's own key, with the family above it)
GROUPS = {"family": ("device",), "generation": ("device", "accelerator"), "stack": ("device", "stack"),
          "vendor": ("device", "vendor"), "precision": ("device", "precision")}


def _with_levels(ctx: Context, levels: list[LevelRow]) -> Context:
    est = ctx.constants.estimator.model_copy(update={"levels": levels})
    return dataclasses.replace(ctx, constants=dataclasses.replace(ctx.constants, estimator=est))


def _row_attrs(r: dict[str, Any], ctx: Context) -> tuple[dict[str, str], str | None]:
    acc = ctx.catalog.get(r["accelerator"])
    profile = cp.profile_for(r)
    used = acc.compute_precision(profile.model.precision)[0]
    return level_attrs(profile, acc, stack_for(profile, acc.device), used), used


def fit(constant: str, select: Any, levels: tuple[str, ...], ctx: Context) -> list[LevelRow]:
    """The qualifying levels of ``constant`` (global first), evaluated with ``ctx``'s levels minus this one's."""
    ctx = _with_levels(ctx, [x for x in ctx.constants.estimator.levels if x.constant != constant])
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
            parent = [m for m in data if m[0]["device"] == dict(zip(keys, key, strict=True)).get("device", m[0]["device"])]
            same = level != "family" and {m[2] for m in members} == {m[2] for m in parent}
            if len(members) >= MIN_FIT_ROWS and len({m[3] for m in members}) >= MIN_FIT_SOURCES and not same:
                row(level, dict(zip(keys, key, strict=True)), members)  # (a level that only repeats its family adds nothing)
    assert all(LEVEL_KEY[x.level] in x.match for x in out if x.level != "global")
    return out


def fit_all(ctx: Context | None = None) -> list[LevelRow]:
    ctx = ctx or Context.load()
    done: list[LevelRow] = []
    for constant, select, levels in ORDER:
        done += fit(constant, select, levels, _with_levels(ctx, done))
    return done


def main() -> None:
    for x in fit_all():
        match = ", ".join(f"{k}: {v}" for k, v in x.match.items())
        print(f"  - constant: {x.constant}\n    level: {x.level}\n    match: {{{match}}}\n"
              f"    value: {x.value}\n    low: {x.low}\n    high: {x.high}\n"
              f"    fit_sources: [{', '.join(x.fit_sources)}]\n    fit_rows: [{', '.join(x.fit_rows)}]\n"
              f"    source: [S_PUBLISHED_FIT]")


if __name__ == "__main__":
    main()
