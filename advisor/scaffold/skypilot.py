"""``sky.yaml``: a SkyPilot task with the chosen accelerator first and the next-best
feasible accelerators of the same family as ``ordered`` fallbacks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor import clouds, regions
from advisor.catalog import Accelerator
from advisor.context import Context
from advisor.estimate.result import Estimate
from advisor.families import family
from advisor.fmt import hours as _hours
from advisor.fmt import money as _money
from advisor.scaffold.kubernetes import VLLM_PORT, server_argv
from advisor.scaffold.shell import launch
from advisor.scaffold.skeleton import pip
from advisor.scaffold.spec import Spec, dump, stack_for, yaml_header
from advisor.scaffold.stacks import servers
from advisor.setuppath import per_runtime, training_stack

# SkyPilot's own values for a server's multi-host flags (serving-stacks.yaml multi_host uses the
# LeaderWorkerSet's): SKYPILOT_NODE_RANK and SKYPILOT_NODE_IPS (head first) are set on every node
# (https://docs.skypilot.co/en/latest/running-jobs/environment-variables.html)
SKY_MULTI_HOST = {
    "$(LWS_WORKER_INDEX)": "$SKYPILOT_NODE_RANK",
    "$(LWS_LEADER_ADDRESS)": '$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
}
MAX_FALLBACKS = 3


def _serve_scripts(spec: Spec, sliced: bool) -> tuple[str, str]:
    """The plan's LLM server (serving-stacks.yaml), laid out as the estimate costed the replica:
    tensor parallelism over a node's chips (counted on the node, so the ordered fallbacks fit); a
    replica over several hosts in the server's multi-host form with SkyPilot's rank and head
    address: one mesh over the slice (TPU) or pipeline stages across nodes (GPU)."""
    plan = spec.plan
    server = servers()[plan.server]
    per_host = "$(python3 -c 'import jax; print(jax.local_device_count())')" if sliced else "$SKYPILOT_NUM_GPUS_PER_NODE"
    multi = plan.hosts > 1 and server.serves_multi_host(spec.device)
    tp: int | str = plan.tensor if multi and plan.pipeline == 1 else per_host
    pp: int | str = plan.pipeline if multi else 1
    words = server_argv(spec, '"$MODEL_ID"', tp, pp)
    if multi:
        flags, worker = server.host_flags(spec.device, plan.attention_data, plan.chips_per_host)
        sky = {**SKY_MULTI_HOST, "$(LWS_GROUP_SIZE)": str(plan.hosts)}
        for lws, value in sky.items():
            flags = tuple(f.replace(lws, value) for f in flags)
            worker = tuple(w.replace(lws, value) for w in worker)
        words += list(flags)
        if worker:
            words.append(f'$([ "$SKYPILOT_NODE_RANK" != 0 ] && echo {" ".join(worker)})')
    lines = [words[0]]
    for w in words[1:]:
        if w.startswith("--") or w.startswith("$(["):
            lines.append(w)
        else:
            lines[-1] += f" {w}"
    run = " \\\n  ".join(lines)
    setup = (server.pip or {}).get(spec.device) or server.prepare.get(spec.device) or "true"
    return setup + "\n", run + "\n"


def cost_phrase(e: Estimate) -> str:
    if e.mode == "training":
        return f"{_hours(e.hours)} for {_money(e.cost_usd)}"
    reps = f" x {e.replicas} replicas" if (e.replicas or 1) > 1 else ""
    return f"{e.accelerator} x {e.count}{reps} at {_money(e.cost_usd)}/month"



@dataclass
class SkyEntry:
    est: Estimate
    accelerators: str
    nodes: int
    clouds: list[str]
    runtime_version: str | None
    verified: bool


def sky_entry(spec: Spec, acc: Accelerator, est: Estimate) -> SkyEntry:
    kind = spec.profile.deployment.pricing
    rates: dict[str, float] = {}
    for cloud in spec.profile.deployment.clouds:
        price = acc.price([cloud], kind) if cloud in clouds.rented() else None
        if price is not None:
            rates[cloud] = price.usd_per_chip_hour
    ranked = sorted(rates, key=lambda c: (c != est.price_cloud, rates[c], c))
    owned = [c for c in spec.profile.deployment.clouds if c not in clouds.rented() and clouds.cloud(c).owned]
    if not ranked or est.price_cloud in owned:
        # hardware the team owns (or buys, on-prem): SkyPilot reaches it through its own cluster, never a cloud; a
        # configuration priced on it is not rented elsewhere under its price (80 H100 at the amortised $80k launched
        # on GCP, ~$743k there)
        ranked = [c for c in owned if c == est.price_cloud] or owned
    if family(acc.device).sliced:  # one SkyPilot node per slice of the multislice (the plan's slices)
        layout = family(acc.device).shapes.host_layout(acc, est.count)
        sky = acc.deploy.skypilot
        name = sky.replace("{accelerator_type}", layout["accelerator_type"]) if sky else f"tpu-{layout['accelerator_type']}"
        return SkyEntry(
            est,
            name,
            int(layout.get("slices") or 1),
            ranked or list(family(acc.device).clouds[:1]),
            acc.deploy.runtime_version,
            sky is not None,
        )
    per = acc.shapes.gpus_per_node or 8
    gpu = acc.deploy.skypilot
    on_node = min(est.count, per)
    return SkyEntry(est, f"{gpu or acc.id.upper()}:{on_node}", max(1, math.ceil(est.count / per)), ranked, None, gpu is not None)


def _fallbacks(spec: Spec, ctx: Context, first: SkyEntry) -> list[SkyEntry]:
    """Next-best feasible accelerators of the same family (rec.table order), same node count."""
    out: list[SkyEntry] = []
    chosen = first.est.accelerator
    for row in spec.rec.table:
        if len(out) >= MAX_FALLBACKS:
            break
        if row.accelerator == chosen or row.device != spec.device or not row.feasible or not row.priced:
            continue
        acc = ctx.catalog.accelerators.get(row.accelerator)
        if acc is None:
            continue
        options = [row] + [
            c for c in spec.rec.candidates
            if c.accelerator == row.accelerator and c.feasible and c.priced and c is not row
        ]
        for cand in options:
            entry = sky_entry(spec, acc, cand)
            if not entry.verified or entry.nodes != first.nodes:
                continue
            # a service's run command and SkyServe policy are the first choice's (its chips, replicas and batch): a
            # fallback serves under them only with the same chips per replica and the same replicas
            if spec.plan.server and (cand.count != first.est.count or (cand.replicas or 1) != (first.est.replicas or 1)):
                continue
            if family(acc.device).sliced and acc.slice_for(cand.count) is None:
                continue
            out.append(entry)
            break
    return out


def _sky_scripts(spec: Spec) -> tuple[str, str]:
    """setup and run: the skeleton's stack (rules/training-stacks.yaml: its install line, and its
    multi-node launcher where it has one), the plan's LLM server, or the stack's accelerator probe."""
    sliced = family(spec.device).sliced
    if spec.training:
        row = training_stack(spec.stack) if spec.stack else {}
        run = row.get("multi_node") if row.get("multi_node_always") else None
        return pip(spec) + "\n", (run or launch(spec)) + "\n"
    if spec.plan.server:
        return _serve_scripts(spec, sliced)
    stack = stack_for(spec.profile, spec.device) or "cuda"
    probe = training_stack(stack).get("probe") or training_stack("cuda")["probe"]
    runtime = family(spec.device).setup.runtime or ""
    run = f"# Replace with your serving program; this checks the accelerators.\n{per_runtime(probe['run'], runtime)}"
    return per_runtime(probe["setup"], runtime) + "\n", run + "\n"


def serves_replicas(spec: Spec) -> bool:
    """Whether sky.yaml is a SkyServe service: the plan's LLM server on more than one replica (or a range of them),
    each replica one node (SkyServe replicas are single-node tasks)."""
    p = spec.plan
    return bool(p.server) and spec.profile.task == "inference" and p.hosts * p.slices == 1 and p.max_replicas > 1


def one_replica_of(spec: Spec) -> int:
    """The plan's replicas where sky.yaml starts only one of them (each spans several nodes: no SkyServe), else 0."""
    p = spec.plan
    several = bool(p.server) and spec.profile.task == "inference" and p.max_replicas > 1
    return p.max_replicas if several and not serves_replicas(spec) else 0


