"""SkyPilot tasks from real repositories a review read by hand (tests/data/infra-review12/README.md names each upstream
file): a fractional GPU share (T4:0.5), TPU v2/v3 slice names that count TensorCores, and `gpus`, SkyPilot's alias of
`accelerators`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review12"


def _check(path: Path) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(path))
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def _one(path: Path) -> dict[str, Any]:
    code, data, err = _check(path)
    assert code == 0, err
    (result,) = data["results"]
    return result


def test_a_fractional_gpu_share_is_one_gpu_on_its_node() -> None:
    # before: 't4 x ? x 1', request-unresolved: '... is not a literal value ... Run the check on the rendered output'
    r = _one(CASES / "01-skypilot-fractional" / "job.yaml")
    assert r["request"]["accelerator"] == "t4" and r["request"]["total_chips"] == 1, r["request"]
    assert "request-unresolved" not in {f["rule"] for f in r["findings"]}
    assert "a 0.5 share of one T4: the node holds the whole GPU, counted as 1" in json.dumps(r)
    # options of any_of that inherit the base's accelerators (a path the document does not hold): read, not a crash
    inherit = _one(CASES / "01-skypilot-fractional" / "any-of-inherits.yaml")
    assert inherit["request"]["accelerator"] == "t4" and inherit["request"]["total_chips"] == 1, inherit["request"]
    over = _one(CASES / "01-skypilot-fractional" / "over-one.yaml")
    assert "request-unresolved" in {f["rule"] for f in over["findings"]}


def test_tpu_v2_and_v3_slice_names_count_their_chips() -> None:
    # before: count 1 beside a finding that said '4 chips: the name counts TensorCores'
    code, data, err = _check(CASES / "03-skypilot-tpu-v2-v3")
    assert code == 0, err
    chips = {Path(x["source"]["path"]).name: x["request"]["total_chips"] for x in data["results"]}
    assert chips == {"tpu-v2-8.yaml": 4, "tpu-v3-32.yaml": 16, "tpu-v4-8.yaml": 4}


def test_gpus_is_an_alias_of_accelerators() -> None:
    # before: 'resources.gpus: unknown resources field; did you mean accelerators?', exit 2
    r = _one(CASES / "05-skypilot-gpus-alias" / "task.yaml")
    assert r["request"]["accelerator"] == "h100" and r["request"]["total_chips"] == 16, r["request"]
    code, _data, err = _check(CASES / "05-skypilot-gpus-alias" / "both.yaml")
    assert code == 2 and "'gpus' is an alias of 'accelerators': give one of them" in err, err


def test_a_template_document_beside_a_manifest_is_left_out_and_the_manifest_read() -> None:
    # before: 'a mapping or list cannot be a mapping key; an unrendered template placeholder ...', the file invalid
    # and exit 2, the 8-H100 Deployment in it not reported
    r = _one(CASES / "02-placeholder-in-other-document" / "deploy.yaml")
    assert r["request"]["accelerator"] == "h100" and r["request"]["total_chips"] == 8, r["request"]
    assert "a document that is not YAML until rendered (an unrendered placeholder) and names no accelerator, left out" in json.dumps(r)
    code, _data, err = _check(CASES / "02-placeholder-in-other-document" / "gpu-in-template.yaml")
    assert code == 2 and "gpu-in-template.yaml:" in err, err


def test_kuberays_default_max_replicas_is_no_input_error() -> None:
    # before: 'maxReplicas: 2147483647 is out of range (0..10000000)', the chart invalid, exit 2
    case = CASES / "07-kuberay-default-maxreplicas"
    r = _one(case / "raycluster.yaml")
    assert r["request"]["accelerator"] == "b200" and r["request"]["total_chips"] == 32, r["request"]
    assert "request-unresolved" not in {f["rule"] for f in r["findings"]}
    auto = _one(case / "autoscaled.yaml")
    assert "request-unresolved" in {f["rule"] for f in auto["findings"]}
    assert "2147483647 (KubeRay's default: no upper bound)" in json.dumps(auto)


def test_a_dstack_fleet_that_names_its_instance_types_alone_is_read() -> None:
    # before: 'dstack configuration without accelerator requests' (the reader needed a resources block first)
    r = _one(CASES / "06-dstack-fleet-instance-types" / "fleet.dstack.yml")
    req = r["request"]
    assert req["accelerator"] == "h100" and req["total_chips"] == 16 and req["cloud"] == "gcp", req


def test_an_eks_auto_mode_node_pool_is_read_as_karpenters() -> None:
    # before: 'Kubernetes manifest without accelerator requests' (only karpenter.k8s.aws/ labels were read)
    case = CASES / "09-eks-automode-nodepool"
    r = _one(case / "automode-np-gpu.yaml")
    rules = {f["rule"] for f in r["findings"]}
    assert {"request-unresolved", "request-unknown-accelerator"} <= rules, rules
    assert r["request"]["cloud"] == "aws" and "p5" in json.dumps(r["request"]), r["request"]
    named = _one(case / "automode-gpu-name.yaml")["request"]
    assert (named["accelerator"], named["total_chips"], named["cloud"]) == ("h100", 16, "aws"), named


def test_a_helm_dependency_from_a_directory_of_the_repository_is_rendered_with_its_parent() -> None:
    # before: 'helm-dependency/dynamo-platform/dynamo-operator', hardware 'dynamo-operator.gpuDiscovery.enabled',
    # unknown and request-unresolved: a dependency taken from file://components/operator was 'not held'
    case = CASES / "10-helm-file-dependency"
    code, data, err = _check(case / "platform")
    assert code == 0 and data["results"] == [], (err, data["results"])
    # the parent's values reach the dependency's templates (4 L4); the dependency chart is judged on its own too (1 L4,
    # its own values: whether it is also installed alone is not in the files, and a parent may not render it)
    code, data, err = _check(case / "local-gpu")
    assert code == 0, err
    chips = sorted((r["request"]["accelerator"], r["request"]["total_chips"]) for r in data["results"])
    assert chips == [("l4", 1), ("l4", 4)], chips
    # a file:// path out of the repository is never followed: the dependency stays unrendered, its values said
    code, data, err = _check(case / "outside" / "chart")
    assert code == 0, err
    (r,) = data["results"]
    assert r["source"]["address"] == "helm-dependency/outside/escape" and "request-unresolved" in {f["rule"] for f in r["findings"]}


def test_a_kai_scheduler_gpu_share_is_a_gpu_request() -> None:
    # before: 'Kubernetes manifest without accelerator requests' (the share is an annotation, not a resource limit)
    case = CASES / "12-kai-gpu-fraction"
    ray = _one(case / "raycluster-half-gpu.yaml")
    assert ray["request"]["total_chips"] == 2 and "KAI Scheduler GPU sharing (gpu-fraction: 0.5)" in json.dumps(ray)
    dep = _one(case / "deployment.yaml")["request"]
    assert (dep["accelerator"], dep["total_chips"]) == ("l4", 3), dep


def test_an_intel_gpu_asked_through_dra_is_a_request_of_unknown_hardware() -> None:
    # before: 'Kubernetes manifest without accelerator requests' (only NVIDIA's and AMD's device classes were read)
    case = CASES / "04-dra-intel-gpu"
    for name in ("deployment-xpu-dra.yaml", "dgd-xpu-dra.yaml"):
        r = _one(case / name)
        assert r["request"]["total_chips"] == 1 and r["request"]["accelerator"] is None, (name, r["request"])
        assert "request-unknown-accelerator" in {f["rule"] for f in r["findings"]}, name


def test_a_skypilot_set_on_spot_takes_the_option_cheapest_at_its_own_count() -> None:
    # before: a100-40gb x 1 (ranked by Azure's A100 spot row, which is for 8 GPUs), priced on gcp at 4.3x the L4
    r = _one(CASES / "08-skypilot-spot-set" / "gemma3.yaml")
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("l4", 1), r["request"]
    dstack = _one(CASES / "08-skypilot-spot-set" / "gemma.dstack.yml")
    assert (dstack["request"]["accelerator"], dstack["request"]["total_chips"]) == ("l4", 1), dstack["request"]


def test_a_reference_in_an_identity_attribute_leaves_a_terraform_pool_read() -> None:
    # before: tpu-v6e x 8 and request-unresolved ('node_config.service_account = ... is not a literal value')
    case = CASES / "11-tf-identity-reference"
    r = _one(case / "main.tf")
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("tpu-v6e", 8), r["request"]
    assert "request-unresolved" not in {f["rule"] for f in r["findings"]}
    code, data, err = _check(case / "machine" / "main.tf")  # the machine type not read: said, never priced as read
    assert code == 0 and not data["results"], err
    assert "node_config.machine_type cannot be evaluated" in data["skipped_files"][0]["reason"], data["skipped_files"]


def test_leaderworkerset_subgroups_that_each_fill_a_slice_are_a_real_shape() -> None:
    # before: tpu-v6e x 16 with proposal-not-a-real-shape ('4 pod(s) x 4 chips = 16, but topology 2x4 has 8 chips')
    case = CASES / "13-lws-subgroups"
    r = _one(case / "lws.yaml")
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("tpu-v6e", 16), r["request"]
    assert "proposal-not-a-real-shape" not in {f["rule"] for f in r["findings"]}
    assert "2 subgroup(s) of 2 pods (LeaderWorkerSet subGroupPolicy), each one 2x4 slice of 8 chips" in json.dumps(r)
    assert r["request"]["hosts_per_replica"] == 4  # the group spans both slices' hosts, not one slice's
    four = _one(case / "subgroup-of-four.yaml")
    assert "proposal-not-a-real-shape" in {f["rule"] for f in four["findings"]}


def test_a_broken_manifest_that_names_no_accelerator_does_not_stop_the_run() -> None:
    # before: 'llm-gateway.yaml:10:9: error: invalid YAML ...', exit 2 with --fail-on never, for a Gateway
    case = CASES / "14-broken-manifest"
    code, data, err = _check(case / "llm-gateway.yaml")
    assert code == 0 and not data["results"], err
    assert data["skipped_files"][0]["reason"].startswith("a Kubernetes manifest that is not valid YAML (10:9:"), data
    code, data, err = _check(case / "broken-gpu.yaml")
    assert code == 2 and "broken-gpu.yaml:14:10: error: invalid YAML" in err, err
