"""Parallelism plans and the scale model for training (docs/estimator.md, "Scale model").

A configuration of ``n`` chips runs a plan of data x tensor x pipeline
parallelism. The base MFU (rules/estimator.yaml ``training_mfu``) is what one
fast domain reaches (an NVLink node, an ICI slice); beyond it the plan pays:

* data-parallel traffic over the slow fabric (InfiniBand/RoCE between GPU nodes,
  DCN between TPU slices), hidden behind compute up to ``dp_overlap``;
* the pipeline bubble, (pp - 1) / (v x m) of the compute for v virtual stages
  and m micro-batches per step (Narayanan et al. 2021);
* goodput: interruptions arrive in proportion to the chips and each costs
  ``failure_cost_hours`` of lost work and restart (Llama 3 paper).

Tensor parallelism stays inside the fast domain, so its cost is part of the
base MFU. The global batch (tokens per step) is the workload's: given, or from
the DeepSeek LLM batch-size law; it bounds how many chips a run can use (at
least one sequence per data-parallel replica).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.families import family

if TYPE_CHECKING:
    from advisor.catalog import Accelerator
    from advisor.constants import Constants
    from advisor.models import Profile

GIB = 1024**3


def plan_efficiency(goodput: float, comm_exposed: float, bubble: float) -> float:
    """A plan's throughput relative to the base MFU: its goodput, less the exposed communication
    and the pipeline bubble (each a fraction of the compute time)."""
    return goodput / (1.0 + comm_exposed + bubble)


@dataclass(frozen=True)
class Plan:
    """How ``data x tensor x pipeline`` chips share one training step, and what it costs."""

    data: int
    tensor: int
    pipeline: int
    micro_batches: int  # sequences per data-parallel replica per step
    comm_exposed: float  # exposed data- and tensor-parallel communication, as a fraction of compute
    bubble: float  # pipeline bubble, as a fraction of compute
    goodput: float  # share of wall time spent on useful steps (interruptions)
    fabric: str  # where data-parallel traffic flows

    @property
    def efficiency(self) -> float:
        """Throughput relative to the base MFU on one fast domain."""
        return plan_efficiency(self.goodput, self.comm_exposed, self.bubble)

    def to_json(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "tensor": self.tensor,
            "pipeline": self.pipeline,
            "expert": 1,
            "micro_batches_per_replica": self.micro_batches,
            "comm_exposed_fraction": round(self.comm_exposed, 4),
            "pipeline_bubble_fraction": round(self.bubble, 4),
            "goodput": round(self.goodput, 4),
            "data_parallel_fabric": self.fabric,
        }


def global_batch_tokens(profile: Profile, c: Constants) -> float:
    """Tokens (or samples) per optimiser step: given, else for pre-training the DeepSeek LLM law
    B = a x C^b, for fine-tuning the fine-tuning default, for sample-based workloads the
    default sample batch; at least one sequence."""
    assert profile.training is not None
    t = profile.training
    if t.global_batch:
        return float(t.global_batch * t.seq_len)
    sc = c.estimator.scaling
    if t.sample_based:
        tokens = sc.default_sample_batch.value * t.seq_len
    elif t.method != "full" or profile.task == "fine-tuning":
        tokens = sc.default_finetune_batch_tokens.value
    else:
        compute = 6.0 * profile.active_params_b * 1e9 * t.tokens_b * 1e9
        tokens = sc.batch_size_law.coefficient * compute ** sc.batch_size_law.exponent
    return float(max(tokens, t.seq_len))


def _powers(limit: int) -> list[int]:
    out, k = [], 1
    while k <= limit:
        out.append(k)
        k *= 2
    return out


def link_bytes_per_s(acc: Accelerator, c: Constants) -> float:
    """One direction of a chip's link inside its scale-up domain (NVLink, ICI, Infinity Fabric), bytes/s; PCIe
    (scaling.pcie_gbyte_per_s each way) where the catalog gives the chip no interconnect."""
    return (acc.specs.interconnect_gbps or c.estimator.scaling.pcie_gbyte_per_s.value * 2.0) * 1e9 / 2.0


def scale_out_bytes_per_s(acc: Accelerator, c: Constants) -> float:
    """The catalog's network bandwidth per chip beyond the scale-up domain, bytes/s (every entry has
    one; 0 only where no second node exists, floored so that nothing divides by zero)."""
    return max(acc.specs.scale_out_gbit_per_chip, 1e-3) * 1e9 / 8.0


def plans(
    profile: Profile, acc: Accelerator, n: int, c: Constants, *,
    mfu: float, layers: int, hidden: int, activation_bytes: float, state_bytes: float, overhead: float,
    flops: float,
) -> tuple[Plan | None, float]:
    """The fastest plan for ``n`` chips that fits memory, and its memory per chip in bytes.

    ``activation_bytes``: checkpointed activations of one sequence (all layers, unsharded);
    ``state_bytes``: weights, gradients and optimiser state (sharded over all chips).
    Returns (None, smallest memory per chip) when no plan fits or the batch cannot fill n chips.
    """
    assert profile.training is not None
    sc = c.estimator.scaling
    t = profile.training
    cap = acc.specs.memory_gib * GIB
    seqs = max(1, int(global_batch_tokens(profile, c) // t.seq_len))
    fam = family(acc.device)
    domain = fam.shapes.domain(acc, n)
    tp_max = min(int(sc.max_model_parallel.value), domain, n)
    pp_max = min(int(sc.max_pipeline_parallel.value), max(layers, 1))
    n_params = profile.model.dense_params_b * 1e9  # embedding tables are model-parallel: no gradient all-reduce
    grad_bytes = sc.dp_bytes_per_param_full.value if t.method == "full" else 2.0 * (0.5 if t.method == "qlora" else 2.0)
    peak = acc.peak_flops(profile.model.precision) or acc.peak_bf16_flops
    # the run's FLOPs spread over its steps: one step processes seqs x seq_len of its tokens
    step_flops_per_chip = flops * (seqs * t.seq_len) / max(t.tokens_b * 1e9, 1.0) / n
    t_compute = step_flops_per_chip / (peak * mfu)
    crosses = n > domain
    lam = sc.failure_rate_per_chip_hour.value
    goodput = 1.0 / (1.0 + lam * n * sc.failure_cost_hours.value)
    best: tuple[float, int, tuple[int, int, int, int, float, float]] | None = None
    least_mem = math.inf
    v_max = int(sc.pipeline_virtual_stages.value)
    bw = scale_out_bytes_per_s(acc, c) * sc.network_efficiency.value
    hidden_time = sc.dp_overlap.value * t_compute
    # Tensor parallelism beyond what memory needs costs its activation all-reduces, exposed:
    # 8 b s h (tp - 1)/tp bytes per layer against 72 b s h^2 / tp FLOPs (Narayanan et al. 2021),
    # i.e. (2/9) (tp - 1) peak MFU / (h bw) of the compute. The base MFU already includes the
    # tensor parallelism memory asks for.
    intra = link_bytes_per_s(acc, c)
    tp_unit = (2.0 / 9.0) * peak * mfu / (max(hidden, 1) * intra)
    tp_mem = 0
    stages = _powers(pp_max) if crosses else [1]
    fabric = fam.scale_out if crosses else fam.fast_domain
    for tp in _powers(tp_max):
        mem = (state_bytes / n + activation_bytes / tp) * overhead
        least_mem = min(least_mem, mem)
        if mem > cap:
            continue
        tp_mem = tp_mem or tp
        tp_cost = tp_unit * (tp - tp_mem)
        for pp in stages:
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            if dp > seqs or (t.global_batch and seqs % dp):
                continue  # a stated global batch is split evenly over the data-parallel ranks (Megatron, torchtitan)
            m = seqs // dp
            if crosses:
                volume = fam.shapes.scale_out_bytes(n_params, domain, grad_bytes, tp * pp)
                exposed = max(0.0, volume / bw - hidden_time) / t_compute
            else:
                exposed = 0.0
            v = max(1, min(v_max, layers // pp))
            bubble = (pp - 1) / (v * m) if pp > 1 else 0.0
            comm = exposed + tp_cost
            key = (-plan_efficiency(goodput, comm, bubble), tp * pp)  # without building the plans that lose
            if best is None or key < (best[0], best[1]):
                best = (key[0], key[1], (dp, tp, pp, m, comm, bubble))
    if best is None:
        return None, least_mem
    p = Plan(*best[2], goodput, fabric)
    return p, (state_bytes / n + activation_bytes / p.tensor) * overhead


def fast_domain(acc: Accelerator, n: int) -> int:
    """Chips one fast interconnect joins for a job of ``n`` (a GPU node, a TPU slice): the registry's."""
    return family(acc.device).shapes.domain(acc, n)


