"""Serving at the real load: the step model of a replica and its operating point.

docs/estimator.md "Inference" explains the model and its sources:

* a decode step runs two kernels one after the other, each at its own bound:
  the weight GEMMs (the weights the batch touches, or the FLOPs of the batch's
  tokens plus the other requests' prompt chunks: continuous batching with
  chunked prefill, prefill shares the GEMMs) and the decode attention (the
  batch's KV cache, or its attention FLOPs), plus a fixed per-step overhead of
  the serving stack;
* attention FLOPs grow with the context (4 x layers x heads x head_dim per token per
  token of context; a sliding window bounds the keys of its layers), so long
  prompts cost what they cost;
* every token pays the replica's activation traffic (tensor-parallel
  all-reduces, MoE all-to-all) at its links' bandwidth (comm_per_token);
* TTFT = the prompt's prefill (compute-bound, at least one weight read) plus
  one step of waiting; latency = TTFT + (output - 1) x TPOT; prompts that
  arrive together queue FCFS in forwards of the stack's prefill token budget
  (closed_loop_prefill);
* the operating point follows the load: replicas so that each runs at most at
  the target utilisation of the concurrency its latency target allows, then
  the concurrency each replica actually sees at peak from Little's law
  (concurrency = arrival rate x latency).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Point:
    """One replica at one concurrency (seconds and tokens per second)."""

    concurrency: int
    ttft: float
    tpot: float
    latency: float
    tokens_per_second: float  # output tokens per second of the replica
    # seconds of the replica's compute one prompt's prefill occupies (0: as its TTFT at concurrency 1). Under data-parallel
    # attention a lone prompt attends on one rank while the others wait (its TTFT), but prompts of different ranks prefill
    # side by side: the replica is busy for a prompt's share only, the prefill without that lone wait
    prefill_occupancy: float = 0.0
    # of it, the prompt's own compute (its FLOPs and all-reduces), without the weight read and the step overhead that
    # prompts sharing one step of the server's token budget share (0: not known)
    prefill_compute: float = 0.0

    @property
    def requests_per_second(self) -> float:
        return self.concurrency / self.latency if self.latency > 0 else 0.0


@dataclass(frozen=True)
class LlmReplica:
    """Autoregressive decoding on one replica of ``chips`` chips."""

    weights: float  # bytes of all weights
    active_bytes: float  # bytes of the weights one token touches (MoE: active experts)
    n_active: float  # active parameters
    kv_per_token: float  # bytes of KV cache per token of context
    layers: int
    attn_dim: int  # heads x head_dim: the width of QK^T and AV (hidden for Llama-class models)
    input_tokens: int
    output_tokens: int
    bandwidth: float  # bytes/s of the replica
    compute: float  # FLOP/s of the replica at the serving precision
    overhead: float  # seconds per step (scheduling, sampling, launch, host sync)
    # seconds per token (prompt or generated) of the tensor-parallel activation all-reduces' bytes:
    # 8 x hidden x (tp - 1) / tp bytes per layer per token over the replica's links (0 on one chip);
    # their latency floor is in the step overhead
    comm_per_token: float = 0.0
    # pipeline stages (across NVLink nodes or TPU slices): each step passes through them in turn,
    # each stage with its share of the chips, the batch split into one micro-batch per stage
    stages: int = 1
    # sliding-window attention: the windowed layers' share of kv_per_token keeps at most kv_window tokens
    kv_window: int = 0
    kv_windowed_share: float = 0.0
    # a byte of KV cache costs this many weight-byte reads (paged attention gathers small pages;
    # rules/estimator.yaml tpu_kv_read_factor)
    kv_read_factor: float = 1.0
    # the share of the prefill MFU that other requests' prompt chunks reach inside a loaded decode step
    # (small chunks next to the batch's decode tokens; rules/estimator.yaml loaded_prefill_factor)
    loaded_prefill: float = 1.0
    # a mixture of experts: the routed experts' parameters one token activates (part of n_active) and the bytes
    # of all of them (part of weights); their grouped GEMMs are a kernel of their own at routed_efficiency of the
    # compute the dense GEMMs reach (small per-expert batches, routing; rules/estimator.yaml moe_serving_factor),
    # while attention, shared experts, dense layers and embeddings compute like a dense model's
    routed_active: float = 0.0
    routed_weights: float = 0.0
    routed_efficiency: float = 1.0
    # tokens of each prompt whose KV cache the server already holds (a prefix cache hit: a shared system prompt,
    # the earlier turns of a conversation): kept in the request's KV cache, never computed again
    cached_input: float = 0.0
    # data-parallel attention (a mixture of experts' replica, attention_dp > 1 chips): each chip attends for its own
    # requests with a whole copy of the attention projections (attention_params, attention_bytes), so every step
    # reads them on every chip, the busiest chip sets the attention's time, and a lone prompt is prefilled on one chip
    attention_dp: int = 1
    attention_params: float = 0.0
    attention_bytes: float = 0.0

    @property
    def computed_input(self) -> float:
        """Prompt tokens a prefill computes: the input less its cached prefix."""
        return max(self.input_tokens - self.cached_input, 0.0)

    def kv_bytes(self, context: float) -> float:
        """Bytes of KV cache one request holds at ``context`` tokens."""
        return self.kv_per_token * self._context_read(context)

    def _attended(self, tokens: float) -> float:
        """Query-key pairs of a causal prompt of ``tokens``, per layer: T^2 / 2 on full-attention
        layers; a sliding window W bounds each token's keys, T W - W^2 / 2 once T > W."""
        full = tokens * tokens / 2.0
        if self.kv_window <= 0 or self.kv_windowed_share <= 0:
            return full
        w = float(self.kv_window)
        windowed = full if tokens <= w else tokens * w - w * w / 2.0
        return (1.0 - self.kv_windowed_share) * full + self.kv_windowed_share * windowed

    def _context_read(self, context: float) -> float:
        """Tokens of context a request keeps (and a decoded token attends to) per layer: all of
        them on full-attention layers, at most the window on windowed ones."""
        if self.kv_window <= 0 or self.kv_windowed_share <= 0:
            return context
        share = self.kv_windowed_share
        return (1.0 - share) * context + share * min(context, float(self.kv_window))

    @property
    def _gemm_params(self) -> float:
        """Active parameters weighted by the time their GEMMs take at the replica's compute: a routed
        expert's count 1 / routed_efficiency times (all of them 1 for a dense model)."""
        return self.n_active - self.routed_active + self.routed_active / self.routed_efficiency

    def _prefill_flops(self, tokens: float) -> float:
        # weights: 2 N per token (routed experts weighted by their efficiency); attention: QK^T and AV,
        # 2 x 2 x attn_dim per query-key pair per layer. A cached prefix is neither multiplied through the
        # weights again nor attended again: its tokens' own query-key pairs are dropped, the new tokens
        # still attend to it
        cached = min(self.cached_input, tokens)
        attended = self._attended(tokens) - self._attended(cached)
        return 2.0 * self._gemm_params * (tokens - cached) + 4.0 * self.layers * self.attn_dim * attended

    @cached_property
    def _lone_prefill(self) -> tuple[float, float]:
        """(FLOPs, bytes) one prompt's prefill adds beyond its share of the replica under data-parallel attention:
        its attention (projections and scores) and the attention weights' read run on one chip of attention_dp."""
        if self.attention_dp <= 1:
            return 0.0, 0.0
        attended = self._attended(self.input_tokens) - self._attended(min(self.cached_input, self.input_tokens))
        flops = 2.0 * self.attention_params * self.computed_input + 4.0 * self.layers * self.attn_dim * attended
        return (self.attention_dp - 1) * flops, (self.attention_dp - 1) * self.attention_bytes

    @cached_property
    def _fixed(self) -> tuple[float, float, float, float, float, float]:
        """Per-replica constants of the step model (computed once; points are asked for often)."""
        out = max(self.output_tokens, 1)
        ctx = self.input_tokens + self.output_tokens / 2.0
        decode_flops = 2.0 * self._gemm_params  # per decoding request, in the weight GEMMs (routed experts weighted)
        prefill_per_token = self._prefill_flops(self.input_tokens) / max(self.input_tokens, 1)
        prompt_chunk = prefill_per_token * self.input_tokens / out  # per other request, per step
        prefill = self._prefill_flops(max(self.input_tokens, 1))
        attention_flops = 4.0 * self.layers * self.attn_dim * self._context_read(ctx)  # per decoding request
        return float(out), decode_flops, prompt_chunk, prefill, self.kv_bytes(ctx), attention_flops

    def point(self, b: int, u_bw: float, u_mfu: float) -> Point:
        out, decode_flops, prompt_chunk, prefill, kv_per_request, attention_flops = self._fixed
        bw = self.bandwidth * u_bw
        compute = self.compute * u_mfu
        # with s pipeline stages the batch runs as s micro-batches of m; a token passes the s
        # stages in turn, each holding 1/s of the weights on 1/s of the chips: s x the step of m
        s = max(self.stages, 1)
        m = math.ceil(b / s)
        others = m - 1 if s == 1 else m
        # other requests' prompts, spread over their lifetime, ride along in each step; every
        # token of the step, generated or prompt, goes through the tensor-parallel all-reduces
        flops = decode_flops * m + prompt_chunk * others / self.loaded_prefill
        comm = self.comm_per_token * (m + self.computed_input / out * others)
        # the weight GEMMs and the decode attention are separate kernels, each at its own bound; a
        # mixture of experts' routed experts are one more (a grouped GEMM): its FLOPs are those of the
        # step's tokens through the experts, its read the experts they touch (a small batch: only its own)
        routed_bytes = self.active_bytes * self.routed_active / self.n_active if self.routed_active else 0.0
        routed_flops = 2.0 * self.routed_active / self.routed_efficiency * (m + self.computed_input / out * others / self.loaded_prefill)
        # data-parallel attention: every chip reads its own copy of the attention projections, and the busiest chip
        # (ceil(m / dp) requests) sets the attention's time
        dp = max(self.attention_dp, 1)
        weight_read = min(self.weights - self.routed_weights, (self.active_bytes - routed_bytes) * m) + self.attention_bytes * (dp - 1)
        t_gemm = max(weight_read / bw, (flops - routed_flops) / compute + comm)
        if self.routed_active:
            t_gemm += max(min(self.routed_weights, routed_bytes * m) / bw, routed_flops / compute)
        t_att = math.ceil(m / dp) * dp * max(kv_per_request * self.kv_read_factor / bw, attention_flops / compute)
        tpot = s * (t_gemm + t_att) + self.overhead
        lone_flops, lone_bytes = self._lone_prefill
        t_pre = max((prefill + lone_flops) / compute + self.comm_per_token * self.computed_input, (self.active_bytes + lone_bytes) / bw)
        ttft = t_pre + (tpot if b > 1 else self.overhead)
        latency = ttft + (out - 1) * tpot
        own = prefill / compute + self.comm_per_token * self.computed_input
        occupancy = max(own, self.active_bytes / bw) + self.overhead
        return Point(b, ttft, tpot, latency, b * out / latency, occupancy, own)


    def concurrency_within(self, latency_s: float, u_bw: float, u_mfu: float) -> int | None:
        """The largest concurrency whose latency is at most ``latency_s``, in closed form from the
        two linear pieces of a step (GEMMs memory-bound: weights + b attentions; GEMMs compute-bound:
        b tokens, b - 1 prompt chunks and b attentions, each attention at max(KV read, its FLOPs)) with
        every weight read, one stage; a guess for the search, which checks it."""
        out, decode_flops, prompt_chunk, prefill, kv_per_request, attention_flops = self._fixed
        bw, compute = self.bandwidth * u_bw, self.compute * u_mfu
        t_pre = max(prefill / compute + self.comm_per_token * self.computed_input, self.active_bytes / bw)
        step = (latency_s - t_pre) / out - self.overhead  # the step time the target leaves
        if step <= 0:
            return 1
        att = max(kv_per_request * self.kv_read_factor / bw, attention_flops / compute)  # per request
        by_memory = (step - self.weights / bw) / att if att > 0 else math.inf
        ratio = self.computed_input / out
        chunk = prompt_chunk / self.loaded_prefill
        per_b = (decode_flops + chunk) / compute + self.comm_per_token * (1.0 + ratio) + att
        by_compute = (step + chunk / compute + self.comm_per_token * ratio) / per_b
        b = min(by_memory, by_compute)
        return max(1, int(b)) if math.isfinite(b) else None

    def forward_time(self, tokens: int, u_bw: float, u_mfu: float) -> float:
        """One prefill forward of ``tokens`` computed prompt tokens (of prompts of ``input_tokens``, less a cached
        prefix): their FLOPs and all-reduces, at least one weight read, plus the step overhead."""
        per_token = self._fixed[3] / max(self.computed_input, 1)
        t = tokens * (per_token / (self.compute * u_mfu) + self.comm_per_token)
        return max(t, self.active_bytes / (self.bandwidth * u_bw)) + self.overhead


