"""The pod templates of each Kubernetes workload kind, each a :class:`Part`: where its pod spec
is, pods per replica and replicas (min, max). Pod, Deployment, StatefulSet, ReplicaSet, Job,
CronJob, JobSet, LeaderWorkerSet, RayCluster / RayService / RayJob, the Kubeflow training jobs and
TrainJob, KServe InferenceService and LLMInferenceService, NVIDIA NIMService, Volcano Job, Argo
Workflow / WorkflowTemplate / CronWorkflow; the leader and the workers of one group are marked as such,
for the reader to count them as one slice. Any other kind is searched for pod specs (a mapping with a
``containers`` list): each one found is counted once and marked unread (its replicas are not known), so
an accelerator request in a kind advisor does not know is reported, never passed over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor.check.infra.k8s_pod import CHIP_RESOURCES, ManifestDoc
from advisor.check.infra.model import ascii_int
from advisor.yamlsrc import KeyPath


@dataclass
class Part:
    """One pod template of a workload: where its pod spec is, pods per replica, replicas (min, max)."""

    name: str
    pod: KeyPath
    pods: int
    reps: tuple[int | None, int | None]
    where: KeyPath | None = None
    containers: list[tuple[KeyPath, str]] | None = None  # container-like blocks of a custom resource
    notes: list[str] = field(default_factory=list)
    group: str = ""  # leader / workers of one group (LeaderWorkerSet, multi-node serving)
    role: str = ""
    unread: str = ""  # the kind, where this pod spec was found in a kind advisor does not read (its replicas not known)
    # a kind that names its chips instead of a pod spec asking for them: (accelerator or machine name, chips per pod,
    # where it is written, whether the name is a machine type whose chips those are: KAITO's instanceType). KubeAI's
    # resourceProfile "nvidia-gpu-l4:2" is ("l4", 2, ..., False); chips None on an accelerator name: unresolved
    named: tuple[str, int | None, KeyPath, bool] | None = None
    # pods of each LeaderWorkerSet subgroup among this part's pods (subGroupPolicy.subGroupSize), each subgroup placed
    # on its own slice (the subgroup-exclusive-topology annotation); 0 without subgroups
    subgroup: int = 0


REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
                 "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "MXJob": "mxReplicaSpecs"}
KSERVE_FRAMEWORKS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle")
ARGO_KINDS = {"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"}
# The kinds that run to completion: the others are always on.
# The Spark Operator's applications (kubeflow/spark-operator, sparkoperator.k8s.io): a driver and executors
SPARK_KINDS = {"SparkApplication", "ScheduledSparkApplication"}
JOB_KINDS = {"Job", "CronJob", "JobSet", "RayJob"} | set(REPLICA_SPECS) | {"TrainJob"} | ARGO_KINDS | SPARK_KINDS
# The kinds read as workloads (any other is searched for pod specs)
READ_KINDS = {
    "Pod", "Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "JobSet", "LeaderWorkerSet", "RayCluster", "RayService",
    "RayJob", "TrainJob", "InferenceService", "LLMInferenceService", "NIMService", "DynamoGraphDeployment", "Model", "Workspace",
    "InferenceSet", "RAGEngine", "MultiRoleInference",
} | set(REPLICA_SPECS) | ARGO_KINDS
MAX_FOUND_PODS = 64  # pod specs asking for chips searched for in a kind not read (a bound on a hostile document)
MAX_FOUND_NODES = 200_000  # nodes of such a document walked to find them


KNATIVE_MIN = ("autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/minScale")
KNATIVE_MAX = ("autoscaling.knative.dev/max-scale", "autoscaling.knative.dev/maxScale")


def _knative(d: ManifestDoc) -> Part:
    """A Knative Service: its revision template's pods, scaled between the template's min-scale and max-scale
    annotations (https://knative.dev/docs/serving/autoscaling/scale-bounds/): min 0 and no upper bound by default (max-scale
    0 or absent), so an unbounded service's replicas are not read (fails closed under a chip limit)."""
    base: KeyPath = ("spec", "template", "metadata", "annotations")
    ann = d.mapping(base)
    lo_key = next((k for k in KNATIVE_MIN if k in ann), None)
    hi_key = next((k for k in KNATIVE_MAX if k in ann), None)
    lo = d.count((*base, lo_key), default=0) if lo_key else 0
    hi = d.count((*base, hi_key), default=0) if hi_key else 0
    part = Part("", ("spec", "template", "spec"), 1, (lo or 0, hi or None), (*base, hi_key) if hi_key else None)
    if not hi:
        part.notes.append("a Knative Service without autoscaling.knative.dev/max-scale: it scales without an upper bound")
    return part


