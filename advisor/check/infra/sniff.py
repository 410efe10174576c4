"""Which kind of document is this? Decided from content, cheaply (no parser imported here).

A YAML document is a workload profile only when it says so: ``task`` and ``model`` (or a
``proposal`` block), or the advisor schema in a ``yaml-language-server`` modeline. Kubernetes
manifests and SkyPilot tasks are recognised by their own keys; everything else a repository
holds (Helm charts, conda environments, Hydra configs, Ansible playbooks, CI workflows,
docker-compose files) is named and skipped with that reason. Fail closed: a document that
carries an accelerator request in a shape advisor reads is never "other".
"""

from __future__ import annotations

import re
from typing import Any

PROFILE_KEYS = {"name", "task", "model", "training", "inference", "proposal", "match", "domain", "software", "goal", "team", "deployment"}
SKY_KEYS = {
    "name", "resources", "run", "setup", "num_nodes", "service", "file_mounts", "workdir", "envs", "secrets", "config",
    "volumes", "event_callback", "pool", "inputs", "outputs", "experimental", "docker", "storage_mounts",
}
ADVISOR_API = ("advisor", "advisor.dev")
TASKS = ("training", "fine-tuning", "inference")
SKY_CORE = {"resources", "run", "setup", "num_nodes", "service", "pool"}
SKY_RESOURCE_KEYS = {"accelerators", "gpus", "instance_type", "any_of", "ordered", "infra", "cloud", "use_spot", "cpus", "memory"}
# dstack configurations (dstackai/dstack core/models/configurations.py, fleets.py): their type and top-level keys
DSTACK_TYPES = {"task", "service", "dev-environment", "fleet"}
DSTACK_CORE = {"resources", "commands", "nodes", "replicas", "groups", "ide", "ssh_config", "placement", "instance_types", "spot_policy"}
_SCHEMA_LINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=\S*profile\.schema\.json", re.M)


def has_profile_modeline(text: str) -> bool:
    """The ``# yaml-language-server: $schema=...profile.schema.json`` line ``advisor init`` writes."""
    return bool(_SCHEMA_LINE.search(text[:4096]))


def _is_sky(data: dict[Any, Any], keys: set[str]) -> bool:
    res = data.get("resources")
    if isinstance(res, dict) and SKY_RESOURCE_KEYS & {k for k in res if isinstance(k, str)}:
        return True  # fail closed: a resources block that names hardware is read, whatever else is there
    if isinstance(res, list) and res and all(isinstance(r, dict) for r in res):
        return True
    return bool(keys & SKY_CORE) and keys <= SKY_KEYS and len(keys) == len(data)


def doc_kind(data: Any, *, modeline: bool = False) -> str:
    """``profile`` | ``kubernetes`` | ``skypilot`` | ``dstack`` | ``ray`` | ``blueprint`` | ``cloudformation`` | ``other: REASON`` (skipped,
    with the reason)."""
    if isinstance(data, list):
        return "other: " + _list_reason(data)
    if not isinstance(data, dict):
        return "profile" if modeline else "other: a YAML scalar, not a mapping"
    keys = {k for k in data if isinstance(k, str)}
    api = data.get("apiVersion")
    if isinstance(api, str) and api.split("/")[0] in ADVISOR_API:
        return "profile"  # apiVersion: advisor.dev/v1 (the profile says what it is)
    schema = data.get("$schema")
    if isinstance(schema, str) and "profile.schema.json" in schema:
        return "profile"
    if _is_kustomization(data, api):
        return "other: a kustomization (built as one unit when it patches, scales, renames or combines its resources)"
    if isinstance(api, str) and isinstance(data.get("kind"), str):
        return "kubernetes"
    hydra = isinstance(data.get("defaults"), list) or "hydra" in keys or any(k.startswith("_target_") for k in keys)
    if modeline or isinstance(data.get("proposal"), dict):
        return "profile"
    named_task = isinstance(data.get("task"), str) and data["task"] in TASKS
    if "task" in keys and "model" in keys and not hydra and (named_task or len(keys - PROFILE_KEYS) <= 1):
        return "profile"
    if isinstance(data.get("available_node_types"), dict) and isinstance(data.get("provider"), dict):
        return "ray"  # a Ray cluster launcher config (ray up)
    if isinstance(data.get("blueprint_name"), str) and isinstance(data.get("deployment_groups"), list):
        return "blueprint"  # a Cluster Toolkit blueprint (gcluster deploy)
    resources = data.get("Resources")
    if isinstance(resources, dict) and ("AWSTemplateFormatVersion" in keys or any(
            isinstance(r, dict) and str(r.get("Type", "")).startswith("AWS::") for r in list(resources.values())[:1000])):
        return "cloudformation"  # an AWS CloudFormation template (SAM, a CDK synth output)
    if isinstance(data.get("type"), str) and data["type"] in DSTACK_TYPES and keys & DSTACK_CORE:
        return "dstack"  # before SkyPilot: a dstack resources block (gpu, memory, disk) is no SkyPilot one
    if _is_sky(data, keys):
        return "skypilot"
    if "task" in keys and keys <= PROFILE_KEYS and len(keys) == len(data):
        return "profile"  # only advisor's keys (a profile missing its model): judged, so its errors are reported
    return "other: " + _other_reason(data, keys)


