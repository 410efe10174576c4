"""Serving estimates: one serving configuration's replicas, batch, latency, throughput and cost
(LLM replicas through the step model of ``serving``; other domains per request)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from advisor import software
from advisor.catalog import Accelerator
from advisor.constants import Constants, LevelRow, Range
from advisor.estimate import serving, sizing, tail, workloads
from advisor.estimate.efficiency import decode_mbu, software_notes
from advisor.estimate.price import apply_price, hosts_for, set_feasibility, shape_name
from advisor.estimate.readset import unused_fields
from advisor.estimate.replica import (
    Dit,
    attention_dp,
    attention_params,
    data_attention_possible,
    dit,
    engine_max_seqs,
    is_llm_inference,
    kv_note,
    kv_replication,
    latency_target,
    llm_replica,
    loaded_prefill,
    model_shape,
    moe_serving,
    multi_host_ok,
    replica_layout,
    request_flops,
    request_model_name,
    request_rate,
    search_guess,
    serving_spread,
    step_overhead,
    unit_for,
)
from advisor.estimate.result import GIB, HOURS_PER_MONTH, Estimate, rounded
from advisor.families import family
from advisor.fmt import GENERATED_TOKENS
from advisor.model_families import family_of
from advisor.models import Profile


@dataclasses.dataclass
class _Rates:
    """What one serving configuration works with: the resolved profile and its software, the
    family's utilisation ranges, the chips' attained rates, the weights and the memory."""

    profile: Profile
    sw: software.Resolution
    mbu: Range
    pre: Range
    peak: float
    bw: float
    compute: float
    weights: float
    tables: float
    cap: float
    reserve: float
    llm: bool
    overhead: float
    replicated: float = 0.0  # bytes of attention projections data-parallel attention copies beyond the one set


    @property
    def usable(self) -> float:
        return self.cap * self.reserve


def _rates(e: Estimate, profile: Profile, acc: Accelerator, count: int, c: Constants) -> _Rates:
    """The configuration's rates and memory, and the warnings that come with them (software,
    unread fields, a missing formula, a precision computed at another one's rate)."""
    sw = software.resolve(profile, acc)
    profile = sw.profile
    e.warnings.extend(sw.warnings)
    e.warnings.extend(unused_fields(profile))
    no_formula = workloads.formula_warning(profile)
    if no_formula:
        e.warnings.append(no_formula)
    ic = c.estimator.inference
    fam_key = family(acc.device).decode_utilisation  # the family's own constants (tpu_..., cpu_...)
    # LLM prefill has a per-family figure (fitted on LLM serving stacks); other request models keep
    # the shared one
    pre = ic.prefill_utilisation(fam_key) if is_llm_inference(profile) else ic.prefill_mfu
    used, peak, fallback = acc.compute_precision(profile.model.precision)
    if fallback:
        e.warnings.append(fallback)
    peak = peak or acc.peak_bf16_flops  # no FP64 rate: flagged below
    s_matmul, s_memory = sizing.attained_scale(acc, c, used)
    tables = workloads.embedding_serving_bytes(profile)
    # data-parallel attention: every chip of the replica holds the attention projections whole
    replicated = (attention_dp(profile, acc, count) - 1) * attention_params(profile, c) * profile.model.weight_bytes
    return _Rates(
        profile=profile, sw=sw, mbu=decode_mbu(c, acc), pre=pre, peak=peak,
        bw=acc.specs.memory_bandwidth_gbps * 1e9 * count * s_memory, compute=peak * count * s_matmul,
        weights=profile.model.dense_params_b * 1e9 * profile.model.weight_bytes + tables + replicated, tables=tables,
        cap=acc.specs.memory_gib * GIB * count, reserve=1.0 - c.estimator.memory.serving_memory_reserve_fraction.value,
        llm=is_llm_inference(profile), overhead=step_overhead(profile, acc, count, c), replicated=replicated,
    )


def _placement(e: Estimate, profile: Profile, acc: Accelerator, c: Constants) -> None:
    """Why a replica cannot be laid out: over hosts its stack cannot span, or over more hosts than
    any published multi-host replica."""
    ic = c.estimator.inference
    if e.hosts_per_replica > 1 and not multi_host_ok(profile, acc, c):
        stacks = ", ".join(ic.multi_host_serving.stacks(acc.device))
        e.why_not = (
            f"{profile.software.serving_stack} serves a replica from one host on {family(acc.device).name}; "
            f"{e.hosts_per_replica} hosts need {stacks}"
        )
    elif e.hosts_per_replica > ic.multi_host_serving.max_hosts_per_replica:
        e.why_not = (
            f"a replica over {e.hosts_per_replica} hosts: beyond the largest published multi-host serving replica "
            f"({ic.multi_host_serving.max_hosts_per_replica} hosts); use a chip with more memory per host or a smaller precision"
        )


