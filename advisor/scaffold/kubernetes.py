"""``k8s/``: the vLLM Deployment, Service and, with more than one replica, an HPA and PodMonitoring.

The Deployment carries the node selectors and TPU/GPU resources of the
configuration, tensor-parallel size = chips per replica, and the replicas of the
estimate; the HPA scales on vLLM's running-request count.
"""

from __future__ import annotations

from typing import Any

from advisor.scaffold.spec import Spec, dump, yaml_header

VLLM_PORT = 8000
HPA_METRIC = "prometheus.googleapis.com|vllm:num_requests_running|gauge"


def manifests(spec: Spec) -> dict[str, str]:
    v, est, name = spec.values, spec.est, spec.name
    assert est is not None
    tpu = spec.device == "tpu"
    per_node = int(v.get("chips_per_host") or est.count)
    tp = est.count if tpu else min(est.count, per_node)
    resource = "google.com/tpu" if tpu else "nvidia.com/gpu"
    labels = {"app": name}
    container: dict[str, Any] = {
        "name": "vllm",
        "image": "vllm/vllm-tpu:latest" if tpu else "vllm/vllm-openai:latest",
        "command": [
            "vllm",
            "serve",
            v["model"],
            f"--tensor-parallel-size={tp}",
            f"--max-model-len={v['max_model_len']}",
            f"--port={VLLM_PORT}",
        ],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-secret", "key": "hf_api_token"}}}],
        "ports": [{"name": "http", "containerPort": VLLM_PORT}],
        "startupProbe": {"httpGet": {"path": "/health", "port": VLLM_PORT}, "periodSeconds": 10, "failureThreshold": 180},
        "readinessProbe": {"httpGet": {"path": "/health", "port": VLLM_PORT}, "periodSeconds": 10},
        "resources": {"requests": {resource: str(per_node)}, "limits": {resource: str(per_node)}},
    }
    pod: dict[str, Any] = {}
    if tpu:
        pod["nodeSelector"] = {
            "cloud.google.com/gke-tpu-accelerator": v["gke_accelerator"],
            "cloud.google.com/gke-tpu-topology": v["topology"],
        }
        pod["tolerations"] = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    else:
        pod["nodeSelector"] = {"cloud.google.com/gke-accelerator": v["gke_accelerator"]}
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    pod["containers"] = [container]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": VLLM_PORT, "protocol": "TCP"}],
        },
    }
    chips = "TPU chips" if tpu else "GPUs"
    files = {
        "k8s/deployment.yaml": dump(
            deployment,
            [
                *yaml_header(spec, "vLLM Deployment"),
                f"{spec.replicas} replica(s) of {tp}-way tensor parallelism on {per_node} {chips} each; the model",
                "comes from model.hf_id, the Hugging Face token from the secret hf-secret (setup.sh creates it).",
            ],
        ),
        "k8s/service.yaml": dump(
            service,
            [*yaml_header(spec, "Service for the vLLM OpenAI-compatible API"), f"kubectl port-forward service/{name} {VLLM_PORT}:{VLLM_PORT}"],
        ),
    }
    if spec.replicas > 1:
        batch = est.batch or 1
        hpa = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1,
                "maxReplicas": spec.replicas,
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": HPA_METRIC},
                            "target": {"type": "AverageValue", "averageValue": str(batch)},
                        },
                    }
                ],
            },
        }
        monitoring = {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "endpoints": [{"port": VLLM_PORT, "path": "/metrics", "interval": "15s"}],
            },
        }
        files["k8s/hpa.yaml"] = dump(
            hpa,
            [
                *yaml_header(spec, "HorizontalPodAutoscaler"),
                f"Scales between 1 and {spec.replicas} replicas (the estimate's count for peak_qps) on vLLM's running",
                f"requests per pod, targeting the batch of {batch} the estimate sized each replica for. It reads the",
                "metric through Cloud Monitoring: k8s/podmonitoring.yaml exports it (Managed Service for",
                "Prometheus), and the Custom Metrics Stackdriver Adapter must be installed (see README.md).",
            ],
        )
        files["k8s/podmonitoring.yaml"] = dump(
            monitoring,
            [
                *yaml_header(spec, "PodMonitoring (Google Cloud Managed Service for Prometheus)"),
                "Scrapes vLLM's /metrics so the HorizontalPodAutoscaler in hpa.yaml can read vllm:num_requests_running.",
            ],
        )
    return files