def pod_templates(d: ManifestDoc, kind: str, api: str = "") -> list[Part]:
    """The pod templates of one workload, each with its pods per replica and replicas (min, max)."""
    if kind == "Job" and api.startswith("batch.volcano.sh/"):
        return _volcano(d)
    if kind in ARGO_KINDS and api.startswith("argoproj.io/"):
        return _argo(d, kind)
    if kind == "Rollout" and api.startswith("argoproj.io/"):  # Argo Rollouts: a Deployment with a rollout strategy
        n = d.count(("spec", "replicas"), default=1)
        return [Part("", ("spec", "template", "spec"), 1, (n, n), ("spec", "replicas"))]
    if kind == "Service" and api.startswith("serving.knative.dev/"):
        return [_knative(d)]
    if kind == "VLLMRuntime" and api.startswith("production-stack.vllm.ai/"):
        return _vllm_runtime(d)
    if kind in SPARK_KINDS and api.startswith("sparkoperator.k8s.io/"):
        return _spark(d, kind)
    if kind not in READ_KINDS:
        return _found_pods(d, kind)
    if kind == "Pod":
        return [Part("", ("spec",), 1, (1, 1))]
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        n = d.count(("spec", "replicas"), default=1)
        return [Part("", ("spec", "template", "spec"), 1, (n, n), ("spec", "replicas"))]
    if kind == "Job":
        n = d.count(("spec", "parallelism"), default=1)
        return [Part("", ("spec", "template", "spec"), 1, (n, n), ("spec", "parallelism"))]
    if kind == "CronJob":
        n = d.count(("spec", "jobTemplate", "spec", "parallelism"), default=1)
        return [Part("", ("spec", "jobTemplate", "spec", "template", "spec"), 1, (n, n))]
    if kind == "JobSet":
        out: list[Part] = []
        for i, rj in enumerate(d.seq(("spec", "replicatedJobs"))):
            base: KeyPath = ("spec", "replicatedJobs", i)
            if not isinstance(rj, dict):
                raise d.fail(base, "expected a mapping")
            reps = d.count((*base, "replicas"), default=1)
            par = d.count((*base, "template", "spec", "parallelism"), default=1)
            name = rj.get("name") if isinstance(rj.get("name"), str) else str(i)
            out.append(
                Part(
                    str(name), (*base, "template", "spec", "template", "spec"), 1 if par is None else par, (reps, reps), (*base, "replicas")
                )
            )
        return out
    if kind == "LeaderWorkerSet":
        return _lws(d)
    if kind in ("RayCluster", "RayService", "RayJob"):
        return _ray(d, kind)
    if kind in REPLICA_SPECS:
        return _replica_specs(d, kind)
    if kind == "TrainJob":
        n = d.count(("spec", "trainer", "numNodes"), default=1)
        sel: KeyPath = (
            ("spec", "podSpecOverrides", 0)
            if d.at(("spec", "podSpecOverrides")) is not None
            else ("spec", "podTemplateOverrides", 0, "spec")
        )
        return [
            Part(
                "trainer",
                sel,
                1 if n is None else n,
                (1, 1),
                ("spec", "trainer", "numNodes"),
                containers=[(("spec", "trainer"), "resourcesPerNode")],
                notes=["TrainJob: chips from trainer.resourcesPerNode x numNodes (the runtime's own defaults are not read)"],
            )
        ]
    if kind == "InferenceService":
        return _kserve(d)
    if kind == "LLMInferenceService":
        return _llmisvc(d)
    if kind == "NIMService":
        return _nim(d)
    if kind == "DynamoGraphDeployment":
        return _dynamo(d)
    if kind == "Model" and api.startswith("kubeai.org/"):
        return _kubeai(d)
    if kind == "Model":
        return _found_pods(d, kind)
    if kind in KAITO_KINDS and api.startswith("kaito.sh/"):
        return _kaito(d, kind)
    if kind == "Workspace":
        return _found_pods(d, kind)
    return []


# KAITO's kinds (kaito.sh) that name the machine type their nodes are created with
KAITO_KINDS = ("Workspace", "InferenceSet", "RAGEngine", "MultiRoleInference")


