"""One serving replica of a profile on a configuration: the model's shape, its KV cache, its
layout over chips and hosts (tensor parallel inside the fast domain, pipeline stages across),
the per-step overheads and activation traffic, and the latency target and unit of work it is
judged by. advisor.estimate.serving runs the step model over it; advisor.estimator turns its operating
point into an estimate. Sources: docs/estimator.md "Inference"."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor import model_families
from advisor.catalog import Accelerator
from advisor.constants import Constants, LevelRow
from advisor.estimate import serving, sizing, workloads
from advisor.families import family
from advisor.models import PRECISION_BYTES, Profile

BYTES = PRECISION_BYTES
# Head dimension assumed when only kv_heads is known (Llama, Mistral, Qwen, Gemma-2 use 128).
HEAD_DIM = 128
# Multi-head latent attention (DeepSeek-V2/V3 config.json: kv_lora_rank 512, qk_rope_head_dim 64): a
# token caches one 512-value latent and one 64-value RoPE key per layer, 61 x 576 x 2 bytes =
# 70,272 bytes for DeepSeek-V3 in bf16 (the "70 KB per token" of arXiv 2505.09343, Table 1).
MLA_KV_LORA_RANK = 512
MLA_ROPE_DIM = 64
# MoE top-k without model.experts_per_token: Mixtral 8x7B routes each token to 2 experts
# (arXiv 2401.04088); DeepSeek-V3 and Qwen3-MoE route to 8 and say so in their configs.
DEFAULT_EXPERTS_PER_TOKEN = 2
# Sliding-window attention without a stated window: Mistral 7B v0.1's 4096 tokens.
DEFAULT_WINDOW = 4096
# Depth/width of a dense transformer when layers/hidden_size are absent:
# params ~= 12 x layers x hidden^2 (Kaplan et al. 2020, eq. 2.1 without embeddings)
# and hidden ~= 128 x layers (Llama-2 7B/13B: 4096/32, 5120/40).
ASPECT = 128.0


@dataclass(frozen=True)
class Shape:
    """Transformer dimensions, given or approximated."""

    layers: int
    hidden: int
    kv_dim: int
    approximated: tuple[str, ...]
    # the width of the query-key and attention-value products: heads x head_dim where both are given, else hidden
    attn_dim: int


_SHAPE_MEMO: list[Any] = [None, None]  # (profile, shape): candidates share one profile


def model_shape(profile: Profile) -> Shape:
    if _SHAPE_MEMO[0] is profile:
        return _SHAPE_MEMO[1]  # type: ignore[no-any-return]
    shape = _model_shape(profile)
    _SHAPE_MEMO[0], _SHAPE_MEMO[1] = profile, shape
    return shape


def _model_shape(profile: Profile) -> Shape:
    m = profile.model
    approx: list[str] = []
    # The 12 x layers x hidden^2 relation holds for the weights one token passes through: a
    # mixture of experts' attention and active experts (DeepSeek-V3: 37B active of 671B gives
    # ~57 x 7,300 against the real 61 x 7,168; its total would give ~150 x 19,000).
    dense = profile.active_dense_params
    if m.layers and m.hidden_size:
        layers, hidden = m.layers, m.hidden_size
    elif m.hidden_size:
        hidden = m.hidden_size
        layers = max(1, round(dense / (12 * hidden * hidden)))
        approx.append("layers")
    elif m.layers:
        layers = m.layers
        hidden = max(64, round(math.sqrt(dense / (12 * layers))))
        approx.append("hidden_size")
    else:
        layers = max(1, round((dense / (12 * ASPECT * ASPECT)) ** (1 / 3)))
        hidden = max(64, round(math.sqrt(dense / (12 * layers))))
        approx += ["layers", "hidden_size"]
    att = m.attention
    kv_heads = (att.kv_heads if att else None) or m.kv_heads
    if att is not None and att.kind == "mla":
        kv_dim = (att.kv_lora_rank or MLA_KV_LORA_RANK) + (att.rope_dim or MLA_ROPE_DIM)  # one latent, not K and V
    elif kv_heads:
        head = att.head_dim if att and att.head_dim else None
        kv_dim = kv_heads * head if head else min(hidden, kv_heads * HEAD_DIM)
    elif att is not None and att.kind == "mha":
        kv_dim = hidden
    else:
        # Grouped-query attention with 8 KV heads is the default of current open
        # LLMs (Llama-3, Mistral, Qwen-2.5); small models keep full attention.
        kv_dim = min(hidden, 8 * HEAD_DIM) if m.params_b >= 7 else hidden
        approx.append("kv_heads")
    attn_dim = att.heads * att.head_dim if att is not None and att.heads and att.head_dim and att.kind != "mla" else hidden
    return Shape(layers, hidden, kv_dim, tuple(approx), attn_dim)


def is_llm_inference(profile: Profile) -> bool:
    """Autoregressive decoding (one weight read per generated token): language models, and
    transformer/MoE/RNN models of other domains that generate several tokens (speech, TTS)."""
    if workloads.no_decode(profile):
        return False  # a known non-token family: one pass per request (speech: its own decoder FLOPs)
    if profile.domain in ("llm", "nlp"):
        return True
    out = profile.inference.output_tokens if profile.inference else 0
    return (
        profile.model.architecture in ("transformer", "moe", "rnn")
        and profile.domain not in ("diffusion", "vision", "recommendation")
        and out > 1
    )


def search_guess(replica: serving.LlmReplica | serving.RequestReplica, u_bw: float, u_mfu: float) -> Callable[[float], int | None] | None:
    """The closed-form concurrency guess an LLM replica offers its operating-point search; none
    with pipeline stages, whose latency steps with ceil(concurrency / stages) (not monotone enough
    for a search that starts from a guess to land where a bisection does)."""
    if isinstance(replica, serving.LlmReplica) and replica.stages <= 1:
        return lambda t: replica.concurrency_within(t, u_bw, u_mfu)
    return None


def step_overhead(profile: Profile, acc: Accelerator, count: int, c: Constants) -> float:
    """Fixed seconds per step: on TPUs one compiled program per step (a host round trip), on GPUs
    a sequence of kernels per layer; with tensor parallelism (inside the fast domain: an NVLink node,
    a TPU slice even over several hosts) two small all-reduces per layer at the collective latency
    floor; across domains (pipeline stages) one hand-off per stage boundary at the scale-out
    network's floor."""
    ic = c.estimator.inference
    layers = model_shape(profile).layers
    if family(acc.device).serving_overhead == "per_step":
        t = ic.tpu_step_overhead_ms.value / 1000.0
    else:
        t = layers * ic.gpu_step_overhead_per_layer_us.value / 1e6
    tp, stages = replica_layout(acc, count)
    if attention_dp(profile, acc, count) > 1:
        # data-parallel attention: each layer's expert dispatch and combine are the step's two collectives, at the
        # scale-out network's floor once the replica spans domains; no pipeline stages
        per = ic.tp_allreduce_us.value if count <= sizing.fast_domain(acc, count) else ic.multi_host_serving.cross_host_collective_us
        return t + 2.0 * layers * per / 1e6
    if tp > 1:
        t += 2.0 * layers * ic.tp_allreduce_us.value / 1e6
    if stages > 1:  # one activation hand-off per stage boundary per step, over the scale-out network
        t += (stages - 1) * ic.multi_host_serving.cross_host_collective_us / 1e6
    return t


