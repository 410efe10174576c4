"""Cluster Toolkit blueprints (``gcluster deploy blueprint.yaml``; GoogleCloudPlatform/cluster-toolkit): every
module of ``deployment_groups[].modules`` that creates accelerator nodes is one request. Read:
``modules/compute/gke-node-pool`` (``machine_type``, ``guest_accelerator``, ``static_node_count``, else
``autoscaling_total_min_nodes`` (0) .. ``autoscaling_total_max_nodes`` (1000); TPU ``num_slices`` of
``placement_policy.tpu_topology``), the Slurm nodesets ``schedmd-slurm-gcp-v6-nodeset`` (``node_count_static``
(0) .. + ``node_count_dynamic_max`` (10)) and ``modules/compute/vm-instance`` (``instance_count``, 1). The
defaults are the modules' own variable defaults. A setting ``$(vars.NAME)`` takes the blueprint's ``vars``, and
the deployment file beside it (``NAME-deployment.yaml`` with ``vars``, as ``gcluster deploy -d`` takes) puts its
vars over them (``... [-d FILE]``); any other ``$(...)`` (a module's output, an expression) is
``request-unresolved``. Spot: ``spot`` / ``enable_spot_vm``; a specific reservation: ``reservation_affinity`` or
``reservation_name``; DWS flex-start: ``enable_flex_start`` / ``enable_queued_provisioning`` (noted, priced
on-demand). A CPU machine asks for no accelerator and is not a request. A module of another kind whose settings
name a machine with accelerators or an accelerator (``machine_type``, ``guest_accelerator``, a TPU ``node_type``: the
Slurm TPU nodeset, a remote desktop, a Slurm login node) is a request of that hardware whose count is not read."""

from __future__ import annotations

import os
import re
from typing import Any

from advisor.check.infra.model import Parsed, Request, fail_at, label_variant, whole_number
from advisor.check.infra.names import NameIndex, topology_chips
from advisor.yamlsrc import Document, KeyPath

_VAR = re.compile(r"\$\(vars\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\)")
_EXPR = re.compile(r"\$\(")
# module source (its last path components) -> (replicas fields, defaults)
GKE_POOL, SLURM_NODESET, VM = "gke-node-pool", "schedmd-slurm-gcp-v6-nodeset", "vm-instance"
_KINDS = (GKE_POOL, SLURM_NODESET, VM)


def is_blueprint(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("blueprint_name"), str) and isinstance(data.get("deployment_groups"), list)


def parse(docs: list[Document], index: NameIndex) -> Parsed:
    out = Parsed("blueprint")
    for doc in docs:
        if not is_blueprint(doc.data):
            continue
        blueprint_vars = doc.data["vars"] if isinstance(doc.data.get("vars"), dict) else {}
        deployments = deployment_files(doc.path)
        if not deployments:
            out.requests += _blueprint(doc, index, blueprint_vars)
        for path, dvars in deployments:  # gcluster deploy -d FILE: its vars over the blueprint's
            reqs = _blueprint(doc, index, {**blueprint_vars, **dvars})
            label_variant(reqs, [], f" [-d {os.path.basename(path)}]", f"with the vars of {os.path.basename(path)} (gcluster deploy -d)")
            out.requests += reqs
    return out


MAX_DEPLOYMENT_FILES = 16
MAX_VAR_DEPTH = 16  # a var naming a var naming a var ...: deeper (a cycle) is unresolved
MAX_DEPLOYMENT_BYTES = 1024 * 1024


