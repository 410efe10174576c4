"""Capacity (rules/capacity.yaml): how many chips a cloud normally delivers by procurement kind
(on-demand, spot, DWS flex-start, calendar reservations and capacity blocks, negotiated
reservations), for how long, at what price where it differs, and the step that obtains them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Kind:
    id: str
    title: str
    setup: str
    # interruptions of one VM per hour (low, expected, high), for a kind whose capacity is reclaimed (spot); None: none
    interruptions: tuple[float, float, float] | None = None
    # hours between a run's checkpoints on this kind (the scaffold's period; half is lost per interruption); 0 for a
    # kind that is not reclaimed (none is lost)
    checkpoint_hours: float = 0.0


@dataclass(frozen=True)
class Limit:
    cloud: str
    device: str | None
    accelerators: tuple[str, ...]
    kind: str
    max_chips: int | None  # None: the catalog's largest published shape
    min_hours: float
    max_hours: float | None
    prices: dict[str, float]
    sources: tuple[str, ...]
    note: str
    # (up to hours, step): a run of up to that many hours is bought in whole steps (an EC2 Capacity Block by the day
    # up to 14 days, by the week beyond; a calendar-mode reservation by the day); none: by the hour
    increments: tuple[tuple[float | None, float], ...] = ()
    # hours at the end of what is bought that a run cannot use (EC2 terminates a Capacity Block's instances 30 minutes
    # before it ends): a run is bought that much longer
    unusable_hours: float = 0.0
    # the zones the kind is sold in for these chips (Google Cloud's calendar mode for TPU v6e: three zones); empty:
    # wherever the chip is offered
    zones: tuple[str, ...] = ()
    # the host (instance) counts one purchase comes in (an EC2 Capacity Block: 1, 2, 4, ..., 64 instances); empty: any
    instances: tuple[int, ...] = ()

    def sized_for(self, hosts: int | None) -> bool:
        """Whether a configuration over ``hosts`` hosts is one purchase of this kind (any where it names no sizes)."""
        return not self.instances or hosts is None or hosts in self.instances

    def sold_in(self, region: str | None) -> bool:
        """Whether the kind is sold in ``region`` (any region where it names no zones; an unknown region: yes)."""
        # a zone's region as regions.region_of reads it (a sibling layer capacity may not import: pyproject layers)
        return not self.zones or region is None or any(z.rsplit("-", 1)[0] == region for z in self.zones)

    def billed(self, hours: float, min_hours: float) -> float:
        """The hours a run of ``hours`` is billed: at least ``min_hours``, in the whole steps the kind is sold in, with
        the unusable end of the last one on top of the run."""
        hours += self.unusable_hours
        for up_to, step in self.increments:
            if up_to is None or hours <= up_to:
                hours = math.ceil(hours / step - 1e-9) * step
                break
        return max(hours, min_hours)

    def applies(self, cloud: str, device: str, accelerator: str) -> bool:
        if self.cloud != cloud:
            return False
        if self.accelerators:
            return accelerator in self.accelerators
        return self.device == device


@dataclass(frozen=True)
class Table:
    order: tuple[str, ...]
    kinds: dict[str, Kind]
    limits: tuple[Limit, ...]
    sources: dict[str, str]  # id -> url


_KIND_FIELDS = {"title", "setup"}
_KIND_OPTIONAL = {"interruptions_per_vm_hour", "checkpoint_hours", "source"}
_LIMIT_FIELDS = {"cloud", "device", "accelerators", "kind", "max_chips", "min_hours", "max_hours", "increments", "unusable_hours",
                 "usd_per_chip_hour", "source", "note", "zones", "instances"}


def _increments(where: str, raw: Any) -> tuple[tuple[float | None, float], ...]:
    """``increments: [{up_to_hours: 336, hours: 24}, {up_to_hours: null, hours: 168}]``: ascending, the last open."""
    out: list[tuple[float | None, float]] = []
    for j, inc in enumerate(raw or ()):
        if not isinstance(inc, dict) or set(inc) != {"up_to_hours", "hours"} or not float(inc["hours"]) > 0:
            raise ValueError(f"{where}: increments[{j}] needs up_to_hours (null: beyond the last) and hours > 0")
        up_to = None if inc["up_to_hours"] is None else float(inc["up_to_hours"])
        if out and (out[-1][0] is None or (up_to is not None and up_to <= (out[-1][0] or 0.0))):
            raise ValueError(f"{where}: increments[{j}]: up_to_hours must ascend, null only last")
        out.append((up_to, float(inc["hours"])))
    return tuple(out)


def _limit(i: int, raw: dict[str, Any], kinds: dict[str, Kind], sources: dict[str, str]) -> Limit:
    where = f"rules/capacity.yaml: limits[{i}]"
    extra = set(raw) - _LIMIT_FIELDS
    if extra:
        raise ValueError(f"{where}: unknown fields {sorted(extra)}")
    if raw["kind"] not in kinds:
        raise ValueError(f"{where}: kind {raw['kind']!r} is not one of {sorted(kinds)}")
    missing = [s for s in raw["source"] if s not in sources]
    if missing or not raw["source"]:
        raise ValueError(f"{where}: sources {missing or '[]'} not in 'sources'")
    if not raw.get("device") and not raw.get("accelerators"):
        raise ValueError(f"{where}: needs a device or accelerators")
    return Limit(
        cloud=str(raw["cloud"]), device=raw.get("device"), accelerators=tuple(raw.get("accelerators") or ()),
        kind=str(raw["kind"]), max_chips=None if raw["max_chips"] is None else int(raw["max_chips"]),
        min_hours=float(raw["min_hours"]), max_hours=None if raw["max_hours"] is None else float(raw["max_hours"]),
        prices={str(k): float(v) for k, v in (raw.get("usd_per_chip_hour") or {}).items()},
        sources=tuple(raw["source"]), note=str(raw["note"]), increments=_increments(where, raw.get("increments")),
        unusable_hours=float(raw.get("unusable_hours") or 0.0), zones=tuple(str(z) for z in raw.get("zones") or ()),
        instances=tuple(int(n) for n in raw.get("instances") or ()),
    )


@lru_cache(maxsize=1)
def table() -> Table:
    from advisor.knowledge import bundled_data

    data = bundled_data("capacity.yaml")
    kinds = {}
    for kid, raw in data["kinds"].items():
        if not _KIND_FIELDS <= set(raw) <= _KIND_FIELDS | _KIND_OPTIONAL:
            raise ValueError(f"rules/capacity.yaml: kind {kid}: fields {sorted(set(raw) ^ _KIND_FIELDS)}")
        rate = raw.get("interruptions_per_vm_hour")
        if rate is not None and (not raw.get("source") or any(s not in data["sources"] for s in raw["source"])):
            raise ValueError(f"rules/capacity.yaml: kind {kid}: interruptions_per_vm_hour needs sources in 'sources'")
        kinds[kid] = Kind(
            kid, str(raw["title"]), str(raw["setup"]),
            None if rate is None else (float(rate["low"]), float(rate["expected"]), float(rate["high"])),
            float(raw.get("checkpoint_hours") or 0.0),
        )
    sources = {sid: str(s.get("url") or "") for sid, s in data["sources"].items()}
    order = tuple(data["order"])
    if set(order) != set(kinds):
        raise ValueError("rules/capacity.yaml: 'order' must list every kind once")
    limits = tuple(_limit(i, raw, kinds, sources) for i, raw in enumerate(data["limits"]))
    return Table(order, kinds, limits, sources)


# the profile's deployment.pricing -> the procurement kind it is (a commitment is a reservation)
PRICING_KIND = {"on-demand": "on-demand", "spot": "spot", "committed-1y": "reserved", "committed-3y": "reserved"}
HOURS_PER_YEAR = 8760.0
COMMITTED_HOURS = {"committed-1y": HOURS_PER_YEAR, "committed-3y": 3 * HOURS_PER_YEAR}  # the terms a profile may state
# the profile's deployment.procurement -> the capacity kinds each accepts
PROCUREMENT_KINDS = {"on-demand": ("on-demand",), "spot": ("spot",), "dws": ("dws-flex-start",), "reservation": ("calendar", "reserved"),
                     "committed": ("reserved",)}


def step_of(lim: Limit, billed: float) -> float | None:
    """The step a run billed ``billed`` hours under ``lim`` is bought in (None: by the hour, or a serving month)."""
    if math.isinf(billed):
        return None
    return next((st for up, st in lim.increments if up is None or billed <= up), None)


def step_hours(cap: dict[str, Any]) -> float | None:
    """The step of an estimate's ``capacity`` (Reach.to_json), None where it is billed by the hour."""
    step = cap.get("step_hours")
    return float(step) if step else None


