"""SkyPilot task YAML: ``resources.accelerators`` (``H100:8``, ``tpu-v6e-8``, ordered lists,
``{A:1, B:1}`` sets), ``instance_type``, ``any_of`` / ``ordered``, ``num_nodes``, ``use_spot``,
``infra`` / ``cloud`` / ``region``, ``service.replicas`` / ``replica_policy``. One request per task:
an ordered list asks for its first choice; a set or ``any_of`` for the cheapest priced option
(what SkyPilot launches first); the others are listed as alternatives."""

from __future__ import annotations

import re
from typing import Any

from advisor import clouds
from advisor.check.infra.model import (
    HOURS_PER_MONTH,
    WAIVE_ENV,
    Parsed,
    Request,
    fail_at,
    is_placeholder,
    waiver_lines,
    whole_number,
)
from advisor.check.infra.names import Hardware, NameIndex
from advisor.families import family
from advisor.yamlsrc import Document, KeyPath

TASK_KEYS = {"resources", "run", "setup", "num_nodes", "service", "file_mounts", "workdir", "envs", "secrets", "config", "volumes"}
PROFILE_KEYS = {"task", "model", "training", "inference", "proposal", "match", "domain", "software", "goal", "team", "deployment"}
_NUMBER = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
Option = tuple[dict[str, Any], str, int | None, KeyPath]  # (resources, accelerator name, count, where)


def is_task(data: Any) -> bool:
    return isinstance(data, dict) and bool(TASK_KEYS & set(data)) and not (PROFILE_KEYS & set(data)) and "apiVersion" not in data




def _options(doc: Document, loc: KeyPath, value: Any) -> tuple[list[tuple[str, int | None, KeyPath]], bool]:
    """(name, count, where) options of an ``accelerators`` value; True when they are a set (cheapest first)."""
    if value is None:
        return [], False
    if isinstance(value, str):
        return [(*_split(doc, loc, value), loc)], False
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            if not isinstance(v, str):
                raise fail_at(doc, (*loc, i), "expected a string such as 'H100:8'")
            out.append((*_split(doc, (*loc, i), v), (*loc, i)))
        return out, False
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise fail_at(doc, loc, "accelerator names must be strings")
            name, n = _split(doc, (*loc, k), k)
            if v is not None:
                n = whole_number(doc, (*loc, k), v)
            out.append((name, n, (*loc, k)))
        return out, True
    raise fail_at(doc, loc, "expected 'NAME:COUNT', a list or a mapping")


def _split(doc: Document, loc: KeyPath, text: str) -> tuple[str, int | None]:
    name, _, n = text.strip().partition(":")
    if not n:
        return name, 1
    n = n.strip()
    if not _NUMBER.fullmatch(n):  # ASCII only: float() accepts 'nan', 'inf', '1_0' and other scripts' digits
        raise fail_at(doc, loc, f"{text[:80]!r}: the count after ':' must be a number such as 8 or 0.5")
    count = float(n)
    if count <= 0 or count > 1024:
        raise fail_at(doc, loc, f"{text[:80]!r}: count out of range (0 < count <= 1024)")
    if count != int(count):
        # a fractional share of one GPU (SkyPilot's job queue: T4:0.5 runs two jobs on one T4) occupies a node that holds
        # the whole GPU: one chip; a fraction above one names no launchable node
        return name, (1 if count < 1 else None)
    return name, int(count)


def _share(doc: Document, where: KeyPath) -> float | None:
    """The fractional GPU share written at ``where`` (``T4:0.5``), or None."""
    node: Any = doc.data
    for k in where:  # the path of an option merged from any_of / ordered over the base may not be in the document
        parent = node
        if isinstance(node, dict):
            node = node.get(k)
        elif isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node):
            node = node[k]
        else:
            return None
    last = where[-1]
    value = node
    if not isinstance(value, str) and not (isinstance(parent, dict) and isinstance(last, str)):
        return None
    text = value if isinstance(value, str) else (last if isinstance(last, str) else "")
    n = text.partition(":")[2].strip()
    if not _NUMBER.fullmatch(n):
        return None
    share = float(n)
    return share if 0 < share < 1 else None