KUSTOMIZE_KEYS = {
    "resources", "bases", "patches", "patchesStrategicMerge", "patchesJson6902", "components", "namePrefix", "nameSuffix",
    "namespace", "configMapGenerator", "secretGenerator", "images", "replicas", "commonLabels", "labels", "commonAnnotations",
    "replacements", "generatorOptions", "helmCharts", "crds", "openapi", "vars", "transformers", "generators", "buildMetadata",
    "apiVersion", "kind", "metadata", "sortOptions", "validators", "configurations", "helmGlobals",
}


def _is_kustomization(data: dict[Any, Any], api: Any) -> bool:
    """A kustomization file: kustomize's own apiVersion, or (as kustomize accepts) none and only its keys."""
    if isinstance(api, str):
        return api.startswith("kustomize.config.k8s.io/") and data.get("kind") in ("Kustomization", "Component")
    keys = {k for k in data if isinstance(k, str)}
    return bool(keys) and keys <= KUSTOMIZE_KEYS and isinstance(data.get("resources", data.get("bases", [])), list) and bool(
        keys & {"resources", "bases", "patches", "patchesStrategicMerge", "components", "helmCharts"}
    )


def _list_reason(data: list[Any]) -> str:
    if data and all(isinstance(d, dict) for d in data):
        plays = {k for d in data for k in d if isinstance(k, str)}
        if plays & {"hosts", "import_playbook", "roles", "tasks", "include_tasks", "import_tasks"}:
            return "an Ansible playbook or task list"
    return "a YAML list, not a workload profile"


WORKFLOW = "a GitHub Actions workflow"
_TOP_KEY = re.compile(r"""(?m)^["']?([A-Za-z_$][\w.$/-]*)["']?[ \t]*:(?=[ \t]|$)""")


def is_workflow(keys: set[str]) -> bool:
    """A GitHub Actions workflow's own top-level keys (``on`` and ``jobs``, neither a key of anything the gate reads)."""
    return "on" in keys and "jobs" in keys


def text_workflow(text: str) -> bool:
    """Whether the top-level keys written in a text (one not valid YAML as a whole: a heredoc line at column 1 ending a
    ``run: |`` block) are a GitHub Actions workflow's. Its ``name`` is then the workflow's, not a task's."""
    return is_workflow(set(_TOP_KEY.findall(text)))


def _other_reason(data: dict[Any, Any], keys: set[str]) -> str:
    if is_workflow(keys | ({"on"} if True in data else set())):
        return WORKFLOW
    if isinstance(data.get("services"), dict) and keys <= {
        "services",
        "version",
        "volumes",
        "networks",
        "configs",
        "secrets",
        "name",
        "include",
        "x-common",
    } | {k for k in keys if k.startswith("x-")}:
        return "a docker-compose file"
    if isinstance(data.get("dependencies"), list) and keys <= {"name", "channels", "dependencies", "prefix", "variables"}:
        return "a conda environment file"
    if isinstance(data.get("defaults"), list) or "hydra" in keys or any(k.startswith("_target_") for k in keys):
        return "a Hydra / OmegaConf configuration"
    if isinstance(data.get("apiVersion"), str) and "name" in keys and "version" in keys:
        return "a Helm Chart.yaml"
    if "stages" in keys or any(isinstance(v, dict) and "script" in v for v in data.values()):
        return "a GitLab CI configuration"
    if isinstance(data.get("releases"), list) and all(isinstance(r, dict) and "chart" in r for r in data["releases"]):
        return "a helmfile (a release of a chart in the repository is rendered with its values; charts from a repository are not)"
    if isinstance(data.get("repos"), list):
        return "a pre-commit configuration"
    if isinstance(data.get("provider"), dict) and ("head_node" in keys or "worker_nodes" in keys):
        return "a Ray cluster config in the legacy head_node / worker_nodes form (not read; available_node_types is)"
    return "YAML that is not a workload profile (no task + model), a Kubernetes manifest or a SkyPilot task"
