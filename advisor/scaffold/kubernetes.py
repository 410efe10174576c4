"""``k8s/``: the vLLM Deployment, Service and, with more than one replica, an HPA and PodMonitoring.

The Deployment carries the node selectors and TPU/GPU resources of the
configuration, tensor-parallel size = chips per replica, and the replicas of the
estimate; the HPA scales on vLLM's running-request count.
"""

from __future__ import annotations

import functools
import math
import textwrap
from typing import Any

from advisor.families import family
from advisor.knowledge import PLACEHOLDER, bundled_data
from advisor.scaffold.plan import Plan
from advisor.scaffold.spec import Spec, dump, yaml_header
from advisor.scaffold.stacks import servers

VLLM_PORT = 8000


def server_argv(spec: Spec, model: str, tp: int | str, pp: int | str) -> list[str]:
    """The plan's server command: its model, parallelism, max model length, max sequences and precision."""
    plan = spec.plan
    return servers()[plan.server].argv(
        spec.device, model, tp, pp, plan.context_len, VLLM_PORT, plan.server_seqs, plan.server_precision, plan.attention_data,
        plan.prefill_budget,
    )


def _container(spec: Spec) -> dict[str, Any]:
    plan = spec.plan
    server = servers()[plan.server]
    setup = family(spec.device).setup
    vendor = spec.acc.vendor if spec.acc is not None else None
    resource = setup.resource(vendor) or "cpu"  # amd.com/gpu for an AMD Instinct (ROCm's device plugin)
    image = (setup.vendor(vendor).get("images") or {}).get(server.id) or server.image[spec.device]
    argv = server_argv(spec, plan.model_id, plan.tensor, plan.pipeline)
    container: dict[str, Any] = {
        "name": "vllm" if server.id == "vllm" else server.id,
        "image": image,
        "command": ["sh", "-c", server.shell(spec.device, argv)] if spec.device in server.prepare else argv,
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-secret", "key": "hf_api_token"}}}],
        "ports": [{"name": "http", "containerPort": VLLM_PORT}],
        "startupProbe": {"httpGet": {"path": server.health, "port": VLLM_PORT}, "periodSeconds": 10, "failureThreshold": 180},
        "readinessProbe": {"httpGet": {"path": server.health, "port": VLLM_PORT}, "periodSeconds": 10},
        "resources": {"requests": {resource: str(plan.chips_per_host)}, "limits": {resource: str(plan.chips_per_host)}},
    }
    return container


@functools.cache
def _targets(device: str) -> dict[str, dict[str, Any]]:
    """rules/kubernetes-targets.yaml: the family's node selection per cloud (none: no section)."""
    data: dict[str, dict[str, Any]] = bundled_data("kubernetes-targets.yaml").get(device) or {}
    return data


def target_cloud(spec: Spec) -> str:
    """The cluster's cloud: the configuration's when the setup path runs there, the path's only cloud
    (GKE paths), else a cluster of the team's own (no cloud labels)."""
    clouds = list(spec.path.clouds or [])
    if not clouds or spec.plan.cloud in clouds:
        return spec.plan.cloud
    return clouds[0] if len(clouds) == 1 else "on-prem"


def node_selection(spec: Spec) -> dict[str, Any]:
    """nodeSelector, tolerations and the /dev/shm mount of a pod of the configuration's family on
    the cluster's cloud (filled from the plan)."""
    rows = _targets(spec.device)
    row = rows.get(target_cloud(spec)) or rows.get("on-prem") or next(iter(rows.values()), {})

    def fill(text: str) -> str:
        return PLACEHOLDER.sub(lambda m: str(spec.values.get(m.group(1), m.group(0))), text)

    return {
        "nodeSelector": {k: fill(v) for k, v in (row.get("nodeSelector") or {}).items()},
        "tolerations": [dict(t) for t in row.get("tolerations") or []],
        "shm": bool(row.get("shm")),
        # what removes the nodes once the replicas are scaled to 0 outside the priced hours
        "empties": fill(str(row.get("empties") or "the nodes stay up: scale them down yourself")),
    }