def _kaito(d: ManifestDoc, kind: str = "Workspace") -> list[Part]:
    """KAITO (kaito.sh): nodes of an ``instanceType``, a cloud machine type (Standard_NC24ads_A100_v4) whose GPUs
    the job uses. A Workspace: ``resource.count`` nodes (default 1); an InferenceSet: ``spec.replicas`` copies of its
    template's resource, scaled up to ``nodeCountLimit`` nodes; a RAGEngine: ``spec.compute.count`` nodes; a
    MultiRoleInference: each of ``spec.roles`` (prefill, decode) ``replicas`` nodes. Without an instance type (nodes
    the team brings, preferredNodes) no request is known here."""
    out: list[Part] = []

    def machine(base: KeyPath, count: KeyPath, reps: tuple[int | None, int | None], where: KeyPath | None, name: str,
                note: str) -> None:
        loc: KeyPath = (*base, "instanceType")
        if not isinstance(d.at(loc), str):
            _partition(base, reps, where, name)
            return
        nodes = d.count(count, default=1)
        out.append(Part(name, base, 1 if nodes is None else nodes, reps, where or count, notes=[note],
                        named=(str(d.at(loc)), None, loc, True)))

    def _partition(base: KeyPath, reps: tuple[int | None, int | None], where: KeyPath | None, name: str) -> None:
        # nodes the team brings, shared out by resource.partition (api/v1beta1 PartitionSpec): mode accelerator gives
        # the workload `count` whole GPUs, mode mig one MIG slice of `profile` (counted as one GPU, an upper bound)
        part: KeyPath = (*base, "partition")
        mode = d.at((*part, "mode"))
        if mode == "accelerator":
            n = d.count((*part, "count"), default=1)
            note = f"KAITO partition (mode accelerator): {n} whole GPU(s) of the nodes the team brings"
        elif mode == "mig":
            n = 1
            note = (f"KAITO partition (mode mig): one MIG slice ({str(d.at((*part, 'profile')))[:20]}) of a GPU the team "
                    "brings, counted as one GPU (an upper bound)")
        else:
            return
        out.append(Part(name, base, 1, reps, where or (*part, "count"), notes=[note],
                        named=("nvidia.com/gpu", n, (*part, "mode"), False)))

    if kind == "Workspace":
        machine(("resource",), ("resource", "count"), (1, 1), None, "",
                "KAITO Workspace: resource.count nodes of resource.instanceType, each with the GPUs of that machine type")
    elif kind == "InferenceSet":
        n = d.count(("spec", "replicas"), default=1)
        n = 1 if n is None else n
        per = d.count(("spec", "template", "resource", "count"), default=1) or 1
        limit = d.count(("spec", "nodeCountLimit"), default=None)
        top = max(n, limit // per) if limit else n
        machine(("spec", "template", "resource"), ("spec", "template", "resource", "count"), (n, top), ("spec", "replicas"), "",
                "KAITO InferenceSet: spec.replicas copies (up to nodeCountLimit nodes) of the template's resource.instanceType")
    elif kind == "RAGEngine":
        machine(("spec", "compute"), ("spec", "compute", "count"), (1, 1), None, "",
                "KAITO RAGEngine: spec.compute.count nodes of spec.compute.instanceType")
    elif kind == "MultiRoleInference":
        roles = d.at(("spec", "roles"))
        for i, role in enumerate(roles[:64] if isinstance(roles, list) else []):
            if not isinstance(role, dict):
                continue
            r = d.count(("spec", "roles", i, "replicas"), default=1)
            r = 1 if r is None else r
            machine(("spec", "roles", i), ("spec", "roles", i, "nodeCount"), (r, r), ("spec", "roles", i, "replicas"),
                    str(role.get("type") or i), "KAITO MultiRoleInference: each role's replicas of its instanceType")
    return out


def _dynamo(d: ManifestDoc) -> list[Part]:
    """NVIDIA Dynamo DynamoGraphDeployment (nvidia.com): each of ``services`` runs ``replicas`` copies of
    ``resources`` (limits / requests ``gpu``, per node) on ``multinode.nodeCount`` nodes; its
    ``extraPodSpec`` gives the node selectors."""
    out: list[Part] = []
    for svc in d.mapping(("spec", "services")):
        base: KeyPath = ("spec", "services", svc)
        d.mapping(base)
        n = d.count((*base, "replicas"), default=1)
        nodes = d.count((*base, "multinode", "nodeCount"), default=1)
        pod: KeyPath = (*base, "extraPodSpec") if d.at((*base, "extraPodSpec")) is not None else base
        notes = ["DynamoGraphDeployment: chips from services.<name>.resources gpu per node x multinode.nodeCount"]
        out.append(Part(str(svc), pod, 1 if nodes is None else nodes, (n, n), (*base, "replicas"),
                        containers=[(base, "resources")], notes=notes))
    return out


_UNITS = re.compile(r"[0-9]{1,6}")
_KUBEAI_PROFILE = re.compile(r"(?:nvidia|amd)-gpu-(?P<gpu>[a-z0-9-]+)|google-tpu-(?P<tpu>v[0-9a-z]+)-(?P<topo>[0-9]+x[0-9]+)")


def _kubeai(d: ManifestDoc) -> list[Part]:
    """KubeAI Model (kubeai.org): ``resourceProfile: NAME:N`` is N units of a profile of the KubeAI
    chart's resourceProfiles, each one GPU or TPU chip in the chart's profiles (nvidia-gpu-l4, amd-gpu-mi300x,
    google-tpu-v5e-2x2); replicas, or minReplicas..maxReplicas with autoscaling. The accelerator is read from
    the profile's name; a profile of another name (cpu, a custom one) is no request known here."""
    loc: KeyPath = ("spec", "resourceProfile")
    prof = d.at(loc)
    if not isinstance(prof, str):
        return []
    name, _, units = prof.partition(":")
    m = _KUBEAI_PROFILE.fullmatch(name.strip().lower())
    if m is None:
        return []
    # ASCII digits only, bounded (str.isdigit() takes '²', and a 5,000-digit count would not convert): else unresolved
    n = int(units.strip()) if _UNITS.fullmatch(units.strip()) else (None if units.strip() else 1)
    chip = m.group("gpu") or f"tpu-{m.group('tpu')}"
    lo = d.count(("spec", "minReplicas"), default=None)
    hi = d.count(("spec", "maxReplicas"), default=None)
    reps = d.count(("spec", "replicas"), default=None)
    low = reps if reps is not None else (lo if lo is not None else 1)
    high = hi if hi is not None else max(low, 1)
    notes = [f"KubeAI Model: resourceProfile {prof[:40]!r} read as {n} x {chip} per pod (one chip per profile unit, as "
             "the KubeAI chart's profiles define them)"]
    if hi is None:
        # KubeAI's maxReplicas: "Empty value means no limit" (api/k8s/v1/model_types.go), its autoscaler scales on load
        # without a top: how many replicas may run is not known (judged at least at one, never bounded there)
        where: KeyPath = ("spec",)
        d.placeholders.append((("spec", "maxReplicas"), "count-unknown",
                               "spec.maxReplicas is not set: KubeAI's autoscaler then adds replicas without limit ('Empty value "
                               "means no limit')", d.doc.where(where)))
    return [Part("", ("spec",), 1, (low, max(low, high)), ("spec", "maxReplicas") if hi is not None else ("spec", "replicas"),
                 notes=notes, named=(chip, n, loc, False))]


def _vllm_runtime(d: ManifestDoc) -> list[Part]:
    """vLLM production-stack's VLLMRuntime (production-stack.vllm.ai): its operator runs a Deployment of
    ``deploymentConfig.replicas`` pods (default 1), each asking for ``deploymentConfig.resources.gpu`` of ``gpuType``
    (default nvidia.com/gpu; operator/internal/controller/vllmruntime_controller.go), on the nodes its
    ``nodeSelectorTerms`` select; with ``autoscalingConfig.enabled`` KEDA scales it between minReplicas (default 1) and
    maxReplicas. The accelerator is the selector's value where one names it, else unknown."""
    base: KeyPath = ("spec", "deploymentConfig")
    loc: KeyPath = (*base, "resources", "gpu")
    raw = d.at(loc)
    if raw is None:
        return []
    n = d.count(loc)  # a whole number in range, else an input error; a placeholder is unresolved (None)
    if n == 0:
        return []
    gpu_type = d.at((*base, "resources", "gpuType"))
    chip = gpu_type if isinstance(gpu_type, str) and gpu_type.strip() else "nvidia.com/gpu"
    for i, term in enumerate(d.seq((*base, "nodeSelectorTerms"))):
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        for j, expr in enumerate(exprs[:64] if isinstance(exprs, list) else []):
            if (isinstance(expr, dict) and expr.get("key") in VLLM_RUNTIME_LABELS and expr.get("operator") == "In"
                    and isinstance(expr.get("values"), list) and expr["values"] and isinstance(expr["values"][0], str)):
                chip = expr["values"][0]
                loc = (*base, "nodeSelectorTerms", i, "matchExpressions", j, "values", 0)
                break
        else:
            continue
        break
    reps = d.count((*base, "replicas"), default=1)
    low = high = 1 if reps is None else reps
    where: KeyPath = (*base, "replicas")
    notes = [f"VLLMRuntime: {raw} x {chip} per pod of the operator's Deployment"]
    if d.at(("spec", "autoscalingConfig", "enabled")) is True:
        lo = d.count(("spec", "autoscalingConfig", "minReplicas"), default=1)
        hi = d.count(("spec", "autoscalingConfig", "maxReplicas"), default=None)
        low = 1 if lo is None else lo
        high = hi if hi is not None else max(low, high)
        where = ("spec", "autoscalingConfig", "maxReplicas")
        notes.append(f"KEDA autoscaling: {low}..{high} replicas")
    return [Part("", base, 1, (low, max(low, high)), where, notes=notes, named=(chip, n, loc, False))]


# node labels a VLLMRuntime's nodeSelectorTerms name its accelerator with
VLLM_RUNTIME_LABELS = ("cloud.google.com/gke-accelerator", "nvidia.com/gpu.product", "karpenter.k8s.aws/instance-gpu-name",
                       "node.kubernetes.io/instance-type")


def _volcano(d: ManifestDoc) -> list[Part]:
    """Volcano Job (batch.volcano.sh): each task runs ``replicas`` pods of its template, gang-scheduled together."""
    out: list[Part] = []
    for i, task in enumerate(d.seq(("spec", "tasks"))):
        base: KeyPath = ("spec", "tasks", i)
        if not isinstance(task, dict):
            raise d.fail(base, "expected a mapping")
        n = d.count((*base, "replicas"), default=1)
        name = task.get("name") if isinstance(task.get("name"), str) else str(i)
        out.append(Part(str(name), (*base, "template", "spec"), 1 if n is None else n, (1, 1), (*base, "replicas")))
    return out


def _argo(d: ManifestDoc, kind: str) -> list[Part]:
    """Argo Workflows: each template with a ``container``, ``script`` or ``containerSet`` is a pod, its
    nodeSelector / affinity on the template. A step or DAG task runs it once, or fanned out over withItems / withSequence
    (that many pods at once, up to the workflow's parallelism); withParam's width is known at run time: request-unresolved."""
    spec: KeyPath = ("spec", "workflowSpec") if kind == "CronWorkflow" else ("spec",)
    out: list[Part] = []
    fanout = _argo_fanout(d, spec)
    for i, t in enumerate(d.seq((*spec, "templates"))):
        base: KeyPath = (*spec, "templates", i)
        if not isinstance(t, dict):
            raise d.fail(base, "expected a mapping")
        blocks: list[tuple[KeyPath, str]] = [((*base, key), "resources") for key in ("container", "script") if isinstance(t.get(key), dict)]
        if isinstance(t.get("containerSet"), dict):
            members = d.seq((*base, "containerSet", "containers"))
            blocks += [((*base, "containerSet", "containers", j), "resources") for j, _ in enumerate(members)]
        if not blocks:
            continue
        name = t.get("name") if isinstance(t.get("name"), str) else str(i)
        width, where = fanout.get(str(name), (1, None))
        if width is None:
            note = "an Argo template run over withParam (or a sequence whose size is not written): how many pods at once is not read"
            out.append(Part(str(name), base, 1, (None, None), where, containers=blocks, notes=[note]))
        else:
            note = (f"an Argo template fanned out to {width} pods at once (withItems / withSequence)" if width > 1 else
                    "an Argo template: one pod each time a step runs it")
            out.append(Part(str(name), base, 1, (width, width), where, containers=blocks, notes=[note]))
    return out


def _whole(v: object) -> int | None:
    """An Argo sequence bound: a whole number, or one written as a string (Argo's fields are strings)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return ascii_int(v) if isinstance(v, str) else None


def _argo_fanout(d: ManifestDoc, spec: KeyPath) -> dict[str, tuple[int | None, KeyPath | None]]:
    """Per template name, the most pods one step or DAG task runs of it at once: withItems' length, withSequence's count
    (or end - start + 1), None for withParam (known at run time), bounded by the workflow's ``parallelism``."""
    cap = d.at((*spec, "parallelism"))
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None
    refs: list[tuple[dict[str, Any], KeyPath]] = []
    for i, t in enumerate(d.seq((*spec, "templates"))):
        if not isinstance(t, dict):
            continue
        steps = t.get("steps")
        for j, group in enumerate(steps if isinstance(steps, list) else []):
            for k, step in enumerate(group if isinstance(group, list) else [group]):
                if isinstance(step, dict):
                    refs.append((step, (*spec, "templates", i, "steps", j, k)))
        tasks = t.get("dag", {}).get("tasks") if isinstance(t.get("dag"), dict) else None
        for j, task in enumerate(tasks if isinstance(tasks, list) else []):
            if isinstance(task, dict):
                refs.append((task, (*spec, "templates", i, "dag", "tasks", j)))
    out: dict[str, tuple[int | None, KeyPath | None]] = {}
    for ref, loc in refs[:10_000]:
        name = ref.get("template")
        if not isinstance(name, str):
            continue
        width: int | None = 1
        if isinstance(ref.get("withItems"), list):
            width = len(ref["withItems"])
        elif isinstance(ref.get("withSequence"), dict):
            seq = ref["withSequence"]
            count, start, end = _whole(seq.get("count")), _whole(seq.get("start", 0)), _whole(seq.get("end"))
            width = count if count is not None else (end - start + 1 if end is not None and start is not None else None)
        elif "withParam" in ref:
            width = None
        if width is not None and cap is not None:
            width = min(width, cap)
        old = out.get(name, (1, None))[0]
        if old is None or width is None:
            out[name] = (None, loc)
        elif width >= old:
            out[name] = (width, loc if width > 1 else None)
    return out


def _pod_asks(pod: object) -> bool:
    """A pod spec one of whose containers asks for a chip resource."""
    cs = pod.get("containers") if isinstance(pod, dict) else None
    return isinstance(cs, list) and any(isinstance(c, dict) and _chip_resources(c) for c in cs[:1000])


def _chip_resources(node: dict[object, object]) -> bool:
    """A container-like mapping: ``resources`` whose limits or requests name a chip resource."""
    res = node.get("resources")
    if not isinstance(res, dict):
        return False
    return _chip_limits(res)


def _chip_limits(node: dict[object, object]) -> bool:
    """A mapping whose own ``limits`` or ``requests`` name a chip resource (a resources block, or a custom resource's
    flavor that carries them directly: llmaz OpenModel ``inferenceConfig.flavors[].limits``)."""
    for section in ("limits", "requests"):
        block = node.get(section)
        if isinstance(block, dict) and any(k in CHIP_RESOURCES for k in block):
            return True
    return False


def _found_pods(d: ManifestDoc, kind: str) -> list[Part]:
    """Pod specs (mappings with a ``containers`` list) anywhere in a kind advisor does not read, container-like
    mappings outside them whose ``resources`` name a chip resource (a serving runtime's runner: sgl-project/ome's
    ClusterServingRuntime ``engineConfig.runner``), and mappings whose own ``limits`` / ``requests`` do (InftyAI/llmaz's
    OpenModel ``inferenceConfig.flavors[]``, which the controller puts on every serving pod), each counted once and marked
    unread: an accelerator request there is reported (its replicas unknown), never passed over."""
    found: list[tuple[KeyPath, str]] = []  # (where, "pod", "container" (a lone one) or "limits" (a flavor's own))
    # walked, and found asking for chips: the bound counts these only (64 CPU-only pods first hid a 65th, review 29)
    visited, asking = [0], [0]

    def walk(node: object, loc: KeyPath, depth: int) -> None:
        visited[0] += 1
        if depth > 16 or visited[0] > MAX_FOUND_NODES or asking[0] >= MAX_FOUND_PODS:
            return
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list) and any(isinstance(c, dict) for c in node["containers"]):
                found.append((loc, "pod"))
                asking[0] += _pod_asks(node)
                return
            if _chip_resources(node) and loc[1:]:
                found.append((loc, "container"))
                asking[0] += 1
                return
            if _chip_limits(node) and loc[1:] and "resources" not in node:
                found.append((loc, "limits"))
                asking[0] += 1
                return
            for k, v in node.items():
                if isinstance(k, str | int):
                    walk(v, (*loc, k), depth + 1)
        elif isinstance(node, list):
            for i, v in enumerate(node[:1000]):
                walk(v, (*loc, i), depth + 1)

    for top in ("spec", "template"):  # a v1 PodTemplate keeps its pod under a top-level template (GKE queued provisioning)
        walk(d.doc.data.get(top), (top,), 0)
    out = []
    for loc, what in found:
        name = ".".join(str(p) for p in loc[1:]) or "spec"
        if what == "container":  # the mapping around the container gives the selectors (a runtime's engineConfig)
            out.append(Part(name, loc[:-1], 1, (1, 1), None, containers=[(loc, "resources")], unread=kind))
        elif what == "limits":  # a flavor: its own nodeSelector, where it has one, beside its limits
            out.append(Part(name, loc, 1, (1, 1), None, containers=[(loc, "")], unread=kind))
        else:
            out.append(Part(name, loc, 1, (1, 1), None, unread=kind))
    return out


