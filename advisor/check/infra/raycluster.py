"""Ray cluster launcher YAML (``ray up cluster.yaml``): every entry of ``available_node_types`` whose
``node_config`` names accelerators is one request. Hardware per node: AWS ``InstanceType``; GCP
``guestAccelerators[].{acceleratorType,acceleratorCount}`` (the type may be a full
``projects/.../acceleratorTypes/NAME`` path), else ``machineType`` (A2 / A3 / G2 carry their GPUs), or a
TPU node's ``acceleratorType`` (``v4-16``, ``v6e-8``) / ``acceleratorConfig.{type,topology}``; Azure
``azure_arm_parameters.vmSize``. A node type whose ``resources`` advertise ``GPU`` or ``TPU`` on hardware
the index does not know is reported as unknown hardware, never dropped. Replicas: the head node type is
one node; a worker type runs ``min_workers`` (0 by default) .. ``max_workers`` (the cluster's
``max_workers``, Ray's default 2, by default). Spot: AWS ``InstanceMarketOptions.MarketType: spot``, GCP
``scheduling`` ``preemptible`` / ``provisioningModel: SPOT`` (TPU ``schedulingConfig``), Azure
``priority: Spot``. Cloud and region from ``provider.type`` / ``provider.region`` (Azure ``location``).
A launcher cluster stays up until ``ray down``: priced always-on."""

from __future__ import annotations

from typing import Any

from advisor import clouds
from advisor.check.infra.model import Parsed, Request, fail_at, is_placeholder, whole_number
from advisor.check.infra.names import Hardware, NameIndex, topology_chips
from advisor.yamlsrc import Document, KeyPath

# The cluster-wide max_workers when a config leaves it out: the launcher fills missing fields from the provider's
# defaults.yaml, which sets 2 (ray-project/ray python/ray/autoscaler/aws/defaults.yaml at 00ded8e, read 2026-12-05:
# "The maximum number of workers nodes to launch in addition to the head node. max_workers: 2")
RAY_DEFAULT_MAX_WORKERS = 2


def is_cluster(data: Any) -> bool:
    """A Ray cluster launcher config: ``available_node_types`` and a ``provider`` mapping."""
    return isinstance(data, dict) and isinstance(data.get("available_node_types"), dict) and isinstance(data.get("provider"), dict)




def parse(docs: list[Document], index: NameIndex) -> Parsed:
    out = Parsed("ray")
    for doc in docs:
        if is_cluster(doc.data):
            out.requests += _cluster(doc, index)
    return out


def _cluster(doc: Document, index: NameIndex) -> list[Request]:
    data = doc.data
    provider = data["provider"]
    ptype = provider.get("type") if isinstance(provider.get("type"), str) else ""
    cloud = clouds.by_skypilot(ptype) if ptype else None
    region = provider.get("region") if ptype != "azure" else provider.get("location")
    name = data.get("cluster_name") if isinstance(data.get("cluster_name"), str) else doc.path.rsplit("/", 1)[-1]
    cluster_max = whole_number(doc, ("max_workers",), data.get("max_workers"))
    cluster_max = RAY_DEFAULT_MAX_WORKERS if cluster_max is None else cluster_max
    head = data.get("head_node_type")
    out: list[Request] = []
    for key, nt in data["available_node_types"].items():
        loc: KeyPath = ("available_node_types", key)
        if not isinstance(nt, dict):
            raise fail_at(doc, loc, "expected a mapping (node_config, resources, min_workers, max_workers)")
        node = nt.get("node_config")
        if node is None:
            node = {}
        if not isinstance(node, dict):
            raise fail_at(doc, (*loc, "node_config"), "expected a mapping")
        line, col = doc.where(loc, key=True)
        req = Request(doc.path, "ray", f"{name}/{key}", line, col)
        if not _hardware(doc, req, ptype, node, nt, loc, index):
            continue
        if key == head:
            req.replicas_min = req.replicas_max = 1
            req.notes.append("the head node: one node")
        else:
            lo = whole_number(doc, (*loc, "min_workers"), nt.get("min_workers"), req)
            hi = whole_number(doc, (*loc, "max_workers"), nt.get("max_workers"), req)
            req.replicas_min = 0 if lo is None else lo
            req.replicas_max = max(req.replicas_min, cluster_max if hi is None else hi)
            req.where["replicas"] = doc.where((*loc, "max_workers" if "max_workers" in nt else "min_workers"))
            req.notes.append(f"worker nodes {req.replicas_min}..{req.replicas_max} (min_workers..max_workers)")
        req.cloud = cloud
        req.region = region if isinstance(region, str) and not is_placeholder(region) else None
        if _spot(ptype, node):
            req.pricing = "spot"
        req.always_on = True
        out.append(req)
    return out