def sky_command(spec: Spec) -> str:
    """How sky.yaml is started: ``sky serve up`` for a service of several replicas (SkyServe launches and balances
    them), else ``sky launch`` of one cluster."""
    env = " --env HF_TOKEN" if spec.profile.model.hf_id else ""
    if serves_replicas(spec):
        return f"sky serve up -n {spec.name} sky.yaml{env}"
    return f"sky launch -c {spec.name} sky.yaml{env}"


def _service(spec: Spec) -> dict[str, Any]:
    """SkyServe's service section (https://docs.skypilot.co/en/stable/serving/autoscaling.html): the server's health
    path as the readiness probe, the plan's replicas (fixed), or its range with the peak QPS each replica was sized
    for (target_qps_per_replica)."""
    p = spec.plan
    out: dict[str, Any] = {"readiness_probe": servers()[p.server].health or "/"}
    if p.min_replicas == p.max_replicas:
        out["replicas"] = p.replicas
    else:
        inf = spec.profile.inference
        per = (inf.peak_qps or 0.0) / max(1, p.max_replicas) if inf is not None else 0.0
        out["replica_policy"] = {"min_replicas": p.min_replicas, "max_replicas": p.max_replicas,
                                 **({"target_qps_per_replica": round(per, 3)} if per > 0 else {})}
    return out


