"""Dynamic Resource Allocation (``resource.k8s.io``, GA in Kubernetes 1.34): a pod asks for accelerators through
``spec.resourceClaims``, each naming a ResourceClaimTemplate (a claim per pod) or a ResourceClaim (shared by the pods that
name it), whose ``spec.devices.requests`` name a device class and a count (``exactly: {deviceClassName, count,
allocationMode}`` in v1; the same fields on the request in v1beta1; ``firstAvailable`` lists alternatives: the first is
read, the others are alternatives the scheduler may fall back to, each held to the policy).
No ``nvidia.com/gpu`` appears anywhere, so such a pod passed as one without accelerators.

The claims of the same file are indexed by namespace and name; a pod's claims are summed per device class of an
accelerator (ACCELERATOR_CLASSES, each the device class its vendor's DRA driver installs). A claim the file does not hold,
``allocationMode: All`` (every matching device on the node) and a placeholder count are request-unresolved, never read as
zero; a request with ``adminAccess: true`` (a monitoring agent's view of every device) allocates none. A CEL selector on
``productName`` names the model (``device.attributes["gpu.nvidia.com"].productName == "H100"``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.check.infra.names import Hardware, NameIndex

# device class -> the extended resource it stands for: NVIDIA's k8s-dra-driver-gpu (gpu.nvidia.com, mig.nvidia.com),
# AMD's k8s-gpu-dra-driver (gpu.amd.com), Intel's intel-resource-drivers-for-kubernetes (gpu.intel.com for its GPUs,
# the device plugin's gpu.intel.com/i915; gaudi.intel.com for Gaudi, habana.ai/gaudi): hardware the catalog may lack is
# reported unknown, never passed over
ACCELERATOR_CLASSES = {"gpu.nvidia.com": "nvidia.com/gpu", "mig.nvidia.com": "nvidia.com/gpu", "gpu.amd.com": "amd.com/gpu",
                       "gpu.intel.com": "gpu.intel.com/i915", "gaudi.intel.com": "habana.ai/gaudi"}
CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")
MAX_REQUESTS = 256
# the one form of a selector on the model this reader takes as naming it: an equality on the driver's productName
# attribute, alone or as a term of a conjunction (&&) of terms with no negation, alternative or condition in them
_PLAIN_PRODUCT = re.compile(
    r"\s*device\.attributes\[\s*['\"][a-z0-9.-]{1,80}['\"]\s*\]\.productName\s*==\s*['\"]([^'\"]{1,80})['\"]\s*"
)
# a selector that mentions productName in any other form (a negation, a list, an or): the model is not read
UNREAD = "a productName selector this reader does not read as one model"


@dataclass
class Claim:
    """What a ResourceClaim / ResourceClaimTemplate asks for (its kind, namespace and name are its index key)."""

    resource: str | None  # the extended resource its accelerator devices stand for, None when it asks for none
    count: int | None  # accelerator devices, None when the claim does not fix it (allocationMode All, a placeholder)
    product: str | None  # a model a CEL selector names
    # firstAvailable's other alternatives, (a model a selector names, devices): the scheduler falls back to any of them
    others: tuple[tuple[str | None, int | None], ...] = ()
    # how its MIG slices (mig.nvidia.com) were counted, where it asks for any: said on the pods' requests
    mig: str | None = None
    mixed: bool = False  # its requests name devices of several models (others: the rest, all allocated)


_DRIVER = re.compile(r"device\.driver\s*==\s*['\"]([a-z0-9.-]{1,80})['\"]")


def is_device_class(data: dict[str, Any]) -> bool:
    api = data.get("apiVersion")
    return isinstance(api, str) and api.split("/")[0] == "resource.k8s.io" and data.get("kind") == "DeviceClass"


def read_device_class(data: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """(name, the extended resource, a model its selector names) of a DeviceClass whose CEL selector picks an accelerator
    driver's devices (``device.driver == "gpu.nvidia.com"``), as a team defines its own classes (``h100``); None otherwise."""
    name = _map(data.get("metadata")).get("name")
    selectors = _map(data.get("spec")).get("selectors")
    if not isinstance(name, str):
        return None
    for sel in selectors if isinstance(selectors, list) else []:
        expr = str(_map(_map(sel).get("cel")).get("expression", ""))
        m = _DRIVER.search(expr)
        if m and m.group(1) in ACCELERATOR_CLASSES:
            return name, ACCELERATOR_CLASSES[m.group(1)], expression_product(expr)
    return None


def is_claim(data: dict[str, Any]) -> bool:
    api = data.get("apiVersion")
    return isinstance(api, str) and api.split("/")[0] == "resource.k8s.io" and data.get("kind") in CLAIM_KINDS