def _hardware(
    doc: Document, req: Request, ptype: str, node: dict[str, Any], nt: dict[str, Any], loc: KeyPath, index: NameIndex
) -> bool:
    """Fills in the node's hardware and chips per node; False when the node type asks for no accelerator."""
    found = _named(doc, ptype, node, loc)
    advertised = _advertised(doc, nt, loc)
    if found is None:
        if not advertised:
            return False
        # resources advertise GPUs / TPUs on a node whose hardware is not named in a form read here
        req.set_hardware("?", Hardware(None, reason="the node advertises GPU/TPU resources but names no hardware advisor reads"))
        req.count = advertised
        req.where["count"] = doc.where((*loc, "resources"))
        return True
    hwname, count, where = found
    if is_placeholder(hwname):
        req.unresolved.append((".".join(map(str, where)), hwname[:80], doc.where(where)))
    hw = index.lookup(hwname)
    cpu = (not hw.known and not index.is_unsupported(hwname)) or index.is_cpu(hw.accelerator or "")
    if cpu and count is None and not advertised:
        return False  # a CPU machine (m5.large, n2-standard-8, one the catalog prices for CPU work): no accelerator asked for
    req.set_hardware(hwname, hw)
    req.where["accelerator"] = req.where["count"] = doc.where(where)
    topo = node.get("acceleratorConfig", {}).get("topology") if isinstance(node.get("acceleratorConfig"), dict) else None
    if isinstance(topo, str) and topology_chips(topo):
        req.topology, req.topology_chips = topo, topology_chips(topo)
    if hw.known and hw.hosts is not None and hw.chips:  # a TPU slice: the whole slice per node
        req.count, req.hosts, req.topology = hw.chips, hw.hosts, hw.topology or req.topology
    else:
        req.count = count if count is not None else (hw.chips if hw.chips else advertised or None)
    if req.count is None:
        req.unresolved.append(("node_config", f"{hwname} (chips per node not known)", doc.where(where)))
    return True


def _named(doc: Document, ptype: str, node: dict[str, Any], loc: KeyPath) -> tuple[str, int | None, KeyPath] | None:
    """(hardware name, chips per node where the config states it, where) of a node_config, or None."""
    nc: KeyPath = (*loc, "node_config")
    if ptype == "aws" and isinstance(node.get("InstanceType"), str):
        return node["InstanceType"], None, (*nc, "InstanceType")
    if ptype == "azure":
        arm = node.get("azure_arm_parameters")
        if isinstance(arm, dict) and isinstance(arm.get("vmSize"), str):
            return arm["vmSize"], None, (*nc, "azure_arm_parameters", "vmSize")
        return None
    guests = node.get("guestAccelerators")
    if guests is not None:
        if not isinstance(guests, list) or not guests or not all(isinstance(g, dict) for g in guests):
            raise fail_at(doc, (*nc, "guestAccelerators"), "expected a list of {acceleratorType, acceleratorCount}")
        g = guests[0]
        gtype = g.get("acceleratorType")
        if not isinstance(gtype, str):
            raise fail_at(doc, (*nc, "guestAccelerators", 0, "acceleratorType"), "expected the accelerator type's name")
        n = whole_number(doc, (*nc, "guestAccelerators", 0, "acceleratorCount"), g.get("acceleratorCount"))
        return gtype.rsplit("/", 1)[-1], 1 if n is None else n, (*nc, "guestAccelerators", 0, "acceleratorType")
    if isinstance(node.get("acceleratorType"), str):  # a TPU VM node
        return node["acceleratorType"], None, (*nc, "acceleratorType")
    cfg = node.get("acceleratorConfig")
    if isinstance(cfg, dict) and isinstance(cfg.get("type"), str) and isinstance(cfg.get("topology"), str):
        chips = topology_chips(cfg["topology"])
        return "tpu-" + cfg["type"].lower(), chips, (*nc, "acceleratorConfig", "type")
    if isinstance(node.get("machineType"), str):
        return node["machineType"], None, (*nc, "machineType")
    return None


def _advertised(doc: Document, nt: dict[str, Any], loc: KeyPath) -> int:
    """GPUs or TPUs the node type's ``resources`` advertise to the autoscaler (0 when none)."""
    res = nt.get("resources")
    if not isinstance(res, dict):
        return 0
    total = 0
    for k in ("GPU", "TPU"):
        v = res.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 1_000_000:
            total += int(v)
        elif v is not None and not isinstance(v, int | float):
            raise fail_at(doc, (*loc, "resources", k), f"expected a number, got {v!r}"[:200])
    return total


def _spot(ptype: str, node: dict[str, Any]) -> bool:
    if ptype == "aws":
        market = node.get("InstanceMarketOptions")
        return isinstance(market, dict) and str(market.get("MarketType", "")).lower() == "spot"
    if ptype == "azure":
        arm = node.get("azure_arm_parameters")
        return isinstance(arm, dict) and str(arm.get("priority", "")).lower() == "spot"
    for key in ("scheduling", "schedulingConfig"):
        sched = node.get(key)
        items = sched if isinstance(sched, list) else [sched]
        for s in items:
            if isinstance(s, dict) and (
                s.get("preemptible") is True or s.get("spot") is True or str(s.get("provisioningModel", "")).upper() == "SPOT"
            ):
                return True
    return False
