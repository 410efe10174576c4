"""Clouds (rules/clouds.yaml): default regions, SkyPilot and Kubernetes names, as data."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_FIELDS = {"name", "region", "zone", "skypilot", "kubernetes", "preference", "owned", "region_form"}


@dataclass(frozen=True)
class Cloud:
    id: str
    name: str
    region: str | None
    zone: str | None
    skypilot: str
    kubernetes: str
    preference: int
    owned: bool
    region_form: str | None  # a regular expression this cloud's region names match

    def owns_region(self, region: str | None) -> bool:
        """Whether ``region`` names one of this cloud's regions (by its form)."""
        return bool(region and self.region_form and re.fullmatch(self.region_form, region))

    def region_for(self, wanted: str | None) -> str | None:
        """The profile's region where it is this cloud's, else this cloud's default."""
        return wanted if self.owns_region(wanted) else self.region

    def default_zone(self, region: str) -> str:
        return (self.zone or "").replace("{region}", region) or region


def _build(cid: str, raw: dict[str, Any]) -> Cloud:
    if set(raw) != _FIELDS:
        raise ValueError(f"rules/clouds.yaml: cloud {cid}: fields {sorted(set(raw) ^ _FIELDS)}")
    return Cloud(
        id=cid, name=str(raw["name"]), region=raw["region"], zone=raw["zone"], skypilot=str(raw["skypilot"]),
        kubernetes=str(raw["kubernetes"]), preference=int(raw["preference"]), owned=bool(raw["owned"]),
        region_form=raw["region_form"],
    )


@lru_cache(maxsize=1)
def _registry() -> dict[str, Cloud]:
    from advisor.knowledge import bundled_data

    data = bundled_data("clouds.yaml")
    return {cid: _build(cid, raw) for cid, raw in data["clouds"].items()}


def cloud(cid: str) -> Cloud:
    return _registry()[cid]


def ids() -> tuple[str, ...]:
    return tuple(_registry())


def preferred(allowed: Iterable[str]) -> str:
    """The cloud a setup uses when no price decides: the highest preference, then the profile's order."""
    order = list(allowed)
    return max(order, key=lambda c: (cloud(c).preference, -order.index(c)))
