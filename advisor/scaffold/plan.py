"""The resolved plan: the one set of values every scaffold artefact states.

``setup.sh``, the Kubernetes manifests, ``sky.yaml``, ``train.py`` and the
README all read the configuration from here, never from the estimate or the
profile directly, so they cannot disagree (tests/test_scaffold.py checks every
bundled profile against its setup path).

Parallelism comes from the estimate's ``parallelism`` block (data x tensor x
pipeline for training; tensor = chips per replica and data = replicas for
serving). A serving replica that spans more than one host is laid out the way
vLLM documents multi-node serving: tensor parallelism inside a host, pipeline
parallelism across hosts (https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from typing import Any

from advisor.estimate.result import Estimate
from advisor.models import Profile
from advisor.scaffold.stacks import checkpoint_method, choose
from advisor.setuppath import RESERVATION_KINDS, provisioning_kind

# Precisions the weights are stored in at fewer bits than they were trained in: a quantized
# checkpoint (or on-the-fly quantization) the server must load.
QUANTIZED = ("fp8", "int8", "int4")


@dataclass(frozen=True)
class Plan:
    device: str
    accelerator: str  # catalog id, "" without an accelerator
    accelerator_type: str  # Cloud TPU type (v6e-8); "" for GPUs
    gke_accelerator: str
    machine_type: str
    topology: str
    runtime_version: str
    chips_per_replica: int
    chips_per_host: int
    hosts: int  # per replica (TPU slice hosts, GPU VMs)
    slices: int  # TPU multislice: slices of `hosts` hosts each
    replicas: int
    min_replicas: int  # autoscaling bounds of a serving replica set (1..replicas)
    max_replicas: int
    tensor: int
    pipeline: int
    data: int
    precision: str
    # "none", or the precision the weights are quantized to (fp8, int8, int4): model.weights_precision where given,
    # else model.precision
    quantization: str
    framework: str
    serving_stack: str  # what the profile asked for
    server: str  # the LLM server the artefacts run (serving-stacks.yaml id); "" when not serving
    server_note: str | None  # why server differs from serving_stack
    model_id: str
    context_len: int  # max model length: the longest prompt + the longest output, at most model.context_tokens
    max_input_len: int  # the longest prompt (prefill length)
    max_seqs: int  # sequences a serving replica runs at peak: the estimate's batch (the autoscaler's target); 0 without serving
    server_seqs: int  # the server's cap on them (--max-num-seqs): the batch at peak, or a batching replica's capacity batch
    num_experts: int  # MoE routed experts; 1 for a dense model (MaxText's convention)
    experts_per_token: int  # MoE top-k; 1 for a dense model
    seq_len: int  # training sequence length; 0 without training
    global_batch: int  # sequences per optimizer step; 0 without training
    checkpoint_every: int  # training steps between checkpoints (resumed from the latest); 0 without training
    per_device_batch: float  # global_batch / chips (MaxText per_device_batch_size; may be fractional); 0 without training
    hours_per_day: float  # a service priced for fewer hours is stopped the rest of the day
    disk_gb: int  # per host: weights (and checkpoints when training) plus the OS and caches
    region: str
    zone: str
    pricing: str  # procurement kind the estimate priced: on-demand, spot, committed-1y/3y, owned
    # the capacity kind that delivers the count (rules/capacity.yaml): on-demand, spot, dws-flex-start, calendar,
    # reserved; "" without a capacity row (owned chips, a family without one)
    procurement: str
    price_cloud: str
    cloud: str  # where the setup runs (setuppath.setup_cloud): priced cloud, on-prem for owned chips
    # a mixture of experts served with data-parallel attention: the replica's chips, one rank each (the estimate's
    # parallelism.attention_data); 1 otherwise
    attention_data: int = 1
    # the prompt tokens one server step takes where a p99 target set a smaller budget than the server's default (the
    # estimate's p99.prefill_budget); 0: the server's default, no flag
    prefill_budget: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def server_precision(self) -> str:
        """The precision whose server flags apply: the compute precision, except where the weights are stored
        quantized at another precision and the computation is itself quantized (gpt-oss's MXFP4 experts with fp8
        activations): that checkpoint names its own method, and an on-the-fly fp8 flag would fight it. A checkpoint
        published quantized (its name says so: ...-FP8, -AWQ, -quantized.w8a8; rules/checkpoints.yaml) gets no
        quantization flag either: vLLM refuses a --quantization that differs from its config's method (Meta's FP8
        405B is fbgemm_fp8, Red Hat's FP8 releases compressed-tensors), so "" (no precision flags)."""
        if self.precision in QUANTIZED and self.checkpoint_method:
            return ""
        if self.quantization not in ("none", self.precision) and self.precision in QUANTIZED:
            return self.quantization
        return self.precision

    @property
    def checkpoint_method(self) -> str | None:
        """The quantization the served checkpoint is published in (stacks.checkpoint_method), None for another."""
        return checkpoint_method(self.model_id) if self.model_id else None

    @property
    def spot(self) -> bool:
        return self.pricing == "spot"

    @property
    def provisioning_kind(self) -> str | None:
        """The procurement kind its provisioning commands take flags for (setuppath.provisioning_kind)."""
        return provisioning_kind(self.pricing, self.procurement)

    @property
    def reservation_kind(self) -> str | None:
        """The reservation kind the capacity comes from (its provisioning flags), None for on-demand and spot."""
        return self.procurement if self.procurement in RESERVATION_KINDS else None

    @property
    def scheduled(self) -> bool:
        """A service priced for part of the day: stopped outside its hours."""
        return self.hours_per_day < 24 and self.max_seqs > 0