def _spark(d: ManifestDoc, kind: str) -> list[Part]:
    """A Spark Operator application (kubeflow/spark-operator api/v1beta2; a ScheduledSparkApplication's under
    spec.template): its driver, one pod, and its executors, ``executor.instances`` pods, each asking for
    ``gpu: {name, quantity}`` chips (GPUSpec) on the nodes its own nodeSelector / affinity select, or, without one, the
    ``spark.{driver,executor}.resource.gpu.amount`` of ``sparkConf`` (vendor ``...resource.gpu.vendor``, else
    nvidia.com/gpu); a pod ``template`` of its own is read as a pod spec too. The executors are the larger of
    ``executor.instances`` and ``spark.executor.instances``; with dynamic allocation (``dynamicAllocation.enabled`` or
    ``spark.dynamicAllocation.enabled``) they scale min..max executors, and without a maximum without an upper bound
    (Spark's spark.dynamicAllocation.maxExecutors: infinity), so the count is not read (fails closed under a limit)."""
    root: KeyPath = ("spec", "template") if kind == "ScheduledSparkApplication" else ("spec",)
    d.mapping(root)
    conf: KeyPath = (*root, "sparkConf")
    settings = d.mapping(conf)

    def conf_count(key: str) -> int | None:
        return d.count((*conf, key), default=None) if key in settings else None

    def asks(role: str) -> list[tuple[KeyPath, str]]:
        if d.at((*root, role, "gpu")) is not None or f"spark.{role}.resource.gpu.amount" not in settings:
            return [((*root, role), SPARK_GPU)]
        return [(conf, f"spark.{role}.resource.gpu.amount")]

    def with_template(part: Part, role: str) -> list[Part]:
        pod: KeyPath = (*root, role, "template", "spec")
        tpl = d.at(pod)
        if not isinstance(tpl, dict) or not isinstance(tpl.get("containers"), list):
            return [part]
        return [part, Part(f"{role}-template", pod, part.pods, part.reps, part.where, notes=list(part.notes))]

    out = with_template(Part("driver", (*root, "driver"), 1, (1, 1), containers=asks("driver")), "driver")
    n = max(d.count((*root, "executor", "instances"), default=1) or 1, conf_count("spark.executor.instances") or 0)
    dyn: KeyPath = (*root, "dynamicAllocation")
    if d.at((*dyn, "enabled")) is True or str(settings.get("spark.dynamicAllocation.enabled", "")).lower() == "true":
        lo = d.count((*dyn, "minExecutors"), default=0) or conf_count("spark.dynamicAllocation.minExecutors") or 0
        highs = [h for h in (d.count((*dyn, "maxExecutors"), default=None), conf_count("spark.dynamicAllocation.maxExecutors"))
                 if h is not None]
        hi = max(highs) if highs else None
        notes = [f"dynamic allocation: {lo}..{hi if hi is not None else 'unbounded'} executors (minExecutors..maxExecutors)"]
        reps: tuple[int | None, int | None] = (lo, max(hi, n) if hi is not None else None)
        executor = Part("executor", (*root, "executor"), 1, reps, (*dyn, "maxExecutors") if hi is not None else None,
                        containers=asks("executor"), notes=notes)
    else:
        executor = Part("executor", (*root, "executor"), 1, (n, n), (*root, "executor", "instances"), containers=asks("executor"))
    return out + with_template(executor, "executor")