def deployment_files(blueprint: str) -> list[tuple[str, dict[str, Any]]]:
    """The deployment files beside a blueprint (``*deployment*.yaml``: a mapping with ``vars`` and no blueprint or
    manifest keys, as ``gcluster deploy -d`` takes), each with its vars; links are not followed."""
    from advisor.errors import InputError
    from advisor.yamlsrc import load_documents, read_text

    if blueprint == "-":
        return []
    here = os.path.dirname(os.path.abspath(blueprint))
    try:
        names = sorted(n for n in os.listdir(here) if "deployment" in n.lower() and n.endswith((".yaml", ".yml")))
    except OSError:
        return []
    # the blueprint's own: NAME-deployment.yaml beside NAME.yaml / NAME-blueprint.yaml; else the only one there
    mine = [n for n in names if _stem(n, "deployment") == _stem(os.path.basename(blueprint), "blueprint")]
    names = mine or (names if len(names) == 1 else [])
    out: list[tuple[str, dict[str, Any]]] = []
    for name in names[:MAX_DEPLOYMENT_FILES]:
        path = os.path.join(here, name)
        if os.path.islink(path) or not os.path.isfile(path) or os.path.samefile(path, blueprint):
            continue
        try:
            docs = load_documents(read_text(path, max_bytes=MAX_DEPLOYMENT_BYTES), path)
        except (InputError, OSError):
            continue  # read on its own by the run, which reports it
        data = docs[0].data if docs else None
        if isinstance(data, dict) and isinstance(data.get("vars"), dict) and not ({"deployment_groups", "apiVersion", "kind"} & set(data)):
            out.append((os.path.relpath(path, os.path.dirname(os.path.abspath(blueprint))), data["vars"]))
    return out


def _stem(name: str, word: str) -> str:
    base = name.rsplit(".", 1)[0].lower()
    return re.sub(rf"[-_.]?{word}$", "", base)


def _kind(source: Any) -> str | None:
    if not isinstance(source, str):
        return None
    tail = source.rstrip("/").rsplit("/", 1)[-1]
    return tail if tail in _KINDS else None


def _blueprint(doc: Document, index: NameIndex, vars_: dict[str, Any]) -> list[Request]:
    data = doc.data
    name = data["blueprint_name"]
    out: list[Request] = []
    for gi, group in enumerate(data["deployment_groups"]):
        if not isinstance(group, dict):
            raise fail_at(doc, ("deployment_groups", gi), "expected a mapping (group, modules)")
        modules = group.get("modules")
        if not isinstance(modules, list):
            continue
        gname = group.get("group") if isinstance(group.get("group"), str) else str(gi)
        for mi, module in enumerate(modules):
            loc: KeyPath = ("deployment_groups", gi, "modules", mi)
            if not isinstance(module, dict):
                raise fail_at(doc, loc, "expected a mapping (id, source, settings)")
            kind = _kind(module.get("source"))
            settings: dict[str, Any] = module["settings"] if isinstance(module.get("settings"), dict) else {}
            mid = module.get("id") if isinstance(module.get("id"), str) else str(mi)
            line, col = doc.where((*loc, "id")) if "id" in module else doc.where(loc)
            req = Request(doc.path, "blueprint", f"{name}/{gname}/{mid}", line, col)
            req.cloud = "gcp"
            got = _Settings(doc, (*loc, "settings"), settings, vars_, req)
            if kind is None:
                unread = _unread_module(module, got, req, index)
                if unread is not None:
                    out.append(unread)
                continue
            if not _hardware(got, req, index):
                continue
            _replicas(got, req, kind, _used_topology(module, modules, doc, (*loc[:-1],), vars_, req))
            _pricing(got, req)
            zones = got.value("zones", counted=False)
            zone = zones[0] if isinstance(zones, list) and zones and isinstance(zones[0], str) else got.value("zone", counted=False)
            region = got.value("region", counted=False)
            if isinstance(zone, str) and zone.count("-") >= 2:
                req.region = zone.rsplit("-", 1)[0]
            elif isinstance(region, str):
                req.region = region
            req.always_on = True
            out.append(req)
    return out


_MACHINE_SETTINGS = ("machine_type", "guest_accelerator", "node_type", "accelerator_type", "accelerator_config", "tpu_type",
                     "instance_type")


def _unread_module(module: dict[str, Any], s: _Settings, req: Request, index: NameIndex) -> Request | None:
    """A module of a kind not read here (a Slurm TPU nodeset, a remote desktop, a Slurm login node) whose settings name a
    machine with accelerators or an accelerator (``machine_type: a2-highgpu-1g``, ``guest_accelerator`` T4,
    ``node_type: v3-8``): a request of that hardware whose count is not read (request-unresolved), never a module
    passed in silence."""
    from advisor.check.infra import tfplan

    # the settings that create machines (a module's template variables for kubectl manifests, Kueue's flavors and
    # quotas, name accelerators too, and create nothing)
    resolved = {k: s.value(k, counted=False) for k in s.settings if k in _MACHINE_SETTINGS}
    machine = tfplan.machine_named(index, resolved)
    if machine is None:
        return None
    req.unresolved = [u for u in req.unresolved if u[0] not in resolved]  # only the count is in question
    source = str(module.get("source"))[:120]
    tfplan.unread_request(req, index, machine, f"the module {source} is not read here: it names {machine}, but how many "
                          "it creates is not read")
    req.notes.append(f"module {source} not read; it names {machine}")
    return req