def _map(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def read_claim(
    data: dict[str, Any], classes: dict[str, tuple[str, str | None]] | None = None,
) -> tuple[tuple[str, str, str], Claim] | None:
    """((kind, namespace, name), what it asks for) of a ResourceClaim / ResourceClaimTemplate; None when unnamed.
    ``classes``: the device classes the files define (name -> (extended resource, model)), beside the drivers' own."""
    known = {k: (v, None) for k, v in ACCELERATOR_CLASSES.items()} | (classes or {})
    meta = _map(data.get("metadata"))
    name, ns = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str):
        return None
    spec = _map(data.get("spec"))
    if data["kind"] == "ResourceClaimTemplate":
        spec = _map(spec.get("spec"))
    requests = _map(spec.get("devices")).get("requests")
    resource: str | None = None
    count: int | None = 0
    product: str | None = None
    others: list[tuple[str | None, int | None]] = []
    slices = 0  # MIG slices among the devices counted
    models: list[tuple[str | None, int | None]] = []  # each request's model and devices
    for item in requests[:MAX_REQUESTS] if isinstance(requests, list) else []:
        item = _map(item)
        one = _map(item.get("exactly")) or item
        alternatives = item.get("firstAvailable")
        if isinstance(alternatives, list) and alternatives:
            one = _map(alternatives[0])
            for alt in alternatives[1:MAX_REQUESTS]:
                alt = _map(alt)
                cls = known.get(str(alt.get("deviceClassName")))
                if cls is None or alt.get("adminAccess") is True:
                    continue
                n = alt.get("count", 1)
                fixed = None if alt.get("allocationMode") == "All" or isinstance(n, bool) or not isinstance(n, int) else n
                others.append((_product(alt) or cls[1], fixed))
        cls = known.get(str(one.get("deviceClassName")))
        res = cls[0] if cls else None
        if res is None or one.get("adminAccess") is True:  # admin access (monitoring) allocates no device to the pod
            continue
        resource = resource or res
        n = one.get("count", 1)
        if one.get("allocationMode") == "All" or isinstance(n, bool) or not isinstance(n, int) or n < 0 or count is None:
            count = None
        else:
            count += min(n, 1_000_000)
            slices += min(n, 1_000_000) if one.get("deviceClassName") == MIG_CLASS else 0
        models.append((_product(one) or (cls[1] if cls else None), n if isinstance(n, int) and not isinstance(n, bool) else None))
    # requests for devices of several models (1 L4 and 8 H100): all counted, judged on the model of the most devices,
    # each other held to the policy (a pull request judged 8 H100 and an L4 as 9 L4)
    named = {m for m, _ in models}
    if models:
        product = max(models, key=lambda mn: (mn[1] or 0, mn[0] is not None))[0]
    mixed = len(named) > 1
    if mixed:
        others += [(m, k) for m, k in models if m != product]
    mig = None
    if slices and count is not None:
        if slices == count and _one_parent(spec):
            # every slice from one GPU (a matchAttribute constraint on the parent's UUID over all the requests): one GPU
            count, mig = 1, f"{slices} MIG slices of one GPU (matchAttribute parentUUID): 1 GPU"
        else:
            mig = f"{slices} MIG slice(s) counted as whole GPUs (an upper bound: several may share one GPU)"
    kind = str(data["kind"])
    claim = Claim(resource, count if resource else 0, product, tuple(others), mig, mixed)
    return (kind, ns if isinstance(ns, str) else "default", name), claim


MIG_CLASS = "mig.nvidia.com"


def _one_parent(spec: dict[str, Any]) -> bool:
    """Whether the claim constrains all its requests to one parent GPU (``matchAttribute: gpu.nvidia.com/parentUUID``
    with no request list, or every request listed)."""
    devices = _map(spec.get("devices"))
    names = {str(_map(r).get("name")) for r in devices.get("requests") or [] if isinstance(devices.get("requests"), list)}
    for c in devices.get("constraints") or [] if isinstance(devices.get("constraints"), list) else []:
        c = _map(c)
        if str(c.get("matchAttribute", "")).endswith("/parentUUID"):
            listed = c.get("requests")
            if not listed or (isinstance(listed, list) and names <= {str(x) for x in listed}):
                return True
    return False


def _product(request: dict[str, Any]) -> str | None:
    """The model a request's CEL selector names (``device.attributes["gpu.nvidia.com"].productName == "H100"``, alone or
    a term of an ``&&``), else None; UNREAD where a selector mentions productName in any other form:
    ``!(... productName == "NVIDIA L4")`` is every GPU but an L4, ``productName == "L4" || true`` any, never the L4 the
    literal names (a pull request hid 8 H100 as L4 so)."""
    selectors = request.get("selectors")
    for sel in selectors if isinstance(selectors, list) else []:
        found = expression_product(str(_map(_map(sel).get("cel")).get("expression", "")))
        if found is not None:
            return found
    return None


def expression_product(expr: str) -> str | None:
    """The model one CEL expression names (see _product), UNREAD, or None where it does not mention productName."""
    if "productName" not in expr:
        return None
    terms = expr.split("&&")
    plain = [m for m in (_PLAIN_PRODUCT.fullmatch(t) for t in terms) if m]
    rest = [t for t in terms if not _PLAIN_PRODUCT.fullmatch(t)]
    if len(plain) == 1 and not any(c in t for t in rest for c in ("|", "!", "?", "productName")):
        return plain[0].group(1)
    return UNREAD


def product_hardware(index: NameIndex, product: str) -> Hardware:
    """The accelerator of a product name as the driver reports it (``NVIDIA H100 80GB HBM3``, ``H100``): the whole name,
    then without the vendor, then its model (``h100-80gb``, ``h100``); the whole name's unknown reason where none is known."""
    words = product.strip().split()
    if words and words[0].lower() in ("nvidia", "amd"):
        words = words[1:]
    tries = [product, " ".join(words), "-".join(words[:2]), words[0] if words else ""]
    for name in tries:
        hw = index.lookup(name) if name else None
        if hw is not None and hw.known:
            return hw
    return index.lookup(product)
