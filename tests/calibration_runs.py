"""Size published training runs (tests/data/runs.yaml) and compare with what was done.

For each run: the wall time the estimator predicts at the published chip and count, and the
count ``recommend`` chooses on the published chip when the deadline is the published wall time.
Rows are split into 'fit' (they informed a constant) and 'held-out' (they did not); both are
reported. Used by tests/test_calibration_runs.py and by ``python -m tests.calibration_runs``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.api import Context
from advisor.estimate.search import estimate
from advisor.models import Profile
from advisor.recommend import recommend

DATA = Path(__file__).parent / "data" / "runs.yaml"
CLOUDS = ["gcp", "aws", "azure", "on-prem"]


@dataclass
class RunRow:
    id: str
    split: str
    accelerator: str
    count: int
    chosen: int | None
    wall_hours: float
    predicted_hours: float

    @property
    def count_ratio(self) -> float:
        return (self.chosen or 0) / self.count

    @property
    def time_ratio(self) -> float:
        return self.predicted_hours / self.wall_hours


def runs() -> list[dict[str, Any]]:
    return list(yaml.safe_load(DATA.read_text()))


def profile_for(r: dict[str, Any]) -> Profile:
    """The workload as its team would have described it, on the published chip and deadline."""
    model: dict[str, Any] = {"params_b": r["params_b"], "precision": r["precision"] if r["precision"] != "int8" else "bf16"}
    if r.get("active_params_b"):
        model["active_params_b"] = r["active_params_b"]
        model["architecture"] = "moe"
    software: dict[str, Any] = {"framework": "jax" if r["stack"] == "jax" else "pytorch"}
    if r["stack"] == "megatron":
        software["cuda_libraries"] = ["megatron"]
    return Profile.model_validate({
        "name": r["id"],
        "task": "training",
        "domain": "llm",
        "model": model,
        "training": {"tokens_b": r["tokens_b"], "seq_len": r["seq_len"], "deadline_hours": r["wall_hours"]},
        "software": software,
        # capacity as the teams had it: reserved (a committed term), not on-demand quota or a
        # day-priced capacity block that a cost goal would otherwise trade the count for
        "deployment": {"clouds": CLOUDS, "accelerators": [r["accelerator"]], "pricing": "committed-1y"},
        "goal": {"optimize": "cost"},
    })


def run(ctx: Context) -> list[RunRow]:
    rows = []
    for r in runs():
        profile = profile_for(r)
        acc = ctx.catalog.get(r["accelerator"])
        at_count = estimate(profile, acc, r["count"], ctx.constants)
        rec = recommend(profile, ctx.kb, ctx.catalog, ctx.constants, with_flip=False)
        row = next((e for e in rec.table if e.accelerator == acc.id), None)
        rows.append(RunRow(r["id"], r["split"], acc.id, r["count"], row.count if row else None, r["wall_hours"], at_count.hours or 0.0))
    return rows


def summary(rows: list[RunRow]) -> dict[str, float]:
    if not rows:
        return {"n": 0, "median_time_error": 0.0, "within_2x": 0, "worst_count_ratio": 0.0}
    return {
        "n": len(rows),
        "median_time_error": statistics.median(abs(r.time_ratio - 1) for r in rows),
        "median_time_ratio": statistics.median(r.time_ratio for r in rows),
        "within_2x": sum(1 for r in rows if r.chosen and 0.5 <= r.count_ratio <= 2.0),
        "worst_count_ratio": max(max(r.count_ratio, 1 / r.count_ratio) if r.chosen else float("inf") for r in rows),
    }


def main() -> None:
    rows = run(Context.load())
    print(f"{'run':26s} {'split':8s} {'chip':10s} {'published':>9s} {'chosen':>7s} {'x':>5s} {'wall h':>8s} {'pred h':>8s} {'ratio':>6s}")
    for r in rows:
        print(
            f"{r.id:26s} {r.split:8s} {r.accelerator:10s} {r.count:9d} {r.chosen or 0:7d} {r.count_ratio:5.2f} {r.wall_hours:8.1f} "
            f"{r.predicted_hours:8.1f} {r.time_ratio:6.2f}"
        )
    for split in ("fit", "held-out"):
        s = summary([r for r in rows if r.split == split])
        print(
            f"{split:8s} n={s['n']:.0f}  count within 2x: {s['within_2x']:.0f}/{s['n']:.0f}  median |time error| = "
            f"{s['median_time_error']:.1%}  "
            f"median time ratio = {s.get('median_time_ratio', 0):.2f}  worst count ratio = {s['worst_count_ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
