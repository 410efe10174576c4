"""Device families (rules/families.yaml) and how each family's chips combine into shapes.

The one place that knows how a TPU differs from a GPU or a CPU: everything else asks
``family(acc.device)``. Two scaling kinds exist today:

* ``slice``: fixed ICI slices (one or more 4-chip hosts each); identical multi-host slices
  join over the data-centre network (multislice), up to ``shapes.max_slices``.
* ``node``: partial-node instances (1/2/4 GPUs, one CPU VM) and whole nodes of
  ``shapes.gpus_per_node`` joined by a scale-out network, up to ``shapes.max_nodes``.

A family with another way of combining chips adds a ``Scaling`` subclass here and names it
in the data file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

# Chips per host of a multislice configuration whose slice is not in the catalog (TPU VMs
# have four chips per host for v4, v5e, v5p, v6e and TPU7x: rules/catalog.yaml slices).
_TPU_CHIPS_PER_HOST = 4


# Catalog entries (advisor.catalog.Accelerator) and their shapes, typed loosely: this module sits
# below the catalog in the layering and reads only the fields named in each method.
_Acc = Any
_Shapes = Any


class Scaling:
    """How one family's chips make real shapes."""

    kind = ""

    def validate(self, device: str, shapes: _Shapes) -> str | None:
        """An error message when ``shapes`` cannot describe this family's offers."""
        raise NotImplementedError

    def node_chips(self, shapes: _Shapes) -> int:
        """Chips in the largest fast domain (one NVLink node, the largest ICI slice)."""
        raise NotImplementedError

    def real_shapes(self, shapes: _Shapes) -> set[int]:
        raise NotImplementedError

    def ladder(self, shapes: _Shapes) -> list[int]:
        """Representative real shapes, roughly doubling (the largest is added by the caller)."""
        raise NotImplementedError

    def hosts(self, acc: _Acc, count: int) -> int:
        raise NotImplementedError

    def shape_name(self, acc: _Acc, count: int) -> str:
        raise NotImplementedError

    def generic_shape_name(self, acc: _Acc, count: int) -> str:
        """Without a cloud's machine-type names (another cloud, the team's own servers)."""
        return self.shape_name(acc, count)

    def domain(self, acc: _Acc, count: int) -> int:
        """The fast domain (chips on one fabric) of a configuration of ``count`` chips."""
        raise NotImplementedError

    def scale_out_bytes(self, n_params: float, domain: int, grad_bytes: float, model_parallel: int) -> float:
        """Bytes each chip sends over the scale-out network per training step (data parallelism)."""
        raise NotImplementedError

    def host_layout(self, acc: _Acc, count: int) -> dict[str, str]:
        """Setup placeholders: accelerator type, topology, machine type, hosts, chips per host."""
        raise NotImplementedError


