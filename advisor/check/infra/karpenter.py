"""Karpenter node pools (``karpenter.sh`` NodePool, v1 and v1beta1; the older v1alpha5 Provisioner): the way an EKS or
AKS platform team lets the cluster buy GPU nodes by itself. Karpenter launches nodes for pending pods, among the instance
types the pool's requirements allow, until the pool's ``limits`` are reached
(https://karpenter.sh/docs/concepts/nodepools/): a GPU limit is a ceiling on what the pool may buy, read like an
autoscaling group's maximum (one group of that many chips, 0 to 1 of it, ``Request.cap``: no shape).

The hardware comes from the requirements whose operator is ``In``: instance types (``node.kubernetes.io/instance-type``,
Azure's ``karpenter.azure.com/sku-name``), instance families (``karpenter.k8s.aws/instance-family``, EKS Auto Mode's
``eks.amazonaws.com/instance-family``: the family's sizes in the name index) and GPU names
(``karpenter.k8s.aws/instance-gpu-name``, ``eks.amazonaws.com/instance-gpu-name``, ``karpenter.azure.com/sku-gpu-name``).
A pool that allows several accelerators is a request of unknown hardware (Karpenter picks at launch); a pool that only allows
accelerator machines but sets no accelerator limit is request-unresolved (nothing bounds it). A pool that names no
accelerator is no request: the pods that ask for chips are counted where they ask."""

from __future__ import annotations

from typing import Any

from advisor.check.infra.k8s_pod import ManifestDoc
from advisor.check.infra.model import Request
from advisor.check.infra.names import Hardware

TYPE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type", "karpenter.azure.com/sku-name")
# EKS Auto Mode's managed Karpenter takes the same requirements under its own prefix (eks.amazonaws.com/instance-family,
# instance-gpu-name: https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html, "EKS Auto Mode Supported Labels")
FAMILY_KEYS = ("karpenter.k8s.aws/instance-family", "karpenter.azure.com/sku-family", "eks.amazonaws.com/instance-family")
GPU_NAME_KEYS = ("karpenter.k8s.aws/instance-gpu-name", "karpenter.azure.com/sku-gpu-name",
                 "karpenter.k8s.aws/instance-accelerator-name", "eks.amazonaws.com/instance-gpu-name")
CAPACITY_KEY = "karpenter.sh/capacity-type"
# the extended resources a pool's limits cap in chips (a Neuron core is not a chip: its limit is said, not counted)
CHIP_LIMITS = ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "google.com/tpu")
MAX_VALUES = 1_000
# the provider's node class / label prefix
CLOUD_MARKS = (("aws", "karpenter.k8s.aws"), ("aws", "eks.amazonaws.com"), ("azure", "karpenter.azure.com"))


def is_nodepool(data: dict[str, Any]) -> bool:
    api = data.get("apiVersion")
    return isinstance(api, str) and api.split("/")[0] == "karpenter.sh" and data.get("kind") in ("NodePool", "Provisioner")


def _allowed(groups: list[dict[str, Hardware]]) -> dict[str, Hardware]:
    """The accelerators every requirement allows (Karpenter intersects them: gpu-name a100 with instance types p4d and p5 is
    p4d only); a requirement naming only hardware the catalog lacks (inf2) cannot be intersected and stands as it is."""
    known = [g for g in groups if any(hw.known for hw in g.values())]
    if not known:
        return {name: hw for g in groups for name, hw in g.items()}
    keep = set.intersection(*({hw.accelerator for hw in g.values() if hw.known} for g in known))
    first: dict[str | None, str] = {}
    for g in known:
        for name, hw in g.items():
            if hw.known:
                first.setdefault(hw.accelerator, name)
    if not keep:  # requirements that contradict each other: said as all they name, never guessed
        return {name: hw for g in known for name, hw in g.items()}
    return {first[a]: Hardware(a) for a in sorted(keep, key=str)}