# GEMM microbenchmarks are published for bf16 and fp8: fp16 runs on the bf16 datapath at the same rate, int8 and
# 4-bit weights on the 8-bit one (their peaks are the catalog's fp8 / int8 figures); the first figure both the chip
# and the reference give is the one compared
_ATTAINED_KEYS = {"fp16": ("fp16", "bf16"), "int8": ("int8", "fp8"), "int4": ("int4", "int8", "fp8"), "fp4": ("fp4", "fp8")}


def attained_scale(acc: Accelerator, c: Constants, precision: str | None) -> tuple[float, float]:
    """(matmul, memory): what this chip's microbenchmarks reach of its peaks (catalog ``specs.attained``)
    relative to its family's reference chip, on which the fitted constants stand; 1 where either figure
    is missing (the chip is taken to reach what the reference does)."""
    ref = c.estimator.training_intensity.reference.get(acc.device)
    att = acc.specs.attained
    if ref is None or att is None:
        return 1.0, 1.0
    matmul = 1.0
    for key in _ATTAINED_KEYS.get(precision or "", (precision or "",)):  # the same datapath's figure, where one is given
        mine = next((v for k, v in att.matmul.items() if k == key), None)
        theirs = ref.matmul.get(key)
        if mine and theirs:
            matmul = mine / theirs
            break
    memory = att.memory / ref.memory if att.memory and ref.memory else 1.0
    return matmul, memory

