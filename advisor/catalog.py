"""The accelerator catalog: specs, shapes and prices, each with a source and date.

Facts only, no decisions. The built-in catalog is ``rules/catalog.yaml``;
``--catalog FILE`` overrides or adds entries (negotiated prices, a region, a
new chip) with the same validation and line-numbered errors.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import bisect
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from advisor.errors import InputError, Problem
from advisor.families import family, sized
from advisor.knowledge import builtin_rules_dir
from advisor.memo import IdentityMemo
from advisor.models import Cloud, Precision, Strict
from advisor.models import Pricing as Kind
from advisor.validation import did_you_mean, problems_from
from advisor.yamlsrc import Document, load_file

# A peak_tflops key: every profile precision, plus fp4 (recorded for Blackwell; no profile precision uses it yet).
Dtype = Literal[Precision, "fp4"]
CATALOG_SCHEMA_VERSION = 1
# The rate a model held at a precision computes at, in order of preference, when the chip lacks
# it: low-bit weights fall back to the next wider integer/float rate, then 16-bit; bf16 and fp16
# stand in for each other (T4 has fp16 only); fp32 runs as mixed precision on 16-bit matmuls;
# fp64 has no stand-in.
COMPUTE_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp64": ("fp64",),
    "fp32": ("bf16", "fp16", "fp32"),
    "bf16": ("bf16", "fp16"),
    "fp16": ("fp16", "bf16"),
    "fp8": ("fp8", "bf16", "fp16"),
    "int8": ("int8", "fp8", "bf16", "fp16"),
    "int4": ("int4", "int8", "bf16", "fp16"),
}

SourceIds = Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], Field(min_length=1, max_length=20)]
Positive = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
# A name that reaches generated commands and files (machine and slice types, topologies, zones, regions, runtime versions,
# GKE labels, aliases): a cloud's name alphabet only. A catalog override comes from a pull request: a newline or shell
# syntax in one would end a setup.sh comment or heredoc and run as a command (a review's finding).
CloudName = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$", min_length=1, max_length=64)]
# Prose that reaches generated files (a chip's name and vendor): one line, no markdown or shell syntax
OneLine = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f`$<>|\\\[\]!*#@]+$", min_length=1, max_length=200)]




class SourceRef(Strict):
    url: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    repo: str | None = None
    path: str | None = None
    commit: str | None = None
    retrieved: dt.date
    content_date: str | None = None
    note: Annotated[str, Field(max_length=4000)] | None = None

    @model_validator(mode="after")
    def _where(self) -> "SourceRef":
        if not self.url and not self.repo and not self.path:
            raise ValueError("a source needs a 'url' (or 'repo'/'path')")
        return self


class Attained(Strict):
    """What microbenchmarks reach of the datasheet peaks (GEMM at its best shapes, a STREAM-type copy), as
    fractions: a chip whose kernels reach less of its peak than the family's reference chip runs every
    compute- or memory-bound phase proportionally slower (advisor/estimate/sizing.attained_scale)."""

    matmul: dict[Dtype, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)
    memory: Annotated[float, Field(gt=0, le=1)] | None = None
    source: SourceIds
    as_of: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None


class Specs(Strict):
    peak_tflops: dict[Dtype, Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)]]
    memory_gib: Positive
    memory_bandwidth_gbps: Positive
    interconnect: Annotated[str, Field(max_length=500)] | None = None
    interconnect_gbps: Positive | None = None
    # The fabric, both figures required (a missing one is a load error, never a silent default):
    # chips one scale-up fabric joins (an NVLink domain: 8 in an HGX node, 72 in a GB200 NVL72 rack;
    # Infinity Fabric: 8; a TPU's largest ICI slice; 1 for a PCIe card without a bridge) ...
    scale_up_chips: Annotated[int, Field(ge=1, le=1_000_000)]
    # ... and the network bandwidth per chip beyond it (between nodes, racks or TPU slices over DCN),
    # Gbit/s: what data-parallel and expert traffic crosses once a job outgrows one domain. 0 only
    # for a machine that never has a second node (shapes.max_nodes 1: a workstation, one card).
    scale_out_gbit_per_chip: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]
    fabric_source: SourceIds  # where both fabric figures come from
    tdp_w: Positive | None = None
    attained: Attained | None = None  # microbenchmarked fractions of the peaks, where published
    source: SourceIds
    as_of: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None

    @model_validator(mode="after")
    def _has_matmul_rate(self) -> "Specs":
        if not {"bf16", "fp16"} & set(self.peak_tflops):
            raise ValueError("peak_tflops needs a bf16 or fp16 figure")
        return self


class Slice(Strict):
    chips: Annotated[int, Field(gt=0, le=1_000_000)]
    accelerator_type: CloudName
    topology: CloudName | None = None
    hosts: Annotated[float, Field(gt=0, le=100_000)] | None = None
    machine_type: CloudName | None = None


class Shapes(Strict):
    slices: list[Slice] | None = None
    max_slices: Annotated[int, Field(ge=1, le=1024)] = 1
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] | None = None
    partial_node_counts: list[Annotated[int, Field(ge=1, le=1024)]] | None = None
    max_nodes: Annotated[int, Field(ge=1, le=100_000)] | None = None
    machine_types: dict[int, CloudName] | None = None
    # the cloud whose instance names machine_types are; elsewhere shapes get generic names
    machine_types_cloud: Cloud | None = None
    source: SourceIds
    as_of: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None


class Price(Strict):
    cloud: Cloud
    kind: Kind
    usd_per_chip_hour: Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)]
    region: CloudName | None = None
    min_count: Annotated[int, Field(ge=1, le=100_000)] | None = None  # e.g. on-demand only as whole 8-GPU VMs
    max_count: Annotated[int, Field(ge=1, le=100_000)] | None = None  # e.g. the 1-GPU size's rate, not a bigger VM's
    includes_host: bool = True
    source: SourceIds
    as_of: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None


class Purchase(Strict):
    """What buying one chip costs: a card's list price, or an 8-GPU server's price / 8."""

    usd_per_chip: Positive
    source: SourceIds
    as_of: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None


class Assumed(Strict):
    """One on-prem default: a value with its sources (none: an assumption the note explains)."""

    value: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]
    source: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(default_factory=list, max_length=20)
    note: Annotated[str, Field(min_length=1, max_length=4000)]


class OnPremDefaults(Strict):
    """Defaults for owning hardware; a profile's ``deployment.onprem`` overrides each."""

    usd_per_kwh: Assumed
    pue: Assumed
    amortisation_years: Assumed
    hosting_usd_per_chip_month: Assumed
    local_pue: Assumed  # a machine at a desk: no data-centre cooling overhead
    local_hosting_usd_per_chip_month: Assumed
    hours_per_month: Assumed
    # Share of hours bought hardware does useful work; the fixed part (purchase + hosting) is
    # charged per used hour. Absent (an older override file): 1.0, every hour used.
    utilisation: Assumed | None = None
    # Weeks from a purchase order to a working cluster (absent: not stated).
    lead_time_weeks: Assumed | None = None


