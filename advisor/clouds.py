"""Clouds (rules/clouds.yaml): the one registry of clouds, as data.

The profile contract's ``Cloud`` (advisor/models.py) is this file's ids; everything that needs to
know a cloud — its default region and zone form, SkyPilot and Kubernetes names, the node labels and
Terraform resource types that name it, the price file ``catalog import`` reads — asks its entry
here, never tests a cloud's name. Each entry is validated at load: a missing or unknown field is a
positioned error (``path:line:col``), never a ``KeyError`` later.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition (see advisor/models.py).

import re
from collections.abc import Iterable
from functools import lru_cache

from pydantic import Field

from advisor.models import Strict


class Cloud(Strict):
    id: str = ""  # the entry's key, filled in by the registry
    name: str
    region: str | None
    zone: str | None
    skypilot: str
    kubernetes: str
    preference: int
    owned: bool
    price_catalog: str | None
    kubernetes_labels: tuple[str, ...] = Field(max_length=16)
    terraform_prefix: str | None
    region_form: str | None  # a regular expression this cloud's region names match

    def owns_region(self, region: str | None) -> bool:
        """Whether ``region`` names one of this cloud's regions (by its form)."""
        return bool(region and self.region_form and re.fullmatch(self.region_form, region))

    def default_zone(self, region: str) -> str:
        return (self.zone or "").replace("{region}", region) or region


class CloudTable(Strict):
    schema_version: int
    clouds: dict[str, Cloud] = Field(min_length=1, max_length=64)


@lru_cache(maxsize=1)
def _registry() -> dict[str, Cloud]:
    from advisor.validation import builtin_rules_dir, load_table

    table = load_table(builtin_rules_dir() / "clouds.yaml", CloudTable, what="the clouds table")
    return {cid: c.model_copy(update={"id": cid}) for cid, c in table.clouds.items()}


def cloud(cid: str) -> Cloud:
    return _registry()[cid]


def ids() -> tuple[str, ...]:
    return tuple(_registry())


def rented() -> list[str]:
    """The clouds that rent accelerators (every entry but the team's own hardware)."""
    return [c.id for c in _registry().values() if not c.owned]


def by_skypilot(name: str) -> str | None:
    """The cloud SkyPilot calls ``name`` (``infra: gcp/us-central1``, ``cloud: aws``), if rented."""
    low = name.lower()
    return next((c.id for c in _registry().values() if not c.owned and c.skypilot == low), None)


def by_kubernetes_label(label: str) -> str | None:
    """The cloud whose managed Kubernetes a node label belongs to (``cloud.google.com/...``)."""
    return next((c.id for c in _registry().values() for p in c.kubernetes_labels if label.startswith(p)), None)


def by_terraform_type(resource_type: str) -> str | None:
    """The cloud of a Terraform resource type (``google_tpu_v2_vm`` -> gcp)."""
    return next((c.id for c in _registry().values() if c.terraform_prefix and resource_type.startswith(c.terraform_prefix)), None)


def with_price_catalog() -> list[str]:
    """The clouds ``catalog import`` has a price file for."""
    return [c.id for c in _registry().values() if c.price_catalog]


def preferred(allowed: Iterable[str]) -> str:
    """The cloud a setup uses when no price decides: the highest preference, then the profile's order."""
    order = list(allowed)
    return max(order, key=lambda c: (cloud(c).preference, -order.index(c)))