# the container key of a Spark pod's accelerator request: gpu: {name: nvidia.com/gpu, quantity: N} (k8s_pod reads it)
SPARK_GPU = "gpu"


def _lws(d: ManifestDoc) -> list[Part]:
    """LeaderWorkerSet: ``size`` pods per group, the leader one of them. With a leaderTemplate the
    leader is its own part (a leader that asks for no chips is not a chip shape) and the workers
    are size - 1; without, every pod of the group is the worker template."""
    reps = d.count(("spec", "replicas"), default=1)
    size = d.count(("spec", "leaderWorkerTemplate", "size"), default=1)
    size = 1 if size is None else size
    base: KeyPath = ("spec", "leaderWorkerTemplate")
    worker: KeyPath = (*base, "workerTemplate", "spec")
    # subgroups (LWS KEP 115): size divisible by subGroupSize, or size - 1 with the leader as the extra pod; a leader
    # that asks for no chips leaves the workers in subgroups of subGroupSize
    sub = d.count((*base, "subGroupPolicy", "subGroupSize"), default=0) or 0
    if d.at((*base, "leaderTemplate")) is not None:
        workers_sub = sub if sub > 1 and (size - 1) % sub == 0 else 0
        return [Part("leader", (*base, "leaderTemplate", "spec"), 1, (reps, reps), ("spec", "replicas"), group="lws", role="leader"),
                Part("workers", worker, size - 1, (reps, reps), ("spec", "replicas"), group="lws", role="workers",
                     subgroup=workers_sub)]
    return [Part("", worker, size, (reps, reps), ("spec", "replicas"), subgroup=sub if sub > 1 and size % sub == 0 else 0)]