class Deploy(Strict):
    # The cloud whose names `zones`, `runtime_version` and `gke_accelerator` are (the block was
    # written for Google Cloud, the one cloud selling TPUs; another cloud's instance names are in
    # `instance_types`). Code asks this, never a cloud's name.
    cloud: Cloud = "gcp"
    runtime_version: CloudName | None = None
    gke_accelerator: CloudName | None = None
    # SkyPilot accelerator name (`sky show-gpus`); TPUs: a template over the slice's accelerator_type.
    # Absent: SkyPilot does not list the chip, and generated tasks say it is unverified.
    skypilot: Annotated[str, Field(pattern=r"^[A-Za-z0-9{}_-]+$", max_length=64)] | None = None
    zones: list[CloudName] = Field(default_factory=list, max_length=200)
    # Per cloud other than shapes.machine_types_cloud: GPUs per instance -> that cloud's instance
    # type (EC2 instance type, Azure VM size), so setup files name the priced instance.
    instance_types: dict[Cloud, dict[int, Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$", max_length=64)]]] = Field(default_factory=dict)
    # The setup path (rules/setup id) a configuration of this device takes whatever else matches:
    # a machine with its own software route (Apple silicon: MLX; an NVIDIA workstation: vLLM on
    # the local GPU), chosen from the device that was sized, never from a default.
    route: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=64)] | None = None
    # profile frameworks (software.framework) the chip's software does not support
    unsupported_frameworks: list[Annotated[str, Field(pattern=r"^[a-z]+$", max_length=32)]] = Field(default_factory=list)
    note: Annotated[str, Field(max_length=4000)] | None = None


