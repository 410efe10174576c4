"""Kubernetes / GKE manifests as rendered (``kubectl kustomize``, ``helm template``): one request
per pod template that asks for accelerators, in Pod, Deployment, StatefulSet, ReplicaSet, Job,
CronJob, JobSet, LeaderWorkerSet, RayCluster / RayService / RayJob; HorizontalPodAutoscalers
set replicas min..max of the workload they target."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor import clouds
from advisor.check.infra.model import (
    WAIVE_ANNOTATION,
    Autoscaler,
    Parsed,
    Request,
    is_placeholder,
    waiver_lines,
)
from advisor.check.infra.names import Hardware, NameIndex, topology_chips
from advisor.errors import InputError
from advisor.yamlsrc import Document, KeyPath

LINK_KEYS = ("advisor.dev/workload", "advisor-workload")
CHIP_RESOURCES = ("nvidia.com/gpu", "google.com/tpu", "amd.com/gpu")
TYPE_LABELS = (
    "cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-accelerator", "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-gpu-name", "nvidia.com/gpu.product",
)
SPOT_LABELS = {
    "cloud.google.com/gke-spot": "true",
    "cloud.google.com/gke-provisioning": "spot",
    "karpenter.sh/capacity-type": "spot",
    "eks.amazonaws.com/capacityType": "SPOT",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
_CHIP_LIKE = re.compile(r"(?:^|[./-])(?:gpu|tpu|neuron(?:core|device)?|mig-\d)", re.I)
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII only: str.isdigit() accepts '²' and other scripts' digits
JOB_KINDS = {"Job", "CronJob", "JobSet", "RayJob"}


def is_manifest(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str)


class _Doc:
    def __init__(self, doc: Document, index: NameIndex) -> None:
        self.doc, self.index = doc, index

    def at(self, loc: KeyPath) -> Any:
        node: Any = self.doc.data
        for part in loc:
            if (isinstance(node, dict) and part in node) or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
                node = node[part]
            else:
                return None
        return node

    def fail(self, loc: KeyPath, message: str) -> InputError:
        return InputError([self.doc.problem(loc, f"{'.'.join(str(p) for p in loc)}: {message}")])

    def mapping(self, loc: KeyPath) -> dict[str, Any]:
        v = self.at(loc)
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.fail(loc, "expected a mapping")
        return v

    def seq(self, loc: KeyPath) -> list[Any]:
        v = self.at(loc)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(loc, "expected a list")
        return v

    def count(self, loc: KeyPath, req: Request | None = None, default: int | None = None) -> int | None:
        """A whole number (Kubernetes quantities may be strings such as "8"); a leftover
        template placeholder is unresolved, anything else of the wrong type is an input error."""
        v = self.at(loc)
        if v is None:
            return default
        if isinstance(v, str) and is_placeholder(v):
            if req is not None:
                req.unresolved.append((".".join(str(p) for p in loc), v[:80], self.doc.where(loc)))
            return None
        if isinstance(v, str) and _DIGITS.fullmatch(v.strip()):
            v = int(v.strip())
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(loc, f"expected a whole number, got {v!r}"[:200])
        if v < 0 or v > 10_000_000:
            raise self.fail(loc, f"{v} is out of range (0..10000000)")
        return v


def _selectors(d: _Doc, pod: KeyPath) -> dict[str, tuple[str, KeyPath]]:
    """nodeSelector labels and required node-affinity ``In`` terms: label -> (value, where)."""
    out: dict[str, tuple[str, KeyPath]] = {}
    sel = d.mapping((*pod, "nodeSelector"))
    for k, v in sel.items():
        if isinstance(k, str) and isinstance(v, (str, int, bool)):
            out[k] = (str(v).lower() if isinstance(v, bool) else str(v), (*pod, "nodeSelector", k))
    req_loc = (*pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    terms = d.at(req_loc)
    if isinstance(terms, list):
        for ti, term in enumerate(terms[:1]):
            exprs = term.get("matchExpressions") if isinstance(term, dict) else None
            for ei, e in enumerate(exprs if isinstance(exprs, list) else []):
                if (
                    isinstance(e, dict)
                    and e.get("operator") == "In"
                    and isinstance(e.get("key"), str)
                    and isinstance(e.get("values"), list)
                    and e["values"]
                ):
                    out.setdefault(e["key"], (str(e["values"][0]), (*req_loc, ti, "matchExpressions", ei, "values", 0)))
    return out


def _container_chips(d: _Doc, loc: KeyPath, req: Request, res_key: str = "resources") -> tuple[int, str | None, KeyPath | None]:
    """Chips one container asks for (limits, else requests); -1 when a placeholder leaves it unknown."""
    for section in ("limits", "requests"):
        sec = (*loc, res_key, section)
        res = d.mapping(sec)
        names = [n for n in CHIP_RESOURCES if n in res] + sorted(
            k for k in res if isinstance(k, str) and k not in CHIP_RESOURCES and _CHIP_LIKE.search(k)
        )
        if not names:
            continue
        total, where = 0, None
        for name in names:
            n = d.count((*sec, name), req)
            if n is None and req.unresolved:
                return -1, name, (*sec, name)
            total += n or 0
            where = where or (*sec, name)
        return total, names[0], where
    d.mapping((*loc, res_key))
    return 0, None, None


def _pod_chips(
    d: _Doc, pod: KeyPath, req: Request, containers: list[tuple[KeyPath, str]] | None = None
) -> tuple[int, str | None, KeyPath | None]:
    """Accelerator chips one pod asks for: its containers and sidecars (init containers with
    ``restartPolicy: Always``) summed, or its largest init container if that is more (the
    Kubernetes effective request). ``containers``: container-like blocks of a custom resource
    (KServe's model, NIMService's spec, TrainJob's trainer) instead of the pod's containers."""
    total, resource, where = 0, None, None
    init_max, nonzero = 0, False
    if containers is not None:
        for loc, res_key in containers:
            d.mapping(loc)
            n, name, at = _container_chips(d, loc, req, res_key)
            if n < 0:
                return -1, name, at
            if name is not None:
                total += n
                if resource is None or (n > 0 and not nonzero):
                    resource, where, nonzero = name, at, n > 0
        return total, resource, where
    for key in ("containers", "initContainers"):
        for ci, c in enumerate(d.seq((*pod, key))):
            if not isinstance(c, dict):
                raise d.fail((*pod, key, ci), "expected a mapping")
            n, name, at = _container_chips(d, (*pod, key, ci), req)
            if n < 0:
                return -1, name, at
            if name is None:
                continue
            if key == "initContainers" and c.get("restartPolicy") != "Always":
                init_max = max(init_max, n)
            else:
                total += n
            if resource is None or (n > 0 and not nonzero):
                resource, where, nonzero = name, at, n > 0
    if init_max > total:
        total = init_max
    return total, resource, where


def _pod_request(d: _Doc, pod: KeyPath, req: Request, containers: list[tuple[KeyPath, str]] | None = None) -> bool:
    """Fill accelerator, chips per pod, pricing and region from one pod spec; False if it asks for none."""
    if d.at(pod) is None:
        return False
    d.mapping(pod)
    chips, resource, where = _pod_chips(d, pod, req, containers)
    if not resource:
        return False
    if where is not None:
        req.where["count"] = d.doc.where(where)
    sels = _selectors(d, pod)
    hw: Hardware | None = None
    for label in TYPE_LABELS:
        if label in sels:
            value, loc = sels[label]
            if is_placeholder(value):
                req.unresolved.append((label, value[:80], d.doc.where(loc)))
                break
            hw = d.index.lookup(value)
            req.set_hardware(value, hw)
            req.where["accelerator"] = d.doc.where(loc)
            req.cloud = clouds.by_kubernetes_label(label) or req.cloud
            break
    if hw is None and not req.unresolved:
        req.unknown = (
            f"the pod asks for {resource} but names no accelerator type "
            f"(no {TYPE_LABELS[1]}, gke-tpu-accelerator or instance-type selector)"
        )
        req.hardware = resource
    if chips >= 0:
        req.count = chips
    topo = sels.get("cloud.google.com/gke-tpu-topology")
    if topo is not None and not is_placeholder(topo[0]):
        req.topology_chips = topology_chips(topo[0])
        req.topology = topo[0]
        if req.topology_chips is None:
            raise d.fail(topo[1], f"{topo[0][:40]!r} is not a TPU topology such as 2x4 or 4x4x4")
    for label, value in SPOT_LABELS.items():
        if label in sels and sels[label][0].lower() == value.lower():
            req.pricing = "spot"
    if "cloud.google.com/reservation-name" in sels:
        req.pricing = "reservation"
    if "cloud.google.com/compute-class" in sels:
        req.notes.append(
            f"compute class {sels['cloud.google.com/compute-class'][0]!r}: its priorities decide spot / on-demand; read as on-demand"
        )
    for label in ("topology.kubernetes.io/region", "topology.kubernetes.io/zone"):
        if label in sels:
            zone = sels[label][0]
            req.region = zone if label.endswith("region") else "-".join(zone.split("-")[:2])
            break
    return True


def _link(d: _Doc, *metas: KeyPath) -> str | None:
    for meta in metas:
        for section in ("annotations", "labels"):
            m = d.at((*meta, section))
            if isinstance(m, dict):
                for k in LINK_KEYS:
                    if isinstance(m.get(k), str):
                        return str(m[k])
    return None


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
    out = Parsed("kubernetes")
    for doc in _manifests(docs):
        d = _Doc(doc, index)
        kind = doc.data["kind"]
        meta = d.mapping(("metadata",))
        name = (
            str(meta["name"])
            if isinstance(meta.get("name"), str)
            else (str(meta["generateName"]) + "*" if isinstance(meta.get("generateName"), str) else "?")
        )
        ns = str(meta["namespace"]) if isinstance(meta.get("namespace"), str) else "default"
        if kind == "HorizontalPodAutoscaler":
            ref = d.mapping(("spec", "scaleTargetRef"))
            if isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str):
                lo = d.count(("spec", "minReplicas"), default=1)
                lo = 1 if lo is None else lo
                hi = d.count(("spec", "maxReplicas"), default=lo)
                out.autoscalers.append(
                    Autoscaler(
                        (str(ref["kind"]), ns, str(ref["name"])), lo, hi if hi is not None else lo, doc.where(("spec", "maxReplicas"))
                    )
                )
            continue
        if kind in CAPACITY_KINDS:
            note = _capacity_note(d, kind, name)
            if note:
                out.notes.append(note)
            continue
        made: list[tuple[Part, Request]] = []
        for part in _templates(d, kind):
            line, col = doc.where(("metadata", "name")) if "name" in meta else doc.start
            address = f"{kind}/{ns}/{name}" + (f"/{part.name}" if part.name else "")
            req = Request(doc.path, "kubernetes", address, line, col, scope=ns, target=(str(kind), ns, name))
            if part.pods <= 0 or not _pod_request(d, part.pod, req, part.containers):
                continue
            req.always_on = kind not in JOB_KINDS
            per_pod = req.count
            if per_pod is not None:
                req.count = per_pod * part.pods
            topo_chips = req.topology_chips
            if topo_chips and req.count is not None and req.count != topo_chips:
                if (
                    per_pod is not None
                    and per_pod
                    and topo_chips % per_pod == 0
                    and part.pods == 1
                    and kind in ("Deployment", "StatefulSet", "Pod", "ReplicaSet")
                ):
                    req.shape_problems.append(
                        f"{per_pod} chips per pod on a {req.topology} slice ({topo_chips} chips): a multi-host slice needs "
                        f"{topo_chips // per_pod} pods per replica (JobSet / LeaderWorkerSet)"
                    )
                else:
                    req.shape_problems.append(
                        f"{part.pods} pod(s) x {per_pod} chips = {req.count}, but topology {req.topology} has {topo_chips} chips"
                    )
            if topo_chips and per_pod:
                req.hosts = max(1, topo_chips // per_pod)
            elif part.pods > 1:
                req.hosts = part.pods
            req.replicas_min, req.replicas_max = part.reps
            if part.where is not None:
                req.where["replicas"] = doc.where(part.where)
            req.link = _link(d, ("metadata",), (*part.pod[:-1], "metadata"))
            for meta_loc in (("metadata",), (*part.pod[:-1], "metadata")):
                value = d.at((*meta_loc, "annotations", WAIVE_ANNOTATION))
                if isinstance(value, str):
                    at = doc.where((*meta_loc, "annotations", WAIVE_ANNOTATION))
                    req.waivers += [(w, at) for w in waiver_lines(value)]
                    break
            req.notes += part.notes
            made.append((part, req))
        out.requests += _groups(made)
    return out


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
            if req.topology_chips and req.count != req.topology_chips:
                req.shape_problems.append(
                    f"{req.hosts} pod(s) per group = {req.count} chips, but topology {req.topology} has {req.topology_chips} chips"
                )
            elif req.topology_chips and req.count:
                req.hosts = max(1, req.hosts)
            leaders.pop(part.group, None)
        out.append(req)
    out += leaders.values()  # a leader without chip-asking workers
    return out


CAPACITY_KINDS = {"ComputeClass", "ResourceFlavor", "ClusterQueue", "LocalQueue", "ProvisioningRequest"}


def _capacity_note(d: _Doc, kind: str, name: str) -> str | None:
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
                found += [str(r) for r in g["coveredResources"] if isinstance(r, str) and (r in CHIP_RESOURCES or _CHIP_LIKE.search(r))]
    if not found:
        return None
    return (
        f"{kind} {name} names {', '.join(dict.fromkeys(found))}: capacity it allows, not a request (counted where a workload asks for it)"
    )


@dataclass
class Part:
    """One pod template of a workload: where its pod spec is, pods per replica, replicas (min, max)."""

    name: str
    pod: KeyPath
    pods: int
    reps: tuple[int | None, int | None]
    where: KeyPath | None = None
    containers: list[tuple[KeyPath, str]] | None = None  # container-like blocks of a custom resource
    notes: list[str] = field(default_factory=list)
    group: str = ""  # leader / workers of one group (LeaderWorkerSet, multi-node serving)
    role: str = ""


REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
                 "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "MXJob": "mxReplicaSpecs"}
KSERVE_FRAMEWORKS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle")
JOB_KINDS |= set(REPLICA_SPECS) | {"TrainJob"}


def _templates(d: _Doc, kind: str) -> list[Part]:
    """The pod templates of one workload, each with its pods per replica and replicas (min, max)."""
    if kind == "Pod":
        return [Part("", ("spec",), 1, (1, 1))]
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        n = d.count(("spec", "replicas"), default=1)
        return [Part("", ("spec", "template", "spec"), 1, (n, n), ("spec", "replicas"))]
    if kind == "Job":
        n = d.count(("spec", "parallelism"), default=1)
        return [Part("", ("spec", "template", "spec"), 1, (n, n), ("spec", "parallelism"))]
    if kind == "CronJob":
        n = d.count(("spec", "jobTemplate", "spec", "parallelism"), default=1)
        return [Part("", ("spec", "jobTemplate", "spec", "template", "spec"), 1, (n, n))]
    if kind == "JobSet":
        out: list[Part] = []
        for i, rj in enumerate(d.seq(("spec", "replicatedJobs"))):
            base: KeyPath = ("spec", "replicatedJobs", i)
            if not isinstance(rj, dict):
                raise d.fail(base, "expected a mapping")
            reps = d.count((*base, "replicas"), default=1)
            par = d.count((*base, "template", "spec", "parallelism"), default=1)
            name = rj.get("name") if isinstance(rj.get("name"), str) else str(i)
            out.append(
                Part(
                    str(name), (*base, "template", "spec", "template", "spec"), 1 if par is None else par, (reps, reps), (*base, "replicas")
                )
            )
        return out
    if kind == "LeaderWorkerSet":
        return _lws(d)
    if kind in ("RayCluster", "RayService", "RayJob"):
        return _ray(d, kind)
    if kind in REPLICA_SPECS:
        return _replica_specs(d, kind)
    if kind == "TrainJob":
        n = d.count(("spec", "trainer", "numNodes"), default=1)
        sel: KeyPath = (
            ("spec", "podSpecOverrides", 0)
            if d.at(("spec", "podSpecOverrides")) is not None
            else ("spec", "podTemplateOverrides", 0, "spec")
        )
        return [
            Part(
                "trainer",
                sel,
                1 if n is None else n,
                (1, 1),
                ("spec", "trainer", "numNodes"),
                containers=[(("spec", "trainer"), "resourcesPerNode")],
                notes=["TrainJob: chips from trainer.resourcesPerNode x numNodes (the runtime's own defaults are not read)"],
            )
        ]
    if kind == "InferenceService":
        return _kserve(d)
    if kind == "LLMInferenceService":
        return _llmisvc(d)
    if kind == "NIMService":
        return _nim(d)
    return []


def _lws(d: _Doc) -> list[Part]:
    """LeaderWorkerSet: ``size`` pods per group, the leader one of them. With a leaderTemplate the
    leader is its own part (a leader that asks for no chips is not a chip shape) and the workers
    are size - 1; without, every pod of the group is the worker template."""
    reps = d.count(("spec", "replicas"), default=1)
    size = d.count(("spec", "leaderWorkerTemplate", "size"), default=1)
    size = 1 if size is None else size
    base: KeyPath = ("spec", "leaderWorkerTemplate")
    worker: KeyPath = (*base, "workerTemplate", "spec")
    if d.at((*base, "leaderTemplate")) is not None:
        return [Part("leader", (*base, "leaderTemplate", "spec"), 1, (reps, reps), ("spec", "replicas"), group="lws", role="leader"),
                Part("workers", worker, size - 1, (reps, reps), ("spec", "replicas"), group="lws", role="workers")]
    return [Part("", worker, size, (reps, reps), ("spec", "replicas"))]


def _ray(d: _Doc, kind: str) -> list[Part]:
    """KubeRay: worker groups run ``replicas`` x ``numOfHosts`` pods; minReplicas / maxReplicas
    apply only when the cluster enables in-tree autoscaling (otherwise KubeRay keeps ``replicas``)."""
    roots: dict[str, KeyPath] = {"RayCluster": ("spec",), "RayService": ("spec", "rayClusterConfig"), "RayJob": ("spec", "rayClusterSpec")}
    root = roots[kind]
    auto = d.at((*root, "enableInTreeAutoscaling")) is True
    out = [Part("head", (*root, "headGroupSpec", "template", "spec"), 1, (1, 1))]
    for i, g in enumerate(d.seq((*root, "workerGroupSpecs"))):
        wbase: KeyPath = (*root, "workerGroupSpecs", i)
        if not isinstance(g, dict):
            raise d.fail(wbase, "expected a mapping")
        if g.get("suspend") is True:
            continue
        reps = d.count((*wbase, "replicas"), default=None)
        lo = d.count((*wbase, "minReplicas"), default=0)
        hi = d.count((*wbase, "maxReplicas"), default=None)
        notes = []
        if auto:
            lo = 0 if lo is None else lo
            hi = hi if hi is not None else max(lo, reps or 0)
            notes.append(f"in-tree autoscaling: {lo}..{hi} replicas (minReplicas..maxReplicas)")
        else:
            n = reps if reps is not None else (lo or 0)
            lo = hi = n
        hosts = d.count((*wbase, "numOfHosts"), default=1)
        name = g.get("groupName") if isinstance(g.get("groupName"), str) else str(i)
        out.append(
            Part(
                str(name),
                (*wbase, "template", "spec"),
                1 if hosts is None else hosts,
                (lo, hi),
                (*wbase, "maxReplicas" if auto and "maxReplicas" in g else "replicas"),
                notes=notes,
            )
        )
    return out


def _replica_specs(d: _Doc, kind: str) -> list[Part]:
    """Kubeflow training jobs: one part per replica type (Master, Worker, Launcher, Chief, PS...);
    a PyTorchJob's elasticPolicy min/max replaces the workers' count."""
    key = REPLICA_SPECS[kind]
    specs = d.mapping(("spec", key))
    out = []
    elastic = d.mapping(("spec", "elasticPolicy"))
    for role in specs:
        base: KeyPath = ("spec", key, role)
        d.mapping(base)
        n = d.count((*base, "replicas"), default=1)
        reps: tuple[int | None, int | None] = (1, 1)
        pods = 1 if n is None else n
        notes = []
        if kind == "PyTorchJob" and str(role).lower() == "worker" and elastic:
            lo = d.count(("spec", "elasticPolicy", "minReplicas"), default=pods)
            hi = d.count(("spec", "elasticPolicy", "maxReplicas"), default=pods)
            pods, reps = 1, (lo, hi)
            notes.append("elasticPolicy: workers minReplicas..maxReplicas")
        out.append(Part(str(role), (*base, "template", "spec"), pods, reps, (*base, "replicas"), notes=notes))
    return out


def _kserve(d: _Doc) -> list[Part]:
    """KServe InferenceService: each component (predictor, transformer, explainer) is a pod spec
    with its model / framework container; minReplicas (default 1; 0 scales to zero) ..
    maxReplicas. A predictor's workerSpec adds pipelineParallelSize - 1 worker pods."""
    out = []
    for comp in ("predictor", "transformer", "explainer"):
        base: KeyPath = ("spec", comp)
        block = d.mapping(base)
        if not block:
            continue
        lo = d.count((*base, "minReplicas"), default=1)
        hi = d.count((*base, "maxReplicas"), default=None)
        lo = 1 if lo is None else lo
        hi = hi if hi else max(lo, 1)
        containers: list[tuple[KeyPath, str]] = [((*base, f), "resources") for f in KSERVE_FRAMEWORKS if isinstance(block.get(f), dict)]
        containers += [((*base, "containers", i), "resources") for i, _ in enumerate(d.seq((*base, "containers")))]
        where = (*base, "maxReplicas") if "maxReplicas" in block else (*base, "minReplicas") if "minReplicas" in block else None
        out.append(
            Part(
                comp,
                base,
                1,
                (lo, hi),
                where,
                containers=containers,
                group=comp if d.at((*base, "workerSpec")) is not None else "",
                role="leader",
            )
        )
        worker = d.mapping((*base, "workerSpec"))
        if worker:
            pp = d.count((*base, "workerSpec", "pipelineParallelSize"), default=2)
            wc = [((*base, "workerSpec", "containers", i), "resources") for i, _ in enumerate(d.seq((*base, "workerSpec", "containers")))]
            out.append(
                Part(
                    f"{comp}-workers",
                    (*base, "workerSpec"),
                    max(0, (pp or 1) - 1),
                    (lo, hi),
                    where,
                    containers=wc,
                    group=comp,
                    role="workers",
                )
            )
    return out


def _llmisvc(d: _Doc) -> list[Part]:
    """KServe LLMInferenceService: ``template`` (decode) pods x ``replicas``; with ``worker`` a
    LeaderWorkerSet of data / dataLocal pods per replica (the template the leader, the worker
    template the rest); ``prefill`` the same again with its own replicas."""
    out: list[Part] = []
    for prefix, label in (((), ""), (("prefill",), "prefill")):
        base: KeyPath = ("spec", *prefix)
        if prefix and not d.mapping(base):
            continue
        n = d.count((*base, "replicas"), default=1)
        par = d.mapping((*base, "parallelism")) or d.mapping(("spec", "parallelism"))
        data, local = par.get("data"), par.get("dataLocal")
        size = data // local if isinstance(data, int) and isinstance(local, int) and local > 0 and data >= local else 1
        has_template = d.at((*base, "template")) is not None
        if has_template:
            out.append(Part(label, (*base, "template"), 1, (n, n), (*base, "replicas"), group=label or "decode", role="leader"))
        if d.at((*base, "worker")) is not None:
            workers = size - 1 if has_template else size
            out.append(
                Part(
                    f"{label}-workers" if label else "workers",
                    (*base, "worker"),
                    workers,
                    (n, n),
                    (*base, "replicas"),
                    group=label or "decode",
                    role="workers",
                )
            )
    return out


def _nim(d: _Doc) -> list[Part]:
    """NVIDIA NIMService: spec.resources per pod x spec.replicas (spec.scale.hpa min..max when
    scale.enabled); multiNode runs parallelism.pipeline pods per replica."""
    n = d.count(("spec", "replicas"), default=1)
    reps: tuple[int | None, int | None] = (n, n)
    where: KeyPath = ("spec", "replicas")
    if d.at(("spec", "scale", "enabled")) is True:
        lo = d.count(("spec", "scale", "hpa", "minReplicas"), default=1)
        hi = d.count(("spec", "scale", "hpa", "maxReplicas"), default=lo)
        reps, where = (lo, hi), ("spec", "scale", "hpa", "maxReplicas")
    pods = 1
    multi = d.mapping(("spec", "multiNode"))
    if multi:
        pp = d.count(("spec", "multiNode", "parallelism", "pipeline"), default=None)
        size = d.count(("spec", "multiNode", "size"), default=None)
        pods = pp or size or 1
    return [Part("", ("spec",), pods, reps, where, containers=[(("spec",), "resources")])]