class _Settings:
    """A module's settings with ``$(vars.NAME)`` replaced by the blueprint's vars (a module setting left out takes the
    blueprint var of the same name, as gcluster does); an expression it cannot evaluate is recorded on the request
    and read as absent."""

    def __init__(self, doc: Document, loc: KeyPath, settings: dict[str, Any], vars_: dict[str, Any], req: Request) -> None:
        self.doc, self.loc, self.settings, self.vars, self.req = doc, loc, settings, vars_, req

    def where(self, key: str) -> tuple[int, int]:
        return self.doc.where((*self.loc, key)) if key in self.settings else self.doc.where(self.loc)

    def present(self, key: str) -> bool:
        return key in self.settings or key in self.vars

    def value(self, key: str, default: Any = None, *, counted: bool = True) -> Any:
        """The setting's value; ``counted``: it decides the hardware, the count or the price, so one that is not known
        here is recorded as unresolved (a zone or region is not)."""
        v = self.settings[key] if key in self.settings else self.vars.get(key, default)
        if key not in self.settings and key in self.vars and v is None and counted:
            self.req.unresolved.append((key, f"vars.{key} (left empty: given at deploy)", self.where(key)))
        return self._resolve(key, v, default, counted)

    def _resolve(self, key: str, v: Any, default: Any, counted: bool, depth: int = 0) -> Any:
        if isinstance(v, str):
            m = _VAR.fullmatch(v.strip())
            if m:
                node: Any = self.vars.get(m.group(1))
                for part in m.group(2).split(".")[1:]:
                    node = node.get(part) if isinstance(node, dict) else None
                # not in the vars, left empty for the deployment file to give, or vars naming each other in a cycle
                if node is None or depth >= MAX_VAR_DEPTH:
                    if counted:
                        self.req.unresolved.append((key, v[:80], self.where(key)))
                    return None
                return self._resolve(key, node, default, counted, depth + 1)
            if _EXPR.search(v):
                if counted:
                    self.req.unresolved.append((key, v[:80], self.where(key)))
                return None
        if isinstance(v, list):
            return [self._resolve(key, x, None, counted) for x in v]
        if isinstance(v, dict):
            return {k: self._resolve(key, x, None, counted) for k, x in v.items()}
        return v

    def count(self, key: str, default: int | None) -> int | None:
        """A whole number; the module's default when the blueprint leaves it out, None when it is not a literal. A
        var that is no number (a deployment file's ``NODE_COUNT`` placeholder) is unresolved: it is the var's file
        that holds it, not this setting."""
        raw = self.settings[key] if key in self.settings else self.vars.get(key)
        v = self.value(key)
        if v is None:
            return default if raw is None else None
        if v is not raw and isinstance(v, str) and not re.fullmatch(r"[0-9]{1,9}", v.strip()):
            self.req.unresolved.append((key, f"{raw} = {v[:40]!r}", self.where(key)))
            return None
        return whole_number(self.doc, (*self.loc, key), v, self.req)


def _hardware(s: _Settings, req: Request, index: NameIndex) -> bool:
    machine = s.value("machine_type")
    guest = s.value("guest_accelerator")
    if isinstance(guest, list) and guest and isinstance(guest[0], dict) and isinstance(guest[0].get("type"), str):
        req.set_hardware(guest[0]["type"], index.lookup(guest[0]["type"]))
        n = guest[0].get("count")
        req.count = n if isinstance(n, int) and not isinstance(n, bool) else None
        req.where["accelerator"] = req.where["count"] = s.where("guest_accelerator")
        if req.count is None:
            req.unresolved.append(("guest_accelerator.count", str(n)[:80], s.where("guest_accelerator")))
        return True
    if not isinstance(machine, str):
        if any(f == "machine_type" for f, _v, _p in req.unresolved):
            req.set_hardware("?", index.lookup("?"))
            return True  # a machine type that is not a literal: reported, not passed over
        return False
    hw = index.lookup(machine)
    if (not hw.known and not index.is_unsupported(machine)) or index.is_cpu(hw.accelerator or ""):
        return False  # a CPU machine (one the catalog prices for CPU work too, n2-standard-8): no accelerator asked for
    req.set_hardware(machine, hw)
    req.where["accelerator"] = req.where["count"] = s.where("machine_type")
    req.count = hw.chips
    return True


