"""The pod templates of each Kubernetes workload kind, each a :class:`Part`: where its pod spec
is, pods per replica and replicas (min, max). Pod, Deployment, StatefulSet, ReplicaSet, Job,
CronJob, JobSet, LeaderWorkerSet, RayCluster / RayService / RayJob, the Kubeflow training jobs and
TrainJob, KServe InferenceService and LLMInferenceService, NVIDIA NIMService; the leader and the
workers of one group are marked as such, for the reader to count them as one slice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.check.infra.k8s_pod import ManifestDoc
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


REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
                 "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "MXJob": "mxReplicaSpecs"}
KSERVE_FRAMEWORKS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle")
# The kinds that run to completion: the others are always on.
JOB_KINDS = {"Job", "CronJob", "JobSet", "RayJob"} | set(REPLICA_SPECS) | {"TrainJob"}


def pod_templates(d: ManifestDoc, kind: str) -> list[Part]:
    """The pod templates of one workload, each with its pods per replica and replicas (min, max)."""
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
    return []


def _lws(d: ManifestDoc) -> list[Part]:
    """LeaderWorkerSet: ``size`` pods per group, the leader one of them. With a leaderTemplate the
    leader is its own part (a leader that asks for no chips is not a chip shape) and the workers
    are size - 1; without, every pod of the group is the worker template."""
    reps = d.count(("spec", "replicas"), default=1)
    size = d.count(("spec", "leaderWorkerTemplate", "size"), default=1)
    size = 1 if size is None else size
    base: KeyPath = ("spec", "leaderWorkerTemplate")
    worker: KeyPath = (*base, "workerTemplate", "spec")
    if d.at((*base, "leaderTemplate")) is not None:
        return [Part("leader", (*base, "leaderTemplate", "spec"), 1, (reps, reps), ("spec", "replicas"), group="lws", role="leader"),
                Part("workers", worker, size - 1, (reps, reps), ("spec", "replicas"), group="lws", role="workers")]
    return [Part("", worker, size, (reps, reps), ("spec", "replicas"))]


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
        hi = d.count((*wbase, "maxReplicas"), default=None)
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


def _kserve(d: ManifestDoc) -> list[Part]:
    """KServe InferenceService: each component (predictor, transformer, explainer) is a pod spec
    with its model / framework container; minReplicas (default 1; 0 scales to zero) ..
    maxReplicas. A predictor's workerSpec adds pipelineParallelSize - 1 worker pods."""
    out = []
    for comp in ("predictor", "transformer", "explainer"):
        base: KeyPath = ("spec", comp)
        block = d.mapping(base)
        if not block:
            continue
        lo = d.count((*base, "minReplicas"), default=1)
        hi = d.count((*base, "maxReplicas"), default=None)
        lo = 1 if lo is None else lo
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
