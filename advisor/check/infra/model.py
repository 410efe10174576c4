"""The normalised request: what one infrastructure resource asks for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor.check.infra.names import Hardware
from advisor.errors import InputError
from advisor.yamlsrc import Document, KeyPath

Pos = tuple[int, int]
HOURS_PER_MONTH = 730.0
# ${..}, {{..}}, $(..); a whole $NAME (envsubst) or <NAME> (a document's placeholder: <number_of_gpus>, <your-vm-sku>)
# a template's or a document's stand-in for a value: ${X}, {{ x }}, $(X), $X, %{ if } (a Terraform template directive),
# <your-region>, and the bare words samples use (PLACEHOLDER_NUM_NODES, REPLACE_ME, YOUR_REGION, CHANGE_ME)
_PLACEHOLDER = re.compile(
    r"\$\{|\{\{|\$\(|%\{|^\s*\$[A-Za-z_][A-Za-z0-9_]*\s*$|^\s*<[A-Za-z][A-Za-z0-9_ .-]{0,60}>\s*$"
    r"|^\s*(?:PLACEHOLDER|REPLACE|YOUR|CHANGE_?ME|TODO|FIXME)(?:[_-][A-Za-z0-9_-]*)?\s*$"
)


# an unresolved field whose path holds one of these decides how many chips a request asks for (Terraform arguments,
# Kubernetes / Helm / provisioner fields): the count read beside it is a lower bound
COUNT_FIELDS = frozenset({
    "count", "for_each", "node_count", "initial_node_count", "min_node_count", "max_node_count", "total_min_node_count",
    "total_max_node_count", "node_count_per_zone", "node_locations", "location", "zone", "zones", "autoscaling",
    "scaling_config", "min_size", "max_size", "desired_size", "desired_capacity", "instances", "min_count", "max_count",
    "target_size", "max_instance_count", "replicas", "replicaCount", "minReplicas", "maxReplicas", "parallelism",
    "completions", "numNodes", "nodeCount", "num_nodes", "size", "workers", "nvidia.com/gpu", "google.com/tpu", "amd.com/gpu",
    "accelerator_count", "accelerators",
})
# whole-request marks of the readers: an unread count, an unread kind's replicas (counted once), a guessed template
# branch, a line left out of a render, a kustomize build or release part not evaluated
COUNT_MARKS = frozenset({"count-unknown", "kind", "helm-condition", "helm-left-out", "helm-remote", "helm-dependency", "kustomize",
                         "release"})
_FIELD_PARTS = re.compile(r"[.\[\]\s]+")


@dataclass
class Request:
    path: str
    kind: str  # terraform-plan | terraform-hcl | kubernetes | skypilot | dstack | ray
    address: str
    line: int = 1
    col: int = 1
    hardware: str | None = None  # the name read from the file
    accelerator: str | None = None  # catalog id
    unknown: str | None = None  # why the hardware is unknown
    count: int | None = None  # chips per replica (node, pod group, slice)
    replicas_min: int | None = 1
    replicas_max: int | None = 1
    hosts: int = 1  # hosts per replica
    topology: str | None = None  # TPU slice topology asked for
    topology_chips: int | None = None
    subgroups: int = 0  # LeaderWorkerSet subgroups per replica, each one whole slice of the topology (0: none)
    cloud: str | None = None
    region: str | None = None
    # where a launcher may place it (SkyPilot's infra of each option, dstack's backends x regions), as (cloud, region),
    # None for either that the file leaves to the launcher; None where the file itself fixes the place (a manifest's
    # cluster, a Terraform resource): the policy's cloud and region limits hold for every place
    places: list[tuple[str | None, str | None]] | None = None
    other_regions: list[str] = field(default_factory=list)  # a manifest's node affinity that also allows these regions
    pricing: str = "on-demand"  # on-demand | spot | reservation
    always_on: bool = True
    # what stops a run the manifest starts, in hours (a Job's spec.activeDeadlineSeconds): a linked workload's estimate
    # prices the run only within it (None: nothing does, so the run is priced as a month)
    run_bound_hours: float | None = None
    cap: bool = False  # count is a ceiling over machines the platform picks (auto-provisioning limits), not one shape
    action: str = "create"  # create | update | delete | replace | no-op
    link: str | None = None  # workload named by an annotation / label / tag
    scope: str | None = None  # Kubernetes namespace (spot policy)
    namespaced: bool = True  # a Kubernetes object whose metadata names its namespace (else "default" stands for it)
    where: dict[str, Pos] = field(default_factory=dict)  # accelerator / count / replicas positions
    unresolved: list[tuple[str, str, Pos]] = field(default_factory=list)  # (field, value, position)
    shape_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    # the other options the platform may provision instead, as (catalog id or None when unknown, chips
    # per replica or None): the policy's limits hold for every one of them, not only the one priced
    options: list[tuple[str | None, int | None]] = field(default_factory=list)
    before: Request | None = None  # plan JSON: the resource as it was (update / delete)
    target: tuple[str, str, str] | None = None  # Kubernetes (kind, namespace, name) for autoscalers
    config: tuple[str, int] | None = None  # plan JSON: the .tf file and line of the configuration block
    waivers: list[tuple[str, Pos]] = field(default_factory=list)  # "RULE until DATE: reason", where written
    # a pod that names no accelerator type but selects a GKE ComputeClass (cloud.google.com/compute-class): its name and
    # where the selector is; a ComputeClass of the run gives the hardware (judge.apply_compute_classes)
    compute_class: tuple[str, Pos] | None = None

    def pos(self, what: str) -> Pos:
        return self.where.get(what, (self.line, self.col))

    def set_hardware(self, name: str, hw: Hardware) -> None:
        self.hardware = name
        self.accelerator = hw.accelerator
        self.unknown = hw.reason

    def replicas(self, end: str = "max") -> int | None:
        return self.replicas_max if end == "max" else self.replicas_min

    def count_unread(self) -> tuple[str, str] | None:
        """The first unresolved field that decides how many chips this asks for (a count, a replica number, a scale, an
        instance set, a branch or build the reader could not settle), as (field, value): its total is then a lower bound."""
        for fld, value, _pos in self.unresolved:
            if fld in COUNT_MARKS or COUNT_FIELDS & set(_FIELD_PARTS.split(fld)):
                return fld, value
        return None

    def total(self, end: str = "max") -> int | None:
        r = self.replicas(end)
        return None if r is None or self.count is None else r * self.count

    def to_json(self, end: str = "max") -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "hardware": self.hardware,
            "count": self.count,
            "replicas": self.replicas(end),
            "replicas_min": self.replicas_min,
            "replicas_max": self.replicas_max,
            "total_chips": self.total(end),
            "hosts_per_replica": self.hosts,
            "cloud": self.cloud,
            "region": self.region,
            "pricing": self.pricing,
            "always_on": self.always_on,
            "action": self.action,
            **({"alternatives": self.alternatives} if self.alternatives else {}),
        }


WAIVE_ANNOTATION = "advisor.dev/waive"  # Kubernetes annotation (one waiver per line)
WAIVE_ENV = "ADVISOR_WAIVE"  # SkyPilot: envs.ADVISOR_WAIVE (one waiver per line)
_WAIVE_COMMENT = re.compile(r"(?:#|//)\s*advisor:waive\s+(.+?)\s*$")  # Terraform: a comment in or just above the block


def waiver_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()][:20]


def tf_waivers(text: str, line: int) -> list[tuple[str, Pos]]:
    """``# advisor:waive RULE until DATE: reason`` comments inside the block that starts at ``line``
    (1-based) or on the comment lines directly above it."""
    lines = text.splitlines()
    out: list[tuple[str, Pos]] = []
    i = line - 2
    while i >= 0 and lines[i].strip().startswith(("#", "//")):
        i -= 1
    depth, j, started = 0, i + 1, False
    while j < len(lines) and j < line + 2000:
        ln = lines[j]
        m = _WAIVE_COMMENT.search(ln)
        if m:
            out.append((m.group(1), (j + 1, m.start() + 1)))
        if j >= line - 1:
            code = ln.split("#", 1)[0]
            depth += code.count("{") - code.count("}")
            started = started or "{" in code
            if started and depth <= 0:
                break
        j += 1
    return out[:20]


def value_at(data: Any, loc: KeyPath) -> Any:
    """The value at ``loc`` (mapping keys, list indexes) in a document's data; None where the path does not lead."""
    node = data
    for part in loc:
        if (isinstance(node, dict) and part in node) or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            node = node[part]
        else:
            return None
    return node


