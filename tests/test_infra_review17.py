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
