"""Kubernetes / GKE manifests as rendered (``kubectl kustomize``, ``helm template``): one request
per pod template that asks for accelerators, in Pod, Deployment, StatefulSet, ReplicaSet, Job,
CronJob, JobSet, LeaderWorkerSet, RayCluster / RayService / RayJob; HorizontalPodAutoscalers
set replicas min..max of the workload they target; cloud resources declared as Kubernetes objects
(Config Connector, Crossplane) are read by ``krm`` as the Terraform resources they stand for.

This module reads the documents (the items of a ``kind: List``, autoscalers, capacity objects)
and makes the requests, a leader and its workers one group; the pod templates of each workload
kind are in ``k8s_workloads``, what one pod spec asks for in ``k8s_pod``."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from advisor.check.infra import capi, dra, karpenter, krm
from advisor.check.infra.k8s_pod import CHIP_LIKE, CHIP_RESOURCES, TYPE_LABELS, ManifestDoc, pod_request, workload_link
from advisor.check.infra.k8s_workloads import JOB_KINDS, Part, pod_templates
from advisor.check.infra.model import (
    WAIVE_ANNOTATION,
    Autoscaler,
    Parsed,
    Request,
    is_placeholder,
    waiver_lines,
)
from advisor.check.infra.names import Hardware, NameIndex
from advisor.errors import InputError
from advisor.yamlsrc import Document, KeyPath

# the namespace of an object that names none: kubectl's default, or the namespace of the release that installs the chart
# it was rendered from (helm install puts such objects there)
DEFAULT_NAMESPACE: ContextVar[str] = ContextVar("DEFAULT_NAMESPACE", default="default")


def _subgroups_fill(part: Part, per_pod: int | None, topo_chips: int | None, req: Request) -> bool:
    """Whether a LeaderWorkerSet part's subgroups (subGroupPolicy.subGroupSize pods each) each fill one slice of the
    topology its pods select (two 2x4 v6e slices for 4 workers of 4 chips in subgroups of 2): then the group's chips
    are that many whole slices, a real shape; said in a note (req.subgroups)."""
    if not (part.subgroup and per_pod and topo_chips) or part.pods % part.subgroup or per_pod * part.subgroup != topo_chips:
        return False
    req.subgroups = part.pods // part.subgroup
    req.notes.append(f"{req.subgroups} subgroup(s) of {part.subgroup} pods (LeaderWorkerSet subGroupPolicy), each one "
                     f"{req.topology} slice of {topo_chips} chips")
    return True

def is_manifest(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str)



def _sub_document(doc: Document, prefix: KeyPath, data: Any) -> Document:
    """An item of a ``kind: List`` as a document of its own, positions kept."""
    n = len(prefix)
    sub = Document(doc.path, doc.index, data, doc.where(prefix))
    sub.value_pos = {k[n:]: v for k, v in doc.value_pos.items() if k[:n] == prefix}
    sub.key_pos = {k[n:]: v for k, v in doc.key_pos.items() if k[:n] == prefix}
    return sub


def _manifests(docs: list[Document]) -> list[Document]:
    out: list[Document] = []
    for doc in docs:
        if not is_manifest(doc.data):
            continue
        if doc.data["kind"] == "List" or (doc.data["kind"].endswith("List") and isinstance(doc.data.get("items"), list)):
            items = doc.data.get("items")
            if items is not None and not isinstance(items, list):
                raise InputError([doc.problem(("items",), "items: expected a list")])
            for i, item in enumerate(items or []):
                if is_manifest(item):
                    out.append(_sub_document(doc, ("items", i), item))
            continue
        out.append(doc)
    return out


def parse(docs: list[Document], index: NameIndex) -> Parsed:
    """Requests of the manifests in ``docs`` (one file); the DRA claims its pods name are looked up in the same file."""
    out = Parsed("kubernetes")
    manifests = _manifests(docs)
    claims: dict[tuple[str, str, str], dra.Claim] = {}
    classes = {c[0]: (c[1], c[2]) for doc in manifests if dra.is_device_class(doc.data) and (c := dra.read_device_class(doc.data))}
    for doc in manifests:
        got = dra.read_claim(doc.data, classes) if dra.is_claim(doc.data) else None
        if got is not None:
            claims.setdefault(*got)
    machine_templates = {capi.key_of(doc): doc for doc in manifests if capi.is_template(doc.data)}  # Cluster API's
    machines_used: set[capi.Key] = set()
    for doc in manifests:
        if capi.is_template(doc.data):  # read with the MachineDeployment / MachinePool that names it, or alone below
            continue
        if capi.is_owner(doc.data):
            out.requests += capi.requests(doc, index, machine_templates, machines_used)
            continue
        d = ManifestDoc(doc, index, claims)
        kind = doc.data["kind"]
        meta = d.mapping(("metadata",))
        name = (
            str(meta["name"])
            if isinstance(meta.get("name"), str)
            else (str(meta["generateName"]) + "*" if isinstance(meta.get("generateName"), str) else "?")
        )
        ns = d.namespace = str(meta["namespace"]) if isinstance(meta.get("namespace"), str) else DEFAULT_NAMESPACE.get()
        spec = d.mapping(("spec",))
        if kind == "HorizontalPodAutoscaler" or (isinstance(spec.get("scaleTargetRef"), dict) and "maxReplicas" in spec):
            # an HPA, or an autoscaler of its shape (scaleTargetRef + minReplicas / maxReplicas: AIBrix's PodAutoscaler,
            # other serving stacks' own): its target is judged at the maximum
            ref = d.mapping(("spec", "scaleTargetRef"))
            if isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str):
                lo = d.count(("spec", "minReplicas"), default=1)
                lo = 1 if lo is None else lo
                hi = d.count(("spec", "maxReplicas"), default=lo)
                what = "a HorizontalPodAutoscaler" if kind == "HorizontalPodAutoscaler" else f"a {kind} ({doc.data.get('apiVersion')})"
                out.autoscalers.append(
                    Autoscaler(
                        (str(ref["kind"]), ns, str(ref["name"])), lo, hi if hi is not None else lo, doc.where(("spec", "maxReplicas")),
                        what[:120], namespaced="namespace" in meta, raises_only=kind != "HorizontalPodAutoscaler",
                    )
                )
            continue
        if kind == "ScaledObject" and str(doc.data.get("apiVersion", "")).startswith("keda.sh/"):
            # KEDA scales its target between minReplicaCount (default 0) and maxReplicaCount (default 100, KEDA's
            # ScaledObject spec): judged at that maximum like an HPA's
            ref = d.mapping(("spec", "scaleTargetRef"))
            if isinstance(ref.get("name"), str):
                lo = d.count(("spec", "minReplicaCount"), default=0)
                hi = d.count(("spec", "maxReplicaCount"), default=100)
                at = doc.where(("spec", "maxReplicaCount")) if "maxReplicaCount" in d.mapping(("spec",)) else doc.where(("spec",))
                out.autoscalers.append(Autoscaler(
                    (str(ref.get("kind") or "Deployment"), ns, str(ref["name"])), lo or 0, hi if hi is not None else 100, at,
                    "a KEDA ScaledObject", namespaced="namespace" in meta,
                ))
            continue
        if kind in CAPACITY_KINDS:
            note = _capacity_note(d, kind, name)
            if note:
                out.notes.append(note)
            if kind == "ComputeClass" and str(doc.data.get("apiVersion", "")).startswith("cloud.google.com/"):
                machines = _class_machines(d)
                if machines:  # carried to the pods that select it (judge.apply_compute_classes)
                    out.autoscalers.append(Autoscaler(("ComputeClass", "", name), 0, 0, doc.where(("spec", "priorities")),
                                                      f"ComputeClass {name}"[:120], namespaced=False, machines=machines))
            continue
        if krm.is_eksctl(doc.data):  # an eksctl ClusterConfig: its node groups
            out.requests += krm.eksctl_requests(doc, index, f"{kind}/{name}")
            continue
        if karpenter.is_nodepool(doc.data):  # a Karpenter node pool: what it may buy
            at = doc.where(("metadata", "name")) if "name" in meta else doc.start
            out.requests += karpenter.requests(d, f"{kind}/{name}", at)
            continue
        rtype = krm.stands_for(doc.data)
        if rtype is not None:  # a cloud resource (Config Connector, Crossplane): read as the Terraform resource it is
            at = doc.where(("metadata", "name")) if "name" in meta else doc.start
            out.requests += krm.requests(doc, index, rtype, f"{kind}/{ns}/{name}", at)
            continue
        made: list[tuple[Part, Request]] = []
        api = doc.data.get("apiVersion") if isinstance(doc.data.get("apiVersion"), str) else ""
        parts = pod_templates(d, kind, api)
        for part in parts:
            line, col = doc.where(("metadata", "name")) if "name" in meta else doc.start
            address = f"{kind}/{ns}/{name}" + (f"/{part.name}" if part.name else "")
            req = Request(doc.path, "kubernetes", address, line, col, scope=ns, target=(str(kind), ns, name))
            req.namespaced = "namespace" in meta
            if part.named is not None:
                _named_request(d, part, req)
            elif part.pods <= 0 or not pod_request(d, part.pod, req, part.containers):
                continue
            req.always_on = kind not in JOB_KINDS
            if not req.always_on:
                req.run_bound_hours = _run_bound_hours(doc.data, str(kind))
            per_pod = req.count
            topo_chips = req.topology_chips
            pods, reps = part.pods, part.reps
            if kind in ("Job", "CronJob") and per_pod and topo_chips and topo_chips > per_pod and topo_chips % per_pod == 0:
                # a multi-host TPU slice run as one Job (GKE's multi-host TPU example): its parallel pods are the
                # slice's hosts, topology chips / chips per pod of them per slice
                hosts = topo_chips // per_pod
                par = reps[0]
                if pods == 1 and par is not None and par == reps[1] and par % hosts == 0:
                    pods, reps = hosts, (par // hosts, par // hosts)
                    req.notes.append(
                        f"{par} parallel pods of {per_pod} chips on a {req.topology} slice: "
                        f"{par // hosts} slice(s) of {hosts} hosts (a multi-host TPU Job)"
                    )
            if per_pod is not None:
                req.count = per_pod * pods
            if _subgroups_fill(part, per_pod, topo_chips, req):
                pass  # each LWS subgroup is one whole slice: a real shape
            elif topo_chips and req.count is not None and req.count != topo_chips:
                if (
                    per_pod is not None
                    and per_pod
                    and topo_chips % per_pod == 0
                    and pods == 1
                    and kind in ("Deployment", "StatefulSet", "Pod", "ReplicaSet")
                ):
                    req.shape_problems.append(
                        f"{per_pod} chips per pod on a {req.topology} slice ({topo_chips} chips): a multi-host slice needs "
                        f"{topo_chips // per_pod} pods per replica (JobSet / LeaderWorkerSet)"
                    )
                else:
                    req.shape_problems.append(
                        f"{pods} pod(s) x {per_pod} chips = {req.count}, but topology {req.topology} has {topo_chips} chips"
                    )
                if req.count < topo_chips and not part.group:  # a leader / workers group fills its slice together
                    # GKE provisions the whole slice a topology selector names (its node pool, or node auto-provisioning's):
                    # the pods asking for part of it leave the rest idle, paid for; judged at the slice
                    req.notes.append(f"judged at the {topo_chips} chips of the {req.topology} slice it selects (the pods ask for "
                                     f"{req.count}; the rest of the slice is provisioned and idle)")
                    req.count = topo_chips
            if part.subgroup and req.subgroups:  # every subgroup's pods: the replica spans its slices
                req.hosts = pods
            elif topo_chips and per_pod:
                req.hosts = max(1, topo_chips // per_pod)
            elif pods > 1:
                req.hosts = pods
            req.replicas_min, req.replicas_max = reps
            if part.where is not None:
                req.where["replicas"] = doc.where(part.where)
            if reps[1] is None and not part.unread and not req.unresolved:
                # a fan-out whose width is known at run time (Argo withParam), an autoscaler without a maximum (Knative
                # without max-scale): said, never taken for one
                req.unresolved.append(("count-unknown", "how many pods run at once is known only at run time "
                                       f"({'; '.join(part.notes)[:160]})", doc.where(part.where or part.pod)))
            req.link = workload_link(d, ("metadata",), (*part.pod[:-1], "metadata"))
            for meta_loc in (("metadata",), (*part.pod[:-1], "metadata")):
                value = d.at((*meta_loc, "annotations", WAIVE_ANNOTATION))
                if isinstance(value, str):
                    at = doc.where((*meta_loc, "annotations", WAIVE_ANNOTATION))
                    req.waivers += [(w, at) for w in waiver_lines(value)]
                    break
            req.notes += part.notes
            if part.unread:
                req.unresolved.append(("kind", part.unread, doc.where(part.pod)))
            overlap = _overlapping_runs(doc.data, str(kind))
            if overlap is not None:
                req.unresolved.append(("count-unknown", overlap, doc.where(("spec",)) if "spec" in doc.data else doc.start))
            # a count that is a placeholder (`replicas: ${N}`, envsubst's `$N`) scales this pod template when it
            # sits beside it (its parent is a prefix of the pod's path), or scales them all (a job-wide field)
            for loc, fld, value, pos in d.placeholders:
                if _scales(loc, part, parts):
                    req.unresolved.append((fld, value, pos))
            made.append((part, req))
        out.requests += _groups(made)
    out.requests += capi.unowned(index, machine_templates, machines_used)
    return out


def _named_request(d: ManifestDoc, part: Part, req: Request) -> None:
    """A kind that names its chips (KubeAI's resourceProfile, KAITO's instanceType): the accelerator from the name,
    the chips per pod as written or those of the machine type."""
    assert part.named is not None
    chip, n, loc, machine = part.named
    req.where["count"] = req.where["accelerator"] = d.doc.where(loc)
    if is_placeholder(chip):  # `<your-vm-sku>`: the machine is chosen at deploy time
        req.unresolved.append((".".join(str(p) for p in loc), chip[:80], d.doc.where(loc)))
        return
    hw = (d.index.instance_accelerator(chip) if machine else None) or d.index.lookup(chip)
    req.set_hardware(chip, hw)
    if machine:  # a machine type says its cloud (KAITO's Standard_NC24ads_A100_v4: an Azure VM size)
        req.cloud = d.index.machine_cloud(chip) or req.cloud
    if not hw.known and chip in CHIP_RESOURCES:  # a resource, not a model (a VLLMRuntime's gpuType without a selector)
        req.unknown = f"the pods ask for {chip} but name no accelerator type (no node selector naming one)"
    elif not hw.known:
        req.unknown = hw.reason or f"{chip!r} is not in the catalog"
    req.count = hw.chips if machine else n
    if not machine and n is None:
        req.unresolved.append((".".join(str(p) for p in loc), str(d.at(loc))[:80], d.doc.where(loc)))
    elif machine and hw.chips is None:  # a machine whose GPUs the name index does not count: never left out of totals
        req.unresolved.append(("count-unknown", f"{chip[:60]}: how many accelerators this machine type holds is not in the "
                               "name index (rules/names.yaml)", d.doc.where(loc)))


def _scales(loc: KeyPath, part: Part, parts: list[Part]) -> bool:
    parent = loc[:-1]
    if part.pod[: len(parent)] == parent:
        return True
    return not any(p.pod[: len(parent)] == parent for p in parts)


def _groups(made: list[tuple[Part, Request]]) -> list[Request]:
    """A leader and its workers that both ask for chips are one group (one slice, one shape):
    merged into one request of leader + workers chips. A leader that asks for none is not a
    chip shape: the workers alone are."""
    leaders = {p.group: r for p, r in made if p.group and p.role == "leader"}
    out = []
    for part, req in made:
        if part.group and part.role == "leader":
            continue
        lead = leaders.get(part.group) if part.group else None
        if lead is not None and part.role == "workers":
            if req.accelerator is None and lead.accelerator is not None and not req.unresolved:
                req.set_hardware(lead.hardware or "", Hardware(lead.accelerator))
                req.cloud = req.cloud or lead.cloud
                req.where.setdefault("accelerator", lead.pos("accelerator"))
            if lead.count is not None and req.count is not None:
                req.count += lead.count
            req.hosts = part.pods + 1
            req.address = req.address.rsplit("/", 1)[0] if part.name == "workers" else req.address.replace("-workers", "")
            req.notes.append(f"leader and {part.pods} worker pod(s) per group, counted together")
            req.unresolved += lead.unresolved
            req.shape_problems = [m for m in req.shape_problems if "topology" not in m]
            if req.subgroups and not lead.count:  # a leader without chips beside whole-slice subgroups: still whole slices
                pass
            elif req.topology_chips and req.count != req.topology_chips:
                req.shape_problems.append(
                    f"{req.hosts} pod(s) per group = {req.count} chips, but topology {req.topology} has {req.topology_chips} chips"
                )
                if req.count is not None and req.count < req.topology_chips:  # GKE provisions the whole slice
                    req.notes.append(f"judged at the {req.topology_chips} chips of the {req.topology} slice the group selects "
                                     f"(it asks for {req.count}; the rest of the slice is provisioned and idle)")
                    req.count = req.topology_chips
            elif req.topology_chips and req.count:
                req.hosts = max(1, req.hosts)
            leaders.pop(part.group, None)
        out.append(req)
    out += leaders.values()  # a leader without chip-asking workers
    return out


CAPACITY_KINDS = {"ComputeClass", "ResourceFlavor", "ClusterQueue", "LocalQueue", "ProvisioningRequest"}


MAX_CLASS_PRIORITIES = 32  # a ComputeClass's priorities read (a bound on a hostile document)


def _class_machines(d: ManifestDoc) -> tuple[tuple[str, bool], ...]:
    """A GKE ComputeClass's priorities in order, each (the GPU or TPU type, else the machine type, else what it names:
    a machine family or node pools, which name no accelerator; its spot flag):
    https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass"""
    out: list[tuple[str, bool]] = []
    priorities = d.seq(("spec", "priorities"))
    for i, prio in enumerate(priorities[:MAX_CLASS_PRIORITIES]):
        if not isinstance(prio, dict):
            raise d.fail(("spec", "priorities", i), "expected a mapping")
        names = [d.mapping(("spec", "priorities", i, k)).get("type") for k in ("gpu", "tpu")]
        names += [prio.get("machineType")]
        pools = prio.get("nodepools")
        names += [f"machine family {prio['machineFamily']}" if isinstance(prio.get("machineFamily"), str) else None,
                  "node pools " + ", ".join(map(str, pools[:4])) if isinstance(pools, list) and pools else None]
        first = next((n for n in names if isinstance(n, str) and n.strip()), None)
        if first is not None:
            out.append((first[:80], prio.get("spot") is True))
    if len(priorities) > MAX_CLASS_PRIORITIES:  # the ones not read may name any machine: an unknown alternative, never none
        out.append((f"priorities after the first {MAX_CLASS_PRIORITIES} (not read)", False))
    return tuple(out)


def _capacity_note(d: ManifestDoc, kind: str, name: str) -> str | None:
    """Kueue and GKE capacity objects name accelerators but ask for none: said, not counted."""
    found: list[str] = []
    if kind == "ComputeClass":
        for i, prio in enumerate(d.seq(("spec", "priorities"))):
            if not isinstance(prio, dict):
                raise d.fail(("spec", "priorities", i), "expected a mapping")
            for key in ("gpu", "tpu"):
                block = d.mapping(("spec", "priorities", i, key))
                if isinstance(block.get("type"), str):
                    found.append(str(block["type"]))
            if isinstance(prio.get("machineType"), str):
                found.append(str(prio["machineType"]))
    elif kind == "ResourceFlavor":
        labels = d.mapping(("spec", "nodeLabels"))
        found += [str(v) for k, v in labels.items() if k in TYPE_LABELS and isinstance(v, str)]
    elif kind == "ClusterQueue":
        for g in d.seq(("spec", "resourceGroups")):
            if isinstance(g, dict) and isinstance(g.get("coveredResources"), list):
                found += [str(r) for r in g["coveredResources"] if isinstance(r, str) and (r in CHIP_RESOURCES or CHIP_LIKE.search(r))]
    if not found:
        return None
    return (
        f"{kind} {name} names {', '.join(dict.fromkeys(found))}: capacity it allows, not a request (counted where a workload asks for it)"
    )


def _run_bound_hours(d: dict[str, Any], kind: str) -> float | None:
    """What stops a run of this kind, in hours: activeDeadlineSeconds of a Job or Argo Workflow (of a RayJob only where its
    cluster is shut down after it, plus ttlSecondsAfterFinished), runPolicy's of a
    Kubeflow job, every replicated Job's of a JobSet (the largest) times the JobSet's runs (failurePolicy.maxRestarts + 1:
    a restart recreates its Jobs with fresh deadlines); None where nothing does (a CronJob runs again on its schedule, a
    Job without a deadline runs as long as its pods do, a JobSet restarted ignoring its count)."""
    def mapping(v: Any) -> dict[str, Any]:
        return v if isinstance(v, dict) else {}

    def seconds(v: Any) -> float | None:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 10**9 else None

    spec = mapping(d.get("spec"))
    s: float | None = None
    if kind in ("Job", "Workflow"):
        s = seconds(spec.get("activeDeadlineSeconds"))
    elif kind == "RayJob":
        # the deadline fails the job; its RayCluster (the chips) is deleted only with shutdownAfterJobFinishes: true,
        # ttlSecondsAfterFinished later (https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html:
        # off by default; review 29: a 60-second deadline priced 64 H100 kept running at $14)
        s = seconds(spec.get("activeDeadlineSeconds")) if spec.get("shutdownAfterJobFinishes") is True else None
        ttl = spec.get("ttlSecondsAfterFinished", 0)
        if s is not None:
            s = s + ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and 0 <= ttl <= 10**9 else None
    elif kind == "JobSet":
        jobs: list[Any] = spec["replicatedJobs"] if isinstance(spec.get("replicatedJobs"), list) else []
        each = [seconds(mapping(mapping(mapping(j).get("template")).get("spec")).get("activeDeadlineSeconds")) for j in jobs]
        known = [x for x in each if x is not None]
        s = max(known) if known and len(known) == len(each) else None
        # a JobSet restart recreates its Jobs, each with a fresh deadline: up to failurePolicy.maxRestarts (default 0)
        # restarts, and a rule that restarts it ignoring the count (RestartJobSetAndIgnoreMaxRestarts) bounds nothing
        policy = mapping(spec.get("failurePolicy"))
        rules: list[Any] = policy["rules"] if isinstance(policy.get("rules"), list) else []
        restarts = policy.get("maxRestarts", 0)
        if any(mapping(r).get("action") == "RestartJobSetAndIgnoreMaxRestarts" for r in rules):
            s = None
        elif s is not None:
            s = s * (restarts + 1) if isinstance(restarts, int) and not isinstance(restarts, bool) and 0 <= restarts <= 10**6 else None
    elif "runPolicy" in spec:
        s = seconds(mapping(spec["runPolicy"]).get("activeDeadlineSeconds"))
    return None if s is None else s / 3600.0


# the kinds that start a run on a schedule, with concurrencyPolicy (Allow by default: a run starts on every tick, whether
# the last one ended or not): https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#concurrency-policy
SCHEDULED_KINDS = ("CronJob", "CronWorkflow", "ScheduledSparkApplication")


def _overlapping_runs(data: dict[str, Any], kind: str) -> str | None:
    """Why a scheduled kind's runs may overlap (how many run at once is not known), or None: concurrencyPolicy Forbid or
    Replace keeps one at a time."""
    if kind not in SCHEDULED_KINDS:
        return None
    spec = data.get("spec")
    policy = spec.get("concurrencyPolicy", "Allow") if isinstance(spec, dict) else "Allow"
    if policy in ("Forbid", "Replace"):
        return None
    return (f"{kind} concurrencyPolicy {policy!s:.20} (Allow by default) starts a run on every schedule tick whether the last "
            "one ended: how many run at once is not known; set Forbid or Replace to keep one")