# capacity kinds (rules/capacity.yaml) that provisioning commands name explicitly (rules/provisioning.yaml)


def plan_fields() -> tuple[str, ...]:
    """Every attribute of the plan (what tests/test_scaffold_consistency.py checks one by one)."""
    return tuple(f.name for f in fields(Plan))


def _word(value: Any) -> str:
    if value is None or value == "":
        return "-"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if re.fullmatch(r"[A-Za-z0-9_./:@%+,-]+", text) else json.dumps(" ".join(text.split()))


def statement(plan: Plan, width: int = 96) -> list[str]:
    """``plan: name=value ...`` lines stating every plan attribute (values with spaces JSON-quoted,
    readable with shlex.split): the block every artefact carries, so each file states the whole
    priced configuration and tests/test_scaffold_consistency.py can check it against the plan."""
    lines: list[str] = []
    cur = "plan:"
    for name in plan_fields():
        word = f"{name}={_word(getattr(plan, name))}"
        if len(cur) + 1 + len(word) > width and cur != "plan:":
            lines.append(cur)
            cur = "plan:"
        cur += " " + word
    lines.append(cur)
    return lines


def make_plan(
    profile: Profile, est: Estimate | None, values: dict[str, str], device: str, cloud: str, runs_server: bool = True
) -> Plan:
    """The plan of ``profile``'s configuration ``est`` on ``cloud``; ``runs_server``: the artefacts run an LLM server."""
    count = est.count if est else 0
    hosts = max(1, int(values.get("hosts") or 1))
    per_host = int(values.get("chips_per_host") or count or 0)
    slices = int(values.get("slices") or 1)
    par = (est.parallelism or {}) if est else {}
    inference = profile.task == "inference"
    replicas = (est.replicas or 1) if est and est.mode == "inference" else 1
    tensor, pipeline = int(values.get("tp") or 1), int(values.get("pp") or 1)
    data = replicas if inference else int(par.get("data") or max(1, count // max(1, tensor * pipeline)))
    server, note = "", None
    if inference and est is not None and runs_server:
        chosen, note = choose(profile.software.serving_stack, device, hosts > 1, values.get("vendor") or None)
        server = chosen.id
    t, inf = profile.training, profile.inference
    return Plan(
        device=device,
        accelerator=est.accelerator if est else "",
        accelerator_type=values.get("accelerator_type", ""),
        gke_accelerator=values.get("gke_accelerator", ""),
        machine_type=values.get("machine_type", ""),
        topology=values.get("topology", ""),
        runtime_version=values.get("runtime_version", ""),
        chips_per_replica=count,
        chips_per_host=per_host,
        hosts=hosts,
        slices=slices,
        replicas=replicas,
        # the profile's floor (inference.min_replicas: availability, zones) is kept however low the load gets; an
        # offline job's replicas all run at saturation through its window (the estimate sized them so), none idle
        min_replicas=min(replicas, replicas if inf is not None and inf.mode == "batch" else max(1, inf.min_replicas if inf else 1)),
        max_replicas=replicas,
        tensor=tensor,
        pipeline=pipeline,
        data=data,
        precision=profile.model.precision,
        quantization=weights if (weights := profile.model.weights_precision or profile.model.precision) in QUANTIZED else "none",
        framework=profile.software.framework,
        serving_stack=profile.software.serving_stack,
        server=server,
        server_note=note,
        model_id=values.get("model", ""),
        context_len=int(values.get("max_model_len") or 2048),
        max_input_len=int(values.get("max_input_len") or 0),
        max_seqs=int(values.get("max_seqs") or 1) if inference and est is not None else 0,
        server_seqs=int(values.get("server_seqs") or 1) if inference and est is not None else 0,
        num_experts=int(values.get("num_experts") or 1),
        experts_per_token=int(values.get("experts_per_token") or 1),
        seq_len=t.seq_len if t else 0,
        global_batch=int(values.get("global_batch") or 0) if t else 0,
        checkpoint_every=int(values.get("checkpoint_every") or 0) if t else 0,
        per_device_batch=float(values.get("per_device_batch") or 0) if t else 0.0,
        hours_per_day=inf.run_hours_per_day if inf else 24.0,
        disk_gb=int(values.get("disk_gb") or 0),
        region=values.get("region", ""),
        zone=values.get("zone", ""),
        pricing=(est.price_kind if est and est.price_kind else profile.deployment.pricing),
        procurement=(est.procurement or "") if est else "",
        price_cloud=(est.price_cloud or "") if est else "",
        cloud=cloud,
        attention_data=int(par.get("attention_data") or 1) if inference else 1,
        prefill_budget=est.prefill_budget if inference and est is not None else 0,
    )