class SliceScaling(Scaling):
    kind = "slice"

    def validate(self, device: str, shapes: _Shapes) -> str | None:
        return None if shapes.slices else f"a {device.upper()} entry needs shapes.slices"

    def node_chips(self, shapes: _Shapes) -> int:
        return int(max(sl.chips for sl in shapes.slices or []))

    def real_shapes(self, shapes: _Shapes) -> set[int]:
        found = {sl.chips for sl in shapes.slices or []}
        for sl in shapes.slices or []:
            if (sl.hosts or 1) > 1:  # multislice needs multi-host slices
                found.update(k * sl.chips for k in range(2, shapes.max_slices + 1))
        return found

    def ladder(self, shapes: _Shapes) -> list[int]:
        out = sorted({sl.chips for sl in shapes.slices or []})
        k, top = 2, out[-1]
        while k <= shapes.max_slices:
            out.append(k * top)
            k *= 2
        return out

    @staticmethod
    def layout(acc: _Acc, count: int) -> tuple[Any, int]:
        """The slice and the number of identical slices that make ``count`` chips: the catalog's
        slice of that size, else the largest multi-host slice that divides ``count`` within
        ``shapes.max_slices`` (the multislice real_shapes counts), else the largest slice,
        as many as cover ``count``. Shape names, hosts and setup files all read this."""
        sl = acc.slice_for(count)
        if sl is not None:
            return sl, 1
        slices = sorted(acc.shapes.slices or [], key=lambda s: -s.chips)
        for cand in slices:
            k, rest = divmod(count, cand.chips)
            if not rest and (cand.hosts or 1) > 1 and 2 <= k <= acc.shapes.max_slices:
                return cand, k
        return slices[0], max(1, math.ceil(count / slices[0].chips))

    def hosts(self, acc: _Acc, count: int) -> int:
        sl = acc.slice_for(count)
        if sl is not None:
            return max(1, math.ceil(sl.hosts or 1))
        return max(1, math.ceil(count / _TPU_CHIPS_PER_HOST))  # multislice of multi-host slices

    def shape_name(self, acc: _Acc, count: int) -> str:
        sl, k = self.layout(acc, count)
        return str(sl.accelerator_type) if k == 1 and sl.chips == count else f"{k} x {sl.accelerator_type}"

    def domain(self, acc: _Acc, count: int) -> int:
        if acc.slice_for(count) is not None:
            return count
        for sl in sorted(acc.shapes.slices or [], key=lambda s: -s.chips):
            if count % sl.chips == 0 and (sl.hosts or 1) > 1:
                return int(sl.chips)
        return self.node_chips(acc.shapes)

    def scale_out_bytes(self, n_params: float, domain: int, grad_bytes: float, model_parallel: int) -> float:
        # FSDP inside each slice (ICI); bf16 gradients all-reduced across slices over DCN
        # (reduce-scatter + all-gather: 2 x 2 bytes per parameter, spread over the slice's chips).
        return 2.0 * 2.0 * n_params / max(domain, 1)

    def host_layout(self, acc: _Acc, count: int) -> dict[str, str]:
        sl, k = self.layout(acc, count)
        hosts = max(1, math.ceil(sl.hosts or 1))
        return {
            "accelerator_type": sl.accelerator_type,
            "topology": sl.topology or "",
            "machine_type": sl.machine_type or "",
            "hosts": str(hosts),
            "chips_per_host": str(max(1, sl.chips // hosts)),
            "slices": str(k),
        }


class NodeScaling(Scaling):
    kind = "node"

    def validate(self, device: str, shapes: _Shapes) -> str | None:
        if shapes.gpus_per_node and shapes.partial_node_counts:
            return None
        return f"a {device.upper()} entry needs shapes.gpus_per_node and shapes.partial_node_counts (chips or instances per node)"

    def node_chips(self, shapes: _Shapes) -> int:
        return shapes.gpus_per_node or 8

    def real_shapes(self, shapes: _Shapes) -> set[int]:
        per = self.node_chips(shapes)
        return set(shapes.partial_node_counts or []) | {k * per for k in range(1, max(shapes.max_nodes or 1, 1) + 1)}

    def ladder(self, shapes: _Shapes) -> list[int]:
        out = sorted(set(shapes.partial_node_counts or []))
        nodes = 2
        while nodes <= (shapes.max_nodes or 1):
            out.append(nodes * self.node_chips(shapes))
            nodes *= 2
        return out

    def hosts(self, acc: _Acc, count: int) -> int:
        return max(1, math.ceil(count / self.node_chips(acc.shapes)))

    def shape_name(self, acc: _Acc, count: int) -> str:
        per = self.node_chips(acc.shapes)
        mt = acc.shapes.machine_types or {}
        if count <= per:
            return mt.get(count) or f"{count} x {acc.id}"
        return f"{count // per} x {mt.get(per) or f'{per} x {acc.id}'}"

    def generic_shape_name(self, acc: _Acc, count: int) -> str:
        """Without a cloud's machine-type names (another cloud, the team's own servers)."""
        per = self.node_chips(acc.shapes)
        return f"{count} x {acc.id}" if count <= per or per == 1 else f"{count // per} nodes x {per} {acc.id}"

    def domain(self, acc: _Acc, count: int) -> int:
        # the scale-up fabric where it spans more than a node (a GB200 NVL72 rack of 4-GPU trays)
        return max(self.node_chips(acc.shapes), int(acc.specs.scale_up_chips))

    def scale_out_bytes(self, n_params: float, domain: int, grad_bytes: float, model_parallel: int) -> float:
        # every data-parallel rank exchanges its shard of the gradients (and FSDP's weights)
        return grad_bytes * n_params / model_parallel

    def host_layout(self, acc: _Acc, count: int) -> dict[str, str]:
        per = self.node_chips(acc.shapes)
        mt = acc.shapes.machine_types or {}
        on_node = min(count, per)
        return {
            "machine_type": mt.get(on_node) or mt.get(per) or "",
            "hosts": str(max(1, math.ceil(count / per))),
            "chips_per_host": str(on_node),
        }


_SCALINGS: dict[str, Scaling] = {s.kind: s for s in (SliceScaling(), NodeScaling())}


@dataclass(frozen=True)
class Setup:
    """What generated setup files need to know about a family (rules/families.yaml ``setup``)."""

    skeletons: Mapping[str, str]
    runtime: str | None
    kubernetes_resource: str | None
    runtime_version: bool
    cloud_vm: bool
    # a chip vendor's own resource name, device plugin and server images where they differ from the family's
    vendors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def skeleton(self, framework: str) -> str | None:
        return self.skeletons.get(framework) or self.skeletons.get("default")

    def vendor(self, name: str | None) -> Mapping[str, Any]:
        """The vendor's row (``default`` for a vendor without one)."""
        return self.vendors.get(name or "", self.vendors.get("default", {}))

    def resource(self, vendor: str | None) -> str | None:
        """The extended resource a pod of this vendor's chips requests (nvidia.com/gpu, amd.com/gpu, google.com/tpu)."""
        return self.vendor(vendor).get("kubernetes_resource") or self.kubernetes_resource


@dataclass(frozen=True)
class Family:
    id: str
    name: str
    colour: str
    preference: int
    role: str  # accelerator | host | advice
    scaling: Scaling | None
    clouds: tuple[str, ...]
    stacks: Mapping[str, str]
    compiles: bool
    serving_overhead: str  # per_step | per_layer
    decode_utilisation: str | None
    fast_domain: str
    scale_out: str
    unit: str
    rival: str | None
    setup: Setup

    @property
    def sliced(self) -> bool:
        """Chips come in fixed slices joined over a data-centre network (TPU-like)."""
        return self.scaling is not None and self.scaling.kind == "slice"

    @property
    def accelerator(self) -> bool:
        return self.role == "accelerator"

    @property
    def sized(self) -> bool:
        """Whether the catalog has configurations of this family (edge is advice only)."""
        return self.scaling is not None

    @property
    def shapes(self) -> Scaling:
        assert self.scaling is not None, f"{self.id} has no catalog shapes"
        return self.scaling

    def sold_on(self, clouds: list[str] | tuple[str, ...]) -> bool | None:
        """True/False where the family is sold only on some clouds; None: ask the catalog."""
        if not self.clouds:
            return None
        return bool(set(self.clouds) & set(clouds))

    def stack(self, framework: str, cuda_libraries: Iterable[str] = ()) -> str:
        """The software stack whose utilisation row applies to ``framework`` on this family."""
        if "megatron" in self.stacks and {"megatron", "deepspeed"} & set(cuda_libraries):
            return self.stacks["megatron"]
        return self.stacks.get(framework) or self.stacks["default"]

    def unit_text(self, shapes: _Shapes) -> str:
        """How the real shapes are described to a user (``check``'s not-a-real-shape finding)."""
        partial = "/".join(map(str, shapes.partial_node_counts or []))
        node = str(shapes.gpus_per_node or "")
        return self.unit.replace("{partial}", partial).replace("{node}", node)


_FIELDS = {
    "name", "colour", "preference", "role", "scaling", "clouds", "stacks", "compiles",
    "serving_overhead", "decode_utilisation", "fast_domain", "scale_out", "unit", "rival", "setup",
}
_SETUP_FIELDS = {"skeletons", "runtime", "kubernetes_resource", "runtime_version", "cloud_vm"}
_VENDOR_FIELDS = {"kubernetes_resource", "device_plugin", "images", "smi", "torch_index", "source"}


def _build(fid: str, raw: dict[str, Any]) -> Family:
    extra, missing = set(raw) - _FIELDS, _FIELDS - set(raw)
    if extra or missing:
        raise ValueError(f"rules/families.yaml: family {fid}: unknown {sorted(extra)} / missing {sorted(missing)}")
    if raw["role"] not in ("accelerator", "host", "advice"):
        raise ValueError(f"rules/families.yaml: family {fid}: role {raw['role']!r}")
    if raw["serving_overhead"] not in ("per_step", "per_layer"):
        raise ValueError(f"rules/families.yaml: family {fid}: serving_overhead {raw['serving_overhead']!r}")
    if "default" not in raw["stacks"]:
        raise ValueError(f"rules/families.yaml: family {fid}: stacks needs a default")
    scaling = None if raw["scaling"] is None else _SCALINGS[raw["scaling"]]
    st = raw["setup"]
    if set(st) - {"vendors"} != _SETUP_FIELDS:
        raise ValueError(f"rules/families.yaml: family {fid}: setup fields {sorted((set(st) - {'vendors'}) ^ _SETUP_FIELDS)}")
    vendors = dict(st.get("vendors") or {})
    for vid, row in vendors.items():
        if not isinstance(row, dict) or set(row) - _VENDOR_FIELDS or "source" not in row:
            raise ValueError(f"rules/families.yaml: family {fid}: setup.vendors.{vid}: fields {sorted(_VENDOR_FIELDS)}, source needed")
    setup = Setup(
        skeletons=dict(st["skeletons"]), runtime=st["runtime"], kubernetes_resource=st["kubernetes_resource"],
        runtime_version=bool(st["runtime_version"]), cloud_vm=bool(st["cloud_vm"]), vendors=vendors,
    )
    return Family(
        id=fid, name=str(raw["name"]), colour=str(raw["colour"]), preference=int(raw["preference"]),
        role=raw["role"], scaling=scaling, clouds=tuple(raw["clouds"]), stacks=dict(raw["stacks"]),
        compiles=bool(raw["compiles"]), serving_overhead=raw["serving_overhead"],
        decode_utilisation=raw["decode_utilisation"], fast_domain=str(raw["fast_domain"]),
        scale_out=str(raw["scale_out"]), unit=str(raw["unit"]), rival=raw["rival"], setup=setup,
    )


@lru_cache(maxsize=1)
def _registry() -> dict[str, Family]:
    from advisor.knowledge import bundled_data

    data = bundled_data("families.yaml")
    out = {fid: _build(fid, raw) for fid, raw in data["families"].items()}
    for f in out.values():
        if f.rival is not None and f.rival not in out:
            raise ValueError(f"rules/families.yaml: family {f.id}: rival {f.rival!r} is not a family")
    return out


def family(device: str) -> Family:
    """The family of a catalog entry or verdict (``tpu``, ``gpu``, ``cpu``, ``edge``)."""
    return _registry()[device]


def all_families() -> tuple[Family, ...]:
    """Every family, in the data file's order."""
    return tuple(_registry().values())


def ids() -> tuple[str, ...]:
    return tuple(_registry())


def sized() -> tuple[str, ...]:
    """Families with catalog configurations."""
    return tuple(f.id for f in all_families() if f.sized)


def of_role(role: str) -> tuple[str, ...]:
    return tuple(f.id for f in all_families() if f.role == role)


def name(device: str) -> str:
    """Display name: ``TPU``; an unknown id is shown upper-cased."""
    f = _registry().get(device)
    return f.name if f else device.upper()