def _precision_notes(e: Estimate, profile: Profile, acc: Accelerator) -> None:
    if profile.model.precision == "fp64" and "fp64" not in acc.specs.peak_tflops:
        e.why_not = "no FP64 arithmetic on this accelerator"
    tf8 = acc.specs.peak_tflops
    # no FP8 datapath: no FP8 rate, or one no faster than the 16-bit rate (the TPU7x table lists v5p's and v6e's FP8 at
    # their bf16 rate: emulated)
    if profile.model.precision == "fp8" and ("fp8" not in tf8 or tf8["fp8"] <= (tf8.get("bf16") or tf8.get("fp16") or 0.0)):
        # no FP8 matmuls: the weights stay 1 byte in memory, the arithmetic runs at the 16-bit rate
        e.warnings.append(
            f"no FP8 arithmetic on {acc.id}: FP8 weights are served weight-only (dequantised to 16-bit "
            "in the matmuls, as vLLM's FP8 Marlin kernels do), prefill at the 16-bit rate"
        )
    tf = acc.specs.peak_tflops
    if profile.model.precision == "fp8" and profile.model.weights_precision == "int4" and "fp8" in tf and "fp4" not in tf:
        # 4-bit weights with 8-bit activations: integer W4A8 kernels exist for FP8 chips (vLLM's CUTLASS W4A8 on
        # Hopper), but FP4 weights (MXFP4, NVFP4) need FP4 tensor cores for FP8 activations; without them vLLM's
        # MXFP4 MoE computes in 16 bits (its gpt-oss recipe: the Triton MXFP4 backend on Hopper, MXFP4 x MXFP8 on Blackwell)
        e.warnings.append(
            f"4-bit weights with FP8 arithmetic on {acc.id}: only integer int4 (W4A8) kernels compute so here; "
            "FP4 weights (MXFP4 as gpt-oss ships, NVFP4) need FP4 tensor cores for that (the catalog lists no FP4 rate "
            "for this chip) and otherwise run their matmuls in 16 bits, at half the FP8 rate this estimate uses: set "
            "model.precision bf16 for such a checkpoint"
        )


def _kv_copies_note(e: Estimate, profile: Profile, acc: Accelerator, count: int) -> None:
    """MLA's latent cache is held whole by every tensor-parallel chip: say what the estimate (and the setup, which
    serves with tensor-parallel attention) pays for it, and the layout that does not (vLLM's data-parallel deployment
    guide: 'For MoE models, particularly those like DeepSeek that employ MLA ... it can be advantageous to use data
    parallel for the attention layers and expert or tensor parallel (EP or TP) for the expert layers')."""
    att = profile.model.attention
    copies = kv_replication(profile, acc, count)
    if is_llm_inference(profile) and att is not None and att.kind == "mla" and copies > 1:
        e.warnings.append(
            f"MLA's latent KV cache is held whole by each of the {copies:g} tensor-parallel chips ({copies:g} copies), as "
            "tensor-parallel attention serves it (this estimate and the setup): data-parallel attention with expert "
            "parallelism (vLLM --data-parallel-size with --enable-expert-parallel, SGLang --enable-dp-attention) keeps "
            "one copy and holds more requests per replica"
        )


def _does_not_fit(e: Estimate, r: _Rates, acc: Accelerator, mem_notes: Any) -> Estimate:
    e.batch = 0
    e.feasible, e.why_not = False, f"weights ({r.weights / 1e9:.0f} GB) do not fit in {r.usable / 1e9:.0f} GB usable"
    e.assumptions = {"memory": mem_notes}
    software_notes(e, r.sw)
    apply_price(e, r.profile, acc, 0.0)
    e.cost_usd = e.cost_low = e.cost_high = None
    return e


@dataclasses.dataclass
class _Load:
    """How the replica is loaded: the searches over batch sizes at a pair of utilisations."""

    replica: serving.LlmReplica | serving.RequestReplica
    load: dict[str, Any]
    top: int
    qps: float
    batch: int | None
    target_ms: float | None
    offline: bool
    min_replicas: int
    target_note: str | None  # how the latency target was read
    rate_note: str | None  # how the request rate was read
    engine_seqs: int | None  # the serving engine's cap on sequences at once (LLMs)

    def at(self, u_bw: float, u_mfu: float) -> Any:
        return lambda b: self.replica.point(b, u_bw, u_mfu)

    def op(self, u_bw: float, u_mfu: float) -> serving.OperatingPoint:
        """The operating point at these utilisations (at a measured concurrency: exactly there)."""
        at = self.at(u_bw, u_mfu)
        if self.batch is not None:
            pt = at(self.top)
            reps = serving.replicas_for(pt, qps=self.qps, utilisation=1.0, min_replicas=self.min_replicas)
            return serving.OperatingPoint(reps, pt, pt, at(1), None if self.target_ms is None else pt.latency * 1000 <= self.target_ms)
        found = serving.operating_point(at, guess=search_guess(self.replica, u_bw, u_mfu), **self.load)
        if self.offline:  # a batch job keeps every replica saturated until its volume is done
            return serving.OperatingPoint(found.replicas, found.at_capacity, found.at_capacity, found.at_one, found.meets_latency)
        return found

    def replicas(self, u_bw: float, u_mfu: float) -> int:
        if self.batch is not None:
            return self.op(u_bw, u_mfu).replicas
        return serving.replicas_needed(self.at(u_bw, u_mfu), guess=search_guess(self.replica, u_bw, u_mfu), **self.load)


def _loaded(
    profile: Profile, acc: Accelerator, count: int, c: Constants, replica: serving.LlmReplica | serving.RequestReplica, max_batch_mem: int,
    batch: int | None, llm: bool,
) -> _Load:
    """The load the replica is searched under."""
    inf = profile.inference
    assert inf is not None
    ic = c.estimator.inference
    target_ms, target_note = latency_target(profile, c)
    engine_seqs = engine_max_seqs(profile, acc, c) if llm else None
    if engine_seqs is not None:  # data-parallel attention: one engine (scheduler) per rank
        engine_seqs *= attention_dp(profile, acc, count)
    top = min(max_batch_mem, int(ic.max_concurrency.value), engine_seqs or max_batch_mem)
    if batch is not None:
        top = max(1, min(batch, max(max_batch_mem, 1), engine_seqs or batch))  # the engine never runs more
    offline = inf.mode == "batch"
    qps, rate_note = request_rate(profile)
    load: dict[str, Any] = {
        "qps": qps, "max_concurrency": top, "target_s": None if target_ms is None else target_ms / 1000.0,
        "utilisation": 1.0 if offline else ic.target_utilisation.value,  # offline batch jobs run full
        "min_replicas": inf.min_replicas, "slack": ic.unattainable_latency_slack.value,
    }
    return _Load(replica, load, top, qps, batch, target_ms, offline, inf.min_replicas, target_note, rate_note, engine_seqs)


