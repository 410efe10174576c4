"""Cloud resources declared as Kubernetes objects, the way a platform team's GitOps repository buys nodes without
Terraform: Config Connector (``*.cnrm.cloud.google.com``, the resource's arguments in ``spec``) and Crossplane's
Upjet providers (``*.upbound.io``, the Terraform resource's arguments in ``spec.forProvider``). Both are generated
from the Terraform providers' schemas with the argument names in camelCase, so each object is read by the Terraform
plan reader of the resource it stands for (KRM_TYPES), its arguments in snake_case, at the object's name. AWS
Controllers for Kubernetes and Azure Service Operator follow their cloud's API instead; where a field's name differs
from the Terraform argument (ASO's ``count``, Terraform's ``node_count``) KRM_RENAMES says so."""

from __future__ import annotations

import re
from typing import Any

from advisor.check.infra import tfplan
from advisor.check.infra.model import Request, is_placeholder
from advisor.check.infra.names import NameIndex
from advisor.yamlsrc import Document

# (API group, kind) -> the Terraform resource type whose reader reads it
KRM_TYPES: dict[tuple[str, str], str] = {
    ("container.cnrm.cloud.google.com", "ContainerNodePool"): "google_container_node_pool",
    ("container.cnrm.cloud.google.com", "ContainerCluster"): "google_container_cluster",
    ("compute.cnrm.cloud.google.com", "ComputeInstance"): "google_compute_instance",
    ("compute.cnrm.cloud.google.com", "ComputeInstanceTemplate"): "google_compute_instance_template",
    ("compute.cnrm.cloud.google.com", "ComputeReservation"): "google_compute_reservation",
    ("container.gcp.upbound.io", "NodePool"): "google_container_node_pool",
    ("container.gcp.upbound.io", "Cluster"): "google_container_cluster",
    ("compute.gcp.upbound.io", "Instance"): "google_compute_instance",
    ("compute.gcp.upbound.io", "InstanceTemplate"): "google_compute_instance_template",
    ("compute.gcp.upbound.io", "Reservation"): "google_compute_reservation",
    ("eks.aws.upbound.io", "NodeGroup"): "aws_eks_node_group",
    ("ec2.aws.upbound.io", "Instance"): "aws_instance",
    ("ec2.aws.upbound.io", "CapacityReservation"): "aws_ec2_capacity_reservation",
    ("sagemaker.aws.upbound.io", "EndpointConfiguration"): "aws_sagemaker_endpoint_configuration",
    ("batch.aws.upbound.io", "ComputeEnvironment"): "aws_batch_compute_environment",
    ("containerservice.azure.upbound.io", "KubernetesClusterNodePool"): "azurerm_kubernetes_cluster_node_pool",
    ("containerservice.azure.upbound.io", "KubernetesCluster"): "azurerm_kubernetes_cluster",
    ("compute.azure.upbound.io", "LinuxVirtualMachine"): "azurerm_linux_virtual_machine",
    ("compute.azure.upbound.io", "LinuxVirtualMachineScaleSet"): "azurerm_linux_virtual_machine_scale_set",
    # AWS Controllers for Kubernetes (https://aws-controllers-k8s.github.io/community/reference/): the EKS API's fields
    ("eks.services.k8s.aws", "Nodegroup"): "aws_eks_node_group",
    # Azure Service Operator v2 (https://azure.github.io/azure-service-operator/reference/containerservice/): the ARM fields
    ("containerservice.azure.com", "ManagedClustersAgentPool"): "azurerm_kubernetes_cluster_node_pool",
}
# where a format's field names differ from the Terraform argument its reader reads (after snake_case)
KRM_RENAMES: dict[tuple[str, str], dict[str, str]] = {
    ("containerservice.azure.com", "ManagedClustersAgentPool"): {"count": "node_count", "scale_set_priority": "priority"},
}

_CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(v: Any, depth: int = 0) -> Any:
    """Argument names in snake_case (``nodeConfig`` -> ``node_config``); keys that are no identifier (a label,
    ``nvidia.com/gpu``) kept as written."""
    if depth > 64:
        return None
    if isinstance(v, dict):
        return {(_HUMP.sub(r"_\1", k).lower() if isinstance(k, str) and _CAMEL.fullmatch(k) else k): _snake(x, depth + 1)
                for k, x in v.items()}
    if isinstance(v, list):
        return [_snake(x, depth + 1) for x in v]
    return v


def stands_for(data: dict[str, Any]) -> str | None:
    """The Terraform resource type a manifest declares, where it is a cloud resource KRM_TYPES knows."""
    group = str(data.get("apiVersion") or "").split("/")[0]
    return KRM_TYPES.get((group, str(data.get("kind") or "")))