def llm_replica(profile: Profile, acc: Accelerator, count: int, c: Constants) -> serving.LlmReplica:
    """The step model of one replica of ``count`` chips serving ``profile`` (an LLM)."""
    assert profile.inference is not None
    inf = profile.inference
    shape = model_shape(profile)
    wbytes = profile.model.weight_bytes
    n_active = profile.active_params_b * 1e9
    att = profile.model.attention
    sliding = att is not None and att.kind == "sliding"
    s_matmul, s_memory = sizing.attained_scale(acc, c, acc.compute_precision(profile.model.precision)[0])
    routed_active, routed_all = routed_params(profile, c)
    dp, attn = attention_dp(profile, acc, count), attention_params(profile, c)
    return serving.LlmReplica(
        profile.model.params_b * 1e9 * wbytes, n_active * wbytes, n_active,
        kv_bytes_per_token(profile) * kv_replication(profile, acc, count), shape.layers, shape.attn_dim,
        inf.input_tokens, inf.output_tokens,
        acc.specs.memory_bandwidth_gbps * 1e9 * count * s_memory,
        (acc.peak_flops(profile.model.precision) or acc.peak_bf16_flops) * count * s_matmul,
        step_overhead(profile, acc, count, c),
        replica_comm_s_per_token(profile, acc, count, c),
        stages=1 if dp > 1 else replica_layout(acc, count)[1],
        kv_window=((att.window or DEFAULT_WINDOW) if att is not None and sliding else 0),
        kv_windowed_share=(att.sliding_fraction if att is not None and sliding else 0.0),
        kv_read_factor=c.estimator.inference.kv_read_factor(family(acc.device).decode_utilisation, profile.software.serving_stack),
        loaded_prefill=loaded_prefill_value(profile, acc, c),
        routed_active=routed_active, routed_weights=routed_all * wbytes, routed_efficiency=moe_serving_value(profile, acc, c),
        cached_input=inf.input_tokens * inf.prefix_cache_hit_rate,
        attention_dp=dp, attention_params=attn, attention_bytes=attn * wbytes,
    )