_MAX_INT32 = 2**31 - 1


def _ray(d: ManifestDoc, kind: str) -> list[Part]:
    """KubeRay: worker groups run ``replicas`` x ``numOfHosts`` pods; minReplicas / maxReplicas
    apply only when the cluster enables in-tree autoscaling (otherwise KubeRay keeps ``replicas``)."""
    roots: dict[str, KeyPath] = {"RayCluster": ("spec",), "RayService": ("spec", "rayClusterConfig"), "RayJob": ("spec", "rayClusterSpec")}
    root = roots[kind]
    auto = d.at((*root, "enableInTreeAutoscaling")) is True
    out = [Part("head", (*root, "headGroupSpec", "template", "spec"), 1, (1, 1))]
    for i, g in enumerate(d.seq((*root, "workerGroupSpecs"))):
        wbase: KeyPath = (*root, "workerGroupSpecs", i)
        if not isinstance(g, dict):
            raise d.fail(wbase, "expected a mapping")
        if g.get("suspend") is True:
            continue
        reps = d.count((*wbase, "replicas"), default=None)
        lo = d.count((*wbase, "minReplicas"), default=0)
        # minReplicas / maxReplicas count only under in-tree autoscaling; maxReplicas' default is maxInt32 (KubeRay
        # raycluster_types.go: no upper bound), which under autoscaling leaves the group's size unresolved
        top = d.at((*wbase, "maxReplicas"))
        unbounded = isinstance(top, int) and not isinstance(top, bool) and top == _MAX_INT32
        hi = d.count((*wbase, "maxReplicas"), default=None) if auto and not unbounded else None
        if auto and unbounded:
            loc = (*wbase, "maxReplicas")
            what = f"{_MAX_INT32} (KubeRay's default: no upper bound)"
            d.placeholders.append((loc, ".".join(str(p) for p in loc), what, d.doc.where(loc)))
        notes = []
        if auto:
            lo = 0 if lo is None else lo
            hi = hi if hi is not None else max(lo, reps or 0)
            notes.append(f"in-tree autoscaling: {lo}..{hi} replicas (minReplicas..maxReplicas)")
        else:
            n = reps if reps is not None else (lo or 0)
            lo = hi = n
        hosts = d.count((*wbase, "numOfHosts"), default=1)
        name = g.get("groupName") if isinstance(g.get("groupName"), str) else str(i)
        out.append(
            Part(
                str(name),
                (*wbase, "template", "spec"),
                1 if hosts is None else hosts,
                (lo, hi),
                (*wbase, "maxReplicas" if auto and "maxReplicas" in g else "replicas"),
                notes=notes,
            )
        )
    return out