_SHAPES: IdentityMemo[list[int]] = IdentityMemo(4096)  # real shapes per catalog entry (entries are immutable)


class Accelerator(Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=64)]
    # a sized family of rules/families.yaml (tpu, gpu, cpu)
    device: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$", max_length=32)]
    name: OneLine
    vendor: OneLine
    aliases: list[CloudName] = Field(default_factory=list, max_length=50)
    clouds: list[Cloud] = Field(default_factory=list)  # where offered; empty = where priced
    specs: Specs
    shapes: Shapes
    prices: list[Price] = Field(default_factory=list)
    deploy: Deploy = Field(default_factory=Deploy)
    # A machine one person owns (workstation GPU, Apple silicon): a candidate only for
    # deployment.local profiles, and never for cloud ones.
    local: bool = False
    # Buying it (on-prem and local machines): amortised into an equivalent $/chip-hour.
    purchase: Purchase | None = None
    note: Annotated[str, Field(max_length=4000)] | None = None
    # The catalog's on-prem defaults, attached when the catalog loads (not written in entries).
    onprem_basis: OnPremDefaults | None = Field(default=None, exclude=True)

    @field_validator("device")
    @classmethod
    def _known_family(cls, v: str) -> str:
        if v not in sized():
            raise ValueError(f"device {v!r} is not a family with catalog shapes in rules/families.yaml ({', '.join(sized())})")
        return v

    @model_validator(mode="after")
    def _shape_kind(self) -> "Accelerator":
        problem = family(self.device).shapes.validate(self.device, self.shapes)
        if problem:
            raise ValueError(problem)
        if self.specs.scale_out_gbit_per_chip == 0 and self.max_chips() > self.node_chips:
            raise ValueError(
                "specs.scale_out_gbit_per_chip is 0 but the shapes reach past one node: give the network bandwidth per chip between nodes"
            )
        return self

    @property
    def scale_up(self) -> int:
        """Chips one scale-up fabric joins (NVLink domain, ICI slice, Infinity Fabric), at least a node."""
        return max(self.specs.scale_up_chips, self.node_chips)

    @property
    def peak_bf16_flops(self) -> float:
        """Dense 16-bit matmul peak per chip, FLOP/s (bf16, else fp16)."""
        tf = self.specs.peak_tflops
        return 1e12 * tf.get("bf16", tf.get("fp16", 0.0))

    def compute_precision(self, precision: str) -> tuple[str | None, float, str | None]:
        """(the precision the chip computes a ``precision`` model in, its dense peak FLOP/s, the
        fallback stated as a warning or None): the first of COMPUTE_FALLBACK[precision] that the
        catalog's ``peak_tflops`` lists. (None, 0, warning) when none is listed (FP64 on a chip
        without an FP64 rate)."""
        tf = self.specs.peak_tflops
        chain = COMPUTE_FALLBACK.get(precision, ("bf16", "fp16"))
        for i, key in enumerate(chain):
            if key in tf:
                if i == 0 or precision == "fp32":
                    # fp32 models train and serve with 16-bit matmuls (mixed precision / TF32 /
                    # bf16 passes); the memory model still counts 4 bytes per weight
                    return key, 1e12 * tf[key], None
                return key, 1e12 * tf[key], f"{self.id}: no {precision} rate in the catalog (peak_tflops); computes in {key}"
        return None, 0.0, f"{self.id}: no {precision} arithmetic (peak_tflops lists {', '.join(sorted(tf))})"

    def peak_flops(self, precision: str) -> float:
        """The dense peak used for a model held at ``precision`` (see compute_precision)."""
        return self.compute_precision(precision)[1]

    @property
    def node_chips(self) -> int:
        """Chips in one fast domain: a GPU node (NVLink) or, for TPUs, the largest single slice (ICI)."""
        return family(self.device).shapes.node_chips(self.shapes)

    def max_chips(self) -> int:
        """The largest real shape: the largest published multislice / cluster for this chip."""
        return self.real_shapes()[-1]

    def real_shapes(self) -> list[int]:
        """Every real count in increasing order: per-VM counts and whole nodes (GPU, CPU), slices
        and identical multi-host slices over DCN (TPU). Computed once per catalog entry."""
        return _SHAPES.get((self,), None, lambda: sorted(family(self.device).shapes.real_shapes(self.shapes)))

    def is_shape(self, n: int) -> bool:
        """A count the cloud (or a cluster of whole nodes) really provides."""
        shapes = self.real_shapes()
        i = bisect.bisect_left(shapes, n)
        return i < len(shapes) and shapes[i] == n

    def round_up(self, n: int) -> int | None:
        """The smallest real shape with at least ``n`` chips (None past the largest)."""
        shapes = self.real_shapes()
        i = bisect.bisect_left(shapes, max(1, int(n)))
        return shapes[i] if i < len(shapes) else None

    def counts(self) -> list[int]:
        """Representative real shapes, roughly doubling, from the smallest to the largest."""
        out = family(self.device).shapes.ladder(self.shapes)
        if self.max_chips() not in out:
            out.append(self.max_chips())
        return out

    def hosts(self, count: int) -> int:
        """Hosts (VMs or servers) one configuration of ``count`` chips spans."""
        return family(self.device).shapes.hosts(self, count)

    def shape_name(self, count: int) -> str:
        """The cloud's name for ``count`` chips (machine type, TPU accelerator type)."""
        return family(self.device).shapes.shape_name(self, count)

    def generic_shape_name(self, count: int) -> str:
        """``count`` chips named without any cloud's machine types (another cloud, own servers)."""
        return family(self.device).shapes.generic_shape_name(self, count)

    def slice_for(self, chips: int) -> Slice | None:
        for sl in self.shapes.slices or []:
            if sl.chips == chips:
                return sl
        return None

    def price(self, clouds: Sequence[str], kind: str, region: str | None = None, count: int | None = None) -> Price | None:
        """Cheapest price of ``kind`` among ``clouds`` that applies to ``count`` chips; a region match is preferred."""
        found = [
            p for p in self.prices
            if p.cloud in clouds and p.kind == kind and (count is None or (
                (p.min_count is None or count >= p.min_count) and (p.max_count is None or count <= p.max_count)))
        ]
        if region:
            local = [p for p in found if p.region == region]
            found = local or found
        return min(found, key=lambda p: (p.usd_per_chip_hour, p.cloud)) if found else None