def data_attention_possible(profile: Profile, acc: Accelerator, count: int, c: Constants) -> bool:
    """Whether this replica could serve with data-parallel attention: a mixture of experts' LLM serving over several
    chips, on a stack that offers it on this family (rules/estimator.yaml inference.data_parallel_attention); over
    several hosts the experts are split across them (expert parallelism), with no pipeline stages."""
    dpa = c.estimator.inference.data_parallel_attention
    return (
        dpa is not None and count > 1 and profile.model.architecture == "moe" and is_llm_inference(profile)
        and profile.software.serving_stack in dpa.stacks(acc.device)
    )


def attention_dp(profile: Profile, acc: Accelerator, count: int) -> int:
    """The data-parallel degree of a replica's attention: all its chips where a mixture of experts is served with
    data-parallel attention (inference.attention_parallel data, as advisor.estimate.inference resolves it), else 1
    (attention split by head over the tensor-parallel chips)."""
    inf = profile.inference
    if inf is None or inf.attention_parallel != "data" or profile.model.architecture != "moe":
        return 1
    return count


def attention_params(profile: Profile, c: Constants) -> float:
    """Parameters of the attention projections, all layers: query and output hidden x attn_dim each, key and value
    hidden x kv_dim each; MLA's down- and up-projections of queries and of the latent about 4 x hidden^2 per layer
    (DeepSeek-V3: 187 M per layer from its config, 4 x 7168^2 = 206 M). At most the active parameters outside the
    routed experts."""
    shape = model_shape(profile)
    att = profile.model.attention
    if att is not None and att.kind == "mla":
        per_layer = 4.0 * shape.hidden * shape.hidden
    else:
        per_layer = 2.0 * shape.hidden * shape.attn_dim + 2.0 * shape.hidden * shape.kv_dim
    routed_active, _ = routed_params(profile, c)
    return min(shape.layers * per_layer, profile.active_params_b * 1e9 - routed_active)


