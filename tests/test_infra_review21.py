"""Real repository files a review trimmed (tests/data/infra-review21, README.md there): platform repositories full of
Helm charts, Kustomize and Terraform the gate had not read (kubeflow/trainer, ray-project/kuberay, kserve/kserve,
GoogleCloudPlatform/ai-on-gke, GoogleCloudPlatform/kubernetes-engine-samples)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import ROOT, git_checkout, run_cli

CASES = ROOT / "tests" / "data" / "infra-review21"
POLICY = CASES / "policy.yaml"


def _check(path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    config = () if "--policy" in args else ("--no-config",)  # a policy is its own configuration
    r = run_cli("check", *config, "--format", "json", *args, str(path))
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def test_a_broken_cpu_document_beside_a_harmless_one_does_not_stop_the_run(tmp_path: Path) -> None:
    # F1: one broken CPU-only document was skipped, but followed by a readable Connector or PVC the file was an input
    # error (exit 2) that stopped a repository-wide run
    for name in ("dup-key-one-doc.yaml", "dup-key-two-docs.yaml", "broken-pv-pvc.yaml"):
        code, data, err = _check(CASES / "F1" / name, "--fail-on", "never")
        assert code == 0, (name, err)
        assert data["skipped_files"] and "names no accelerator" in data["skipped_files"][0]["reason"], (name, data)
    # a readable document beside the broken one that asks for a GPU keeps the file an input error
    text = (CASES / "F1" / "broken-pv-pvc.yaml").read_text() + (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: c\n    image: x\n"
        "    resources: {limits: {nvidia.com/gpu: 8}}\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(text)
    assert _check(gpu, "--fail-on", "never")[0] == 2


def test_a_manifest_template_whose_path_terraform_decides_is_never_passed_over() -> None:
    # F2: ai-on-gke applies a GPU Deployment through templatefile(local.template_path) (a conditional) and through
    # templatefile(each.value) over a fileset; both were 'Terraform HCL without accelerator resources' (exit 0 under a
    # policy allowing only TPU v6e)
    for case in ("triton-conditional", "vllm-fileset"):
        code, data, err = _check(CASES / "F2" / case, "--policy", str(POLICY))
        assert code == 1, (case, err)
        (res,) = [r for r in data["results"] if r["source"]["address"].startswith("kubernetes_manifest.default")]
        assert "request-unresolved" in {f["rule"] for f in res["findings"]}, res["findings"]
        assert any("app.tftpl" in n for n in res["request"].get("notes", [])) or "app.tftpl" in json.dumps(res), res


def test_a_conditional_whose_branches_agree_is_read_without_its_condition() -> None:
    # F6: gpu_pools = var.cluster_location == "" ? var.gpu_pools : var.gpu_pools (cluster_location has no default):
    # the platform's T4 node pool (2 per node, up to 3 nodes in each of 3 zones) was dropped
    code, data, err = _check(CASES / "F6" / "case", "--policy", str(POLICY))
    assert code == 1, err
    (res,) = data["results"]
    assert (res["request"]["accelerator"], res["request"]["total_chips"]) == ("t4", 18), res["request"]
    assert "policy-accelerator-not-allowed" in {f["rule"] for f in res["findings"]}


def test_a_pod_that_writes_zero_accelerators_asks_for_none() -> None:
    # F7: a CPU-only Ray head (nvidia.com/gpu: 0) was reported as unknown x 0 and failed allowed_accelerators
    code, data, _ = _check(CASES / "F7" / "raycluster-head-zero-gpu.yaml", "--policy", str(POLICY))
    assert code == 1  # the B200 workers fail the strict policy
    assert [r["source"]["address"] for r in data["results"]] == ["RayCluster/default/rc/w"], data["results"]
    for name in ("deployment-zero-gpu.yaml", "zero-gpu-pytorchjob-jobset.yaml"):
        code, data, _ = _check(CASES / "F7" / name, "--policy", str(POLICY))
        assert code == 0 and not data["results"], (name, data["results"])


def test_decoy_templates_before_the_gpu_one_do_not_hide_it(tmp_path: Path) -> None:
    # hostile: the unsettled-path search reads at most 200 template files; a pull request padding the module with 200
    # decoys sorted before the GPU template must not make the resource 'without accelerator resources'
    mod = git_checkout(CASES / "F2" / "vllm-fileset", tmp_path)  # the pull request's checkout
    gpu = (mod / "manifest-templates" / "app.tftpl").read_text()
    (mod / "manifest-templates" / "app.tftpl").unlink()
    for i in range(205):
        (mod / "manifest-templates" / f"a{i:03d}.tftpl").write_text("apiVersion: v1\nkind: ConfigMap\n")
    (mod / "manifest-templates" / "zz.tftpl").write_text(gpu)
    code, data, err = _check(mod, "--policy", str(POLICY))
    assert code == 1, err
    (res,) = [r for r in data["results"] if r["source"]["address"].startswith("kubernetes_manifest.default")]
    assert "request-unresolved" in {f["rule"] for f in res["findings"]}
