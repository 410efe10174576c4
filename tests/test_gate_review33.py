"""Review 33: the gate on 193 real files of 13 public repositories (54 of 59 accelerator resources found). The cases
here are cut down from the files it passed as asking for nothing (tests/data/gate-review33)."""

from __future__ import annotations

import json

from .conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "gate-review33"


def _requests(path: str) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    r = run_cli("check", path, "--format", "json")
    data = json.loads(r.out)
    return r.code, [x["proposal"]["request"] for x in data["results"]]


def test_a_registry_module_given_a_gpu_machine_type_by_a_variable_is_a_request() -> None:
    """terraform-google-modules/vm with machine_type = var.mt (default g2-standard-16, an L4 VM): only a literal
    machine type in the module block was seen; this one was 'Terraform HCL without accelerator resources'."""
    code, reqs = _requests(str(DATA / "module-var"))
    assert code == 0 and len(reqs) == 1, reqs
    assert reqs[0]["accelerator"] == "l4" and reqs[0]["count"] is None  # the module is not read: its count is not known


def test_node_pools_whose_machine_type_cannot_be_evaluated_are_requests_where_the_module_names_gpu_machines() -> None:
    """equinor/radix: a module called for_each cluster of a config file, its node pools from a lookup of variables whose
    defaults are Standard_NC40ads_H100_v5 pools: a note only, exit 0, 0 proposals."""
    code, reqs = _requests(str(DATA / "aks-foreach-lookup"))
    assert code == 0 and len(reqs) == 1, reqs
    assert reqs[0]["accelerator"] == "Standard_NC40ads_H100_v5" and reqs[0]["count"] is None


def test_an_optional_attributes_default_is_its_value_not_its_quoted_text() -> None:
    """optional(string, "europe-west4") read as the region '"europe-west4"' (a policy allowing europe-west4 failed it),
    and optional(string, "") as a value that is not empty (a pool of 3 zones counted in 1)."""
    r = run_cli("check", str(DATA / "optional-default"), "--format", "json")
    data = json.loads(r.out)
    [res] = data["results"]
    assert res["proposal"]["request"]["count"] == 9  # 1..3 nodes per zone, 3 zones of europe-west4
    assert '"region": "europe-west4"' in r.out and '\\"europe-west4\\"' not in r.out


def test_a_chart_whose_values_are_left_empty_for_install_is_read_not_stopped() -> None:
    """gpu-recipes' SGLang LeaderWorkerSet chart declares job.image.repository and tag empty (set at install):
    `image: {{ .Values.job.image.repository }}:{{ .Values.job.image.tag }}` rendered as `image: :` and stopped the whole
    repository's run with exit 2, even with --fail-on never."""
    r = run_cli("check", str(DATA / "empty-values-chart"), "--format", "json")
    assert r.code == 0, r.err
    [res] = json.loads(r.out)["results"]
    assert res["proposal"]["request"]["count"] == 16
    assert any("declares empty" in n for n in res["notes"])


def test_a_toolkit_tpu_pool_takes_its_topology_from_the_resource_policy_it_uses() -> None:
    """Cluster Toolkit's gke-tpu-7x: the pool uses a resource policy whose workload_policy.accelerator_topology is
    2x2x1 (4 chips, one tpu7x-standard-4t node); read at gke-node-pool's 0..1000 nodes, 4,000 chips."""
    r = run_cli("check", str(DATA / "toolkit-tpu"), "--format", "json")  # with the vars of its deployment file beside it
    [res] = json.loads(r.out)["results"]
    assert res["proposal"]["request"]["count"] == 4 and any("2x2x1" in n for n in res["notes"]), res


def test_a_chart_a_release_installs_is_judged_in_the_releases_namespace() -> None:
    """A Terraform helm_release with namespace = "nim" rendered the chart's Job as Job/default/release-name, so a policy
    that requires Spot in namespace nim passed it (exit 0)."""
    r = run_cli("check", str(DATA / "release-namespace"), "--policy", str(DATA / "policy-ns.yaml"), "--format", "json")
    assert r.code == 1, r.out[-400:]
    data = json.loads(r.out)
    addresses = [x["source"]["address"] for x in data["results"]]
    assert any(a.startswith("Job/nim/") for a in addresses), addresses
    assert any(f["rule"] == "policy-spot-required" for x in data["results"] for f in x["findings"])