def _cloud(res: dict[str, Any]) -> tuple[str | None, str | None]:
    infra = res.get("infra")
    if isinstance(infra, str):
        parts = infra.strip().split("/")
        cloud = clouds.by_skypilot(parts[0])
        return cloud, parts[1] if len(parts) > 1 and parts[1] not in ("*", "") else None
    cloud = res.get("cloud")
    region = res.get("region")
    return (clouds.by_skypilot(cloud) if isinstance(cloud, str) else None), (region if isinstance(region, str) else None)


def parse(docs: list[Document], index: NameIndex) -> Parsed:
    out = Parsed("skypilot")
    tasks = [d for d in docs if isinstance(d.data, dict)]
    for doc in tasks:
        req = _task(doc, index, numbered=len(tasks) != 1)
        if req is not None:
            out.requests.append(req)
    return out


def _task(doc: Document, index: NameIndex, *, numbered: bool) -> Request | None:
    """The request of one task document; None when it asks for no accelerator."""
    data = doc.data
    found = _resources(doc)
    if found is None:
        return None
    res, res_loc = found
    name = data.get("name") if isinstance(data.get("name"), str) else doc.path.rsplit("/", 1)[-1]
    address = f"{name}#{doc.index + 1}" if numbered else name
    line, col = doc.where(res_loc, key=True)
    req = Request(doc.path, "skypilot", address, line, col)
    choices, cheapest = _choices(doc, res, res_loc)
    options, cheapest = _hardware_options(doc, choices, cheapest, index)
    if not options:
        return None
    hw = _set_choice(doc, req, options, cheapest, index)
    nodes = whole_number(doc, ("num_nodes",), data.get("num_nodes"), req)
    nodes = 1 if nodes is None else nodes
    if nodes > 1 and hw.hosts is not None and hw.known:
        req.notes.append(f"num_nodes {nodes} with a TPU slice: {nodes} slices counted; check the task really launches that many")
    lo, hi = _service_replicas(doc, data.get("service"), req)
    pool = data.get("pool")
    if isinstance(pool, dict):  # a pool of workers, each the resources above, kept up between jobs
        lo = hi = _pool_workers(doc, pool, req)
    elif pool is not None:
        raise fail_at(doc, ("pool",), "expected a mapping")
    req.replicas_min, req.replicas_max = lo * nodes, hi * nodes
    envs = data.get("envs")
    if isinstance(envs, dict) and isinstance(envs.get(WAIVE_ENV), str):
        at = doc.where(("envs", WAIVE_ENV))
        req.waivers += [(w, at) for w in waiver_lines(envs[WAIVE_ENV])]
    return req


def _resources(doc: Document) -> tuple[dict[str, Any], KeyPath] | None:
    """The task's ``resources`` mapping (the first of a list) and where it is; None when there is none."""
    res_loc: KeyPath = ("resources",)
    res = doc.data.get("resources")
    if res is None:
        return None
    if isinstance(res, list):  # a list of resources is an ordered choice
        res, res_loc = (res[0] if res else None), ("resources", 0)
    if not isinstance(res, dict):
        raise fail_at(doc, res_loc, "expected a mapping")
    for typo in ("accelerator", "gpu", "accelerator_type"):
        if typo in res:
            raise fail_at(doc, (*res_loc, typo), "unknown resources field; did you mean 'accelerators'?")
    if "gpus" in res and "accelerators" in res:  # gpus is SkyPilot's alias of accelerators (sky/resources.py RESOURCE_CONFIG_ALIASES)
        raise fail_at(doc, (*res_loc, "gpus"), "'gpus' is an alias of 'accelerators': give one of them")
    return res, res_loc


