"""One pod spec of a Kubernetes manifest: the accelerator chips its containers ask for (limits,
else requests; sidecars and init containers counted as Kubernetes counts them), the hardware its
node selectors and required node affinity name, Spot or reservation pricing, the region, and the
link to a workload profile. Read through :class:`ManifestDoc`, a manifest's values by key path
with their positions: whole numbers are checked, and a leftover template placeholder is reported
as unresolved, never guessed.
"""

from __future__ import annotations

import re
from typing import Any

from advisor import clouds
from advisor.check.infra import dra
from advisor.check.infra.dra import Claim
from advisor.check.infra.model import Request, is_placeholder, value_at
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
CHIP_LIKE = re.compile(r"(?:^|[./-])(?:gpu|tpu|neuron(?:core|device)?|mig-\d|gaudi)", re.I)
# quantities a device plugin schedules besides the devices (HAMi's gpumem / gpucores, a memory or core
# share): not chips, so never added to the count (nvidia.com/gpu: 2 with gpumem: 1024 is 2 GPUs)
NOT_DEVICES = re.compile(r"(?:mem|memory|cores?|percentage|util)(?:$|[-_.])", re.I)
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII only: str.isdigit() accepts '²' and other scripts' digits


class ManifestDoc:
    """One manifest and the name index: its values by key path, typed, a wrong one an input error at
    its position."""

    def __init__(self, doc: Document, index: NameIndex, claims: dict[tuple[str, str, str], Claim] | None = None,
                 namespace: str = "default") -> None:
        self.doc, self.index = doc, index
        self.claims, self.namespace = claims or {}, namespace  # DRA claims of the files read together; the object's namespace
        # count fields read without a request at hand (replicas, parallelism, sizes) that hold a template
        # placeholder: (where, field, value, position), handed to the requests of the pod templates they scale
        self.placeholders: list[tuple[KeyPath, str, str, tuple[int, int]]] = []

    def at(self, loc: KeyPath) -> Any:
        return value_at(self.doc.data, loc)

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
            item = (".".join(str(p) for p in loc), v[:80], self.doc.where(loc))
            if req is not None:
                req.unresolved.append(item)
            else:
                self.placeholders.append((loc, *item))
            return None
        if isinstance(v, str) and _DIGITS.fullmatch(v.strip()):
            v = int(v.strip())
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(loc, f"expected a whole number, got {v!r}"[:200])
        if v < 0 or v > 10_000_000:
            raise self.fail(loc, f"{v} is out of range (0..10000000)")
        return v


def _selectors(d: ManifestDoc, pod: KeyPath) -> dict[str, tuple[str, KeyPath]]:
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