def routed_params(profile: Profile, c: Constants) -> tuple[float, float]:
    """(parameters one token activates in a mixture of experts' routed experts, parameters of all of them);
    (0, 0) for a dense model. With P parameters in all, A active, E routed experts and top-k routing, every
    parameter outside the routed experts is active, so the experts hold R = (P - A) / (1 - k / E) and a token
    activates R k / E of them; the rest of A (attention, shared experts, dense layers, embeddings) computes like a
    dense model's (Llama 4 Maverick: 400 B / 17 B, 128 experts, top-1: 3.0 B routed of 17 B active; Qwen3-235B-A22B,
    128 experts, top-8: 14.2 B of 22 B). Without model.experts and model.experts_per_token: the routed share of
    the active parameters of open mixtures of experts (rules/estimator.yaml moe_routed_share)."""
    m = profile.model
    if m.architecture != "moe":
        return 0.0, 0.0
    total, active = m.params_b * 1e9, profile.active_params_b * 1e9
    if total <= active:
        return 0.0, 0.0
    given = routed_by_routing(profile)
    if given is not None:
        return given
    share = c.estimator.inference.moe_routed_share.value
    return share * active, total - (1.0 - share) * active


def routed_by_routing(profile: Profile) -> tuple[float, float] | None:
    """routed_params where the model names its routing (model.experts E, model.experts_per_token k < E): (R k / E, R)
    with R = (P - A) / (1 - k / E); None for a dense model or one that does not name it."""
    m = profile.model
    e, k = m.experts, m.experts_per_token
    total, active = m.params_b * 1e9, profile.active_params_b * 1e9
    if m.architecture != "moe" or not (e and k and k < e) or total <= active:
        return None
    routed = min(total, (total - active) / (1.0 - k / e))
    return min(active, routed * k / e), routed


def serving_attrs(profile: Profile, acc: Accelerator) -> dict[str, str]:
    """What a fitted serving constant's levels match on: family, chip, serving stack, vendor, precision."""
    return {"device": acc.device, "accelerator": acc.id, "stack": profile.software.serving_stack, "vendor": acc.vendor,
            "precision": acc.compute_precision(profile.model.precision)[0] or ""}


def moe_serving(profile: Profile, acc: Accelerator, c: Constants) -> LevelRow | None:
    """A mixture of experts' routed-expert GEMMs' compute efficiency relative to a dense model's GEMMs (grouped
    GEMMs of small per-expert batches, routing imbalance), at its level; None for a dense model."""
    if profile.model.architecture != "moe":
        return None
    return c.estimator.level("moe_serving_factor", serving_attrs(profile, acc))


def moe_serving_value(profile: Profile, acc: Accelerator, c: Constants) -> float:
    row = moe_serving(profile, acc, c)
    return row.value if row is not None else 1.0


def loaded_prefill_value(profile: Profile, acc: Accelerator, c: Constants) -> float:
    row = loaded_prefill(profile, acc, c)
    return row.value if row is not None else 1.0


def loaded_prefill(profile: Profile, acc: Accelerator, c: Constants) -> LevelRow | None:
    """The share of the prefill MFU prompt chunks reach inside a loaded decode step, at its level."""
    return c.estimator.level("loaded_prefill_factor", serving_attrs(profile, acc))


def serving_spread(profile: Profile, acc: Accelerator, c: Constants) -> LevelRow | None:
    """How far measured serving throughput fell from the step model on the fit rows of this level (their
    smallest and largest measured / estimated ratio): the estimate's range, not a correction of it."""
    return c.estimator.level("serving_spread", serving_attrs(profile, acc))


def kv_note(profile: Profile, replica: serving.LlmReplica, copies: float = 1.0) -> dict[str, Any]:
    att = profile.model.attention
    inf = profile.inference
    note: dict[str, Any] = {"kind": att.kind if att else "gqa", "dtype": inf.kv_cache_dtype if inf else "auto"}
    if copies > 1:
        note["copies_per_replica"] = round(copies, 2)  # KV heads replicated over the tensor-parallel chips
    if replica.kv_window:
        note.update(window=replica.kv_window, sliding_fraction=replica.kv_windowed_share)
    return note