def _accelerators_key(r: dict[str, Any]) -> str:
    """The key a resources mapping names its accelerators under: ``accelerators``, or its alias ``gpus``."""
    return "gpus" if "gpus" in r and "accelerators" not in r else "accelerators"


def _choices(doc: Document, res: dict[str, Any], res_loc: KeyPath) -> tuple[list[tuple[dict[str, Any], KeyPath]], bool]:
    """Every resources option (``any_of`` / ``ordered`` merged over the base) and where; True when the cheapest is launched."""
    choices: list[tuple[dict[str, Any], KeyPath]] = []
    for key in ("any_of", "ordered"):
        alts = res.get(key)
        if alts is None:
            continue
        if not isinstance(alts, list):
            raise fail_at(doc, (*res_loc, key), "expected a list of resources")
        for i, alt in enumerate(alts):
            if not isinstance(alt, dict):
                raise fail_at(doc, (*res_loc, key, i), "expected a mapping")
            choices.append(({**res, **alt}, (*res_loc, key, i)))
        return choices, key == "any_of"
    return [(res, res_loc)], False


def _hardware_options(
    doc: Document, choices: list[tuple[dict[str, Any], KeyPath]], cheapest: bool, index: NameIndex
) -> tuple[list[Option], bool]:
    """The accelerator options of every choice (an ``instance_type`` when it names no accelerators); True when the cheapest is launched."""
    options: list[Option] = []
    for r, loc in choices:
        key = _accelerators_key(r)
        opts, is_set = _options(doc, (*loc, key), r.get(key))
        cheapest = cheapest or is_set
        for name_, n, where in opts:
            options.append((r, name_, n, where))
        itype = r.get("instance_type")
        if not opts and isinstance(itype, str):
            hw = index.lookup(itype)
            if (hw.known and not index.is_cpu(hw.accelerator or "")) or index.is_unsupported(itype):
                options.append((r, itype, hw.chips, (*loc, "instance_type")))  # a CPU instance type asks for none
    return options, cheapest


def _option(index: NameIndex, o: Option) -> tuple[str | None, int | None]:
    hw = index.lookup(o[1])
    return hw.accelerator, (hw.chips if hw.hosts is not None and hw.chips else o[2])


def _set_choice(doc: Document, req: Request, options: list[Option], cheapest: bool, index: NameIndex) -> Hardware:
    """Fills in the option SkyPilot launches: its hardware, count, alternatives, cloud and pricing."""
    picked = _pick(options, cheapest, index)
    r, hwname, n, where = picked
    if is_placeholder(hwname):
        req.unresolved.append(("resources.accelerators", hwname[:80], doc.where(where)))
    hw = index.lookup(hwname)
    req.set_hardware(hwname, hw)
    req.where["accelerator"] = req.where["count"] = doc.where(where)
    if hw.hosts is not None and hw.chips:  # a TPU slice name: the whole slice (a generation the catalog lacks too: v2-8 is 4)
        req.count, req.hosts = hw.chips, hw.hosts
        req.topology = hw.topology
    else:
        req.count = n if n is not None else None
        if n is None:
            req.unresolved.append(("resources.accelerators", f"{hwname} (fractional share)", doc.where(where)))
        elif (share := _share(doc, where)) is not None:
            req.notes.append(f"a {share:g} share of one {hwname}: the node holds the whole GPU, counted as 1")
    req.alternatives = [f"{o[1]}:{o[2]}" for o in options if o is not picked]
    req.options = [_option(index, o) for o in options if o is not picked]
    if req.alternatives:
        req.notes.append(("cheapest of" if cheapest else "first choice of") + f" {len(options)} options")
    req.cloud, req.region = _cloud(r)
    if req.cloud is None and hw.known and req.accelerator:
        req.cloud = _only_cloud(index, req.accelerator)
    # every option's place: SkyPilot falls back through them (ordered / any_of) where the first has no capacity, and
    # launches on any cloud it has credentials for where an option names none
    req.places = []
    for o in [picked, *[o for o in options if o is not picked]]:
        place = _place(o[0], index, o[1])
        if place not in req.places:
            req.places.append(place)
    if r.get("use_spot") is True:
        req.pricing = "spot"
    return hw