def pricing_of(dep: Any) -> str:
    """The kind a deployment is priced at first: deployment.pricing, unless deployment.procurement does not accept it and
    accepts on-demand (Spot asked for, on-demand the only kind accepted: priced on demand, never at the Spot rate)."""
    kinds = accepted(dep.procurement)
    if kinds is None or PRICING_KIND.get(dep.pricing, "on-demand") in kinds or "on-demand" not in kinds:
        return str(dep.pricing)
    return "on-demand"


def accepted(procurement: str | Sequence[str] | None) -> frozenset[str] | None:
    """The capacity kinds a profile's deployment.procurement accepts; None: any."""
    if procurement is None:
        return None
    names = [procurement] if isinstance(procurement, str) else list(procurement)
    return frozenset(k for n in names for k in PROCUREMENT_KINDS[n])


@dataclass(frozen=True)
class Reach:
    """What delivers ``chips`` for ``hours``: the kind, its limit row, the hours billed."""

    kind: Kind
    limit: Limit | None  # None: the table has no row for this cloud and family (unbounded)
    max_chips: int | None
    billed_hours: float
    min_hours: float = 0.0  # the term billed at least (none where a stated commitment holds the chips)
    term_hours: float = 0.0  # the commitment's term (committed-3y: 26,280 h), where the kind is one

    @property
    def title(self) -> str:
        """The kind's title, with the term of its commitment where it has one ({term})."""
        return kind_title(self.kind, self.term_hours)

    def bill(self, hours: float) -> float:
        """The hours a run of ``hours`` under this kind is billed (a run of another length than the one reached: the
        ends of its time range)."""
        return hours if self.limit is None or math.isinf(hours) else self.limit.billed(hours, self.min_hours)

    def to_json(self, sources: dict[str, str]) -> dict[str, Any]:
        lim = self.limit
        return {
            "kind": self.kind.id,
            "title": self.title,
            "max_chips": self.max_chips,
            "min_hours": lim.min_hours if lim else 0.0,
            "term_hours": self.term_hours,
            "max_hours": lim.max_hours if lim else None,
            "step_hours": step_of(lim, self.billed_hours) if lim else None,
            "unusable_hours": lim.unusable_hours if lim else 0.0,
            "billed_hours": None if math.isinf(self.billed_hours) else round(self.billed_hours, 3),
            "sources": [sources.get(s, s) for s in lim.sources] if lim else [],
            "note": lim.note if lim else "no capacity row for this cloud and family: not bounded",
        }