def requests(doc: Document, index: NameIndex, rtype: str, address: str, at: tuple[int, int]) -> list[Request]:
    """The requests of one cloud-resource manifest: its arguments (``spec.forProvider`` for Crossplane, else ``spec``)
    read by ``rtype``'s plan reader as a resource to create; labels from ``metadata.labels`` where the arguments
    have none; the region from ``region`` / ``location`` / ``zone`` where the reader finds none."""
    spec = doc.data.get("spec") if isinstance(doc.data.get("spec"), dict) else {}
    args = spec.get("forProvider") if isinstance(spec.get("forProvider"), dict) else spec
    after = _snake(args)
    group_kind = (str(doc.data.get("apiVersion") or "").split("/")[0], str(doc.data.get("kind") or ""))
    for field, argument in KRM_RENAMES.get(group_kind, {}).items():
        if field in after and argument not in after:
            after[argument] = after.pop(field)
    meta = doc.data.get("metadata") if isinstance(doc.data.get("metadata"), dict) else {}
    for key in ("labels", "tags"):
        if isinstance(meta.get("labels"), dict) and not isinstance(after.get(key), dict):
            after[key] = meta["labels"]
    region = next((str(after[k]) for k in ("region", "location", "zone") if isinstance(after.get(k), str) and not is_placeholder(after[k])),
                  None)
    return tfplan.read_as(doc.path, index, rtype, address, after, at, "kubernetes", region,
                          (f"a cloud resource declared as a Kubernetes object, read as Terraform's {rtype}",))


EKSCTL_DEFAULT_NODES = 2  # eksctl's node count of a group that sets none of desiredCapacity / minSize / maxSize


def is_eksctl(data: dict[str, Any]) -> bool:
    return str(data.get("apiVersion") or "").startswith("eksctl.io/") and data.get("kind") == "ClusterConfig"


def eksctl_requests(doc: Document, index: NameIndex, address: str) -> list[Request]:
    """An eksctl ClusterConfig's node groups (``nodeGroups``, ``managedNodeGroups``), each read as the
    aws_eks_node_group it creates, in ``metadata.region``, at the group's name: ``instanceType`` /
    ``instanceTypes`` / ``instancesDistribution.instanceTypes``, ``desiredCapacity`` / ``minSize`` / ``maxSize``
    (eksctl's 2 nodes where none is set), ``spot: true`` or an all-spot ``instancesDistribution`` as spot."""
    data = doc.data
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    region = meta.get("region") if isinstance(meta.get("region"), str) and not is_placeholder(meta["region"]) else None
    out: list[Request] = []
    for key in ("nodeGroups", "managedNodeGroups"):
        groups = data.get(key)
        for i, g in enumerate(groups[:tfplan.MAX_RESOURCES] if isinstance(groups, list) else []):
            if not isinstance(g, dict):
                continue
            dist: dict[str, Any] = g["instancesDistribution"] if isinstance(g.get("instancesDistribution"), dict) else {}
            types = g.get("instanceTypes") or dist.get("instanceTypes") or ([g["instanceType"]] if g.get("instanceType") else [])
            sizes = {"min_size": g.get("minSize"), "max_size": g.get("maxSize"), "desired_size": g.get("desiredCapacity")}
            notes: tuple[str, ...] = ("an eksctl node group, read as the aws_eks_node_group it creates",)
            if all(v is None for v in sizes.values()):
                sizes["desired_size"] = EKSCTL_DEFAULT_NODES
                notes = (f"no desiredCapacity, minSize or maxSize: eksctl's default of {EKSCTL_DEFAULT_NODES} nodes", *notes)
            spot = g.get("spot") is True or dist.get("onDemandPercentageAboveBaseCapacity") == 0
            after = {"instance_types": types, "scaling_config": [sizes], "capacity_type": "SPOT" if spot else "ON_DEMAND",
                     "labels": g.get("labels"), "tags": g.get("tags")}
            name = g.get("name") if isinstance(g.get("name"), str) else str(i)
            at = doc.where((key, i, "name")) if "name" in g else doc.where((key, i))
            got = tfplan.read_as(doc.path, index, "aws_eks_node_group", f"{address}/{key}/{name}", after, at, "kubernetes", region,
                                 notes)
            market = g.get("instanceMarketOptions")
            block = isinstance(market, dict) and market.get("marketType") == "capacity-block"
            if g.get("capacityReservation") or block:
                # an On-Demand Capacity Reservation or an EC2 Capacity Block: capacity bought ahead, billed as reserved
                for req in got:
                    req.pricing = "reservation"
                    req.notes.append("runs in a capacity reservation / EC2 Capacity Block: priced as reserved capacity")
            out += got
    return out