def closed_loop_prefill(prompts: int, concurrency: int, tokens: int, budget: int, forward: Callable[[int], float]) -> float:
    """Mean time to first token of a closed-loop benchmark that keeps ``concurrency`` prompts of
    ``tokens`` tokens in flight until ``prompts`` have been answered, each answered by its first
    token (output length 1): the first ``concurrency`` arrive at once, each later one when one
    finishes. The scheduler prefills FCFS, at most ``budget`` tokens per forward (vLLM's
    max_num_batched_tokens, SGLang's chunked_prefill_size), a long prompt over several forwards;
    ``forward(n)`` is the time of a forward of n tokens. A prompt's first token comes at the end of
    the forward that holds its last token, so a burst's later prompts wait for the earlier ones."""
    budget = max(budget, 1)
    queue: list[tuple[float, int]] = []  # (arrival time, tokens left), FCFS
    sent, now, total, done = 0, 0.0, 0.0, 0
    while sent < min(concurrency, prompts):
        queue.append((0.0, tokens))
        sent += 1
    while queue:
        room = budget
        finished: list[tuple[float, int]] = []
        rest: list[tuple[float, int]] = []
        for arrival, left in queue:
            take = min(left, room)
            room -= take
            (finished if take == left else rest).append((arrival, left - take))
        used = budget - room
        now += forward(used)
        for arrival, _ in finished:
            total += now - arrival
            done += 1
        queue = rest
        for _ in finished:
            if sent < prompts:
                queue.append((now, tokens))
                sent += 1
    return total / max(done, 1)