def _pod(spec: Spec, container: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    sel = node_selection(spec)
    if sel["nodeSelector"]:
        pod["nodeSelector"] = sel["nodeSelector"]
    if sel["tolerations"]:
        pod["tolerations"] = sel["tolerations"]
    if sel["shm"]:
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    pod["containers"] = [container]
    return pod


def _leader_worker_set(spec: Spec, labels: dict[str, str]) -> dict[str, Any]:
    """One replica over ``hosts`` pods, one LeaderWorkerSet group, in the server's documented form
    (serving-stacks.yaml multi_host): vLLM on GPUs (tensor parallelism inside a host, pipeline
    stages across hosts, workers headless), SGLang-JAX on a TPU slice (one tensor-parallel mesh
    over its hosts, every rank the same command)."""
    plan = spec.plan
    server = servers()[plan.server]
    flags, worker = server.host_flags(spec.device, plan.attention_data, plan.chips_per_host)
    argv = server_argv(spec, plan.model_id, plan.tensor, plan.pipeline)
    base = server.shell(spec.device, argv, flags)
    lead = _container(spec)
    lead["command"] = ["sh", "-c", base]
    work = _container(spec)
    work["command"] = ["sh", "-c", " ".join([base, *worker])]
    for c in (work,):
        c.pop("ports"), c.pop("startupProbe"), c.pop("readinessProbe")
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {
            "replicas": plan.replicas,
            "leaderWorkerTemplate": {
                "size": plan.hosts,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {**labels, "role": "leader"}}, "spec": _pod(spec, lead)},
                "workerTemplate": {"metadata": {"labels": labels}, "spec": _pod(spec, work)},
            },
        },
    }


def manifests(spec: Spec) -> dict[str, str]:
    est, name, plan = spec.est, spec.name, spec.plan
    assert est is not None
    sliced = family(spec.device).sliced
    per_node, tp = plan.chips_per_host, plan.tensor
    server = servers()[plan.server]
    labels = {"app": name}
    multi = plan.hosts > 1
    workload: dict[str, Any]
    if multi:
        workload = _leader_worker_set(spec, labels)
    else:
        workload = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": plan.replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": _pod(spec, _container(spec))},
            },
        }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            # a LeaderWorkerSet's workers serve no HTTP (vLLM --headless, SGLang-JAX ranks > 0): the leader only
            "selector": {**labels, "role": "leader"} if multi else labels,
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": VLLM_PORT, "protocol": "TCP"}],
        },
    }
    chips = "TPU chips" if sliced else "GPUs"
    layout = (
        f"{plan.replicas} replica(s) of {tp}-way tensor parallelism on {per_node} {chips} each; the model"
        if not multi
        else f"{plan.replicas} replica(s), each {plan.hosts} pods (one per host) of {per_node} {chips}: {tp}-way tensor"
    )
    files = {
        f"k8s/{'leaderworkerset' if multi else 'deployment'}.yaml": dump(
            workload,
            [
                *yaml_header(spec, f"{server.title} {workload['kind']}"),
                layout,
                *(
                    [
                        (
                            f"parallelism inside a host x {plan.pipeline}-stage pipeline across hosts; needs the LeaderWorkerSet"
                            if plan.pipeline > 1
                            else "parallelism over all the hosts of the slice (one mesh); needs the LeaderWorkerSet"
                        ),
                        "controller (https://lws.sigs.k8s.io/docs/installation/); the model",
                    ]
                    if multi
                    else []
                ),
                "comes from model.hf_id, the Hugging Face token from the secret hf-secret (setup.sh creates it).",
            ],
        ),
        "k8s/service.yaml": dump(
            service,
            [
                *yaml_header(spec, "Service for the vLLM OpenAI-compatible API"),
                f"kubectl port-forward service/{name} {VLLM_PORT}:{VLLM_PORT}",
            ],
        ),
    }
    if autoscaled(spec):
        assert server.metric is not None
        files.update(_autoscaling(spec, labels, server.metric))
    if plan.scheduled:
        files["k8s/schedule.yaml"] = _schedule(spec, labels, workload["kind"])
    return files


@functools.cache
def _monitoring() -> dict[str, dict[str, str]]:
    """rules/kubernetes-targets.yaml ``monitoring``: the metrics object and HPA metric name per cloud."""
    data: dict[str, dict[str, str]] = bundled_data("kubernetes-targets.yaml")["monitoring"]
    return data


def autoscaled(spec: Spec) -> bool:
    """Whether k8s/ has an HPA and the metrics object it reads: several single-host replicas of a server with a metric,
    free to scale (an offline job's replicas all run through its window: min_replicas == max_replicas)."""
    plan = spec.plan
    return (plan.replicas > 1 and plan.min_replicas < plan.max_replicas and plan.hosts == 1 and bool(plan.server)
            and servers()[plan.server].metric is not None)


def monitoring_for(spec: Spec) -> dict[str, str]:
    """The cluster's way of exporting the server's metric to the HPA (GKE: PodMonitoring; else ServiceMonitor)."""
    table = _monitoring()
    return table.get(target_cloud(spec), table["default"])


