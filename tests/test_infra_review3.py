"""Real repository files a review read by hand (tests/data/infra-review3/*/README names each upstream file and commit),
where the gate missed a request, misread it, reported a CPU machine as an accelerator, or stopped the run:

- 01: a Kubeflow TrainJob without podSpecOverrides (the standard shape) asks for trainer.resourcesPerNode x numNodes;
- 02: KAITO InferenceSet (up to nodeCountLimit nodes), RAGEngine and MultiRoleInference name Azure GPU machine types;
- 03: n2-standard-8 / c3-standard-22 (CPU machines the catalog prices) in a Cluster Toolkit blueprint, a Ray cluster
  config and a SkyPilot task are no accelerators;
- 06: kueue's KEP metadata (unquoted @handles: no YAML) names no accelerator and must not stop the run;
- 08: a GKE node pool of a registry module whose zones are var.zones without a default: three zones is a guess, said;
- 09: a KAITO Workspace's Azure VM size says its cloud; a `<your-vm-sku>` placeholder is not read;
- 05: Cluster Toolkit modules not read (a Slurm TPU nodeset, a remote desktop, a Slurm login node) that create
  accelerator machines fail closed;
- 10: nvidia-tesla-t4-vws is a T4; 11: SageMaker HyperPod's ml.g5.8xlarge is a g5.8xlarge (A10G).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review3"


def _run(case: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(CASES / case))
    data = json.loads(r.out)
    got = {x["source"]["address"]: {**x["request"], "rules": {f["rule"] for f in x["findings"]}} for x in data["results"]}
    return r.code, got, data


def test_a_trainjob_without_pod_overrides_asks_for_its_resources_per_node() -> None:
    _code, got, _ = _run("01-trainjob-without-podspecoverrides")
    assert got["TrainJob/default/lammps-flux/trainer"]["total_chips"] == 2


def test_kaito_inference_set_rag_engine_and_multi_role_inference_are_read() -> None:
    _code, got, _ = _run("02-kaito-inferenceset-ragengine-multirole")
    iset = got["InferenceSet/default/phi-4-mini"]
    assert (iset["cloud"], iset["count"], iset["replicas_min"], iset["replicas_max"]) == ("azure", 1, 1, 5)
    assert got["RAGEngine/default/ragengine-start"]["cloud"] == "azure"
    assert {a for a in got if a.startswith("MultiRoleInference/")} == {
        "MultiRoleInference/default/phi-4-mini/prefill", "MultiRoleInference/default/phi-4-mini/decode"}


def test_cpu_machines_the_catalog_prices_are_no_accelerators_in_any_reader() -> None:
    _code, got, data = _run("03-cpu-catalog-machine-as-accelerator")
    assert got == {}
    assert {Path(s["path"]).name for s in data["skipped_files"]} >= {"blueprint.yaml", "ray.yaml", "sky.yaml"}


def test_yaml_that_names_no_accelerator_and_is_no_infrastructure_does_not_stop_the_run() -> None:
    code, got, data = _run("06-invalid-non-infra-yaml-exit2")
    assert code == 0 and not data["invalid"] and "Job/default/ok" in got
    assert any(Path(s["path"]).name == "kep.yaml" and "not valid YAML" in s["reason"] for s in data["skipped_files"])


def test_unread_zones_of_a_node_pool_are_said() -> None:
    _code, got, _ = _run("08-gke-zones-assumed-3")
    [pool] = [v for k, v in got.items() if "pool-02" in k]
    assert "request-unresolved" in pool["rules"]


def test_a_kaito_workspace_says_its_cloud_and_a_placeholder_sku_is_not_read() -> None:
    _code, got, _ = _run("09-kaito-workspace-cloud-and-count")
    assert got["Workspace/default/ws"]["cloud"] == "azure"
    ph = got["Workspace/default/workspace-phi-4-mini"]
    assert "request-unresolved" in ph["rules"] and ph["hardware"] is None


@pytest.mark.parametrize(("case", "accelerator"), [("10-t4-vws-unknown", "t4"), ("11-sagemaker-ml-instance-type-in-k8s", "a10g")])
def test_other_spellings_of_known_chips(case: str, accelerator: str) -> None:
    _code, got, _ = _run(case)
    assert {v["accelerator"] for v in got.values()} == {accelerator}


def test_blueprint_modules_not_read_that_create_accelerator_machines_fail_closed() -> None:
    """Before: a Slurm TPU nodeset (node_type v3-8), a remote desktop with a T4 and a Slurm login node on a2-highgpu-1g
    were 'Cluster Toolkit blueprint without accelerator requests'. Now each is a request of that hardware whose count is
    not read; a module that only names accelerators in its templates' variables (Kueue flavors) is none."""
    _code, got, _ = _run("05-blueprint-tpu-nodeset-and-other-gpu-modules")
    hw = {a.rsplit("/", 1)[-1]: (v["hardware"], "request-unresolved" in v["rules"]) for a, v in got.items()}
    assert hw == {"tpu_nodeset": ("v3-8", True), "remotedesktop": ("nvidia-tesla-t4-vws", True), "slurm_login": ("a2-highgpu-1g", True)}


def test_a_multi_line_interpolation_is_parsed_and_a_comment_asks_for_nothing(tmp_path: Path) -> None:
    """Before: a `${ ... }` spanning lines (valid Terraform) made python-hcl2 refuse the file, and the text fallback
    reported the CPU node pool as hardware 'TPU', a word in a comment. Now the file is parsed (the interpolation joined
    onto one line, later lines keeping their numbers): no request; and the same file with an L4 pool reads 2 nodes
    per zone x 3 zones of 1 L4."""
    _code, got, _ = _run("07-hcl2-multiline-interpolation-fallback")
    assert got == {}
    text = (CASES / "07-hcl2-multiline-interpolation-fallback" / "main.tf").read_text()
    gpu = text.replace('default = "c2-standard-60"', 'default = "g2-standard-8"').replace("node_count = 1", "node_count = 2")
    (tmp_path / "main.tf").write_text(gpu)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path / "main.tf"))
    [res] = json.loads(r.out)["results"]
    assert (res["request"]["accelerator"], res["request"]["total_chips"], res["source"]["line"]) == ("l4", 6, 6)