@dataclass(frozen=True)
class RequestReplica:
    """One forward pass (or a fixed number of denoising steps) per request: vision, diffusion, encoders; an
    encoder-decoder (speech) adds its decoder's ``decode_steps`` steps, one token each, every step reading the
    decoder's ``decode_bytes`` of weights once for the batch and computing ``decode_flops`` per request."""

    weights: float
    request_flops: float
    outputs: int
    bandwidth: float
    compute: float
    overhead: float
    decode_steps: int = 0
    decode_bytes: float = 0.0
    decode_flops: float = 0.0  # per request per step (included in request_flops)
    # bytes each request of the batch reads apart from the shared weights: a recommendation model's embedding rows
    # (lookups x dim, gathered once per request), an encoder-decoder's cross-attention keys and values (read by every
    # decode step, in every decoder layer)
    request_bytes: float = 0.0
    decode_request_bytes: float = 0.0
    # copies of the model in the replica, each on its own chips, each running its share of the batch: an image or
    # speech model is served one copy per chip where it fits one (data parallel), never one request split over all
    # the replica's chips at their summed rate
    workers: int = 1
    # seconds of exposed communication per request on its copy: a diffusion transformer split over a copy's chips
    # by sequence (Ulysses all-to-alls of its tokens' activations, every layer of every step)
    request_comm: float = 0.0

    def point(self, b: int, u_bw: float, u_mfu: float) -> Point:
        w = max(1, self.workers)
        bw, compute = self.bandwidth * u_bw / w, self.compute * u_mfu / w  # one copy's chips
        per = -(-b // w)  # the requests the busiest copy runs at once
        if self.decode_steps <= 0:
            t = max((self.weights + per * self.request_bytes) / bw, per * self.request_flops / compute)
            t += per * self.request_comm + self.overhead
            return Point(b, t, t, t, b * max(self.outputs, 1) / t)
        encode_flops = self.request_flops - self.decode_steps * self.decode_flops
        encode = max((self.weights - self.decode_bytes + per * self.request_bytes) / bw, per * encode_flops / compute) + self.overhead
        step = max((self.decode_bytes + per * self.decode_request_bytes) / bw, per * self.decode_flops / compute) + self.overhead
        latency = encode + self.decode_steps * step
        return Point(b, encode + step, step, latency, b * max(self.outputs, 1) / latency)


def _bracket(lo: int, hi: int, ok: Callable[[int], bool], hint: int | None) -> tuple[int, int]:
    """Narrow [lo, hi] around the point where a monotone ``ok`` turns from false to true (the
    smallest true), galloping out from ``hint``: two or three evaluations when the hint is the
    answer (a closed-form estimate), never more than a plain bisection's order. Returns (a, b)
    with ok false below a and the smallest true in [a, b] (or b = hi when none is)."""
    if hint is None:
        return lo, hi
    g = min(max(hint, lo), hi)
    step = 1
    if ok(g):
        top = g
        while g - step >= lo:
            if not ok(g - step):
                return g - step + 1, top
            top = g - step
            step *= 2
        return lo, top
    bottom = g + 1
    while g + step <= hi:
        if ok(g + step):
            return bottom, g + step
        bottom = g + step + 1
        step *= 2
    return min(bottom, hi), hi


def _largest(lo: int, hi: int, ok: Callable[[int], bool], hint: int | None = None) -> int | None:
    """The largest integer in [lo, hi] with ``ok`` true, for ``ok`` true up to a threshold
    (``hint``: a guess of it, which only saves evaluations)."""
    if hi < lo or not ok(lo):
        return None
    if hint is not None:  # the largest true is one below the smallest false
        a, b = _bracket(lo + 1, hi + 1, lambda x: x > hi or not ok(x), hint + 1)
        lo, hi = max(lo, a - 1), min(hi, b - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _smallest(lo: int, hi: int, ok: Callable[[int], bool], hint: int | None = None) -> int:
    lo, hi = _bracket(lo, hi, ok, hint)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class OperatingPoint:
    replicas: int
    at_peak: Point  # the concurrency each replica sees at peak load
    at_capacity: Point  # the largest concurrency that meets the latency target
    at_one: Point  # concurrency 1
    meets_latency: bool | None


def _memo(point: Callable[[int], Point]) -> Callable[[int], Point]:
    seen: dict[int, Point] = {}

    def at(b: int) -> Point:
        hit = seen.get(b)
        if hit is None:
            hit = seen[b] = point(b)
        return hit

    return at


def _capacity(
    point: Callable[[int], Point], top: int, target_s: float | None, slack: float = 1.0,
    guess: Callable[[float], int | None] | None = None,
) -> int:
    """The largest concurrency whose latency meets the target (memory bounds it at ``top``).

    A target that even one request alone misses is out of reach: the replica then runs at the
    largest concurrency whose latency stays within ``slack`` x its concurrency-1 latency (the
    memory-bound plateau of decode), not at concurrency 1 at any price."""
    if target_s is None:
        return top
    reach = max(target_s, point(1).latency * slack) if point(1).latency > target_s else target_s
    return _largest(1, top, lambda b: point(b).latency <= reach, guess(reach) if guess else None) or 1


def replicas_for(capacity: Point, *, qps: float, utilisation: float, min_replicas: int) -> int:
    """Replicas that serve ``qps`` when each runs at ``utilisation`` of ``capacity``."""
    per_replica = capacity.requests_per_second * utilisation
    return max(min_replicas, math.ceil(qps / per_replica - 1e-9)) if per_replica > 0 else min_replicas


def replicas_needed(
    point: Callable[[int], Point], *, qps: float, max_concurrency: int, target_s: float | None,
    utilisation: float, min_replicas: int, slack: float = 1.0, guess: Callable[[float], int | None] | None = None,
) -> int:
    """Replicas for the peak load alone (the ranges need no operating point)."""
    point = _memo(point)
    capacity = point(_capacity(point, max(1, max_concurrency), target_s, slack, guess))
    return replicas_for(capacity, qps=qps, utilisation=utilisation, min_replicas=min_replicas)


def operating_point(
    point: Callable[[int], Point], *, qps: float, max_concurrency: int, target_s: float | None,
    utilisation: float, min_replicas: int, slack: float = 1.0, guess: Callable[[float], int | None] | None = None,
) -> OperatingPoint:
    """Replicas and concurrency at peak load.

    Capacity per replica: the largest concurrency whose latency meets the target (memory bounds
    it); replicas = peak / (capacity x target utilisation); then the concurrency each replica
    sees at peak, by Little's law, is the smallest c with (peak / replicas) x latency(c) <= c.
    """
    point = _memo(point)
    at_one = point(1)
    cap_c = _capacity(point, max(1, max_concurrency), target_s, slack, guess)
    cap = point(cap_c)
    replicas = replicas_for(cap, qps=qps, utilisation=utilisation, min_replicas=min_replicas)
    lam = qps / replicas
    # latency grows with concurrency, so c >= lam x latency(1): with a replica whose latency is
    # monotone in the concurrency (one that offers a guess) the search starts there
    hint = math.ceil(lam * at_one.latency - 1e-9) if guess is not None else None
    c_peak = _smallest(1, cap_c, lambda b: lam * point(b).latency <= b, hint)
    at_peak = point(c_peak)
    meets = None if target_s is None else at_peak.latency <= target_s
    return OperatingPoint(replicas, at_peak, cap, at_one, meets)
