"""Tail latency: the p99 of a serving configuration, from its operating point (a mean).

The operating point (serving.py) gives each replica's time to first token, time per output token
and request latency at the concurrency it sees at peak: deterministic figures, the typical
request. A p99 target is compared with a p99 estimate built from three terms:

* **Queueing** for a slot: a replica serves up to c requests at once (its concurrency at
  capacity), each for T seconds (its latency there), so it is an M/M/c queue with offered load
  a = arrivals x T; the chance a request waits is Erlang's C(c, a) and the p99 wait
  ln(C / 0.01) / (c/T - arrivals) when C > 1%, else none.
* **Prefill interference**: with chunked prefill a decode step that shares the batch with
  another request's prompt chunk takes that chunk's time too; once more than 1% of steps carry
  one (arrivals per replica x prefill time), the p99 inter-token latency (``itl_ms``) includes one
  chunk of the server's prompt-token budget, and a request's p99 time per output token (its own
  average over its steps, as benchmarks measure TPOT) the spread of how many of its steps carry
  one (the chunk: ``chunk_tokens``, the stack's default, or the smaller budget a latency target
  set; ``PREFILL_CHUNK_TOKENS`` where the stack's is not known). A prompt
  longer than the budget is prefilled over several steps, each also carrying the running batch's
  decode: the p99 TTFT adds one typical step per extra chunk.
* **Waiting behind other prompts**: prompts are prefilled first come, first served (a chunked prefill's token budget
  goes to the oldest prompt first), so a request that arrives while others' prompts are pending waits for them: an
  M/D/1 queue of prefills of ``prefill_s`` each (prompts shorter than the budget that wait together share a step: each
  its own compute and its share of the step) at utilisation busy = arrivals x prefill_s, whose p99 wait is taken
  from Kingman's exponential tail with the M/D/1 mean (P(W > t) = busy x exp(-t / theta), theta = prefill_s /
  (2 (1 - busy))): 0.62 s at 55% busy with 139 ms prefills, where a simulation gives 0.54 s (on the safe side).
* **Output-length spread**: the p99 request generates ``inference.output_tokens_p99`` when the
  user gives it. Otherwise, where ``inference.max_output_tokens`` says generations vary, a
  request stops with the same chance at every token: its length is geometric, the distribution
  of largest entropy for a given mean on the positive integers, whose p99 is about the mean x ln 100
  (4.6 x), capped at the limit (``output_p99``). ``max_output_tokens`` is the server's limit,
  not a length most requests reach: a 600-token mean with a 4,000 limit has a p99 of 2,761. Without
  either, every request generates the mean (fixed-length benchmarks, ``--ignore-eos``).

The p99 request latency adds the p99 TTFT, the p99 output at the typical TPOT (which already
carries the mean share of prompt chunks) and the spread of the chunks its decode steps share
(2.33 sd of a Poisson count): an upper bound (the tails need not coincide), stated as such. A
p99 latency target sizes for the p99: more replicas (a lower target utilisation, down to 30%)
while the typical request meets it and the p99 does not.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.models import Inference

# vLLM's chunked-prefill token budget per step in its V0 engine (max_num_batched_tokens 512 with
# chunked prefill on): the chunk a stack without a budget of its own in rules/estimator.yaml
# (prefill_token_budget) is taken to share its decode steps with.
PREFILL_CHUNK_TOKENS = 512


def output_p99(inf: Inference) -> int:
    """The 99th-percentile generated length: the user's, else the geometric p99 of the mean (mean x ln 100) capped at
    max_output_tokens where that limit says lengths vary, else the mean."""
    if inf.output_tokens_p99 is not None:
        return max(inf.output_tokens_p99, inf.output_tokens)
    if inf.max_output_tokens is None or inf.max_output_tokens <= inf.output_tokens:
        return inf.output_tokens
    return min(inf.max_output_tokens, geometric_p99(inf.output_tokens))


def geometric_p99(mean: int) -> int:
    """The 99th percentile of a geometric length on {1, 2, ...} with this mean (about mean x ln 100): it stops with
    chance 1 / mean a token, so P(length > n) = (1 - 1 / mean)^n <= 1%. The mean itself where it is 1 or less."""
    if mean <= 1:
        return mean
    return math.ceil(math.log(0.01) / math.log(1.0 - 1.0 / mean))


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with offered load ``a`` (Erlangs)."""
    if c <= 0:
        return 1.0
    if a >= c:
        return 1.0
    b = 1.0
    for k in range(1, c + 1):  # Erlang B by its recursion, then C from B
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def queue_p99_s(slots: int, service_s: float, arrivals_per_s: float) -> float:
    """p99 wait for a slot of an M/M/c queue (``slots`` servers of ``service_s`` each)."""
    if slots <= 0 or service_s <= 0 or arrivals_per_s <= 0:
        return 0.0
    a = arrivals_per_s * service_s
    drain = slots / service_s - arrivals_per_s
    if drain <= 0:
        return math.inf
    waits = erlang_c(slots, a)
    return math.log(waits / 0.01) / drain if waits > 0.01 else 0.0


def prefill_queue_p99_s(prefill_s: float, busy: float) -> float:
    """p99 wait of a prompt behind the prompts ahead of it (FCFS prefill, M/D/1 at utilisation ``busy``); none below 1%."""
    if busy <= 0.01 or prefill_s <= 0:
        return 0.0
    if busy >= 1.0:
        return math.inf
    return prefill_s / (2.0 * (1.0 - busy)) * math.log(busy / 0.01)