def sky_yaml(spec: Spec, ctx: Context) -> tuple[str, list[SkyEntry]]:
    assert spec.est is not None and spec.acc is not None
    first = sky_entry(spec, spec.acc, spec.est)
    fallbacks = _fallbacks(spec, ctx, first)
    ordered: list[dict[str, Any]] = []
    plan = spec.plan
    dep = spec.profile.deployment
    kept: list[SkyEntry] = []
    for entry in [first, *fallbacks]:
        acc = ctx.catalog.get(entry.est.accelerator)
        items: list[dict[str, Any]] = []
        for cloud in entry.clouds or [""]:
            item: dict[str, Any] = {"accelerators": entry.accelerators}
            if cloud:  # the plan's region on the plan's cloud (infra: cloud/region), any region elsewhere
                name = clouds.cloud(cloud).skypilot
                region = plan.region if cloud == plan.cloud and not clouds.cloud(cloud).owned else None
                if region is not None and not regions.may_run(cloud, acc, region):
                    # a fallback the plan's region does not offer: where its own estimate placed it, else any region
                    region = entry.est.region if entry.est.price_cloud == cloud else None
                if dep.regions and not clouds.cloud(cloud).owned:  # residency: only a pinned region that offers the chip
                    region, no = regions.placement(dep, cloud, acc)
                    if no is not None or region is None:
                        continue
                item["infra"] = f"{name}/{region}" if region else name
            if entry.runtime_version:
                item["accelerator_args"] = {"runtime_version": entry.runtime_version}
            items.append(item)
        if items or entry is first:
            ordered.extend(items)
            kept.append(entry)
    fallbacks = kept[1:]
    resources: dict[str, Any] = {}
    if plan.spot:
        resources["use_spot"] = True
    if plan.disk_gb:
        resources["disk_size"] = plan.disk_gb
    if spec.plan.server:
        resources["ports"] = VLLM_PORT
    fabric = first.nodes > 1 and not family(spec.device).sliced
    if fabric:
        # the estimate's data-parallel (or cross-node tensor) traffic runs over the fast node-to-node network
        # (InfiniBand/RoCE, EFA, GPUDirect); SkyPilot's default is the standard one (resources.network_tier, yaml spec)
        resources["network_tier"] = "best"
    resources["ordered"] = ordered
    task: dict[str, Any] = {"name": spec.name}
    if first.nodes > 1:
        task["num_nodes"] = first.nodes
    task["resources"] = resources
    task["workdir"] = "."
    envs: dict[str, Any] = {}
    if spec.plan.server:
        envs["MODEL_ID"] = spec.values["model"]
    if spec.profile.model.hf_id:
        envs["HF_TOKEN"] = None  # required: pass it with --env HF_TOKEN
    if envs:
        task["envs"] = envs
    if serves_replicas(spec):
        task["service"] = _service(spec)
    setup, run = _sky_scripts(spec)
    task["setup"] = setup
    task["run"] = run
    header = [
        *yaml_header(spec, "SkyPilot task"),
        "Launch: " + sky_command(spec)
        + (f" (SkyServe: the service section runs the plan's {spec.plan.replicas} replica(s) behind one endpoint)"
           if serves_replicas(spec) else ""),
        "resources.ordered tries the chosen accelerator first, then the next-best feasible ones of the same",
        "family (same node count) in the order of advisor's table:",
    ]
    for entry in [first, *fallbacks]:
        header.append(f"  {entry.accelerators} x {entry.nodes} node(s): {cost_phrase(entry.est)}")
    if not first.verified:
        header.append(f"{first.accelerators} is not a SkyPilot accelerator name advisor knows: check `sky show-gpus`.")
    if plan.pricing.startswith("committed"):
        header.append("The estimate uses committed-use prices; SkyPilot launches on-demand unless you reserve capacity.")
    if n := one_replica_of(spec):
        header.append(
            f"One replica of {n} spans {first.nodes} nodes (SkyServe replicas are single-node): sky launch starts one; "
            f"launch {n} clusters (-c {spec.name}-1 ...) and balance the requests over them"
        )
    if fabric:
        header.append(f"network_tier: best asks for the fast network between the {first.nodes} nodes (EFA on AWS, GPUDirect on "
                      "Google Cloud) that the estimate's cross-node traffic assumes; the standard network is far slower.")
    if first.nodes > 1 and family(spec.device).sliced:
        header.append(f"The configuration is {first.nodes} slices of {first.accelerators}: num_nodes launches one per slice.")
    return dump(task, header), fallbacks