def _replica_specs(d: ManifestDoc, kind: str) -> list[Part]:
    """Kubeflow training jobs: one part per replica type (Master, Worker, Launcher, Chief, PS...);
    a PyTorchJob's elasticPolicy min/max replaces the workers' count."""
    key = REPLICA_SPECS[kind]
    specs = d.mapping(("spec", key))
    out = []
    elastic = d.mapping(("spec", "elasticPolicy"))
    for role in specs:
        base: KeyPath = ("spec", key, role)
        d.mapping(base)
        n = d.count((*base, "replicas"), default=1)
        reps: tuple[int | None, int | None] = (1, 1)
        pods = 1 if n is None else n
        notes = []
        if kind == "PyTorchJob" and str(role).lower() == "worker" and elastic:
            lo = d.count(("spec", "elasticPolicy", "minReplicas"), default=pods)
            hi = d.count(("spec", "elasticPolicy", "maxReplicas"), default=pods)
            pods, reps = 1, (lo, hi)
            notes.append("elasticPolicy: workers minReplicas..maxReplicas")
        out.append(Part(str(role), (*base, "template", "spec"), pods, reps, (*base, "replicas"), notes=notes))
    return out


# KServe deployment modes that run a component as a Deployment with an HPA (maxReplicas unset: minReplicas), not a
# Knative Service (maxReplicas unset or 0: no max-scale, unbounded); RawDeployment was renamed Standard
KSERVE_RAW_MODES = ("RawDeployment", "Standard")