def p99(
    ttft: float, tpot: float, inf: Inference, prefill_s: float, qps_per_replica: float, slots: int, service_s: float,
    chunk_tokens: int | None = None, occupancy_s: float | None = None, compute_s: float | None = None,
) -> dict[str, Any]:
    """The p99 TTFT, TPOT and request latency (ms) of a replica whose typical request takes
    ``ttft`` and ``tpot`` seconds, and the terms they add. ``slots``, ``service_s``: the replica's
    concurrency at capacity and its request latency there; ``chunk_tokens``: the prompt tokens one
    step takes (the server's budget; None where the stack's is not known: ``PREFILL_CHUNK_TOKENS`` share
    a decode step, and a prompt is taken to be prefilled in one); ``compute_s``: of a prompt's occupancy, its own
    FLOPs and all-reduces (the rest, a weight read and the step overhead, is shared by the prompts of one step)."""
    u = qps_per_replica * service_s / slots if slots > 0 else 1.0
    wait = queue_p99_s(slots, service_s, qps_per_replica)
    wait = wait if math.isfinite(wait) else 3600.0
    # share of the time the replica's compute is prefilling: each prompt occupies it for occupancy_s (its prefill, less the
    # wait of a lone prompt attending on one data-parallel rank: prompts of different ranks prefill side by side)
    occupied = occupancy_s if occupancy_s else prefill_s
    busy = qps_per_replica * occupied  # share of steps that carry a prompt chunk
    computed = inf.input_tokens * (1.0 - inf.prefix_cache_hit_rate)  # a cached prefix is not prefilled again
    budget = chunk_tokens or PREFILL_CHUNK_TOKENS
    # the queue of prompts waiting for their prefill: prompts shorter than the server's token budget that wait together
    # share a step (budget / computed of them at once), each for its own compute and its share of the step's weight read
    # and overhead, not a step of its own (review 32: 60,000 32-token queries a second on 6 replicas were queued as 11 s of
    # lone prefills a second per replica, a p99 of an hour)
    served = max(compute_s, occupied * computed / budget) if compute_s and computed < budget else occupied
    queue_busy = qps_per_replica * served
    chunk = prefill_s * min(1.0, budget / max(computed, 1.0)) if busy >= 0.01 else 0.0
    # the longest prompt's prefill spread over the budget: every step after its first carries the batch's decode too
    longest = (inf.max_input_tokens or inf.input_tokens) * (1.0 - inf.prefix_cache_hit_rate)
    chunk_steps = max(math.ceil(longest / chunk_tokens) - 1, 0) if chunk_tokens else 0
    out_p99 = output_p99(inf)
    ahead = prefill_queue_p99_s(served, queue_busy)
    ahead = ahead if math.isfinite(ahead) else 3600.0
    ttft99 = ttft + wait + ahead + chunk_steps * tpot
    steps = max(out_p99 - 1, 0)
    shared = steps * min(busy, 1.0)  # decode steps expected to carry another prompt's chunk
    # the typical TPOT already carries the mean share of prompt chunks: the tail adds their spread
    spread = chunk * min(steps, 2.33 * math.sqrt(shared))
    latency99 = ttft99 + steps * tpot + spread
    # TPOT is a request's own average, (latency - TTFT) / (output - 1), as vLLM's benchmark and MLPerf
    # measure it: its p99 is the typical step plus that spread over the request's steps; the slowest
    # single step (a decode step that carries a prompt chunk) is the inter-token latency, said apart
    tpot99 = tpot + (spread / steps if steps else chunk)
    return {
        "ttft_ms": round(ttft99 * 1000, 1),
        "tpot_ms": round(tpot99 * 1000, 2),
        "itl_ms": round((tpot + chunk) * 1000, 2),
        "latency_ms": round(latency99 * 1000, 1),
        "terms": {
            "slot_utilisation": round(u, 3),
            "queue_wait_p99_ms": round(wait * 1000, 1),
            "prefill_queue_p99_ms": round(ahead * 1000, 1),
            "prefill_busy": round(min(busy, 1.0), 3),
            "prefill_occupancy_ms": round(occupied * 1000, 1),
            "prefill_queue_busy": round(min(queue_busy, 1.0), 3),
            "prefill_queued_ms": round(served * 1000, 3),
            "prefill_chunk_ms": round(chunk * 1000, 2),
            "prefill_budget_tokens": budget,
            "prefill_chunk_steps_ms": round(chunk_steps * tpot * 1000, 1),
            "output_tokens_p99": out_p99,
        },
        "method": "M/M/c wait for a slot (Erlang C) + wait behind earlier prompts' prefill (M/D/1) + prompt chunks sharing "
                  "decode steps + p99 output length (an upper bound)",
    }


def batch_p99(batch_s: float, busy: float) -> dict[str, Any]:
    """The p99 latency of a replica that serves requests in batches (an encoder, a speech or diffusion model; not an LLM's
    continuous batching): the typical request takes one batch, ``batch_s``; one that arrives while a batch is being served
    (``busy``: the share of time the replica serves one, its arrivals over its capacity) waits for the rest of it first,
    uniform over the batch's time. So P(wait > w) = busy x (1 - w / batch_s), and the p99 wait is batch_s x (1 - 0.01 /
    busy) where busy > 1%, else none: at 66% busy the p99 is ~2 batches, where the typical request is one."""
    busy = min(max(busy, 0.0), 1.0)
    wait = batch_s * (1.0 - 0.01 / busy) if busy > 0.01 else 0.0
    return {
        "latency_ms": round((batch_s + wait) * 1000, 1),
        "terms": {"batch_ms": round(batch_s * 1000, 1), "busy": round(busy, 3), "batch_wait_p99_ms": round(wait * 1000, 1)},
        "method": "a request that arrives while a batch is served waits for the rest of it (uniform over the batch's time), "
                  "then its own batch",
    }