def kv_bytes_per_token(profile: Profile) -> float:
    """Bytes of KV cache per token of context over all layers (before any sliding window): K and V
    of every KV head (MHA, GQA, sliding), or MLA's one latent plus its RoPE key, at the cache's
    precision (inference.kv_cache_dtype; auto: 1 byte for fp8/int8/int4 weights, else 2)."""
    shape = model_shape(profile)
    dtype = profile.inference.kv_cache_dtype if profile.inference else "auto"
    kv_bytes = (1.0 if profile.model.precision in ("fp8", "int8", "int4") else 2.0) if dtype == "auto" else BYTES[dtype]
    att = profile.model.attention
    per_layer = shape.kv_dim if att is not None and att.kind == "mla" else 2.0 * shape.kv_dim
    return shape.layers * per_layer * kv_bytes


def kv_replication(profile: Profile, acc: Accelerator, count: int) -> float:
    """How many copies of each KV head a replica keeps: tensor parallelism splits the attention by KV head, so
    with fewer KV heads than chips in the tensor-parallel group each head is replicated on tp / kv_heads of them
    (vLLM's attention layers: 'Number of KV heads is less than TP size, so we replicate the KV heads across
    multiple tensor parallel GPUs'); MLA caches one latent per token with no head to split (vLLM's cache
    shape [blocks, block_size, 1, kv_lora_rank + rope_dim] on every rank), so each of the tp chips holds all of it.
    The copies take memory and each chip reads its own in every decode step. 1 on one chip, and where the KV
    heads are at least the tensor-parallel degree (Llama-3-70B's 8 on 8 GPUs)."""
    tp = replica_layout(acc, count)[0]
    if tp <= 1 or attention_dp(profile, acc, count) > 1:  # data-parallel attention: each chip its own requests' cache
        return 1.0
    att = profile.model.attention
    if att is not None and att.kind == "mla":
        heads = 1.0
    else:
        heads = max(1.0, model_shape(profile).kv_dim / ((att.head_dim if att and att.head_dim else None) or HEAD_DIM))
    return max(1.0, tp / heads)


def replica_comm_s_per_token(profile: Profile, acc: Accelerator, count: int, c: Constants) -> float:
    """Seconds per token of a replica's activation traffic: a dense model's tensor-parallel
    all-reduces; a mixture of experts keeps the attention's all-reduces (half of them) and sends
    each token to its top-k experts and back, an all-to-all over the whole replica (expert
    parallelism, as vLLM --enable-expert-parallel and SGLang serve DeepSeek-V3)."""
    shape = model_shape(profile)
    allreduce = prefill_allreduce_s_per_token(acc, count, shape, c)
    if profile.model.architecture != "moe" or count <= 1:
        return allreduce
    if attention_dp(profile, acc, count) > 1:  # data-parallel attention: no attention all-reduce, only the dispatch
        return expert_all_to_all_s_per_token(profile, acc, count, c)
    return allreduce / 2.0 + expert_all_to_all_s_per_token(profile, acc, count, c)


def expert_all_to_all_s_per_token(profile: Profile, acc: Accelerator, count: int, c: Constants) -> float:
    """Dispatch and combine of one token: hidden x 2 bytes each way per layer to each chip its top-k experts sit on
    (n (1 - (1 - 1/n)^k) of the n chips, experts spread evenly: a chip holding several of them gets it once), the share
    bound for another chip of the fast domain over its interconnect (one direction) and the share
    bound for another node or slice over the scale-out network. A step's tokens are dispatched by
    every chip of the replica at once, each sending its own share (expert parallelism spreads the
    tokens over the chips, DeepSeek's data-parallel attention or sequence-parallel dispatch), so a
    token costs its bytes over ``count`` links, not over one."""
    shape = model_shape(profile)
    k = profile.model.experts_per_token or DEFAULT_EXPERTS_PER_TOKEN
    # the chips a token's k experts sit on (experts spread evenly over the replica's chips): a token goes to
    # each of them once, however many of its experts one holds
    copies = count * (1.0 - (1.0 - 1.0 / count) ** k)
    per_layer = 2.0 * copies * shape.hidden * 2.0
    fast = min(count, sizing.fast_domain(acc, count))
    link = sizing.link_bytes_per_s(acc, c)
    out = sizing.scale_out_bytes_per_s(acc, c) * c.estimator.scaling.network_efficiency.value
    return shape.layers * per_layer * ((fast - 1) / count / link + (count - fast) / count / out) / count