class CatalogFile(Strict):
    schema_version: Literal[1]
    as_of: dt.date
    sources: dict[str, SourceRef] = Field(default_factory=dict)
    onprem: OnPremDefaults | None = None
    accelerators: list[Accelerator] = Field(default_factory=list)


class OverrideFile(Strict):
    """``--catalog FILE``: new sources, new accelerators, or partial changes to existing ones."""

    schema_version: Literal[1] = 1
    as_of: dt.date | None = None
    sources: dict[str, SourceRef] = Field(default_factory=dict)
    onprem: OnPremDefaults | None = None
    accelerators: list[dict[str, Any]] = Field(default_factory=list)


@dataclass
class Catalog:
    as_of: dt.date
    sources: dict[str, SourceRef]
    accelerators: dict[str, Accelerator]
    aliases: dict[str, str]
    files: list[str]
    onprem: OnPremDefaults | None = None
    # (the entries it was computed for, Catalog.dominated): recomputed when any entry is another object
    _dominated: tuple[tuple[Accelerator, ...], dict[str, tuple[str, ...]]] | None = field(default=None, repr=False, compare=False)

    def dominated(self) -> dict[str, tuple[str, ...]]:
        """Entry id -> the entries that dominate it, in id order: the same hardware as far as any
        estimate reads (everything but names, notes, sources, dates and the setup's names), offered
        on the same clouds at the same price kinds, regions and counts, never dearer, and an id that
        sorts first (every tie between candidates goes to the smaller id). No verdict chooses a
        dominated entry, as its best or its closest configuration: a search for the verdict alone
        (the what-ifs, check) skips it where one of its dominators is searched. Computed once per
        set of entries (a copy of the catalog with other entries computes its own)."""
        entries = tuple(self.accelerators.values())
        memo = self._dominated
        if memo is None or len(memo[0]) != len(entries) or any(a is not b for a, b in zip(memo[0], entries, strict=True)):
            groups: dict[Any, list[Accelerator]] = {}
            for acc in sorted(self.accelerators.values(), key=lambda a: a.id):
                groups.setdefault(_physics(acc), []).append(acc)
            out: dict[str, tuple[str, ...]] = {}
            for same in groups.values():
                for i, acc in enumerate(same):
                    over = tuple(a.id for a in same[:i] if _no_dearer(a.prices, acc.prices))
                    if over:
                        out[acc.id] = over
            memo = self._dominated = (entries, out)
        return memo[1]

    def resolve(self, name: str) -> str | None:
        key = name.strip().lower()
        if key in self.accelerators:
            return key
        return self.aliases.get(key)

    def get(self, name: str) -> Accelerator:
        resolved = self.resolve(name)
        if resolved is None:
            raise KeyError(name)
        return self.accelerators[resolved]

    def unknown_message(self, name: str) -> str:
        choices = list(self.accelerators) + list(self.aliases)
        hint = did_you_mean(name.lower(), choices)
        return f"unknown accelerator {name!r}{hint} (known: {', '.join(sorted(self.accelerators))})"

    def source_url(self, sid: str) -> str:
        ref = self.sources.get(sid)
        if ref is None:
            return sid
        if ref.url:
            return ref.url
        return " ".join(x for x in (ref.repo, ref.path, ref.commit) if x)


