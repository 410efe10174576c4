"""Regions (rules/regions.yaml): which cloud a region id belongs to, where each cloud offers each
accelerator, and the regions a profile allows on each cloud (deployment.regions, a hard
constraint; deployment.region, a preference)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.catalog import Accelerator
    from advisor.models import Deployment

@dataclass(frozen=True)
class Table:
    known: dict[str, frozenset[str]]
    offered: dict[tuple[str, str], tuple[str, ...]]
    sources: dict[tuple[str, str], tuple[str, ...]]
    # the regions a row's source lists at all (absent: every region): outside them the row says nothing
    covers: dict[tuple[str, str], frozenset[str]]
    # the zones a row lists (Google Cloud): where setup may place the accelerator in its region
    zones: dict[tuple[str, str], tuple[str, ...]]


_ROW_FIELDS = frozenset({"cloud", "accelerator", "source", "note"})
_ROW_OPTIONAL = frozenset({"regions", "zones", "covers"})


def region_of(zone: str) -> str:
    """The region of a zone id (us-central1-a -> us-central1)."""
    return zone.rsplit("-", 1)[0]


@lru_cache(maxsize=1)
def table() -> Table:
    from advisor.knowledge import bundled_data

    data = bundled_data("regions.yaml")
    urls = {sid: str(s.get("url") or "") for sid, s in data["sources"].items()}
    offered: dict[tuple[str, str], tuple[str, ...]] = {}
    sources: dict[tuple[str, str], tuple[str, ...]] = {}
    covers: dict[tuple[str, str], frozenset[str]] = {}
    zones: dict[tuple[str, str], tuple[str, ...]] = {}
    for i, row in enumerate(data["offered"]):
        if not _ROW_FIELDS <= set(row) <= _ROW_FIELDS | _ROW_OPTIONAL or ("regions" in row) == ("zones" in row):
            raise ValueError(f"rules/regions.yaml: offered[{i}]: fields {sorted(row)} (regions or zones, not both)")
        missing = [s for s in row["source"] if s not in urls]
        if missing:
            raise ValueError(f"rules/regions.yaml: offered[{i}]: sources {missing} not in 'sources'")
        key = (row["cloud"], row["accelerator"])
        if "zones" in row:
            zones[key] = tuple(row["zones"])
        offered[key] = tuple(row["regions"]) if "regions" in row else tuple(dict.fromkeys(map(region_of, row["zones"])))
        sources[key] = tuple(urls[s] for s in row["source"])
        if "covers" in row:
            covers[key] = frozenset(row["covers"])
    known = {c: frozenset(ids) for c, ids in data["known"].items()}
    return Table(known, offered, sources, covers, zones)


def _may_run(cloud: str, acc: Accelerator, where: tuple[str, ...] | None, region: str) -> bool:
    """Whether ``acc`` may run in ``region`` of ``cloud``: offered there, or the sources say nothing of it (no row, or a
    row whose sources do not cover that region)."""
    cov = table().covers.get((cloud, acc.id))
    return where is None or region in where or (cov is not None and region not in cov)


def may_run(cloud: str, acc: Accelerator, region: str) -> bool:
    """Whether ``acc`` may run in ``region`` of ``cloud`` as far as the sources say (_may_run)."""
    return _may_run(cloud, acc, offered_in(cloud, acc), region)


def known_ids() -> list[str]:
    """Every region id the regions table lists (``known``), cloud by cloud: what a typo is matched against."""
    return [r for ids in table().known.values() for r in sorted(ids)]


def cloud_of(region: str) -> str | None:
    """The cloud a region id belongs to: a listed id, else by its form; None when it fits none."""
    t = table()
    for cloud, ids in t.known.items():
        if region in ids:
            return cloud
    from advisor import clouds

    return next((cid for cid in clouds.ids() if clouds.cloud(cid).owns_region(region)), None)  # by its form (rules/clouds.yaml)


def offered_in(cloud: str, acc: Accelerator) -> tuple[str, ...] | None:
    """Regions where ``cloud`` offers ``acc``, those of the catalog's zones first (its default placement); None where
    unknown (not restricted)."""
    row = table().offered.get((cloud, acc.id))
    if row is not None:
        own = [region_of(z) for z in acc.deploy.zones] if cloud == acc.deploy.cloud else []
        return tuple(dict.fromkeys([*(r for r in own if r in row), *row]))
    if cloud == acc.deploy.cloud and acc.deploy.zones:
        return tuple(dict.fromkeys(map(region_of, acc.deploy.zones)))
    return None


def zones_of(cloud: str, acc: Accelerator) -> tuple[str, ...]:
    """The zones of ``cloud`` known to offer ``acc``: the catalog's own (deploy.zones, of deploy.cloud) first, then those
    of its rules/regions.yaml row; empty where none are known."""
    own = acc.deploy.zones if cloud == acc.deploy.cloud else []
    return tuple(dict.fromkeys([*own, *table().zones.get((cloud, acc.id), ())]))


def pinned(dep: Deployment, cloud: str) -> list[str] | None:
    """The regions ``deployment.regions`` allows on ``cloud`` (empty: none of that cloud's); None
    when the profile pins no regions."""
    if not dep.regions:
        return None
    return [r for r in dep.regions if cloud_of(r) == cloud]


def preferred(dep: Deployment, cloud: str) -> str | None:
    """The profile's region for ``cloud``: its first pinned one there, else ``deployment.region``
    where it is that cloud's, else None (the cloud's default, rules/clouds.yaml)."""
    pins = pinned(dep, cloud)
    if pins:
        return pins[0]
    if dep.region and cloud_of(dep.region) == cloud:
        return dep.region
    return None


def placement(dep: Deployment, cloud: str, acc: Accelerator) -> tuple[str | None, str | None]:
    """(the region ``acc`` runs in on ``cloud`` under the profile, None if unknown; why it cannot
    run there, None if it can). A pinned region list is a hard constraint."""
    where = offered_in(cloud, acc)
    pins = pinned(dep, cloud)
    if pins is not None:
        if not pins:
            return None, f"{cloud}: none of deployment.regions ({', '.join(dep.regions or [])}) is a {cloud} region"
        # a residency pin takes only a chip some source places somewhere: one whose regions no source lists cannot be
        # placed in the pinned region on the advisor's word (a source that covers only some regions rules out none else)
        if where is None:
            return None, f"{cloud}: {acc.id} is not offered in {', '.join(pins)} as far as any source says (none lists its regions)"
        ok = [r for r in pins if _may_run(cloud, acc, where, r)]
        if not ok:
            return None, f"{cloud}: {acc.id} is not offered in {', '.join(pins)} (offered in {', '.join(where or ())})"
        return ok[0], None
    pref = preferred(dep, cloud)
    if pref is not None and _may_run(cloud, acc, where, pref):
        return pref, None
    return (where[0] if where else pref), None


def zone_in(acc: Accelerator, cloud: str, region: str | None) -> str | None:
    """A zone of ``region`` that offers ``acc`` on ``cloud`` (zones_of), else None."""
    if region is None:
        return None
    return next((z for z in zones_of(cloud, acc) if region_of(z) == region), None)