def replica_layout(acc: Accelerator, count: int) -> tuple[int, int]:
    """(tensor, pipeline) of one serving replica: tensor-parallel over its fast domain (an NVLink
    node; a TPU slice, one ICI torus even over several hosts), pipeline stages across domains."""
    tp = max(1, min(count, sizing.fast_domain(acc, count)))
    return tp, max(1, math.ceil(count / tp))


def prefill_allreduce_s_per_token(acc: Accelerator, count: int, shape: Shape, c: Constants) -> float:
    """Seconds per token of a replica's activation traffic: inside its fast domain, tp-way tensor
    parallelism's two all-reduces per layer of hidden x 2 bytes, a ring sending 2 (tp - 1) / tp of
    it from every chip, i.e. 8 x hidden x (tp - 1) / tp bytes per layer (Narayanan et al. 2021),
    over the chip's interconnect in one direction; across domains, one hidden x 2-byte activation
    per pipeline stage boundary over the scale-out network."""
    if count <= 1:
        return 0.0
    tp, stages = replica_layout(acc, count)
    fast = sizing.link_bytes_per_s(acc, c)
    t = shape.layers * 8.0 * shape.hidden * (tp - 1) / tp / fast
    if stages > 1:
        t += (stages - 1) * shape.hidden * 2.0 / (sizing.scale_out_bytes_per_s(acc, c) * c.estimator.scaling.network_efficiency.value)
    return t


def latency_target(profile: Profile, c: Constants) -> tuple[float | None, str | None]:
    """The end-to-end latency target (ms) of an online service: given, else the stated default."""
    inf = profile.inference
    assert inf is not None
    if inf.mode != "online":
        return None, None
    if inf.latency_p99_ms is not None:
        return inf.latency_p99_ms, None
    ic = c.estimator.inference
    target = ic.default_ttft_ms.value + max(inf.output_tokens - 1, 0) * ic.default_tpot_ms.value
    return target, (
        f"no inference.latency_p99_ms: sized for the default {ic.default_ttft_ms.value:g} ms to the first token "
        f"and {ic.default_tpot_ms.value:g} ms per output token ({target:,.0f} ms per request)"
    )


def unit_for(profile: Profile) -> tuple[str, float]:
    """The workload's unit of work and how many requests it is priced per."""
    fam = model_families.family_of(profile)
    if fam is not None and fam.unit and fam.requests_per_unit:
        return fam.unit, fam.requests_per_unit
    if profile.is_diffusion:
        return "per 1,000 images", 1_000.0
    if is_llm_inference(profile) and (profile.inference is None or profile.inference.output_tokens > 0):
        return "per million output tokens", 1e6
    return "per million requests", 1e6  # an encoder (embeddings, a reranker: no output tokens) is priced per request


def recommendation_lookups(profile: Profile) -> bool:
    """A recommendation model with embedding tables: its requests gather rows, the dense layers compute."""
    return profile.domain == "recommendation" and profile.model.embeddings is not None


def request_model_name(profile: Profile, c: Constants) -> str:
    if profile.model.flops_per_sample:
        return given_request_formula(profile)[1]
    fam = workloads.request_flops(profile)
    if fam is not None:
        return fam[1]
    if recommendation_lookups(profile):
        return "recommendation: 2 x dense params per request (one sample); its embedding rows are gathered, lookups x dim bytes"
    if profile.is_diffusion:
        d = dit(profile, c)
        if d is not None:
            return d.formula
        return "diffusion: flops_per_param_per_step x params x steps" + ("" if _guided(profile) else " / 2 (no classifier-free guidance)")
    if profile.domain == "vision" or profile.model.architecture == "cnn":
        return "vision: flops_per_param x params per image"
    return "2 x active params x (input + output tokens)"


