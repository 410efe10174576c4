"""Compare the serving model with published measurements at a known operating point
(tests/data/serving.yaml): TPOT where the row has it, TTFT where the source measured it in steady state,
and end-to-end request latency (metric ``latency``) where the row has ``latency_ms``: the estimate's
latency_ms at the row's batch (every prompt of the batch arriving together, as vLLM's latency benchmark).

``python -m tests.calibration_serving`` prints the table, the median |error| and the signed median
ratio (predicted / measured; below 1 = optimistic) per family, for the fit and held-out rows, and
``--fit`` solves the per-family bandwidth utilisation and step overhead from the fit rows.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.api import Context
from advisor.estimate import serving
from advisor.estimate.replica import llm_replica
from advisor.estimate.search import estimate
from advisor.models import Profile

DATA = Path(__file__).parent / "data" / "serving.yaml"


@dataclass
class Cmp:
    id: str
    split: str
    device: str
    metric: str
    concurrency: int
    measured: float
    predicted: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured


def rows() -> list[dict[str, Any]]:
    return list(yaml.safe_load(DATA.read_text())["rows"])


# the profile's software.serving_stack for a row's stack (NIM runs TensorRT-LLM engines)
STACKS = {"vllm": "vllm", "vllm-tpu": "vllm", "sglang": "sglang", "sglang-jax": "sglang", "nim": "tensorrt-llm"}


def profile_for(r: dict[str, Any]) -> Profile:
    model = {k: v for k, v in r["model"].items() if k != "name"}
    model["precision"] = r["precision"]
    return Profile.model_validate({
        "name": r["id"], "task": "inference", "domain": "llm", "model": model,
        "inference": {"mode": "batch", "input_tokens": r["input_tokens"], "output_tokens": r["output_tokens"], "peak_qps": 1.0,
                      "attention_parallel": "tensor"},  # the publishers' layout: attention split by head
        "software": {"serving_stack": STACKS[r["stack"]]},
        "deployment": {"clouds": ["gcp", "aws", "azure", "on-prem"]},
    })


def ttft_ms(r: dict[str, Any], ctx: Context, steady_ms: float, mfu: float | None = None) -> float:
    """The TTFT the row's benchmark measured, by how its prompts arrived (tests/data/serving.yaml)."""
    arrival = r.get("ttft_arrival", "steady")
    if arrival == "steady":
        return steady_ms
    acc = ctx.catalog.get(r["accelerator"])
    ic = ctx.constants.estimator.inference
    assert ic.prefill_token_budget is not None
    budget = ic.prefill_token_budget.get(acc, r["stack"].removesuffix("-tpu"))
    assert budget is not None, f"{r['id']}: no prefill_token_budget for {acc.device}/{r['stack']}"
    p = profile_for(r)
    if arrival == "prefill-only":
        p = p.model_copy(update={"inference": p.inference.model_copy(update={"output_tokens": 1})})  # type: ignore[union-attr]
    rep = llm_replica(p, acc, r["count"], ctx.constants)
    u_bw = family_range(ctx, acc.device, "decode_bandwidth_utilisation")
    u_mfu = mfu if mfu is not None else family_range(ctx, acc.device, "prefill_mfu").expected
    fwd = lambda n: rep.forward_time(n, u_bw.expected, u_mfu)  # noqa: E731
    c, n, tokens = r["concurrency"], r["num_prompts"], r["input_tokens"]
    if arrival == "prefill-only":
        return 1000.0 * serving.closed_loop_prefill(n, c, tokens, budget, fwd)
    # closed loop with long outputs: the first c arrive together, later ones one at a time
    burst = 1000.0 * serving.closed_loop_prefill(c, c, tokens, budget, fwd)
    return (c * burst + (n - c) * steady_ms) / n


def family_range(ctx: Context, device: str, name: str) -> Any:
    """The family's own figure (tpu_<name>) where sourced, else the GPU one (rules/estimator.yaml)."""
    ic = ctx.constants.estimator.inference
    return getattr(ic, f"{device}_{name}", None) or getattr(ic, name)


def fit_prefill(ctx: Context) -> None:
    """Solve the TPU prefill MFU from the fit rows' burst TTFT (prefill-only arrivals): for each,
    the MFU at which the modelled TTFT equals the measured one (bisection), then their mean."""
    found = []
    for r in rows():
        acc = ctx.catalog.get(r["accelerator"])
        if r["split"] != "fit" or acc.device != "tpu" or r.get("ttft_arrival", "steady") == "steady":
            continue
        lo, hi = 0.01, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ttft_ms(r, ctx, 0.0, mid) > r["ttft_ms"] else (lo, mid)
        found.append(lo)
        print(f"tpu prefill: {r['id']} TTFT {r['ttft_ms']} ms -> prefill MFU {lo:.3f}")
    if found:
        print(f"tpu prefill MFU (mean of the fit rows): {statistics.mean(found):.3f}")


def run(ctx: Context) -> list[Cmp]:
    out = []
    for r in rows():
        acc = ctx.catalog.get(r["accelerator"])
        e = estimate(profile_for(r), acc, r["count"], ctx.constants, batch=r["concurrency"])
        if r.get("tpot_ms"):
            out.append(Cmp(r["id"], r["split"], acc.device, "tpot", r["concurrency"], r["tpot_ms"], e.tpot_ms or 0.0))
        if r.get("ttft_ms") and r.get("ttft_comparable"):
            out.append(Cmp(r["id"], r["split"], acc.device, "ttft", r["concurrency"], r["ttft_ms"], ttft_ms(r, ctx, e.ttft_ms or 0.0)))
        if r.get("latency_ms"):
            out.append(Cmp(r["id"], r["split"], acc.device, "latency", r["concurrency"], r["latency_ms"], e.latency_ms or 0.0))
    return out