def _chip_hours_range(
    e: Estimate, profile: Profile, acc: Accelerator, c: Constants, r: _Rates, ld: _Load, mid: serving.OperatingPoint, chip_hours: float,
) -> tuple[float, float]:
    """The serving ranges (the same operating point at each constant's low and high utilisation)
    and the chip-hours at the fewest and the most replicas they need."""
    inf = profile.inference
    assert inf is not None
    spread = spread_bounds(serving_spread(profile, acc, c) if r.llm else None)
    e.ranges = _ranges(ld.replica, mid.at_peak, r.mbu, r.pre, loaded_prefill(profile, acc, c) if r.llm else None, spread)
    slow, fast = ld.replicas(r.mbu.low, r.pre.low), ld.replicas(r.mbu.high, r.pre.high)
    lo, hi = spread
    floor = max(inf.min_replicas, 1)  # replicas scale with 1 / throughput, never below the minimum
    fast = min(fast, max(floor, math.ceil(mid.replicas / hi - 1e-9)))
    slow = max(slow, math.ceil(mid.replicas / lo - 1e-9))
    return chip_hours * fast, chip_hours * slow


def _serving_assumptions(
    parallelism: dict[str, int], r: _Rates, ld: _Load, mid: serving.OperatingPoint, hours_month: float, mem_notes: Any,
) -> dict[str, Any]:
    mbu, pre = r.mbu, r.pre
    return {
        "decode_bandwidth_utilisation": {"low": mbu.low, "expected": mbu.expected, "high": mbu.high, "source": mbu.source},
        "prefill_mfu": {"low": pre.low, "expected": pre.expected, "high": pre.high, "source": pre.source},
        "step_overhead_ms": round(r.overhead * 1000, 3),
        "peak_tflops_per_chip": round(r.peak / 1e12, 1),
        "tensor_parallel": parallelism["tensor"], "pipeline_parallel": parallelism["pipeline"],
        "hours_per_month": round(hours_month, 1),
        "latency_target_ms": ld.target_ms,
        "latency_model": (
            "continuous batching with chunked prefill: a step runs the weight GEMMs, max(weight read, FLOPs of the batch's "
            "tokens and the other requests' prompt chunks), then the decode attention, max(KV read, attention FLOPs), "
            "+ the stack's step overhead; TTFT = prefill + one step; "
            "latency = TTFT + (output - 1) x TPOT; concurrency at peak from Little's law"
        ),
        "operating_point": {
            "replicas": mid.replicas,
            "concurrency_at_peak": mid.at_peak.concurrency,
            "concurrency_at_capacity": mid.at_capacity.concurrency,
            "target_utilisation": ld.load["utilisation"],
            "min_replicas": ld.min_replicas,
        },
        "memory": mem_notes,
        "serving_memory_fraction": r.reserve,
        "usd_per_million_tokens_basis": "generated (output) tokens at the provisioned capacity",
    }


def estimate_inference(
    profile: Profile, acc: Accelerator, count: int, c: Constants, *, batch: int | None = None, owned_chips: int | None = None,
    ranges: bool = True,
) -> Estimate:
    """One serving configuration. ``ranges=False`` (the what-ifs, which read the verdict, its
    configuration and its feasibility): no cost range (the low / high utilisation searches that only
    the confidence's scenarios and the shown ranges read); everything else as in the full estimate.

    A mixture of experts' attention is split by head (tensor) or by request (data) as inference.attention_parallel
    says; auto estimates both where tensor-parallel attention would copy the KV cache over chips (MLA, fewer KV heads
    than chips) and keeps the one that needs fewer chips (on a tie, or where neither meets its targets, tensor)."""
    assert profile.inference is not None
    wanted = profile.inference.attention_parallel
    possible = data_attention_possible(software.resolve(profile, acc).profile, acc, count, c)

    def laid(layout: str) -> Profile:
        assert profile.inference is not None
        return profile.model_copy(update={"inference": profile.inference.model_copy(update={"attention_parallel": layout})})

    def one(layout: str) -> Estimate:
        return _estimate_inference(laid(layout), acc, count, c, batch=batch, owned_chips=owned_chips, ranges=ranges)

    if not possible:  # the profile as given (attention_dp reads 'data' only where the layout applies), or pinned back
        e = one("tensor") if wanted == "data" else _estimate_inference(
            profile, acc, count, c, batch=batch, owned_chips=owned_chips, ranges=ranges
        )
        if wanted == "data":
            e.warnings.append(
                f"inference.attention_parallel: data not used on {acc.id} x {count}: data-parallel attention serves a "
                "mixture of experts' LLM over several chips, on a stack that offers it on this family "
                "(rules/estimator.yaml inference.data_parallel_attention); estimated with tensor-parallel attention"
            )
        return e
    if wanted != "auto":
        return one(wanted)
    tensor = one("tensor")
    if kv_replication(laid("tensor"), acc, count) <= 1:
        return tensor  # nothing copied: data-parallel attention would only add attention reads
    data = one("data")
    return data if _layout_key(data) < _layout_key(tensor) else tensor


