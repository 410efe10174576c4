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

from dataclasses import dataclass
from typing import Any

from advisor.estimate.result import Estimate
from advisor.models import Profile
from advisor.recommend import setup_cloud
from advisor.scaffold.stacks import choose


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
    tensor: int
    pipeline: int
    data: int
    precision: str
    framework: str
    serving_stack: str  # what the profile asked for
    server: str  # the LLM server the artefacts run (serving_stacks.yaml id); "" when not serving
    server_note: str | None  # why server differs from serving_stack
    model_id: str
    context_len: int
    region: str
    zone: str
    pricing: str
    price_cloud: str
    cloud: str  # where the setup runs (recommend.setup_cloud): priced cloud, on-prem for owned chips

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def make_plan(profile: Profile, est: Estimate | None, values: dict[str, str], device: str) -> Plan:
    count = est.count if est else 0
    hosts = max(1, int(values.get("hosts") or 1))
    per_host = int(values.get("chips_per_host") or count or 0)
    par = (est.parallelism or {}) if est else {}
    inference = profile.task == "inference"
    replicas = (est.replicas or 1) if est and est.mode == "inference" else 1
    tensor, pipeline = int(values.get("tp") or 1), int(values.get("pp") or 1)
    data = replicas if inference else int(par.get("data") or max(1, count // max(1, tensor * pipeline)))
    server, note = "", None
    if inference and est is not None:
        chosen, note = choose(profile.software.serving_stack, device, hosts > 1)
        server = chosen.id
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
        slices=int(values.get("slices") or 1),
        replicas=replicas,
        tensor=tensor,
        pipeline=pipeline,
        data=data,
        precision=profile.model.precision,
        framework=profile.software.framework,
        serving_stack=profile.software.serving_stack,
        server=server,
        server_note=note,
        model_id=values.get("model", ""),
        context_len=int(values.get("max_model_len") or 2048),
        region=values.get("region", ""),
        zone=values.get("zone", ""),
        pricing=(est.price_kind if est and est.price_kind else profile.deployment.pricing),
        price_cloud=(est.price_cloud or "") if est else "",
        cloud=setup_cloud(profile, est),
    )