def _autoscaling(spec: Spec, labels: dict[str, str], metric: str) -> dict[str, str]:
    """HPA between the plan's autoscaling bounds on the server's running requests per pod, and the
    cluster's object that exports the metric (kubernetes-targets.yaml ``monitoring``)."""
    plan, name = spec.plan, spec.name
    mon = monitoring_for(spec)
    metric_name = mon["metric"].format(metric=metric, metric_name=metric.replace(":", "_"))
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": plan.min_replicas,
            "maxReplicas": plan.max_replicas,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": metric_name},
                        "target": {"type": "AverageValue", "averageValue": str(plan.max_seqs)},
                    },
                }
            ],
        },
    }
    endpoint: dict[str, Any] = {"path": "/metrics", "interval": "15s"}
    if mon["kind"] == "PodMonitoring":
        selector: dict[str, Any] = {"matchLabels": labels}
        endpoint = {"port": VLLM_PORT, **endpoint}
    else:  # a ServiceMonitor selects the Service and names its port
        selector = {"matchLabels": labels}
        endpoint = {"port": "http", **endpoint}
    monitoring = {
        "apiVersion": mon["apiVersion"],
        "kind": mon["kind"],
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": selector, "endpoints": [endpoint]},
    }
    return {
        "k8s/hpa.yaml": dump(
            hpa,
            [
                *yaml_header(spec, "HorizontalPodAutoscaler"),
                f"Scales between {plan.min_replicas} and {plan.max_replicas} replicas (the estimate's count for peak_qps) on",
                f"{metric} per pod, targeting the batch of {plan.max_seqs} the estimate sized each replica for.",
                f"{mon['file']} exports the metric: {mon['note']}",
            ],
        ),
        mon["file"]: dump(
            monitoring,
            [
                *yaml_header(spec, mon["kind"]),
                f"Scrapes the server's /metrics so the HorizontalPodAutoscaler in hpa.yaml can read {metric} ({mon['source']}).",
            ],
        ),
    }


# Service hours of a service priced for part of the day: it starts at this UTC hour (edit the
# CronJobs for another time zone; the cost only depends on the number of hours).
SCHEDULE_START_HOUR_UTC = 8
KUBECTL_IMAGE = "bitnami/kubectl:latest"


def schedule_hours(plan: Plan) -> tuple[int, int]:
    """(start, stop) UTC hours of a service priced for ``plan.hours_per_day`` hours a day."""
    start = SCHEDULE_START_HOUR_UTC
    return start, (start + math.ceil(plan.hours_per_day)) % 24


def _schedule(spec: Spec, labels: dict[str, str], kind: str) -> str:
    """Two CronJobs that scale the server to 0 outside the priced hours and back to the plan's
    replicas (a ServiceAccount allowed to scale it, and nothing else)."""
    plan, name = spec.plan, spec.name
    start, stop = schedule_hours(plan)
    resource = "leaderworkerset" if kind == "LeaderWorkerSet" else "deployment"
    group = "leaderworkerset.x-k8s.io" if kind == "LeaderWorkerSet" else "apps"
    account = f"{name}-scaler"
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "labels": labels}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": account, "labels": labels},
            "rules": [{"apiGroups": [group], "resources": [f"{resource}s", f"{resource}s/scale"],
                       "resourceNames": [name], "verbs": ["get", "patch", "update"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": account, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account}],
        },
    ]
    for verb, hour, replicas in (("stop", stop, 0), ("start", start, plan.min_replicas)):
        docs.append({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": f"{name}-{verb}", "labels": labels},
            "spec": {
                "schedule": f"0 {hour} * * *",
                "timeZone": "Etc/UTC",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"spec": {"template": {"spec": {
                    "serviceAccountName": account,
                    "restartPolicy": "OnFailure",
                    "containers": [{
                        "name": "kubectl",
                        "image": KUBECTL_IMAGE,
                        "command": ["kubectl", "scale", f"{resource}/{name}", f"--replicas={replicas}"],
                    }],
                }}}},
            },
        })
    header = [
        *yaml_header(spec, "Service hours (CronJobs)"),
        *textwrap.wrap(
            f"The estimate prices {plan.hours_per_day:g} h a day: {name} scales to 0 at {stop:02d}:00 UTC and back to "
            f"{plan.min_replicas} replica(s) at {start:02d}:00 UTC"
            f"{' (the HPA takes over from there)' if autoscaled(spec) else ''}; "
            f"{node_selection(spec)['empties']}. Edit the two schedules for your hours.", 100),
    ]
    return "".join(dump(d, header if i == 0 else []) if i == 0 else "---\n" + dump(d, []) for i, d in enumerate(docs))