def _layout_key(e: Estimate) -> tuple[bool, bool, int]:
    """How a serving estimate ranks when its attention layout is chosen: fitting in memory first, then meeting its
    latency target, then the fewest chips."""
    return (not e.fits_memory, e.meets_latency is False, e.count * (e.replicas or 1))


def _estimate_inference(
    profile: Profile, acc: Accelerator, count: int, c: Constants, *, batch: int | None, owned_chips: int | None, ranges: bool,
) -> Estimate:
    assert profile.inference is not None
    e = Estimate(acc.id, acc.device, count, shape_name(acc, count), "inference", owned_chips=owned_chips)
    r = _rates(e, profile, acc, count, c)
    profile = r.profile
    inf = profile.inference
    assert inf is not None
    e.memory_capacity_gb = acc.specs.memory_gib * GIB / 1e9
    e.hosts_per_replica = hosts_for(acc, count)
    tp, stages = replica_layout(acc, count)
    e.parallelism = {"data": 1, "tensor": tp, "pipeline": stages, "expert": count if profile.model.architecture == "moe" else 1}
    if attention_dp(profile, acc, count) > 1:  # every chip attends for its own requests; the experts split over all
        e.parallelism.update(tensor=1, pipeline=1, attention_data=count)
    _placement(e, profile, acc, c)
    replica, max_batch_mem, mem_notes = _replica(
        profile, acc, count, c, (r.weights, r.tables), r.usable - r.weights, (r.bw, r.compute, r.overhead)
    )
    e.fits_memory = max_batch_mem >= 1
    if attention_dp(profile, acc, count) > 1:
        mem_notes["attention"] = {
            "parallel": "data", "ranks": count,
            "replicated_attention_gb": round(r.replicated / 1e9, 2),
        }
    _precision_notes(e, profile, acc)
    _kv_copies_note(e, profile, acc, count)
    e.memory_per_chip_gb = r.weights / count / 1e9
    if not e.fits_memory:
        return _does_not_fit(e, r, acc, mem_notes)

    ld = _loaded(profile, acc, count, c, replica, max_batch_mem, batch, r.llm)
    mid = ld.op(r.mbu.expected, r.pre.expected)
    budgets = prefill_budgets(profile, acc, c)
    if isinstance(replica, serving.LlmReplica) and inf.mode == "online" and _p99_targets(inf) and batch is None:
        mid = _sized_for_p99(mid, inf, ld.load, lambda: ld.op(r.mbu.expected, r.pre.expected), budgets)
    if not isinstance(replica, serving.LlmReplica) and inf.mode == "online" and inf.latency_p99_ms is not None and batch is None:
        mid = _batches_sized_for_p99(mid, inf, ld, lambda: ld.op(r.mbu.expected, r.pre.expected))
    _operating_fields(e, mid, replica, r.weights)
    hours_month = inf.run_hours_per_day * HOURS_PER_MONTH / 24
    e.hours = hours_month
    chip_range = _chip_hours_range(e, profile, acc, c, r, ld, mid, hours_month * count) if ranges else None
    apply_price(e, profile, acc, hours_month * count * mid.replicas, chip_hours_range=chip_range)
    e.hours_low = e.hours_high = hours_month
    _unit_cost(e, profile, mid.at_capacity.requests_per_second * ld.load["utilisation"], r.llm)
    if profile.goal.budget_usd is not None and e.cost_usd is not None:
        e.within_budget = e.cost_usd <= profile.goal.budget_usd
    e.assumptions = _serving_assumptions(e.parallelism, r, ld, mid, hours_month, mem_notes)
    if ld.target_note:
        e.assumptions["latency_target_note"] = ld.target_note
    if isinstance(replica, serving.LlmReplica) and replica.routed_active:
        e.assumptions["moe_routing"] = _moe_note(profile, replica, c)
    if ld.engine_seqs is not None:
        e.assumptions["operating_point"]["engine_max_num_seqs"] = ld.engine_seqs
    if r.llm:
        _level_notes(e, profile, acc, c, r.mbu)
    slack = c.estimator.inference.unattainable_latency_slack.value
    _load_notes(e, inf, mid, ld.qps if ld.offline else None, ld.rate_note, ld.target_ms, slack)
    if isinstance(replica, serving.LlmReplica) and inf.mode == "online":
        _tail(e, inf, mid, budgets)
    elif inf.mode == "online":
        _batch_tail(e, inf, mid, ld.qps)
    _label_throughput(e, profile, replica)
    software_notes(e, r.sw)
    set_feasibility(e, profile, acc)
    return e


def throughput_unit(profile: Profile, replica: serving.LlmReplica | serving.RequestReplica) -> str:
    """What one replica's rate counts: generated tokens where a request generates them (an LLM with output tokens, a
    speech model's decoder), else the requests themselves (an image or a video for a diffusion model; an embedding, a
    score, a classification: an LLM with output_tokens 0, an encoder, a recommendation model)."""
    generates = replica.output_tokens > 0 if isinstance(replica, serving.LlmReplica) else replica.decode_steps > 0
    if generates:
        return GENERATED_TOKENS
    inf = profile.inference
    if profile.is_diffusion:
        return "videos/s" if inf is not None and inf.frames else "images/s"
    return "requests/s"