def reach(
    cloud: str, device: str, accelerator: str, chips: int, hours: float, pricing: str, largest: int,
    allowed: frozenset[str] | None = None, pinned: str | None = None, hosts: int | None = None,
) -> tuple[Reach | None, list[str]]:
    """The first procurement kind, from the profile's own (``pricing``) on in the table's order, that
    delivers ``chips`` on ``cloud`` for ``hours`` (math.inf: continuous serving); (None, what each
    kind reaches) where none does. ``largest``: the catalog's largest published shape. ``allowed``: the
    kinds the team accepts (deployment.procurement), the only ones tried; None: any. ``pinned``: the region the
    profile holds the run to (deployment.regions), where a kind sold only in some zones is no kind at all. ``hosts``:
    the hosts (instances) the chips span, where a kind sold in a few sizes (a Capacity Block's 1, 2, 4, ..., 64
    instances) delivers only those."""
    t = table()
    # a row naming the accelerator before its device's (B200 on Google Cloud is not sold on demand, other GPUs are)
    rows = sorted((lim for lim in t.limits if lim.applies(cloud, device, accelerator)), key=lambda r: not r.accelerators)
    start = PRICING_KIND.get(pricing, "on-demand")
    kinds = list(t.order)
    if allowed is not None and start not in allowed:
        start = next(k for k in kinds if k in allowed)
    if not rows:
        return Reach(t.kinds[start], None, None, hours), []
    # on-demand and spot escalate past each other's kind only to the reservation kinds
    ladder = (
        [start] + [k for k in kinds[kinds.index("dws-flex-start") :] if k != start]
        if start in ("on-demand", "spot")
        else kinds[kinds.index(start) :]
    )
    if allowed is not None:
        ladder = [k for k in dict.fromkeys([*ladder, *kinds]) if k in allowed]
    tried: list[str] = []
    for kid in ladder:
        lim = next((r for r in rows if r.kind == kid), None)
        if lim is None:
            continue
        cap = largest if lim.max_chips is None else min(lim.max_chips, largest)
        long = lim.max_hours is not None and hours > lim.max_hours
        # a profile that states a commitment holds it anyway: the run pays the committed rate for its own
        # hours, up to the count a team commits to without negotiating (what the cloud's other kinds
        # reach); a count that only a negotiated reservation reaches is bought for the run: its term
        held = max(((largest if r.max_chips is None else r.max_chips) for r in rows if r.kind != "reserved"), default=0)
        # the term is the stated commitment's (three years of committed-3y: a count only a negotiated reservation reaches
        # is bought for all of it, review 32), else the kind's own
        term = max(lim.min_hours, COMMITTED_HOURS[pricing]) if kid == "reserved" and pricing in COMMITTED_HOURS else lim.min_hours
        min_hours = 0.0 if kid == "reserved" and pricing in COMMITTED_HOURS and chips <= held else term
        if not lim.sold_in(pinned):
            tried.append(f"{kid}: not sold in {pinned}")
            continue
        if not lim.sized_for(hosts):
            tried.append(f"{kid}: {hosts} instances is not a size it is sold in ({', '.join(map(str, lim.instances))})")
            continue
        if chips <= cap and not long:
            billed = hours if math.isinf(hours) else lim.billed(hours, min_hours)
            return Reach(t.kinds[kid], lim, cap, billed, min_hours, term), []
        limit_h = f" for up to {lim.max_hours:g} h" if lim.max_hours is not None else ""
        tried.append(f"{kid}: not sold" if cap == 0 else f"{kid} {cap:,}{limit_h}")
    return None, tried


def kind_title(k: Kind, term_hours: float = 0.0) -> str:
    """``k``'s title with its commitment's term ({term}: "a 3-year term" for 26,280 h; a year at least)."""
    return k.title.replace("{term}", f"a {max(1.0, term_hours / HOURS_PER_YEAR):g}-year term")


def setup_step(kind: str, count: int, accelerator: str, term_hours: float = 0.0) -> tuple[str, str]:
    """(title, text) of the step that obtains ``count`` x ``accelerator`` under ``kind`` (``term_hours``: its
    commitment's term, where it is one)."""
    k = table().kinds[kind]
    return f"Obtain the capacity: {kind_title(k, term_hours)}", k.setup.replace("{count}", str(count)).replace("{accelerator}", accelerator)
