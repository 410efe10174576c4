"""The engine against public accelerator decisions (tests/data/decisions.yaml) and a four-line
constraint baseline: accuracy on the tuning and held-out halves, and how often verdicts at
confidence >= 0.8 are right. ``python -m tests.decisions`` prints the tables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.api import Context
from advisor.models import Profile
from advisor.recommend import Recommendation, recommend

DATA = Path(__file__).parent / "data" / "decisions.yaml"


@dataclass
class Row:
    id: str
    split: str
    outcome: str
    verdict: str
    confidence: float
    baseline: str
    four_line: str = ""

    @property
    def right(self) -> bool:
        return self.verdict == self.outcome


def decisions() -> list[dict[str, Any]]:
    return list(yaml.safe_load(DATA.read_text())["decisions"])


def baseline(p: Profile) -> str:
    """Four lines: edge if on-device; GPU if custom CUDA; CPU if small; TPU if Google-Cloud-only and
    a big JAX/TensorFlow job; else GPU."""
    if p.deployment.edge:
        return "edge"
    if p.software.custom_cuda_kernels:
        return "gpu"
    if p.model.params_b < 1.0:
        return "cpu"
    if list(p.deployment.clouds) == ["gcp"] and p.software.framework in ("jax", "tensorflow"):
        return "tpu"
    return "gpu"


def four_line(p: Profile, rec: Recommendation) -> str:
    """The issue's four-line constraint rule: must run on a cloud without TPUs -> GPU; custom CUDA
    -> GPU; a JAX/TensorFlow (TPU) framework -> TPU; else the cheapest family by the engine's own
    estimates (its best feasible priced configuration per family; GPU when none is priced)."""
    if "gcp" not in p.deployment.clouds:
        return "gpu"
    if p.software.custom_cuda_kernels:
        return "gpu"
    if p.software.framework in ("jax", "tensorflow"):
        return "tpu"
    priced = {d: e.cost_usd for d, e in rec.decision.best_by_device.items() if e is not None and e.feasible and e.cost_usd is not None}
    return min(priced, key=lambda d: (priced[d], d)) if priced else "gpu"


def run(ctx: Context) -> list[Row]:
    out = []
    for d in decisions():
        p = Profile.model_validate(d["profile"])
        rec = recommend(p, ctx.kb, ctx.catalog, ctx.constants, with_flip=False)
        out.append(Row(d["id"], d["split"], d["outcome"], rec.device, rec.confidence, baseline(p), four_line(p, rec)))
    return out


def accuracy(rows: list[Row], *, of: str = "verdict") -> float:
    if not rows:
        return 0.0
    return sum(1 for r in rows if getattr(r, of) == r.outcome) / len(rows)


def confident(rows: list[Row], threshold: float = 0.8) -> tuple[int, int]:
    sure = [r for r in rows if r.confidence >= threshold]
    return sum(1 for r in sure if r.right), len(sure)


def main() -> None:
    rows = run(Context.load())
    print(f"{'decision':46s} {'split':8s} {'chosen':6s} {'advisor':7s} {'conf':>5s} {'baseline':8s} {'4-line':6s}")
    for r in rows:
        mark = "" if r.right else "  <- miss"
        print(f"{r.id:46s} {r.split:8s} {r.outcome:6s} {r.verdict:7s} {r.confidence:5.2f} {r.baseline:8s} {r.four_line:6s}{mark}")
    for split in ("tune", "held-out"):
        sel = [r for r in rows if r.split == split]
        right, n = confident(sel)
        print(f"{split:8s} n={len(sel)}  advisor {accuracy(sel):.0%}  baseline {accuracy(sel, of='baseline'):.0%}  "
              f"four-line {accuracy(sel, of='four_line'):.0%}  confidence >= 0.8: {right}/{n} right")
    right, n = confident(rows)
    print(f"all      n={len(rows)}  advisor {accuracy(rows):.0%}  baseline {accuracy(rows, of='baseline'):.0%}  "
          f"four-line {accuracy(rows, of='four_line'):.0%}  confidence >= 0.8: {right}/{n} right")


if __name__ == "__main__":
    main()