# What no estimate reads: names, descriptions, sources and dates, the setup's names (SkyPilot,
# GKE, runtime, zones) and the instance names of shapes. Everything else of an entry is physics.
_COSMETIC = frozenset({
    "id", "name", "aliases", "note", "source", "as_of", "prices", "interconnect", "skypilot", "zones",
    "runtime_version", "gke_accelerator", "machine_types", "machine_types_cloud", "instance_types", "route",
})


def _physics(value: Any) -> Any:
    """A hashable value of everything an estimate reads of ``value`` (an entry, or a part of one)."""
    if isinstance(value, Strict):
        return (type(value).__name__, tuple((k, _physics(v)) for k, v in value.__dict__.items() if k not in _COSMETIC))
    if isinstance(value, dict):
        return tuple(sorted((str(k), _physics(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_physics(v) for v in value)
    return value


def _no_dearer(a: list[Price], b: list[Price]) -> bool:
    """``a`` offers what ``b`` offers (cloud, kind, region, counts, host included), in the same order,
    each at no more dollars."""
    def offer(p: Price) -> tuple[Any, ...]:
        return (p.cloud, p.kind, p.region, p.min_count, p.max_count, p.includes_host)

    return len(a) == len(b) and all(offer(x) == offer(y) and x.usd_per_chip_hour <= y.usd_per_chip_hour for x, y in zip(a, b, strict=True))


def builtin_catalog_path() -> Path:
    return builtin_rules_dir() / "catalog.yaml"


def _doc(path: str) -> Document:
    docs = [d for d in load_file(path) if d.data is not None]
    if len(docs) != 1:
        raise InputError.single(path, 1, 1, "expected exactly one YAML document")
    doc = docs[0]
    if not isinstance(doc.data, dict):
        raise InputError([doc.problem((), "expected a mapping with schema_version, sources, accelerators")])
    return doc


def _check_refs(doc: Document, acc: Accelerator, index: int, sources: dict[str, SourceRef], problems: list[Problem]) -> None:
    groups: list[tuple[tuple[str | int, ...], list[str]]] = [
        (("accelerators", index, "specs", "source"), acc.specs.source),
        (("accelerators", index, "specs", "fabric_source"), acc.specs.fabric_source),
        (("accelerators", index, "shapes", "source"), acc.shapes.source),
    ]
    groups += [(("accelerators", index, "prices", i, "source"), p.source) for i, p in enumerate(acc.prices)]
    if acc.purchase is not None:
        groups.append((("accelerators", index, "purchase", "source"), acc.purchase.source))
    if acc.specs.attained is not None:
        groups.append((("accelerators", index, "specs", "attained", "source"), acc.specs.attained.source))
    for loc, ids in groups:
        for sid in ids:
            if sid not in sources:
                problems.append(doc.problem(loc, f"unknown source {sid!r}{did_you_mean(sid, sources)}"))


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_entry(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """An override changes what it names: prices replace the base price of the same
    (cloud, kind, region) and add the others; every other key deep-merges."""
    merged = _deep_merge(base, {k: v for k, v in over.items() if k != "prices"})
    if isinstance(over.get("prices"), list):
        def key(p: Any) -> Any:
            return (p.get("cloud"), p.get("kind"), p.get("region")) if isinstance(p, dict) else id(p)

        new_keys = {key(p) for p in over["prices"]}
        kept = [p for p in base.get("prices", []) if key(p) not in new_keys]
        merged["prices"] = list(over["prices"]) + kept  # the override's own indexes stay valid in errors
    return merged


def load_catalog(overrides: list[str] | None = None) -> Catalog:
    """The built-in catalog with ``overrides`` applied in order."""
    path = str(builtin_catalog_path())
    doc = _doc(path)
    try:
        base = CatalogFile.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(problems_from(exc, doc, CatalogFile)) from None
    problems: list[Problem] = []
    sources = dict(base.sources)
    raw: dict[str, dict[str, Any]] = {}
    for i, acc in enumerate(base.accelerators):
        _check_refs(doc, acc, i, sources, problems)
        raw[acc.id] = acc.model_dump(mode="json", exclude_none=True)
    as_of = base.as_of
    files = [path]
    onprem = base.onprem
    if onprem is not None:
        _check_onprem_refs(doc, onprem, sources, problems)
    accelerators = {a.id: a for a in base.accelerators}
    for opath in overrides or []:
        odoc = _doc(opath)
        try:
            over = OverrideFile.model_validate(odoc.data)
        except ValidationError as exc:
            problems.extend(problems_from(exc, odoc, OverrideFile))
            continue
        sources.update(over.sources)
        if over.onprem is not None:
            onprem = over.onprem
            _check_onprem_refs(odoc, onprem, sources, problems)
        if over.as_of and over.as_of > as_of:
            as_of = over.as_of
        aliases = _alias_map(accelerators)
        for i, entry in enumerate(over.accelerators):
            loc = ("accelerators", i)
            name = entry.get("id")
            if not isinstance(name, str):
                problems.append(odoc.problem(loc, "accelerators[]: every entry needs an 'id'"))
                continue
            target = name if name in raw else aliases.get(name.lower())
            merged = _merge_entry(raw[target], entry | {"id": target}) if target else entry
            try:
                acc = Accelerator.model_validate(merged)
            except ValidationError as exc:
                hint = "" if target else f" (new accelerator; to change an existing one use its id{did_you_mean(name, raw)})"
                for p in problems_from(exc, odoc, Accelerator, loc):
                    problems.append(Problem(p.path, p.line, p.col, f"accelerators[{i}].{p.message}{hint}"))
                continue
            _check_refs(odoc, acc, i, sources, problems)
            raw[acc.id] = merged
            accelerators[acc.id] = acc
        files.append(opath)
    if problems:
        raise InputError(problems)
    if onprem is not None:
        accelerators = {k: a.model_copy(update={"onprem_basis": onprem}) for k, a in accelerators.items()}
    return Catalog(as_of, sources, accelerators, _alias_map(accelerators), files, onprem)


def _check_onprem_refs(doc: Document, onprem: OnPremDefaults, sources: dict[str, SourceRef], problems: list[Problem]) -> None:
    for name in OnPremDefaults.model_fields:
        value = getattr(onprem, name)
        for sid in (value.source if value is not None else []):
            if sid not in sources:
                problems.append(doc.problem(("onprem", name, "source"), f"unknown source {sid!r}{did_you_mean(sid, sources)}"))


def _alias_map(accelerators: dict[str, Accelerator]) -> dict[str, str]:
    out: dict[str, str] = {}
    for acc in accelerators.values():
        for alias in acc.aliases:
            out[alias.lower()] = acc.id
    return out