def _kserve(d: ManifestDoc) -> list[Part]:
    """KServe InferenceService: each component (predictor, transformer, explainer) is a pod spec
    with its model / framework container; minReplicas (default 1; 0 scales to zero) ..
    maxReplicas. A predictor's workerSpec adds pipelineParallelSize - 1 worker pods."""
    out = []
    notes = d.at(("metadata", "annotations"))
    mode = notes.get("serving.kserve.io/deploymentMode") if isinstance(notes, dict) else None
    raw = isinstance(mode, str) and mode in KSERVE_RAW_MODES
    for comp in ("predictor", "transformer", "explainer"):
        base: KeyPath = ("spec", comp)
        block = d.mapping(base)
        if not block:
            continue
        lo = d.count((*base, "minReplicas"), default=1)
        hi = d.count((*base, "maxReplicas"), default=None)
        lo = 1 if lo is None else lo
        unset = not hi and not isinstance(block.get("maxReplicas"), str)  # absent, null or 0 (a placeholder is said apart)
        if unset and not raw:  # Serverless (Knative), the mode unless the file says otherwise: no max-scale, no upper bound
            d.placeholders.append(((*base, "maxReplicas"), "count-unknown",
                                   f"spec.{comp}.maxReplicas is not set (0): in KServe's Serverless mode, which the file "
                                   "does not rule out (serving.kserve.io/deploymentMode), Knative then scales it without "
                                   "an upper bound", d.doc.where(base)))
        hi = hi if hi else max(lo, 1)
        containers: list[tuple[KeyPath, str]] = [((*base, f), "resources") for f in KSERVE_FRAMEWORKS if isinstance(block.get(f), dict)]
        containers += [((*base, "containers", i), "resources") for i, _ in enumerate(d.seq((*base, "containers")))]
        where = (*base, "maxReplicas") if "maxReplicas" in block else (*base, "minReplicas") if "minReplicas" in block else None
        out.append(
            Part(
                comp,
                base,
                1,
                (lo, hi),
                where,
                containers=containers,
                group=comp if d.at((*base, "workerSpec")) is not None else "",
                role="leader",
            )
        )
        worker = d.mapping((*base, "workerSpec"))
        if worker:
            pp = d.count((*base, "workerSpec", "pipelineParallelSize"), default=2)
            wc = [((*base, "workerSpec", "containers", i), "resources") for i, _ in enumerate(d.seq((*base, "workerSpec", "containers")))]
            out.append(
                Part(
                    f"{comp}-workers",
                    (*base, "workerSpec"),
                    max(0, (pp or 1) - 1),
                    (lo, hi),
                    where,
                    containers=wc,
                    group=comp,
                    role="workers",
                )
            )
    return out


def _llmisvc(d: ManifestDoc) -> list[Part]:
    """KServe LLMInferenceService: ``template`` (decode) pods x ``replicas``; with ``worker`` a
    LeaderWorkerSet of data / dataLocal pods per replica (the template the leader, the worker
    template the rest); ``prefill`` the same again with its own replicas."""
    out: list[Part] = []
    for prefix, label in (((), ""), (("prefill",), "prefill")):
        base: KeyPath = ("spec", *prefix)
        if prefix and not d.mapping(base):
            continue
        n = d.count((*base, "replicas"), default=1)
        par = d.mapping((*base, "parallelism")) or d.mapping(("spec", "parallelism"))
        data, local = par.get("data"), par.get("dataLocal")
        size = data // local if isinstance(data, int) and isinstance(local, int) and local > 0 and data >= local else 1
        has_template = d.at((*base, "template")) is not None
        if has_template:
            out.append(Part(label, (*base, "template"), 1, (n, n), (*base, "replicas"), group=label or "decode", role="leader"))
        if d.at((*base, "worker")) is not None:
            workers = size - 1 if has_template else size
            out.append(
                Part(
                    f"{label}-workers" if label else "workers",
                    (*base, "worker"),
                    workers,
                    (n, n),
                    (*base, "replicas"),
                    group=label or "decode",
                    role="workers",
                )
            )
    return out


def _nim(d: ManifestDoc) -> list[Part]:
    """NVIDIA NIMService: spec.resources per pod x spec.replicas (spec.scale.hpa min..max when
    scale.enabled); multiNode runs parallelism.pipeline pods per replica."""
    n = d.count(("spec", "replicas"), default=1)
    reps: tuple[int | None, int | None] = (n, n)
    where: KeyPath = ("spec", "replicas")
    if d.at(("spec", "scale", "enabled")) is True:
        lo = d.count(("spec", "scale", "hpa", "minReplicas"), default=1)
        hi = d.count(("spec", "scale", "hpa", "maxReplicas"), default=lo)
        reps, where = (lo, hi), ("spec", "scale", "hpa", "maxReplicas")
    pods = 1
    multi = d.mapping(("spec", "multiNode"))
    if multi:
        pp = d.count(("spec", "multiNode", "parallelism", "pipeline"), default=None)
        size = d.count(("spec", "multiNode", "size"), default=None)
        pods = pp or size or 1
    return [Part("", ("spec",), pods, reps, where, containers=[(("spec",), "resources")])]
