"""Cluster API (``cluster.x-k8s.io``): how a platform team that runs its own Kubernetes clusters buys nodes from
Kubernetes objects. A MachineDeployment (or MachineSet) runs ``spec.replicas`` machines, a MachinePool a group of
them, each of the machine type its infrastructure template names through ``spec.template.spec.infrastructureRef``
(https://cluster-api.sigs.k8s.io/developer/architecture/controllers/machine-deployment): AWSMachineTemplate
``instanceType``, GCPMachineTemplate ``instanceType``, AzureMachineTemplate ``vmSize``, and the provider machine pools
(AWSMachinePool ``awsLaunchTemplate.instanceType`` with ``minSize`` / ``maxSize``, AzureMachinePool ``template.vmSize``).

The cluster autoscaler scales a MachineDeployment between the annotations
``cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size`` / ``-max-size``
(https://cluster-api.sigs.k8s.io/tasks/automated-machine-management/autoscaling): read as the replicas' range.

Each deployment is read as the node group of its cloud that it amounts to (EKS node group, GKE node pool, AKS node pool)
by that resource's plan reader. A template of accelerator machines that no deployment or pool of the same file names is a
request whose count is not read (fails closed under a limit): its deployment is elsewhere, and the gate does not guess it."""

from __future__ import annotations

from typing import Any

from advisor.check.infra import tfplan
from advisor.check.infra.model import Request, ascii_int, value_at
from advisor.check.infra.names import NameIndex
from advisor.yamlsrc import Document

GROUP = "cluster.x-k8s.io"
INFRA_GROUP = "infrastructure.cluster.x-k8s.io"
OWNERS = ("MachineDeployment", "MachineSet", "MachinePool")
MIN_ANNOTATION = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_ANNOTATION = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
# infrastructure kind -> (the cloud, the path of its machine type, the Terraform resource a group of them is read as)
TEMPLATES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "AWSMachineTemplate": ("aws", ("spec", "template", "spec", "instanceType"), "aws_eks_node_group"),
    "AWSMachinePool": ("aws", ("spec", "awsLaunchTemplate", "instanceType"), "aws_eks_node_group"),
    "AWSManagedMachinePool": ("aws", ("spec", "instanceType"), "aws_eks_node_group"),
    "GCPMachineTemplate": ("gcp", ("spec", "template", "spec", "instanceType"), "google_container_node_pool"),
    "GCPManagedMachinePool": ("gcp", ("spec", "machineType"), "google_container_node_pool"),
    "AzureMachineTemplate": ("azure", ("spec", "template", "spec", "vmSize"), "azurerm_kubernetes_cluster_node_pool"),
    "AzureMachinePool": ("azure", ("spec", "template", "vmSize"), "azurerm_kubernetes_cluster_node_pool"),
    "AzureManagedMachinePool": ("azure", ("spec", "sku"), "azurerm_kubernetes_cluster_node_pool"),
}
Key = tuple[str, str, str]  # (kind, namespace, name)


def _group(data: dict[str, Any]) -> str:
    return str(data.get("apiVersion") or "").split("/")[0]


def is_owner(data: dict[str, Any]) -> bool:
    return _group(data) == GROUP and data.get("kind") in OWNERS


def is_template(data: dict[str, Any]) -> bool:
    return _group(data) in (INFRA_GROUP, f"infrastructure.{GROUP}") and data.get("kind") in TEMPLATES


def key_of(doc: Document) -> Key:
    meta = doc.data.get("metadata") if isinstance(doc.data.get("metadata"), dict) else {}
    ns = str(meta["namespace"]) if isinstance(meta.get("namespace"), str) else "default"
    return str(doc.data.get("kind")), ns, str(meta.get("name"))


