"""Compare the estimator with published throughput measurements (tests/data/measurements.yaml).

Used by tests/test_calibration.py and by ``python -m tests.calibration`` (prints the table).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.catalog import Catalog
from advisor.constants import Constants
from advisor.estimate.search import estimate
from advisor.models import Profile

DATA = Path(__file__).parent / "data" / "measurements.yaml"
PRECISION = {"fp4": "int4"}
# Rows whose unit the estimator does not model (samples/s with beam search).
UNMODELLED_UNITS = {"samples_per_second_per_chip"}


@dataclass
class Row:
    id: str
    kind: str
    accelerator: str
    count: int
    measured: float
    estimated: float
    source: str
    split: str = "held-out"

    @property
    def ratio(self) -> float:
        return self.estimated / self.measured


def skip_reason(m: dict[str, Any]) -> str | None:
    """Why a published row cannot be compared like for like (reported, not hidden)."""
    if m["measured"]["unit"] in UNMODELLED_UNITS:
        return "unit is samples/s with beam search; the estimator models tokens/s"
    if m["kind"] == "inference" and not m.get("input_tokens"):
        return "mean input length of the benchmark data set is not in our sources"
    return None


def measurements() -> list[dict[str, Any]]:
    return [m for m in yaml.safe_load(DATA.read_text()) if skip_reason(m) is None]


def skipped() -> list[tuple[str, str]]:
    return [(m["id"], r) for m in yaml.safe_load(DATA.read_text()) if (r := skip_reason(m))]


def _profile(m: dict[str, Any]) -> Profile:
    model = {k: v for k, v in m["model"].items() if k != "name" and v is not None}
    model["precision"] = PRECISION.get(m.get("precision") or "bf16", m.get("precision") or "bf16")
    stack = m["stack"]
    software: dict[str, Any] = {"framework": "jax" if stack in ("jax", "jetstream") else "pytorch"}
    if stack == "megatron":
        software["cuda_libraries"] = ["megatron"]
    data: dict[str, Any] = {"name": m["id"], "domain": "llm", "model": model, "software": software}
    if m["kind"] == "training":
        data["task"] = "training"
        data["training"] = {"tokens_b": 100, "seq_len": m["seq_len"]}
    else:
        data["task"] = "inference"
        data["inference"] = {
            "mode": "batch",
            "input_tokens": m["input_tokens"],
            "output_tokens": m.get("output_tokens") or 256,
            "peak_qps": 1,
        }
    return Profile.model_validate(data)


def run(catalog: Catalog, constants: Constants) -> list[Row]:
    rows = []
    for m in measurements():
        profile = _profile(m)
        acc = catalog.get(m["accelerator"])
        e = estimate(profile, acc, m["count"], constants, batch=m.get("batch"))
        per_chip = (e.tokens_per_second or 0.0) / m["count"]
        rows.append(Row(m["id"], m["kind"], acc.id, m["count"], m["measured"]["value"], per_chip, m["source"], m["split"]))
    return rows


def summary(rows: list[Row]) -> dict[str, float]:
    errors = [abs(r.ratio - 1) for r in rows]
    return {
        "n": len(rows),
        "median_abs_error": statistics.median(errors),
        "worst_ratio": max(max(r.ratio, 1 / r.ratio) for r in rows),
    }


def main() -> None:
    from advisor.catalog import load_catalog
    from advisor.constants import load_constants

    catalog = load_catalog()
    rows = run(catalog, load_constants())
    print(f"{'id':45s} {'acc':10s} {'n':>5s} {'measured':>10s} {'estimated':>10s} {'ratio':>6s}")
    for r in rows:
        print(f"{r.id:45s} {r.accelerator:10s} {r.count:5d} {r.measured:10.1f} {r.estimated:10.1f} {r.ratio:6.2f}")
    for rid, why in skipped():
        print(f"{rid:45s} skipped: {why}")
    s = summary(rows)
    print(f"n={s['n']}  median |error| = {s['median_abs_error']:.1%}  worst ratio = {s['worst_ratio']:.2f}x")
    devices = {r.accelerator: catalog.get(r.accelerator).device for r in rows}
    for split in ("fit", "held-out"):
        sel = [r for r in rows if r.split == split]
        if not sel:
            continue
        s = summary(sel)
        signed = {
            d: statistics.median(r.ratio for r in sel if devices[r.accelerator] == d)
            for d in ("tpu", "gpu")
            if any(devices[r.accelerator] == d for r in sel)
        }
        tilt = f"{signed['tpu'] / signed['gpu']:.2f}" if len(signed) == 2 else "n/a (one family)"
        fam = "  ".join(f"{d.upper()} signed median {v:.2f}" for d, v in signed.items())
        print(
            f"{split:8s} n={s['n']}  median |error| = {s['median_abs_error']:.1%}  worst ratio = {s['worst_ratio']:.2f}x  {fam}  TPU/GPU "
            f"{tilt}"
        )


if __name__ == "__main__":
    main()
