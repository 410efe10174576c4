"""Real repository files a review read by hand (tests/data/infra-review17: each case's README.md names its upstream
repository, commit and path): repositories this project had not read before (aws-samples/awsome-distributed-training,
InftyAI/llmaz, sgl-project/ome, AI-Hypercomputer/tpu-recipes, awslabs/data-on-eks, llm-d/llm-d-deployer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review17"


def _check(path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", *args, str(path))
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def _results(path: Path) -> dict[str, dict[str, Any]]:
    code, data, err = _check(path)
    assert code == 0, err
    return {r["source"]["address"]: r for r in data["results"]}


def _rules(r: dict[str, Any]) -> set[str]:
    return {f["rule"] for f in r["findings"]}


def test_an_unknown_value_beside_the_hardware_does_not_hide_a_terraform_resource() -> None:
    # F1: before, each of these was 'Terraform HCL without accelerator resources' (a skipped file, exit 0 under any
    # --fail-on): an ARN built from a data source, or a null-guarded label map, made the whole local unknown
    base = CASES / "01-tf-unknown-sibling"
    eks = _results(base / "min-eks-node-group")["aws_eks_node_group.this[0]"]["request"]
    assert (eks["accelerator"], eks["count"], eks["total_chips"]) == ("h100", 8, 32), eks
    for case in ("min-data-source", "min-null-length"):
        got = _results(base / case)["awscc_sagemaker_cluster.hyperpod_cluster"]
        assert got["request"]["accelerator"] == "h100" and "request-unresolved" in _rules(got), (case, got["request"])
    repo = _results(base / "repo")  # the module as published, with its tfvars (2 x ml.g5.8xlarge)
    assert repo["awscc_sagemaker_cluster.hyperpod_cluster"]["request"]["accelerator"] == "a10g"


def test_a_flavor_that_carries_its_own_gpu_limits_is_a_request() -> None:
    # F2: llmaz OpenModel inferenceConfig.flavors[].limits (the controller puts them on every serving pod) was skipped
    # as 'Kubernetes manifest without accelerator requests'
    code, data, err = _check(CASES / "03-llmaz-flavors")
    assert code == 0, err
    assert not data["skipped_files"], data["skipped_files"]
    flavors = [r for r in data["results"] if r["source"]["address"].endswith("inferenceConfig.flavors.0")]
    assert len(flavors) == 2 and all(r["request"]["count"] == 1 and "request-unresolved" in _rules(r) for r in flavors)


def test_a_cpu_manifest_with_a_key_written_twice_does_not_stop_the_run(tmp_path: Path) -> None:
    # F5: data-on-eks' Graviton SparkApplication (sparkConf sets one key twice, which kubectl refuses too) made a
    # repository-wide run exit 2; a manifest naming an accelerator with a duplicate key stays an input error
    code, data, err = _check(CASES / "05-duplicate-key-cpu")
    assert code == 0, err
    assert data["skipped_files"][0]["reason"].startswith("a Kubernetes manifest that has a key written twice (103:5:")
    gpu = (CASES / "05-duplicate-key-cpu" / "tpcds-benchmark-1t-ebs.yaml").read_text().replace(
        "sparkConf:", "driver:\n    gpu: {name: nvidia.com/gpu, quantity: 1}\n  sparkConf:", 1)
    (tmp_path / "gpu.yaml").write_text(gpu)
    code, _, err = _check(tmp_path / "gpu.yaml")
    assert code == 2 and "duplicate key" in err, (code, err)


def test_a_file_of_compute_classes_is_listed_with_what_it_allows() -> None:
    # F3: a GKE ComputeClass naming tpu7x or an H100, alone in its file, was neither a result nor a skipped file (the
    # summary counted 0 files); a Kueue ResourceFlavor has been listed as capacity it allows, not a request
    code, data, err = _check(CASES / "02-computeclass")
    assert code == 0, err
    reasons = sorted(s["reason"] for s in data["skipped_files"])
    assert len(reasons) == 2 and all("capacity it allows, not a request" in r for r in reasons), reasons
    assert any("nvidia-h100-80gb" in r for r in reasons) and any("tpu7x" in r for r in reasons)