def _affinity_others(d: ManifestDoc, pod: KeyPath, label: str) -> list[str]:
    """The values after the first of a required node-affinity ``In`` term on ``label`` (nodes of any of them may
    take the pod) and of its further selector terms (ORed): what the pod may be scheduled onto besides the first."""
    req_loc = (*pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    terms = d.at(req_loc)
    seen: list[str] = []
    for term in terms[:16] if isinstance(terms, list) else []:
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        for e in exprs if isinstance(exprs, list) else []:
            if isinstance(e, dict) and e.get("operator") == "In" and e.get("key") == label and isinstance(e.get("values"), list):
                # distinct values first, then the bound: a list padded with one value hides none after it
                seen += list(dict.fromkeys(str(v)[:80] for v in e["values"][:10_000] if isinstance(v, (str, int))))[:64]
    return list(dict.fromkeys(seen))[1:]


# node-affinity terms read (ORed: the pod may land on the nodes of any); more are not read, and the hardware is unknown
MAX_AFFINITY_TERMS = 64


def _fixed_by_node_selector(d: ManifestDoc, pod: KeyPath, label: str) -> bool:
    """Whether the pod's nodeSelector names its type on ``label`` (every node it lands on has it, whatever the affinity)."""
    sel = d.mapping((*pod, "nodeSelector"))
    return isinstance(sel.get(label), (str, int, bool))


def _term_types(d: ManifestDoc, pod: KeyPath) -> tuple[list[str], str | None]:
    """The accelerator types every further required node-affinity term (ORed with the first, which _selectors reads)
    names with ``In`` on a type label, and why the hardware is unknown where a term may place the pod on any type (it
    constrains no type label with ``In``: Exists, NotIn, other labels only) or there are more terms than are read."""
    req_loc = (*pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    terms = d.at(req_loc)
    if not isinstance(terms, list) or len(terms) < 2:
        return [], None
    if len(terms) > MAX_AFFINITY_TERMS:
        return [], f"node affinity has {len(terms)} selector terms (ORed; more than {MAX_AFFINITY_TERMS} are not read)"
    seen: list[str] = []
    for ti, term in enumerate(terms[1:], start=2):
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        typed = [e for e in (exprs if isinstance(exprs, list) else []) if isinstance(e, dict) and e.get("key") in TYPE_LABELS
                 and e.get("operator") == "In" and isinstance(e.get("values"), list) and e["values"]]
        if not typed:
            return [], f"node-affinity term {ti} may place the pod on nodes of any accelerator type (no In on a type label)"
        seen += list(dict.fromkeys(str(v)[:80] for v in typed[0]["values"][:10_000] if isinstance(v, (str, int))))[:64]
    return list(dict.fromkeys(seen)), None


def _container_chips(d: ManifestDoc, loc: KeyPath, req: Request, res_key: str = "resources") -> tuple[int, str | None, KeyPath | None]:
    """Chips one container asks for (limits, else requests); -1 when a placeholder leaves it unknown."""
    if res_key.startswith("spark.") and res_key.endswith(".resource.gpu.amount"):  # a Spark conf's GPUs per pod
        vendor = d.mapping(loc).get(res_key.removesuffix(".amount") + ".vendor")
        n = d.count((*loc, res_key), req)
        # the vendor names the device plugin's domain (nvidia.com): the pod asks for VENDOR/gpu
        name = (vendor if "/" in vendor else f"{vendor}/gpu") if isinstance(vendor, str) and vendor.strip() else "nvidia.com/gpu"
        return (-1, name, (*loc, res_key)) if n is None else (n, name, (*loc, res_key))
    if res_key == "gpu":  # a Spark pod's GPUSpec (name, quantity): the one resource it asks for
        name = d.at((*loc, "gpu", "name"))
        if d.at((*loc, "gpu")) is None:
            return 0, None, None
        if not isinstance(name, str) or is_placeholder(name):
            req.unresolved.append((".".join(map(str, (*loc, "gpu", "name"))), str(name)[:60], d.doc.where((*loc, "gpu"))))
            return -1, str(name)[:80], (*loc, "gpu")
        known = len(req.unresolved)
        n = d.count((*loc, "gpu", "quantity"), req)
        if n is None and len(req.unresolved) == known:  # absent (a placeholder is unresolved already)
            req.unresolved.append((".".join(map(str, (*loc, "gpu", "quantity"))), "(none)", d.doc.where((*loc, "gpu"))))
        if n is None:
            return -1, name, (*loc, "gpu")
        return n, name, (*loc, "gpu", "quantity")
    for section in ("limits", "requests"):
        sec = (*loc, res_key, section) if res_key else (*loc, section)  # "": the mapping holds limits itself
        res = d.mapping(sec)
        names = [n for n in CHIP_RESOURCES if n in res] or sorted(
            k for k in res if isinstance(k, str) and CHIP_LIKE.search(k) and not NOT_DEVICES.search(k.rsplit("/", 1)[-1])
        )
        unnamed = [k for k in res if isinstance(k, str) and is_placeholder(k)]
        if not names and unnamed:
            # fail closed: a resource whose name is a placeholder (`${GPU_RESOURCE}: 8`, a Helm `tpl` of a value) may be
            # any device; what it asks for is not read, never taken for none
            req.unresolved.append((".".join(map(str, sec)), f"a resource named {unnamed[0][:60]}", d.doc.where((*sec, unnamed[0]))))
            return -1, unnamed[0], (*sec, unnamed[0])
        if not names:
            continue
        total, where = 0, None
        for name in names:
            if res.get(name) is None or (isinstance(res.get(name), str) and not res[name].strip()):
                # fail closed: an empty quantity (a values key rendered as nothing) is no zero
                req.unresolved.append((".".join(map(str, (*sec, name))), "(empty)", d.doc.where((*sec, name))))
                return -1, name, (*sec, name)
            n = d.count((*sec, name), req)
            if n is None and req.unresolved:
                return -1, name, (*sec, name)
            total += n or 0
            where = where or (*sec, name)
        return total, names[0], where
    d.mapping((*loc, res_key) if res_key else loc)
    return 0, None, None


def _pod_chips(
    d: ManifestDoc, pod: KeyPath, req: Request, containers: list[tuple[KeyPath, str]] | None = None
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


def _claimed(d: ManifestDoc, pod: KeyPath, req: Request, asks: bool) -> tuple[int, str | None, str | None]:
    """(accelerator devices, the resource they stand for, a model a selector names) of a pod's DRA claims
    (``resourceClaims``); -1 devices when a claim that does not fix its count, or one the file does not hold in a pod that
    asks for no accelerator otherwise, leaves them unknown (request-unresolved, with the reason). ``asks``: the pod asks
    for accelerators through extended resources (nvidia.com/gpu); a claim the file does not hold is then most likely its
    network devices or NVLink domain channel (an NVIDIA ComputeDomain's), said in a note, not counted."""
    total, resource, product = 0, None, None
    for i, entry in enumerate(d.seq((*pod, "resourceClaims"))):
        if not isinstance(entry, dict):
            raise d.fail((*pod, "resourceClaims", i), "expected a mapping")
        source = entry["source"] if isinstance(entry.get("source"), dict) else entry  # the alpha API's source: {...}
        for field, kind in (("resourceClaimTemplateName", "ResourceClaimTemplate"), ("resourceClaimName", "ResourceClaim")):
            name = source.get(field)
            if not isinstance(name, str):
                continue
            at = d.doc.where((*pod, "resourceClaims", i))
            claim = d.claims.get((kind, d.namespace, name))
            if claim is None and asks:
                req.notes.append(f"resourceClaims names {kind} {name}, which the file does not hold: its devices (network "
                                 "interfaces, an NVLink domain's channel) are not counted")
            elif claim is None:
                req.unresolved.append(("count-unknown", f"resourceClaims names {kind} {name}, which the files checked do not hold: "
                                       "the devices it allocates are not known; check it with the file that declares it", at))
                total, resource = -1, resource or "resource.k8s.io claim"
            elif claim.resource is not None:
                resource, product = resource or claim.resource, product or claim.product
                for model, n in claim.others:  # firstAvailable: the scheduler may allocate any alternative instead
                    hw = dra.product_hardware(d.index, model) if model else None
                    req.options.append((hw.accelerator if hw is not None and hw.known else None, n))
                    req.alternatives.append(model or "a device of the class")
                if claim.mig:
                    req.notes.append(f"{kind} {name}: {claim.mig}")
                if claim.mixed:
                    req.notes.append(f"{kind} {name} asks for devices of several models: all counted, judged on the model of the "
                                     "most devices, each other held to the policy")
                elif claim.others:
                    req.notes.append(f"{kind} {name} lists alternatives (firstAvailable): judged on the first, each other held to "
                                     "the policy")
                if claim.count is None:
                    req.unresolved.append(("count-unknown", f"{kind} {name} asks for every matching device (allocationMode: All) "
                                           "or a count it does not fix", at))
                    total = -1
                elif total >= 0:
                    total += claim.count
                if kind == "ResourceClaim":
                    req.notes.append(f"ResourceClaim {name} is shared by the pods that name it: counted per pod, an upper bound")
    return total, resource, product


# KAI Scheduler's GPU sharing: a pod asks for part of one GPU with an annotation, and no nvidia.com/gpu limit
# (NVIDIA/KAI-Scheduler docs/gpu-sharing: gpu-fraction "0.5" of a device's memory, or gpu-memory "2000" MiB of it)
KAI_SHARE_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# how many GPUs such a share spans (KAI's gpu-fraction-num-devices: that many devices, each at the fraction)
KAI_DEVICES_ANNOTATION = "gpu-fraction-num-devices"


def _shared_gpu(d: ManifestDoc, pod: KeyPath, req: Request) -> KeyPath | None:
    """Where a pod asks KAI Scheduler for a share of a GPU (KAI_SHARE_ANNOTATIONS on its metadata), or None: the pod
    holds part of one GPU, counted as one whole GPU (the pods of a workload may share one: an upper bound, said)."""
    if not pod or pod[-1] != "spec":
        return None
    meta = (*pod[:-1], "metadata", "annotations")
    annotations = d.at(meta)
    if not isinstance(annotations, dict):
        return None
    for key in KAI_SHARE_ANNOTATIONS:
        value = annotations.get(key)
        if value is None or str(value).strip() in ("", "0", "0.0"):
            continue
        req.notes.append(f"KAI Scheduler GPU sharing ({key}: {str(value)[:20]}): each pod holds part of one GPU, counted as "
                         "one whole GPU (pods may share a GPU: an upper bound)")
        return (*meta, key)
    return None


# a pod that selects a compute class whose priorities are not read here
CLASS_NOTE = "compute class {cls!r}: its priorities decide spot / on-demand; read as on-demand"


def pod_request(d: ManifestDoc, pod: KeyPath, req: Request, containers: list[tuple[KeyPath, str]] | None = None) -> bool:
    """Fill accelerator, chips per pod, pricing and region from one pod spec; False if it asks for none. With
    ``containers`` outside the pod (a TrainJob's trainer.resourcesPerNode), a kind whose pod spec is optional
    (no podSpecOverrides) is read from those alone."""
    if d.at(pod) is None and not containers:
        return False
    d.mapping(pod)
    chips, resource, where = _pod_chips(d, pod, req, containers)
    claimed, claimed_resource, product = _claimed(d, pod, req, asks=resource is not None)
    if claimed_resource:  # devices asked through Dynamic Resource Allocation claims
        chips = chips + claimed if chips >= 0 and claimed >= 0 else -1
        resource = resource or claimed_resource
    if resource and chips == 0 and not req.unresolved:
        # every container writes its accelerator resource as 0 (a CPU-only Ray head, a PyTorchJob master): the device
        # plugin gives it no device, so the pod asks for none (review 21, F7: unknown x 0 failed allowed_accelerators)
        return False
    if not resource:
        shared = _shared_gpu(d, pod, req)
        if shared is None:
            return False
        devices = (*shared[:-1], KAI_DEVICES_ANNOTATION)
        n = d.count(devices, req, default=1) if d.at(devices) is not None else 1
        chips, resource, where = (-1 if n is None else n), "nvidia.com/gpu", shared
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
            # the label's cloud (cloud.google.com/...), else the cloud the machine's name belongs to (g6.xlarge: EC2)
            req.cloud = clouds.by_kubernetes_label(label) or d.index.machine_cloud(value) or req.cloud
            others = [v for v in _affinity_others(d, pod, label) if v != value]
            open_term = None
            if not _fixed_by_node_selector(d, pod, label):
                # the type came from node affinity: its other terms (ORed) may place the pod elsewhere (review 29: a
                # second term naming a4-highgpu-8g passed a policy allowing H100 only)
                more, open_term = _term_types(d, pod)
                others = list(dict.fromkeys([*others, *(v for v in more if v != value)]))
            if others:  # the scheduler may place the pod on any of them: the policy holds for each
                req.alternatives = others
                req.options = [(d.index.lookup(v).accelerator, None) for v in others]
                req.notes.append(f"node affinity allows {', '.join([value, *others][:6])}: judged on {value}")
            if open_term is not None:  # any hardware: an unknown alternative, which no allowed list admits
                req.options = [*req.options, (None, None)]
                req.notes.append(f"{open_term}: judged on {value}")
            break
    if hw is None and product == dra.UNREAD:  # a selector on the model in a form not read (a negation, a list, an or)
        req.unknown = f"a DRA claim selects its devices with {dra.UNREAD} (a negation, a list or an alternative): the hardware is unknown"
        req.hardware = "DRA productName selector"
    elif hw is None and product and not req.unresolved:  # a DRA claim's CEL selector names the model
        hw = dra.product_hardware(d.index, product)
        req.set_hardware(product, hw)
    if hw is None and is_placeholder(resource):  # a resource whose name is not read: any device, never none
        req.unknown = f"the pod asks for a resource whose name is not read ({resource[:60]})"
        req.hardware = resource[:80]
    if hw is None and not req.unknown:
        # the hardware is unknown whether or not the count was read: a policy's allowed_accelerators and max_chips then
        # fail closed on it (review 27: `nvidia.com/gpu:` left empty, or "${NUM_GPUS}", with no selector read as no
        # hardware at all, and no policy limit applied)
        typed = any(fld in TYPE_LABELS for fld, _v, _p in req.unresolved)
        req.unknown = (
            f"the pod asks for {resource}, and the selector naming its type is not read (a value to render first)" if typed
            else f"the pod asks for {resource} but names no accelerator type "
                 f"(no {TYPE_LABELS[1]}, gke-tpu-accelerator or instance-type selector)"
        )
        req.hardware = resource
    if chips >= 0:
        req.count = chips
    topo = sels.get("cloud.google.com/gke-tpu-topology")
    if topo is not None and is_placeholder(topo[0]):  # the slice's size decides the chips: said, not guessed
        req.unresolved.append(("cloud.google.com/gke-tpu-topology", topo[0][:80], d.doc.where(topo[1])))
    elif topo is not None:
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
        cls, loc = sels["cloud.google.com/compute-class"]
        if hw is None and not is_placeholder(cls):  # a ComputeClass of the run may name the machines (judge)
            req.compute_class = (cls, d.doc.where(loc))
        else:
            req.notes.append(CLASS_NOTE.format(cls=cls))
    for label in ("topology.kubernetes.io/region", "topology.kubernetes.io/zone"):
        if label in sels:
            zone = sels[label][0]
            req.region = zone if label.endswith("region") else "-".join(zone.split("-")[:2])
            # every other value of a required In term: the pod may land there too, held to the policy's regions
            others = [v if label.endswith("region") else "-".join(v.split("-")[:2]) for v in _affinity_others(d, pod, label)]
            req.other_regions = [r for r in dict.fromkeys(others) if r != req.region]
            break
    return True


def workload_link(d: ManifestDoc, *metas: KeyPath) -> str | None:
    for meta in metas:
        for section in ("annotations", "labels"):
            m = d.at((*meta, section))
            if isinstance(m, dict):
                for k in LINK_KEYS:
                    if isinstance(m.get(k), str):
                        return str(m[k])
    return None
