"""The setup path of a verdict: which cloud it runs on, which path of rules/setup/ applies, and the
values its commands are filled with (region and zone where the estimate was priced, machine and
slice layout, server limits, precision, disk, checkpoints) — the plan the scaffold writes out."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor import capacity, clouds, families, regions
from advisor.catalog import Accelerator
from advisor.conditions import Condition, ConditionParser, evaluate
from advisor.constants import load_constants
from advisor.errors import InputError
from advisor.estimate import tail
from advisor.estimate.replica import BYTES, DEFAULT_EXPERTS_PER_TOKEN, HEAD_DIM, model_shape, routed_by_routing
from advisor.estimate.result import Estimate
from advisor.facts import FieldReader
from advisor.fmt import safe_name
from advisor.knowledge import PLACEHOLDER, KnowledgeBase, SetupPath, Step, bundled_data
from advisor.models import Profile

# procurement kinds whose capacity is reserved ahead (their provisioning flags: rules/provisioning.yaml)
RESERVATION_KINDS = ("reserved", "calendar", "dws-flex-start")


@dataclass
class SetupPlan:
    path: SetupPath
    steps: list[tuple[str, list[str], str | None]]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.path.id,
            "title": self.path.title,
            "summary": self.path.summary,
            "sources": list(self.path.sources),
            "steps": [{"title": t, "commands": c, "note": n} for t, c, n in self.steps],
        }


def setup_cloud(profile: Profile, est: Estimate | None) -> str:
    """The cloud the setup runs on: where the chosen configuration is priced, else the profile's first."""
    if est is not None and est.price_cloud:
        return est.price_cloud
    if profile.deployment.local or (est is not None and est.owned_chips is not None):
        return "on-prem"  # the team's own hardware
    return clouds.preferred(profile.deployment.clouds)


def as_priced(profile: Profile, est: Estimate | None) -> Profile:
    """The profile as its setup reads it: where the estimate priced Spot capacity the team accepts
    (deployment.procurement) though it asked for another kind first (deployment.pricing), on Spot, so that the path,
    its capacity flags and its checkpoint period follow the capacity priced (a Vertex AI job runs no Spot TPU Pod)."""
    dep = profile.deployment
    spot = priced_spot(profile, est)
    if spot == (dep.pricing == "spot"):
        return profile
    # and the other way: Spot asked for but not among the kinds the team accepts, priced on demand, set up on demand
    return profile.model_copy(update={"deployment": dep.model_copy(update={"pricing": "spot" if spot else "on-demand"})})


def priced_spot(profile: Profile, est: Estimate | None) -> bool:
    """Whether the configuration runs on Spot capacity: the kind the estimate priced, else (nothing priced) the profile's
    deployment.pricing."""
    if est is not None and est.price_kind:
        return est.price_kind == "spot"
    return profile.deployment.pricing == "spot"


def choose_setup(
    profile: Profile, kb: KnowledgeBase, device: str, cloud: str | None = None, acc: Accelerator | None = None
) -> SetupPath | None:
    """The setup path: the sized device's own route (catalog ``deploy.route``) where its condition
    holds, else the highest-priority path for the device family, cloud and profile."""
    reader = FieldReader(profile)
    cloud = cloud or setup_cloud(profile, None)
    # the sized device's own route (catalog), then the named end device's (rules/edge-devices.yaml)
    for route in (acc.deploy.route if acc is not None else None, edge_route(profile)):
        own = next((p for p in kb.setup_paths if p.id == route), None)
        if own is not None and own.device == device and (own.when is None or evaluate(own.when, reader)):
            return own
    fits = [
        p for p in kb.setup_paths
        if p.device == device and (p.clouds is None or cloud in p.clouds) and (p.when is None or evaluate(p.when, reader))
    ]
    if not fits:
        return None
    return sorted(fits, key=lambda p: (-p.priority, p.id))[0]


def edge_route(profile: Profile) -> str | None:
    """The setup path of the profile's edge device: by domain, then framework, then its default."""
    device = profile.deployment.edge_device
    if device is None:
        return None
    routes: dict[str, str] = bundled_data("edge-devices.yaml")["devices"][device]["route"]
    return routes.get(profile.domain) or routes.get(profile.software.framework) or routes.get("default")


def longest_request(profile: Profile) -> tuple[int, int]:
    """(longest prompt, longest output) a server must accept: inference.max_input_tokens / max_output_tokens where
    given, else the 99th percentile of lengths with the stated mean (geometric, the largest-entropy length for a mean:
    about 4.6 x; tail.geometric_p99). The mean itself would reject every request longer than average (HTTP 400)."""
    inf = profile.inference
    assert inf is not None
    return (inf.max_input_tokens or tail.geometric_p99(inf.input_tokens), inf.max_output_tokens or tail.geometric_p99(inf.output_tokens))


def model_context(profile: Profile) -> int | None:
    """The model's context: model.context_tokens, else its family's (rules/model-families.yaml: an encoder's position
    embeddings, BERT's 512), else unknown."""
    if profile.model.context_tokens:
        return profile.model.context_tokens
    from advisor.model_families import load_families

    fam = load_families().get(profile.model.family)
    return fam.context_tokens if fam is not None else None