def _label_throughput(e: Estimate, profile: Profile, replica: serving.LlmReplica | serving.RequestReplica) -> None:
    """Say what the estimate's rate counts (``throughput_unit``), and keep figures per output token off a workload that
    generates none: a request that computes once (an embedding, an image, a score) has no time per output token and no
    tokens per second; its rate is its requests (or images) per second."""
    e.throughput_unit = throughput_unit(profile, replica)
    if e.throughput_unit == GENERATED_TOKENS:
        return
    e.tpot_ms = None
    if e.at_concurrency_1 is not None:
        e.at_concurrency_1["tpot_ms"] = None
    e.ranges.pop("tpot_ms", None)
    if "tokens_per_second" in e.ranges:
        e.ranges["throughput"] = e.ranges.pop("tokens_per_second")
    if e.p99 is not None:
        for key in ("tpot_ms", "itl_ms"):
            e.p99.pop(key, None)
        e.p99.get("terms", {}).pop("output_tokens_p99", None)
    offline = e.assumptions.get("operating_point", {}).get("offline")
    if offline is not None:
        offline.pop("saturated_tokens_per_second_per_replica", None)


def _operating_fields(
    e: Estimate, mid: serving.OperatingPoint, replica: serving.LlmReplica | serving.RequestReplica, weights: float,
) -> None:
    """The estimate's figures at its operating point: batch, TTFT / TPOT / latency, throughput, the
    concurrency-1 point, replicas and the memory a chip holds at that batch."""
    pt = mid.at_peak
    e.batch = pt.concurrency
    e.ttft_ms, e.tpot_ms, e.latency_ms = pt.ttft * 1000, pt.tpot * 1000, pt.latency * 1000
    e.tokens_per_second = pt.tokens_per_second
    e.at_concurrency_1 = {
        "ttft_ms": rounded(mid.at_one.ttft * 1000, 1),
        "tpot_ms": rounded(mid.at_one.tpot * 1000, 2),
        "latency_ms": rounded(mid.at_one.latency * 1000, 1),
    }
    e.meets_latency = mid.meets_latency
    kv_request = replica.kv_bytes(replica.input_tokens + replica.output_tokens) if isinstance(replica, serving.LlmReplica) else 0.0
    e.memory_per_chip_gb = (weights + pt.concurrency * kv_request) / e.count / 1e9
    e.replicas = mid.replicas
    e.capacity_rps = mid.at_capacity.requests_per_second
    assert e.parallelism is not None
    e.parallelism["data"] = mid.replicas


def _moe_note(profile: Profile, replica: serving.LlmReplica, c: Constants) -> dict[str, Any]:
    """How a mixture of experts' active parameters split between its routed experts (a grouped GEMM at
    moe_serving_factor of a dense GEMM's efficiency) and the rest (computed like a dense model)."""
    m = profile.model
    given = bool(m.experts and m.experts_per_token)
    return {
        "routed_active_params_b": rounded(replica.routed_active / 1e9, 3),
        "other_active_params_b": rounded((replica.n_active - replica.routed_active) / 1e9, 3),
        "routed_gemm_efficiency": replica.routed_efficiency,
        "basis": (
            f"{m.experts} routed experts, top-{m.experts_per_token}: routed parameters (params - active) / (1 - k / E)"
            if given else
            f"no model.experts / model.experts_per_token: {c.estimator.inference.moe_routed_share.value:g} of the active "
            "parameters taken as routed (moe_routed_share)"
        ),
    }


def _unit_cost(e: Estimate, profile: Profile, served_per_s: float, llm: bool) -> None:
    """Per-unit cost (per million output tokens, per request or per unit of work) at the capacity each
    replica is provisioned for (``served_per_s``: requests per second of one replica)."""
    inf = profile.inference
    assert inf is not None
    if e.usd_per_chip_hour is None or served_per_s <= 0:
        return
    usd_per_request = e.usd_per_chip_hour * e.count / 3600.0 / served_per_s
    used = e.usd_per_chip_hour * e.count * (e.replicas or 1) * (e.hours or 0.0)
    if e.cost_usd and used > 0 and e.cost_usd > used * 1.001:  # billed beyond the hours it serves (a reservation for a nightly job)
        usd_per_request *= e.cost_usd / used
    e.usd_per_million_tokens = usd_per_request / inf.output_tokens * 1e6 if llm and inf.output_tokens > 0 else None
    unit, per = unit_for(profile)
    e.unit_cost = {
        "unit": unit,
        "usd": rounded(usd_per_request * per / (max(inf.output_tokens, 1) if unit.endswith("output tokens") else 1), 4),
    }


def _load_notes(
    e: Estimate, inf: Any, mid: serving.OperatingPoint, offline_qps: float | None, rate_note: str | None,
    target_ms: float | None, slack: float,
) -> None:
    """What the operating point says about the load: an offline job's volume against one replica's saturated
    rate (``offline_qps``: None online), and a latency target out of reach even at concurrency 1."""
    if offline_qps is not None:
        e.assumptions["operating_point"]["offline"] = {
            "requests_per_second_needed": rounded(offline_qps, 4),
            "saturated_requests_per_second_per_replica": rounded(mid.at_capacity.requests_per_second, 4),
            "saturated_tokens_per_second_per_replica": rounded(mid.at_capacity.tokens_per_second, 1),
            "window_hours_per_day": inf.run_hours_per_day,
        }
        if rate_note:
            e.assumptions["operating_point"]["offline"]["note"] = rate_note
            e.warnings.append(rate_note)
    if target_ms is not None and mid.at_one.latency * 1000 > target_ms:
        e.warnings.append(f"even one request alone takes {mid.at_one.latency * 1000:.0f} ms, above the {target_ms:g} ms target")
        e.assumptions["operating_point"]["note"] = (
            f"the {target_ms:g} ms target is out of reach even at concurrency 1: sized at the largest concurrency within "
            f"{slack:g}x of the concurrency-1 latency (the memory-bound plateau)"
        )


@dataclass(frozen=True)
class _SequenceParallel:
    k: int  # chips one request is split over
    dit: Dit