def _service_replicas(doc: Document, service: Any, req: Request) -> tuple[int, int]:
    """(min, max) replicas of a ``service`` (1, 1 without one); sets whether the task stays up."""
    lo = hi = 1
    if isinstance(service, dict):
        req.always_on = True
        pol = service.get("replica_policy")
        if isinstance(pol, dict):
            got_lo = whole_number(doc, ("service", "replica_policy", "min_replicas"), pol.get("min_replicas"), req)
            got_hi = whole_number(doc, ("service", "replica_policy", "max_replicas"), pol.get("max_replicas"), req)
            lo = 1 if got_lo is None else got_lo  # min_replicas: 0 scales to zero: reported as 0
            hi = max(lo, 1) if got_hi is None else got_hi
            req.where["replicas"] = doc.where(("service", "replica_policy"))
        elif "replicas" in service:
            got = whole_number(doc, ("service", "replicas"), service.get("replicas"), req)
            lo = hi = 1 if got is None else got
            req.where["replicas"] = doc.where(("service", "replicas"))
    elif service is not None:
        raise fail_at(doc, ("service",), "expected a mapping")
    else:
        req.always_on = False
    return lo, hi


def _pool_workers(doc: Document, pool: dict[str, Any], req: Request) -> int:
    """The worker count of a ``pool`` (1 when unset); a pool stays up between jobs."""
    workers = whole_number(doc, ("pool", "workers"), pool.get("workers"), req)
    n = 1 if workers is None else workers
    req.always_on = True
    req.where["replicas"] = doc.where(("pool", "workers"))
    req.notes.append(f"pool of {n} worker(s), each the resources above")
    return n


def _place(res: dict[str, Any], index: NameIndex, hwname: str) -> tuple[str | None, str | None]:
    """Where an option may launch, for the policy: its infra's cloud as written where the registry does not know it
    (``runpod`` is no allowed cloud, never 'no cloud'), else the one cloud its accelerator is sold on; None where SkyPilot
    may pick any."""
    cloud, region = _cloud(res)
    if cloud is None:
        raw = res.get("infra") if isinstance(res.get("infra"), str) else res.get("cloud")
        name = raw.strip().split("/")[0].lower() if isinstance(raw, str) and raw.strip() else ""
        if name and name not in ("*", "k8s", "kubernetes"):
            cloud = name[:40]
        else:
            hw = index.lookup(hwname)
            cloud = _only_cloud(index, hw.accelerator) if hw.known and hw.accelerator else None
    return cloud, region


def _only_cloud(index: NameIndex, accelerator: str) -> str | None:
    """The one cloud an accelerator's family is sold on (rules/families.yaml ``clouds``), if one."""
    acc = index.catalog.accelerators.get(accelerator)
    sold = family(acc.device).clouds if acc is not None else ()
    return sold[0] if len(sold) == 1 else None


def _pick(options: list[Any], cheapest: bool, index: NameIndex) -> Any:
    if not cheapest:
        return options[0]

    def cost(o: Any) -> tuple[float, int]:
        hw = index.lookup(o[1])
        acc = index.catalog.accelerators.get(hw.accelerator or "")
        n = hw.chips if hw.hosts is not None and hw.chips else (o[2] or 1)
        named = _cloud(o[0])[0]  # a task that names a cloud is priced on it
        # priced as the judge prices the request (judge.price_request): the cheapest row of that kind that holds the
        # option's count (Azure's A100 spot row is an 8-GPU machine: it prices no A100:1)
        kind = "spot" if o[0].get("use_spot") else "on-demand"
        price = acc.price([named] if named else clouds.rented(), kind, None, n) if acc else None
        return ((price.usd_per_chip_hour * n * HOURS_PER_MONTH) if price else float("inf"), options.index(o))

    return min(options, key=cost)