def requests(d: ManifestDoc, address: str, at: tuple[int, int]) -> list[Request]:
    doc, index = d.doc, d.index
    v1alpha5 = doc.data.get("kind") == "Provisioner"
    reqs_at = ("spec", "requirements") if v1alpha5 else ("spec", "template", "spec", "requirements")
    limits_at = ("spec", "limits", "resources") if v1alpha5 else ("spec", "limits")
    req = Request(doc.path, "kubernetes", address, *at)
    ref = d.mapping(("spec", "nodeClassRef") if v1alpha5 else ("spec", "template", "spec", "nodeClassRef"))
    marks = [str(ref.get("group") or ref.get("apiVersion") or "")]  # the node class's group and the requirement keys
    groups: list[dict[str, Hardware]] = []  # per requirement, the accelerator names it allows (Karpenter takes all of them)
    cpu_too = False  # a requirement allows machines without accelerators too
    for i, item in enumerate(d.seq(reqs_at)):
        if not isinstance(item, dict):
            raise d.fail((*reqs_at, i), "expected a mapping")
        key, op = item.get("key"), item.get("operator")
        marks.append(str(key))
        values: list[Any] = item["values"] if isinstance(item.get("values"), list) else []
        if op != "In" or not isinstance(key, str):
            continue
        names = [str(v) for v in values[:MAX_VALUES] if isinstance(v, (str, int))]
        if key == CAPACITY_KEY:
            req.pricing = "spot" if names == ["spot"] else req.pricing
            continue
        if key not in TYPE_KEYS + FAMILY_KEYS + GPU_NAME_KEYS:
            continue
        allowed: dict[str, Hardware] = {}
        for name in names:
            got = index.lookup(name) if key in GPU_NAME_KEYS else index.instance_accelerator(name)
            if got is not None:
                allowed[name] = got
            else:
                cpu_too = True
        groups.append(allowed)
    found = _allowed(groups)
    req.cloud = next((c for c, mark in CLOUD_MARKS if any(mark in m for m in marks)), None)
    limits = d.mapping(limits_at)
    chips = [(k, d.count((*limits_at, k), req)) for k in CHIP_LIMITS if k in limits]
    if not found and not chips:
        return []
    if req.cloud is None and found:  # instance names say their cloud: p5.48xlarge (EC2), Standard_ND96isr_H100_v5 (Azure)
        req.cloud = index.machine_cloud(next(iter(found)))
    accs = {hw.accelerator for hw in found.values()}
    if len(found) and len(accs) == 1 and None not in accs:
        name = next(iter(found))
        req.set_hardware(name, found[name])
    elif found:
        req.hardware = ", ".join(list(found)[:4])
        unknown = [hw.reason for hw in found.values() if hw.reason]
        req.unknown = unknown[0] if len(accs) == 1 and unknown else (
            f"the pool allows {', '.join(list(found)[:4])}: Karpenter picks among them at launch"
        )
    else:
        req.hardware, req.unknown = None, "the pool caps accelerators but its requirements name none: Karpenter picks the machines"
    req.where["accelerator"] = doc.where(reqs_at) if d.at(reqs_at) is not None else at
    if chips:
        key, n = chips[0]
        req.where["count"] = doc.where((*limits_at, key))
        req.count, req.replicas_min, req.replicas_max, req.cap = n, 0, 1, True
        req.notes.append(
            f"a Karpenter node pool: it launches nodes for pending pods up to limits.{key} = {'?' if n is None else n} chips; "
            "read as one group of that maximum, priced at it"
            + (" (the pool also allows machines without accelerators)" if cpu_too else "")
        )
    else:
        req.count, req.replicas_min, req.replicas_max, req.cap = None, 0, 1, True
        req.unresolved.append(("count-unknown", f"{'.'.join(limits_at)}.nvidia.com/gpu is not set: nothing bounds how many "
                               "accelerators the pool buys (it launches whatever pending pods ask); set that limit", at))
        req.notes.append("a Karpenter node pool of accelerator machines without an accelerator limit: it buys whatever pending pods ask")
    return [req]