def _sequence_parallel(profile: Profile, acc: Accelerator, count: int, per_copy: int, c: Constants) -> _SequenceParallel | None:
    """How many chips a diffusion transformer's request is split over (None for any other request model): the
    largest divisor of ``count`` within one scale-up fabric that also divides the attention heads (Ulysses gives each
    chip whole heads: HunyuanVideo's 24 split 8 ways, not 16), at least the chips its weights need."""
    # model.flops_per_sample says what a request costs, not how it splits: a diffusion model of no family is still split
    # by its latent tokens (review 28: a 14B video model's 8 GPUs took as long as one)
    if family_of(profile) is not None or not profile.is_diffusion:
        return None
    d = dit(profile, c)
    if d is None:
        return None
    top = min(count, acc.scale_up)
    return _SequenceParallel(
        next((k for k in range(top, per_copy - 1, -1) if count % k == 0 and (d.heads == 0 or d.heads % k == 0)), per_copy), d)


def _replica(
    profile: Profile, acc: Accelerator, count: int, c: Constants, held: tuple[float, float], room: float,
    rates: tuple[float, float, float],
) -> tuple[serving.LlmReplica | serving.RequestReplica, int, dict[str, Any]]:
    """The step model of one replica, the most requests its memory holds and the memory notes of the estimate.
    ``held``: bytes of the weights and of the embedding tables among them; ``room``: usable bytes the weights
    leave; ``rates``: the replica's bandwidth, compute and per-step overhead (request models)."""
    inf = profile.inference
    assert inf is not None
    weights, tables = held
    bw, compute, overhead = rates
    if not is_llm_inference(profile):
        flops_req = request_flops(profile, c)
        # embedding tables are gathered row by row, not streamed: a step reads the dense weights
        fam = family_of(profile)
        decoder = fam is not None and fam.kind == "speech" and bool(fam.decoder_flops_per_token) and inf.output_tokens > 1
        dec_flops = (fam.decoder_flops_per_token or 0.0) if fam is not None and decoder else 0.0
        per_param = weights / max(profile.model.params_b * 1e9, 1.0)  # bytes per parameter as held
        # what one request holds while it is served: an encoder-decoder's cross-attention cache (in the activations' 16
        # bits), which every decode step reads whole; a one-pass request, only its activations (not a bound here)
        cache = (fam.cross_kv_values or 0.0) * 2.0 if fam is not None and decoder else 0.0
        # one copy of the model per chip where it fits one (data parallel: SDXL, Whisper, ResNet served one copy a GPU);
        # a model larger than a chip takes as many chips a copy as it needs; tables sharded over the chips, one copy
        chip = acc.specs.memory_gib * GIB * (1.0 - c.estimator.memory.serving_memory_reserve_fraction.value)
        per_copy = max(1, -(-int(weights) // max(int(chip), 1)))
        # a diffusion transformer splits one request's latent tokens over a copy's chips instead (sequence parallelism:
        # DeepSpeed-Ulysses, ring attention; Wan2.1 --ulysses_size, xDiT): a lone video takes the copy's summed rate
        # less its all-to-alls, so a copy spans the largest count of chips one scale-up fabric joins that divides the replica
        sp = _sequence_parallel(profile, acc, count, per_copy, c)
        chips_each = sp.k if sp is not None else per_copy
        workers = 1 if tables else max(1, count // chips_each)
        link = sizing.link_bytes_per_s(acc, c)
        request = serving.RequestReplica(
            weights - tables if tables else weights, flops_req, inf.output_tokens if decoder else 1, bw, compute, overhead,
            decode_steps=inf.output_tokens if decoder else 0, decode_bytes=dec_flops / 2.0 * per_param, decode_flops=dec_flops,
            request_bytes=workloads.embedding_lookup_bytes(profile), decode_request_bytes=cache, workers=workers,
            request_comm=sp.dit.all_to_all_bytes(sp.k) / link if sp is not None else 0.0,
        )
        # each copy holds its own weights: the room a copy's chips leave, for its share of the requests' caches
        room_copy = per_copy * chip - weights if workers > 1 else room
        by_memory = (workers * int(room_copy // cache) if cache else 1024) if room_copy > 0 else 0
        notes: dict[str, Any] = {
            "weights_gb": round(weights / 1e9, 2), "request_flops": f"{flops_req:.3e}", "request_model": request_model_name(profile, c),
        }
        if sp is not None and sp.k > 1:
            notes["sequence_parallel"] = {
                "chips_per_request": sp.k, "copies": workers,
                "all_to_all_gb_per_request_per_chip": round(sp.dit.all_to_all_bytes(sp.k) / 1e9, 2),
                "all_to_all_seconds_per_request": round(request.request_comm, 2),
                "why": "a diffusion transformer's request is split by its latent tokens over the chips of one scale-up fabric "
                       "(Ulysses sequence parallelism: four all-to-alls of the activations a layer, over "
                       + ("the chip interconnect" if acc.specs.interconnect_gbps else "PCIe") + ")",
            }
        elif workers > 1:
            notes["copies_per_replica"] = {"copies": workers, "chips_each": count // workers,
                                           "why": "one copy of the model per chip that holds it, each serving its share of "
                                                  "the requests (data parallel): a request runs on one copy's chips"}
        if decoder:
            notes["decoder"] = {
                "steps": inf.output_tokens, "weights_gb_per_step": round(request.decode_bytes / 1e9, 3),
                "cross_attention_cache_mb_per_request": round(cache / 1e6, 1), "max_batch_by_memory": by_memory,
                "why": "an encoder-decoder generates its transcript one token a step, each step reading the decoder's weights "
                       "once for the batch and every running request's cross-attention keys and values, which each request "
                       "holds (rules/model-families.yaml)",
            }
        if request.request_bytes:
            notes["embedding_lookups"] = {
                "bytes_per_request": round(request.request_bytes),
                "why": "each request gathers its rows of the tables (lookups_per_sample x dim): a read, not matmul FLOPs",
            }
        return request, by_memory, notes
    ic = c.estimator.inference
    shape = model_shape(profile)
    replica = llm_replica(profile, acc, count, c)
    # the context whose KV cache a running request holds on average: a paged engine allocating on demand holds
    # what it has reached (input + half the output over its life), one that reserves up front the whole request
    share = ic.kv_reserved_output.get(profile.software.serving_stack) if ic.kv_reserved_output else 1.0
    ctx = inf.input_tokens + share * inf.output_tokens
    # the engine's activation peak is kept out of the KV cache: a forward of its prefill token budget,
    # one layer's working set live at a time (34 x hidden bytes per token, Korthikanti et al. 2022)
    budget = ic.prefill_token_budget.get(acc, profile.software.serving_stack) if ic.prefill_token_budget else None
    act_reserve = float(budget or 0) * 34.0 * shape.hidden
    kv_room = room - act_reserve
    max_batch_mem = int(kv_room // max(replica.kv_bytes(ctx), 1.0)) if kv_room > 0 and room > 0 else 0
    notes = {
        "weights_gb": round(weights / 1e9, 2),
        "kv_cache_mb_per_token": round(replica.kv_per_token / 1e6, 4),
        "kv_cache": kv_note(profile, replica, kv_replication(profile, acc, count)),
        "max_batch_by_memory": max_batch_mem,
        "activation_reserve_gb": round(act_reserve / 1e9, 3),
        "model_shape": {
            "layers": shape.layers, "hidden_size": shape.hidden, "kv_dim": shape.kv_dim, "approximated": list(shape.approximated),
        },
    }
    return replica, max_batch_mem, notes


def _ranges(
    replica: serving.LlmReplica | serving.RequestReplica, pt: serving.Point, mbu: Range, pre: Range, lv: LevelRow | None,
    spread: tuple[float, float],
) -> dict[str, tuple[float, float]]:
    """Low / high of each time and throughput: the operating point at the low and the high utilisations
    (and loaded-prefill share), at least as wide as the step model's own misses on the fit rows of its
    level (serving_spread: ``spread``, throughput multipliers bracketing 1)."""
    slow_r, fast_r = replica, replica
    if lv is not None and isinstance(replica, serving.LlmReplica):
        slow_r, fast_r = dataclasses.replace(replica, loaded_prefill=lv.low), dataclasses.replace(replica, loaded_prefill=lv.high)
    p_slow, p_fast = slow_r.point(pt.concurrency, mbu.low, pre.low), fast_r.point(pt.concurrency, mbu.high, pre.high)
    lo, hi = spread
    return {
        "ttft_ms": (min(p_fast.ttft, pt.ttft / hi) * 1000, max(p_slow.ttft, pt.ttft / lo) * 1000),
        "tpot_ms": (min(p_fast.tpot, pt.tpot / hi) * 1000, max(p_slow.tpot, pt.tpot / lo) * 1000),
        "latency_ms": (min(p_fast.latency, pt.latency / hi) * 1000, max(p_slow.latency, pt.latency / lo) * 1000),
        "tokens_per_second": (
            min(p_slow.tokens_per_second, pt.tokens_per_second * lo), max(p_fast.tokens_per_second, pt.tokens_per_second * hi),
        ),
    }


def _level_notes(e: Estimate, profile: Profile, acc: Accelerator, c: Constants, mbu: Range) -> None:
    """assumptions.levels of an LLM replica: each fitted serving constant at the level it came from, and where the
    family's decode-step figures stand on fewer publications than a level of its own needs."""
    levels: dict[str, Any] = {}
    for row in (loaded_prefill(profile, acc, c), moe_serving(profile, acc, c), serving_spread(profile, acc, c)):
        if row is not None:
            levels[row.constant] = row.describe()
    if family(acc.device).decode_utilisation is not None:  # a family's own serving figures: what they stand on
        levels["decode_step"] = {
            "level": f"family ({acc.device})", "fit": mbu.note.split(". ")[0][:160] if mbu.note else "",
            "sources": list(mbu.source),
            "inherited": (
                f"fitted on {len(set(mbu.source))} publication(s), below the >= 2 a generation or stack of its own needs: "
                f"{acc.id} with {profile.software.serving_stack} takes the {family(acc.device).name} family's figures"
            ),
        }
    if levels:
        e.assumptions["levels"] = levels


def _p99_of(mid: serving.OperatingPoint, inf: Any, budget: int | None) -> dict[str, Any]:
    cap = mid.at_capacity
    return tail.p99(
        mid.at_peak.ttft, mid.at_peak.tpot, inf, mid.at_one.ttft, inf.peak_qps / max(mid.replicas, 1), cap.concurrency, cap.latency,
        budget, mid.at_one.prefill_occupancy or None, mid.at_one.prefill_compute or None,
    )


def prefill_budgets(profile: Profile, acc: Accelerator, c: Constants) -> tuple[int | None, ...]:
    """The prompt-token budgets per step a server may run with: first the one the profile's stack takes by default on
    this chip (None where it is not known), then the smaller latency budgets a p99 target may set where the stack's
    setup sets one (rules/estimator.yaml latency_prefill_budget)."""
    ic = c.estimator.inference
    stack = profile.software.serving_stack
    default = ic.prefill_token_budget.get(acc, stack) if ic.prefill_token_budget else None
    lat = ic.latency_prefill_budget
    if default is None or lat is None or stack not in lat.stacks:
        return (default,)
    return (default, *sorted((b for b in lat.values if b < default), reverse=True))


def _p99_targets(inf: Any) -> list[tuple[str, str, float]]:
    """(what, p99 key, target ms) of each p99 target the profile sets."""
    tpot = inf.tpot_p99_ms if inf.output_tokens > 0 else None  # no output token to time (readset warns)
    named = (("latency", "latency_ms", inf.latency_p99_ms), ("TTFT", "ttft_ms", inf.ttft_p99_ms), ("TPOT", "tpot_ms", tpot))
    return [(what, key, float(target)) for what, key, target in named if target is not None]


def _p99_misses(p: dict[str, Any], inf: Any) -> list[str]:
    """The p99 targets a p99 estimate misses, as text."""
    return [f"p99 {what} {p[key]:,.0f} ms > {target:g} ms" for what, key, target in _p99_targets(inf) if p[key] > target]


def _budget_for(mid: serving.OperatingPoint, inf: Any, budgets: tuple[int | None, ...]) -> int | None:
    """The budget the server is set to: the default without a p99 target; with one, the largest budget whose
    p99 meets every target, else the one whose p99 misses least (summed relative excess)."""
    targets = _p99_targets(inf)
    if len(budgets) == 1 or not targets:
        return budgets[0]
    best, best_excess = budgets[0], math.inf
    for b in budgets:
        p = _p99_of(mid, inf, b)
        excess = sum(max(0.0, p[key] / target - 1.0) for _what, key, target in targets)
        if excess == 0.0:
            return b
        if excess < best_excess:
            best, best_excess = b, excess
    return best


def spread_bounds(row: LevelRow | None) -> tuple[float, float]:
    """(low, high) multipliers of throughput a serving_spread row gives, always bracketing 1."""
    if row is None:
        return 1.0, 1.0
    return min(row.low, 1.0), max(row.high, 1.0)


def _sized_for_p99(
    mid: serving.OperatingPoint, inf: Any, load: dict[str, Any], again: Any, budgets: tuple[int | None, ...],
) -> serving.OperatingPoint:
    """A p99 target (latency, TTFT, TPOT) sizes the replicas for the p99, not the typical request: while the
    p99 misses one (at the server's best prompt-token budget, which costs nothing) and the typical
    request meets its target, provision more replicas (a lower target utilisation: less waiting for a slot,
    fewer prompt chunks per decode step), down to 30%. ``load`` is the sizing's, shared with the cost ranges."""
    for _ in range(6):
        p = _p99_of(mid, inf, _budget_for(mid, inf, budgets))
        if not _p99_misses(p, inf) or not mid.meets_latency or load["utilisation"] <= 0.3:
            break
        load["utilisation"] = max(0.3, load["utilisation"] * 0.8)
        mid = again()
    return mid


def _busy(mid: serving.OperatingPoint, qps: float) -> float:
    """The share of time a replica serves a batch at peak: its arrivals over what it serves at its operating point."""
    rate = mid.at_peak.requests_per_second
    return min(1.0, qps / max(mid.replicas, 1) / rate) if rate > 0 else 1.0


def _batches_sized_for_p99(mid: serving.OperatingPoint, inf: Any, ld: _Load, again: Any) -> serving.OperatingPoint:
    """A replica serving batches meets a p99 latency target with its p99 (estimate/tail.batch_p99: about two batches),
    not its typical request (one): while the p99 misses and the typical request meets the target, the batch is held to
    a shorter time (the target scaled by typical / p99), so smaller batches and more replicas."""
    target_s = inf.latency_p99_ms / 1000.0
    for _ in range(6):
        p = tail.batch_p99(mid.at_peak.latency, _busy(mid, ld.qps))
        if p["latency_ms"] <= inf.latency_p99_ms or not mid.meets_latency or ld.load["target_s"] is None:
            break
        ld.load["target_s"] = max(ld.load["target_s"] * mid.at_peak.latency * 1000.0 / p["latency_ms"], target_s * 0.25)
        mid = again()
    return mid


def _batch_tail(e: Estimate, inf: Any, mid: serving.OperatingPoint, qps: float) -> None:
    """The p99 of a replica serving batches, and the p99 latency target compared with it."""
    e.p99 = tail.batch_p99(mid.at_peak.latency, _busy(mid, qps))
    if inf.latency_p99_ms is not None and e.p99["latency_ms"] > inf.latency_p99_ms:
        e.p99["misses"] = [f"p99 latency {e.p99['latency_ms']:,.0f} ms > {inf.latency_p99_ms:g} ms"]
        e.meets_latency = False


def _tail(e: Estimate, inf: Any, mid: serving.OperatingPoint, budgets: tuple[int | None, ...]) -> None:
    """The p99 estimate (estimate/tail.py) at the server's prompt-token budget, and the p99 targets compared with
    it: a p99 target is met by the p99, not by the typical request. A budget below the stack's default is one the
    setup sets (``prefill_budget``)."""
    budget = _budget_for(mid, inf, budgets)
    e.p99 = _p99_of(mid, inf, budget)
    if budget is not None and budget != budgets[0]:
        e.p99["prefill_budget"] = {
            "tokens": budget, "default": budgets[0],
            "why": f"set for the p99 targets: prompt chunks of at most {budget:,} tokens per step (the stack's default {budgets[0]:,})",
        }
    misses = _p99_misses(e.p99, inf)
    if _p99_targets(inf):
        e.meets_latency = e.meets_latency is not False and not misses
    if misses:
        e.p99["misses"] = misses