def summary(cmps: list[Cmp]) -> dict[str, float]:
    if not cmps:
        return {"n": 0, "median_abs_error": 0.0, "signed_median": 1.0, "worst": 1.0}
    return {
        "n": len(cmps),
        "median_abs_error": statistics.median(abs(c.ratio - 1) for c in cmps),
        "signed_median": statistics.median(c.ratio for c in cmps),
        "worst": max(max(c.ratio, 1 / c.ratio) for c in cmps),
    }


def _solve(rows: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination for the small square systems of the fit (no numpy in the project)."""
    n = len(rhs)
    m = [[*r, v] for r, v in zip(rows, rhs, strict=True)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [a - f * b for a, b in zip(m[k], m[i], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit(ctx: Context) -> None:
    """Solve each family's decode constants from its fit rows, after subtracting the tensor-parallel
    all-reduces (2 x layers x tp_allreduce_us). With W and K the weight and KV-cache bytes a step
    reads at peak bandwidth (ms):
    GPU (two rows): TPOT = (W + K) / u + layers x g (kernels per layer);
    TPU (three rows, one at a large batch): TPOT = W / u + K x f / u + o (one program per step; f =
    how many weight-byte reads a KV byte costs, the paged-attention gather)."""
    c = ctx.constants
    ic = c.estimator.inference
    ar_ms = 2.0 * ic.tp_allreduce_us.value / 1000.0
    for device in ("gpu", "tpu"):
        terms, rhs, ids = [], [], []
        for r in rows():
            acc = ctx.catalog.get(r["accelerator"])
            if r["split"] != "fit" or acc.device != device:
                continue
            rep = llm_replica(profile_for(r), acc, r["count"], c)
            b = r["concurrency"]
            w = min(rep.weights, rep.active_bytes * b) / rep.bandwidth * 1000.0
            k = b * rep.kv_bytes(r["input_tokens"] + r["output_tokens"] / 2.0) / rep.bandwidth * 1000.0
            layers = r["model"]["layers"]
            t = r["tpot_ms"] - (ar_ms * layers if r["count"] > 1 else 0.0)
            terms.append([w + k, float(layers)] if device == "gpu" else [w, k, 1.0])
            rhs.append(t)
            ids.append(f"{r['id']} (W={w:.2f} ms, K={k:.2f} ms, {t:.2f} ms less all-reduces)")
        sol = _solve(terms, rhs)
        print(f"{device}: " + "; ".join(ids))
        if device == "gpu":
            print(f"  -> utilisation {1 / sol[0]:.3f}, overhead {sol[1] * 1000:.2f} us per layer")
        else:
            print(f"  -> utilisation {1 / sol[0]:.3f}, kv_read_factor {sol[1] / sol[0]:.2f}, overhead {sol[2]:.2f} ms per step")


def main() -> None:
    ctx = Context.load()
    if "--fit" in sys.argv:
        fit(ctx)
        fit_prefill(ctx)
        return
    cmps = run(ctx)
    print(f"{'row':52s} {'split':8s} {'dev':4s} {'metric':6s} {'conc':>5s} {'measured':>9s} {'predicted':>9s} {'ratio':>6s}")
    for x in cmps:
        print(f"{x.id:52s} {x.split:8s} {x.device:4s} {x.metric:6s} {x.concurrency:5d} {x.measured:9.2f} {x.predicted:9.2f} {x.ratio:6.2f}")
    for metric in ("tpot", "ttft", "latency"):
        mine = [x for x in cmps if x.metric == metric]
        for label, sel in (
            ("all", mine),
            ("fit", [x for x in mine if x.split == "fit"]),
            ("held-out", [x for x in mine if x.split == "held-out"]),
        ):
            for dev in ("tpu", "gpu"):
                s = summary([x for x in sel if x.device == dev])
                print(
                    f"{metric} {label:8s} {dev}: n={s['n']:.0f} median |error| {s['median_abs_error']:.1%} signed median "
                    f"{s['signed_median']:.2f} worst {s['worst']:.2f}x"
                )
        s_tpu, s_gpu = summary([x for x in mine if x.device == "tpu"]), summary([x for x in mine if x.device == "gpu"])
        if s_tpu["n"] and s_gpu["n"]:
            print(
                f"{metric}: TPU/GPU tilt (signed-median ratio) {s_tpu['signed_median'] / s_gpu['signed_median']:.2f}; median |error| "
                f"{summary(mine)['median_abs_error']:.1%}"
            )
    # every serving point, whatever its metric: the bars (median |error| <= 20%, all within
    # 2x, TPU/GPU signed-median ratio 0.87-1.15), for all rows and for the held-out rows alone
    for label, sel in (("all", cmps), ("held-out", [x for x in cmps if x.split == "held-out"])):
        s_all, s_tpu, s_gpu = summary(sel), summary([x for x in sel if x.device == "tpu"]), summary([x for x in sel if x.device == "gpu"])
        c1 = sum(1 for x in sel if x.concurrency == 1)
        print(f"every metric {label:8s}: n={s_all['n']:.0f} ({c1} at concurrency 1) median |error| {s_all['median_abs_error']:.1%} "
              f"worst {s_all['worst']:.2f}x; TPU signed median {s_tpu['signed_median']:.2f} (n={s_tpu['n']:.0f}), "
              f"GPU {s_gpu['signed_median']:.2f} (n={s_gpu['n']:.0f}), tilt {s_tpu['signed_median'] / s_gpu['signed_median']:.2f}")

if __name__ == "__main__":
    main()