def max_model_len(profile: Profile, est: Estimate | None = None) -> int:
    """The context a server must accept: the longest prompt + the longest output (longest_request), at most the model's
    context (model.context_tokens) and, where an estimate sized the replica, the tokens its KV cache holds (a server
    whose limit the cache cannot hold refuses to start), never below the average request; a profile that serves
    nothing (a training profile on a serving path), the model's context or 2,048. The model's whole context would let
    one long prompt past the latency the replicas were sized for, and makes vLLM TPU compile its shapes."""
    inf, context = profile.inference, model_context(profile)
    if inf is None:
        return context or 2048
    asked = min(sum(longest_request(profile)), context or math.inf)
    mean = inf.input_tokens + inf.output_tokens
    held = ((est.assumptions.get("memory") or {}).get("max_batch_by_memory") if est is not None and est.mode == "inference" else None)
    if held:
        asked = min(asked, max(mean, int(held) * mean))
    return max(1, int(min(asked, context or math.inf)))


def placeholders(profile: Profile, acc: Accelerator | None, est: Estimate | None, cloud: str | None = None) -> dict[str, str]:
    """The values setup-path text is filled with, for the setup on ``cloud`` (default: setup_cloud)."""
    slug = safe_name(profile.name)
    target = clouds.cloud(cloud or setup_cloud(profile, est))
    # where the estimate runs, else the profile's region for this cloud (never another cloud's),
    # else the setup cloud's default (rules/clouds.yaml); none on-prem
    priced_here = est is not None and est.price_cloud == target.id  # the estimate's region is its own cloud's
    region = (est.region if priced_here and est is not None else None) or regions.preferred(profile.deployment, target.id)
    region = region or target.region or "local"
    values = {
        "project": "${PROJECT_ID}",
        "region": region,
        "zone": target.default_zone(region),
        "name": slug,
        "cluster": f"{slug}-cluster",
        "model": profile.model.hf_id or "YOUR_ORG/YOUR_MODEL",
        "accelerator": acc.id if acc else "",
        "count": str(est.count) if est else "1",
        "tp": str(est.count) if est else "1",
        "replicas": str(est.replicas or 1) if est else "1",
        "max_model_len": str(max_model_len(profile, est)),
        "accelerator_type": "",
        "topology": "",
        "runtime_version": "",
        "machine_type": "",
        "gke_accelerator": "",
        "chips_per_host": "",
        "hosts": "1",
    }
    # the chip vendor's Kubernetes resource and the device plugin that advertises it (rules/families.yaml setup.vendors):
    # amd.com/gpu through ROCm's plugin for an AMD Instinct, nvidia.com/gpu through NVIDIA's for the rest
    fam = families.family(acc.device if acc is not None else "gpu").setup
    vendor = acc.vendor if acc is not None else None
    resource = fam.resource(vendor) or families.family("gpu").setup.resource(None) or ""
    values["vendor"] = vendor or ""
    values["gpu_resource"] = resource
    values["gpu_resource_column"] = resource.replace(".", "\\.")
    values["device_plugin"] = str(fam.vendor(vendor).get("device_plugin") or families.family("gpu").setup.vendor(None).get("device_plugin"))
    # the install line of the training skeleton this family runs for the profile's framework, with the method's extras
    # (QLoRA: bitsandbytes), the same line sky.yaml and the Dockerfile install (rules/training-stacks.yaml)
    values["train_pip"] = vendor_pip(stack_pip(
        skeleton_for(profile, acc.device if acc is not None else "gpu", vendor), fam.runtime or "",
        profile.training.method if profile.training else None,
    ), fam.vendor(vendor))
    # the vendor's device check (nvidia-smi; rocm-smi on an AMD Instinct node)
    values["gpu_smi"] = str(fam.vendor(vendor).get("smi") or families.family("gpu").setup.vendor(None).get("smi") or "nvidia-smi")
    if acc is not None:
        native = target.id == acc.deploy.cloud  # the cloud the catalog's deploy names are for
        zones = list(regions.zones_of(target.id, acc)) if native else []
        local = [z for z in zones if regions.region_of(z) == region]
        if priced_here and est is not None and est.zone:
            values["zone"] = est.zone
        elif local or (zones and not regions.pinned(profile.deployment, target.id)):
            values["zone"] = (local or zones)[0]
            values["region"] = regions.region_of(values["zone"])
        values["runtime_version"] = acc.deploy.runtime_version or ""
        values["gke_accelerator"] = acc.deploy.gke_accelerator or ""
        count = est.count if est else acc.counts()[0]
        values.update(families.family(acc.device).shapes.host_layout(acc, count))
        named = acc.shapes.machine_types_cloud or acc.deploy.cloud
        if values["machine_type"] and named != target.id:  # each cloud its own instance names
            per = next((types for c, types in acc.deploy.instance_types.items() if c == target.id), {})
            values["machine_type"] = per.get(int(values["chips_per_host"] or count), "")
        if not native:  # a node label of that cloud's Kubernetes service (GKE)
            values["gke_accelerator"] = ""
    values.update(_layout(profile, est, int(values["hosts"]), int(values["chips_per_host"] or values["count"])))
    return values