def ascii_int(value: str, *, digits: int = 9, plus: bool = False) -> int | None:
    """A whole number written in ASCII digits (at most ``digits``; ``plus``: a leading + too, as Go's strconv.Atoi and
    Kubernetes' quantities take it), else None. ``str.isdigit()`` also accepts superscripts and other Unicode digits
    that ``int()`` refuses ('²'), so it is never used to test input."""
    m = re.fullmatch(r"(\+?)([0-9]{1," + str(digits) + "})", value.strip())
    return int(m.group(2)) if m and (plus or not m.group(1)) else None


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and bool(_PLACEHOLDER.search(value))


def fail_at(doc: Document, loc: KeyPath, message: str) -> InputError:
    """An input error at ``loc`` of a YAML document, naming the field (SkyPilot tasks, Ray cluster configs)."""
    return InputError([doc.problem(loc, f"{'.'.join(str(p) for p in loc)}: {message}")])


def whole_number(doc: Document, loc: KeyPath, value: Any, req: Request | None = None) -> int | None:
    """A count field: None when absent; a template placeholder is recorded as unresolved on ``req`` (None);
    anything but a whole number 0..1000000 is an input error at its place."""
    if value is None:
        return None
    if isinstance(value, str) and is_placeholder(value):
        if req is not None:
            req.unresolved.append((".".join(map(str, loc)), value[:80], doc.where(loc)))
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
        # YAML 1.1 reads 8:8:8... as one base-60 number, too long for repr() past 4300 digits
        shown = "a number too large to print" if isinstance(value, int) and abs(value) > 10**100 else repr(value)[:120]
        raise fail_at(doc, loc, f"expected a whole number 0..1000000, got {shown}"[:200])
    return value


