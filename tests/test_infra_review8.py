"""Real repository files a review read by hand (tests/data/infra-review8/*/README.md names each upstream file and
commit), where the gate passed a request in silence or could not name its hardware:

- 01: a Terraform resource of a type no reader takes (aws_emr_cluster, oci_core_instance, awscc_sagemaker_cluster)
  whose machine is behind a variable, a local or a module input, or is accelerator hardware the catalog does not hold
  (VM.GPU.A10.1, trn1.32xlarge): a request of that hardware with its count not read, never a file without accelerators;
- 02: GPU Feature Discovery's product labels (nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3)
  name the catalog's chips;
- 03: a Terraform helm_release of a chart from a Helm repository whose values are a file of the repository
  (values = [file("values.yaml")], or file(var.setup_yaml) with the variable's default) asking for GPUs;
- 04: the GKE registry module called inside a module of the repository (nim-deploy's gke-cluster wrapper, its GPU pool
  from the caller's gpu_pools): the caller was 'Terraform HCL without accelerator resources';
- 05: a chart whose only template includes a library subchart's named template (nim-deploy's triton-cosmos-embed):
  Helm compiles every chart's templates into one set, so the helper renders the GPU Deployment; advisor kept each
  chart's defines apart and passed the chart as asking for nothing;
- 06: a Helm values file with a key written twice (nim-deploy's RAG blueprint values-os.yaml): Helm keeps the last value
  (go-yaml v2 unstrict), so does advisor; a values file no chart of the run owns is skipped, not an input error (the
  whole repository's run stopped with exit 2 on it);
- 07: a GitHub Actions workflow that is not valid YAML (a heredoc line at column 1 ends its run block): its top-level
  name counted as a SkyPilot task's, so four such files made awsome-distributed-training's run exit 2; a broken
  task, or a file with a manifest's keys beside on and jobs, stays an input error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review8"


def _run(path: Path) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(path))
    data = json.loads(r.out)
    got = {f"{Path(x['source']['path']).parent.name}/{x['source']['address']}": x for x in data["results"]}
    return r.code, got, data


def test_an_unread_resource_type_behind_a_variable_or_of_unsupported_hardware_is_not_passed() -> None:
    code, got, data = _run(CASES / "01-tf-unread-type-silent")
    assert code == 0
    rules = {k: {f["rule"] for f in x["findings"]} for k, x in got.items()}
    # the machine behind var.itype's default: the hardware is known, its count is not
    assert got["emr-p5-var/aws_emr_cluster.x"]["request"]["accelerator"] == "h100"
    assert "request-unresolved" in rules["emr-p5-var/aws_emr_cluster.x"]
    # accelerator hardware the catalog does not hold, on a type no reader takes: unknown and unresolved
    for key in ("emr-trn1/aws_emr_cluster.x", "oci-a10/oci_core_instance.gpu_vm",
                "hyperpod-module/module.hyperpod_cluster.awscc_sagemaker_cluster.hyperpod_cluster"):
        assert {"request-unknown-accelerator", "request-unresolved"} <= rules[key], (key, rules.get(key))
    skipped = {Path(s["path"]).parent.name for s in data["skipped_files"]}
    assert not {"emr-p5-var", "emr-trn1", "oci-a10"} & skipped, data["skipped_files"]


def test_gpu_feature_discovery_product_labels_name_the_chip() -> None:
    _code, got, _ = _run(CASES / "02-gpu-product-gfd-label")
    by = {k.split("/", 1)[1]: x["request"] for k, x in got.items()}
    a100 = by["InferenceService/default/llama3-70b-instruct-4xa100/predictor"]
    assert a100["accelerator"] == "a100-80gb" and a100["total_chips"] == 4, a100
    assert by["Pod/default/h100-hbm3"]["accelerator"] == "h100"
    assert by["Pod/default/control-l4"]["accelerator"] == "l4"


def test_a_remote_chart_released_with_a_values_file_that_asks_for_gpus_is_reported() -> None:
    """Before, only values written inline (yamlencode) were read: file("...") and file(var.x) left the release out,
    'Terraform HCL without accelerator resources' (vllm-project/production-stack's GKE and AKS tutorials)."""
    _code, got, _ = _run(CASES / "03-remote-helm-release-values-file")
    for key in ("control-yamlencode/helm_release.vllm", "file-literal/helm_release.vllm", "tf/helm_release.vllm"):
        rules = {f["rule"] for f in got[key]["findings"]}
        assert {"request-unknown-accelerator", "request-unresolved"} <= rules, (key, rules)
        assert "requestGPU" in got[key]["request"]["hardware"], got[key]["request"]


def test_a_values_file_with_a_duplicate_key_reads_as_helm_reads_it() -> None:
    code, got, data = _run(CASES / "06-values-duplicate-key")
    assert code == 0 and not data["invalid"], data["invalid"]
    [req] = [x["request"] for x in got.values()]
    assert req["total_chips"] == 2, req  # gpus: 1 then gpus: 2: the last
    skipped = data["skipped_files"]
    assert any(s["path"].endswith("values-os.yaml") and "duplicate key" in s["reason"] for s in skipped), skipped


def test_a_registry_module_called_inside_a_local_module_is_read_with_the_callers_inputs() -> None:
    _code, got, _ = _run(CASES / "04-local-module-wrapping-gke-module")
    wrapped = got['setup/module.gke-cluster.module.gke.google_container_node_pool.pools["gpu-pool"]']["request"]
    direct = got['control-direct/module.gke.google_container_node_pool.pools["gpu-pool"]']["request"]
    assert (wrapped["accelerator"], wrapped["total_chips"]) == (direct["accelerator"], direct["total_chips"]) == ("l4", 3), wrapped


def test_a_named_template_of_a_library_subchart_serves_its_parent() -> None:
    _code, _got, data = _run(CASES / "05-helm-library-chart-helpers")
    chips = {x["source"]["path"].split("05-helm-library-chart-helpers/")[1]: x["request"]["total_chips"] for x in data["results"]}
    assert chips == {"app/templates/base.yaml": 8, "control-same-chart/templates/base.yaml": 8}, chips


def test_a_broken_github_workflow_is_skipped_and_a_broken_task_stays_an_input_error() -> None:
    case = CASES / "07-broken-workflow"
    code, got, data = _run(case / "fsdp-regression-test.yml")
    assert code == 0 and not got, data
    (skip,) = data["skipped_files"]
    assert skip["reason"].startswith("a GitHub Actions workflow that is not valid YAML (34:1:"), skip
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(case / "broken-task.yaml"))
    assert r.code == 2, r.out
    assert "broken-task.yaml:" in r.err and "error: invalid YAML" in r.err, r.err
    # on and jobs beside a manifest's apiVersion and kind: not read as a workflow; a broken manifest that names no
    # accelerator is skipped as such (tests/test_infra_review12.py), never as a workflow
    code, got, data = _run(case / "workflow-with-manifest-keys.yml")
    assert code == 0 and not got, data
    (skip,) = data["skipped_files"]
    assert skip["reason"].startswith("a Kubernetes manifest that is not valid YAML"), skip