# Hours of training between checkpoints off Spot capacity (on Spot, reclaimed at any time: rules/capacity.yaml
# kinds.spot.checkpoint_hours, the period the estimate's interruption cost assumes).
CHECKPOINT_HOURS = 2.0
# Vertex AI's own default job limit (Scheduling.timeout: "The maximum job running time. The default is 7 days."): a
# run estimated shorter keeps it
RUN_TIMEOUT_FLOOR_S = 7 * 24 * 3600
# A MoE profile without a routed-expert count: Mixtral 8x7B's 8 (the estimator's default top-2
# routing, estimate/replica.py DEFAULT_EXPERTS_PER_TOKEN, is Mixtral's too).
DEFAULT_EXPERTS = 8
# JAX/MaxText dtype names of the profile precisions the weights are computed in; quantized
# precisions compute in bfloat16 (MaxText's quantization= flag says how the weights are stored).
WEIGHT_DTYPE = {"fp32": "float32", "fp64": "float32", "bf16": "bfloat16", "fp16": "float16"}
# Disk per host: the OS, image and pip caches, plus this host's share of the weights (serving) or
# of the weights and two full training checkpoints (weights + fp32 master copy + two Adam moments).
# mlx_lm.convert flags for the profile precision: quantize to 4 or 8 bits, else keep a float dtype.
MLX_QUANT = {"int4": "-q --q-bits 4", "int8": "-q --q-bits 8", "fp8": "-q --q-bits 8",
             "bf16": "--dtype bfloat16", "fp16": "--dtype float16", "fp32": "--dtype float32"}
# llama.cpp quantization types (llama-quantize) for the profile precision.
GGUF_QUANT = {"int4": "Q4_K_M", "int8": "Q8_0", "fp8": "Q8_0", "bf16": "BF16", "fp16": "F16", "fp32": "F32"}
_BASE_DISK_GB = 100
_CHECKPOINTS_KEPT = 2


def _expert_mlp_dim(profile: Profile, layers: int, hidden: int) -> int:
    """The width of one routed expert's MLP, from the model's totals where it names its routing (E experts, top-k): the
    experts hold R = (P - A) / (1 - k / E) (estimate.replica.routed_by_routing), E x layers SwiGLU MLPs of 3 x hidden x
    width each, rounded to 128 (Qwen3-235B-A22B: 1,536, its config's moe_intermediate_size). 0 for a dense model or one
    whose routing is not given (the MLP width then stands for the experts' too)."""
    given = routed_by_routing(profile)
    if given is None or layers <= 0 or hidden <= 0:
        return 0
    return max(128, round(given[1] / ((profile.model.experts or 1) * layers * 3 * hidden) / 128) * 128)


def disk_gb(profile: Profile, hosts: int) -> int:
    """Disk per host for weights (and checkpoints when training), sharded over ``hosts``, rounded up to 50 GB."""
    data = profile.model.params_b * BYTES.get(profile.model.precision, 2.0)
    t = profile.training
    if t is not None:
        per_param = 2.0 + 4.0 * 3 if t.method == "full" else 2.0  # adapters: the base weights once
        data += _CHECKPOINTS_KEPT * profile.model.params_b * per_param
    return int(math.ceil((_BASE_DISK_GB + data / max(1, hosts)) / 50.0) * 50)


def _flags(name: str, flags: list[str]) -> dict[str, str]:
    """Server flags as two placeholders: ``NAME_items`` continues a JSON/YAML list of words (', "--x=1"'), ``NAME_args``
    a command line (' --x=1'); both empty without flags."""
    return {f"{name}_items": "".join(f', "{f}"' for f in flags), f"{name}_args": "".join(f" {f}" for f in flags)}


