"""Compare the current estimator with every published measurement in tests/data/published.yaml.

``python -m tests.calibration_published`` prints one table, for the fit and the held-out publications apart,
broken down by family (TPU / GPU), generation (chip), stack, regime and metric: how many rows were compared,
how many could not be (and why, listed below the table), the median |error| of the estimate, how many rows are
outside 2x, the signed median and the coverage of the estimate's low/high range. ``--rows`` also prints every row.

Each row becomes a profile + accelerator + count and is estimated through the library (advisor.estimator.estimate),
the way tests/calibration.py, calibration_serving.py and calibration_runs.py do:
  training_tokens_per_s_per_chip  estimate's tokens/s / count (training, 100 B tokens at the row's sequence length);
  mfu                             6 x (active) params x that tokens/s over the chip's bf16 peak;
  wall_hours                      estimate's hours for the run's tokens (less its start-up where the row's clock
                                  starts after initialisation: clock: run, MLPerf's run_start);
  output_tokens_per_s[_per_chip], throughput_tokens_per_s  the replica's output tokens/s at batch = the row's concurrency;
  tpot_ms, latency_s              the estimate's TPOT / request latency at that batch;
  ttft_ms                         steady arrivals: the estimate's TTFT; closed-loop / prefill-only arrivals: the
                                  queueing model of tests/calibration_serving.ttft_ms.
Errors: error = estimate / measured - 1 (its median absolute value, like the other calibration scripts). The signed
median is of the *speed ratio*: estimated / measured throughput, or measured / estimated time for time metrics
(TPOT, TTFT, latency, wall hours), so that above 1 always means the estimator is optimistic (faster than published).
Coverage: the share of rows whose measured value lies inside the estimate's low..high range, where the estimator
gives one (training: hours_low..hours_high); serving estimates carry no range, so their coverage is n/a.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.api import Context
from advisor.estimate.search import estimate
from advisor.models import Profile

DATA = Path(__file__).parent / "data" / "published.yaml"
# Precisions the profile schema has no name for: block-scaled 8-bit is 8-bit, 4-bit floats are sized as 4-bit
# (as tests/calibration.py does for fp4).
PRECISION = {"mxfp8": "fp8", "nvfp4": "int4", "fp4": "int4"}
JAX_STACKS = {"maxtext", "jax-other", "jetstream", "vllm-tpu", "sglang-jax"}
SERVING_STACK = {"vllm-gpu": "vllm", "vllm-tpu": "vllm", "sglang": "sglang", "sglang-jax": "sglang",
                 "tensorrt-llm": "tensorrt-llm", "jetstream": "jetstream"}
# the stack names tests/data/serving.yaml (and so calibration_serving.ttft_ms) uses
SERVING_YAML_STACK = {"vllm-gpu": "vllm", "vllm-tpu": "vllm-tpu", "sglang-jax": "sglang", "sglang": "sglang", "tensorrt-llm": "nim"}
TIME_METRICS = {"tpot_ms", "ttft_ms", "latency_s", "wall_hours", "time_to_train_min"}
TRAINING_TOKENS_B = 100.0  # a long run, so compile time and start-up do not count in tokens/s


def load() -> dict[str, Any]:
    return dict(yaml.safe_load(DATA.read_text()))


def rows() -> list[dict[str, Any]]:
    return list(load()["rows"])


@dataclass
class Result:
    id: str
    split: str
    device: str
    accelerator: str
    stack: str
    regime: str
    metric: str
    measured: float
    estimated: float | None = None
    low: float | None = None  # the estimate's range in the metric's unit, where the estimator gives one
    high: float | None = None
    reason: str | None = None  # why the row could not be compared

    @property
    def ratio(self) -> float:
        """estimate / measured."""
        assert self.estimated is not None
        return self.estimated / self.measured

    @property
    def speed_ratio(self) -> float:
        """Above 1: the estimate is faster than the publication (optimistic)."""
        return 1.0 / self.ratio if self.metric in TIME_METRICS else self.ratio

    @property
    def covered(self) -> bool | None:
        if self.low is None or self.high is None:
            return None
        lo, hi = sorted((self.low, self.high))
        return lo <= self.measured <= hi


def regime(r: dict[str, Any]) -> str:
    if r["kind"] == "training":
        return "train <256 chips" if r["count"] < 256 else "train >=256 chips"
    if r.get("scenario") == "batch":
        return "serve batch"
    if r.get("concurrency") == 1 or r.get("scenario") == "c1":
        return "serve c=1"
    if r.get("scenario") == "saturated":
        return "serve saturated"
    return "serve loaded"


def _model(r: dict[str, Any]) -> dict[str, Any]:
    model = {k: v for k, v in r["model"].items() if k != "name" and v is not None}
    if model.get("active_params_b"):
        model["architecture"] = "moe"
    model["precision"] = PRECISION.get(r["precision"], r["precision"])
    return model


def profile_for(r: dict[str, Any]) -> Profile:
    stack = r["stack"]
    software: dict[str, Any] = {"framework": "jax" if stack in JAX_STACKS else "pytorch"}
    if stack in ("megatron-nemo", "megatron-deepspeed"):
        software["cuda_libraries"] = ["megatron"]
    data: dict[str, Any] = {"name": r["id"], "domain": "llm", "model": _model(r), "software": software,
                            "deployment": {"clouds": ["gcp", "aws", "azure", "on-prem"]}}
    if r["kind"] == "training":
        # a fine-tuning row (training_method lora | full: Megatron-Bridge's LoRA and SFT tables) is sized as one
        method = r.get("training_method")
        data["task"] = "fine-tuning" if method else "training"
        # the publisher's global batch (sequences a step), where the row gives it: the plan's data-parallel width and
        # its serial-step floor follow from it
        data["training"] = {"tokens_b": r.get("tokens_b") or TRAINING_TOKENS_B, "seq_len": r["seq_len"],
                            **({"method": method} if method else {}),
                            **({"global_batch": r["global_batch"]} if r.get("global_batch") else {})}
    else:
        data["task"] = "inference"
        software["serving_stack"] = SERVING_STACK.get(stack, "none")
        # a row at a stated concurrency is one replica at that concurrency: a load so light that one replica carries it
        # (at 1 request/s, a concurrency-1 row of 2,000 output tokens would need 38 replicas and read as infeasible on
        # the publisher's 2 chips)
        qps = 1e-3 if r.get("concurrency") else 1.0
        data["inference"] = {"mode": "batch", "input_tokens": r["input_tokens"], "output_tokens": r["output_tokens"], "peak_qps": qps,
                             # the layout the publisher ran: attention split by head unless the row says data-parallel
                             "attention_parallel": r.get("attention_parallel", "tensor")}
    return Profile.model_validate(data)


def not_evaluable(r: dict[str, Any]) -> str | None:
    """Why a row cannot be compared with the current estimator, before trying."""
    if r.get("not_evaluable"):
        return str(r["not_evaluable"])
    if r["kind"] == "serving" and (not r.get("input_tokens") or not r.get("output_tokens")):
        return "input/output lengths not in the row"
    if r["metric"] in ("time_to_train_min", "samples_per_s_per_chip"):
        return f"metric {r['metric']} is not modelled"
    return None


def _serving_ttft(r: dict[str, Any], ctx: Context, steady_ms: float) -> float:
    if r.get("ttft_arrival", "steady") == "steady":
        return steady_ms
    from tests import calibration_serving

    adapted = dict(r, stack=SERVING_YAML_STACK.get(r["stack"], r["stack"]), precision=_model(r)["precision"])
    return calibration_serving.ttft_ms(adapted, ctx, steady_ms)


def _bf16_peak(acc: Any) -> float:
    tf = acc.specs.peak_tflops
    return float(tf.get("bf16") or tf["fp16"])


def evaluate(r: dict[str, Any], ctx: Context) -> Result:
    acc = ctx.catalog.get(r["accelerator"])
    res = Result(r["id"], r["split"], acc.device, acc.id, r["stack"], regime(r), r["metric"], float(r["value"]))
    res.reason = not_evaluable(r)
    if res.reason:
        return res
    try:
        profile = profile_for(r)
        batch = r.get("concurrency") if r["kind"] == "serving" else None
        e = estimate(profile, acc, r["count"], ctx.constants, batch=batch)
        if not e.feasible and any(w in (e.why_not or "") for w in ("not offered", "none owned")):
            # a count no cloud rents (a single B200, a GB200 tray) or a chip only on-prem (MI355X): the publisher owned
            # it, so size it as owned (no price)
            e = estimate(profile, acc, r["count"], ctx.constants, batch=batch, owned_chips=r["count"])
    except Exception as exc:  # a row the estimator rejects is reported, not dropped
        res.reason = f"estimator error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        return res
    if not e.feasible:
        res.reason = f"estimator: infeasible ({e.why_not})"
        return res
    m, n = r["metric"], r["count"]
    value: float | None
    if m in ("training_tokens_per_s_per_chip", "wall_hours", "mfu"):
        if not e.hours or not e.tokens_per_second:
            res.reason = "estimator gave no training time"
            return res
        if m == "wall_hours":
            # a clock that starts after initialisation (MLPerf's run_start) leaves the estimate's start-up out
            startup = float(e.assumptions.get("startup_hours") or 0.0) if r.get("clock") == "run" else 0.0
            value = e.hours - startup
            res.low = None if e.hours_low is None else e.hours_low - startup
            res.high = None if e.hours_high is None else e.hours_high - startup
        else:
            value = e.tokens_per_second / n
            if m == "mfu":  # 6 x (active) params x tokens/s over the chip's bf16 peak
                params = r["model"].get("active_params_b") or r["model"]["params_b"]
                value *= 6.0 * params * 1e9 / (_bf16_peak(acc) * 1e12)
            if e.hours_low and e.hours_high:  # throughput scales as 1 / hours
                res.low, res.high = value * e.hours / e.hours_high, value * e.hours / e.hours_low
    elif m == "output_tokens_per_s_per_chip":
        value = (e.tokens_per_second or 0.0) / n
    elif m in ("output_tokens_per_s", "throughput_tokens_per_s"):
        value = e.tokens_per_second
    elif m == "tpot_ms":
        value = e.tpot_ms
    elif m == "latency_s":
        value = None if e.latency_ms is None else e.latency_ms / 1000.0
    elif m == "ttft_ms":
        try:
            value = None if e.ttft_ms is None else _serving_ttft(r, ctx, e.ttft_ms)
        except (AssertionError, KeyError) as exc:
            res.reason = f"TTFT queueing model unavailable for this stack/family ({type(exc).__name__}: {exc})"
            return res
    else:
        res.reason = f"metric {m} is not modelled"
        return res
    if not value:
        res.reason = f"estimator gave no {m}"
        return res
    res.estimated = float(value)
    if r["kind"] == "serving" and res.low is None:  # the estimate's range of the metric, where it gives one
        key = {"tpot_ms": "tpot_ms", "ttft_ms": "ttft_ms", "latency_s": "latency_ms"}.get(m, "tokens_per_second")
        rng = e.ranges.get(key)
        steady = m != "ttft_ms" or r.get("ttft_arrival", "steady") == "steady"
        if rng is not None and steady:
            times = {"tpot_ms": e.tpot_ms, "ttft_ms": e.ttft_ms, "latency_ms": e.latency_ms}
            scale = value / times.get(key, e.tokens_per_second)  # type: ignore[operator]
            res.low, res.high = rng[0] * scale, rng[1] * scale
    return res


def run(ctx: Context | None = None) -> list[Result]:
    ctx = ctx or Context.load()
    return [evaluate(r, ctx) for r in rows()]


@dataclass
class Summary:
    n: int
    skipped: int
    median_abs_error: float | None
    outside_2x: int
    signed: dict[str, float]  # speed-ratio median: "all", and "tpu" / "gpu" where present
    covered: int
    with_range: int


def summarise(results: list[Result]) -> Summary:
    ok = [x for x in results if x.estimated is not None]
    signed = {}
    if ok:
        signed["all"] = statistics.median(x.speed_ratio for x in ok)
    for dev in ("tpu", "gpu"):
        mine = [x.speed_ratio for x in ok if x.device == dev]
        if mine:
            signed[dev] = statistics.median(mine)
    ranged = [x for x in ok if x.covered is not None]
    return Summary(
        n=len(ok), skipped=len(results) - len(ok),
        median_abs_error=statistics.median(abs(x.ratio - 1) for x in ok) if ok else None,
        outside_2x=sum(1 for x in ok if max(x.ratio, 1 / x.ratio) > 2.0),
        signed=signed, covered=sum(1 for x in ranged if x.covered), with_range=len(ranged),
    )


GROUPS: list[tuple[str, Callable[[Result], str]]] = [
    ("all", lambda x: "all"),
    ("family", lambda x: x.device.upper()),
    ("chip", lambda x: x.accelerator),
    ("stack", lambda x: x.stack),
    ("regime", lambda x: x.regime),
    ("metric", lambda x: x.metric),
]


def _line(split: str, group: str, key: str, s: Summary) -> str:
    mae = "-" if s.median_abs_error is None else f"{s.median_abs_error:7.1%}"
    sig = "  ".join(f"{k} {v:.2f}" for k, v in s.signed.items() if k != "all" or len(s.signed) == 1) or "-"
    cov = f"{s.covered}/{s.with_range}" if s.with_range else "n/a"
    return f"{split:8s} {group:7s} {key:32s} {s.n:4d} {s.skipped:4d} {mae:>8s} {s.outside_2x:5d}  {cov:>7s}  {sig}"


def table(results: list[Result]) -> list[str]:
    out = [
        "ratio: speed ratio, estimated / measured throughput (measured / estimated for time metrics); above 1 = optimistic",
        f"{'split':8s} {'by':7s} {'group':32s} {'n':>4s} {'n/e':>4s} {'med|err|':>8s} {'>2x':>5s}  {'covered':>7s}  signed median (TPU / "
        "GPU)",
    ]
    for split in ("fit", "held-out"):
        sel = [x for x in results if x.split == split]
        for group, key in GROUPS:
            for k in sorted({key(x) for x in sel}):
                out.append(_line(split, group, k, summarise([x for x in sel if key(x) == k])))
    both = summarise(results)
    tilt = f"{both.signed['tpu'] / both.signed['gpu']:.2f}" if {"tpu", "gpu"} <= both.signed.keys() else "n/a"
    out.append(f"all rows: {len(results)}, compared {both.n}, not evaluable {both.skipped}; TPU/GPU tilt (signed medians) {tilt}")
    return out


def main() -> None:
    results = run()
    if "--rows" in sys.argv:
        print(f"{'row':58s} {'split':8s} {'chip':10s} {'metric':31s} {'measured':>10s} {'estimated':>10s} {'est/meas':>8s}")
        for x in results:
            if x.estimated is not None:
                print(f"{x.id:58s} {x.split:8s} {x.accelerator:10s} {x.metric:31s} {x.measured:10.4g} {x.estimated:10.4g} {x.ratio:8.2f}")
    print("\n".join(table(results)))
    skipped = [x for x in results if x.estimated is None]
    print(f"\nnot evaluable ({len(skipped)}):")
    for x in skipped:
        print(f"  {x.id:58s} {x.split:8s} not evaluable: {x.reason}")


if __name__ == "__main__":
    main()
