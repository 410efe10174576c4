"""Training estimates: FLOPs, memory, time and cost of one configuration, and the counts worth
estimating for one workload (a doubling ladder of real shapes plus the solved counts)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

from advisor import model_families, software
from advisor.catalog import Accelerator
from advisor.constants import COARSE_EXPERTS, MIN_SPREAD_ROWS, Constants, LevelRow, Range
from advisor.estimate import onprem, sizing, workloads
from advisor.estimate.efficiency import decode_mbu, software_notes, stack_for, training_mfu
from advisor.estimate.price import apply_price, apply_purchase_limits, set_feasibility, shape_name
from advisor.estimate.readset import unused_fields
from advisor.estimate.replica import (
    BYTES,
    DEFAULT_WINDOW,
    Shape,
    model_shape,
)
from advisor.estimate.result import GIB, Estimate
from advisor.families import family
from advisor.models import Profile


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
        base_bytes = 0.5 if method == "qlora" else profile.model.weight_bytes
        trainable = n * c.estimator.fine_tuning.lora_trainable_fraction.value
        state = n * base_bytes + trainable * (2.0 * 2 + m.optimizer_bytes_per_param_full.value)
        sharding = f"frozen base weights ({base_bytes:g} B/param) and adapter state sharded over all chips"
    # Checkpointed activations for one sequence: the layer inputs kept
    # (2 B x hidden x layers per token) plus one layer's working set re-computed
    # (34 x hidden bytes per token; Korthikanti et al. 2022, eq. 2, flash attention).
    activations = t.seq_len * shape.hidden * (2.0 * shape.layers + 34.0)
    # a language model's head: the fp32 logits of the sequence, kept for the loss (memory.logits_bytes_per_token_per_vocab)
    vocab = language_vocab(profile, c)
    logits = t.seq_len * vocab * m.logits_bytes_per_token_per_vocab.value if vocab else 0.0
    overhead = 1.0 + m.activation_overhead_fraction.value
    notes: dict[str, Any] = {
        "sharding": sharding,
        "state_gb_total": round(state / 1e9, 2),
        "activations_gb_per_sequence": round((activations + logits) / 1e9, 3),
    }
    if vocab:
        notes["logits_gb_per_sequence"] = round(logits / 1e9, 3)
        notes["vocab_size"] = vocab if profile.model.vocab_size else f"{vocab:,} (assumed: memory.default_vocab_size; set model.vocab_size)"
    return state, activations + logits, overhead, notes


def vocab_size(profile: Profile, c: Constants) -> int:
    """The model's vocabulary: model.vocab_size, else memory.default_vocab_size (Llama 3's)."""
    return profile.model.vocab_size or int(c.estimator.memory.default_vocab_size.value)


def language_vocab(profile: Profile, c: Constants) -> int | None:
    """The vocabulary a token run's output head projects to (vocab_size): given, or a language model's (domain llm, a
    transformer or mixture of experts) by default; None for a model with no language-model head."""
    t = profile.training
    if t is None or t.sample_based or profile.model.architecture not in ("transformer", "moe"):
        return None
    return vocab_size(profile, c) if profile.model.vocab_size or profile.domain == "llm" else None


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
    levels: list[LevelRow]  # the fitted factors applied (low precision, MoE), at the level each came from
    spreads: list[LevelRow]  # where each factor's range comes from (EstimatorConstants.spread), in the order of levels


LOW_PRECISION = ("fp8", "int8", "int4", "fp4")


def level_attrs(profile: Profile, acc: Accelerator, stack: str, precision: str | None) -> dict[str, str]:
    """What a fitted constant's levels can match on (rules/estimator.yaml ``levels``): the chip, its family and vendor,
    the stack, the precision computed in and a mixture of experts' routing (coarse: at most COARSE_EXPERTS routed
    experts; fine: more; empty where model.experts is not given or the model is dense)."""
    experts = profile.model.experts if profile.model.architecture == "moe" else None
    routing = "" if experts is None else ("coarse" if experts <= COARSE_EXPERTS else "fine")
    return {"device": acc.device, "accelerator": acc.id, "stack": stack, "vendor": acc.vendor, "routing": routing,
            "precision": precision or ""}


def training_levels(profile: Profile, acc: Accelerator, c: Constants, stack: str, precision: str | None) -> list[LevelRow]:
    """The fitted training factors that apply: what a token run reaches of the stack's MFU table at its
    level (its spread is the estimate's range), the attained share of an 8-bit (or lower) peak relative
    to the stack's 16-bit MFU, and a mixture of experts' utilisation relative to a dense model's
    (all-to-all over the fabric, routing imbalance, grouped GEMMs), each at its most specific level."""
    attrs = level_attrs(profile, acc, stack, precision)
    found = (
        [c.estimator.level("dense_training_factor", attrs)] if profile.training is not None and not profile.training.sample_based else []
    )
    if precision in LOW_PRECISION:
        found.append(c.estimator.level("low_precision_training_factor", attrs))
    if profile.model.architecture == "moe":
        found.append(c.estimator.level("moe_training_factor", attrs))
    return [r for r in found if r is not None]


def level_spreads(levels: list[LevelRow], attrs: dict[str, str], c: Constants) -> list[LevelRow]:
    """Where each applied factor's range is read: at a level that rests on enough fit rows
    (EstimatorConstants.spread: a generation of 3 rows gives its value, the family of 20 its range)."""
    return [c.estimator.spread(row.constant, attrs) or row for row in levels]


def _moe_rate(
    dense: float, moe: float, acc: Accelerator, c: Constants, used: str | None, peak: float, common: float, levels: list[LevelRow],
) -> float:
    """A mixture of experts' share of the peak it computes in: its dense-equivalent matmuls at ``dense`` (the run's own
    precision, its low-precision factor included) plus what the MoE adds (token dispatch and combine, permutation,
    routing imbalance, small grouped GEMMs), which moe_training_factor sizes as (1 / factor - 1) x the 16-bit matmul time
    and which does not get faster with the matmuls' precision (Amdahl): an FP8 step halves its matmuls, not its
    all-to-all. In 16 bits this is dense x factor. Ironwood's MaxText recipes, one chip and stack at both precisions:
    dense Llama-3 70B / 405B gain 1.53-1.54x from FP8, DeepSeek-V3 1.20-1.21x and Qwen3-235B 1.12x; the law gives a MoE
    1 / (f / s + 1 - f) of a dense model's gain s: 1.19x at the TPU factor 0.47 and s 1.5, where one factor on the
    whole step gave it the dense 1.47x."""
    if used not in LOW_PRECISION:
        return dense * moe
    bf16, peak16, _ = acc.compute_precision("bf16")
    if not peak16 or not peak:
        return dense * moe
    dense16 = common * intensity_factor(acc, peak16, c) * sizing.attained_scale(acc, c, bf16)[0]
    for row in levels:
        if row.constant not in ("moe_training_factor", "low_precision_training_factor"):
            dense16 *= row.value
    return 1.0 / (1.0 / dense + (peak / peak16) * (1.0 / moe - 1.0) / dense16)


def _training_rate(profile: Profile, acc: Accelerator, c: Constants) -> _TrainingRate:
    sw = software.resolve(profile, acc)  # where a library does not run: its equivalent (QLoRA -> bf16 LoRA on TPU)
    profile = sw.profile
    assert profile.training is not None
    ft = c.estimator.fine_tuning
    factor = {"full": 1.0, "lora": ft.lora_flops_factor.value, "qlora": ft.qlora_flops_factor.value}[profile.training.method]
    flops, formula, assumed = profile.training_flops(
        factor, c.estimator.request_flops.vision_flops_per_param.value, model_families.forward_flops(profile),
    )
    attention = attention_flops(profile)
    if attention > 0:
        flops += attention
        formula += " + causal attention 6 x layers x seq_len x d_attn x tokens"
    used, peak, fallback = acc.compute_precision(profile.model.precision)
    stack = stack_for(profile, acc.device)
    small = c.estimator.small_model_factor
    size_factor = small.value if min(profile.active_params_b, profile.model.dense_params_b) < small.applies_below_params_b else 1.0
    size_factor *= workloads.mfu_factor(profile, acc, c)
    common = size_factor
    size_factor *= intensity_factor(acc, peak, c) * sizing.attained_scale(acc, c, used)[0]
    levels = training_levels(profile, acc, c, stack, used)
    spreads = level_spreads(levels, level_attrs(profile, acc, stack, used), c)
    moe = next((row for row in levels if row.constant == "moe_training_factor"), None)
    for row in levels:
        if row is not moe:
            size_factor *= row.value
    if moe is not None:
        size_factor = _moe_rate(size_factor, moe.value, acc, c, used, peak, common, levels)
    return _TrainingRate(
        sw, flops, formula, assumed, peak or acc.peak_bf16_flops,  # no FP64 rate: flagged by the estimate
        fallback, stack, training_mfu(c, acc, stack), size_factor, levels, spreads,
    )


def intensity_factor(acc: Accelerator, peak: float, c: Constants) -> float:
    """What a step reaches of the stack's MFU on this chip at this precision, relative to the family's
    reference chip in 16 bits: the step's memory-bound share (normalisation, activations, softmax,
    optimiser state) runs at HBM speed, so MFU goes as 1 / (1 + k x peak / bandwidth), k the family's
    own (a compiler that fuses more streams fewer bytes per FLOP). 1 for a family without a reference chip."""
    ti = c.estimator.training_intensity
    ref = ti.reference.get(acc.device)
    if ref is None or not peak or not acc.specs.memory_bandwidth_gbps:
        return 1.0
    ratio = peak / (acc.specs.memory_bandwidth_gbps * 1e9)
    k = ti.k(acc.device)
    return (1.0 + k * ref.flop_per_byte) / (1.0 + k * ratio)


def attention_flops(profile: Profile) -> float:
    """Attention FLOPs of a token-based transformer run, which 6 x N x D leaves out: per token,
    QK^T and AV of every layer over the causal context, forward and backward, 6 x layers x seq_len
    x d_attn (PaLM, arXiv 2204.02311 appendix B: 12 x L x H x Q x T for full attention; MaxText and
    Megatron-LM count the causal half, MaxText PR #1988). d_attn = heads x head_dim where
    model.attention gives both (Qwen3, Gemma 3, gpt-oss attend wider than hidden), else hidden (Llama-class
    models), from model.layers / hidden_size or the shape derived from the parameters. A sliding window W
    bounds a windowed layer's keys: a sequence of T tokens attends T W - W^2 / 2 query-key pairs there
    instead of T^2 / 2 (Gemma 3: 5 of 6 layers at 1,024 tokens; gpt-oss: every other layer at 128).
    Not LoRA-scaled: attention has no frozen weights, its backward runs in full."""
    t = profile.training
    if t is None or t.sample_based or profile.model.architecture not in ("transformer", "moe"):
        return 0.0
    shape = model_shape(profile)
    seq = float(t.seq_len)
    att = profile.model.attention
    effective = seq  # 2 x the mean causal context: seq on full-attention layers
    if att is not None and att.kind == "sliding":
        w = float(att.window or DEFAULT_WINDOW)
        windowed = seq if seq <= w else 2.0 * (w - w * w / (2.0 * seq))
        effective = (1.0 - att.sliding_fraction) * seq + att.sliding_fraction * windowed
    return 6.0 * shape.layers * effective * shape.attn_dim * t.tokens_b * 1e9


def training_cost_floor(profile: Profile, acc: Accelerator, c: Constants) -> float | None:
    """Dollars below which no configuration of ``acc`` runs this training workload: every FLOP at the
    expected MFU with no scaling loss (a plan's efficiency is at most 1), no start-up, at the lowest
    price ``acc`` has anywhere (any cloud, kind, region or count) or its on-prem rate where on-prem is
    allowed. None where it has neither (never priced). What the verdict search prunes with."""
    r = _training_rate(profile, acc, c)
    usd = [p.usd_per_chip_hour for p in acc.prices]
    if onprem.purchasing(profile.deployment):
        own = onprem.rate(acc, profile.deployment.onprem)
        if own is not None:
            usd.append(own.usd_per_chip_hour)
    if not usd:
        return None
    return r.flops / (r.peak * r.mfu.expected * r.size_factor) / 3600.0 * min(usd)


def _warnings(e: Estimate, profile: Profile, rate: _TrainingRate) -> None:
    """The software's warnings, fields the estimate does not read, a missing or assumed FLOPs
    formula, a precision computed at another one's rate."""
    e.warnings.extend(rate.sw.warnings)
    e.warnings.extend(unused_fields(profile))
    no_formula = workloads.formula_warning(profile)
    if no_formula:
        e.warnings.append(no_formula)
    elif rate.assumed:
        e.warnings.append(f"no FLOPs per sample for a {profile.model.architecture} model: {rate.formula}")
    if rate.fallback:
        e.warnings.append(rate.fallback)


def _times(
    e: Estimate, rate: _TrainingRate, count: int, eff: float, floor: _StepFloor, compile_h: float, emb_s: tuple[float, ...], tokens: float,
    ceiling: float,
) -> None:
    """Hours (expected, low, high) and tokens per second with their range: the stack's MFU range
    and each fitted factor's spread at the level it came from, never below the serial-step floor
    nor above ``ceiling`` of the peak."""
    mfu, flops, peak = rate.mfu, rate.flops, rate.peak

    def hours(util: float, extra_s: float) -> float:
        # no scenario computes a larger share of the peak than any published run has (scaling.mfu_ceiling)
        run_h = flops / (count * peak * min(util * eff, ceiling)) / 3600
        return max(run_h, floor.hours(util)) + extra_s / 3600 + compile_h

    spread_fast = math.prod(r.high / r.value for r in rate.spreads)
    spread_slow = math.prod(r.low / r.value for r in rate.spreads)
    # a fitted level's low..high is the smallest and largest factor its fit rows needed on top of the table's
    # expected MFU: it already spans how far published runs sit from that figure, so the table's own low..high (a
    # prior: a less tuned job, a long context) applies only where no level was fitted (sample-based training)
    fast, slow = (mfu.expected, mfu.expected) if rate.levels else (mfu.high, mfu.low)
    e.hours = hours(mfu.expected, emb_s[1])
    e.hours_low = hours(fast * spread_fast, emb_s[0])
    e.hours_high = hours(slow * spread_slow, emb_s[2])
    e.tokens_per_second = tokens / max((e.hours - compile_h) * 3600, 1e-9)
    e.ranges = {
        "hours": (e.hours_low, e.hours_high),
        "tokens_per_second": (tokens / max((e.hours_high - compile_h) * 3600, 1e-9), tokens / max((e.hours_low - compile_h) * 3600, 1e-9)),
    }


def _training_assumptions(
    profile: Profile, acc: Accelerator, c: Constants, rate: _TrainingRate, scale: float, mem_notes: Any, shape: Shape,
) -> dict[str, Any]:
    mfu, peak = rate.mfu, rate.peak
    return {
        "flops": f"{rate.flops:.3e}",
        "flops_formula": rate.formula,
        "stack": rate.stack,
        "mfu": {"low": mfu.low, "expected": mfu.expected, "high": mfu.high, "source": mfu.source},
        "peak_tflops_per_chip": round(peak / 1e12, 1),
        "scaling_efficiency": round(scale, 3),
        "global_batch_tokens": round(sizing.global_batch_tokens(profile, c)),
        "small_model_factor": rate.size_factor,
        "intensity_factor": round(intensity_factor(acc, peak, c), 4),
        "memory": mem_notes,
        "model_shape": {"layers": shape.layers, "hidden_size": shape.hidden, "approximated": list(shape.approximated)},
    }


def estimate_training(profile: Profile, acc: Accelerator, count: int, c: Constants, *, owned_chips: int | None = None) -> Estimate:
    assert profile.training is not None
    e = Estimate(acc.id, acc.device, count, shape_name(acc, count), "training", owned_chips=owned_chips)
    layout = family(acc.device).shapes.host_layout(acc, count)
    e.machines = int(layout.get("slices") or layout.get("hosts") or 1)  # TPU slices, GPU nodes
    rate = _training_rate(profile, acc, c)
    sw = rate.sw
    profile = sw.profile
    t = profile.training
    assert t is not None
    _warnings(e, profile, rate)
    shape = model_shape(profile)
    flops, peak, mfu, size_factor = rate.flops, rate.peak, rate.mfu, rate.size_factor
    ov = c.estimator.overheads
    compile_h = ov.startup_minutes.expected / 60 + (ov.xla_compile_minutes.expected / 60 if family(acc.device).compiles else 0.0)
    emb = workloads.embedding_training(profile, acc, count, c, decode_mbu(c, acc))

    state, activations, overhead, mem_notes = _training_memory(profile, c, shape, t.method)
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
        if t.global_batch and count <= seqs:
            e.why_not = (f"no data-parallel width of {count} chips divides the global batch of {seqs} sequences "
                         "(each rank takes the same whole number); take a count whose width does")
        else:
            e.why_not = f"more chips than the batch can use ({seqs} sequences per step; set training.global_batch if yours is larger)"

    floor = _step_floor(profile, c, plan, flops, peak * size_factor, mfu.expected)
    _times(e, rate, count, eff, floor, compile_h, emb.seconds, t.tokens_b * 1e9, c.estimator.scaling.mfu_ceiling.value)
    e.parallelism = plan.to_json() if plan is not None else None

    apply_price(e, profile, acc, (e.hours or 0.0) * count, restart_hours=compile_h)
    if t.deadline_hours is not None and e.hours is not None:
        e.meets_deadline = e.hours <= t.deadline_hours
        if e.meets_deadline and e.hours_high is not None and e.hours_high > t.deadline_hours:
            # the expected time meets it, the slow end of the range does not: said, so a team plans the slack
            e.warnings.append(f"the deadline ({t.deadline_hours:g} h) is met at the expected {e.hours:.0f} h but not at the slow "
                              f"end of the range ({e.hours_high:.0f} h): leave slack or take the next larger count")
    if profile.goal.budget_usd is not None and e.cost_usd is not None:
        e.within_budget = e.cost_usd <= profile.goal.budget_usd
    apply_purchase_limits(e, profile)

    e.assumptions = _training_assumptions(profile, acc, c, rate, scale, mem_notes, shape)
    e.assumptions["startup_hours"] = round(compile_h, 3)
    if floor.steps:
        e.assumptions["step_floor"] = floor.to_json(mfu.expected, flops / (count * peak * mfu.expected * eff) / 3600)
    if rate.levels:
        e.assumptions["levels"] = {r.constant: _described(r, at) for r, at in zip(rate.levels, rate.spreads, strict=True)}
    if emb.notes:
        e.assumptions["embeddings"] = emb.notes
    software_notes(e, sw)
    target, stated = training_target_hours(profile, c)
    e.assumptions["target_hours"] = target
    if not stated:
        e.assumptions["target_hours_note"] = f"no training.deadline_hours: sized to finish within the default {target:g} h"
    if profile.model.precision == "fp64" and "fp64" not in acc.specs.peak_tflops:
        e.feasible, e.why_not = False, "no FP64 arithmetic on this accelerator"
    set_feasibility(e, profile, acc)
    return e


@dataclass(slots=True)
class _StepFloor:
    """The serial floor of a run: ``steps`` optimiser steps, each at least one micro-batch (one
    sequence) through the model on its tensor-parallel group (a pipeline passes one micro-batch
    through its stages one after another) plus the gradient all-reduce left exposed. A count the
    time model makes faster than this is bounded by it (docs/estimator.md, "Serial-step floor")."""

    steps: float = 0.0
    micro_flop_s: float = 0.0  # one micro-batch's FLOPs on its tensor group, over (peak x MFU): x 1/util
    exposed_s: float = 0.0  # the step's exposed data-parallel traffic, seconds (at the expected MFU)

    def hours(self, util: float) -> float:
        return self.steps * (self.micro_flop_s / max(util, 1e-9) + self.exposed_s) / 3600.0

    def to_json(self, util: float, model_hours: float) -> dict[str, Any]:
        return {
            "steps": round(self.steps),
            "seconds_per_step_floor": round(self.micro_flop_s / max(util, 1e-9) + self.exposed_s, 4),
            "floor_hours": round(self.hours(util), 3),
            "binds": self.hours(util) > model_hours,
        }


def _step_floor(profile: Profile, c: Constants, plan: sizing.Plan | None, flops: float, rate: float, mfu: float) -> _StepFloor:
    """``rate``: the chip's peak FLOP/s times the workload's size factor; ``mfu``: the expected MFU
    the plan was costed at (its exposed traffic is a fraction of that compute)."""
    assert profile.training is not None
    t = profile.training
    tokens = t.tokens_b * 1e9
    if plan is None or tokens <= 0 or t.sample_based:
        return _StepFloor()
    steps = tokens / sizing.global_batch_tokens(profile, c)
    micro = flops * t.seq_len / tokens / (plan.tensor * rate)
    step_per_chip_s = flops / max(steps, 1.0) / (plan.data * plan.tensor * plan.pipeline * rate * mfu)
    return _StepFloor(steps, micro, plan.comm_exposed * step_per_chip_s)


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
        fitting = [n for n in ladder if n >= fit_at and est(n).parallelism is not None and est(n).procurable]
        knee = _knee(fitting, est, knee_speed, profile.goal.optimize == "time") if fitting else knee
        target, _stated = training_target_hours(profile, c)
        margin = c.scoring.balanced_deadline_margin.value
        goals = {"cost": [target], "balanced": [target * (1.0 - margin), target], "time": []}[profile.goal.optimize]
        for goal in goals:
            if (solved := _solve_count(shapes, est, fitting, knee, goal)) is not None:
                if profile.goal.optimize != "time":
                    _whole_steps(shapes, est, fitting, knee, solved)
                e = est(solved)
                if profile.goal.optimize == "cost" and e.hours and e.hours_high and e.hours_high > goal:
                    # the smallest count whose slow end meets the goal too, which a cost tie may prefer (search.best)
                    _solve_count(shapes, est, fitting, knee, goal * e.hours / e.hours_high)
                break
        for n, e in memo.items():
            e.past_knee = n > knee
    return [memo[n] for n in sorted(memo)]


def _knee(fitting: list[int], est: Any, knee_speed: float, by_cost: bool) -> int:
    """The knee of the time-cost curve over ``fitting`` (ascending counts): the last count that each step from the
    count before it was worth, a step of 2^d x the chips being worth it while it speeds the run up by at least
    knee_speed^d and (``by_cost``, goal time) costs at most (2 / knee_speed)^d times as much. Speed-ups only shrink as
    chips are added, so the first step too slow ends the walk; a price step (a minimum term, a dearer procurement kind)
    does not: a larger count on a cheaper kind past it is measured from the last count worth having (64 B200 on a
    year's reservation, 128 on the same year at half use, 256 and 512 on a calendar reservation at 1.1x and 1.0x
    the 64's price: the knee is 512, not 64)."""
    knee = fitting[0]
    for b in fitting[1:]:
        a = knee
        steps = max(math.log2(b / a), 1e-9)
        ha, hb = est(a).hours or 0.0, est(b).hours or 0.0
        per_doubling = (ha / hb) ** (1.0 / steps) if hb > 0 else 0.0
        if per_doubling < knee_speed:
            break
        ca, cb = est(a).cost_usd, est(b).cost_usd
        dearer = (cb / ca) ** (1.0 / steps) if ca and cb else 0.0
        if by_cost and dearer > 2.0 / knee_speed:
            continue
        knee = b
    return knee


def _whole_steps(shapes: list[int], est: Any, fitting: list[int], knee: int, n: int, most: int = 6) -> None:
    """Where the capacity that delivers ``n`` is bought in whole steps (a Capacity Block or calendar reservation by the
    day), the cost of a count is a sawtooth: n x the steps its run needs. So the smallest counts that finish one, two,
    ... steps sooner than ``n``'s run (up to ``most``) are estimated too, and the cheapest of them can be chosen: 184 H100
    over 8 days cost less than 144 over 11."""
    from advisor import capacity

    e = est(n)
    step = capacity.step_hours(e.capacity) if e.capacity is not None else None
    if not step or e.hours is None:
        return
    unusable = float(e.capacity.get("unusable_hours") or 0.0)
    billed = float(e.capacity.get("billed_hours") or 0.0)
    fastest = min((est(m).hours or math.inf) for m in fitting if m <= knee) if fitting else math.inf
    for k in range(1, most + 1):
        goal = billed - k * step - unusable
        if goal <= fastest or goal <= 0:
            return
        _solve_count(shapes, est, fitting, knee, goal)


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


def _described(row: LevelRow, at: LevelRow) -> dict[str, Any]:
    """A factor's level, and where its range came from where that is a broader level."""
    out = row.describe()
    if at is not row:
        out["range"] = {"level": at.describe()["level"], "low": round(at.low / at.value, 3), "high": round(at.high / at.value, 3),
                        "fit_rows": len(at.fit_rows), "basis": f"below {MIN_SPREAD_ROWS} fit rows: the range of the level above"}
    return out