def _used_topology(module: dict[str, Any], modules: list[Any], doc: Document, at: KeyPath, vars_: dict[str, Any],
                   req: Request) -> str | None:
    """The TPU topology a node pool takes from a module it uses (``use:``): a resource policy's
    ``workload_policy.accelerator_topology`` (modules/compute/resource-policy), which gcluster gives the pool as its
    placement policy and from which it works out the pool's node count (review 33: Cluster Toolkit's gke-tpu-7x pool of
    a 2x2x1 topology, one node, was read at gke-node-pool's default 0..1000 nodes, 4,000 chips)."""
    use = module.get("use")
    used: list[Any] = use if isinstance(use, list) else []
    for mi, other in enumerate(modules):
        if not isinstance(other, dict) or other.get("id") not in used or not isinstance(other.get("settings"), dict):
            continue
        got = _Settings(doc, (*at, mi, "settings"), other["settings"], vars_, req)
        policy = got.value("workload_policy", counted=False)
        topo = policy.get("accelerator_topology") if isinstance(policy, dict) else None
        if isinstance(topo, str):
            resolved = got._resolve("workload_policy.accelerator_topology", topo, None, True)
            if isinstance(resolved, str):
                return resolved
    return None


def _replicas(s: _Settings, req: Request, kind: str, used_topology: str | None = None) -> None:
    if kind == GKE_POOL:
        topo = (s.value("placement_policy") or {}).get("tpu_topology") if isinstance(s.value("placement_policy"), dict) else None
        topo = topo or used_topology
        chips = topology_chips(topo) if isinstance(topo, str) else None
        if chips and req.count:  # a multi-host TPU slice: num_slices slices of the topology
            hosts = max(1, chips // req.count)
            req.count, req.hosts, req.topology, req.topology_chips = chips, hosts, topo, chips
            n = s.count("num_slices", 1)
            req.replicas_min = req.replicas_max = n
            req.where["replicas"] = s.where("num_slices")
            req.notes.append(f"{n} slice(s) of {topo} ({hosts} hosts each)")
            return
        if s.present("static_node_count"):
            static = s.count("static_node_count", None)
            req.replicas_min = req.replicas_max = static  # None: not known here (unresolved, said)
            req.where["replicas"] = s.where("static_node_count")
            if static is not None or any(f == "static_node_count" for f, _v, _p in req.unresolved):
                return
        req.replicas_min = s.count("autoscaling_total_min_nodes", 0)
        req.replicas_max = s.count("autoscaling_total_max_nodes", 1000)
        req.where["replicas"] = s.where("autoscaling_total_max_nodes")
        req.notes.append(f"autoscaling {req.replicas_min}..{req.replicas_max} nodes (gke-node-pool's defaults: 0..1000)")
    elif kind == SLURM_NODESET:
        static = s.count("node_count_static", 0)
        dynamic = s.count("node_count_dynamic_max", 10)
        req.replicas_min = static
        req.replicas_max = None if static is None or dynamic is None else static + dynamic  # None: not known here (said)
        req.where["replicas"] = s.where("node_count_dynamic_max")
        req.notes.append(f"Slurm nodeset: {static} static + up to {dynamic} dynamic nodes")
    else:
        n = s.count("instance_count", 1)
        req.replicas_min = req.replicas_max = n
        req.where["replicas"] = s.where("instance_count")


def _pricing(s: _Settings, req: Request) -> None:
    if s.value("spot") is True or s.value("enable_spot_vm") is True:
        req.pricing = "spot"
    res = s.value("reservation_affinity", counted=False)  # its type decides the price; the reservation's name does not
    specific = isinstance(res, dict) and "SPECIFIC" in str(res.get("consume_reservation_type", ""))
    if specific or isinstance(s.value("reservation_name"), str):
        req.pricing = "reservation"
    if s.value("enable_flex_start") is True or s.value("enable_queued_provisioning") is True:
        req.notes.append("DWS flex-start / queued provisioning: priced as on-demand")
