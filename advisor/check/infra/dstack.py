"""dstack configurations (``.dstack.yml``, ``*.dstack.yml``): ``type: task | service | dev-environment | fleet``.

What dstack provisions is read from ``resources.gpu`` (dstackai/dstack ``core/models/resources.py`` ``GPUSpec.parse``):
a count (``8``), a ``:``-separated shorthand of vendor, name(s), memory and count in any order (``H100:8``,
``A100:40GB:2``, ``H100,H200:8``, ``amd:MI300X:8``, ``24GB..:1..2``, ``v5litepod-8``), or a mapping of ``vendor``,
``name``, ``count``, ``memory``. A count or memory range (``1..8``, ``40GB..``) is judged at its top: the most dstack
may provision; a count range without a top is ``request-unresolved``. Several names are alternatives: dstack takes the
cheapest offer that matches, so the cheapest priced one is read and the others are listed. A spec without a name (a
count, a memory size, a vendor) matches any GPU: a request of unknown hardware, never priced as one guessed. A TPU name
(``v5litepod-8``, ``v6e-16``) is the whole slice.

Replicas: a task's ``nodes`` (its ``groups``, each a request of its own), a service's ``replicas`` (a number or
``min..max``; its ``groups``, or the older list form), a fleet's ``nodes`` (``N``, ``min..max`` or
``{min, target, max}``; no ``max`` is ``request-unresolved``: the fleet grows as runs ask). Services, dev environments
and fleets stay up (priced always-on); a task is a job (its ``max_duration`` is said). An SSH fleet (``ssh_config``)
is hosts the team already runs, no cloud spend: not a request. Cloud and region from ``backends`` and ``regions`` where
they name one; ``spot_policy: spot`` prices spot (``auto`` is priced on-demand, the dearer of what it may get)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor import clouds
from advisor.check.infra.model import Parsed, Request, fail_at, is_placeholder, whole_number
from advisor.check.infra.names import Hardware, NameIndex
from advisor.yamlsrc import Document, KeyPath

_VENDORS = {"nvidia": "nvidia", "amd": "amd", "google": "tpu", "tpu": "tpu", "intel": "intel"}
_COUNT = re.compile(r"([0-9]{1,6})?(\.\.)?([0-9]{1,6})?")
MAX_NAMES = 64
MAX_GROUPS = 1000


@dataclass
class _Spec:
    """A GPU spec as dstack parses it: vendor, names, count range (low, high; high None: no top) and memory."""

    vendor: str | None = None
    names: list[str] = field(default_factory=list)
    count: tuple[int, int | None] = (1, 1)  # dstack's default count: 1 (DEFAULT_GPU_COUNT, min 1)
    count_given: bool = False
    memory: str | None = None


def _count(doc: Document, loc: KeyPath, value: Any, req: Request) -> tuple[int, int | None] | None:
    """A count or ``min..max`` range (also ``{min, max}``); None where a placeholder stands for it."""
    if isinstance(value, dict):
        lo = whole_number(doc, (*loc, "min"), value.get("min"), req)
        hi = whole_number(doc, (*loc, "max"), value.get("max"), req)
        return (lo or 0, hi)
    if isinstance(value, str):
        if is_placeholder(value):
            whole_number(doc, loc, value, req)
            return None
        m = _COUNT.fullmatch(value.replace(" ", ""))
        if m is None or not (m.group(1) or m.group(3)) or (m.group(2) is None and m.group(3) is not None):
            raise fail_at(doc, loc, f"{value[:80]!r}: expected a count such as 8 or a range such as 1..8")
        lo = int(m.group(1)) if m.group(1) else 0
        hi = (int(m.group(3)) if m.group(3) else None) if m.group(2) else lo
        if hi is not None and hi < lo:
            raise fail_at(doc, loc, f"{value[:80]!r}: the range's top is below its bottom")
        return (lo, hi)
    n = whole_number(doc, loc, value, req)
    return None if n is None else (n, n)


def _spec(doc: Document, loc: KeyPath, gpu: Any, req: Request) -> _Spec | None:
    """``resources.gpu`` as dstack reads it; None where it (or its count) is a placeholder."""
    spec = _Spec()
    if isinstance(gpu, bool):
        raise fail_at(doc, loc, "expected a GPU spec such as 'H100:8', a count or a mapping")
    if isinstance(gpu, int):  # YAML 1.1 reads 8:8:8 as a base-60 number: bounded before it is printed
        gpu = str(whole_number(doc, loc, gpu, req))
    if isinstance(gpu, str):
        if is_placeholder(gpu):  # the whole spec is a template's: neither hardware nor count is read
            req.unresolved.append((".".join(map(str, loc)), gpu[:80], doc.where(loc)))
            return None
        seen: set[str] = set()
        for token in gpu.replace(" ", "").split(":"):
            if not token:
                raise fail_at(doc, loc, f"{gpu[:80]!r}: an empty part between ':'")
            low = token.lower()
            part = ("vendor" if low in _VENDORS else "name" if token[0].isalpha()  # a name starts with a letter (dstack's rule)
                    else "memory" if any(ch.isalpha() for ch in token) else "count")  # memory carries its unit
            if part in seen:
                raise fail_at(doc, loc, f"{gpu[:80]!r}: two {part}s (dstack reads vendor, name, memory and count once each)")
            seen.add(part)
            if part == "vendor":
                spec.vendor = _VENDORS[low]
            elif part == "name":
                spec.names = token.split(",")
            elif part == "memory":
                spec.memory = token
            else:
                got = _count(doc, loc, token, req)
                if got is None:
                    return None
                spec.count, spec.count_given = got, True
        return spec
    if isinstance(gpu, dict):
        vendor = gpu.get("vendor")
        if vendor is not None:
            if not isinstance(vendor, str) or vendor.lower() not in _VENDORS:
                raise fail_at(doc, (*loc, "vendor"), "expected one of nvidia, amd, google (tpu), intel")
            spec.vendor = _VENDORS[vendor.lower()]
        name = gpu.get("name")
        if isinstance(name, str):
            spec.names = name.split(",")
        elif isinstance(name, list) and all(isinstance(n, str) for n in name):
            spec.names = list(name)
        elif name is not None:
            raise fail_at(doc, (*loc, "name"), "expected a GPU name or a list of names")
        if "count" in gpu:
            got = _count(doc, (*loc, "count"), gpu["count"], req)
            if got is None:
                return None
            spec.count, spec.count_given = got, True
        memory = gpu.get("memory")
        spec.memory = memory if isinstance(memory, str) else None
        return spec
    raise fail_at(doc, loc, "expected a GPU spec such as 'H100:8', a count or a mapping")


def _lookup(index: NameIndex, name: str, spec: _Spec) -> Hardware:
    """The hardware a dstack GPU name means: with a memory size first (``A100`` + ``80GB`` is the 80 GB part), a TPU
    name as its slice (dstack drops a ``tpu-`` prefix; so does the index)."""
    if spec.memory and spec.memory[0].isdigit():
        top = spec.memory.split("..")[-1] or spec.memory.split("..")[0]
        sized = index.lookup(f"{name}-{top.upper().removesuffix('B')}B")
        if sized.known:
            return sized
    hw = index.lookup(name)
    if not hw.known and spec.vendor == "tpu" and not name.lower().startswith("tpu-"):
        tpu = index.lookup("tpu-" + name)
        if tpu.known:
            return tpu
    return hw


def _places(data: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """Every (cloud, region) dstack may provision in: its ``backends`` (any backend configured, where none) by its
    ``regions`` (any, where none)."""
    backends = data.get("backends")
    regions = data.get("regions")
    # distinct values first, then the bound: a list padded with one allowed value hides none after it; past the bound,
    # an unknown place (a finding under a limit)
    cloud_list: list[str | None] = list(dict.fromkeys(clouds.by_skypilot(b) or b[:40] for b in backends if isinstance(b, str))) \
        if isinstance(backends, list) and backends else [None]
    region_list: list[str | None] = list(dict.fromkeys(r[:64] for r in regions if isinstance(r, str))) \
        if isinstance(regions, list) and regions else [None]
    cloud_list = cloud_list[:32] + ([None] if len(cloud_list) > 32 else [])
    region_list = region_list[:64] + ([None] if len(region_list) > 64 else [])
    return [(c, r) for c in cloud_list for r in region_list]


def _cloud_region(data: dict[str, Any]) -> tuple[str | None, str | None]:
    backends = data.get("backends")
    cloud = None
    if isinstance(backends, list) and len(backends) == 1 and isinstance(backends[0], str):
        cloud = clouds.by_skypilot(backends[0])
    regions = data.get("regions")
    region = regions[0] if isinstance(regions, list) and len(regions) == 1 and isinstance(regions[0], str) else None
    return cloud, region


def _price(index: NameIndex, hw: Hardware, cloud: str | None, spot: bool, count: int | None = None) -> float:
    """What one unit of ``hw`` costs an hour, to rank alternatives: spot where asked and priced, else on-demand (the
    most a spot offer costs), at a row that holds ``count`` chips (as the request is priced: an 8-GPU machine's row
    prices no single GPU); an unpriced one ranks last."""
    acc = index.catalog.accelerators.get(hw.accelerator or "")
    where = [cloud] if cloud else clouds.rented()
    price = ((acc.price(where, "spot", None, count) if spot else None) or acc.price(where, "on-demand", None, count)) if acc else None
    return price.usd_per_chip_hour * (hw.chips or 1) if price else float("inf")


def parse(docs: list[Document], index: NameIndex) -> Parsed:
    out = Parsed("dstack")
    configs = [d for d in docs if isinstance(d.data, dict)]
    for doc in configs:
        out.requests += _config(doc, index, out, numbered=len(configs) != 1)
    return out


def _config(doc: Document, index: NameIndex, out: Parsed, *, numbered: bool) -> list[Request]:
    data = doc.data
    kind = data.get("type")
    name = data.get("name") if isinstance(data.get("name"), str) else doc.path.rsplit("/", 1)[-1]
    base = f"{name}#{doc.index + 1}" if numbered else name
    if kind == "fleet" and data.get("ssh_config") is not None:
        out.notes.append(f"{base}: an SSH fleet (ssh_config): hosts the team already runs, no cloud spend")
        return []
    groups = data.get("groups")
    if kind == "service" and groups is None and isinstance(data.get("replicas"), list):
        groups = data["replicas"]  # the older form: replica groups under replicas
    if groups is not None and kind in ("task", "service"):
        if not isinstance(groups, list):
            raise fail_at(doc, ("groups",), "expected a list of groups")
        where = "groups" if "groups" in data else "replicas"
        if len(groups) > MAX_GROUPS:
            raise fail_at(doc, (where,), f"{len(groups)} groups: at most {MAX_GROUPS} are read")
        reqs = []
        for i, g in enumerate(groups):
            if not isinstance(g, dict):
                raise fail_at(doc, (where, i), "expected a mapping")
            label = g.get("name") if isinstance(g.get("name"), str) else str(i)
            req = _request(doc, index, data, g, (where, i), f"{base}/{label}")
            if req is not None:
                reqs.append(req)
        return reqs
    req = _request(doc, index, data, data, (), base)
    return [req] if req is not None else []


def _request(doc: Document, index: NameIndex, data: dict[str, Any], part: dict[str, Any], at: KeyPath, address: str) -> Request | None:
    """The request of a configuration (``part`` is the configuration) or of one of its groups; None without a GPU."""
    res = part.get("resources")
    if res is None and data.get("type") == "fleet" and data.get("instance_types"):
        res = {}  # a fleet that names its instance types alone (dstack's GCP cluster examples: [a3-highgpu-8g])
    if res is None:
        return None
    if not isinstance(res, dict):
        raise fail_at(doc, (*at, "resources"), "expected a mapping")
    gpu = res.get("gpu")
    instance_types = data.get("instance_types") if data.get("type") == "fleet" else None
    if gpu is None and not instance_types:
        return None
    loc: KeyPath = (*at, "resources", "gpu")
    line, col = doc.where((*at, "resources"), key=True)
    req = Request(doc.path, "dstack", address, line, col)
    spec = _spec(doc, loc, gpu, req) if gpu is not None else _Spec()
    if spec is not None and spec.count[1] == 0 and spec.count_given:
        return None  # gpu: 0 -- no accelerator
    kind = data.get("type")
    req.cloud, req.region = _cloud_region(data)
    req.places = _places(data)
    policy = part.get("spot_policy", data.get("spot_policy"))
    if policy == "spot":
        req.pricing = "spot"
    elif policy == "auto":
        req.notes.append("spot_policy auto: spot where offered, else on-demand; priced on-demand")
    req.where["accelerator"] = req.where["count"] = doc.where(loc if gpu is not None else ("instance_types",))
    if spec is None:
        req.hardware, req.unknown = str(gpu)[:80], "resources.gpu is a template placeholder: the hardware and count are not read"
    else:
        _hardware(doc, index, req, spec, loc, instance_types)
    _replicas(doc, req, data, part, at)
    if kind == "task":
        req.always_on = False
        duration = data.get("max_duration")
        if isinstance(duration, (str, int)) and not isinstance(duration, bool) and str(duration) != "off":
            req.notes.append(f"max_duration {duration}: dstack stops the run then")
    elif kind == "dev-environment":
        req.notes.append("a dev environment stays up until it is stopped (inactivity_duration, if set, stops it when idle)")
    elif kind == "fleet":
        req.notes.append("fleet instances stay up between runs (above nodes.min, until idle_duration)")
    return req


def _hardware(doc: Document, index: NameIndex, req: Request, spec: _Spec, loc: KeyPath, instance_types: Any) -> None:
    """Fills in the hardware and count dstack provisions for ``spec`` (the cheapest of several names)."""
    lo, hi = spec.count
    if spec.count_given and lo != hi:
        req.notes.append(f"GPU count {lo}..{'' if hi is None else hi}: judged at the most dstack may provision")
    if hi is None:
        req.unresolved.append(("count-unknown", f"the GPU count {lo}.. has no top: dstack may provision any number from {lo}",
                               doc.where(loc)))
    names = [n for n in spec.names if n][:MAX_NAMES]
    if not names and isinstance(instance_types, list) and instance_types:
        names = [t for t in instance_types if isinstance(t, str)][:MAX_NAMES]
        req.where["accelerator"] = doc.where(("instance_types",))
    if not names:
        what = ":".join(x for x in (spec.vendor, spec.memory) if x) or "any GPU"
        req.hardware = f"gpu {what}" + (f" x {hi}" if hi else "")
        req.unknown = (f"resources.gpu names no GPU ({what}): dstack provisions the cheapest offer that matches, "
                       "whatever its model, so the hardware and price are not guessed")
        req.count = hi
        return
    spot = req.pricing == "spot"
    options = [(n, _lookup(index, n, spec)) for n in names]
    def chips(hw: Hardware) -> int | None:  # the count the option is judged at (below)
        return hw.chips if hw.chips and (hw.hosts is not None or not spec.count_given) else hi

    picked = (min(options, key=lambda o: (_price(index, o[1], req.cloud, spot, chips(o[1])), options.index(o)))
              if len(options) > 1 else options[0])
    name, hw = picked
    if is_placeholder(name):
        req.unresolved.append((".".join(map(str, loc)), name[:80], doc.where(loc)))
    req.set_hardware(name, hw)
    if req.cloud is None and (own := index.machine_cloud(name)) is not None:
        req.cloud = own  # an instance type is one cloud's (a3-highgpu-8g: Google Cloud), never priced on another
    if hw.chips and (hw.hosts is not None or not spec.count_given):  # a TPU slice or an instance type: its own chips
        req.count, req.hosts, req.topology = hw.chips, max(hw.hosts or 1, 1), hw.topology
    else:
        req.count = hi
    if len(options) > 1:
        req.alternatives = [f"{n}:{'' if hi is None else hi}" for n, _ in options if n != name]
        req.options = [(h.accelerator, h.chips if h.chips and (h.hosts is not None or not spec.count_given) else hi)
                       for n, h in options if n != name]
        req.notes.append(f"cheapest of {len(options)} options (dstack takes the cheapest offer that matches)")


def _replicas(doc: Document, req: Request, data: dict[str, Any], part: dict[str, Any], at: KeyPath) -> None:
    """Replicas: a task's (or node group's) nodes, a service's (or replica group's) replicas, a fleet's nodes."""
    kind = data.get("type")
    lo: int | None = 1
    hi: int | None = 1
    if kind == "task":
        nodes = whole_number(doc, (*at, "nodes"), part.get("nodes"), req)
        lo = hi = 1 if nodes is None else nodes
        if "nodes" in part:
            req.where["replicas"] = doc.where((*at, "nodes"))
    elif kind in ("service", "fleet"):
        # a replica group of the older list form says count (dstack's serialiser writes replicas as count there)
        key = "nodes" if kind == "fleet" else ("count" if at and "count" in part and "replicas" not in part else "replicas")
        value = part.get(key)
        if isinstance(value, dict) and kind == "fleet":
            low = whole_number(doc, (*at, key, "min"), value.get("min"), req)
            high = whole_number(doc, (*at, key, "max"), value.get("max"), req)
            target = whole_number(doc, (*at, key, "target"), value.get("target"), req)
            lo, hi = low or 0, high
            if high is not None and high < lo:
                raise fail_at(doc, (*at, key, "max"), f"max {high} is below min {lo}")
            if high is None:
                req.unresolved.append(("count-unknown", f"{key}.max is not set: the fleet grows as runs ask, from "
                                       f"{max(lo, target or 0)} instance(s)", doc.where((*at, key))))
        elif value is not None and not isinstance(value, list):
            span = _count(doc, (*at, key), value, req)
            if span is not None:
                lo, hi = span
                if hi is None:
                    req.unresolved.append(("count-unknown", f"{key} {lo}.. has no top: nothing bounds how many dstack runs",
                                           doc.where((*at, key))))
        if key in part:
            req.where["replicas"] = doc.where((*at, key))
    req.replicas_min, req.replicas_max = lo, hi