@dataclass
class Autoscaler:
    """A HorizontalPodAutoscaler (or a KEDA ScaledObject): replicas min..max of the workload it targets."""

    target: tuple[str, str, str]
    minimum: int
    maximum: int
    pos: Pos
    what: str = "a HorizontalPodAutoscaler"
    namespaced: bool = True  # its metadata names a namespace (else "default" stands for the one it is applied to)
    # an autoscaler of a kind the gate only knows by its shape (another stack's own): it may raise the replicas judged,
    # never lower them below the workload's own (a made-up kind with maxReplicas: 1 must not hide a Deployment of 500)
    raises_only: bool = False
    # not an autoscaler but a GKE ComputeClass (target ("ComputeClass", "", NAME)), carried with them to the pods that
    # select it: the machines of its priorities in order, each (GPU / TPU type or machine type, Spot), and its position
    machines: tuple[tuple[str, bool], ...] = ()


@dataclass
class ReleaseRef:
    """A release of a chart in the repository named by another file (an Argo CD Application, a Flux
    HelmRelease, a helmfile release) with the values it is installed with."""

    path: str  # the file that names the release
    pos: Pos
    label: str  # " [argocd NAME]", " [flux NAME]", " [helmfile NAME]"
    chart: str  # the chart directory
    files: list[str] = field(default_factory=list)  # values files, in order (helm -f)
    layers: list[dict[str, Any]] = field(default_factory=list)  # inline values, in order, after the files
    unread: list[tuple[str, str, Pos]] = field(default_factory=list)  # what it names that is not read
    # the release's name and the namespace it installs into (.Release.Name / .Release.Namespace, and the namespace of
    # every object the chart leaves without one); None: helm template's defaults (release-name, default)
    release: str | None = None
    namespace: str | None = None


@dataclass
class Parsed:
    """What one infrastructure file holds."""

    kind: str
    requests: list[Request] = field(default_factory=list)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    releases: list[ReleaseRef] = field(default_factory=list)
    # Argo CD Applications / Flux Kustomizations that deploy a kustomization of the repository with overrides of their own
    builds: list[Document] = field(default_factory=list)
    # directories of modules kept in the repository whose resources this file read at its calls (Terraform HCL)
    modules: list[str] = field(default_factory=list)


def label_variant(requests: list[Request], autoscalers: list[Autoscaler], label: str, note: str) -> None:
    """Requests of one rendering of a chart or build of a kustomization (``label``: `` [-f values-prod.yaml]``,
    `` [kustomize overlays/prod]``): their addresses say which, and so do the workloads their
    autoscalers target, so that one variant's autoscaler never scales another variant."""
    for req in requests:
        req.address += label
        if req.target is not None:
            req.target = (req.target[0], req.target[1], req.target[2] + label)
        req.notes.append(note)
    for a in autoscalers:
        a.target = (a.target[0], a.target[1], a.target[2] + label)