def _layout(profile: Profile, est: Estimate | None, hosts: int, per_host: int) -> dict[str, str]:
    """Parallelism and node counts every setup artefact states (the scaffold's plan reads them).

    Training: tensor x pipeline from the estimate's parallelism plan. Serving: one replica's chips;
    a replica over several hosts is tensor-parallel inside a host and pipeline-parallel across
    hosts (https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html)."""
    count = est.count if est else 1
    par = (est.parallelism or {}) if est else {}
    replicas = (est.replicas or 1) if est and est.mode == "inference" else 1
    if profile.task == "inference" and par.get("tensor"):  # the estimate's replica layout, as costed
        tp, pp = int(par["tensor"]), int(par.get("pipeline") or 1)
    elif profile.task == "inference":
        tp, pp = (min(count, per_host), max(1, count // max(1, min(count, per_host)))) if hosts > 1 else (count, 1)
    else:
        tp, pp = int(par.get("tensor") or 1), int(par.get("pipeline") or 1)
    # the servers' own flags (serving-stacks.yaml, the scaffold's table): a mixture of experts the estimate serves with
    # data-parallel attention (vLLM's form of it), and a p99 target's prompt-token budget per step where smaller than
    # the stack's default (estimate p99.prefill_budget)
    dp = int(par.get("attention_data") or 1) if profile.task == "inference" else 1
    slices = max(1, math.ceil(count / max(1, per_host * hosts)))
    budget = est.prefill_budget if est is not None and profile.task == "inference" else 0
    stacks = bundled_data("serving-stacks.yaml")
    dp_flags = [f.format(dp=dp) for f in stacks["vllm"]["data_parallel_attention"]["gpu"]["flags"]] if dp > 1 else []
    sglang_dp = [f.format(dp=dp) for f in stacks["sglang"]["data_parallel_attention"]["gpu"]["flags"]] if dp > 1 else []
    vms = hosts * replicas  # the machines of every replica (an instance path launches them all)
    vllm_precision = [str(f) for f in (stacks["vllm"].get("precision") or {}).get(profile.model.precision, [])]
    vllm_budget, sglang_budget = (
        [w.replace("{budget}", str(budget)) for w in stacks[s]["prefill_budget"]] if budget else [] for s in ("vllm", "sglang")
    )
    out = {
        "tp": str(tp),
        "pp": str(pp),
        **_flags("vllm_dp", dp_flags),
        **_flags("vllm_budget", vllm_budget),
        "sglang_budget_args": _flags("sglang_budget", sglang_budget)["sglang_budget_args"],
        "sglang_dp_args": _flags("sglang_dp", sglang_dp)["sglang_dp_args"],
        # SGLang's data-parallel attention runs tensor parallelism over all the replica's GPUs (tensor: all)
        "sglang_tp": str(dp if sglang_dp and stacks["sglang"]["data_parallel_attention"]["gpu"]["tensor"] == "all" else tp),
        # vLLM's flags for the profile's precision (serving-stacks.yaml precision: --dtype, on-the-fly FP8), as the
        # scaffold's k8s/ runs it; a quantized checkpoint (int8, int4) names its own method and gets none
        **_flags("vllm_precision", vllm_precision),
        # the profile's replica floor (inference.min_replicas) in nodes, never above the peak's
        "min_nodes": str(hosts * min(replicas, profile.inference.min_replicas if profile.inference is not None else 1)),
        "max_nodes": str(hosts * replicas),
        "workload": "leaderworkerset" if hosts > 1 and profile.task == "inference" else "deployment",
        "slices": str(slices),
        # az vm create takes --count for 2 to 250 VMs only (a single VM omits it): every node of every replica
        "az_count_args": f" --count {vms}" if vms > 1 else "",
        # several VMs of one az vm create are named NAME0, NAME1, ...: the first one's suffix
        "az_vm_suffix": "0" if vms > 1 else "",
        # the TPU slices one queued resource holds (rules/provisioning.yaml nodes): one program over all of them, as
        # Multislice (a serving replica is a queued resource of its own: independent replicas in one would be joined
        # into one Multislice job)
        "tpu_nodes": str(slices),
        "seq_len": "2048",
        "global_batch": "256",
        "steps": "100",
        "spmd_batch": "8",
        "grad_accum": "1",
        "run_timeout": f"{RUN_TIMEOUT_FLOOR_S}s",
    }
    t = profile.training
    if t is not None:
        batch = t.global_batch or (max(8, 4 * count) if est else 256)
        out["seq_len"], out["global_batch"] = str(t.seq_len), str(batch)
        out["per_device_batch"] = f"{round(batch / max(1, count), 4):g}"  # MaxText per_device_batch_size
        # an SPMD (FSDPv2) step of the Hugging Face Trainer: one sequence a chip, accumulated to the global batch
        out["spmd_batch"] = str(min(batch, max(1, count)))
        out["grad_accum"] = str(max(1, batch // int(out["spmd_batch"])))
        if est is not None:
            out["steps"] = str(max(1, round(t.tokens_b * 1e9 / (t.seq_len * batch))))
        # steps between checkpoints: every CHECKPOINT_HOURS of the estimated run (Spot capacity is
        # reclaimed without warning, so more often there); the skeleton resumes from the latest
        steps = int(out["steps"])
        spot = priced_spot(profile, est)
        every_h = capacity.table().kinds["spot"].checkpoint_hours if spot else CHECKPOINT_HOURS
        per_hour = steps / est.hours if est is not None and est.hours else float(steps)
        out["checkpoint_every"] = str(max(1, min(steps, round(per_hour * every_h))))
        # a managed job's time limit (Vertex AI scheduling.timeout, 7 days when unset): the slow end of the run's range
        # and a quarter more, so the priced run is never stopped by the default
        hours = max(est.hours_high or 0.0, est.hours or 0.0) if est is not None else 0.0
        out["run_timeout"] = f"{max(RUN_TIMEOUT_FLOOR_S, math.ceil(hours * 1.25 * 3600))}s"
    else:
        out["checkpoint_every"] = "0"
    inf = profile.inference
    out["max_seqs"] = str(est.batch or 1) if est is not None and est.mode == "inference" else "1"
    # the batch the server may run at once: the largest batch that still meets the latency target (the capacity the
    # replicas were counted at, and the slots the p99's queueing model gives a replica), never the requests the peak
    # keeps in flight on average: a cap at that average runs its slots at ~100% (queueing without bound) and an
    # autoscaler targeting it can never see more running than its target, so it never scales out (review 20, D1)
    out["server_seqs"] = out["max_seqs"]
    if est is not None and est.mode == "inference":
        cap = (est.assumptions.get("operating_point") or {}).get("concurrency_at_capacity")
        out["server_seqs"] = str(max(int(out["max_seqs"]), int(cap or 1)))
    # one engine per data-parallel rank (vLLM --max-num-seqs is per engine): its share of the replica's batch
    out["engine_seqs"] = str(-(-int(out["server_seqs"]) // max(dp, 1)))
    # the flag in a manifest of vLLM's (a setup path's example Deployment): the batch the estimate sized a serving replica
    # for; a profile that serves nothing (a path's example for a training profile) leaves vLLM's default
    out["vllm_seqs_items"] = f', "--max-num-seqs={out["engine_seqs"]}"' if est is not None and est.mode == "inference" else ""
    # the replica's batch per chip (JetStream/MaxText per_device_batch_size)
    out["per_chip_batch"] = str(-(-int(out["max_seqs"]) // max(1, count)))
    out.update(jetstream_model(profile.model.hf_id))
    out["maxtext_model"] = maxtext_model(profile.model.hf_id)
    # the longest prompt (a training profile on a serving path: half the context)
    out["max_input_len"] = str(
        min(max_model_len(profile, est), longest_request(profile)[0]) if inf else max_model_len(profile) // 2
    )
    moe = profile.model.architecture == "moe"
    # MaxText's convention: a dense model is one expert, each token routed to it
    out["num_experts"] = str((profile.model.experts or DEFAULT_EXPERTS) if moe else 1)
    out["experts_per_token"] = str((profile.model.experts_per_token or DEFAULT_EXPERTS_PER_TOKEN) if moe else 1)
    out["weight_dtype"] = WEIGHT_DTYPE.get(profile.model.precision, "bfloat16")
    out["mlx_quant"] = MLX_QUANT.get(profile.model.precision, "--dtype bfloat16")
    out["gguf_quant"] = GGUF_QUANT.get(profile.model.precision, "F16")
    out["disk_gb"] = str(disk_gb(profile, hosts * int(out["slices"])))
    if profile.domain == "llm" or profile.model.architecture in ("transformer", "moe"):
        shape = model_shape(profile)
        out["layers"], out["emb_dim"] = str(shape.layers), str(shape.hidden)
        # the vocabulary the estimate's logits memory assumed (model.vocab_size, else its default): MaxText's base.yml
        # builds 32,000 and the Megatron skeleton's mock data one of its own without it
        from advisor.estimate.training import vocab_size  # the estimator's rule, loaded only where a model is shaped

        out["vocab"] = str(vocab_size(profile, load_constants()))
        # the rest of the shape MaxText would otherwise take from base.yml (16 query and 16 KV heads, an MLP of 7,168:
        # a 70B profile trained as a ~20B model): heads of head_dim (the profile's, else 128) across the width, the
        # KV heads the KV width holds, and the MLP at Llama 3's 3.5 x the width (8B 14,336; 70B 28,672), in 256s
        att = profile.model.attention
        head = (att.head_dim if att and att.head_dim else None) or HEAD_DIM
        out["head_dim"] = str(head)
        out["heads"] = str((att.heads if att and att.heads else None) or max(1, shape.hidden // head))
        out["kv_heads"] = str(max(1, min(int(out["heads"]), shape.kv_dim // head)))
        out["mlp_dim"] = str(max(256, round(3.5 * shape.hidden / 256) * 256))
        out["moe_mlp_dim"] = str(_expert_mlp_dim(profile, shape.layers, shape.hidden))
        # MaxText's MLP width: a routed expert's in a mixture of experts (maxtext-v0.2.4 types.py: a model of MoE layers
        # only needs base_mlp_dim == base_moe_mlp_dim > 0, else it stops), the dense MLP's otherwise
        out["maxtext_mlp_dim"] = out["moe_mlp_dim"] if moe and int(out["moe_mlp_dim"]) > 0 else out["mlp_dim"]
    else:
        out["layers"], out["emb_dim"], out["heads"], out["kv_heads"], out["head_dim"], out["mlp_dim"] = "", "", "", "", "", ""
        out["vocab"] = ""
        out["moe_mlp_dim"] = "0"
        out["maxtext_mlp_dim"] = ""
    return out


def maxtext_model(hf_id: str | None) -> str:
    """MaxText's model_name of the profile's Hugging Face checkpoint (rules/maxtext-models.yaml, its converter's table);
    where none matches, the shell variable setup.sh asks for."""
    rows: dict[str, str] = bundled_data("maxtext-models.yaml")["models"]
    wanted = (hf_id or "").lower()
    return next((str(name) for hf, name in rows.items() if wanted and hf.lower() == wanted), "${MAXTEXT_MODEL_NAME}")


def jetstream_model(hf_id: str | None) -> dict[str, str]:
    """JetStream's names of the profile's model (rules/jetstream-models.yaml: the conversion script's MODEL and
    MODEL_VARIATION, MaxText's tokenizer asset); where no row matches, shell variables setup.sh asks for."""
    rows: list[dict[str, str]] = bundled_data("jetstream-models.yaml")["models"]
    wanted = (hf_id or "").lower()
    row = next((r for r in rows if wanted and wanted.startswith(r["prefix"].lower())), None)
    if row is None:
        return {"jetstream_model": "${MAXTEXT_MODEL}", "jetstream_size": "${MAXTEXT_SIZE}",
                "jetstream_tokenizer": "${MAXTEXT_TOKENIZER}"}
    return {"jetstream_model": row["model"], "jetstream_size": row["size"], "jetstream_tokenizer": row["tokenizer"]}


@functools.cache
def _in_spec(cmd: str, kind: str | None) -> str:
    """A specification a setup path writes (``cat > FILE <<``, rules/provisioning.yaml ``specs``) with the line that
    states the procurement ``kind`` after its ``after`` line (a Vertex AI job's scheduling.strategy)."""
    specs: dict[str, dict[str, Any]] = bundled_data("provisioning.yaml").get("specs") or {}
    row = next((r for head, r in specs.items() if cmd.strip().startswith(head + " ")), None)
    if row is None or not kind or kind not in row:
        return cmd
    lines = cmd.split("\n")
    at = next((i for i, line in enumerate(lines) if line.strip() == row["after"]), None)
    if at is None:
        return cmd
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join([*lines[: at + 1], indent + str(row[kind]), *lines[at + 1 :]])


def provisioning() -> dict[str, dict[str, Any]]:
    """rules/provisioning.yaml: how each provisioning command takes Spot capacity and a disk size."""
    data: dict[str, dict[str, Any]] = bundled_data("provisioning.yaml")["commands"]
    return data


def provision(cmd: str, kind: str | None, disk_gb: int = 0) -> str:
    """``cmd`` with the configuration's procurement ``kind`` and disk size where it provisions machines
    (rules/provisioning.yaml): Spot flags when the estimate priced Spot capacity (``spot``), the reservation,
    calendar or flex-start flags when its capacity comes from that kind, the boot disk sized for
    the weights and checkpoints (``disk_gb``; 0: the command's own). What recommend shows and what
    the scaffold's setup.sh runs, from one table."""
    stripped = cmd.strip()
    if "\n" in cmd:  # a specification the command writes (a heredoc) states the kind in a key of its own
        return _in_spec(cmd, kind)
    key, row = next(((head, r) for head, r in provisioning().items() if stripped.startswith(head + " ")), ("", None))
    if row is None:
        return cmd
    config = row.get("config")
    if config and kind in config["kinds"]:  # the kind is stated in the command's config file, not its flags (eksctl)
        return _with_config(config["template"], cmd, disk_gb or int(config["default_disk_gb"]), config["kinds"][kind])
    flags: list[str] = row.get(kind, []) if kind else []
    if flags:
        replaced = row.get("replaces")
        given = dict(w.split("=", 1) for w in cmd.split() if w.startswith("--") and "=" in w)
        flags = [f.replace("{num_nodes}", given.get("--num-nodes", "1")) for f in flags]
        for name in row.get("overrides", []):  # the kind's value of these flags replaces the command's
            if any(f.split("=", 1)[0] == name for f in flags):
                cmd = re.sub(rf"\s{re.escape(name)}(=|\s+)\S+", "", cmd)
        # a flag the command already has (by name), or one it rules out, is not given twice
        present = {w.split("=", 1)[0] for w in cmd.split() if w.startswith("-")}
        present |= {flag for flag, others in row.get("conflicts", {}).items() if present & set(others)}
        new = " ".join(_missing(flags, present))
        if replaced and re.search(rf"(^|\s){re.escape(replaced)}(?=\s|$)", cmd):
            cmd = re.sub(rf"(^|\s){re.escape(replaced)}(?=\s|$)", lambda m: m.group(1) + new, cmd)
        elif new:
            cmd = f"{cmd} {new}"
        head = row.get("command", {}).get(kind)
        if head:  # the kind's flags belong to another release track of the command
            cmd = cmd.replace(key, head, 1)
    if row.get("disk") and disk_gb:
        disk = row["disk"].format(disk_gb=disk_gb)
        flag = row["disk_flag"]
        pattern = rf"\s{re.escape(flag)}(=|\s+)\S+"
        cmd = re.sub(pattern, lambda m: " " + disk, cmd, count=1) if re.search(pattern, cmd) else f"{cmd} {disk}"
    return cmd


def multinode(cmd: str, nodes: int) -> str:
    """``cmd`` for a configuration of ``nodes`` TPU slices in one queued resource (rules/provisioning.yaml ``nodes``):
    created with --node-count, its hosts reached through the queued resource on every node. One slice: unchanged."""
    if nodes <= 1:
        return cmd
    stripped = cmd.strip()
    rows: dict[str, dict[str, Any]] = bundled_data("provisioning.yaml")["nodes"]
    # the tool where a command starts: the line's start, or after ; && || | ( or then (a guarded copy: if ...; then ...)
    key, row = next(((head, r) for head, r in rows.items() if re.search(_AT_COMMAND + re.escape(head) + r"\s", stripped)),
                    ("", None))
    if row is None:
        return cmd
    for old, new in row.get("replace", {}).items():
        words = str(new).replace("{nodes}", str(nodes))
        cmd = re.sub(rf"(?<!\S){re.escape(old)}(?!\S)", lambda _m: words, cmd)  # noqa: B023 (used at once)
    if row.get("command"):
        cmd = re.sub(_AT_COMMAND + re.escape(key) + r"(?=\s)", lambda _m: str(row["command"]), cmd)
    return cmd


_AT_COMMAND = r"(?:^|(?<=[;&|(] )|(?<=\bthen ))"


def _with_config(template: str, cmd: str, disk_gb: int, market: str) -> str:
    """The command as ``template`` (rules/provisioning.yaml ``config``): a config file on stdin made from the command's
    own flags (``--node-type=X`` is {node_type}), the disk (the plan's, else the tool's default) and the kind's
    ``market`` lines; a flag the template names that the command lacks stays a placeholder of that name."""
    given = {w[2:].split("=", 1)[0].replace("-", "_"): w.split("=", 1)[1] for w in cmd.split() if w.startswith("--") and "=" in w}
    return template.format_map(_Keep(given, disk_gb=str(disk_gb), market=market))


class _Keep(dict[str, str]):
    """format_map values: a name with no value stays ``{name}``."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _missing(flags: list[str], present: set[str]) -> list[str]:
    """``flags`` (a flag and the words that follow it as its value) without the flags already ``present``."""
    out: list[str] = []
    skip = False
    for w in flags:
        if w.startswith("-"):
            skip = w.split("=", 1)[0] in present
        if not skip:
            out.append(w)
    return out


def provisioning_kind(pricing: str, procurement: str | None) -> str | None:
    """The procurement kind a configuration's provisioning commands take flags for (rules/provisioning.yaml): spot
    where the estimate priced Spot capacity, the reservation kind its capacity comes from, None for on-demand."""
    if pricing == "spot":
        return "spot"
    return procurement if procurement in RESERVATION_KINDS else None


def choose_server(wanted: str, device: str, multi_host: bool, vendor: str | None = None) -> tuple[str, str | None]:
    """The LLM server (rules/serving-stacks.yaml id) a configuration's artefacts run for the profile's ``wanted``
    serving stack on ``device``, and why another one (None where it is the profile's); "" where no stack serves on
    ``device``. A replica over several hosts (``multi_host``) takes a server that spans hosts on that device family.
    A chip vendor with images of its own (rules/families.yaml setup.vendors: AMD's ROCm builds) takes a server it has
    one for."""
    table: dict[str, dict[str, Any]] = bundled_data("serving-stacks.yaml")
    own = families.family(device).setup.vendor(vendor).get("images") if device in families.ids() else None
    if own:
        if wanted in table and wanted not in own and device in table[wanted]["devices"]:
            first = next(k for k in table if k in own)
            return first, (f"{table[wanted]['title']} has no {vendor} build the scaffold knows, so the manifests use "
                           f"{table[first]['title']} ({own[first]})")
        table = {k: v for k, v in table.items() if k in own}
    spans = [k for k, v in table.items() if device in (v.get("multi_host") or {})]
    runs = [k for k, v in table.items() if device in v["devices"]]
    if not runs:
        return "", None
    fallback = spans[0] if multi_host and spans else runs[0]
    title = {k: str(v["title"]) for k, v in table.items()}
    s = table.get(wanted)
    if s is None:
        return fallback, (None if wanted in ("none", "") else f"the scaffold has no manifests for {wanted}, so they use {title[fallback]}")
    if device not in s["devices"]:
        return fallback, f"{title[wanted]} does not run on {device.upper()}s, so the manifests use {title[fallback]}"
    if multi_host and wanted not in spans:
        other = spans[0] if spans else fallback
        return other, (f"{title[wanted]} serves from one machine only on {device.upper()}s and this replica spans hosts, so "
                       f"the manifests use {title[other]}")
    return wanted, None


def applicable_steps(path: SetupPath, profile: Profile, cloud: str, server: str | None = None) -> list[Step]:
    """The steps of ``path`` for ``profile``'s configuration on ``cloud``: its task, cloud and framework
    (Step.applies) and each step's own ``when`` (what serves the model, for one), as recommend shows them and
    the scaffold's setup.sh runs them; with the configuration's ``server`` known (the scaffold's plan), a step that
    starts a server applies where it is that one."""
    reader = FieldReader(profile)
    conds = path.step_when or (None,) * len(path.steps)
    return [
        s for s, cond in zip(path.steps, conds, strict=True)
        if s.applies(profile.task, cloud, profile.software.framework)
        and (server in s.server if s.server and server else cond is None or evaluate(cond, reader))
    ]


def plan(
    path: SetupPath, values: dict[str, str], profile: Profile | None = None, cloud: str = "", kind: str | None = None,
    server: str | None = None,
) -> SetupPlan:
    """``path``'s steps with the configuration's ``values`` filled in: those for ``profile`` on ``cloud``
    (applicable_steps), every step without a profile; each command that provisions machines with the flags of the
    procurement ``kind`` and the disk (provision), as the scaffold's setup.sh runs it."""
    disk = int(values.get("disk_gb") or 0)
    nodes = int(values.get("tpu_nodes") or 1)
    if "machine_type" in values and not values["machine_type"]:  # none in the catalog for this cloud: said, as setup.sh says it
        values = {**values, "machine_type": "MACHINE_TYPE"}

    def fill(text: str) -> str:
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)

    def note(s: Step) -> str | None:  # a step of the launched machine says so (the scaffold's setup.sh runs it there)
        where = ON_INSTANCE if s.host == "instance" else ""
        return " ".join(p for p in (where, fill(s.note) if s.note else "") if p) or None

    steps = applicable_steps(path, profile, cloud, server) if profile is not None else list(path.steps)
    return SetupPlan(path, [
        (fill(s.title), [fill(multinode(provision(cmd, kind, disk), nodes)) for cmd in s.commands], note(s)) for s in steps
    ])


ON_INSTANCE = "On the machine the steps above launch or reserve, not on the workstation."


# --------------------------------------------------------------------------- training stacks


@functools.cache
def _training() -> dict[str, Any]:
    from advisor.knowledge import bundled_data

    data: dict[str, Any] = bundled_data("training-stacks.yaml")
    return data


@functools.lru_cache(maxsize=1)
def _skeleton_overrides() -> tuple[tuple[str, str, frozenset[str], Condition, frozenset[str]], ...]:
    """(stack, family, the family skeletons it replaces, when, the chip vendors it runs on: empty for any) of each
    training stack with a ``when`` (rules/training-stacks.yaml ``replaces``)."""
    from advisor.validation import builtin_rules_dir
    from advisor.yamlsrc import load_file

    doc = load_file(str(builtin_rules_dir() / "training-stacks.yaml"))[0]
    out = []
    for stack, row in doc.data["stacks"].items():
        if "when" not in row:
            continue
        parser = ConditionParser(doc)
        cond = parser.parse(row["when"], ("stacks", stack, "when"))
        if cond is None:
            raise InputError(problems=parser.problems)
        vendors = frozenset(row.get("vendors") or ())
        out += [(stack, fam, frozenset(replaced), cond, vendors) for fam, replaced in row["replaces"].items()]
    return tuple(out)


def skeleton_for(profile: Profile, device: str, vendor: str | None = None) -> str | None:
    """The training skeleton on ``device`` (chips of ``vendor``, None where not known): the family's for the profile's
    framework (rules/families.yaml setup.skeletons), unless a training stack replaces it for this profile on this vendor's
    chips (rules/training-stacks.yaml ``replaces`` / ``when`` / ``vendors``: Megatron-LM for a large language model
    trained in full on NVIDIA GPUs)."""
    base = families.family(device).setup.skeleton(profile.software.framework)
    reader = FieldReader(profile)
    for stack, fam, replaced, cond, vendors in _skeleton_overrides():
        if fam == device and base in replaced and (not vendors or vendor is None or vendor in vendors) and evaluate(cond, reader):
            return stack
    return base


def training_stack(stack: str) -> dict[str, Any]:
    """One training stack's row of rules/training-stacks.yaml."""
    row: dict[str, Any] = _training()["stacks"][stack]
    return row


def per_runtime(value: Any, runtime: str, default: str | None = None) -> Any:
    """A stack value given once, or per device runtime (with a ``default`` key)."""
    if isinstance(value, dict):
        return value.get(runtime, value.get("default", default))
    return value if value is not None else default


def vendor_pip(cmd: str, vendor: Mapping[str, Any]) -> str:
    """An install line for the chip vendor's build of PyTorch: where the vendor has its own index (rules/families.yaml
    setup.vendors: torch_index, AMD's ROCm builds), torch comes from it and the rest from PyPI, whose torch is the CUDA
    build; any other line as it is."""
    index = vendor.get("torch_index")
    words = cmd.split()
    if not index or words[:3] != ["pip", "install", "torch"]:
        return cmd
    rest = " ".join(words[3:])
    return f"pip install torch --index-url {index}" + (f" && pip install {rest}" if rest else "")


def stack_pip(stack: str | None, runtime: str, method: str | None = None) -> str:
    """The install line of ``stack`` on ``runtime``, with the training method's extra packages."""
    default: str = _training()["default_pip"]
    if stack is None:
        return default
    row = training_stack(stack)
    cmd: str = per_runtime(row.get("pip"), runtime, default) or default
    extra = (row.get("method_pip") or {}).get(method or "")
    return f"{cmd} {extra}" if extra else cmd
