"""Software compatibility as data (``rules/software.yaml``).

Which libraries, serving stacks and frameworks run on which device family (and vendor), with
a status (supported, caveats, not-supported), the nearest equivalent and a source per row.

:func:`resolve` applies the table to one profile on one accelerator: a hot-path entry that is
not supported there either blocks the configuration (an exclusion with the fix, unless the
profile sets ``software.accept_equivalents``) or, when accepted, the equivalent is what the
estimator sizes (its ``method`` / ``precision`` overrides, in an effective copy of the profile).
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, model_validator

from advisor.catalog import Accelerator, SourceRef
from advisor.memo import IdentityMemo
from advisor.models import CudaLibrary, Framework, Method, Precision, Profile, ServingStack, Strict
from advisor.validation import builtin_rules_dir, load_table

Status = Literal["supported", "caveats", "not-supported"]
ProfileField = Literal["software.cuda_libraries", "software.serving_stack", "software.framework"]
_TARGET = re.compile(r"^(tpu|gpu|cpu|edge)(/[a-z0-9-]+)?$")
_VALUES: dict[str, tuple[str, ...]] = {
    "software.cuda_libraries": get_args(CudaLibrary),
    "software.serving_stack": get_args(ServingStack),
    "software.framework": get_args(Framework),
}
Text = Annotated[str, Field(min_length=1, max_length=500)]
SourceIds = Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], Field(min_length=1, max_length=10)]


class Equivalent(Strict):
    name: Text
    method: Method | None = None  # what the estimator sizes instead (training.method)
    precision: Precision | None = None  # and at which precision (model.precision)


class SupportRow(Strict):
    target: Annotated[str, Field(pattern=_TARGET.pattern)]
    status: Status
    note: Text | None = None
    equivalent: Equivalent | None = None
    source: SourceIds


class Implied(Strict):
    field: Literal["training.method"]
    value: Method


class Entry(Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=64)]
    name: Text
    field: ProfileField
    value: Annotated[str, Field(min_length=1, max_length=64)]
    implied_by: Implied | None = None
    hot_path: bool
    support: Annotated[list[SupportRow], Field(min_length=1)]

    @model_validator(mode="after")
    def _known_value(self) -> "Entry":
        if self.value not in _VALUES[self.field]:
            raise ValueError(f"{self.field} has no value {self.value!r} (one of {', '.join(_VALUES[self.field])})")
        seen = [r.target for r in self.support]
        if len(seen) != len(set(seen)):
            raise ValueError("two support rows for the same target")
        return self

    def row_for(self, device: str, vendor: str) -> SupportRow | None:
        """The most specific row for a chip: family/vendor first, then the family."""
        by = {r.target: r for r in self.support}
        return by.get(f"{device}/{vendor.lower()}") or by.get(device)


class SoftwareTable(Strict):
    schema_version: Literal[1]
    sources: dict[str, SourceRef]
    software: Annotated[list[Entry], Field(min_length=1)]

    @model_validator(mode="after")
    def _refs(self) -> "SoftwareTable":
        ids = [e.id for e in self.software]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate software ids")
        for e in self.software:
            for r in e.support:
                missing = [s for s in r.source if s not in self.sources]
                if missing:
                    raise ValueError(f"{e.id} on {r.target}: unknown source ids {missing}")
        return self

    def entry(self, eid: str) -> Entry:
        return next(e for e in self.software if e.id == eid)


@cache
def load_software() -> SoftwareTable:
    return load_table(builtin_rules_dir() / "software.yaml", SoftwareTable)


def used(profile: Profile, table: SoftwareTable) -> list[Entry]:
    """The entries a profile names (or implies: QLoRA is bitsandbytes NF4)."""
    sw = profile.software
    named: dict[str, set[str]] = {
        "software.cuda_libraries": set(sw.cuda_libraries),
        "software.serving_stack": {sw.serving_stack},
        "software.framework": {sw.framework},
    }
    method = profile.training.method if profile.training else None
    out = []
    for e in table.software:
        if e.value in named[e.field] or (e.implied_by is not None and e.implied_by.value == method):
            out.append(e)
    return out


@dataclass
class Resolution:
    """The table applied to one profile on one accelerator."""

    profile: Profile  # the profile the estimator sizes (the equivalents substituted)
    blocked: dict[str, Any] | None = None  # entry, reason, fix, sources: the configuration cannot run
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # caveats, for the assumptions


_MEMO: IdentityMemo[Resolution] = IdentityMemo(1024)


def resolve(profile: Profile, acc: Accelerator, table: SoftwareTable | None = None) -> Resolution:
    return _MEMO.get((profile,), (acc.device, acc.vendor), lambda: _resolve(profile, acc.device, acc.vendor, table or load_software()))


def _resolve(profile: Profile, device: str, vendor: str, table: SoftwareTable) -> Resolution:
    res = Resolution(profile)
    updates: dict[str, dict[str, Any]] = {}
    for e in used(profile, table):
        row = e.row_for(device, vendor)
        if row is None or row.status == "supported":
            continue
        where = row.target.upper()  # the row's own target: TPU, GPU/AMD
        if row.status == "caveats":
            res.notes.append(f"{e.name} on {where}: {(row.note or 'supported with caveats').rstrip('.')}")
            continue
        eq = row.equivalent
        swap = f"{e.name} does not run on {where}" + (f" ({row.note.rstrip('.')})" if row.note else "")
        if eq is not None:
            if eq.method is not None and profile.training is not None and profile.training.method != eq.method:
                updates.setdefault("training", {})["method"] = eq.method
            if eq.precision is not None and BYTES_OF[profile.model.precision] < BYTES_OF[eq.precision]:
                updates.setdefault("model", {})["precision"] = eq.precision
        if not e.hot_path:
            res.warnings.append(f"{swap}: port to {eq.name if eq else 'an equivalent'} (not on the hot path; estimated as is)")
        elif eq is not None and profile.software.accept_equivalents:
            res.warnings.append(f"{swap}: sized as its equivalent, {eq.name}")
        elif res.blocked is None:
            fix = (
                f"use {eq.name} and set software.accept_equivalents: true to size it"
                if eq is not None else f"run on a family {e.name} supports"
            )
            res.blocked = {"entry": e.id, "reason": swap + ".", "fix": fix, "sources": _urls(table, row)}
    if updates:  # copies, not re-validation: the profile was validated once, as written
        parts = {section: getattr(profile, section).model_copy(update=values) for section, values in updates.items()}
        res.profile = profile.model_copy(update=parts)
    return res


BYTES_OF = {"fp64": 8.0, "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


def _urls(table: SoftwareTable, row: SupportRow) -> list[str]:
    return [table.sources[s].url or s for s in row.source]


def status_of(table: SoftwareTable, eid: str, device: str, vendor: str) -> str | None:
    row = table.entry(eid).row_for(device, vendor)
    return row.status if row else None