def _guided(profile: Profile) -> bool:
    return profile.inference is None or profile.inference.classifier_free_guidance


@dataclass(frozen=True)
class Dit:
    """A diffusion transformer's request: its latent tokens and what a step runs over them."""

    tokens: int
    layers: int
    hidden: int
    passes: int  # 2 with classifier-free guidance
    steps: int
    flops: float  # the whole request
    formula: str
    heads: int  # attention heads: a Ulysses split gives each chip whole heads, so its degree divides them (0: not known)

    def all_to_all_bytes(self, k: int) -> float:
        """Bytes one chip sends for a request split over ``k`` chips by sequence (Ulysses): each layer's four
        all-to-alls (Q, K, V before attention, its output after) of the chip's T / k tokens x width in 16 bits,
        (k - 1) / k of them leaving the chip, every pass of every step (Jacobs et al. 2023, DeepSpeed-Ulysses)."""
        if k <= 1:
            return 0.0
        per_layer = 4.0 * self.tokens / k * self.hidden * 2.0 * (k - 1) / k
        return per_layer * self.layers * self.passes * self.steps


def dit(profile: Profile, c: Constants) -> Dit | None:
    """A diffusion transformer's request over the latent tokens of what it generates (inference.width x height x
    frames); None without a size. Each denoising step runs the model over T = latent frames x (height / p) x
    (width / p) tokens, p pixels a token side (VAE downsampling x patch): 2 N T in its weights and 4 L d T^2 in
    bidirectional self-attention (QK^T and AV over every pair, each layer), twice with classifier-free guidance
    (Peebles & Xie 2023, DiT; rules/estimator.yaml dit_pixels_per_token, dit_frames_per_latent_frame)."""
    inf = profile.inference
    size = inf.generated_pixels if inf is not None else None
    if inf is None or size is None:
        return None
    rf = c.estimator.request_flops
    px, tf = rf.dit_pixels_per_token.value, rf.dit_frames_per_latent_frame.value
    width, height, frames = size
    latent_frames = 1 + math.ceil((frames - 1) / tf)
    tokens = latent_frames * math.ceil(height / px) * math.ceil(width / px)
    shape = model_shape(profile)
    n = profile.active_params_b * 1e9
    forward = 2.0 * n * tokens + 4.0 * shape.layers * shape.hidden * float(tokens) ** 2
    passes = 2 if inf.classifier_free_guidance else 1
    steps = inf.steps or int(rf.diffusion_default_steps.value)
    approx_dims = [d for d in shape.approximated if d in ("layers", "hidden_size")]
    approx = f", layers / width approximated from params_b ({', '.join(approx_dims)})" if approx_dims else ""
    formula = (
        f"diffusion transformer: {tokens:,} latent tokens ({latent_frames} latent frame{'s' if latent_frames > 1 else ''} of "
        f"{math.ceil(height / px)} x {math.ceil(width / px)}), (2 x params x tokens + 4 x layers x width x tokens^2) x "
        f"{passes} pass{'es' if passes > 1 else ''} (classifier-free guidance {'on' if passes > 1 else 'off'}) x {steps} steps{approx}"
    )
    att = profile.model.attention
    head_dim = (att.head_dim if att is not None else None) or HEAD_DIM
    # the heads where given or derived from a given width; 0 where the width is itself approximated from params_b (a 14B
    # video model's 41.7 would read as a prime 41 heads, no Ulysses split but 1 or 41: real ones have 24, 40, 48)
    known = (att is not None and att.heads) or "hidden_size" not in shape.approximated
    heads = (att.heads if att is not None and att.heads else None) or (max(1, shape.attn_dim // head_dim) if known else 0)
    return Dit(tokens, shape.layers, shape.hidden, passes, steps, forward * passes * steps, formula, heads)


def given_request_formula(profile: Profile, default_steps: int = 20) -> tuple[float, str]:
    """A request's FLOPs from model.flops_per_sample (one forward pass): a diffusion request runs
    one per denoising step (inference.steps, else the default step count); any other one-pass
    request runs one."""
    m, inf = profile.model, profile.inference
    assert m.flops_per_sample is not None and inf is not None
    if profile.is_diffusion:
        steps = inf.steps or default_steps
        return m.flops_per_sample * steps, f"diffusion: model.flops_per_sample per denoising step x {steps} steps"
    return m.flops_per_sample, "model.flops_per_sample per request (one forward pass)"


def request_flops(profile: Profile, c: Constants) -> float:
    assert profile.inference is not None
    if profile.model.flops_per_sample:  # the user's own figure comes first (a video model is not SDXL)
        return given_request_formula(profile, int(c.estimator.request_flops.diffusion_default_steps.value))[0]
    fam = workloads.request_flops(profile)
    if fam is not None:
        return fam[0]
    rf = c.estimator.request_flops
    n = profile.active_params_b * 1e9
    if recommendation_lookups(profile):
        # a recommendation model's request is one sample through its dense layers: the embedding rows it looks up are
        # gathered (workloads.embedding_lookup_bytes), not multiplied (DLRM, Naumov et al. 2019, arXiv:1906.00091)
        return 2.0 * profile.active_dense_params
    if profile.is_diffusion:
        d = dit(profile, c)
        if d is not None:
            return d.flops
        steps = profile.inference.steps or int(rf.diffusion_default_steps.value)
        # the per-parameter figure has classifier-free guidance's two passes a step in it
        return rf.diffusion_flops_per_param_per_step.value * n * steps * (1.0 if _guided(profile) else 0.5)
    if profile.domain == "vision" or profile.model.architecture == "cnn":
        return rf.vision_flops_per_param.value * n
    return 2.0 * n * max(profile.inference.input_tokens + profile.inference.output_tokens, 1)


def request_rate(profile: Profile) -> tuple[float, str | None]:
    """Requests per second the replicas must serve, and a note where it is assumed. Online: the
    peak. Offline batch: the day's volume over its window (requests_per_day / window_hours), else an explicit
    peak_qps; a batch job with neither is sized for peak_qps's default (1 request/s, 86,400 a day), every replica at
    saturation, as an explicit 1 is. Sized as one replica of each configuration instead, the cheapest machine per month
    won whatever its throughput: a 30B MoE on two CPU VMs at 5 tokens/s for $567/month over 4 L4 at 1,660 (61x cheaper
    per token), and writing down the default changed the verdict."""
    inf = profile.inference
    assert inf is not None
    if inf.mode != "batch":
        return inf.peak_qps, None
    if inf.requests_per_day is not None:
        return inf.requests_per_day / (inf.run_hours_per_day * 3600.0), None
    if "peak_qps" in inf.model_fields_set:
        return inf.peak_qps, None
    return inf.peak_qps, (
        f"offline batch job without inference.requests_per_day: sized for {inf.peak_qps:g} request/s "
        f"({inf.peak_qps * 86400:,.0f} a day, peak_qps's default), each replica at saturation; set requests_per_day and "
        "window_hours to size the replicas for your volume"
    )


def engine_max_seqs(profile: Profile, acc: Accelerator, c: Constants) -> int | None:
    """The most sequences the serving engine runs at once by default (vLLM max_num_seqs), or None
    where the stack has no such limit in rules/estimator.yaml: a replica never runs more."""
    limits = c.estimator.inference.engine_max_num_seqs
    return None if limits is None else limits.get(acc, profile.software.serving_stack)


def multi_host_ok(profile: Profile, acc: Accelerator, c: Constants) -> bool:
    """Whether the profile's serving stack serves one replica from several hosts on this family."""
    mh = c.estimator.inference.multi_host_serving
    stack = profile.software.serving_stack
    return stack == "none" or stack in mh.stacks(acc.device)


# Fields the estimator never reads: two profiles that differ only in them are the same workload.