def _int(v: Any) -> int | None:
    """A size as Cluster API and the cluster autoscaler read it (strconv.Atoi: "+100" is 100), else None."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v if v >= 0 else None
    return ascii_int(v, plus=True) if isinstance(v, str) else None


Sizes = tuple[int | None, int | None, int | None]  # machines: desired, min, max


def _group_of(
    doc: Document, index: NameIndex, template: Document, address: str, at: tuple[int, int], sizes: Sizes, notes: tuple[str, ...],
) -> list[Request]:
    """``sizes`` (desired, min, max) machines of the type ``template`` names, read as its cloud's node group."""
    cloud, path, rtype = TEMPLATES[str(template.data.get("kind"))]
    machine = value_at(template.data, path)
    if not isinstance(machine, str) or index.instance_accelerator(machine) is None:
        return []
    desired, lo, hi = sizes
    if rtype == "aws_eks_node_group":
        after: dict[str, Any] = {"instance_types": [machine],
                                 "scaling_config": [{"desired_size": desired, "min_size": lo, "max_size": hi}]}
    elif rtype == "google_container_node_pool":
        after = {"node_count": desired, "node_config": [{"machine_type": machine}]}
        if hi is not None:
            after["autoscaling"] = [{"min_node_count": lo or 0, "max_node_count": hi}]
    else:
        after = {"vm_size": machine, "node_count": desired}
        if hi is not None:
            after.update(auto_scaling_enabled=True, min_count=lo or 0, max_count=hi)
    what = f"a Cluster API {doc.data.get('kind')} of {template.data.get('kind')} {machine} machines, read as {cloud}'s {rtype}"
    got = tfplan.read_as(doc.path, index, rtype, address, after, at, "kubernetes", None, (what, *notes))
    for req in got:
        req.cloud = req.cloud or cloud
        req.where["accelerator"] = template.where(path)
    return got


def requests(owner: Document, index: NameIndex, templates: dict[Key, Document], used: set[Key]) -> list[Request]:
    """The machines a MachineDeployment / MachineSet / MachinePool runs, where its infrastructure template is in ``templates``."""
    data = owner.data
    kind, ns, name = key_of(owner)
    ref = value_at(data, ("spec", "template", "spec", "infrastructureRef"))
    if not isinstance(ref, dict):
        return []
    key = (str(ref.get("kind")), str(ref.get("namespace") or ns), str(ref.get("name")))
    template = templates.get(key)
    if template is None:
        return []
    used.add(key)
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    notes: dict[str, Any] = meta["annotations"] if isinstance(meta.get("annotations"), dict) else {}
    replicas = value_at(data, ("spec", "replicas"))
    desired = _int(replicas) if replicas is not None else 1  # Cluster API's default of 1 replica
    lo, hi = _int(notes.get(MIN_ANNOTATION)), _int(notes.get(MAX_ANNOTATION))
    # a size written but not a number it reads: how many machines run is not known, never taken as absent (1)
    unread = [(f, raw) for f, raw, got in (("spec.replicas", replicas, desired), (MAX_ANNOTATION, notes.get(MAX_ANNOTATION), hi),
                                           (MIN_ANNOTATION, notes.get(MIN_ANNOTATION), lo)) if raw is not None and got is None]
    said: tuple[str, ...] = ()
    if kind == "MachinePool" and key[0] == "AWSMachinePool":
        for field, theirs in (("minSize", lo), ("maxSize", hi)):
            raw = value_at(template.data, ("spec", field))
            if theirs is None and raw is not None and _int(raw) is None:
                unread.append((f"{key[0]}.spec.{field}", raw))
        lo = _int(value_at(template.data, ("spec", "minSize"))) if lo is None else lo
        hi = _int(value_at(template.data, ("spec", "maxSize"))) if hi is None else hi
    if hi is not None:
        said = (f"scaled by the cluster autoscaler between {lo or 0} and {hi} machines: judged at {hi}",)
    if replicas is None and hi is None:
        said = ("no spec.replicas: Cluster API's default of 1",)
    at = owner.where(("metadata", "name")) if "name" in meta else owner.start
    got = _group_of(owner, index, template, f"{kind}/{ns}/{name}", at, (desired, lo, hi), said)
    for req in got:
        req.unresolved += [(f, str(raw)[:60], at) for f, raw in unread]
        if unread:  # the most machines it may run is not known: never judged at the sizes that were read
            req.replicas_max = None
    return got


def unowned(index: NameIndex, templates: dict[Key, Document], used: set[Key]) -> list[Request]:
    """A template of accelerator machines no deployment of the file names: a request whose count is not read."""
    out: list[Request] = []
    for key, template in templates.items():
        if key in used:
            continue
        meta = template.data.get("metadata") if isinstance(template.data.get("metadata"), dict) else {}
        at = template.where(("metadata", "name")) if "name" in meta else template.start
        got = _group_of(template, index, template, "/".join(key), at, (1, None, None), ())
        for req in got:
            req.count = None
            req.unresolved.append(("count-unknown", "a Cluster API machine template of accelerator machines whose MachineDeployment "
                                   "or MachinePool is not in this file: how many machines run it is not read here", at))
        out += got
    return out
