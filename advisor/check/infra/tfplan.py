"""Terraform plan JSON (``terraform show -json plan.out``): one request per accelerator resource
in ``resource_changes``, with ``change.actions`` respected and ``change.before`` kept for the
cost diff. Values are read from ``change.after`` only (never echoed: plans carry secrets)."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from advisor import clouds
from advisor.check.infra.hclexpr import Unresolved
from advisor.check.infra.model import Parsed, Request, ascii_int, tf_waivers
from advisor.check.infra.names import Hardware, NameIndex, topology_chips
from advisor.check.infra.tfconfig import ADDRESS, INDEX, config_address, config_refs, config_sources, provider_region
from advisor.errors import InputError
from advisor.families import family
from advisor.yamlsrc import linked_outside

MAX_RESOURCES = 25_000  # compute resources one plan may hold (a 20,000-resource plan is read in seconds)
LINK_KEYS = ("advisor-workload", "advisor_workload", "advisor.dev/workload")

READ = {
    "google_tpu_v2_vm", "google_tpu_v2_queued_resource", "google_container_node_pool", "google_compute_instance",
    "google_compute_instance_template", "google_compute_region_instance_template", "google_compute_instance_group_manager",
    "google_compute_region_instance_group_manager", "aws_instance", "aws_launch_template", "aws_autoscaling_group",
    "aws_eks_node_group", "azurerm_kubernetes_cluster_node_pool", "azurerm_linux_virtual_machine",
    "azurerm_linux_virtual_machine_scale_set", "azurerm_windows_virtual_machine", "azurerm_windows_virtual_machine_scale_set",
    "google_container_cluster", "azurerm_kubernetes_cluster", "google_workbench_instance", "google_notebooks_instance",
    "google_compute_reservation", "aws_ec2_capacity_reservation", "google_cloud_run_v2_service",
    "aws_sagemaker_endpoint_configuration", "aws_sagemaker_notebook_instance", "azurerm_machine_learning_compute_cluster",
    "azurerm_machine_learning_compute_instance", "google_vertex_ai_deployment_resource_pool", "aws_batch_compute_environment",
    "google_tpu_node", "google_vertex_ai_endpoint_with_model_garden_deployment", "azurerm_virtual_machine", "azurerm_batch_pool",
    "aws_spot_instance_request",
}


def is_plan(data: Any) -> bool:
    return isinstance(data, dict) and "format_version" in data and ("resource_changes" in data or "planned_values" in data)


class _Ctx:
    def __init__(self, path: str, text: str, plan: dict[str, Any], index: NameIndex) -> None:
        self.path, self.text, self.plan, self.index = path, text, plan, index
        start = text.find('"resource_changes"')
        self.start = max(start, 0)
        self.aws_region = provider_region(plan, "aws")
        self.refs = config_refs(plan)
        self.config_index: dict[str, list[str]] = {}  # configuration address -> instance addresses
        self._offsets: dict[str, int] | None = None
        self._lines: dict[str, tuple[int, int]] = {}
        self._sources: dict[str, tuple[str, int]] | None = None

    def pos(self, address: str) -> tuple[int, int]:
        """Line and column of the resource's ``"address"`` in the plan text: every address found
        in one pass, their lines counted in one more (linear in the plan's size)."""
        if self._offsets is None:
            self._index_addresses()
        return self._lines.get(address, (1, 1))

    def _index_addresses(self) -> None:
        offsets: dict[str, int] = {}
        for m in ADDRESS.finditer(self.text, self.start):
            try:
                addr = json.loads(m.group(1))
            except ValueError:
                continue
            if isinstance(addr, str):
                offsets.setdefault(addr, m.start())
        self._offsets = offsets
        line, prev = 1, 0
        for addr, off in sorted(offsets.items(), key=lambda kv: kv[1]):
            line += self.text.count("\n", prev, off)
            prev = off
            self._lines[addr] = (line, off - (self.text.rfind("\n", 0, off) + 1) + 1)

    def source(self, address: str) -> tuple[str, int] | None:
        """The .tf file and line of the resource's configuration block, where the plan sits beside
        its configuration (the plan's directory, local modules by their ``source``)."""
        if self._sources is None:
            self._sources = config_sources(self.path, self.plan)
        return self._sources.get(config_address(address))


def _first(block: Any) -> dict[str, Any]:
    """Terraform nested blocks are lists of one object in plan JSON."""
    if isinstance(block, list) and block and isinstance(block[0], dict):
        return block[0]
    return block if isinstance(block, dict) else {}


def parse(path: str, text: str, plan: dict[str, Any], index: NameIndex) -> Parsed:
    version = plan.get("format_version")
    if not isinstance(version, str) or not version.split(".")[0] == "1":
        raise InputError.single(path, 1, 1, f"unsupported Terraform plan format_version {version!r} (expected 1.x)")
    changes = plan.get("resource_changes", [])
    if not isinstance(changes, list):
        raise InputError.single(path, 1, 1, "resource_changes: expected a list")
    ctx = _Ctx(path, text, plan, index)
    by_addr: dict[str, dict[str, Any]] = {}
    for i, rc in enumerate(changes):
        if not isinstance(rc, dict):
            raise InputError.single(path, 1, 1, f"resource_changes[{i}]: expected an object")
        addr, rtype = rc.get("address"), rc.get("type")
        if not isinstance(addr, str) or not isinstance(rtype, str):
            raise InputError.single(path, *ctx.pos(str(addr)), f"resource_changes[{i}]: 'address' and 'type' must be strings")
        if rc.get("mode", "managed") != "managed":
            continue
        change = rc.get("change")
        if rtype not in READ and not (isinstance(change, dict) and machine_named(index, change.get("after"))):
            continue
        if not isinstance(change, dict):
            raise InputError.single(path, *ctx.pos(addr), f"{addr}: change: expected an object")
        by_addr[addr] = rc
        ctx.config_index.setdefault(config_address(addr), []).append(addr)
        if len(by_addr) > MAX_RESOURCES:
            raise InputError.single(
                path,
                *ctx.pos(addr),
                f"more than {MAX_RESOURCES:,} compute resources in one plan: split the plan (per module or workspace) and check the parts",
            )
    return read_resources(ctx, by_addr, Parsed("terraform-plan"))


GROUPS = (
    "google_compute_instance_group_manager",
    "google_compute_region_instance_group_manager",
    "aws_autoscaling_group",
    "aws_eks_node_group",
)


def _gke_cluster_pools(side: Any) -> dict[str, dict[str, Any]]:
    """A GKE cluster's own node pools as google_container_node_pool bodies: its default pool (``node_config`` and
    ``initial_node_count``, unless ``remove_default_node_pool``) and each inline ``node_pool`` block, in the cluster's
    location."""
    if not isinstance(side, dict):
        return {}
    base = {"location": side.get("location"), "node_locations": side.get("node_locations")}
    out: dict[str, dict[str, Any]] = {}
    if side.get("remove_default_node_pool") is not True and side.get("node_config") is not None:
        out["default_node_pool"] = {**base, "node_config": side.get("node_config"), "initial_node_count": side.get("initial_node_count")}
    pools = side.get("node_pool")
    for i, pool in enumerate(pools[:MAX_RESOURCES] if isinstance(pools, list) else []):
        if isinstance(pool, dict):
            name = pool.get("name") if isinstance(pool.get("name"), str) and pool.get("name") else str(i)
            out[f'node_pool["{name}"]'] = {**base, **{k: v for k, v in pool.items() if v is not None}}
    # node auto-provisioning: GKE creates node pools itself, up to each accelerator's resource_limits maximum
    auto = _first(side.get("cluster_autoscaling"))
    limits = auto.get("resource_limits") if auto.get("enabled") is True else None
    for i, limit in enumerate(limits[:MAX_RESOURCES] if isinstance(limits, list) else []):
        rtype = limit.get("resource_type") if isinstance(limit, dict) else None
        if isinstance(limit, dict) and rtype not in ("cpu", "memory"):
            name = rtype if isinstance(rtype, str) and rtype else str(i)
            out[f'cluster_autoscaling.resource_limits["{name}"]'] = {**base, **limit, READ_AS: "google_container_cluster_auto_provisioning"}
    return out


def _aks_cluster_pools(side: Any) -> dict[str, dict[str, Any]]:
    """An AKS cluster's ``default_node_pool`` as an azurerm_kubernetes_cluster_node_pool body, in the cluster's location."""
    pool = _first(side.get("default_node_pool")) if isinstance(side, dict) else {}
    if not pool:
        return {}
    assert isinstance(side, dict)
    return {"default_node_pool": {**pool, "location": side.get("location"), "tags": pool.get("tags") or side.get("tags")}}


def _sagemaker_variants(side: Any) -> dict[str, dict[str, Any]]:
    """A SageMaker endpoint configuration's instance-backed production variants (a serverless variant has no
    instance_type), each with the configuration's tags."""
    variants = side.get("production_variants") if isinstance(side, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for i, v in enumerate(variants[:MAX_RESOURCES] if isinstance(variants, list) else []):
        if isinstance(v, dict) and v.get("instance_type") is not None:
            name = v.get("variant_name") if isinstance(v.get("variant_name"), str) and v.get("variant_name") else str(i)
            out[f'production_variants["{name}"]'] = {**v, "tags": side.get("tags")}
    return out


READ_AS = "__read_as"  # a part of a cluster read by another reader than its pools' (auto-provisioning limits)


# Resources whose own blocks declare the machines: each is read as the resource it stands for (the type -> that type,
# and its parts on one side of a change), at the resource's position: a cluster's node pools, an endpoint's variants
CLUSTERS: dict[str, tuple[str, Callable[[Any], dict[str, dict[str, Any]]]]] = {
    "google_container_cluster": ("google_container_node_pool", _gke_cluster_pools),
    "azurerm_kubernetes_cluster": ("azurerm_kubernetes_cluster_node_pool", _aks_cluster_pools),
    "aws_sagemaker_endpoint_configuration": ("aws_sagemaker_production_variant", _sagemaker_variants),
}


def _cluster_pools(by_addr: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``by_addr`` with each cluster replaced by its node pools (CLUSTERS), addressed ``CLUSTER.default_node_pool`` and
    ``CLUSTER.node_pool["NAME"]``, each with ``at``: the cluster's address (its position and configuration). A pool on one
    side of an update only is created or deleted."""
    out: dict[str, dict[str, Any]] = {}
    for key, rc in by_addr.items():
        spec = CLUSTERS.get(rc["type"])
        if spec is None:
            out[key] = rc
            continue
        ptype, pools = spec
        change = rc["change"]
        after, before = pools(change.get("after")), pools(change.get("before"))
        unknown = change.get("after_unknown")
        unknown_pools = pools(unknown) if isinstance(unknown, dict) else {}
        for name in dict.fromkeys([*after, *before]):
            part = after.get(name) or before.get(name) or {}
            read_as_type = part.get(READ_AS, ptype)
            for body in (after.get(name), before.get(name)):
                if body is not None:
                    body.pop(READ_AS, None)
            actions = change.get("actions")
            if actions == ["update"] and name not in before:
                actions = ["create"]
            elif actions == ["update"] and name not in after:
                actions = ["delete"]
            addr = f"{key}.{name}"
            out[addr] = {"address": addr, "type": read_as_type, "at": key, "change": {
                "actions": actions, "after": after.get(name), "before": before.get(name),
                "after_unknown": {k: v for k, v in unknown_pools.get(name, {}).items() if v is True}}}
    return out


class _At(_Ctx):
    """A plan reader's context for a resource read from another format: every address at one position, no .tf file."""

    def __init__(self, path: str, index: NameIndex, at: tuple[int, int], aws_region: str | None) -> None:
        super().__init__(path, "", {}, index)
        self.at = at
        self.aws_region = aws_region

    def pos(self, address: str) -> tuple[int, int]:
        return self.at

    def source(self, address: str) -> tuple[str, int] | None:
        return None


def at_position(path: str, index: NameIndex, at: tuple[int, int], aws_region: str | None) -> _Ctx:
    """A reader context for resources read from another format (every address at ``at``): its ``refs`` and
    ``config_index`` say which resource refers to which, where the format says so (CloudFormation's Ref)."""
    return _At(path, index, at, aws_region)


def read_as(
    path: str, index: NameIndex, rtype: str, address: str, after: dict[str, Any], at: tuple[int, int], kind: str,
    region: str | None = None, notes: tuple[str, ...] = (),
) -> list[Request]:
    """``after`` read by ``rtype``'s reader as a resource to create, at ``at``: how the formats generated from the
    Terraform providers' schemas (Config Connector, Crossplane, eksctl, CloudFormation) are read. Requests of ``kind``,
    in ``region`` (a zone's region) where the reader finds none, with ``notes``."""
    ctx = _At(path, index, at, region if rtype.startswith("aws_") else None)
    rc = {"address": address, "type": rtype, "change": {"actions": ["create"], "before": None, "after": after, "after_unknown": {}}}
    out = read_resources(ctx, {address: rc}, Parsed(kind))
    for req in out.requests:
        req.kind = kind
        req.region = req.region or _zone_region(region)
        req.notes += notes
    return out.requests


def read_resources(ctx: _Ctx, by_addr: dict[str, dict[str, Any]], out: Parsed) -> Parsed:
    """Requests from resources (full address -> ``{"type", "change": {...}}``): groups first, so
    that the templates they use are counted once, in the group; a cluster's own node pools each as one."""
    by_addr = _cluster_pools(by_addr)
    at = {key: rc["at"] for key, rc in by_addr.items() if "at" in rc}
    consumed: set[str] = set()
    grouped: list[Request] = []
    for rc in by_addr.values():
        if rc["type"] in GROUPS:
            req = _one(ctx, rc, by_addr, consumed)
            if req is not None:
                grouped.append(req)
    for key, rc in by_addr.items():
        if key in consumed or rc["type"] in GROUPS:
            continue
        req = _one(ctx, rc, by_addr, consumed)
        if req is not None:
            out.requests.append(req)
    out.requests.extend(grouped)
    texts: dict[str, str] = {}
    for req in out.requests:
        where = ctx.source(at.get(req.address, req.address))
        if where is not None:
            req.config = where
            if where[0] not in texts:
                if linked_outside(where[0]):  # never read through a link out of the repository
                    texts[where[0]] = ""
                    continue
                try:
                    with open(where[0], encoding="utf-8", errors="replace") as fh:
                        texts[where[0]] = fh.read(4 * 1024 * 1024)
                except OSError:
                    texts[where[0]] = ""
            req.waivers += [(w, req.pos("accelerator")) for w, _ in tf_waivers(texts[where[0]], where[1])]
    out.requests.sort(key=lambda r: (r.line, r.address))
    return out


def _one(ctx: _Ctx, rc: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]) -> Request | None:
    addr, rtype = rc["address"], rc["type"]
    change = rc["change"]
    actions = change.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise InputError.single(ctx.path, *ctx.pos(addr), f"{addr}: change.actions: expected a list of strings")
    if actions in (["no-op"], ["read"]):
        action = "no-op"
    elif "delete" in actions and "create" in actions:
        action = "replace"
    elif actions == ["delete"]:
        action = "delete"
    elif actions == ["update"]:
        action = "update"
    else:
        action = "create"
    after, before = change.get("after"), change.get("before")
    for name, value in (("after", after), ("before", before)):
        if value is not None and not isinstance(value, dict):
            raise InputError.single(ctx.path, *ctx.pos(addr), f"{addr}: change.{name}: expected an object or null")
    unknown = change.get("after_unknown") if isinstance(change.get("after_unknown"), dict) else {}
    at = rc.get("at", addr)
    now = _read(ctx, rtype, addr, after, unknown, by_addr, consumed, at) if after is not None else None
    was = _read(ctx, rtype, addr, before, {}, by_addr, set(), at) if before is not None and action != "create" else None
    if now is None and was is None:
        return None
    if now is None:  # deleted: nothing is asked for after the change
        assert was is not None
        import copy

        now = copy.copy(was)
        now.replicas_min = now.replicas_max = 0
    now.action = action
    now.before = was
    return now


def _num(ctx: _Ctx, req: Request, field: str, value: Any, unknown: dict[str, Any] | None = None) -> int | None:
    if value is None:
        if unknown and unknown.get(field.split(".")[-1]) is True:
            req.unresolved.append((field, "(known after apply)", req.pos("count")))
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: {field}: expected a whole number, got {type(value).__name__}")
    if value < 0 or value > 10_000_000:
        raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: {field}: {value} is out of range")
    return value


def _str(ctx: _Ctx, req: Request, field: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: {field}: expected a string, got {type(value).__name__}")
    return value[:200]


def _link(after: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        labels = after.get(key)
        if isinstance(labels, dict):
            for k in LINK_KEYS:
                if isinstance(labels.get(k), str):
                    return str(labels[k])
    return None


_AWS_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")  # us-east-1, ap-southeast-2 (an availability zone adds a letter)


def _zone_region(zone: str | None) -> str | None:
    """The region of a zone: GCP ``us-central1-a`` -> ``us-central1``, AWS ``us-east-1a`` -> ``us-east-1``; a region
    (GCP, AWS, Azure's ``westeurope``) as it is."""
    if not zone:
        return None
    if _AWS_REGION.fullmatch(zone):
        return zone
    if zone[-1:].isalpha() and _AWS_REGION.fullmatch(zone[:-1]):
        return zone[:-1]
    parts = zone.split("-")
    return "-".join(parts[:2]) if len(parts) >= 3 else zone


Reader = Callable[[_Ctx, Request, dict[str, Any], dict[str, Any], dict[str, dict[str, Any]], set[str]], Request | None]


def _read(
    ctx: _Ctx, rtype: str, addr: str, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]],
    consumed: set[str], at: str | None = None,
) -> Request | None:
    line, col = ctx.pos(at or addr)
    req = Request(ctx.path, "terraform-plan", addr, line, col)
    req.cloud = clouds.by_terraform_type(rtype)  # the provider's cloud (rules/clouds.yaml terraform_prefix)
    reader = _READERS.get(rtype, _unread_type)
    got = reader(ctx, req, after, unknown, by_addr, consumed)
    if got is None and reader is not _unread_type and machine_named(ctx.index, after):
        # a type read here whose reader found no request in it, though it names a machine with accelerators (an
        # autoscaling group's mixed-instances overrides): failed closed, as a type not read
        fresh = Request(ctx.path, "terraform-plan", addr, line, col)
        fresh.cloud = req.cloud
        return _unread_type(ctx, fresh, after, unknown, by_addr, consumed)
    return got


MAX_SCAN = 2_000  # values of one resource looked at for a machine name


def values_of(node: Any, limit: int = MAX_SCAN) -> Iterator[Any]:
    """``node`` and every value inside it (a mapping's values, a list's items), breadth first, at most ``limit``."""
    queue, seen = deque([node]), 0
    while queue and seen < limit:
        v = queue.popleft()
        seen += 1
        yield v
        if isinstance(v, dict):
            queue.extend(v.values())
        elif isinstance(v, list):
            queue.extend(v)


_ACCELERATOR_KEY = re.compile(r"(?i)accelerator|gpu|tpu")
# a field that names an accelerator (its type), not one that merely mentions one (gpu_driver_version)
_ACCELERATOR_FIELD = re.compile(
    r"(?i)(?:accelerator[^.]*\.(?:type|accelerator_type|name)|\.accelerator_type|\.accelerator|\.gpu_type|\.tpu_type)$"
)
# a Slurm TPU nodeset's node_type (v3-8, v5litepod-16): a TPU type, where the field's name says nothing of accelerators
_TPU_TYPE = re.compile(r"(?i)^v\d+[a-z]*-\d+$")
# the words of a chip's name in a field for one, where the catalog does not know the chip (hcl.py's
# _ACCELERATOR_WORD is another test: any mention of accelerators in a file's text)
_CHIP_WORD = re.compile(r"(?i)nvidia|tesla|radeon|instinct|tpu|gaudi|trainium|inferentia|\b[ahlvtp]\d{1,3}\b")


def _keyed_values(node: Any, limit: int = MAX_SCAN) -> Iterator[tuple[str, Any]]:
    """(the key it is under, value) of ``node`` and every value inside it, breadth first, at most ``limit``; a list's
    items keep the list's key."""
    queue: deque[tuple[str, Any]] = deque([("", node)])
    seen = 0
    while queue and seen < limit:
        key, v = queue.popleft()
        seen += 1
        yield key, v
        if isinstance(v, dict):
            queue.extend((f"{key}.{k}"[-200:], x) for k, x in v.items())
        elif isinstance(v, list):
            queue.extend((key, x) for x in v)


def machine_named(index: NameIndex, value: Any) -> str | None:
    """The first machine, instance or TPU type with accelerators (a3-highgpu-8g, p5.48xlarge, Standard_ND96isr_H100_v5,
    v5p-1024) among the strings of a resource's attributes, breadth first and bounded, or an accelerator a field for one
    names (accelerator_type = "nvidia-tesla-a100", node_selector { accelerator = "nvidia-l4" }, accelerator_config); None
    where it names none."""
    for key, v in _keyed_values(value):
        if isinstance(v, Unresolved) and _ACCELERATOR_FIELD.search(key):
            v = f"${{{v.expr}}}"
        if isinstance(v, str) and _ACCELERATOR_FIELD.search(key) and ("${" in v or v.startswith(("var.", "local."))):
            return v[:64]  # an accelerator field the source does not settle (var.gpu_type, no default): unknown hardware
        if isinstance(v, str) and 2 < len(v) <= 64:
            hw = machine_hardware(index, v)
            keyed = _ACCELERATOR_KEY.search(key)
            if not hw.known and keyed:  # an API's enum spelling: NVIDIA_TESLA_V100 is nvidia-tesla-v100
                v = v.lower().replace("_", "-")
                hw = index.lookup(v)
            if not hw.known and ((keyed and _CHIP_WORD.search(v)) or (key.endswith(".node_type") and _TPU_TYPE.match(v))):
                return v  # an accelerator field naming a chip the catalog does not know (NVIDIA_TESLA_V100): unknown hardware
            bare = v.strip().lower().removeprefix("ml.")
            if not hw.known and (bare in index.unsupported or (_MACHINE_KEY.search(key) and index.is_unsupported(bare))):
                # accelerator hardware the catalog does not hold (VM.GPU.A10.1, trn1.32xlarge) named as such, or a machine
                # field's value of such a family (trn2.48xlarge): unknown hardware, not a CPU (a bucket named
                # p5.48xlarge-logs is neither)
                return v
            if not hw.known or index.is_cpu(hw.accelerator or ""):
                continue
            if hw.chips or keyed:
                return v
    return None


# an attribute that names the machine (instance_type, machine_type, shape, vm_size, node_type, sku), at any depth
_MACHINE_KEY = re.compile(r"(?:^|[._])(?:instance_types?|machine_type|shape|vm_size|node_type|sku|size)$")


def unread_request(req: Request, index: NameIndex, machine: str, why: str) -> Request:
    """``req`` as a request of the hardware ``machine`` names whose count is not read (request-unresolved, ``why``): a
    resource no reader here evaluates (a type not read, Terraform's JSON syntax, a CloudFormation type) fails closed."""
    req.set_hardware(machine, machine_hardware(index, machine))
    req.unresolved.append(("count-unknown", why, req.pos("count")))
    return req


def machine_hardware(index: NameIndex, name: str) -> Hardware:
    """What a machine name ``machine_named`` found carries: an instance type by the instance index, else by name."""
    bare = name[3:] if name.startswith("ml.") else name  # SageMaker's ml.g5.8xlarge is EC2's g5.8xlarge
    dotted = "." in bare or bare.lower().startswith("standard_")
    return (index.instance_accelerator(bare) if dotted else None) or index.lookup(bare)


def _unread_type(
    ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]
) -> Request | None:
    """Fail closed on a resource type no reader here takes (aws_ec2_fleet, aws_spot_fleet_request, aws_emr_cluster,
    google_dataproc_cluster, ...) whose attributes name a machine with accelerators: a request of that hardware whose count
    is not read (request-unresolved), never a resource passed in silence."""
    name = machine_named(ctx.index, after)
    if name is None and unknown.get("accelerator_type") is True:
        name = "var.accelerator (not settled)"  # an accelerator field the source leaves open (hcl: var.gpu_type, no default)
    if name is None:
        return None
    rtype = req.address.split("[")[0].split(".")[-2] if "." in req.address else req.address
    unread_request(req, ctx.index, name, f"{rtype} is a resource type advisor does not read: it names {name}, but how many it "
                   "provisions is not read; check the plan of a type advisor reads, or waive with the count written in the reason")
    req.notes.append(f"resource type not read; it names the machine {name}")
    return req


def _gpu(ctx: _Ctx, req: Request, machine: str | None, guest: Any, field: str) -> bool:
    """GPU from guest_accelerator (type, count) or implied by the machine type. False: no accelerator."""
    if guest is not None and not isinstance(guest, list):
        # fail closed: a block that should name an accelerator and cannot be read is an input error
        raise InputError.single(
            ctx.path, req.line, req.col, f"{req.address}: {field}: expected a list of blocks, got {type(guest).__name__}"
        )
    for g in guest or []:
        if not isinstance(g, dict):
            raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: {field}: expected a list of blocks")
        name = _str(ctx, req, f"{field}.type", g.get("type"))
        n = _num(ctx, req, f"{field}.count", g.get("count"))
        if name and n:
            req.set_hardware(name, ctx.index.lookup(name))
            req.count = n
            return True
        if name and n is None and "count" not in g:
            raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: {field}: {name} without a count")
    if machine:
        hw = ctx.index.lookup(machine)
        if hw.known and hw.chips and not (hw.accelerator and ctx.index.is_cpu(hw.accelerator)):  # a CPU machine the catalog prices
            req.set_hardware(machine, hw)
            req.count = hw.chips
            return True
        if hw.reason and not hw.known and ctx.index.is_unsupported(machine):
            req.set_hardware(machine, hw)
            req.count = hw.chips
            return True
    return False


def _tpu_vm(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    req.region = _zone_region(_str(ctx, req, "zone", after.get("zone")))
    atype = _str(ctx, req, "accelerator_type", after.get("accelerator_type"))
    cfg = _first(after.get("accelerator_config"))
    if atype:
        hw = ctx.index.lookup(atype)
        req.set_hardware(atype, hw)
        req.count, req.hosts = hw.chips, hw.hosts or 1
    elif cfg:
        family = _str(ctx, req, "accelerator_config.type", cfg.get("type")) or ""
        topo = _str(ctx, req, "accelerator_config.topology", cfg.get("topology")) or ""
        chips = topology_chips(topo)
        hw = ctx.index.lookup(family)
        req.set_hardware(f"{family} {topo}", hw)
        req.count = chips
        if chips is None:
            req.unresolved.append(("accelerator_config.topology", topo or "(missing)", req.pos("count")))
        elif hw.known:
            sl = ctx.index.slice_of(hw.accelerator or "", chips)
            req.hosts = sl.hosts or 1 if sl else 1
    elif unknown.get("accelerator_type") is True:
        req.unresolved.append(("accelerator_type", "(known after apply)", req.pos("accelerator")))
    else:
        req.set_hardware("v2-8", ctx.index.lookup("v2-8"))
        req.notes.append("no accelerator_type: the provider default is v2-8")
    sched = _first(after.get("scheduling_config"))
    if sched.get("preemptible") is True or sched.get("spot") is True:
        req.pricing = "spot"
    elif sched.get("reserved") is True:
        req.pricing = "reservation"
    req.link = _link(after, "labels")
    return req


def _queued(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    tpu = _first(after.get("tpu"))
    specs = tpu.get("node_spec") if isinstance(tpu.get("node_spec"), list) else []
    if not specs:
        return None
    slices = 0
    for spec in specs:
        if not isinstance(spec, dict):
            continue
        node = _first(spec.get("node"))
        atype = _str(ctx, req, "tpu.node_spec.node.accelerator_type", node.get("accelerator_type")) or "v2-8"
        hw = ctx.index.lookup(atype)
        req.set_hardware(atype, hw)
        req.count, req.hosts = hw.chips, hw.hosts or 1
        multi = _first(spec.get("multi_node_params"))
        slices += _num(ctx, req, "multi_node_params.node_count", multi.get("node_count")) or 1
        req.region = _zone_region(_str(ctx, req, "zone", after.get("zone")))
    req.replicas_min = req.replicas_max = slices
    if after.get("spot"):
        req.pricing = "spot"
    elif after.get("guaranteed") or after.get("reservation_name"):
        req.pricing = "reservation"
    return req


def _node_pool(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    cfg = _first(after.get("node_config"))
    machine = _str(ctx, req, "node_config.machine_type", cfg.get("machine_type"))
    location = _str(ctx, req, "location", after.get("location"))
    req.region = _zone_region(location)
    hw = ctx.index.lookup(machine) if machine else None
    tpu = hw is not None and hw.known and (family(ctx.index.catalog.accelerators[hw.accelerator or ""].device).shapes.kind == "slice")
    if tpu:
        assert hw is not None and machine is not None
        req.set_hardware(machine, hw)
        req.count = hw.chips
    elif not _gpu(ctx, req, machine, cfg.get("guest_accelerator"), "node_config.guest_accelerator"):
        return None
    zones = after.get("node_locations")
    n_zones = len(zones) if isinstance(zones, list) and zones else (1 if location and location.count("-") >= 2 else 3)
    if (("node_locations" in after and not isinstance(zones, list)) or "node_locations" in unknown) and n_zones == 3:
        # the zones are named but not read (var.zones without a default): a region's three is a guess, said
        req.unresolved.append(("node_locations", "the pool's zones are not read (counts are per zone: 3 assumed)", req.pos("count")))
    auto = _first(after.get("autoscaling"))
    tmin = _num(ctx, req, "autoscaling.total_min_node_count", auto.get("total_min_node_count"))
    tmax = _num(ctx, req, "autoscaling.total_max_node_count", auto.get("total_max_node_count"))
    zmin = _num(ctx, req, "autoscaling.min_node_count", auto.get("min_node_count"))
    zmax = _num(ctx, req, "autoscaling.max_node_count", auto.get("max_node_count"))
    count = _num(ctx, req, "node_count", after.get("node_count"), unknown)
    initial = _num(ctx, req, "initial_node_count", after.get("initial_node_count"))
    if tmax is not None:
        nmin, nmax = tmin or 0, tmax
    elif zmax is not None:
        nmin, nmax = (zmin or 0) * n_zones, zmax * n_zones
        req.notes.append(f"autoscaling min/max_node_count are per zone: x {n_zones} zone(s)")
    else:
        per_zone = count if count is not None else (initial if initial is not None else 1)
        nmin = nmax = per_zone * n_zones
        if n_zones > 1:
            req.notes.append(f"node_count is per zone: {per_zone} x {n_zones} zone(s)")
    policy = _first(after.get("placement_policy"))
    topo = _str(ctx, req, "placement_policy.tpu_topology", policy.get("tpu_topology"))
    if tpu and topo:
        chips = topology_chips(topo)
        per = req.count or 1
        if chips is None:
            req.unresolved.append(("placement_policy.tpu_topology", topo, req.pos("count")))
        else:
            hosts = max(1, chips // per)
            req.count, req.hosts = chips, hosts
            if nmax % hosts or nmin % hosts:
                req.shape_problems.append(f"{nmax} node(s) of {per} chips do not make whole {topo} slices ({hosts} hosts each)")
            nmin, nmax = nmin // hosts, nmax // hosts
    elif tpu and policy.get("policy_name"):
        req.notes.append("multi-host TPU pool with a workload policy: the topology is in that policy; each node counted as one replica")
    req.replicas_min, req.replicas_max = nmin, nmax
    if cfg.get("spot") is True or cfg.get("preemptible") is True:
        req.pricing = "spot"
    res = _first(cfg.get("reservation_affinity"))
    if isinstance(res.get("consume_reservation_type"), str) and "SPECIFIC" in res["consume_reservation_type"]:
        req.pricing = "reservation"
    if _first(after.get("queued_provisioning")).get("enabled") is True:
        req.notes.append("queued provisioning (Flex-start / DWS): priced as on-demand")
    req.link = _link(cfg, "labels", "resource_labels") or _link(after, "labels")
    return req


def _auto_provisioning(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    """A GKE cluster's node auto-provisioning limit for an accelerator (``cluster_autoscaling.resource_limits``): GKE creates
    node pools of it by itself, up to ``maximum`` chips in the whole cluster (https://cloud.google.com/kubernetes-engine/docs/
    how-to/node-auto-provisioning), on machines it picks: one group of ``maximum`` chips, a ceiling (``Request.cap``),
    absent where ``minimum`` is 0."""
    name = _str(ctx, req, "cluster_autoscaling.resource_limits.resource_type", after.get("resource_type"))
    if name is None:
        req.hardware, req.unknown = None, "cluster_autoscaling.resource_limits.resource_type is not set in the source"
        req.unresolved.append(("cluster_autoscaling.resource_limits.resource_type", "(not a literal value)", req.pos("accelerator")))
    else:
        req.set_hardware(name, ctx.index.lookup(name))
    req.region = _zone_region(_str(ctx, req, "location", after.get("location")))
    low = _num(ctx, req, "cluster_autoscaling.resource_limits.minimum", after.get("minimum"), unknown)
    high = _num(ctx, req, "cluster_autoscaling.resource_limits.maximum", after.get("maximum"), unknown)
    # the machines GKE picks are not in the file: the limit is read as one group of `maximum` chips, present or not
    req.count, req.replicas_min, req.replicas_max, req.cap = high, (1 if low else 0), 1, True
    req.notes.append(
        f"node auto-provisioning: GKE creates node pools of {name or 'this accelerator'} by itself, "
        f"{low or 0} to {'?' if high is None else high} chip(s) in the whole cluster, on machines it picks; read as "
        "one group of the maximum, priced at it"
    )
    return req


def _gce(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    machine = _str(ctx, req, "machine_type", after.get("machine_type"))
    if not _gpu(ctx, req, machine, after.get("guest_accelerator"), "guest_accelerator"):
        return None
    req.region = _zone_region(_str(ctx, req, "zone", after.get("zone"))) or _str(ctx, req, "region", after.get("region"))
    sched = _first(after.get("scheduling"))
    if sched.get("preemptible") is True or sched.get("provisioning_model") == "SPOT":
        req.pricing = "spot"
    req.link = _link(after, "labels")
    if req.address.split(".")[-2].endswith("template") or "_template." in req.address:
        req.notes.append("an instance template: counted once unless an instance group in the plan references it")
    return req


def _compute_name(name: Any) -> Any:
    """An accelerator as Vertex AI, Workbench and reservations may write it (NVIDIA_TESLA_A100, NVIDIA_L4) in Compute
    Engine's form (nvidia-tesla-a100, nvidia-l4)."""
    return name.lower().replace("_", "-") if isinstance(name, str) else name


def _accelerators(blocks: Any, type_key: str, count_key: str) -> Any:
    """``{type_key, count_key}`` accelerator blocks as the ``{type, count}`` guest_accelerator blocks _gpu reads (anything
    but a list of blocks is passed through, for _gpu to refuse)."""
    if not isinstance(blocks, list):
        return blocks
    return [{"type": _compute_name(b.get(type_key)), "count": b.get(count_key)} if isinstance(b, dict) else b for b in blocks]


def _workbench(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """A Vertex AI Workbench instance: one VM of gce_setup's machine type and accelerator_configs."""
    return _notebook_vm(ctx, req, after, _first(after.get("gce_setup")), "gce_setup.", "accelerator_configs")


def _notebook(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """A (legacy) user-managed notebook instance: one VM of its machine type and accelerator_config."""
    return _notebook_vm(ctx, req, after, after, "", "accelerator_config")


def _notebook_vm(ctx: _Ctx, req: Request, after: dict[str, Any], vm: dict[str, Any], prefix: str, accel: str) -> Request | None:
    """A notebook's one VM: ``vm``'s machine_type and its ``accel`` blocks ({type, core_count}), in the zone ``location``."""
    machine = _str(ctx, req, f"{prefix}machine_type", vm.get("machine_type"))
    if not _gpu(ctx, req, machine, _accelerators(vm.get(accel), "type", "core_count"), f"{prefix}{accel}"):
        return None
    req.region = _zone_region(_str(ctx, req, "location", after.get("location")))
    req.link = _link(after, "labels")
    return req


def _gce_reservation(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    """A Compute Engine reservation: specific_reservation.count VMs of instance_properties' machine type and
    guest_accelerators, billed whether or not a VM uses them."""
    spec = _first(after.get("specific_reservation"))
    props = _first(spec.get("instance_properties"))
    machine = _str(ctx, req, "specific_reservation.instance_properties.machine_type", props.get("machine_type"))
    guest = _accelerators(props.get("guest_accelerators"), "accelerator_type", "accelerator_count")
    if not _gpu(ctx, req, machine, guest, "specific_reservation.instance_properties.guest_accelerators"):
        return None
    n = _num(ctx, req, "specific_reservation.count", spec.get("count"), _first(unknown.get("specific_reservation")))
    req.replicas_min = req.replicas_max = n if n is not None else 1
    req.region = _zone_region(_str(ctx, req, "zone", after.get("zone")))
    req.pricing = "reservation"
    req.notes.append("a reservation is billed for every VM it holds, used or not; the VMs that consume it are not billed again")
    req.link = _link(after, "labels")
    return req


def _aws_reservation(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    """An EC2 On-Demand Capacity Reservation: instance_count instances of instance_type, billed whether or not an
    instance runs in it."""
    itype = _str(ctx, req, "instance_type", after.get("instance_type"))
    if not itype or not _gpu(ctx, req, itype, None, ""):
        return None
    n = _num(ctx, req, "instance_count", after.get("instance_count"), unknown)
    req.replicas_min = req.replicas_max = n if n is not None else 1
    req.region = _zone_region(_str(ctx, req, "availability_zone", after.get("availability_zone"))) or ctx.aws_region
    req.pricing = "reservation"
    req.notes.append("a capacity reservation is billed for every instance it holds, used or not")
    req.link = _link(after, "tags", "tags_all")
    return req


def _cloud_run(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """A Cloud Run service with GPUs: template.node_selector.accelerator (nvidia-l4, nvidia-rtx-pro-6000), the
    containers' nvidia.com/gpu limit (1 where not written), and min..max instances (template.scaling or the
    service's scaling; no maximum written is request-unresolved: the service's default applies)."""
    tpl = _first(after.get("template"))
    accel = _str(ctx, req, "template.node_selector.accelerator", _first(tpl.get("node_selector")).get("accelerator"))
    if not accel:
        return None
    hw = ctx.index.lookup(accel)
    req.set_hardware(accel, hw)
    gpus = []
    containers = tpl.get("containers")
    if containers is not None and not isinstance(containers, list):
        raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: template.containers: expected a list of blocks")
    for c in containers or []:
        limits = _first(c.get("resources")).get("limits") if isinstance(c, dict) else None
        if limits is not None and not isinstance(limits, dict):
            raise InputError.single(ctx.path, req.line, req.col,
                                    f"{req.address}: template.containers.resources.limits: expected a map, got {type(limits).__name__}")
        if limits and limits.get("nvidia.com/gpu") is not None:
            gpus.append(limits["nvidia.com/gpu"])
    n = gpus[0] if gpus else 1
    req.count = n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else (ascii_int(n) if isinstance(n, str) else None)
    if req.count is None:
        req.unresolved.append(("template.containers.resources.limits.nvidia.com/gpu", str(n)[:60], req.pos("count")))
    scaling = {**_first(after.get("scaling")), **{k: v for k, v in _first(tpl.get("scaling")).items() if v is not None}}
    lo = _num(ctx, req, "template.scaling.min_instance_count", scaling.get("min_instance_count"))
    hi = _num(ctx, req, "template.scaling.max_instance_count", scaling.get("max_instance_count"))
    req.replicas_min = lo or 0
    req.replicas_max = hi if hi is not None else max(lo or 0, 1)
    if hi is None:
        req.unresolved.append(("template.scaling.max_instance_count", "(not set: the service's default maximum)", req.pos("count")))
    req.region = _str(ctx, req, "location", after.get("location"))
    req.notes.append("Cloud Run bills a GPU instance per second while it runs, at its own rate: priced here as the catalog's "
                     "on-demand rate for the accelerator at the maximum instance count, an upper bound")
    req.link = _link(after, "labels")
    return req


def _sagemaker(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    """A SageMaker notebook instance or an endpoint's production variant: ``ml.`` + an EC2 instance type
    (ml.g5.12xlarge), initial_instance_count instances of it (a notebook: one)."""
    itype = _str(ctx, req, "instance_type", after.get("instance_type"))
    if not itype or not _gpu(ctx, req, itype.removeprefix("ml."), None, ""):
        return None
    req.hardware = itype
    if "initial_instance_count" in after or "initial_instance_count" in unknown:
        n = _num(ctx, req, "initial_instance_count", after.get("initial_instance_count"), unknown)
        req.replicas_min = req.replicas_max = n if n is not None else 1
        req.notes.append("initial_instance_count: an endpoint's autoscaling policy (application autoscaling) may add more")
    req.region = ctx.aws_region
    req.notes.append("SageMaker bills an ml. instance at its own rate, above the EC2 rate of the same instance type priced here")
    req.link = _link(after, "tags", "tags_all")
    return req


def _vertex_pool(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """A Vertex AI deployment resource pool: dedicated_resources.machine_spec (machine_type, accelerator_type in Vertex's
    spelling, accelerator_count) x min..max_replica_count."""
    ded = _first(after.get("dedicated_resources"))
    spec = _first(ded.get("machine_spec"))
    machine = _str(ctx, req, "dedicated_resources.machine_spec.machine_type", spec.get("machine_type"))
    guest = _accelerators([spec], "accelerator_type", "accelerator_count") if spec.get("accelerator_type") else None
    if not _gpu(ctx, req, machine, guest, "dedicated_resources.machine_spec"):
        return None
    lo = _num(ctx, req, "dedicated_resources.min_replica_count", ded.get("min_replica_count"))
    hi = _num(ctx, req, "dedicated_resources.max_replica_count", ded.get("max_replica_count"))
    req.replicas_min = lo if lo is not None else 1
    req.replicas_max = hi if hi is not None else req.replicas_min
    req.region = _str(ctx, req, "region", after.get("region"))
    return req


def _model_garden(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """A Vertex AI endpoint with a Model Garden deployment: ``deploy_config.dedicated_resources`` read as a deployment
    resource pool's; without a machine spec, Model Garden deploys on the model's default hardware (accelerators for most
    of its models), a request of unknown hardware, never passed over."""
    ded = _first(_first(after.get("deploy_config")).get("dedicated_resources"))
    if _first(ded.get("machine_spec")):
        return _vertex_pool(ctx, req, {"dedicated_resources": ded, "region": after.get("location")})
    model = _str(ctx, req, "publisher_model_name", after.get("publisher_model_name")) or _str(
        ctx, req, "hugging_face_model_id", after.get("hugging_face_model_id"))
    req.hardware, req.count = None, None
    req.unknown = f"no deploy_config.dedicated_resources.machine_spec: Model Garden deploys {model or 'the model'} on its default hardware"
    req.unresolved.append(("count-unknown", "the machine, its accelerators and the replicas are Model Garden's defaults for the model, "
                           "not in the file; set deploy_config.dedicated_resources", req.pos("count")))
    req.region = _str(ctx, req, "location", after.get("location"))
    return req


def _azure_batch(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    """An Azure Batch pool: ``vm_size`` x ``fixed_scale`` dedicated + low-priority nodes (low priority as spot, the larger
    share deciding); an ``auto_scale`` formula decides the nodes itself: request-unresolved with that reason."""
    size = _str(ctx, req, "vm_size", after.get("vm_size"))
    if not size or not _gpu(ctx, req, size, None, ""):
        return None
    fixed, auto = _first(after.get("fixed_scale")), _first(after.get("auto_scale"))
    if fixed:
        dedicated = _num(ctx, req, "fixed_scale.target_dedicated_nodes", fixed.get("target_dedicated_nodes")) or 0
        low = _num(ctx, req, "fixed_scale.target_low_priority_nodes", fixed.get("target_low_priority_nodes")) or 0
        req.replicas_min = req.replicas_max = dedicated + low
        if low > dedicated:
            req.pricing = "spot"
    elif auto:
        req.replicas_min, req.replicas_max = 0, None
        req.unresolved.append(("count-unknown", "auto_scale.formula decides the pool's nodes at run time", req.pos("count")))
    req.region = _str(ctx, req, "location", after.get("location"))
    req.link = _link(after, "metadata")
    return req


def _azure_ml(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """An Azure Machine Learning compute cluster (vm_size, scale_settings min..max nodes, vm_priority) or compute
    instance (virtual_machine_size, one VM)."""
    size = _str(ctx, req, "vm_size", after.get("vm_size")) or _str(ctx, req, "virtual_machine_size", after.get("virtual_machine_size"))
    if not size or not _gpu(ctx, req, size, None, ""):
        return None
    scale = _first(after.get("scale_settings"))
    if scale:
        lo = _num(ctx, req, "scale_settings.min_node_count", scale.get("min_node_count"))
        hi = _num(ctx, req, "scale_settings.max_node_count", scale.get("max_node_count"))
        req.replicas_min, req.replicas_max = lo or 0, hi if hi is not None else max(lo or 0, 1)
    if after.get("vm_priority") == "LowPriority":
        req.pricing = "spot"
    req.region = _str(ctx, req, "location", after.get("location"))
    req.link = _link(after, "tags")
    return req


def _mig(
    ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]
) -> Request | None:
    tpl = _joined(ctx, req.address, by_addr, ("google_compute_instance_template", "google_compute_region_instance_template"))
    if tpl is None:
        return None
    inner = _gce(ctx, req, tpl[1], {})
    if inner is None:
        return None
    consumed.add(tpl[0])
    size = _num(ctx, req, "target_size", after.get("target_size"), unknown)
    req.replicas_min = req.replicas_max = size if size is not None else 1
    req.notes = [n for n in req.notes if not n.startswith("an instance template")]
    req.notes.append(f"hardware from {tpl[0]}")
    return req


def _joined(ctx: _Ctx, address: str, by_addr: dict[str, dict[str, Any]], types: tuple[str, ...]) -> tuple[str, dict[str, Any]] | None:
    """The resource of one of ``types`` that this one's configuration references; of its
    instances, the one with the same key (``group[0]`` uses ``template[0]``), else the first."""
    key = m.group(0) if (m := INDEX.search(address)) else ""
    found: list[tuple[str, dict[str, Any]]] = []
    for ref in sorted(ctx.refs.get(config_address(address), set())):
        instances = ctx.config_index.get(ref, [])
        for full in sorted(instances, key=lambda a: not a.endswith(key) if key else False):
            rc = by_addr.get(full)
            if rc is not None and rc["type"] in types and isinstance(rc["change"].get("after"), dict):
                found.append((full, rc["change"]["after"]))
                break
    # several referenced (a tag naming another template): the one whose machine has accelerators, never a decoy's
    for full, after in found:
        itype = after.get("instance_type")
        if isinstance(itype, str) and ctx.index.instance_accelerator(itype) is not None:
            return full, after
    return found[0] if found else None


def _aws_market(req: Request, after: dict[str, Any]) -> None:
    market = _first(after.get("instance_market_options")).get("market_type")
    if market == "spot":
        req.pricing = "spot"
    elif market == "capacity-block":
        req.pricing = "reservation"


def _aws_instance(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    itype = _str(ctx, req, "instance_type", after.get("instance_type"))
    if not itype or not _gpu(ctx, req, itype, None, ""):
        return None
    req.region = ctx.aws_region
    _aws_market(req, after)
    req.link = _link(after, "tags", "tags_all")
    return req


BATCH_DEFAULT_TYPES = ("optimal", "default_x86_64", "default_arm64")  # AWS Batch's own choice of C, M and R families


def _batch(ctx: _Ctx, req: Request, after: dict[str, Any], *_: Any) -> Request | None:
    """An AWS Batch compute environment (``compute_resources``): the accelerator instance types (or families) it may
    launch, up to ``max_vcpus``. How many instances that is depends on each type's vCPUs, which the catalog does not hold:
    the count is request-unresolved, never guessed; SPOT as spot; Fargate has no accelerators."""
    res = _first(after.get("compute_resources"))
    kind = _str(ctx, req, "compute_resources.type", res.get("type")) or "EC2"
    types = res.get("instance_type")
    if kind.upper().startswith("FARGATE") or types is None:
        return None
    if not isinstance(types, list):
        raise InputError.single(ctx.path, req.line, req.col, f"{req.address}: compute_resources.instance_type: expected a list")
    found: list[tuple[str, Hardware]] = []
    for i, t in enumerate(types[:MAX_RESOURCES]):
        name = _str(ctx, req, f"compute_resources.instance_type[{i}]", t)
        if not name or name.lower() in BATCH_DEFAULT_TYPES:
            continue
        hw = ctx.index.instance_accelerator(name)
        if hw is not None:
            found.append((name, hw))
    if not found:
        return None
    name, hw = found[0]
    req.set_hardware(name, hw)
    req.count = hw.chips
    req.alternatives = [n for n, _ in found[1:]]
    req.options = [(h.accelerator, h.chips) for _, h in found[1:]]
    req.region = ctx.aws_region
    high = _num(ctx, req, "compute_resources.max_vcpus", res.get("max_vcpus"))
    low = _num(ctx, req, "compute_resources.min_vcpus", res.get("min_vcpus"))
    req.replicas_min, req.replicas_max = (0 if not low else None), None
    req.unresolved.append(("count-unknown", f"compute_resources.max_vcpus = {'?' if high is None else high} bounds the instances it "
                           "launches, but how many that is depends on each instance type's vCPUs, which the catalog does not hold",
                           req.pos("count")))
    if kind.upper() == "SPOT":
        req.pricing = "spot"
    req.always_on = False
    req.notes.append("an AWS Batch compute environment: it launches instances for queued jobs, up to max_vcpus")
    req.link = _link(res, "tags") or _link(after, "tags")
    return req


def _asg(
    ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]
) -> Request | None:
    tpl = _joined(ctx, req.address, by_addr, ("aws_launch_template",))
    if tpl is None:
        return None
    if _aws_instance(ctx, req, tpl[1]) is None:
        return None
    consumed.add(tpl[0])
    lo = _num(ctx, req, "min_size", after.get("min_size"))
    hi = _num(ctx, req, "max_size", after.get("max_size"))
    want = _num(ctx, req, "desired_capacity", after.get("desired_capacity"))
    req.replicas_min = lo if lo is not None else (want or 0)
    req.replicas_max = hi if hi is not None else (want or req.replicas_min)
    req.notes.append(f"hardware from {tpl[0]}")
    return req


def _eks(
    ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]
) -> Request | None:
    types = after.get("instance_types")
    names = [t for t in types if isinstance(t, str)] if isinstance(types, list) else []
    if names:
        if not _gpu(ctx, req, names[0], None, ""):
            return None
        req.alternatives = names[1:]
        req.options = [(hw.accelerator, hw.chips) for hw in map(ctx.index.lookup, names[1:])]
        req.region = ctx.aws_region
    else:
        tpl = _joined(ctx, req.address, by_addr, ("aws_launch_template",))
        if tpl is None or _aws_instance(ctx, req, tpl[1]) is None:
            return None
        consumed.add(tpl[0])
    scaling = _first(after.get("scaling_config"))
    lo = _num(ctx, req, "scaling_config.min_size", scaling.get("min_size"))
    hi = _num(ctx, req, "scaling_config.max_size", scaling.get("max_size"))
    want = _num(ctx, req, "scaling_config.desired_size", scaling.get("desired_size"))
    req.replicas_min = lo if lo is not None else (want or 1)
    req.replicas_max = hi if hi is not None else (want or req.replicas_min)
    cap = after.get("capacity_type")
    if cap == "SPOT":
        req.pricing = "spot"
    elif cap == "CAPACITY_BLOCK":
        req.pricing = "reservation"
    req.link = req.link or _link(after, "labels", "tags")
    return req


def _azure(ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], *_: Any) -> Request | None:
    size = (
        _str(ctx, req, "vm_size", after.get("vm_size"))
        or _str(ctx, req, "size", after.get("size"))
        or _str(ctx, req, "sku", after.get("sku"))
    )
    if not size or not _gpu(ctx, req, size, None, ""):
        return None
    req.region = _str(ctx, req, "location", after.get("location"))
    if "instances" in after:
        n = _num(ctx, req, "instances", after.get("instances"), unknown)
        req.replicas_min = req.replicas_max = n if n is not None else 1
    elif "node_count" in after or "max_count" in after:
        auto = after.get("auto_scaling_enabled") is True or after.get("enable_auto_scaling") is True
        lo = _num(ctx, req, "min_count", after.get("min_count"))
        hi = _num(ctx, req, "max_count", after.get("max_count"))
        n = _num(ctx, req, "node_count", after.get("node_count"), unknown)
        if auto and hi is not None:
            req.replicas_min, req.replicas_max = lo or 0, hi
        else:
            req.replicas_min = req.replicas_max = n if n is not None else 1
    if after.get("priority") == "Spot":
        req.pricing = "spot"
    req.link = _link(after, "tags", "node_labels")
    return req


def _spot_instance(
    ctx: _Ctx, req: Request, after: dict[str, Any], unknown: dict[str, Any], by_addr: dict[str, dict[str, Any]], consumed: set[str]
) -> Request | None:
    """aws_spot_instance_request: one EC2 instance, as aws_instance reads it, bought as spot."""
    got = _aws_instance(ctx, req, after, unknown, by_addr, consumed)
    if got is not None:
        got.pricing = "spot"
    return got


_READERS: dict[str, Reader] = {
    "google_tpu_v2_vm": _tpu_vm,
    "google_tpu_node": _tpu_vm,
    "google_vertex_ai_endpoint_with_model_garden_deployment": _model_garden,
    "azurerm_virtual_machine": _azure,
    "azurerm_batch_pool": _azure_batch,
    "google_tpu_v2_queued_resource": _queued,
    "google_container_node_pool": _node_pool,
    "google_container_cluster_auto_provisioning": _auto_provisioning,
    "google_compute_instance": _gce,
    "google_compute_instance_template": _gce,
    "google_compute_region_instance_template": _gce,
    "google_compute_instance_group_manager": _mig,
    "google_compute_region_instance_group_manager": _mig,
    "aws_instance": _aws_instance,
    "aws_spot_instance_request": _spot_instance,
    "aws_launch_template": _aws_instance,
    "aws_autoscaling_group": _asg,
    "aws_batch_compute_environment": _batch,
    "aws_eks_node_group": _eks,
    "google_workbench_instance": _workbench,
    "google_notebooks_instance": _notebook,
    "google_compute_reservation": _gce_reservation,
    "aws_ec2_capacity_reservation": _aws_reservation,
    "google_cloud_run_v2_service": _cloud_run,
    "aws_sagemaker_production_variant": _sagemaker,
    "aws_sagemaker_notebook_instance": _sagemaker,
    "google_vertex_ai_deployment_resource_pool": _vertex_pool,
    "azurerm_machine_learning_compute_cluster": _azure_ml,
    "azurerm_machine_learning_compute_instance": _azure_ml,
    "azurerm_kubernetes_cluster_node_pool": _azure,
    "azurerm_linux_virtual_machine": _azure,
    "azurerm_linux_virtual_machine_scale_set": _azure,
    "azurerm_windows_virtual_machine": _azure,
    "azurerm_windows_virtual_machine_scale_set": _azure,
}
