"""Estimate published non-token workloads (tests/data/workloads.yaml) at their chip and count.

Reports predicted / measured hours per row, split into 'fit' and 'held-out'. Used by
tests/test_workloads.py and by ``python -m tests.calibration_workloads``.
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

DATA = Path(__file__).parent / "data" / "workloads.yaml"


@dataclass
class Row:
    id: str
    split: str
    kind: str
    accelerator: str
    count: int
    hours: float
    predicted: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.hours


def rows() -> list[dict[str, Any]]:
    return list(yaml.safe_load(DATA.read_text()))


def run(ctx: Context) -> list[Row]:
    out = []
    for r in rows():
        profile = Profile.model_validate(r["profile"])
        e = estimate(profile, ctx.catalog.get(r["accelerator"]), r["count"], ctx.constants)
        # the published figures are training time: leave out the estimator's fixed start-up
        steps = (e.hours or 0.0) - float(e.assumptions.get("startup_hours") or 0.0)
        out.append(Row(r["id"], r["split"], r["kind"], r["accelerator"], r["count"], r["hours"], steps))
    return out


def main() -> None:
    result = run(Context.load())
    print(f"{'row':30} {'split':8} {'kind':15} {'chip':10} {'n':>3} {'meas h':>8} {'pred h':>8} {'ratio':>6}")
    for r in result:
        print(f"{r.id:30} {r.split:8} {r.kind:15} {r.accelerator:10} {r.count:3d} {r.hours:8.3f} {r.predicted:8.3f} {r.ratio:6.2f}")
    for split in ("fit", "held-out"):
        sel = [r for r in result if r.split == split]
        if sel:
            err = statistics.median(abs(r.ratio - 1) for r in sel)
            within = sum(0.5 <= r.ratio <= 2 for r in sel)
            print(f"{split:8} n={len(sel)}  within 2x: {within}/{len(sel)}  median |time error| = {err:.1%}")


if __name__ == "__main__":
    main()
