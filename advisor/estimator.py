"""Roofline estimates of time, cost, memory and latency for one configuration.

Pure functions of (profile, accelerator, count, constants). The model, with
its sources, is documented in docs/estimator.md:

* training: FLOPs = 6 x active params x tokens (x the LoRA/QLoRA factor);
  time = FLOPs / (chips x peak x MFU x scaling efficiency);
  memory per chip = sharded weights + gradients + optimiser state
  (ZeRO-3/FSDP-style full sharding) + checkpointed activations;
* LLM inference: prefill is compute-bound, decode is memory-bandwidth-bound
  (weights + KV cache read every step); the batch is the largest that fits
  memory and keeps the latency target; replicas cover ``peak_qps``;
* other inference domains: a per-request FLOPs model (diffusion: per
  denoising step; vision: per image; speech/recsys/other: 2 x params per
  token), with the weights read once per batch.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor import model_families, onprem, serving, sizing, software, workloads
from advisor.catalog import Accelerator, Catalog
from advisor.constants import Constants, Range
from advisor.families import family
from advisor.memo import IdentityMemo
from advisor.models import Profile
from advisor.replica import (
    BYTES,
    Shape,
    is_llm_inference,
    kv_note,
    latency_target,
    llm_replica,
    model_shape,
    multi_host_ok,
    replica_layout,
    request_flops,
    request_model_name,
    search_guess,
    step_overhead,
    unit_for,
)

GIB = 1024**3
HOURS_PER_MONTH = 730.0  # 365 x 24 / 12


@dataclass(slots=True)
class Estimate:
    """Time, cost, memory and throughput of one configuration (a candidate)."""

    accelerator: str
    device: str
    count: int
    shape: str
    mode: str  # training | inference
    hours: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None
    cost_usd: float | None = None
    cost_low: float | None = None
    cost_high: float | None = None
    usd_per_chip_hour: float | None = None
    price_cloud: str | None = None
    price_kind: str | None = None
    tokens_per_second: float | None = None
    memory_per_chip_gb: float = 0.0
    memory_capacity_gb: float = 0.0
    fits_memory: bool = True
    meets_deadline: bool | None = None
    meets_latency: bool | None = None
    within_budget: bool | None = None
    batch: int | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    latency_ms: float | None = None
    replicas: int | None = None
    usd_per_million_tokens: float | None = None
    parallelism: dict[str, Any] | None = None
    at_concurrency_1: dict[str, Any] | None = None
    hosts_per_replica: int = 1
    capacity_rps: float | None = None  # requests/s one replica serves within the latency target
    unit_cost: dict[str, Any] | None = None
    past_knee: bool = False
    owned_chips: int | None = None  # the team owns this many of the accelerator
    feasible: bool = True
    why_not: str | None = None
    warnings: list[str] = field(default_factory=list)
    assumptions: dict[str, Any] = field(default_factory=dict)

    @property
    def priced(self) -> bool:
        return self.cost_usd is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "accelerator": self.accelerator,
            "device": self.device,
            "count": self.count,
            "shape": self.shape,
            "mode": self.mode,
            "hours": _r(self.hours),
            "hours_range": [_r(self.hours_low), _r(self.hours_high)],
            "cost_usd": _r(self.cost_usd, 2),
            "cost_range_usd": [_r(self.cost_low, 2), _r(self.cost_high, 2)],
            "usd_per_chip_hour": _r(self.usd_per_chip_hour, 5),
            "price": {"cloud": self.price_cloud, "kind": self.price_kind} if self.price_cloud else None,
            "tokens_per_second": _r(self.tokens_per_second, 1),
            "memory_per_chip_gb": _r(self.memory_per_chip_gb, 2),
            "memory_capacity_gb": _r(self.memory_capacity_gb, 2),
            "fits_memory": self.fits_memory,
            "meets_deadline": self.meets_deadline,
            "meets_latency": self.meets_latency,
            "within_budget": self.within_budget,
        }
        if self.mode == "inference":
            out.update(
                batch=self.batch,
                ttft_ms=_r(self.ttft_ms, 1),
                tpot_ms=_r(self.tpot_ms, 2),
                latency_ms=_r(self.latency_ms, 1),
                replicas=self.replicas,
                usd_per_million_tokens=_r(self.usd_per_million_tokens, 4),
                at_concurrency_1=self.at_concurrency_1,
                unit_cost=self.unit_cost,
                hosts_per_replica=self.hosts_per_replica,
                capacity_requests_per_second=_r(self.capacity_rps, 3),
            )
        if self.parallelism is not None:
            out["parallelism"] = self.parallelism
        if self.owned_chips is not None:
            out["owned_chips"] = self.owned_chips
        out.update(feasible=self.feasible, why_not=self.why_not, warnings=list(self.warnings))
        out["assumptions"] = self.assumptions
        return out


def _r(value: float | None, digits: int = 3) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value):
        return None
    return float(round(value, digits)) if abs(value) >= 1 else float(f"{value:.{digits + 3}g}")


# --------------------------------------------------------------------------- helpers


def stack_for(profile: Profile, device: str) -> str:
    """The software stack whose utilisation applies on ``device``."""
    return family(device).stack(profile.software.framework, profile.software.cuda_libraries)


def decode_mbu(c: Constants, acc: Accelerator) -> Range:
    """The fraction of HBM bandwidth a memory-bound pass reaches on this family (the registry's row)."""
    return c.estimator.inference.decode_utilisation(family(acc.device).decode_utilisation)


def _software_notes(e: Estimate, sw: software.Resolution) -> None:
    """Caveats into the assumptions; a blocked library makes the configuration infeasible, with the fix."""
    if sw.notes:
        e.assumptions["software"] = list(sw.notes)
    if sw.blocked is not None:
        e.assumptions["software_blocked"] = sw.blocked
        why = f"{sw.blocked['reason'].rstrip('.')}; fix: {sw.blocked['fix']}"
        e.why_not = f"{e.why_not}; {why}" if e.why_not else why


def training_mfu(c: Constants, acc: Accelerator, stack: str) -> Range:
    rows = c.estimator.training_mfu
    for row in rows:
        if row.device == acc.device and row.stack == stack and row.applies_to(acc.id):
            return row
    for row in rows:
        if row.device == acc.device and row.stack == stack and row.accelerator is None:
            return row
    for row in rows:  # the family's first row is its default
        if row.device == acc.device and row.accelerator is None:
            return row
    return rows[0]


class _Price:
    def __init__(
        self, usd: float | None, cloud: str | None, kind: str | None, warning: str | None, unavailable: str | None = None
    ) -> None:
        self.usd, self.cloud, self.kind, self.warning, self.unavailable = usd, cloud, kind, warning, unavailable


_PRICES: IdentityMemo[_Price] = IdentityMemo(4096)


def price_for(profile: Profile, acc: Accelerator, count: int = 0) -> _Price:
    dep = profile.deployment
    # Only counts below a price's min_count can change the answer.
    floor = max((max(p.min_count or 0, (p.max_count or 0) + 1) for p in acc.prices), default=0)
    key = (tuple(dep.clouds), dep.pricing, dep.region, min(count, floor), dep.onprem)
    return _PRICES.get((acc,), key, lambda: _price_for(profile, acc, count or None))


def _price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> _Price:
    """The cheapest of the clouds' price and, where on-prem is allowed, the amortised cost of owning it."""
    dep = profile.deployment
    cloud = _cloud_price_for(profile, acc, count)
    own = onprem.rate(acc, dep.onprem) if "on-prem" in dep.clouds else None
    if own is not None and (cloud.usd is None or own.usd_per_chip_hour < cloud.usd):
        return _Price(own.usd_per_chip_hour, "on-prem", own.kind, None)
    return cloud


def _cloud_price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> _Price:
    clouds: list[str] = list(profile.deployment.clouds)
    kind = profile.deployment.pricing
    region = profile.deployment.region
    p = acc.price(clouds, kind, region, count)
    if p is not None:
        return _Price(p.usd_per_chip_hour, p.cloud, p.kind, None)
    whole = acc.price(clouds, kind, region)
    if whole is not None and count is not None:
        # Offered at this kind only in other shapes (GCP on-demand H100: whole 8-GPU VMs; AWS g5: 1, 4 or 8 GPUs).
        sizes = sorted({(q.min_count or 1, q.max_count) for q in acc.prices if q.cloud in clouds and q.kind == kind})
        told = " or ".join(f"{lo}" if hi == lo else (f"{lo}-{hi}" if hi else f"from {lo}") for lo, hi in sizes)
        return _Price(None, None, None, None, unavailable=f"{kind} on {whole.cloud} only {told} chips")
    if kind != "on-demand":
        p = acc.price(clouds, "on-demand", region, count)
        if p is not None:
            return _Price(
                p.usd_per_chip_hour, p.cloud, p.kind,
                f"{acc.id}: no {kind} price in the catalog; priced at on-demand",
            )
    return _Price(None, None, None, f"{acc.id}: unpriced on {', '.join(clouds)} (no catalog price; add one with --catalog)")


def offered_on(acc: Accelerator, clouds: list[str]) -> bool:
    """Where the family and the catalog say it is offered (else where it is priced)."""
    if acc.local:
        return True  # the user's own machine
    sold = family(acc.device).sold_on(clouds)
    if sold is not None:
        return sold
    if "on-prem" in clouds:
        return True
    if acc.clouds:
        return bool(set(acc.clouds) & set(clouds))
    priced = {p.cloud for p in acc.prices}
    return not priced or bool(priced & set(clouds)) or "on-prem" in clouds


def hosts_for(acc: Accelerator, count: int) -> int:
    """Hosts (VMs or servers) one configuration of ``count`` chips spans."""
    return acc.hosts(count)


def shape_name(acc: Accelerator, count: int) -> str:
    return acc.shape_name(count)


# --------------------------------------------------------------------------- training


def _training_memory(profile: Profile, c: Constants, shape: Shape, method: str) -> tuple[float, float, float, dict[str, Any]]:
    """(state bytes, activation bytes of one sequence, overhead factor, notes): weights, gradients
    and optimiser state are fully sharded (ZeRO-3 / FSDP); activations are divided by tensor parallelism."""
    assert profile.training is not None
    t = profile.training
    m = c.estimator.memory
    n = profile.model.dense_params_b * 1e9  # embedding tables: workloads.embedding_training
    wbytes = BYTES.get(profile.model.precision, 2.0)
    if t.method == "full" and wbytes >= 4:
        # fp32/fp64 training keeps no separate master copy: weights, grads, Adam m and v.
        state = n * 4.0 * wbytes
        sharding = "weights, gradients and Adam state fully sharded over all chips (ZeRO-3 / FSDP)"
    elif t.method == "full":
        # bf16 weights + bf16 grads + fp32 master and Adam m, v (ZeRO paper: 16 B/param).
        state = n * (2.0 * wbytes + m.optimizer_bytes_per_param_full.value)
        sharding = "weights, gradients and Adam state fully sharded over all chips (ZeRO-3 / FSDP)"
    else:
        base_bytes = 0.5 if method == "qlora" else wbytes
        trainable = n * c.estimator.fine_tuning.lora_trainable_fraction.value
        state = n * base_bytes + trainable * (2.0 * 2 + m.optimizer_bytes_per_param_full.value)
        sharding = f"frozen base weights ({base_bytes:g} B/param) and adapter state sharded over all chips"
    # Checkpointed activations for one sequence: the layer inputs kept
    # (2 B x hidden x layers per token) plus one layer's working set re-computed
    # (34 x hidden bytes per token; Korthikanti et al. 2022, eq. 2, flash attention).
    activations = t.seq_len * shape.hidden * (2.0 * shape.layers + 34.0)
    overhead = 1.0 + m.activation_overhead_fraction.value
    return state, activations, overhead, {
        "sharding": sharding,
        "state_gb_total": round(state / 1e9, 2),
        "activations_gb_per_sequence": round(activations / 1e9, 3),
    }


@dataclass(slots=True)
class _TrainingRate:
    """What a training run on ``acc`` computes and how fast, before any count is chosen."""

    sw: software.Resolution  # its profile: the one sized (a library's equivalent substituted)
    flops: float
    formula: str
    assumed: bool
    peak: float
    fallback: str | None
    stack: str
    mfu: Range
    size_factor: float


def _training_rate(profile: Profile, acc: Accelerator, c: Constants) -> _TrainingRate:
    sw = software.resolve(profile, acc)  # where a library does not run: its equivalent (QLoRA -> bf16 LoRA on TPU)
    profile = sw.profile
    assert profile.training is not None
    ft = c.estimator.fine_tuning
    factor = {"full": 1.0, "lora": ft.lora_flops_factor.value, "qlora": ft.qlora_flops_factor.value}[profile.training.method]
    flops, formula, assumed = profile.training_flops(
        factor, c.estimator.request_flops.vision_flops_per_param.value, model_families.forward_flops(profile),
    )
    _used, peak, fallback = acc.compute_precision(profile.model.precision)
    stack = stack_for(profile, acc.device)
    small = c.estimator.small_model_factor
    size_factor = small.value if min(profile.active_params_b, profile.model.dense_params_b) < small.applies_below_params_b else 1.0
    size_factor *= workloads.mfu_factor(profile, acc, c)
    return _TrainingRate(
        sw, flops, formula, assumed, peak or acc.peak_bf16_flops,  # no FP64 rate: flagged by the estimate
        fallback, stack, training_mfu(c, acc, stack), size_factor,
    )


def training_cost_floor(profile: Profile, acc: Accelerator, c: Constants) -> float | None:
    """Dollars below which no configuration of ``acc`` runs this training workload: every FLOP at the
    expected MFU with no scaling loss (a plan's efficiency is at most 1), no start-up, at the lowest
    price ``acc`` has anywhere (any cloud, kind, region or count) or its on-prem rate where on-prem is
    allowed. None where it has neither (never priced). What the verdict search prunes with."""
    r = _training_rate(profile, acc, c)
    usd = [p.usd_per_chip_hour for p in acc.prices]
    if "on-prem" in profile.deployment.clouds:
        own = onprem.rate(acc, profile.deployment.onprem)
        if own is not None:
            usd.append(own.usd_per_chip_hour)
    if not usd:
        return None
    return r.flops / (r.peak * r.mfu.expected * r.size_factor) / 3600.0 * min(usd)


def estimate_training(profile: Profile, acc: Accelerator, count: int, c: Constants, *, owned_chips: int | None = None) -> Estimate:
    assert profile.training is not None
    e = Estimate(acc.id, acc.device, count, shape_name(acc, count), "training", owned_chips=owned_chips)
    rate = _training_rate(profile, acc, c)
    sw = rate.sw
    profile = sw.profile
    t = profile.training
    assert t is not None
    e.warnings.extend(sw.warnings)
    shape = model_shape(profile)
    tokens = t.tokens_b * 1e9
    method = t.method
    flops, formula, assumed = rate.flops, rate.formula, rate.assumed
    no_formula = workloads.formula_warning(profile)
    if no_formula:
        e.warnings.append(no_formula)
    elif assumed:
        e.warnings.append(f"no FLOPs per sample for a {profile.model.architecture} model: {formula}")
    if rate.fallback:
        e.warnings.append(rate.fallback)
    peak, stack, mfu, size_factor = rate.peak, rate.stack, rate.mfu, rate.size_factor
    ov = c.estimator.overheads
    compile_h = ov.startup_minutes.expected / 60 + (ov.xla_compile_minutes.expected / 60 if family(acc.device).compiles else 0.0)
    emb = workloads.embedding_training(profile, acc, count, c, decode_mbu(c, acc))

    state, activations, overhead, mem_notes = _training_memory(profile, c, shape, method)
    plan, per_chip = sizing.plans(
        profile, acc, count, c, mfu=mfu.expected * size_factor, layers=shape.layers, hidden=shape.hidden,
        activation_bytes=activations, state_bytes=state, overhead=overhead, flops=flops,
    )
    per_chip += emb.bytes_per_chip
    cap = acc.specs.memory_gib * GIB
    e.memory_per_chip_gb = per_chip / 1e9
    e.memory_capacity_gb = cap / 1e9
    e.fits_memory = per_chip <= cap
    scale = plan.efficiency if plan is not None else 1.0
    eff = scale * size_factor
    if plan is None and e.fits_memory:
        seqs = int(sizing.global_batch_tokens(profile, c) // t.seq_len)
        e.why_not = f"more chips than the batch can use ({seqs} sequences per step; set training.global_batch if yours is larger)"

    def hours(util: float, extra_s: float) -> float:
        return flops / (count * peak * util * eff) / 3600 + extra_s / 3600 + compile_h

    e.hours = hours(mfu.expected, emb.seconds[1])
    e.hours_low = hours(mfu.high, emb.seconds[0])
    e.hours_high = hours(mfu.low, emb.seconds[2])
    e.tokens_per_second = tokens / max((e.hours - compile_h) * 3600, 1e-9)
    e.parallelism = plan.to_json() if plan is not None else None

    _price(e, profile, acc, (e.hours or 0.0) * count)
    if t.deadline_hours is not None:
        e.meets_deadline = e.hours <= t.deadline_hours
    if profile.goal.budget_usd is not None and e.cost_usd is not None:
        e.within_budget = e.cost_usd <= profile.goal.budget_usd

    e.assumptions = {
        "flops": f"{flops:.3e}",
        "flops_formula": formula,
        "stack": stack,
        "mfu": {"low": mfu.low, "expected": mfu.expected, "high": mfu.high, "source": mfu.source},
        "peak_tflops_per_chip": round(peak / 1e12, 1),
        "scaling_efficiency": round(scale, 3),
        "global_batch_tokens": round(sizing.global_batch_tokens(profile, c)),
        "small_model_factor": size_factor,
        "memory": mem_notes,
        "model_shape": {"layers": shape.layers, "hidden_size": shape.hidden, "approximated": list(shape.approximated)},
    }
    e.assumptions["startup_hours"] = round(compile_h, 3)
    if emb.notes:
        e.assumptions["embeddings"] = emb.notes
    _software_notes(e, sw)
    target, stated = training_target_hours(profile, c)
    e.assumptions["target_hours"] = target
    if not stated:
        e.assumptions["target_hours_note"] = f"no training.deadline_hours: sized to finish within the default {target:g} h"
    if profile.model.precision == "fp64" and "fp64" not in acc.specs.peak_tflops:
        e.feasible, e.why_not = False, "no FP64 arithmetic on this accelerator"
    _feasibility(e, profile, acc)
    return e


# --------------------------------------------------------------------------- inference


def estimate_inference(
    profile: Profile, acc: Accelerator, count: int, c: Constants, *, batch: int | None = None, owned_chips: int | None = None,
    ranges: bool = True,
) -> Estimate:
    """One serving configuration. ``ranges=False`` (the what-ifs, which read the verdict, its
    configuration and its feasibility): no cost range (the low / high utilisation searches that only
    the confidence's scenarios and the shown ranges read); everything else as in the full estimate."""
    assert profile.inference is not None
    e = Estimate(acc.id, acc.device, count, shape_name(acc, count), "inference", owned_chips=owned_chips)
    sw = software.resolve(profile, acc)
    profile = sw.profile
    inf = profile.inference
    assert inf is not None
    e.warnings.extend(sw.warnings)
    no_formula = workloads.formula_warning(profile)
    if no_formula:
        e.warnings.append(no_formula)
    ic = c.estimator.inference
    fam_key = family(acc.device).decode_utilisation  # the family's own constants (tpu_..., cpu_...)
    mbu = decode_mbu(c, acc)
    # LLM prefill has a per-family figure (fitted on LLM serving stacks); other request models keep
    # the shared one
    pre = ic.prefill_utilisation(fam_key) if is_llm_inference(profile) else ic.prefill_mfu
    reserve = 1.0 - c.estimator.memory.serving_memory_reserve_fraction.value
    _used, peak, fallback = acc.compute_precision(profile.model.precision)
    if fallback:
        e.warnings.append(fallback)
    peak = peak or acc.peak_bf16_flops  # no FP64 rate: flagged below
    bw = acc.specs.memory_bandwidth_gbps * 1e9 * count
    compute = peak * count
    wbytes = BYTES.get(profile.model.precision, 2.0)
    tables = workloads.embedding_serving_bytes(profile)
    weights = profile.model.dense_params_b * 1e9 * wbytes + tables
    cap = acc.specs.memory_gib * GIB * count
    usable = cap * reserve
    e.memory_capacity_gb = acc.specs.memory_gib * GIB / 1e9
    e.hosts_per_replica = hosts_for(acc, count)
    tp, stages = replica_layout(acc, count)
    e.parallelism = {"data": 1, "tensor": tp, "pipeline": stages, "expert": count if profile.model.architecture == "moe" else 1}

    llm = is_llm_inference(profile)
    fam_overhead = step_overhead(profile, acc, count, c)
    if e.hosts_per_replica > 1 and not multi_host_ok(profile, acc, c):
        stacks = ", ".join(ic.multi_host_serving.stacks(acc.device))
        e.why_not = f"{profile.software.serving_stack} serves a replica from one host on {family(acc.device).name}; {e.hosts_per_replica} hosts need {stacks}"
    elif e.hosts_per_replica > ic.multi_host_serving.max_hosts_per_replica:
        e.why_not = (
            f"a replica over {e.hosts_per_replica} hosts: beyond the largest published multi-host serving replica "
            f"({ic.multi_host_serving.max_hosts_per_replica} hosts); use a chip with more memory per host or a smaller precision"
        )
    replica: serving.LlmReplica | serving.RequestReplica
    if llm:
        shape = model_shape(profile)
        replica = llm_replica(profile, acc, count, c)
        kv_per_token = replica.kv_per_token
        ctx = inf.input_tokens + inf.output_tokens
        max_batch_mem = int((usable - weights) // max(replica.kv_bytes(ctx), 1.0)) if usable > weights else 0
        mem_notes: dict[str, Any] = {
            "weights_gb": round(weights / 1e9, 2),
            "kv_cache_mb_per_token": round(kv_per_token / 1e6, 4),
            "kv_cache": kv_note(profile, replica),
            "max_batch_by_memory": max_batch_mem,
            "model_shape": {"layers": shape.layers, "hidden_size": shape.hidden, "kv_dim": shape.kv_dim, "approximated": list(shape.approximated)},
        }
    else:
        kv_per_token = 0.0
        flops_req = request_flops(profile, c)
        max_batch_mem = 1024 if usable > weights else 0
        # embedding tables are gathered row by row, not streamed: a step reads the dense weights
        replica = serving.RequestReplica(weights - tables if tables else weights, flops_req, inf.output_tokens, bw, compute, fam_overhead)
        mem_notes = {
            "weights_gb": round(weights / 1e9, 2),
            "request_flops": f"{flops_req:.3e}",
            "request_model": request_model_name(profile),
        }

    e.fits_memory = max_batch_mem >= 1
    if profile.model.precision == "fp64" and "fp64" not in acc.specs.peak_tflops:
        e.why_not = "no FP64 arithmetic on this accelerator"
    if profile.model.precision == "fp8" and "fp8" not in acc.specs.peak_tflops:
        # no FP8 matmuls: the weights stay 1 byte in memory, the arithmetic runs at the 16-bit rate
        e.warnings.append(
            f"no FP8 arithmetic on {acc.id}: FP8 weights are served weight-only (dequantised to 16-bit "
            "in the matmuls, as vLLM's FP8 Marlin kernels do), prefill at the 16-bit rate"
        )
    e.memory_per_chip_gb = weights / count / 1e9
    if not e.fits_memory:
        e.batch = 0
        e.feasible, e.why_not = False, f"weights ({weights / 1e9:.0f} GB) do not fit in {cap * reserve / 1e9:.0f} GB usable"
        e.assumptions = {"memory": mem_notes}
        _software_notes(e, sw)
        _price(e, profile, acc, 0.0)
        e.cost_usd = e.cost_low = e.cost_high = None
        return e

    target_ms, target_note = latency_target(profile, c)
    top = min(max_batch_mem, int(ic.max_concurrency.value))
    if batch is not None:
        top = max(1, min(batch, max(max_batch_mem, 1)))

    utilisation = 1.0 if inf.mode == "batch" else ic.target_utilisation.value  # offline batch jobs run full
    load: dict[str, Any] = {
        "qps": inf.peak_qps, "max_concurrency": top, "target_s": None if target_ms is None else target_ms / 1000.0,
        "utilisation": utilisation, "min_replicas": inf.min_replicas, "slack": ic.unattainable_latency_slack.value,
    }

    def op(u_bw: float, u_mfu: float) -> serving.OperatingPoint:
        def at(b: int) -> serving.Point:
            return replica.point(b, u_bw, u_mfu)

        if batch is not None:  # a measured concurrency: report exactly there
            pt = at(top)
            reps = serving.replicas_for(pt, qps=inf.peak_qps, utilisation=1.0, min_replicas=inf.min_replicas)
            return serving.OperatingPoint(reps, pt, pt, at(1), None if target_ms is None else pt.latency * 1000 <= target_ms)
        return serving.operating_point(at, guess=search_guess(replica, u_bw, u_mfu), **load)

    mid = op(mbu.expected, pre.expected)
    pt = mid.at_peak
    e.batch = pt.concurrency
    e.ttft_ms, e.tpot_ms, e.latency_ms = pt.ttft * 1000, pt.tpot * 1000, pt.latency * 1000
    e.tokens_per_second = pt.tokens_per_second
    e.at_concurrency_1 = {"ttft_ms": _r(mid.at_one.ttft * 1000, 1), "tpot_ms": _r(mid.at_one.tpot * 1000, 2), "latency_ms": _r(mid.at_one.latency * 1000, 1)}
    e.meets_latency = mid.meets_latency
    kv_request = replica.kv_bytes(inf.input_tokens + inf.output_tokens) if isinstance(replica, serving.LlmReplica) else 0.0
    e.memory_per_chip_gb = (weights + pt.concurrency * kv_request) / count / 1e9
    e.replicas = mid.replicas
    e.capacity_rps = mid.at_capacity.requests_per_second
    e.parallelism["data"] = mid.replicas
    hours_month = inf.hours_per_day * HOURS_PER_MONTH / 24
    e.hours = hours_month
    def reps(u_bw: float, u_mfu: float) -> int:
        if batch is not None:
            return op(u_bw, u_mfu).replicas
        return serving.replicas_needed(lambda b: replica.point(b, u_bw, u_mfu), guess=search_guess(replica, u_bw, u_mfu), **load)

    chip_range = None
    if ranges:
        slow, fast = reps(mbu.low, pre.low), reps(mbu.high, pre.high)
        chip_range = (hours_month * count * fast, hours_month * count * slow)
    _price(e, profile, acc, hours_month * count * mid.replicas, chip_hours_range=chip_range)
    e.hours_low = e.hours_high = hours_month
    # per-unit cost at the capacity each replica is provisioned for
    served_per_s = mid.at_capacity.requests_per_second * utilisation
    if e.usd_per_chip_hour is not None and served_per_s > 0:
        usd_per_request = e.usd_per_chip_hour * count / 3600.0 / served_per_s
        e.usd_per_million_tokens = usd_per_request / max(inf.output_tokens, 1) * 1e6 if llm else None
        unit, per = unit_for(profile)
        e.unit_cost = {"unit": unit, "usd": _r(usd_per_request * per / (max(inf.output_tokens, 1) if unit.endswith("output tokens") else 1), 4)}
    if profile.goal.budget_usd is not None and e.cost_usd is not None:
        e.within_budget = e.cost_usd <= profile.goal.budget_usd
    e.assumptions = {
        "decode_bandwidth_utilisation": {"low": mbu.low, "expected": mbu.expected, "high": mbu.high, "source": mbu.source},
        "prefill_mfu": {"low": pre.low, "expected": pre.expected, "high": pre.high, "source": pre.source},
        "step_overhead_ms": round(fam_overhead * 1000, 3),
        "peak_tflops_per_chip": round(peak / 1e12, 1),
        "tensor_parallel": e.parallelism["tensor"], "pipeline_parallel": e.parallelism["pipeline"],
        "hours_per_month": round(hours_month, 1),
        "latency_target_ms": target_ms,
        "latency_model": (
            "continuous batching with chunked prefill: a step takes max(weights + KV read, FLOPs of the batch's tokens "
            "and the other requests' prompt chunks) + the stack's step overhead; TTFT = prefill + one step; "
            "latency = TTFT + (output - 1) x TPOT; concurrency at peak from Little's law"
        ),
        "operating_point": {
            "replicas": mid.replicas,
            "concurrency_at_peak": pt.concurrency,
            "concurrency_at_capacity": mid.at_capacity.concurrency,
            "target_utilisation": utilisation,
            "min_replicas": inf.min_replicas,
        },
        "memory": mem_notes,
        "serving_memory_fraction": reserve,
        "usd_per_million_tokens_basis": "generated (output) tokens at the provisioned capacity",
    }
    if target_note:
        e.assumptions["latency_target_note"] = target_note
    if target_ms is not None and mid.at_one.latency * 1000 > target_ms:
        e.warnings.append(f"even one request alone takes {mid.at_one.latency * 1000:.0f} ms, above the {target_ms:g} ms target")
        e.assumptions["operating_point"]["note"] = (
            f"the {target_ms:g} ms target is out of reach even at concurrency 1: sized at the largest concurrency within "
            f"{ic.unattainable_latency_slack.value:g}x of the concurrency-1 latency (the memory-bound plateau)"
        )
    _software_notes(e, sw)
    _feasibility(e, profile, acc)
    return e


# --------------------------------------------------------------------------- shared


def _price(
    e: Estimate,
    profile: Profile,
    acc: Accelerator,
    chip_hours: float,
    chip_hours_range: tuple[float, float] | None = None,
) -> None:
    if e.owned_chips is not None:
        e.shape = f"{e.count} x {acc.id} (owned)"
        # Already paid for: only its running cost (power, hosting); chip-hours where that is unknown.
        own = onprem.rate(acc, profile.deployment.onprem, owned=True)
        p = _Price(own.usd_per_chip_hour, "on-prem", own.kind, None) if own else _Price(None, None, None, None)
    else:
        p = price_for(profile, acc, e.count)
    if p.warning:
        e.warnings.append(p.warning)
    if p.unavailable:
        e.why_not = f"{e.count} chips not offered: {p.unavailable}"
    named_on = acc.shapes.machine_types_cloud
    if e.owned_chips is None and named_on is not None and named_on != (p.cloud or ("gcp" if "gcp" in profile.deployment.clouds else "other")):
        # one cloud's machine types do not name another cloud's instances or your own servers
        e.shape = acc.generic_shape_name(e.count)
    if p.usd is None:
        return
    e.usd_per_chip_hour, e.price_cloud, e.price_kind = p.usd, p.cloud, p.kind
    # whole cents at the source, so that every renderer rounds the same figure (JSON keeps cents)
    e.cost_usd = round(chip_hours * p.usd, 2)
    if chip_hours_range is not None:
        e.cost_low, e.cost_high = round(chip_hours_range[0] * p.usd, 2), round(chip_hours_range[1] * p.usd, 2)
    elif e.hours_low is not None and e.hours_high is not None:
        e.cost_low, e.cost_high = round(e.hours_low * e.count * p.usd, 2), round(e.hours_high * e.count * p.usd, 2)


def _feasibility(e: Estimate, profile: Profile, acc: Accelerator) -> None:
    reasons: list[str] = []
    if e.why_not:
        reasons.append(e.why_not)
    if e.owned_chips is not None:
        need = e.count * (e.replicas or 1)
        if need > e.owned_chips:
            reasons.append(f"needs {need} {acc.id}, {e.owned_chips} owned")
    elif not offered_on(acc, list(profile.deployment.clouds)):
        reasons.append(f"not offered on {', '.join(profile.deployment.clouds)}")
    if not e.fits_memory:
        reasons.append(f"needs {e.memory_per_chip_gb:.1f} GB per chip, has {e.memory_capacity_gb:.1f} GB")
    if e.meets_deadline is False:
        assert profile.training is not None and profile.training.deadline_hours is not None
        reasons.append(f"takes {e.hours:.1f} h, deadline {profile.training.deadline_hours:g} h")
    if e.meets_latency is False:
        assert profile.inference is not None
        target = e.assumptions.get("latency_target_ms") or profile.inference.latency_p99_ms or 0.0
        reasons.append(f"latency {e.latency_ms:.0f} ms > {target:g} ms")
    if e.within_budget is False:
        assert e.cost_usd is not None and profile.goal.budget_usd is not None
        reasons.append(_over_budget(e.cost_usd, profile.goal.budget_usd))
    e.feasible = not reasons
    e.why_not = "; ".join(dict.fromkeys(reasons)) or None


def _over_budget(cost: float, budget: float) -> str:
    return f"costs ${cost:,.0f}, budget ${budget:,.0f}"


# --------------------------------------------------------------------------- re-use (what-ifs)


def rebudgeted(e: Estimate, was: float | None, budget: float | None) -> Estimate | None:
    """``e``, estimated under ``goal.budget_usd`` = ``was``, under ``budget`` instead. The budget is
    read only by the last feasibility test (``within_budget``, the last of the reasons), so the
    rest of the estimate stands. None where the reasons cannot be told apart: estimate it again."""
    if e.cost_usd is None:
        return e  # nothing to compare with a budget
    if e.feasible != (e.why_not is None):
        return None
    why = e.why_not
    if e.within_budget is False:
        if was is None:
            return None
        old = _over_budget(e.cost_usd, was)
        if why == old:
            why = None
        elif why is not None and why.endswith("; " + old):
            why = why[: -len(old) - 2]
        else:
            return None
    within = None if budget is None else e.cost_usd <= budget
    if within is False:
        assert budget is not None
        new = _over_budget(e.cost_usd, budget)
        if why is not None and new in why:
            return None
        why = f"{why}; {new}" if why else new
    return dataclasses.replace(e, within_budget=within, why_not=why, feasible=why is None)


def estimate(
    profile: Profile, acc: Accelerator, count: int, c: Constants, *, batch: int | None = None, owned_chips: int | None = None,
    ranges: bool = True,
) -> Estimate:
    """One configuration; ``owned_chips``: the team owns that many of ``acc`` (no price, sized within
    them); ``ranges=False``: without the cost ranges only the confidence and the tables read (serving)."""
    if profile.is_training:
        return estimate_training(profile, acc, count, c, owned_chips=owned_chips)
    return estimate_inference(profile, acc, count, c, batch=batch, owned_chips=owned_chips, ranges=ranges)


def _first(shapes: list[int], lo: int, hi: int, ok: Any) -> int | None:
    """The smallest index in [lo, hi] whose shape satisfies the monotone predicate ``ok``."""
    if lo > hi or not ok(shapes[hi]):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(shapes[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def training_target_hours(profile: Profile, c: Constants) -> tuple[float, bool]:
    """(hours the run should finish in, whether the profile stated it)."""
    assert profile.training is not None
    if profile.training.deadline_hours is not None:
        return profile.training.deadline_hours, True
    return c.estimator.scaling.default_deadline_hours.value, False


def training_candidates(profile: Profile, acc: Accelerator, c: Constants, *, owned_chips: int | None = None) -> list[Estimate]:
    """A doubling ladder of real shapes, plus the solved counts: the smallest that fits memory,
    the smallest that meets the deadline (and the deadline with the balanced margin); counts
    past the knee (doubling speeds up by less than ``knee_speedup_per_doubling``) are marked."""
    shapes = acc.real_shapes()
    if owned_chips is not None:  # sized within what the team owns
        shapes = sorted({n for n in shapes if n <= owned_chips} | {owned_chips})
    memo: dict[int, Estimate] = {}

    def est(n: int) -> Estimate:
        if n not in memo:
            memo[n] = estimate_training(profile, acc, n, c, owned_chips=owned_chips)
        return memo[n]

    ladder = [n for n in acc.counts() if n <= shapes[-1]]
    if owned_chips is not None and owned_chips not in ladder:
        ladder.append(owned_chips)
    usable = []
    for n in ladder:  # stop once the batch cannot fill the chips
        if est(n).parallelism is None and est(n).fits_memory:
            break
        usable.append(n)
    ladder = usable or ladder[:1]

    def index(n: int) -> int:
        return bisect.bisect_left(shapes, n)
    # smallest count that fits memory
    fit_at = next((n for n in ladder if est(n).fits_memory), None)
    if fit_at is not None:
        prev = max([n for n in ladder if n < fit_at], default=0)
        lo = index(prev) + 1 if prev else 0
        i = _first(shapes, lo, index(fit_at), lambda n: est(n).fits_memory)
        fit_at = shapes[i] if i is not None else fit_at
        # the knee: past it, a doubling buys less than the stated speed-up
        knee_speed = c.estimator.scaling.knee_speedup_per_doubling.value
        knee = ladder[-1]
        fitting = [n for n in ladder if n >= fit_at and est(n).parallelism is not None]
        for a, b in itertools.pairwise(fitting):
            ha, hb = est(a).hours or 0.0, est(b).hours or 0.0
            per_doubling = (ha / hb) ** (1.0 / max(math.log2(b / a), 1e-9)) if hb > 0 else 0.0
            if per_doubling < knee_speed:
                knee = a
                break
        target, _stated = training_target_hours(profile, c)
        margin = c.scoring.balanced_deadline_margin.value
        goals = {"cost": [target], "balanced": [target * (1.0 - margin), target], "time": []}[profile.goal.optimize]
        for goal in goals:
            if _solve_count(shapes, est, fitting, knee, goal) is not None:
                break
        for n, e in memo.items():
            e.past_knee = n > knee
    return [memo[n] for n in sorted(memo)]


def _round_up_in(shapes: list[int], n: int) -> int | None:
    i = bisect.bisect_left(shapes, n)
    return shapes[i] if i < len(shapes) else None


def _solve_count(shapes: list[int], est: Any, fitting: list[int], knee: int, goal: float) -> int | None:
    """The smallest real shape that finishes within ``goal`` hours, solved from the time model:
    from the largest ladder count that is too slow, scale the count by how far it misses
    (linear scaling under-shoots, since efficiency falls with the count) and round up to a
    real shape, until it meets the goal."""
    slow = [n for n in fitting if n <= knee and (est(n).hours or math.inf) > goal]
    fast = [n for n in fitting if n <= knee and (est(n).hours or math.inf) <= goal]
    if not fast:
        return None
    n = slow[-1] if slow and slow[-1] < fast[0] else fast[0]
    for _ in range(12):
        e = est(n)
        hours = e.hours or math.inf
        if e.parallelism is not None and hours <= goal:
            return n
        startup = float(e.assumptions.get("startup_hours") or 0.0)
        need = n * (hours - startup) / max(goal - startup, 1e-9)
        nxt = _round_up_in(shapes, max(math.ceil(need), n + 1))
        if nxt is None or nxt >= fast[0]:
            return fast[0]
        n = nxt
    return fast[0]


NOT_ESTIMATED: set[str] = {"name", "proposal", "match"}
_WORKLOAD_KEY: list[Any] = [None, ""]  # (profile, key): a profile's key is asked for once per candidate


def workload_key(profile: Profile) -> str:
    """The profile without what the estimator never reads (its name, its proposal, the
    infrastructure it matches): equal keys, equal estimates."""
    if _WORKLOAD_KEY[0] is not profile:
        _WORKLOAD_KEY[0], _WORKLOAD_KEY[1] = profile, profile.model_dump_json(exclude=NOT_ESTIMATED)
    return str(_WORKLOAD_KEY[1])


# The training counts of one workload on one catalog entry (a proposal's checks ask for them again).
_TRAINING_COUNTS: IdentityMemo[list[int]] = IdentityMemo(4096)


def candidate_counts(profile: Profile, acc: Accelerator, c: Constants) -> list[int]:
    """Real shapes worth estimating for this workload."""
    if profile.is_training:
        return list(_TRAINING_COUNTS.get((acc, c), workload_key(profile), lambda: [e.count for e in training_candidates(profile, acc, c)]))
    # Serving: single-host replicas first; multi-host ones (up to max_hosts_per_replica) where
    # the stack serves across hosts, else only when nothing single-host holds the weights.
    counts, single, multi = _serving_counts(acc, int(c.estimator.inference.multi_host_serving.max_hosts_per_replica))
    if multi_host_ok(profile, acc, c):
        return (single + multi) or counts[:1]
    return single or counts[:1]


_COUNTS: IdentityMemo[tuple[list[int], list[int], list[int]]] = IdentityMemo(4096)


def _serving_counts(acc: Accelerator, limit: int) -> tuple[list[int], list[int], list[int]]:
    """(the ladder, its single-host counts, its counts over 2..``limit`` hosts): a function of the
    catalog entry alone, computed once per entry."""
    def ladder() -> tuple[list[int], list[int], list[int]]:
        counts = acc.counts()
        return counts, [n for n in counts if hosts_for(acc, n) <= 1], [n for n in counts if 1 < hosts_for(acc, n) <= limit]

    counts, single, multi = _COUNTS.get((acc,), limit, ladder)
    return list(counts), list(single), list(multi)


def all_candidates(
    profile: Profile, catalog: Catalog, c: Constants, *, keep: Mapping[tuple[str, bool], list[Estimate]] | None = None,
    verdict_only: bool = False,
    ranges: bool = True,
) -> list[Estimate]:
    """Every configuration worth estimating: the owned accelerators' (within what is owned), then
    each catalog accelerator's. ``keep``: (accelerator id, owned?) -> its candidates, already
    estimated for a profile that differs from this one in nothing they depend on (re-used as they are).

    ``verdict_only`` (callers that read the verdict, its configuration, its feasibility and its
    confidence, never every candidate: the what-ifs and check) skips what cannot change them: cloud
    accelerators not offered on the profile's clouds in a family and vendor that has one that is
    (never feasible; a family's closest configuration is an offered one, recommend.closest; a
    software block is the vendor's), entries another searched entry dominates (the same hardware,
    never cheaper: Catalog.dominated) and, for training, entries whose cost floor is above their
    family's best (_VerdictBar). ``ranges=False`` (the what-ifs): estimate without cost ranges."""
    keep = keep or {}
    out: list[Estimate] = []
    allowed = {catalog.resolve(a) or a for a in profile.deployment.accelerators or []}
    local = profile.deployment.local
    clouds: list[str] = list(profile.deployment.clouds)
    # (family, vendor) pairs with an entry offered on the profile's clouds: a software block is a
    # function of the pair, so skipping the others leaves every family's blocks as they were
    served = {
        (acc.device, acc.vendor) for acc in catalog.accelerators.values()
        if verdict_only and not acc.local and (not allowed or acc.id in allowed) and offered_on(acc, clouds)
    }
    for own in profile.deployment.owned or []:
        acc = catalog.get(own.accelerator)
        kept = keep.get((acc.id, True))
        if kept is not None:
            out.extend(kept)
        elif profile.is_training:
            out.extend(training_candidates(profile, acc, c, owned_chips=own.count))
        else:
            counts = [n for n in candidate_counts(profile, acc, c) if n <= own.count] or [own.count]
            out.extend(estimate(profile, acc, n, c, owned_chips=own.count, ranges=ranges) for n in counts)
    dominated = catalog.dominated() if verdict_only else {}
    searched: list[Accelerator] = []
    for acc in catalog.accelerators.values():
        if allowed and acc.id not in allowed:
            continue
        if acc.local != local:  # local machines for local profiles, cloud and cluster hardware otherwise
            continue
        if not local and (acc.device, acc.vendor) in served and not offered_on(acc, clouds):
            continue
        if any(not allowed or a in allowed for a in dominated.get(acc.id, ())):
            continue  # never the verdict's: an entry that dominates it is searched (Catalog.dominated)
        searched.append(acc)
    # the verdict search of a training workload prunes by cost floor (goal cost or balanced)
    bounded = verdict_only and not local and not profile.deployment.owned and profile.is_training and profile.goal.optimize != "time"
    floors = {a.id: training_cost_floor(profile, a, c) for a in searched} if bounded else {}
    order = sorted(searched, key=lambda a: (floors[a.id] is None, floors[a.id] or 0.0, a.id)) if bounded else searched
    bar = _VerdictBar(profile, c) if bounded else None
    by_acc: dict[str, list[Estimate]] = {}
    for acc in order:
        kept = keep.get((acc.id, local))
        if kept is not None:
            by_acc[acc.id] = kept
        elif bar is not None and bar.beyond(acc, floors[acc.id]):
            continue
        elif local:  # the user's own machine: no price, compared in chip-hours
            mine = acc.max_chips()
            if profile.is_training:
                by_acc[acc.id] = training_candidates(profile, acc, c, owned_chips=mine)
            else:
                by_acc[acc.id] = [
                    estimate(profile, acc, n, c, owned_chips=mine, ranges=ranges)
                    for n in candidate_counts(profile, acc, c) if n <= mine
                ]
        else:
            by_acc[acc.id] = _cloud_candidates(profile, acc, c, ranges)
        if bar is not None:
            bar.add(acc, by_acc[acc.id])
    for acc in searched:  # in catalog order, whatever order they were estimated in
        out.extend(by_acc.get(acc.id, ()))
    return out


class _VerdictBar:
    """The verdict search's pruning of a training workload (goal cost or balanced). Entries come in
    order of their cost floor (training_cost_floor); one is skipped when its floor is above what its
    family's best will cost: the cheapest priced, feasible candidate so far that finishes by the
    target (balanced: with its margin), a subset of the pool ``best`` chooses from, so the best costs
    no more. The first entry of each family and vendor is never skipped (a software block is the
    pair's), nor is any entry of a family with nothing feasible yet."""

    def __init__(self, profile: Profile, c: Constants) -> None:
        target, _stated = training_target_hours(profile, c)
        if profile.goal.optimize == "balanced":
            target *= 1.0 - c.scoring.balanced_deadline_margin.value
        self.target = target
        self.bar: dict[str, float] = {}
        self.pairs: set[tuple[str, str]] = set()

    def beyond(self, acc: Accelerator, floor: float | None) -> bool:
        bar = self.bar.get(acc.device)
        # cents: a candidate's cost is rounded to them
        return (acc.device, acc.vendor) in self.pairs and floor is not None and bar is not None and floor - 0.01 > bar

    def add(self, acc: Accelerator, cands: list[Estimate]) -> None:
        self.pairs.add((acc.device, acc.vendor))
        for x in cands:
            if x.feasible and x.priced and x.cost_usd is not None and (x.hours or math.inf) <= self.target:
                self.bar[acc.device] = min(self.bar.get(acc.device, math.inf), x.cost_usd)


def _cloud_candidates(profile: Profile, acc: Accelerator, c: Constants, ranges: bool = True) -> list[Estimate]:
    if profile.is_training:
        return training_candidates(profile, acc, c)
    counts = candidate_counts(profile, acc, c)
    ests = [estimate(profile, acc, n, c, ranges=ranges) for n in counts]
    if profile.task == "inference" and not any(x.fits_memory for x in ests):
        bigger = [n for n in acc.counts() if n not in counts][:4]
        ests += [estimate(profile, acc, n, c, ranges=ranges) for n in bigger]
    return ests


def repriced_keep(a: Profile, b: Profile, cands: list[Estimate], catalog: Catalog) -> dict[tuple[str, bool], list[Estimate]]:
    """For ``all_candidates(b, keep=...)`` where ``b`` differs from ``a`` only in how it is priced
    (deployment.pricing): the candidates of ``a`` (``cands``) of every accelerator that is priced
    alike under both (the same dollars, cloud and availability at each of its counts). Owned and
    local hardware is priced by its running cost whatever the pricing, so it is always kept; the
    rest differs at most in the price's label and its warning, which no verdict reads."""
    groups: dict[tuple[str, bool], list[Estimate]] = {}
    for x in cands:
        groups.setdefault((x.accelerator, x.owned_chips is not None), []).append(x)
    # an accelerator owned twice, or owned and local, has two blocks under one key: estimate it again
    owned_ids = [catalog.get(o.accelerator).id for o in a.deployment.owned or []]
    twice = {i for i in owned_ids if owned_ids.count(i) > 1 or (a.deployment.local and catalog.get(i).local)}
    keep: dict[tuple[str, bool], list[Estimate]] = {}
    for (acc_id, owned), mine in groups.items():
        acc = catalog.accelerators.get(acc_id)
        if acc is None or acc_id in twice:
            continue
        if not owned:
            prices = [(price_for(a, acc, x.count), price_for(b, acc, x.count)) for x in mine]
            if any((p.usd, p.cloud, p.unavailable) != (q.usd, q.cloud, q.unavailable) for p, q in prices):
                continue
        keep[(acc_id, owned)] = mine
    return keep


def basis(x: Estimate) -> float:
    """What a configuration costs: dollars where priced, else chip-hours (never 'free')."""
    if x.cost_usd is not None:
        return x.cost_usd
    return x.count * (x.replicas or 1) * (x.hours or 0.0)


def best(
    cands: list[Estimate], objective: str, c: Constants, device: str | None = None
) -> Estimate | None:
    """The best feasible candidate (of ``device``) for ``objective``.

    Priced candidates are compared in dollars; when nothing feasible is priced (on-prem,
    unpriced chips) in chip-hours. Training: ``cost`` is the cheapest that meets the deadline
    (or the stated default), ``time`` the fastest not past the knee, ``balanced`` the cheapest
    that meets the deadline with the balanced margin. Serving: the cheapest, or the fastest
    within the stated cost slack.
    """
    mine = [x for x in cands if device is None or x.device == device]
    feasible = [x for x in mine if x.feasible]
    owned = [x for x in feasible if x.owned_chips is not None]
    pool = owned or [x for x in feasible if x.priced]
    if not pool and not any(x.usd_per_chip_hour is not None for x in mine):
        pool = feasible  # nothing priced on the allowed clouds (on-prem, say): compare chip-hours
    if not pool:
        return None

    def key_cost(x: Estimate) -> tuple[float, float, str, int]:
        return (basis(x), x.hours or 0.0, x.accelerator, x.count)

    def key_time(x: Estimate) -> tuple[float, float, str, int]:
        speed = x.hours if x.mode == "training" else (x.latency_ms or 0.0)
        return (speed or 0.0, basis(x), x.accelerator, x.count)

    if pool[0].mode == "training":
        deadline = pool[0].assumptions.get("target_hours") or math.inf
        in_time = [x for x in pool if (x.hours or math.inf) <= deadline]
        if objective == "time":
            return min([x for x in pool if not x.past_knee] or pool, key=key_time)
        if objective == "balanced":
            margin = c.scoring.balanced_deadline_margin.value
            early = [x for x in in_time if (x.hours or math.inf) <= deadline * (1.0 - margin)]
            if early:
                return min(early, key=key_cost)
        if in_time:
            return min(in_time, key=key_cost)
        return min([x for x in pool if not x.past_knee] or pool, key=key_time)
    cheapest = min(pool, key=key_cost)
    if objective == "cost":
        return cheapest
    slack = 1.0 + (c.scoring.time_cost_slack.value if objective == "time" else c.scoring.balanced_cost_slack.value)
    near = [x for x in pool if basis(x) <= basis(cheapest) * slack]
    return min(near, key=key_time)
