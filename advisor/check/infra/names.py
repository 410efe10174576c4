"""One index from every hardware name an infrastructure file uses to (catalog id, chips per node).

Built from the catalog (machine types, TPU slice names and topologies, GKE labels, aliases) and
``rules/names.yaml`` (cloud instance types and VM sizes the catalog does not carry, and real
hardware that is not in the catalog: reported as unknown with the reason, never priced as a
neighbouring part).
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from advisor.catalog import Accelerator, Catalog, SourceRef
from advisor.models import Strict
from advisor.validation import builtin_rules_dir, load_table

Name = Annotated[str, Field(min_length=1, max_length=80)]


class NameEntry(Strict):
    name: Name
    accelerator: Name
    chips: Annotated[int, Field(ge=1, le=1024)] | None = None
    source: list[Name] = Field(min_length=1, max_length=10)
    note: Annotated[str, Field(max_length=1000)] | None = None


class Unsupported(Strict):
    name: Name
    reason: Annotated[str, Field(min_length=1, max_length=500)]
    chips: Annotated[int, Field(ge=1, le=1024)] | None = None  # accelerators per machine, where the name fixes it
    source: list[Name] = Field(min_length=1, max_length=10)


class CoreNamed(Strict):
    """A TPU family whose accelerator type names count TensorCores (``v2-8`` = 4 chips)."""

    family: Annotated[str, Field(pattern=r"^v[0-9a-z]+$", max_length=10)]
    cores_per_chip: Annotated[int, Field(ge=1, le=8)]
    chips_per_host: Annotated[int, Field(ge=1, le=16)]
    source: list[Name] = Field(min_length=1, max_length=10)


class HostOnly(Strict):
    """Machine types (a glob) that carry no accelerator of their own."""

    pattern: Name
    reason: Annotated[str, Field(min_length=1, max_length=500)]
    source: list[Name] = Field(min_length=1, max_length=10)


class NamesFile(Strict):
    schema_version: int
    as_of: dt.date
    sources: dict[str, SourceRef]
    tpu_core_named: list[CoreNamed] = Field(default_factory=list)
    host_only: list[HostOnly] = Field(default_factory=list)
    unsupported_families: list[HostOnly] = Field(default_factory=list)  # a glob of accelerator machine types: unknown
    names: list[NameEntry]
    unsupported: list[Unsupported] = Field(default_factory=list)


@dataclass(frozen=True)
class Hardware:
    """What a name resolves to: a catalog id and, where the name fixes it, chips per node
    (machine type) or per slice (TPU accelerator type, with hosts and topology)."""

    accelerator: str | None
    chips: int | None = None
    hosts: int | None = None
    topology: str | None = None
    reason: str | None = None  # why it is unknown

    @property
    def known(self) -> bool:
        return self.accelerator is not None


_SUFFIX_T = re.compile(r"-([0-9]+)t$")
_EC2_NAME = re.compile(r"(?:ml\.)?[a-z][a-z0-9-]*\.[0-9]*(?:nano|micro|small|medium|large|xlarge|metal)(?:-[0-9a-z]+)?")
# Other spellings of a name the index holds: SageMaker's instance types are EC2's with "ml." in front (ml.g5.8xlarge is a
# g5.8xlarge), and Compute Engine's virtual-workstation GPUs are the same chips with an NVIDIA RTX vWS licence
# (nvidia-tesla-t4-vws is a T4: cloud.google.com/compute/docs/gpus#t4-gpus), and GPU Feature Discovery's product labels
# are the driver's product names with "NVIDIA-" in front (NVIDIA-A100-SXM4-80GB: rules/names.yaml S_GFD_LABELS)
_SPELLINGS = ((re.compile(r"^ml\."), ""), (re.compile(r"-vws$"), ""), (re.compile(r"^nvidia-"), ""))
_TPU_N = re.compile(r"^(?:tpu-)?([a-z0-9]+?)-([0-9]+)$")
_DIGITS = re.compile(r"[0-9]{1,4}")  # ASCII digits only


def topology_chips(text: str) -> int | None:
    """``2x4`` -> 8, ``2x2x2`` -> 8; None when it is not a topology."""
    parts = text.strip().lower().split("x")
    if not 2 <= len(parts) <= 3 or not all(_DIGITS.fullmatch(p) for p in parts):
        return None
    n = 1
    for p in parts:
        n *= int(p)
    return n if n > 0 else None


class NameIndex:
    def __init__(self, catalog: Catalog, extra: NamesFile) -> None:
        self.catalog = catalog
        self.names: dict[str, Hardware] = {}
        self.unsupported = {u.name.lower(): u.reason for u in extra.unsupported}
        self.unsupported_chips = {u.name.lower(): u.chips for u in extra.unsupported if u.chips}
        self.core_named = {c.family: c for c in extra.tpu_core_named}
        self.host_only = [(h.pattern.lower(), h.reason) for h in extra.host_only]
        self.families = [(f.pattern.lower(), f.reason) for f in extra.unsupported_families]
        self.clouds: dict[str, str] = {}  # machine / instance type -> the cloud whose name it is (catalog shapes and deploy)
        for acc in catalog.accelerators.values():
            self._from_catalog(acc)
        for e in extra.names:
            if e.accelerator in catalog.accelerators:
                self.names.setdefault(e.name.lower(), Hardware(e.accelerator, e.chips))

    def _from_catalog(self, acc: Accelerator) -> None:
        add = self.names.setdefault
        for n, mt in (acc.shapes.machine_types or {}).items():
            if self.host_reason(mt) is None:
                add(mt.lower(), Hardware(acc.id, n))
            cloud = acc.shapes.machine_types_cloud or acc.deploy.cloud
            if cloud:
                self.clouds.setdefault(mt.lower(), str(cloud))
        for cloud, sizes in acc.deploy.instance_types.items():
            for it in sizes.values():
                self.clouds.setdefault(it.lower(), str(cloud))
        for sl in acc.shapes.slices or []:
            hosts = max(1, int(sl.hosts or 1))
            hw = Hardware(acc.id, sl.chips, hosts, sl.topology)
            add(sl.accelerator_type.lower(), hw)
            add("tpu-" + sl.accelerator_type.lower(), hw)
            if sl.machine_type:
                m = _SUFFIX_T.search(sl.machine_type)
                per = int(m.group(1)) if m else sl.chips // hosts
                add(sl.machine_type.lower(), Hardware(acc.id, per, 1))
                self.clouds.setdefault(sl.machine_type.lower(), str(acc.deploy.cloud))
        if acc.deploy.gke_accelerator:
            add(acc.deploy.gke_accelerator.lower(), Hardware(acc.id))
        add(acc.id, Hardware(acc.id))
        for alias in acc.aliases:
            add(alias.lower(), Hardware(acc.id))

    def host_reason(self, machine: str) -> str | None:
        """Why this machine type implies no accelerator (a host GPUs are attached to), or None."""
        import fnmatch

        key = machine.strip().lower()
        return next((why for pat, why in self.host_only if fnmatch.fnmatchcase(key, pat)), None)

    def family_reason(self, name: str) -> str | None:
        """Why a machine type the index does not know is still an accelerator (unsupported_families), or None."""
        import fnmatch

        key = name.strip().lower()
        if key in self.names:
            return None
        return next((why for pat, why in self.families if fnmatch.fnmatchcase(key, pat)), None)

    def is_unsupported(self, name: str) -> bool:
        """Real accelerator hardware the catalog does not hold: named in ``unsupported`` or of an unsupported family."""
        return name.strip().lower() in self.unsupported or self.family_reason(name) is not None

    def _cores(self, key: str) -> tuple[int, int] | None:
        """(chips, hosts) of a core-named TPU type (``v2-8`` -> 4 chips, 1 host)."""
        m = _TPU_N.match(key)
        rule = self.core_named.get(m.group(1)) if m else None
        if rule is None or m is None or len(m.group(2)) > 5:
            return None
        chips = max(1, int(m.group(2)) // rule.cores_per_chip)
        return chips, max(1, chips // rule.chips_per_host)

    def lookup(self, name: str) -> Hardware:
        key = name.strip().lower()
        cores = self._cores(key)
        if key in self.unsupported:
            chips = cores[0] if cores else self.unsupported_chips.get(key)
            return Hardware(None, chips, cores[1] if cores else None, reason=f"{name}: {self.unsupported[key]}")
        if cores is not None and key not in self.names:
            gen = key.removeprefix("tpu-").split("-")[0]
            return Hardware(
                None, cores[0], cores[1], reason=f"{name}: TPU {gen} is not in the catalog ({cores[0]} chips: the name counts TensorCores)"
            )
        hit = self.names.get(key)
        if hit is not None:
            return hit
        for alias, plain in _SPELLINGS:  # a name that is another's with a prefix or suffix of its own
            if alias.search(key) and (hit := self.names.get(alias.sub(plain, key))) is not None:
                return hit
        # third-party TPU spellings: tpu-v5e-8, v6e-16 (the slice of that family with that name suffix)
        m = _TPU_N.match(key)
        if m:
            family = self.catalog.resolve(m.group(1)) or self.catalog.resolve("tpu-" + m.group(1))
            if family is not None:
                acc = self.catalog.accelerators[family]
                for sl in acc.shapes.slices or []:
                    if sl.accelerator_type.lower().endswith("-" + m.group(2)):
                        return Hardware(acc.id, sl.chips, max(1, int(sl.hosts or 1)), sl.topology)
        why = self.family_reason(key)
        if why is not None:
            return Hardware(None, reason=f"{name}: {why}")
        return Hardware(None, reason=f"{name!r} is not in the name index or the catalog: unknown hardware, not priced")

    def family(self, family: str) -> Hardware:
        """An instance family (``p5``, ``g6e``): the one accelerator of its sizes in the index; unknown with the reason
        where its sizes hold several or the family is of an accelerator family the index lacks (``inf2``); no accelerator
        (neither accelerator nor reason) for a CPU family (``m5``)."""
        prefix = family.strip().lower() + "."
        accs = {hw.accelerator for name, hw in self.names.items()
                if name.startswith(prefix) and hw.accelerator and hw.chips and not self.is_cpu(hw.accelerator)}
        if len(accs) == 1:
            return Hardware(accs.pop())
        why = self.family_reason(prefix + "48xlarge")
        if accs or why:
            return Hardware(None, reason=f"instance family {family}: " + (why or f"sizes of {', '.join(sorted(str(a) for a in accs))}"))
        return Hardware(None)

    def instance_accelerator(self, name: str) -> Hardware | None:
        """What a cloud instance type (``p4d.24xlarge``) or instance family (``g5``, where a provisioner names one) carries:
        its accelerator, known or of an accelerator family the index lacks (unknown, with the reason); None for a machine
        without accelerators."""
        if "." not in name and not name.lower().startswith("standard_"):
            fam = self.family(name)
            return fam if fam.known or fam.reason else None
        hw = self.lookup(name)
        if hw.accelerator and self.is_cpu(hw.accelerator):
            return None  # a CPU machine the catalog prices (c7i.2xlarge): no accelerator
        return hw if (hw.known and hw.chips) or self.is_unsupported(name) else None

    def machine_cloud(self, name: str) -> str | None:
        """The cloud a machine or instance type is named by: the catalog's, else the naming scheme (an Azure VM size starts
        with Standard_, an OCI shape with BM. or VM., an EC2 or SageMaker instance type is family.size); None where the
        name says no cloud."""
        key = name.strip().lower()
        if key in self.clouds:
            return self.clouds[key]
        if key.startswith("standard_"):
            return "azure"
        if key.startswith(("bm.", "vm.")):  # an OCI shape (BM.GPU.H100.8, VM.GPU.A10.1)
            return "oci"
        return "aws" if _EC2_NAME.fullmatch(key) else None

    def is_cpu(self, accelerator: str) -> bool:
        """A catalog entry of a host family (a CPU machine priced for CPU inference): no accelerator."""
        from advisor.families import family

        acc = self.catalog.accelerators.get(accelerator)
        return acc is not None and not family(acc.device).accelerator

    def slice_of(self, accelerator: str, chips: int) -> Hardware | None:
        acc = self.catalog.accelerators.get(accelerator)
        sl = acc.slice_for(chips) if acc else None
        return Hardware(accelerator, sl.chips, max(1, int(sl.hosts or 1)), sl.topology) if sl else None


def names_path() -> str:
    return str(builtin_rules_dir() / "names.yaml")


_CACHE: dict[int, NameIndex] = {}


def load_names() -> NamesFile:
    return load_table(names_path(), NamesFile)


def name_index(catalog: Catalog) -> NameIndex:
    key = id(catalog)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = NameIndex(catalog, load_names())
    return _CACHE[key]


# chip resources and selectors, and the fields that name accelerators (SkyPilot, Terraform, profiles)
_HARDWARE_TEXT = re.compile(
    r"(?i)nvidia\.com/|amd\.com/gpu|google\.com/tpu|gke-accelerator|gke-tpu|aws\.amazon\.com/neuron|habana\.ai/"
    r"|accelerators?[\"']?\s*[:=]|accelerator_(?:type|count|config)|\bgpus?[\"']?\s*[:=]|\btpus?[\"']?\s*[:=]"
)
# a word of free text, not one written after an @ (a git ref: a GitHub Actions step's uses: actions/checkout@v4, whose
# v4 is no TPU v4)
_WORD = re.compile(r"(?<![@A-Za-z0-9._-])[A-Za-z0-9][A-Za-z0-9._-]{1,63}")


_CHAR_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|U([0-9a-fA-F]{8}))")


def _unescaped(text: str) -> str:
    """``text`` with its JSON and YAML character escapes (backslash-u, -x, -U) decoded: a name spelled in escapes
    (the escaped letters of nvidia.com/gpu) is the same name to the tool that reads the file."""
    if "\\" not in text:
        return text

    def char(m: re.Match[str]) -> str:
        code = int(next(g for g in m.groups() if g), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""

    return _CHAR_ESCAPE.sub(char, text)


def names_hardware(text: str, index: NameIndex) -> bool:
    """Whether a file that cannot be read names accelerators anywhere: a chip resource or word, or any
    word the name index resolves (a GPU or TPU machine type such as p5.48xlarge, a slice type), its
    character escapes decoded."""
    text = _unescaped(text)
    if _HARDWARE_TEXT.search(text):
        return True
    for word in dict.fromkeys(_WORD.findall(text)):
        hw = index.lookup(word)
        if hw.known or hw.chips:
            return True
    return False
