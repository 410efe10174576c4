"""advisor check on real infrastructure: Terraform plan JSON, Kubernetes / GKE manifests, SkyPilot tasks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

INFRA = ROOT / "profiles" / "proposals" / "infra"
INFRA_RULES = {
    "request-unknown-accelerator",
    "request-unresolved",
    "request-unpriced",
    "workload-not-linked",
    "workload-link-broken",
    "policy-max-chips",
    "policy-accelerator-not-allowed",
    "policy-cloud-not-allowed",
    "policy-region-not-allowed",
    "policy-spot-required",
    "policy-monthly-increase",
    "policy-one-off-increase",
}


def check(*args: str) -> tuple[int, dict]:
    r = run_cli("check", "--no-config", "--format", "json", *args)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def by_address(data: dict) -> dict[str, dict]:
    return {r["source"]["address"]: r for r in data["results"] if r["source"]["kind"] != "profile"}


def rules(r: dict) -> set[str]:
    return {f["rule"] for f in r["findings"] if not f["waived"]}


def plan(*changes: dict, region: str = "us-east-1") -> str:
    return json.dumps({
        "format_version": "1.2",
        "resource_changes": list(changes),
        "configuration": {"provider_config": {"aws": {"expressions": {"region": {"constant_value": region}}}}},
    }, indent=1)


def rc(
    address: str, after: dict | None, actions: tuple[str, ...] = ("create",), before: dict | None = None, unknown: dict | None = None
) -> dict:
    return {"address": address, "mode": "managed", "type": address.split(".")[-2].split("[")[0],
            "change": {"actions": list(actions), "before": before, "after": after, "after_unknown": unknown or {}}}


def test_name_index(ctx) -> None:  # type: ignore[no-untyped-def]
    from advisor.check.infra.names import name_index

    ix = name_index(ctx.catalog)
    expect = {
        "a3-highgpu-8g": ("h100", 8), "a2-ultragpu-4g": ("a100-80gb", 4), "g2-standard-24": ("l4", 2), "ct5lp-hightpu-4t": ("tpu-v5e", 4),
        "ct6e-standard-4t": ("tpu-v6e", 4), "v5litepod-8": ("tpu-v5e", 8), "v6e-16": ("tpu-v6e", 16), "v5p-32": ("tpu-v5p", 16),
        "v4-8": ("tpu-v4", 4), "nvidia-h100-80gb": ("h100", None), "nvidia-tesla-a100": ("a100-40gb", None), "nvidia-l4": ("l4", None),
        "tpu-v6e-slice": ("tpu-v6e", None), "tpu-v5-lite-podslice": ("tpu-v5e", None), "p5.48xlarge": ("h100", 8),
        "p4d.24xlarge": ("a100-40gb", 8), "p4de.24xlarge": ("a100-80gb", 8), "g5.xlarge": ("a10g", 1), "g5.48xlarge": ("a10g", 8),
        "g6.12xlarge": ("l4", 4), "p5e.48xlarge": ("h200", 8), "p6-b200.48xlarge": ("b200", 8), "Standard_ND96isr_H100_v5": ("h100", 8),
        "Standard_ND96asr_v4": ("a100-40gb", 8), "Standard_ND96amsr_A100_v4": ("a100-80gb", 8), "Standard_ND96isr_MI300X_v5": ("mi300x", 8),
        "tpu-v6e-8": ("tpu-v6e", 8), "tpu-v5litepod-8": ("tpu-v5e", 8), "tpu-v5e-8": ("tpu-v5e", 8), "tpu-v4-podslice": ("tpu-v4", None),
        "L40S": ("l40s", None), "g6e.xlarge": ("l40s", 1),
    }
    for name, (acc, chips) in expect.items():
        hw = ix.lookup(name)
        assert (hw.accelerator, hw.chips) == (acc, chips), name
    for name in ("Standard_NC24ads_A100_v4", "p3.16xlarge", "V100", "zz-9000"):
        hw = ix.lookup(name)
        assert hw.accelerator is None and hw.reason, name
    # a G6e size whose host price the catalog lacks: its chips are known, its price is not borrowed from g6e.xlarge
    hw = ix.lookup("g6e.48xlarge")
    assert (hw.accelerator, hw.chips) == (None, 8) and "not priced as 8 x g6e.xlarge" in str(hw.reason)


def test_names_file_refers_to_catalog_ids(ctx) -> None:  # type: ignore[no-untyped-def]
    from advisor.check.infra.names import load_names

    names = load_names()
    for e in names.names:
        assert e.accelerator in ctx.catalog.accelerators, e.name
        assert set(e.source) <= set(names.sources), e.name
    # hardware the file calls absent from the catalog must be absent: an entry left behind when the catalog gained the
    # chip (L40S) made the gate report it as unknown hardware, unpriced
    for u in names.unsupported:
        assert ctx.catalog.resolve(u.name) is None, f"{u.name} is in the catalog now; drop it from rules/names.yaml unsupported"


def test_mixed_directory() -> None:
    code, data = check(str(INFRA))
    res = by_address(data)
    want = {
        "Deployment/serving/vllm-llama3-8b-tpu": ("tpu-v6e", 8, 1, 2, 16),
        "JobSet/research/gemma3-multislice/slice": ("tpu-v6e", 8, 2, 2, 16),
        "LeaderWorkerSet/serving/vllm-deepseek-r1": ("h100", 16, 1, 1, 16),
        "llama31-lora": ("a100-40gb", 8, 1, 1, 8),
        "train-llama3-8b": ("tpu-v6e", 8, 1, 1, 8),
        "google_container_node_pool.tpu_v6e_serving": ("tpu-v6e", 8, 2, 2, 16),
        "google_container_node_pool.h100_training": ("h100", 8, 0, 20, 160),
        "google_tpu_v2_vm.v5e_benchmark": ("tpu-v5e", 16, 1, 1, 16),
        "module.eks.aws_eks_node_group.p5": ("h100", 8, 2, 4, 32),
    }
    for addr, (acc, count, lo, hi, total) in want.items():
        req = res[addr]["request"]
        assert (req["accelerator"], req["count"], req["replicas_min"], req["replicas_max"], req["total_chips"]) == (
            acc,
            count,
            lo,
            hi,
            total,
        ), (addr, req)
    assert res["llama31-lora"]["workload"].endswith("workloads.yaml#2")  # linked by match:
    assert res["module.eks.aws_eks_node_group.p5"]["workload"].endswith("workloads.yaml")  # linked by a tag
    assert "workload-not-linked" in rules(res["JobSet/research/gemma3-multislice/slice"])
    assert "workload-not-linked" not in rules(res["Deployment/serving/vllm-llama3-8b-tpu"])
    assert res["JobSet/research/gemma3-multislice/slice"]["request"]["pricing"] == "spot"
    azure = res["azurerm_kubernetes_cluster_node_pool.gpu"]
    assert azure["request"]["accelerator"] is None and "request-unknown-accelerator" in rules(azure)
    assert azure["proposal"]["request"]["cost_usd"] is None  # never priced as a neighbour
    assert res["aws_instance.old_g5"]["request"]["action"] == "delete" and res["aws_instance.old_g5"]["request"]["total_chips"] == 0
    assert [s["path"].endswith("web-frontend.yaml") for s in data["skipped_files"]] == [True]
    # located findings: manifests at a line, plan JSON at the resource's address line
    dep = res["Deployment/serving/vllm-llama3-8b-tpu"]
    assert dep["source"]["line"] == 6 and all(f["line"] > 1 for f in dep["findings"])
    assert all(r["source"]["line"] > 1 for a, r in res.items())
    # a plan found by walking the directory is the pull request's to write: its before is no baseline
    assert "diff" not in data
    assert any("not named on the command line" in n for n in res["google_container_node_pool.tpu_v6e_serving"]["notes"])
    assert code == 1
    # the workflow's own plan, named: it carries its own before
    code, data = check(str(INFRA), str(INFRA / "terraform" / "plan.json"))
    assert data["diff"]["baseline"] == "plan-prior-state"
    tpu_pool = next(c for c in data["diff"]["changes"] if c["key"].endswith("tpu_v6e_serving"))
    assert (tpu_pool["chips_before"], tpu_pool["chips_after"]) == (8, 16) and tpu_pool["cost_delta_usd"] > 0


def test_plan_pool_shapes(tmp_path: Path) -> None:
    p = tmp_path / "plan.json"
    p.write_text(
        plan(
            rc(
                "google_container_node_pool.regional",
                {"location": "us-central1", "node_count": 2, "node_config": [{"machine_type": "g2-standard-24"}]},
            ),
            rc(
                "google_container_node_pool.tpu",
                {
                    "location": "us-east5-b",
                    "node_count": 4,
                    "node_config": [{"machine_type": "ct6e-standard-4t"}],
                    "placement_policy": [{"type": "COMPACT", "tpu_topology": "4x4"}],
                },
            ),
            rc(
                "google_container_node_pool.bad_tpu",
                {
                    "location": "us-east5-b",
                    "node_count": 3,
                    "node_config": [{"machine_type": "ct6e-standard-4t"}],
                    "placement_policy": [{"tpu_topology": "4x4"}],
                },
            ),
            rc(
                "google_container_node_pool.unknown_later",
                {"location": "us-east5-b", "node_count": None, "node_config": [{"machine_type": "a2-highgpu-8g"}]},
                unknown={"node_count": True},
            ),
            rc(
                "google_container_node_pool.cpu",
                {"location": "us-east5-b", "node_count": 3, "node_config": [{"machine_type": "e2-standard-4"}]},
            ),
            rc("google_tpu_v2_vm.cfg", {"zone": "us-central2-b", "accelerator_config": [{"type": "V4", "topology": "2x2x2"}]}),
            rc("aws_instance.x[0]", {"instance_type": "p5e.48xlarge", "instance_market_options": [{"market_type": "spot"}]}),
        )
    )
    _, data = check(str(p))
    res = by_address(data)
    reg = res["google_container_node_pool.regional"]["request"]
    assert (reg["accelerator"], reg["count"], reg["replicas"]) == ("l4", 2, 6)  # node_count is per zone, 3 zones
    tpu = res["google_container_node_pool.tpu"]["request"]
    assert (tpu["count"], tpu["replicas"], tpu["hosts_per_replica"]) == (16, 1, 4)  # 4 hosts x 4 chips = one 4x4 slice
    assert "proposal-not-a-real-shape" in rules(res["google_container_node_pool.bad_tpu"])
    assert "request-unresolved" in rules(res["google_container_node_pool.unknown_later"])
    assert "google_container_node_pool.cpu" not in res
    assert res["google_tpu_v2_vm.cfg"]["request"]["total_chips"] == 8
    assert res["aws_instance.x[0]"]["request"]["pricing"] == "spot" and res["aws_instance.x[0]"]["request"]["region"] == "us-east-1"


def test_kubernetes_and_policy(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text((INFRA / "gke" / "vllm-tpu.yaml").read_text())
    (tmp_path / ".advisor.yaml").write_text(
        "judge_replicas: min\nlimits:\n  max_chips: 4\n  allowed_accelerators: [h100]\n  allowed_regions: [europe-*]\n  require_spot: "
        "{namespaces: [serving]}\n"
    )
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "json", str(m))
    data = json.loads(r.out)
    (res,) = data["results"]
    assert res["request"]["replicas"] == 1 and res["request"]["total_chips"] == 8  # the min end of the HPA
    assert {"policy-max-chips", "policy-accelerator-not-allowed", "policy-spot-required", "workload-not-linked"} <= rules(res)
    assert r.code == 1


def test_skypilot_forms(tmp_path: Path) -> None:
    cases = {
        "accelerators: H100:8\n": ("h100", 8),
        "accelerators: [L4:1, H100:1]\n": ("l4", 1),
        "accelerators: tpu-v5litepod-8\n": ("tpu-v5e", 8),
        "any_of:\n    - {accelerators: H100:8}\n    - {accelerators: L4:8}\n": ("l4", 8),
        "ordered:\n    - {accelerators: H100:8}\n    - {accelerators: L4:8}\n": ("h100", 8),
        "accelerators: V100:8\n": (None, 8),
    }
    for i, (res, (acc, n)) in enumerate(cases.items()):
        f = tmp_path / f"t{i}.yaml"
        f.write_text(f"name: t{i}\nnum_nodes: 2\nresources:\n  use_spot: true\n  {res}run: echo\n")
        _, data = check(str(f))
        (r,) = data["results"]
        assert (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas"]) == (acc, n, 2), (res, r["request"])
        assert r["request"]["pricing"] == "spot"


def test_baseline_counts_a_new_proposal_in_full(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(plan(rc("aws_instance.a", {"instance_type": "p5.48xlarge"})))
    new = tmp_path / "new.json"
    new.write_text(plan(rc("aws_instance.a", {"instance_type": "p5.48xlarge"}), rc("aws_instance.b", {"instance_type": "p5.48xlarge"})))
    _, data = check(str(new), "--baseline", str(old))
    d = data["diff"]
    b = next(c for c in d["changes"] if c["key"].endswith("aws_instance.b"))
    assert b["added"] and b["cost_delta_usd"] == b["cost_after_usd"] > 0 and (b["chips_before"], b["chips_after"]) == (0, 8)
    assert d["chips_before"] == 8 and d["chips_after"] == 16 and d["cost_delta_usd"] == b["cost_delta_usd"]
    (tmp_path / ".advisor.yaml").write_text("limits: {max_monthly_increase_usd: 1000}\n")
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "markdown", str(new), "--baseline", str(old))
    assert r.code == 1 and "policy-monthly-increase" in r.out and "→" in r.out


def test_profile_check_does_not_import_the_parsers() -> None:
    from .test_imports import modules

    loaded = modules("check", "--no-config", "profiles/proposals/ok-v6e-chatbot.yaml")
    assert (
        not {"advisor.check.infra.k8s", "advisor.check.infra.tfplan", "advisor.check.infra.skypilot", "advisor.check.infra.judge"} & loaded
    )


def _deep_json() -> str:
    return '{"format_version": "1.0", "resource_changes": ' + "[" * 100_000 + "]" * 100_000 + "}"


def _huge_plan() -> str:
    one = json.dumps(rc("aws_instance.x", {"instance_type": "p5.48xlarge", "user_data": "x" * 1000}))
    return '{"format_version": "1.0", "resource_changes": [' + ",".join([one] * 40_000) + "]}"


def _recursive_manifest() -> str:
    lines = ["apiVersion: v1", "kind: Pod", "metadata: {name: p}", "spec:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, tuple[str, str, str]] = {
    "deep-json": ("plan.json", _deep_json(), "nested deeper"),
    "huge-plan": ("plan.json", _huge_plan(), "limit"),
    "nan-in-plan": ("plan.json", '{"format_version": "1.0", "resource_changes": [NaN]}', "invalid JSON"),
    "huge-int-in-plan": ("plan.json", '{"format_version": "1.0", "x": ' + "9" * 5000 + "}", "invalid JSON"),
    "plan-wrong-version": ("plan.json", '{"format_version": "2.0", "resource_changes": []}', "format_version"),
    "plan-changes-not-list": ("plan.json", '{"format_version": "1.0", "resource_changes": {}}', "resource_changes"),
    "plan-wrong-types": (
        "plan.json",
        plan(rc("google_container_node_pool.p", {"node_count": "three", "node_config": [{"machine_type": "a3-highgpu-8g"}]})),
        "whole number",
    ),
    "plan-after-list": ("plan.json", plan(rc("aws_instance.p", [1, 2]))),  # type: ignore[arg-type]
    "manifest-alias-bomb": ("m.yaml", _recursive_manifest(), "alias expansion"),
    "manifest-bad-replicas": (
        "m.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: many\n  template: {spec: {containers: [{name: c, "
        "resources: {limits: {nvidia.com/gpu: 1}}}]}}\n",
        "spec.replicas",
    ),
    "manifest-negative-gpus": (
        "m.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: -3}}}]\n",
        "out of range",
    ),
    "manifest-containers-map": (
        "m.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers: {name: c}\n",
        "expected a list",
    ),
    "manifest-python-tag": ("m.yaml", "apiVersion: v1\nkind: Pod\nmetadata: !!python/object/apply:os.system [id]\n", "not allowed"),
    "skypilot-bad-count": ("t.yaml", "resources:\n  accelerators: H100:lots\nrun: echo\n", "count after ':'"),
    "skypilot-bad-nodes": ("t.yaml", "num_nodes: [1]\nresources:\n  accelerators: H100:8\n", "num_nodes"),
    "skypilot-any-of-scalar": ("t.yaml", "resources:\n  any_of: H100\n", "any_of"),
}
HOSTILE["plan-after-list"] = ("plan.json", plan(rc("aws_instance.p", [1, 2])), "change.after")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_infra(tmp_path: Path, name: str) -> None:
    fname, content, needle = HOSTILE[name]
    f = tmp_path / fname
    f.write_text(content)
    start = time.perf_counter()
    r = run_cli("check", "--no-config", str(f))
    assert time.perf_counter() - start < 10
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert r.code == 2, (name, r.code, r.out[-500:], r.err[-500:])
    first = r.err.splitlines()[0]
    assert first.startswith(f"{f}:") and ": error: " in first, first
    assert needle in r.err, (needle, r.err[:500])


def test_unrecognised_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "x"}')
    (tmp_path / "values.yaml").write_text("image: {repository: nginx}\n")
    (tmp_path / "main.tf").write_text('resource "google_tpu_v2_vm" "x" { accelerator_type = var.t }\n')
    (tmp_path / "p.yaml").write_text((ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml").read_text())
    (tmp_path / "network.tf").write_text('resource "google_compute_network" "vpc" { name = "vpc" }\n')
    code, data = check(str(tmp_path))
    assert code == 0 and len(data["results"]) == 2
    reasons = {Path(s["path"]).name: s["reason"] for s in data["skipped_files"]}
    assert set(reasons) == {"package.json", "values.yaml", "network.tf"} and "without accelerator resources" in reasons["network.tf"]
    # HCL is read (literals only): the TPU VM's accelerator_type is a variable without a default, so it is
    # unresolved, never the v2-8 default
    tpu = by_address(data)["google_tpu_v2_vm.x"]
    assert "request-unresolved" in rules(tpu) and tpu["request"]["hardware"] is None


def test_an_accelerator_terraform_source_cannot_evaluate_is_a_request_of_unknown_hardware(tmp_path: Path) -> None:
    """A PR that writes its GPUs' type as a variable without a default (guest_accelerator { type = var.gpu }) was passed over:
    the file skipped when alone, the resource dropped beside a resolved request. It is now a request of unknown hardware
    at the resource's line, request-unresolved; a machine type alone from a variable (a CPU web server, most often) is still
    only said, not a warning."""
    (tmp_path / "main.tf").write_text(
        'variable "mt" {}\nvariable "gpu" {}\n'
        'resource "google_compute_instance" "ok" {\n  machine_type = "a2-highgpu-1g"\n  zone = "us-central1-a"\n}\n'
        'resource "google_compute_instance" "hidden" {\n  machine_type = var.mt\n  zone = "us-central1-a"\n'
        '  guest_accelerator {\n    type  = var.gpu\n    count = 8\n  }\n}\n'
    )
    (tmp_path / "web.tf").write_text('variable "it" {}\nresource "aws_instance" "web" { instance_type = var.it }\n')
    _, data = check(str(tmp_path))
    got = by_address(data)
    assert set(got) == {"google_compute_instance.ok", "google_compute_instance.hidden"}
    hidden = got["google_compute_instance.hidden"]
    assert {"request-unknown-accelerator", "request-unresolved"} <= rules(hidden)
    assert hidden["request"]["accelerator"] is None and hidden["source"]["line"] == 7
    assert any("guest_accelerator.type" in f["message"] and "var.gpu" in f["message"] for f in hidden["findings"])
    web = {Path(s["path"]).name: s["reason"] for s in data["skipped_files"]}["web.tf"]
    assert "aws_instance.web: instance_type cannot be evaluated from the source" in web


def test_standard_input_is_read_once_as_a_file() -> None:
    """`advisor check -` reads a plan, manifest, task or profile from standard input."""
    import subprocess
    import sys

    plan = (ROOT / "profiles" / "proposals" / "infra" / "terraform" / "plan.json").read_bytes()
    p = subprocess.run([sys.executable, "-m", "advisor", "check", "-", "--format", "json", "--fail-on", "never"],
                       input=plan, capture_output=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    results = json.loads(p.stdout)["results"]
    assert results and all(r["source"]["path"] == "-" and r["source"]["kind"] == "terraform-plan" for r in results)
    bad = subprocess.run([sys.executable, "-m", "advisor", "check", "-"], input=b"a: [1\n", capture_output=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.decode().startswith("-:") and "Traceback" not in bad.stderr.decode()


_TPU_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: tpu-job-podslice
spec:
  backoffLimit: 0
  completions: {n}
  parallelism: {n}
  completionMode: Indexed
  template:
    spec:
      subdomain: headless-svc
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v5p-slice
        cloud.google.com/gke-tpu-topology: 2x2x4
      containers:
        - name: tpu-job
          image: python:3.10
          resources:
            limits:
              google.com/tpu: 4
"""


@pytest.mark.parametrize(("pods", "slices"), [(4, 1), (8, 2)])
def test_a_multi_host_tpu_job_is_one_slice_per_hosts_pods(tmp_path: Path, pods: int, slices: int) -> None:
    """GKE's multi-host TPU example: one Indexed Job whose parallel pods (4 chips each) are the hosts of a 2x2x4 v5p
    slice (16 chips, 4 hosts); it was read as 4 one-pod replicas of 4 chips and flagged as no real shape."""
    job = tmp_path / "job.yaml"
    job.write_text(_TPU_JOB.format(n=pods))
    _, data = check(str(job))
    res = by_address(data)["Job/default/tpu-job-podslice"]
    req = res["request"]
    assert (req["accelerator"], req["count"], req["replicas_min"], req["replicas_max"], req["total_chips"]) == (
        "tpu-v5p", 16, slices, slices, 16 * slices
    ), req
    assert "proposal-not-a-real-shape" not in rules(res)


def test_a_tpu_job_with_fewer_pods_than_its_slice_has_hosts_is_no_real_shape(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(_TPU_JOB.format(n=2))
    _, data = check(str(job))
    assert "proposal-not-a-real-shape" in rules(by_address(data)["Job/default/tpu-job-podslice"])


_RAY_AWS = """cluster_name: training
provider: {type: aws, region: us-west-2}
max_workers: 10
available_node_types:
  head:
    node_config: {InstanceType: m5.2xlarge}
    resources: {}
  gpu_worker:
    min_workers: 2
    max_workers: 8
    node_config:
      InstanceType: p4d.24xlarge
      InstanceMarketOptions: {MarketType: spot}
    resources: {"GPU": 8}
  mystery:
    node_config: {InstanceType: x9.metal}
    resources: {"GPU": 4}
head_node_type: head
"""

_RAY_GCP = """cluster_name: serve
provider: {type: gcp, region: us-central1, availability_zone: us-central1-a, project_id: null}
available_node_types:
  head_gpu:
    node_config:
      machineType: g2-standard-8
  workers:
    max_workers: 3
    node_config:
      machineType: a2-highgpu-1g
      guestAccelerators:
        - acceleratorType: projects/my-project/zones/us-central1-a/acceleratorTypes/nvidia-tesla-a100
          acceleratorCount: 1
      scheduling: [{preemptible: true}, {onHostMaintenance: TERMINATE}]
  tpu:
    min_workers: 1
    max_workers: 1
    node_config: {acceleratorType: v6e-8, runtimeVersion: v2-alpha-tpuv6e}
head_node_type: head_gpu
"""


def test_a_ray_cluster_launcher_config_is_read_node_type_by_node_type(tmp_path: Path) -> None:
    """ray up configs: one request per node type with accelerators; the head is one node, a worker type
    min_workers..max_workers (the cluster's max_workers by default); CPU node types ask for nothing; a node that
    advertises GPUs on hardware nobody names is unknown hardware, not dropped."""
    (tmp_path / "aws.yaml").write_text(_RAY_AWS)
    (tmp_path / "gcp.yaml").write_text(_RAY_GCP)
    _, data = check(str(tmp_path))
    res = by_address(data)
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], r["request"]["cloud"], r["request"]["region"]) for a, r in res.items()}
    assert got == {
        "training/gpu_worker": ("a100-40gb", 8, 2, 8, "spot", "aws", "us-west-2"),
        "training/mystery": (None, 4, 0, 10, "on-demand", "aws", "us-west-2"),
        "serve/head_gpu": ("l4", 1, 1, 1, "on-demand", "gcp", "us-central1"),
        "serve/workers": ("a100-40gb", 1, 0, 3, "spot", "gcp", "us-central1"),
        "serve/tpu": ("tpu-v6e", 8, 1, 1, "on-demand", "gcp", "us-central1"),
    }, got
    assert "request-unknown-accelerator" in rules(res["training/mystery"])
    assert res["training/gpu_worker"]["source"]["line"] == 8  # the node type's key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("provider: {type: aws}\navailable_node_types:\n  w: 5\n", "available_node_types.w: expected a mapping"),
        ("provider: {type: gcp}\navailable_node_types:\n  w:\n    node_config: {guestAccelerators: nvidia-l4}\n", "guestAccelerators"),
        ("provider: {type: aws}\navailable_node_types:\n  w:\n    max_workers: lots\n    node_config: {InstanceType: p5.48xlarge}\n",
         "max_workers: expected a whole number"),
        ("provider: {type: aws}\navailable_node_types:\n  w:\n    resources: {GPU: many}\n", "resources.GPU: expected a number"),
    ],
)
def test_a_bad_ray_cluster_config_is_an_input_error_at_its_place(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_text(text)
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2 and message in r.err and f"{f}:" in r.err, r.err


_BATCH_KINDS = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: pytorch-ddp
spec:
  minAvailable: 4
  schedulerName: volcano
  tasks:
    - replicas: 1
      name: master
      template:
        spec:
          nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
          containers: [{name: t, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]
    - replicas: 3
      name: worker
      template:
        spec:
          nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
          containers: [{name: t, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]
---
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: finetune
spec:
  entrypoint: train
  templates:
    - name: prep
      container: {image: x}
    - name: train
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      container: {image: x, resources: {limits: {nvidia.com/gpu: 2}}}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: llm
  namespace: serving
spec:
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers: [{image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_volcano_argo_and_kinds_no_reader_knows_are_read_never_passed_over(tmp_path: Path) -> None:
    """A Volcano Job (tasks x replicas pods) and an Argo Workflow (a pod per template) are read; a pod spec asking for
    accelerators in any other kind is counted once and flagged unresolved; a Knative Service (once such a kind, now read)
    without max-scale has no upper bound and is flagged unresolved. All three were skipped as 'Kubernetes manifest without
    accelerator requests'."""
    f = tmp_path / "m.yaml"
    f.write_text(_BATCH_KINDS)
    _, data = check(str(f))
    res = by_address(data)
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["total_chips"], r["request"]["always_on"])
           for a, r in res.items()}
    assert got == {
        "Job/default/pytorch-ddp/master": ("h100", 8, 8, False),
        "Job/default/pytorch-ddp/worker": ("h100", 24, 24, False),
        "Workflow/default/finetune/train": ("l4", 2, 2, False),
        "Service/serving/llm": ("l4", 1, None, True),  # Knative, read: no max-scale, so no upper bound (not read)
    }, got
    assert "request-unresolved" in rules(res["Service/serving/llm"])
    assert "request-unresolved" not in rules(res["Job/default/pytorch-ddp/worker"])
    assert not data["skipped_files"]


CLUSTERS_TF = """resource "google_container_cluster" "gpu" {
  name               = "gpu"
  location           = "us-central1-a"
  initial_node_count = 2
  node_config {
    machine_type = "a2-highgpu-1g"
    guest_accelerator {
      type  = "nvidia-tesla-a100"
      count = 1
    }
  }
  node_pool {
    name = "l4"
    autoscaling {
      min_node_count = 0
      max_node_count = 5
    }
    node_config {
      machine_type = "g2-standard-24"
      spot         = true
    }
  }
}

resource "google_container_cluster" "removed" {
  name                     = "removed"
  location                 = "us-central1"
  remove_default_node_pool = true
  initial_node_count       = 1
  node_config {
    machine_type = "a2-highgpu-8g"
  }
}

resource "azurerm_kubernetes_cluster" "aks" {
  name                = "aks"
  location            = "westeurope"
  resource_group_name = "rg"
  dns_prefix          = "aks"
  default_node_pool {
    name                 = "gpu"
    vm_size              = "Standard_ND96isr_H100_v5"
    auto_scaling_enabled = true
    min_count            = 1
    max_count            = 4
  }
}
"""


def test_a_clusters_own_node_pools_are_read(tmp_path: Path) -> None:
    """A GKE cluster's default pool (node_config + initial_node_count) and its inline node_pool blocks, and an AKS
    cluster's default_node_pool, declare GPU nodes as surely as a separate node-pool resource does; before, both
    cluster types were not read at all and an A100 default pool or an H100 AKS cluster passed unseen. Each pool is a
    request at the cluster's line, addressed CLUSTER.default_node_pool / CLUSTER.node_pool["NAME"]; a default pool
    the cluster removes (remove_default_node_pool) is not. The same from plan JSON, where an update that adds an
    inline pool creates it."""
    (tmp_path / "main.tf").write_text(CLUSTERS_TF)
    _, data = check(str(tmp_path / "main.tf"))
    res = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], r["source"]["line"]) for a, r in by_address(data).items()}
    assert res == {
        "google_container_cluster.gpu.default_node_pool": ("a100-40gb", 1, 2, 2, "on-demand", 1),  # a zonal cluster: one zone
        'google_container_cluster.gpu.node_pool["l4"]': ("l4", 2, 0, 5, "spot", 1),
        "azurerm_kubernetes_cluster.aks.default_node_pool": ("h100", 8, 1, 4, "on-demand", 35),
    }
    p = tmp_path / "plan.json"
    cluster = {"location": "us-central1-a", "initial_node_count": 1, "node_config": [{"machine_type": "e2-standard-4"}]}
    grown = {**cluster, "node_pool": [{"name": "a3", "node_count": 2, "node_config": [{"machine_type": "a3-highgpu-8g"}]}]}
    p.write_text(plan(rc("google_container_cluster.main", grown, ("update",), before=cluster)))
    _, data = check(str(p))
    [r] = data["results"]
    assert r["source"]["address"] == 'google_container_cluster.main.node_pool["a3"]'
    assert (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas"]) == ("h100", 8, 2)
    assert r["source"]["line"] > 1  # the cluster's "address" in the plan text


NAP_TF = """resource "google_container_cluster" "c" {
  name                     = "c"
  location                 = "us-central1"
  remove_default_node_pool = true
  initial_node_count       = 1
  cluster_autoscaling {
    enabled = true
    resource_limits {
      resource_type = "cpu"
      maximum       = 1000
    }
    resource_limits {
      resource_type = "nvidia-h100-80gb"
      maximum       = 64
    }
    resource_limits {
      resource_type = "tpu-v6e-slice"
      maximum       = 100
    }
  }
}
"""


def test_node_auto_provisioning_limits_are_read_as_what_gke_may_buy(tmp_path: Path) -> None:
    """A GKE cluster with node auto-provisioning creates accelerator node pools by itself, up to each accelerator's
    resource_limits maximum in the cluster: a PR raising that limit to 64 H100 buys as surely as a node pool and passed
    unseen. Each accelerator limit is one group of the maximum at the cluster's line, priced at it; cpu and memory limits
    are not requests; a maximum that is no real shape (100 v6e, a ceiling over slices GKE picks) is no shape finding. The
    same from plan JSON and from a Config Connector ContainerCluster."""
    (tmp_path / "main.tf").write_text(NAP_TF)
    _, data = check(str(tmp_path / "main.tf"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["source"]["line"]) for a, r in by_address(data).items()}
    assert got == {
        'google_container_cluster.c.cluster_autoscaling.resource_limits["nvidia-h100-80gb"]': ("h100", 64, 0, 1, 1),
        'google_container_cluster.c.cluster_autoscaling.resource_limits["tpu-v6e-slice"]': ("tpu-v6e", 100, 0, 1, 1),
    }
    for r in data["results"]:
        assert "proposal-not-a-real-shape" not in rules(r) and r["proposal"]["request"]["cost_usd"] > 0
    off = NAP_TF.replace("enabled = true", "enabled = false")
    (tmp_path / "main.tf").write_text(off)
    _, data = check(str(tmp_path / "main.tf"))
    assert data["results"] == []
    auto = {"enabled": True, "resource_limits": [{"resource_type": "nvidia-l4", "minimum": 0, "maximum": 16}]}
    (tmp_path / "main.tf").unlink()
    p = tmp_path / "plan.json"
    p.write_text(plan(rc("google_container_cluster.main", {"location": "us-east4", "cluster_autoscaling": [auto]})))
    _, data = check(str(p))
    [r] = data["results"]
    assert (r["request"]["accelerator"], r["request"]["count"], r["request"]["region"]) == ("l4", 16, "us-east4")
    p.unlink()
    (tmp_path / "cc.yaml").write_text(
        "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerCluster\nmetadata: {name: ml}\n"
        "spec:\n  location: us-central1\n  clusterAutoscaling:\n    enabled: true\n    resourceLimits:\n"
        "    - {resourceType: nvidia-tesla-a100, maximum: 32}\n"
    )
    _, data = check(str(tmp_path / "cc.yaml"))
    [r] = data["results"]
    assert (r["request"]["accelerator"], r["request"]["count"]) == ("a100-40gb", 32)


KARPENTER = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: h100}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [p5]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  limits: {cpu: 1000, nvidia.com/gpu: 64}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: a100-only}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a100]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [p4d.24xlarge, p5.48xlarge]}
  limits: {nvidia.com/gpu: "16"}
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: any-gpu}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a10g, l4]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: t4}
spec:
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [g4dn.xlarge, g4dn.2xlarge, m5.large]}
  limits: {resources: {nvidia.com/gpu: 10}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: cpu}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c6i]}
  limits: {cpu: 100}
"""


def test_karpenter_node_pools_are_read_as_what_they_may_buy(tmp_path: Path) -> None:
    """A Karpenter NodePool (v1, v1beta1) or Provisioner (v1alpha5) lets the cluster buy GPU nodes by itself up to its
    limits; such a pool passed unseen ("Kubernetes manifest without accelerator requests"). Each pool that allows
    accelerator machines is a request: hardware from its requirements, intersected (gpu-name a100 with p4d and p5 is p4d);
    count the accelerator limit, a ceiling (no shape finding); several accelerators are unknown hardware; no accelerator
    limit is request-unresolved, nothing bounds it. A CPU pool is no request. Hostile values are positioned input errors."""
    f = tmp_path / "karpenter.yaml"
    f.write_text(KARPENTER)
    _, data = check(str(f))
    got = {r["source"]["address"]: (r["request"]["accelerator"], r["request"]["count"], r["request"]["cloud"], r["request"]["pricing"],
                                     rules(r) & {"request-unknown-accelerator", "request-unresolved", "proposal-not-a-real-shape"})
           for r in data["results"]}
    assert got == {
        "NodePool/h100": ("h100", 64, "aws", "on-demand", set()),
        "NodePool/a100-only": ("a100-40gb", 16, "aws", "on-demand", set()),
        "NodePool/any-gpu": (None, None, "aws", "spot", {"request-unknown-accelerator", "request-unresolved"}),
        "Provisioner/t4": ("t4", 10, "aws", "on-demand", set()),
    }
    msgs = " ".join(m["message"] for r in data["results"] for m in r["findings"])
    assert "nothing bounds how many accelerators the pool buys" in msgs and "so the count and cost are not guessed" in msgs
    assert "Karpenter picks among them" in msgs
    reqs = ("requirements:\n        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [p5]}\n"
            "        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}")
    for bad, needle in (("nvidia.com/gpu: 64}", "nvidia.com/gpu: lots}"), (reqs, "requirements: 5")):
        f.write_text(KARPENTER.replace(bad, needle, 1))
        r = run_cli("check", "--no-config", str(f))
        assert r.code == 2 and r.err.startswith(f"{f}:") and ": error: spec." in r.err, r.err


TF_K8S = """variable "replicas" {
  default = 2
}
resource "kubectl_manifest" "vllm" {
  yaml_body = <<-YAML
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: vllm, namespace: serve}
    spec:
      replicas: 3
      template:
        spec:
          nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
          containers:
          - name: vllm
            resources: {limits: {nvidia.com/gpu: "2"}}
  YAML
}
resource "kubectl_manifest" "off" {
  count     = 0
  yaml_body = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}\n"
}
resource "kubernetes_manifest" "pool" {
  manifest = {
    apiVersion = "karpenter.sh/v1"
    kind       = "NodePool"
    metadata   = { name = "h100" }
    spec = {
      template = { spec = { requirements = [{ key = "karpenter.k8s.aws/instance-family", operator = "In", values = ["p5"] }] } }
      limits   = { "nvidia.com/gpu" = 32 }
    }
  }
}
resource "kubernetes_deployment_v1" "tgi" {
  metadata {
    name = "tgi"
  }
  spec {
    replicas = var.replicas
    template {
      metadata {
        labels = { app = "tgi" }
      }
      spec {
        node_selector = { "cloud.google.com/gke-accelerator" = "nvidia-tesla-a100" }
        container {
          name = "tgi"
          resources {
            limits = { "nvidia.com/gpu" = 4 }
          }
        }
      }
    }
  }
}
resource "kubectl_manifest" "templated" {
  yaml_body = templatefile("${path.module}/job.yaml", { resource = "nvidia.com/gpu", n = 8 })
}
resource "kubectl_manifest" "config" {
  yaml_body = templatefile("${path.module}/cm.yaml", {})
}
resource "kubectl_manifest" "encoded" {
  yaml_body = yamlencode({
    apiVersion = "batch/v1", kind = "Job", metadata = { name = "train" }
    spec = { parallelism = 2, template = { spec = {
      nodeSelector = { "cloud.google.com/gke-accelerator" = "nvidia-h100-80gb" }
      containers = [{ name = "t", resources = { limits = { "nvidia.com/gpu" = 8 } } }] } } }
  })
}
"""


def test_kubernetes_objects_terraform_applies_are_read(tmp_path: Path) -> None:
    """GPU workloads declared in Terraform (kubectl_manifest's yaml_body, kubernetes_manifest's manifest, the Kubernetes
    provider's kubernetes_deployment_v1) passed as "Terraform HCL without accelerator resources"; two of the swept
    repositories do this. Each object is read by the Kubernetes reader (a Karpenter pool too) at the resource's line,
    count / for_each and variable defaults respected; a manifest the source does not settle that names an accelerator
    resource is a request of unknown hardware, request-unresolved; one naming none is no request."""
    (tmp_path / "k8s.tf").write_text(TF_K8S)
    _, data = check(str(tmp_path / "k8s.tf"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_max"], r["source"]["line"],
               "request-unresolved" in rules(r)) for a, r in by_address(data).items()}
    assert got == {
        "kubectl_manifest.vllm/Deployment/serve/vllm": ("l4", 2, 3, 4, False),
        "kubernetes_manifest.pool/NodePool/h100": ("h100", 32, 1, 27, False),
        "kubernetes_deployment_v1.tgi/Deployment/default/tgi": ("a100-40gb", 4, 2, 38, False),
        "kubectl_manifest.templated": (None, None, 1, 60, True),
        "kubectl_manifest.encoded/Job/default/train": ("h100", 8, 2, 66, False),
    }
    hostile = TF_K8S.replace("replicas: 3", "replicas: !!python/object/apply:os.system [echo]")
    (tmp_path / "k8s.tf").write_text(hostile)
    r = run_cli("check", "--no-config", str(tmp_path / "k8s.tf"))
    assert r.code == 2 and r.err.startswith(f"{tmp_path / 'k8s.tf'}:") and "Traceback" not in r.err, r.err


BATCH_TF = """provider "aws" {
  region = "us-west-2"
}
resource "aws_batch_compute_environment" "gpu" {
  compute_environment_name = "gpu"
  type                     = "MANAGED"
  compute_resources {
    type          = "SPOT"
    instance_type = ["m5.large", "p4d.24xlarge"]
    max_vcpus     = 384
  }
}
resource "aws_batch_compute_environment" "family" {
  type = "MANAGED"
  compute_resources {
    type          = "EC2"
    instance_type = ["g5"]
    max_vcpus     = 64
  }
}
resource "aws_batch_compute_environment" "cpu" {
  type = "MANAGED"
  compute_resources {
    type          = "EC2"
    instance_type = ["optimal"]
    max_vcpus     = 256
  }
}
resource "aws_batch_compute_environment" "fargate" {
  type = "MANAGED"
  compute_resources {
    type      = "FARGATE"
    max_vcpus = 16
  }
}
"""


def test_aws_batch_compute_environments_that_launch_accelerators_are_read(tmp_path: Path) -> None:
    """An AWS Batch compute environment whose instance types (or families) carry accelerators launches them for queued
    jobs up to max_vcpus; it passed unseen. It is a request of that hardware (the first accelerator type; the others are
    alternatives), spot for SPOT, whose count is request-unresolved: instances = max_vcpus / the type's vCPUs, which the
    catalog does not hold, so it is said, never guessed. CPU-only (optimal) and Fargate environments are no request. The
    same from a Crossplane ComputeEnvironment."""
    (tmp_path / "batch.tf").write_text(BATCH_TF)
    _, data = check(str(tmp_path / "batch.tf"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_max"], r["request"]["pricing"],
               r["request"]["region"], "request-unresolved" in rules(r)) for a, r in by_address(data).items()}
    assert got == {
        "aws_batch_compute_environment.gpu": ("a100-40gb", 8, None, "spot", "us-west-2", True),
        "aws_batch_compute_environment.family": ("a10g", None, None, "on-demand", "us-west-2", True),
    }
    msg = " ".join(f["message"] for r in data["results"] for f in r["findings"])
    assert "max_vcpus = 384 bounds the instances it launches" in msg and "so the count and cost are not guessed" in msg
    (tmp_path / "batch.tf").unlink()
    (tmp_path / "xp.yaml").write_text(
        "apiVersion: batch.aws.upbound.io/v1beta1\nkind: ComputeEnvironment\nmetadata: {name: gpu}\nspec:\n  forProvider:\n"
        "    region: us-east-1\n    type: MANAGED\n    computeResources:\n    - {type: EC2, instanceType: [p5.48xlarge], maxVcpus: 192}\n"
    )
    _, data = check(str(tmp_path / "xp.yaml"))
    [r] = data["results"]
    assert (r["request"]["accelerator"], r["request"]["count"], r["request"]["region"]) == ("h100", 8, "us-east-1")


MORE_TF = """resource "google_tpu_node" "tpu" {
  name               = "t"
  zone               = "us-central1-b"
  accelerator_type   = "v5litepod-16"
  tensorflow_version = "2.15.0"
  scheduling_config {
    preemptible = true
  }
}
resource "google_vertex_ai_endpoint_with_model_garden_deployment" "gemma" {
  publisher_model_name = "publishers/google/models/gemma3@gemma-3-12b-it"
  location             = "us-central1"
  deploy_config {
    dedicated_resources {
      machine_spec {
        machine_type      = "g2-standard-24"
        accelerator_type  = "NVIDIA_L4"
        accelerator_count = 2
      }
      min_replica_count = 1
      max_replica_count = 3
    }
  }
}
resource "google_vertex_ai_endpoint_with_model_garden_deployment" "default" {
  publisher_model_name = "publishers/google/models/paligemma@paligemma-224-float32"
  location             = "us-central1"
  model_config { accept_eula = true }
}
resource "azurerm_virtual_machine" "legacy" {
  name     = "vm"
  location = "eastus"
  vm_size  = "Standard_NC24ads_A100_v4"
}
resource "azurerm_batch_pool" "fixed" {
  name    = "p"
  vm_size = "Standard_NC24ads_A100_v4"
  fixed_scale {
    target_dedicated_nodes    = 1
    target_low_priority_nodes = 4
  }
}
resource "azurerm_batch_pool" "auto" {
  name    = "q"
  vm_size = "Standard_ND96isr_H100_v5"
  auto_scale {
    evaluation_interval = "PT15M"
    formula             = "$TargetDedicatedNodes = 2;"
  }
}
resource "azurerm_batch_pool" "cpu" {
  name    = "c"
  vm_size = "Standard_D4s_v5"
  fixed_scale { target_dedicated_nodes = 10 }
}
"""


def test_tpu_nodes_model_garden_legacy_azure_vms_and_batch_pools_are_read(tmp_path: Path) -> None:
    """Four more ways to buy accelerators in Terraform that passed unseen: the legacy TPU Node API (google_tpu_node), a
    Vertex AI endpoint with a Model Garden deployment (its deploy_config machine spec; without one, Model Garden's
    default hardware: unknown, request-unresolved), the legacy azurerm_virtual_machine and Azure Batch pools (fixed_scale
    dedicated + low-priority nodes, low priority as spot; an auto_scale formula is request-unresolved). A CPU pool is no
    request."""
    (tmp_path / "main.tf").write_text(MORE_TF)
    _, data = check(str(tmp_path / "main.tf"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], "request-unresolved" in rules(r)) for a, r in by_address(data).items()}
    assert got == {
        "google_tpu_node.tpu": ("tpu-v5e", 16, 1, 1, "spot", False),
        "google_vertex_ai_endpoint_with_model_garden_deployment.gemma": ("l4", 2, 1, 3, "on-demand", False),
        "google_vertex_ai_endpoint_with_model_garden_deployment.default": (None, None, 1, 1, "on-demand", True),
        "azurerm_virtual_machine.legacy": (None, 1, 1, 1, "on-demand", False),
        "azurerm_batch_pool.fixed": (None, 1, 5, 5, "spot", False),
        "azurerm_batch_pool.auto": ("h100", 8, 0, None, "on-demand", True),
    }
    assert "request-unknown-accelerator" in rules(by_address(data)["azurerm_virtual_machine.legacy"])


DRA = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-h100, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 2
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: shared, namespace: ml}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: gpu.nvidia.com, allocationMode: All}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: nic, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: nic, exactly: {deviceClassName: dranet}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: vllm, resources: {claims: [{name: gpu}]}}
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: two-h100}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  parallelism: 4
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
      - {name: t, resources: {claims: [{name: gpu}]}}
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: elsewhere}
---
apiVersion: v1
kind: Pod
metadata: {name: all, namespace: ml}
spec:
  containers:
  - {name: c, resources: {claims: [{name: gpu}]}}
  resourceClaims:
  - {name: gpu, resourceClaimName: shared}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: admin, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: all, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}}
---
apiVersion: v1
kind: Pod
metadata: {name: monitor, namespace: ml}
spec:
  containers:
  - {name: dcgm, resources: {claims: [{name: all}]}}
  resourceClaims:
  - {name: all, resourceClaimTemplateName: admin}
---
apiVersion: v1
kind: Pod
metadata: {name: imex, namespace: ml}
spec:
  nodeSelector: {cloud.google.com/gke-accelerator: nvidia-gb200}
  containers:
  - {name: c, resources: {limits: {nvidia.com/gpu: 4}, claims: [{name: channel}]}}
  resourceClaims:
  - {name: channel, resourceClaimTemplateName: compute-domain-channel}
---
apiVersion: v1
kind: Pod
metadata: {name: net, namespace: ml}
spec:
  containers:
  - {name: c, resources: {claims: [{name: nic}]}}
  resourceClaims:
  - {name: nic, resourceClaimTemplateName: nic}
"""


def test_pods_asking_for_gpus_through_dynamic_resource_allocation_are_read(tmp_path: Path) -> None:
    """With Dynamic Resource Allocation (resource.k8s.io, GA in Kubernetes 1.34) a pod asks for GPUs through
    resourceClaims naming a ResourceClaimTemplate / ResourceClaim, and no nvidia.com/gpu appears: such pods passed as
    asking for none. The claim's accelerator device class and count are read (v1 `exactly` and v1beta1), a CEL selector's
    productName gives the model; a claim the file does not hold and allocationMode All are request-unresolved, never
    zero, unless the pod asks for nvidia.com/gpu itself (then a claim elsewhere is its NICs or NVLink domain channel, as in
    the swept GB200 recipes, and the count stands); a shared ResourceClaim is counted per pod with a note; a claim of
    another device class (a NIC) or with admin access (a monitoring agent) is no request."""
    (tmp_path / "dra.yaml").write_text(DRA)
    _, data = check(str(tmp_path / "dra.yaml"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_max"], "request-unresolved" in rules(r))
           for a, r in by_address(data).items()}
    assert got == {
        "Deployment/ml/vllm": ("h100", 2, 3, False),
        "Job/ml/train": ("l4", None, 4, True),
        "Pod/ml/all": (None, None, 1, True),
        "Pod/ml/imex": ("gb200", 4, 1, False),  # a pod asking nvidia.com/gpu: a claim elsewhere is its NVLink channel
    }
    msgs = " ".join(f["message"] for r in data["results"] for f in r["findings"])
    assert "ResourceClaimTemplate elsewhere, which the files checked do not hold" in msgs and "allocationMode: All" in msgs
    assert any("shared by the pods that name it" in n for r in data["results"] for n in r.get("notes", []))


SPEND_TF = """resource "google_workbench_instance" "wb" {
  name     = "wb"
  location = "us-central1-a"
  gce_setup {
    machine_type = "n1-standard-8"
    accelerator_configs {
      type       = "NVIDIA_TESLA_T4"
      core_count = 2
    }
  }
}

resource "google_notebooks_instance" "nb" {
  name         = "nb"
  location     = "us-west1-b"
  machine_type = "a2-highgpu-1g"
}

resource "google_compute_reservation" "h100" {
  name = "h100"
  zone = "us-central1-c"
  specific_reservation {
    count = 16
    instance_properties {
      machine_type = "a3-highgpu-8g"
    }
  }
}

resource "aws_ec2_capacity_reservation" "p5" {
  instance_type     = "p5.48xlarge"
  instance_platform = "Linux/UNIX"
  availability_zone = "eu-west-2b"
  instance_count    = 4
}

resource "google_cloud_run_v2_service" "llm" {
  name     = "llm"
  location = "europe-west4"
  template {
    containers {
      image = "vllm/vllm-openai"
      resources {
        limits = { cpu = "8", memory = "32Gi", "nvidia.com/gpu" = "1" }
      }
    }
    node_selector {
      accelerator = "nvidia-l4"
    }
    scaling {
      max_instance_count = 3
    }
  }
}

resource "google_vertex_ai_deployment_resource_pool" "pool" {
  region = "us-central1"
  name   = "pool"
  dedicated_resources {
    machine_spec {
      machine_type      = "g2-standard-24"
      accelerator_type  = "NVIDIA_L4"
      accelerator_count = 2
    }
    min_replica_count = 1
    max_replica_count = 4
  }
}

resource "google_cloud_run_v2_service" "web" {
  name     = "web"
  location = "europe-west4"
  template {
    containers {
      image = "nginx"
    }
  }
}
"""


def test_notebooks_reservations_and_cloud_run_gpus_are_read(tmp_path: Path) -> None:
    """Accelerators a pull request buys outside a VM, a node pool or a cluster: a Vertex AI Workbench instance
    (NVIDIA_TESLA_T4 x 2, the Vertex spelling), a user-managed notebook (a2-highgpu-1g), a Compute Engine reservation
    (16 x a3-highgpu-8g, billed used or not), an EC2 capacity reservation (4 x p5.48xlarge in eu-west-2b) and a Cloud
    Run service with an L4 per instance (0 to 3 instances), a Vertex AI deployment resource pool (NVIDIA_L4 x 2, 1 to 4
    replicas). Before, all six passed unseen; a Cloud Run service without a GPU is not a request."""
    (tmp_path / "main.tf").write_text(SPEND_TF)
    _, data = check(str(tmp_path / "main.tf"))
    res = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], r["request"]["region"]) for a, r in by_address(data).items()}
    assert res == {
        "google_workbench_instance.wb": ("t4", 2, 1, 1, "on-demand", "us-central1"),
        "google_notebooks_instance.nb": ("a100-40gb", 1, 1, 1, "on-demand", "us-west1"),
        "google_compute_reservation.h100": ("h100", 8, 16, 16, "reservation", "us-central1"),
        "aws_ec2_capacity_reservation.p5": ("h100", 8, 4, 4, "reservation", "eu-west-2"),
        "google_cloud_run_v2_service.llm": ("l4", 1, 0, 3, "on-demand", "europe-west4"),
        "google_vertex_ai_deployment_resource_pool.pool": ("l4", 2, 1, 4, "on-demand", "us-central1"),
    }
    assert all(r["proposal"]["request"]["cost_usd"] for r in data["results"])  # priced, every one
    run = by_address(data)["google_cloud_run_v2_service.llm"]
    assert "request-unresolved" not in rules(run)
    (tmp_path / "main.tf").write_text(SPEND_TF.replace("      max_instance_count = 3\n", ""))
    _, data = check(str(tmp_path / "main.tf"))
    assert "request-unresolved" in rules(by_address(data)["google_cloud_run_v2_service.llm"])  # Cloud Run's default maximum


ML_TF = """provider "aws" {
  region = "us-west-2"
}

resource "aws_sagemaker_endpoint_configuration" "llm" {
  name = "llm"
  production_variants {
    variant_name           = "primary"
    model_name             = "llama"
    instance_type          = "ml.g5.12xlarge"
    initial_instance_count = 2
  }
  production_variants {
    variant_name = "serverless"
    model_name   = "small"
    serverless_config {
      max_concurrency   = 5
      memory_size_in_mb = 2048
    }
  }
}

resource "aws_sagemaker_notebook_instance" "nb" {
  name          = "nb"
  role_arn      = "arn"
  instance_type = "ml.p3.2xlarge"
}

resource "azurerm_machine_learning_compute_cluster" "train" {
  name                          = "train"
  location                      = "eastus"
  vm_priority                   = "LowPriority"
  vm_size                       = "STANDARD_NC24ADS_A100_V4"
  machine_learning_workspace_id = "x"
  scale_settings {
    min_node_count                       = 0
    max_node_count                       = 4
    scale_down_nodes_after_idle_duration = "PT30S"
  }
}

resource "azurerm_machine_learning_compute_instance" "dev" {
  name                          = "dev"
  machine_learning_workspace_id = "x"
  virtual_machine_size          = "Standard_NC4as_T4_v3"
}
"""


def test_sagemaker_and_azure_ml_compute_are_read(tmp_path: Path) -> None:
    """Managed ML platforms buy the same accelerators: a SageMaker endpoint's instance-backed production variant
    (ml.g5.12xlarge x 2: 4 A10G each; the serverless variant is no request), a SageMaker notebook (ml.p3.2xlarge: V100,
    not in the catalog, so unknown and unpriced, never a neighbour), an Azure ML compute cluster (0 to 4 low-priority
    A100 80GB PCIe nodes: unknown) and compute instance (NC4as_T4_v3). Before, all four passed unseen."""
    (tmp_path / "main.tf").write_text(ML_TF)
    _, data = check(str(tmp_path / "main.tf"))
    res = {a: (r["request"]["hardware"], r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"],
               r["request"]["replicas_max"], r["request"]["pricing"], r["source"]["line"]) for a, r in by_address(data).items()}
    assert res == {
        'aws_sagemaker_endpoint_configuration.llm.production_variants["primary"]': ("ml.g5.12xlarge", "a10g", 4, 2, 2, "on-demand", 5),
        "aws_sagemaker_notebook_instance.nb": ("ml.p3.2xlarge", None, 1, 1, 1, "on-demand", 23),
        "azurerm_machine_learning_compute_cluster.train": ("STANDARD_NC24ADS_A100_V4", None, 1, 0, 4, "spot", 29),
        "azurerm_machine_learning_compute_instance.dev": ("Standard_NC4as_T4_v3", "t4", 1, 1, 1, "on-demand", 42),
    }
    variant = by_address(data)['aws_sagemaker_endpoint_configuration.llm.production_variants["primary"]']
    assert variant["request"]["region"] == "us-west-2"
    assert "request-unknown-accelerator" in rules(by_address(data)["aws_sagemaker_notebook_instance.nb"])


KRM = """apiVersion: container.cnrm.cloud.google.com/v1beta1
kind: ContainerNodePool
metadata:
  name: gpu-pool
  labels: {advisor-workload: chatbot}
spec:
  location: us-central1-a
  nodeCount: 2
  nodeConfig:
    machineType: a2-highgpu-1g
    guestAccelerator:
      - type: nvidia-tesla-a100
        count: 1
  clusterRef:
    name: main
---
apiVersion: container.gcp.upbound.io/v1beta2
kind: NodePool
metadata:
  name: xp-gpu
spec:
  forProvider:
    location: us-central1
    nodeCount: 1
    nodeConfig:
      machineType: g2-standard-24
      spot: true
---
apiVersion: eks.aws.upbound.io/v1beta1
kind: NodeGroup
metadata:
  name: xp-eks
spec:
  forProvider:
    region: eu-west-1
    instanceTypes: [p5.48xlarge]
    scalingConfig:
      - {desiredSize: 2, maxSize: 4, minSize: 1}
---
apiVersion: containerservice.azure.upbound.io/v1beta1
kind: KubernetesCluster
metadata:
  name: aks
spec:
  forProvider:
    location: westeurope
    defaultNodePool:
      - {name: gpu, vmSize: Standard_ND96isr_H100_v5, nodeCount: 2}
---
apiVersion: container.cnrm.cloud.google.com/v1beta1
kind: ContainerNodePool
metadata:
  name: cpu-pool
spec:
  location: us-central1-a
  nodeCount: 3
  nodeConfig: {machineType: e2-standard-4}
"""


def test_cloud_resources_declared_as_kubernetes_objects_are_read(tmp_path: Path) -> None:
    """A GitOps platform repository buys nodes with Config Connector (ContainerNodePool: spec.nodeConfig) or Crossplane
    (spec.forProvider: a GKE NodePool, an EKS NodeGroup, an AKS cluster's default pool), the Terraform resources'
    arguments in camelCase. Before, the file was skipped as 'Kubernetes manifest without accelerator requests' and
    all of it passed unseen. Each is now read by the plan reader of the resource it stands for, at metadata.name;
    a CPU pool is not a request."""
    (tmp_path / "infra.yaml").write_text(KRM)
    _, data = check(str(tmp_path / "infra.yaml"))
    res = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], r["request"]["region"], r["source"]["line"]) for a, r in by_address(data).items()}
    assert res == {
        "ContainerNodePool/default/gpu-pool": ("a100-40gb", 1, 2, 2, "on-demand", "us-central1", 4),
        "NodePool/default/xp-gpu": ("l4", 2, 3, 3, "spot", "us-central1", 20),  # a regional pool: node_count per zone x 3
        "NodeGroup/default/xp-eks": ("h100", 8, 1, 4, "on-demand", "eu-west-1", 32),
        "KubernetesCluster/default/aks.default_node_pool": ("h100", 8, 2, 2, "on-demand", "westeurope", 43),
    }
    from advisor.api import Context
    from advisor.check.infra import k8s
    from advisor.check.infra.names import name_index
    from advisor.yamlsrc import load_documents

    parsed = k8s.parse(load_documents(KRM, "infra.yaml"), name_index(Context.load().catalog))
    assert {r.address: r.link for r in parsed.requests}["ContainerNodePool/default/gpu-pool"] == "chatbot"  # metadata.labels


EKSCTL = """apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata:
  name: ml
  region: eu-west-1
nodeGroups:
  - name: cpu
    instanceType: m5.xlarge
    desiredCapacity: 2
  - name: gpu-spot
    minSize: 0
    maxSize: 4
    instancesDistribution:
      instanceTypes: ["g5.12xlarge"]
      onDemandBaseCapacity: 0
      onDemandPercentageAboveBaseCapacity: 0
  - name: trainium
    instanceType: trn1.32xlarge
    desiredCapacity: 1
managedNodeGroups:
  - name: h100
    instanceType: p5.48xlarge
    labels: {advisor-workload: pretrain}
  - name: new-family
    instanceTypes: [p3dn.24xlarge]
    minSize: 1
    maxSize: 2
"""


def test_an_eksctl_cluster_config_is_read_node_group_by_node_group(tmp_path: Path) -> None:
    """eksctl's ClusterConfig is how many teams create EKS GPU nodes (eksctl-io/eksctl examples/23: spot g5 / p3 / p3dn
    groups). Before, it was skipped as a manifest without accelerator requests. Each node group is now read as the
    aws_eks_node_group it creates, in metadata.region, at its name: an all-spot instancesDistribution is spot, a group
    that sets no size gets eksctl's 2 nodes; a CPU group is no request. An accelerator family the catalog does not
    hold (Trainium, an AWS P-family size the name index lacks) is an unknown accelerator, never passed over (a Trainium
    size keeps the device count the Neuron docs give)."""
    (tmp_path / "cluster.yaml").write_text(EKSCTL)
    _, data = check(str(tmp_path / "cluster.yaml"))
    res = {a: (r["request"]["hardware"], r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"],
               r["request"]["replicas_max"], r["request"]["pricing"], r["request"]["region"], r["source"]["line"])
           for a, r in by_address(data).items()}
    assert res == {
        "ClusterConfig/ml/nodeGroups/gpu-spot": ("g5.12xlarge", "a10g", 4, 0, 4, "spot", "eu-west-1", 10),
        "ClusterConfig/ml/nodeGroups/trainium": ("trn1.32xlarge", None, 16, 1, 1, "on-demand", "eu-west-1", 17),
        "ClusterConfig/ml/managedNodeGroups/h100": ("p5.48xlarge", "h100", 8, 2, 2, "on-demand", "eu-west-1", 21),
        "ClusterConfig/ml/managedNodeGroups/new-family": ("p3dn.24xlarge", None, None, 1, 2, "on-demand", "eu-west-1", 24),
    }
    found = by_address(data)
    assert "request-unknown-accelerator" in rules(found["ClusterConfig/ml/nodeGroups/trainium"])
    assert any("Trainium" in f["message"] for f in found["ClusterConfig/ml/nodeGroups/trainium"]["findings"])
    assert any("eksctl's default of 2 nodes" in n for n in found["ClusterConfig/ml/managedNodeGroups/h100"]["notes"])


def test_machine_types_of_an_accelerator_family_the_index_lacks_are_unknown_not_cpu(tmp_path: Path) -> None:
    """A name the index does not know was taken for a machine without an accelerator and passed over: a new GPU size
    (g4-standard-48, Standard_NV36ads_A10_v5, p3dn.24xlarge) or a chip the catalog lacks (inf2, trn2) passed unseen.
    rules/names.yaml unsupported_families: those families' names are unknown accelerators; CPU machines stay none."""
    (tmp_path / "plan.json").write_text(plan(
        rc("aws_instance.inf", {"instance_type": "inf2.48xlarge"}),
        rc("aws_instance.web", {"instance_type": "m5.xlarge"}),
        rc("google_compute_instance.rtx", {"machine_type": "g4-standard-48", "zone": "us-central1-a"}),
        rc("google_compute_instance.small", {"machine_type": "g1-small", "zone": "us-central1-a"}),
        rc("azurerm_linux_virtual_machine.nv", {"size": "Standard_NV36ads_A10_v5", "location": "eastus"}),
        rc("azurerm_linux_virtual_machine.d", {"size": "Standard_D4s_v3", "location": "eastus"}),
    ))
    _, data = check(str(tmp_path / "plan.json"))
    found = by_address(data)
    assert set(found) == {"aws_instance.inf", "google_compute_instance.rtx", "azurerm_linux_virtual_machine.nv"}
    assert all("request-unknown-accelerator" in rules(r) for r in found.values())


CFN_STACK = """AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  GpuType:
    Type: String
    Default: p4d.24xlarge
  Nodes:
    Type: Number
  Ami:
    Type: AWS::EC2::Image::Id
Resources:
  Trainer:
    Type: AWS::EC2::Instance
    Properties:
      InstanceType: !Ref GpuType
      ImageId: !Ref Ami
      Tags:
        - Key: advisor-workload
          Value: pretrain
  Pool:
    Type: AWS::EKS::Nodegroup
    Properties:
      ClusterName: !Ref Cluster
      InstanceTypes: [g5.12xlarge]
      CapacityType: SPOT
      ScalingConfig:
        MinSize: 0
        MaxSize: !Ref Nodes
        DesiredSize: "2"
  Endpoint:
    Type: AWS::SageMaker::EndpointConfig
    Properties:
      ProductionVariants:
        - VariantName: main
          ModelName: !GetAtt Model.ModelName
          InstanceType: ml.g5.2xlarge
          InitialInstanceCount: 3
  Mystery:
    Type: AWS::EC2::Instance
    Properties:
      InstanceType: !ImportValue shared-gpu-type
  Web:
    Type: AWS::EC2::Instance
    Properties:
      InstanceType: t3.micro
"""
CFN_JSON = """{
  "Resources": {
    "GpuNodes": {
      "Type": "AWS::EKS::Nodegroup",
      "Properties": {
        "ClusterName": {"Ref": "Cluster"},
        "InstanceTypes": ["p5.48xlarge"],
        "ScalingConfig": {"MinSize": 1, "MaxSize": 2, "DesiredSize": 1}
      }
    },
    "Bucket": {"Type": "AWS::S3::Bucket"}
  }
}
"""


def test_cloudformation_templates_are_read(tmp_path: Path) -> None:
    """AWS CloudFormation (YAML in its short form with !Ref / !GetAtt / !ImportValue, and JSON as CDK synthesises it)
    buys GPU instances, EKS node groups and SageMaker endpoints. Before, the YAML was skipped as 'YAML the gate does
    not read' (its tags) and the JSON as neither plan nor manifest: all of it passed unseen. Each resource is now read
    by the plan reader of its Terraform twin at its logical id: !Ref to a parameter reads its Default, a count that
    needs the deployment (!Ref Nodes, no default) is request-unresolved, and an instance type chosen at deployment
    (!ImportValue) is a request of unknown hardware; a t3.micro and an S3 bucket are not requests."""
    (tmp_path / "stack.yaml").write_text(CFN_STACK)
    (tmp_path / "cdk.template.json").write_text(CFN_JSON)
    _, data = check(str(tmp_path))
    res = {a: (r["request"]["hardware"], r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_min"],
               r["request"]["replicas_max"], r["request"]["pricing"]) for a, r in by_address(data).items()}
    assert res == {
        "Trainer": ("p4d.24xlarge", "a100-40gb", 8, 1, 1, "on-demand"),  # !Ref GpuType: its Default
        "Pool": ("g5.12xlarge", "a10g", 4, 0, 2, "spot"),
        'Endpoint.production_variants["main"]': ("ml.g5.2xlarge", "a10g", 1, 3, 3, "on-demand"),
        "Mystery": ("Fn::ImportValue shared-gpu-type", None, None, 1, 1, "on-demand"),
        "GpuNodes": ("p5.48xlarge", "h100", 8, 1, 2, "on-demand"),
    }
    found = by_address(data)
    assert "request-unresolved" in rules(found["Pool"]) and "request-unresolved" in rules(found["Mystery"])
    assert "request-unknown-accelerator" in rules(found["Mystery"])
    assert not data["invalid"] and not data["skipped_files"]


AKS_MODULE_TF = """module "aks" {
  source              = "Azure/aks/azurerm"
  version             = "9.4.1"
  resource_group_name = "rg"
  location            = "westeurope"
  prefix              = "ml"
  agents_size         = "Standard_D4s_v3"
  agents_count        = 2
  node_pools = {
    gpu = {
      name                 = "gpu"
      vm_size              = "Standard_ND96isr_H100_v5"
      auto_scaling_enabled = true
      min_count            = 0
      max_count            = 4
      priority             = "Spot"
    }
    t4 = {
      name       = "t4"
      vm_size    = "Standard_NC4as_T4_v3"
      node_count = 3
    }
  }
}

module "aks2" {
  source      = "github.com/Azure/terraform-azurerm-aks?ref=9.0.0"
  agents_size = "Standard_NC24ads_A100_v4"
  location    = "eastus"
}
"""


def test_a_call_of_the_aks_module_is_read_as_the_pools_it_creates(tmp_path: Path) -> None:
    """The Azure/aks/azurerm registry module (and its GitHub source) declares the cluster's default pool through
    agents_size / agents_count and more pools through a node_pools map; before, a call of it was not read and an
    H100 spot pool or an A100 default pool passed unseen. Each is now the resource the module creates, at the module
    block: a CPU default pool is no request."""
    (tmp_path / "main.tf").write_text(AKS_MODULE_TF)
    _, data = check(str(tmp_path / "main.tf"))
    res = {a: (r["request"]["hardware"], r["request"]["count"], r["request"]["replicas_min"], r["request"]["replicas_max"],
               r["request"]["pricing"], r["request"]["region"], r["source"]["line"]) for a, r in by_address(data).items()}
    pools = "module.aks.azurerm_kubernetes_cluster_node_pool.node_pool_create_before_destroy"
    assert res == {
        f'{pools}["gpu"]': ("Standard_ND96isr_H100_v5", 8, 0, 4, "spot", "westeurope", 1),
        f'{pools}["t4"]': ("Standard_NC4as_T4_v3", 1, 3, 3, "on-demand", "westeurope", 1),
        "module.aks2.azurerm_kubernetes_cluster.main.default_node_pool": ("Standard_NC24ads_A100_v4", 1, 2, 2, "on-demand", "eastus", 26),
    }


def test_cloudformation_properties_chosen_by_a_condition_are_a_request_of_unknown_hardware(tmp_path: Path) -> None:
    """Properties: !If [Big, {InstanceType: p5.48xlarge}, {InstanceType: g5.xlarge}] decides the machine at deployment:
    one request of unknown hardware, request-unresolved (it was an internal error), and a resource with a Condition is
    counted with a note."""
    (tmp_path / "stack.yaml").write_text("""AWSTemplateFormatVersion: "2010-09-09"
Conditions:
  Big: !Equals [!Ref Env, prod]
Resources:
  X:
    Type: AWS::EC2::Instance
    Properties: !If
      - Big
      - {InstanceType: p5.48xlarge}
      - {InstanceType: g5.xlarge}
  Y:
    Type: AWS::EC2::Instance
    Condition: Big
    Properties:
      InstanceType: g6.xlarge
""")
    _, data = check(str(tmp_path / "stack.yaml"))
    found = by_address(data)
    assert not data["invalid"] and set(found) == {"X", "Y"}
    assert found["X"]["request"]["accelerator"] is None and {"request-unknown-accelerator", "request-unresolved"} <= rules(found["X"])
    assert found["Y"]["request"]["accelerator"] == "l4" and any("condition Big" in n for n in found["Y"]["notes"])


def test_a_cloud_run_limits_that_is_no_map_is_an_input_error_at_its_resource(tmp_path: Path) -> None:
    """limits = ["x"] in a Cloud Run container (a PR author's file) was an internal error; it is a positioned input error."""
    (tmp_path / "run.tf").write_text("""resource "google_cloud_run_v2_service" "r" {
  template {
    containers {
      resources {
        limits = ["x"]
      }
    }
    node_selector {
      accelerator = "nvidia-l4"
    }
  }
}
""")
    r = run_cli("check", "--no-config", str(tmp_path / "run.tf"))
    assert r.code == 2 and "run.tf:1:1: error: google_cloud_run_v2_service.r: template.containers.resources.limits: expected a map" in r.err
    assert "internal error" not in r.err + r.out


FUZZ_FOUND = {  # (file name, content, what the output must say): type confusions a mutation fuzzer found
    "plan-configuration-resources-not-a-list": (
        "plan.json",
        json.dumps({"format_version": "1.2", "resource_changes": [], "configuration": {"root_module": {"resources": True}}}),
        None,
    ),
    "kustomization-patches-not-a-list": (
        "kustomization.yaml", "patches: 5\n", "kustomization.yaml:1:10: error: patches: expected a list"),
    "kustomization-resources-a-string": ("kustomization.yaml", "resources: d.yaml\nbases: 5\n", None),
    "cloud-run-containers-not-a-list": (
        "run.tf",
        'resource "google_cloud_run_v2_service" "r" {\n  template {\n    containers = 5\n    node_selector {\n'
        '      accelerator = "nvidia-l4"\n    }\n  }\n}\n',
        "template.containers: expected a list of blocks",
    ),
}


@pytest.mark.parametrize("name", sorted(FUZZ_FOUND))
def test_type_confusions_a_fuzzer_found_are_no_internal_errors(tmp_path: Path, name: str) -> None:
    """A value of the wrong type where a list belongs (a plan's configuration resources, a kustomization's patches or
    resources, a Cloud Run template's containers) raised TypeError, reported as an internal error. Each is now read past
    (auxiliary data) or a positioned input error."""
    fname, content, needle = FUZZ_FOUND[name]
    (tmp_path / fname).write_text(content)
    (tmp_path / "d.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path / fname))
    assert "internal error" not in r.out + r.err and "Traceback" not in r.err, r.out + r.err
    if needle:  # a positioned input error: in the report's invalid files, or alone on stderr when nothing else was read
        said = r.err + " ".join(f"{Path(b['path']).name}:{e['line']}:{e['column']}: error: {e['message']}"
                                for b in (json.loads(r.out)["invalid"] if r.out.strip() else []) for e in b["errors"])
        assert r.code == 2 and needle in said, r.out + r.err


TFVARS_MAIN = """variable "gpu_nodes" {
  default = 1
}
variable "machine" {}
resource "google_container_node_pool" "gpu" {
  name       = "gpu"
  location   = "us-central1-a"
  node_count = var.gpu_nodes
  node_config {
    machine_type = var.machine
  }
}
"""


def test_terraform_variable_values_files_are_applied_as_terraform_loads_them(tmp_path: Path) -> None:
    """A root module's variables take terraform.tfvars, terraform.tfvars.json and *.auto.tfvars(.json) over their
    defaults, as `terraform plan` does; the HCL reader read defaults only, so 16 x a3-highgpu-8g in terraform.tfvars was
    read as 1 node (or, without a default, not at all), and a PR changing only terraform.tfvars was skipped as "a YAML
    scalar". Now the values are applied in Terraform's order (a later auto file wins), said in a note; a .tfvars file given
    to the gate checks the .tf files beside it; one Terraform loads only with -var-file says so."""
    (tmp_path / "main.tf").write_text(TFVARS_MAIN)
    (tmp_path / "terraform.tfvars").write_text('gpu_nodes = 16\nmachine = "a3-highgpu-8g"\nundeclared = 5\n')
    _, data = check(str(tmp_path))
    [r] = data["results"]
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("h100", 128)
    assert any("variable values from terraform.tfvars" in n for n in r["notes"])
    (tmp_path / "b.auto.tfvars.json").write_text('{"gpu_nodes": 4}')
    (tmp_path / "a.auto.tfvars").write_text("gpu_nodes = 2\n")
    _, data = check(str(tmp_path / "terraform.tfvars"))  # a PR that changes only the values
    [r] = data["results"]
    assert r["request"]["total_chips"] == 32 and r["source"]["path"].endswith("main.tf")
    (tmp_path / "prod.tfvars").write_text("gpu_nodes = 64\n")
    _, data = check(str(tmp_path / "prod.tfvars"))
    assert data["results"][0]["request"]["total_chips"] == 32
    assert any("-var-file=prod.tfvars" in s["reason"] for s in data["skipped_files"])
    (tmp_path / "terraform.tfvars").write_text('gpu_nodes = {{{ not hcl\n')
    (tmp_path / "a.auto.tfvars").unlink()
    (tmp_path / "b.auto.tfvars.json").unlink()
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path / "main.tf"))
    assert "internal error" not in r.out + r.err and "Traceback" not in r.err


def test_manifests_terraform_reads_from_files_of_the_repository_are_read(tmp_path: Path) -> None:
    """`manifest = yamldecode(templatefile(local.tpl, {...}))` and `yaml_body = file("${path.module}/x.yaml")` keep the
    Kubernetes object in a file of the repository (ai-on-gke's JetStream module serves on TPUs this way); the resource
    passed with nothing read. The file is read (inside the repository only: `file("/etc/passwd")` is not), a template's
    settled vars filled in, the others placeholders read as unresolved where they count."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "deployment.yaml.tftpl").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: jetstream}\nspec:\n  replicas: ${replicas}\n  template:\n"
        "    spec:\n      nodeSelector:\n        cloud.google.com/gke-tpu-topology: ${tpu-topology}\n"
        "        cloud.google.com/gke-tpu-accelerator: ${tpu-type}\n"
        "      containers:\n      - {name: m, resources: {limits: {google.com/tpu: '${chips}'}}}\n"
    )
    (tmp_path / "templates" / "pool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec:\n  template:\n    spec:\n      requirements:\n"
        "      - {key: node.kubernetes.io/instance-type, operator: In, values: [p5.48xlarge]}\n  limits: {nvidia.com/gpu: 16}\n"
    )
    (tmp_path / "main.tf").write_text("""variable "chips" {
  default = 4
}
locals {
  deployment_template = "${path.module}/templates/deployment.yaml.tftpl"
}
resource "kubernetes_manifest" "jetstream" {
  manifest = yamldecode(templatefile(local.deployment_template, {
    tpu-topology = "2x2"
    tpu-type     = "tpu-v6e-slice"
    chips        = var.chips
    replicas     = var.not_given
  }))
}
resource "kubectl_manifest" "pool" {
  yaml_body = file("${path.module}/templates/pool.yaml")
}
resource "kubectl_manifest" "outside" {
  yaml_body = file("/etc/passwd")
}
resource "kubectl_manifest" "directives" {
  yaml_body = templatefile("${path.module}/templates/job.tpl", { gpus = 8 })
}
resource "kubectl_manifest" "cpu" {
  yaml_body = templatefile("${path.module}/templates/cm.tpl", {})
}
""")
    # Terraform template directives: no YAML until Terraform renders it (two swept repositories), so not the author's
    # YAML error: unsettled, a request of unknown hardware where the template names an accelerator resource
    (tmp_path / "templates" / "job.tpl").write_text(
        "apiVersion: batch/v1\nkind: Job\nspec:\n%{ if gpus > 0 }\n  template: {spec: {containers: [{name: t, resources: "
        "{limits: {nvidia.com/gpu: ${gpus}}}}]}}\n%{ endif }\n")
    (tmp_path / "templates" / "cm.tpl").write_text("apiVersion: v1\nkind: ConfigMap\n%{ for k in keys }\n%{ endfor }\n")
    _, data = check(str(tmp_path / "main.tf"))
    got = {a: (r["request"]["accelerator"], r["request"]["count"], r["request"]["replicas_max"], "request-unresolved" in rules(r))
           for a, r in by_address(data).items()}
    assert got == {
        "kubernetes_manifest.jetstream/Deployment/default/jetstream": ("tpu-v6e", 4, None, True),
        "kubectl_manifest.pool/NodePool/gpu": ("h100", 16, 1, False),
        "kubectl_manifest.directives": (None, None, 1, True),
    }
    assert "root:" not in json.dumps(data) and not data["invalid"]


DSTACK = {
    # dstack's own default file name, hidden: read though no git tracks it
    ".dstack.yml": "type: task\nname: train\nnodes: 2\ncommands: [python train.py]\nmax_duration: 6h\n"
                   "resources:\n  gpu: H100:8\n  memory: 64GB..\n",
    "range.dstack.yml": "type: task\nname: sweep\ncommands: [python x.py]\nresources:\n  gpu: A100:40GB:1..4\n",
    "alts.dstack.yml": "type: service\nname: chat\nport: 8000\ncommands: [vllm serve m]\nreplicas: 1..3\n"
                       "scaling: {metric: rps, target: 10}\n"
                       "spot_policy: spot\nbackends: [aws]\nresources:\n  gpu: {name: [H100, L4], count: 1}\n",
    "any.dstack.yml": "type: dev-environment\nname: dev\nide: vscode\nresources:\n  gpu: 24GB..:2\n",
    "tpu.dstack.yml": "type: task\nname: tpu\ncommands: [python t.py]\nresources:\n  gpu: tpu:v5litepod-8\n",
    "fleet.dstack.yml": "type: fleet\nname: pool\nnodes: {min: 0, max: 4}\nplacement: cluster\nbackends: [gcp]\n"
                        "resources:\n  gpu: B200:8\n",
    "grow.dstack.yml": "type: fleet\nname: grow\nnodes: 1..\nresources:\n  gpu: L4\n",
    "groups.dstack.yml": "type: task\nname: rl\ngroups:\n  - {name: trainer, nodes: 2, commands: [t], resources: {gpu: H200:8}}\n"
                         "  - {name: rollout, nodes: 1, commands: [r], resources: {gpu: L4:1}}\n",
    "ssh.dstack.yml": "type: fleet\nname: onprem\nssh_config:\n  user: ubuntu\n  hosts: [10.0.0.1]\nresources:\n  gpu: H100:8\n",
    "cpu.dstack.yml": "type: task\nname: etl\ncommands: [python etl.py]\nresources:\n  cpu: 8\n  gpu: 0\n",
}


def test_dstack_configurations_are_read_as_what_they_provision(tmp_path: Path) -> None:
    """dstack configurations (type task / service / dev-environment / fleet) passed unseen: a `.dstack.yml` outside git
    was hidden, the rest were "YAML that is not a workload profile", and one whose resources also set memory was taken
    for a SkyPilot task and refused ("did you mean 'accelerators'?"). Each is now a request: resources.gpu in dstack's
    forms (NAME:COUNT, NAME:MEMORY:COUNT, a mapping, a range judged at its top, several names -> the cheapest), a TPU
    slice, a spec without a name is unknown hardware; nodes / replicas / groups / fleet nodes; spot_policy; backends.
    An open-ended count is request-unresolved; an SSH fleet (hosts already owned) and gpu: 0 are no request."""
    for name, text in DSTACK.items():
        (tmp_path / name).write_text(text)
    _, data = check(str(tmp_path))
    keys = ("accelerator", "count", "replicas_min", "replicas_max", "pricing", "always_on", "cloud")
    got = {r["source"]["address"]: tuple(r["request"][k] for k in keys) for r in data["results"]}
    assert got == {
        "train": ("h100", 8, 2, 2, "on-demand", False, None),
        "sweep": ("a100-40gb", 4, 1, 1, "on-demand", False, None),
        "chat": ("l4", 1, 1, 3, "spot", True, "aws"),
        "dev": (None, 2, 1, 1, "on-demand", True, None),
        "tpu": ("tpu-v5e", 8, 1, 1, "on-demand", False, None),
        "pool": ("b200", 8, 0, 4, "on-demand", True, "gcp"),
        "grow": ("l4", 1, 1, None, "on-demand", True, None),
        "rl/trainer": ("h200", 8, 2, 2, "on-demand", False, None),
        "rl/rollout": ("l4", 1, 1, 1, "on-demand", False, None),
    }, got
    res = {r["source"]["address"]: r for r in data["results"]}
    assert all(r["source"]["kind"] == "dstack" for r in data["results"])
    assert "request-unknown-accelerator" in rules(res["dev"]) and "request-unresolved" in rules(res["grow"])
    assert "cheapest of 2 options" in " ".join(res["chat"]["notes"]) and "judged at the most" in " ".join(res["sweep"]["notes"])
    # a profile links a dstack configuration by its path, as it does a SkyPilot task
    assert 'match: ["' in " ".join(f["message"] for f in res["train"]["findings"])
    for bad in ("gpu: H100:lots:8:9", "gpu: H100:8..2", "gpu: true"):
        (tmp_path / "range.dstack.yml").write_text(DSTACK["range.dstack.yml"].replace("gpu: A100:40GB:1..4", bad))
        r = run_cli("check", "--no-config", str(tmp_path / "range.dstack.yml"))
        assert r.code == 2 and ": error: resources.gpu" in r.err, (bad, r.err)
    # a spec that is a template placeholder is one request-unresolved (it was said twice) of unknown hardware and count
    (tmp_path / "range.dstack.yml").write_text(DSTACK["range.dstack.yml"].replace("A100:40GB:1..4", '"${GPU}"'))
    _, data = check(str(tmp_path / "range.dstack.yml"))
    (r,) = data["results"]
    assert [f["rule"] for f in r["findings"]].count("request-unresolved") == 1 and r["request"]["count"] is None
    assert "request-unknown-accelerator" in rules(r)
    # a fleet whose max is below its min, and more groups than are read, are refused rather than read in part
    for name, text, needle in (
        ("fleet.dstack.yml", DSTACK["fleet.dstack.yml"].replace("min: 0, max: 4", "min: 5, max: 4"), "nodes.max: max 4 is below min 5"),
        ("groups.dstack.yml", "type: service\nname: s\nreplicas:\n" + "  - {replicas: 1, resources: {gpu: L4}}\n" * 1001, "1001 groups"),
    ):
        (tmp_path / name).write_text(text)
        r = run_cli("check", "--no-config", str(tmp_path / name))
        assert r.code == 2 and needle in r.err, r.err


UNPARSEABLE_TF = """resource "google_container_node_pool" "gpu" {
  node_count = var.ok ? 4
  node_config {
    machine_type = "a3-highgpu-8g"
  }
}

resource "google_container_node_pool" "cpu" {
  node_config {
    machine_type = "e2-standard-8"
  }
}

locals {
  known = ["a3-megagpu-8g"]
}

module "tpu_pool" {
  source       = "terraform-google-modules/kubernetes-engine/google//modules/private-cluster"
  machine_type = "ct6e-standard-4t"
}

module "local_gpu_pool" {
  source       = "./pools"
  machine_type = "a2-highgpu-1g"
}

resource "google_storage_bucket" "data" {
  name = "gpu-checkpoints"
}
"""


def test_a_terraform_file_the_reader_cannot_parse_does_not_hide_its_accelerators(tmp_path: Path) -> None:
    """A .tf file python-hcl2 cannot parse (here a syntax error) was skipped, exit 0, whatever it declared: a
    pull request could hide a GPU node pool behind syntax the reader does not take. Each resource of a type that buys
    accelerators, and each call of a module from outside the repository, whose text (up to the next top-level block:
    not the locals after it) names an accelerator is now a request whose count is not read (request-unresolved), the
    hardware known where the name is (a3-highgpu-8g is H100). A CPU pool, a bucket and a file that names no
    accelerator stay unread with the reason. A local module's call counts too: the inputs it passes (the machine type
    here) are lost with the file, its own files alone read at their defaults (before: passed over)."""
    f = tmp_path / "main.tf"
    f.write_text(UNPARSEABLE_TF)
    code, data = check(str(f))
    got = {r["source"]["address"]: (r["request"]["accelerator"], r["request"]["count"], r["source"]["line"],
                                     rules(r) & {"request-unresolved", "request-unknown-accelerator"}) for r in data["results"]}
    assert got == {
        "google_container_node_pool.gpu": ("h100", None, 1, {"request-unresolved"}),
        "module.tpu_pool": ("tpu-v6e", None, 18, {"request-unresolved"}),
        "module.local_gpu_pool": ("a100-40gb", None, 23, {"request-unresolved"}),
    }, got
    assert code == 1 or any(r["status"] == "warning" for r in data["results"])
    f.write_text(UNPARSEABLE_TF.replace("a3-highgpu-8g", "n2-standard-8").replace("ct6e-standard-4t", "n2-standard-4")
                 .replace("gpu", "big").replace("\"data\"", "\"d\""))
    _, data = check(str(f))
    assert data["results"] == [] and any("cannot parse" in json.dumps(s) for s in data["skipped_files"]), data


def test_resource_types_not_read_that_name_an_accelerator_machine_fail_closed(tmp_path: Path) -> None:
    """Before: aws_spot_instance_request, aws_ec2_fleet, aws_spot_fleet_request, aws_emr_cluster and an autoscaling group's
    mixed-instances overrides, each with p5.48xlarge x 64, were 'Terraform HCL without accelerator resources'. A spot
    instance request is read as the instance it is; the others are requests of that hardware whose count is not read."""
    f = tmp_path / "main.tf"
    f.write_text(
        'provider "aws" { region = "us-east-1" }\n'
        'resource "aws_spot_instance_request" "a" {\n  count = 4\n  ami = "ami-1"\n  instance_type = "p5.48xlarge"\n}\n'
        'resource "aws_ec2_fleet" "b" {\n  launch_template_config {\n    override { instance_type = "p5.48xlarge" }\n  }\n'
        '  target_capacity_specification { default_target_capacity_type = "on-demand" total_target_capacity = 64 }\n}\n'
        'resource "aws_emr_cluster" "e" {\n  name = "e"\n  core_instance_group {\n    instance_type = "p5.48xlarge"\n'
        '    instance_count = 64\n  }\n}\n'
        'resource "aws_autoscaling_group" "d" {\n  max_size = 64\n  min_size = 64\n  mixed_instances_policy {\n    launch_template {\n'
        '      override { instance_type = "p5.48xlarge" }\n    }\n  }\n}\n'
        'resource "aws_s3_bucket" "logs" { bucket = "p5.48xlarge-logs" }\n'
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    out = {x["source"]["address"]: x for x in json.loads(r.out)["results"]}
    assert {a for a in out if a.startswith("aws_spot_instance_request")} == {f"aws_spot_instance_request.a[{i}]" for i in range(4)}
    spot = out["aws_spot_instance_request.a[0]"]["request"]
    assert (spot["accelerator"], spot["count"], spot["pricing"]) == ("h100", 8, "spot")
    for addr in ("aws_ec2_fleet.b", "aws_emr_cluster.e", "aws_autoscaling_group.d"):
        assert out[addr]["request"]["accelerator"] == "h100" and out[addr]["request"]["count"] is None, addr
        assert "request-unresolved" in {g["rule"] for g in out[addr]["findings"]}, addr
    assert "aws_s3_bucket.logs" not in out  # a name with a machine type inside it is not that machine


def test_terraform_override_files_are_merged_into_what_they_override(tmp_path: Path) -> None:
    """Before: main.tf asked for 8 nodes x 8 L4 (64 chips) and main_override.tf set node_count = 64 (512 chips, as Terraform
    merges override files); the gate read 64 and skipped the override file 'without accelerator resources'."""
    (tmp_path / "main.tf").write_text(
        'resource "google_container_node_pool" "pool" {\n  name = "pool"\n  cluster = "c"\n  location = "us-central1-a"\n'
        '  node_count = 8\n  node_config {\n    machine_type = "g2-standard-96"\n'
        '    guest_accelerator {\n      type = "nvidia-l4"\n      count = 8\n    }\n  }\n}\n'
    )
    (tmp_path / "main_override.tf").write_text('resource "google_container_node_pool" "pool" {\n  node_count = 64\n}\n')
    out = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path)).out)
    [res] = out["results"]
    assert res["request"]["total_chips"] == 512 and res["source"]["path"].endswith("main.tf")
    assert any("override" in s["reason"] for s in out["skipped_files"] if s["path"].endswith("main_override.tf"))


def test_terraform_json_syntax_fails_closed(tmp_path: Path) -> None:
    """Before: a node pool of 64 x a3-highgpu-8g in main.tf.json (Terraform's JSON syntax, which terraform plan loads like
    main.tf) was 'JSON that is neither a Terraform plan ...': skipped. Now each resource that buys accelerators is a request
    of the hardware its machine names, its count not read."""
    (tmp_path / "main.tf.json").write_text(json.dumps({"resource": {"google_container_node_pool": {"h100": {
        "name": "h100", "cluster": "c", "location": "us-central1-a", "node_count": 64,
        "node_config": {"machine_type": "a3-highgpu-8g", "guest_accelerator": [{"type": "nvidia-h100-80gb", "count": 8}]},
    }}, "google_storage_bucket": {"b": {"name": "b", "location": "US"}}}}))
    out = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path)).out)
    [res] = out["results"]
    assert res["source"]["address"] == "google_container_node_pool.h100" and res["request"]["accelerator"] == "h100"
    assert res["request"]["count"] is None and "request-unresolved" in {f["rule"] for f in res["findings"]}


def test_cloudformation_types_not_read_that_name_an_accelerator_machine_fail_closed(tmp_path: Path) -> None:
    """Before: AWS::Batch::ComputeEnvironment with p4d.24xlarge, and a SageMaker HyperPod AWS::SageMaker::Cluster whose
    instance group takes !Ref AcceleratedInstanceType (default ml.g5.8xlarge) inside an !If, were 'CloudFormation template
    without accelerator requests'."""
    f = tmp_path / "stack.yaml"
    f.write_text(
        "AWSTemplateFormatVersion: '2010-09-09'\nParameters:\n  AcceleratedInstanceType: {Type: String, Default: ml.g5.8xlarge}\n"
        "Conditions:\n  Yes: !Equals [a, a]\nResources:\n"
        "  CE:\n    Type: AWS::Batch::ComputeEnvironment\n    Properties:\n      Type: MANAGED\n"
        "      ComputeResources: {Type: EC2, MaxvCpus: 1024, InstanceTypes: [p4d.24xlarge]}\n"
        "  HyperPod:\n    Type: AWS::SageMaker::Cluster\n    Properties:\n      InstanceGroups: !If\n        - Yes\n"
        "        - - {InstanceGroupName: gpu, InstanceType: !Ref AcceleratedInstanceType, InstanceCount: 4}\n"
        "        - !Ref AWS::NoValue\n"
        "  Logs:\n    Type: AWS::S3::Bucket\n    Properties: {BucketName: p4d.24xlarge-logs}\n"
    )
    out = {x["source"]["address"]: x["request"] for x in json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on",
                                                                            "never", str(f)).out)["results"]}
    assert out["CE"]["accelerator"] == "a100-40gb" and out["CE"]["count"] is None
    assert out["HyperPod"]["accelerator"] == "a10g" and "Logs" not in out


_POOL_MODULE = (
    'variable "nodes" { default = 1 }\nvariable "gpus" { default = 1 }\n'
    'resource "google_container_node_pool" "pool" {\n  name = "pool"\n  cluster = "c"\n  location = "us-central1-a"\n'
    '  node_count = var.nodes\n  node_config {\n    machine_type = "g2-standard-96"\n'
    '    guest_accelerator {\n      type = "nvidia-l4"\n      count = var.gpus\n    }\n  }\n}\n'
)


def _results(*args: str) -> dict:
    return json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", *args).out)


def test_terraform_local_module_is_judged_with_the_inputs_of_its_call(tmp_path: Path) -> None:
    """Before: ``module "training" { source = "./modules/pool"; nodes = 64; gpus = 8 }`` was read at the module's own
    defaults (1 node x 1 L4) and the call's 512 chips passed a 64-chip policy. Now the call's inputs are the module's
    variables, the request is the module instance the plan lists, at the module block, and the module's own file is not
    judged again at its defaults."""
    (tmp_path / ".git").mkdir()  # a repository: what its modules may be read from
    (tmp_path / "modules" / "pool").mkdir(parents=True)
    (tmp_path / "modules" / "pool" / "main.tf").write_text(_POOL_MODULE)
    (tmp_path / "main.tf").write_text(
        'provider "google" {}\n\nmodule "training" {\n  source = "./modules/pool"\n  nodes  = 64\n  gpus   = 8\n}\n'
        'module "serving" {\n  source = "./modules/pool"\n  count  = 2\n  nodes  = 3\n}\n'
    )
    out = _results(str(tmp_path))
    got = {r["source"]["address"]: (r["request"]["total_chips"], r["source"]["line"], r["source"]["path"]) for r in out["results"]}
    assert got == {
        "module.training.google_container_node_pool.pool": (512, 3, str(tmp_path / "main.tf")),
        "module.serving[0].google_container_node_pool.pool": (3, 8, str(tmp_path / "main.tf")),
        "module.serving[1].google_container_node_pool.pool": (3, 8, str(tmp_path / "main.tf")),
    }
    [skip] = [s for s in out["skipped_files"] if s["path"].endswith("pool/main.tf")]
    assert "called from" in skip["reason"] and skip["reason"].endswith("with its inputs")
    policy = tmp_path / "policy.yaml"
    policy.write_text("limits:\n  max_chips: 64\n")
    assert run_cli("check", "--policy", str(policy), str(tmp_path)).code == 1
    # the module's file checked on its own is still read, at its defaults
    [alone] = _results(str(tmp_path / "modules" / "pool" / "main.tf"))["results"]
    assert alone["request"]["total_chips"] == 1


def test_terraform_local_module_inputs_nested_unresolved_and_outside_the_repository(tmp_path: Path) -> None:
    """A module calling a module is read through both calls; an input the source does not settle is unresolved (fails
    closed), not the default; a source that leaves the repository is not read."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "modules" / "pool").mkdir(parents=True)
    (repo / "modules" / "pool" / "main.tf").write_text(_POOL_MODULE)
    (repo / "modules" / "cluster").mkdir()
    (repo / "modules" / "cluster" / "main.tf").write_text(
        'variable "size" { default = 1 }\nmodule "gpu" {\n  source = "../pool"\n  nodes = var.size\n  gpus = 8\n}\n'
    )
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "main.tf").write_text(_POOL_MODULE)
    (repo / "main.tf").write_text(
        'module "a" {\n  source = "./modules/cluster"\n  size = 8\n}\n'
        'module "b" {\n  source = "./modules/pool"\n  nodes = data.external.n.result\n}\n'
        'module "c" {\n  source = "../outside"\n  nodes = 100\n}\n'
    )
    out = _results(str(repo / "main.tf"))
    got = {r["source"]["address"]: r for r in out["results"]}
    assert set(got) == {"module.a.module.gpu.google_container_node_pool.pool", "module.b.google_container_node_pool.pool"}
    assert got["module.a.module.gpu.google_container_node_pool.pool"]["request"]["total_chips"] == 64
    assert got["module.a.module.gpu.google_container_node_pool.pool"]["source"]["line"] == 1
    assert "request-unresolved" in {f["rule"] for f in got["module.b.google_container_node_pool.pool"]["findings"]}


_CAPI = """\
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: gpu-md
  annotations:
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "2"
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "16"
spec:
  clusterName: c
  replicas: 4
  template:
    spec:
      clusterName: c
      infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: AWSMachineTemplate, name: gpu-tmpl}
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: cpu-md}
spec:
  replicas: 40
  template:
    spec:
      infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: AWSMachineTemplate, name: cpu-tmpl}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: gpu-tmpl}
spec:
  template:
    spec:
      instanceType: p5.48xlarge
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: cpu-tmpl}
spec:
  template:
    spec:
      instanceType: m7i.4xlarge
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: GCPMachineTemplate
metadata: {name: orphan}
spec:
  template:
    spec:
      instanceType: a3-highgpu-8g
"""


def test_cluster_api_machine_deployments_are_read_with_their_templates(tmp_path: Path) -> None:
    """Before: a Cluster API MachineDeployment of 64 p5.48xlarge machines (AWSMachineTemplate) was no request and passed a
    64-chip policy. Now it is the node group it amounts to, scaled to the cluster autoscaler's max-size annotation; a CPU
    template is no request; a template of accelerator machines whose deployment is not in the file fails closed."""
    f = tmp_path / "capi.yaml"
    f.write_text(_CAPI)
    got = {r["source"]["address"]: r for r in _results(str(f))["results"]}
    assert set(got) == {"MachineDeployment/default/gpu-md", "GCPMachineTemplate/default/orphan"}
    md = got["MachineDeployment/default/gpu-md"]
    req = md["request"]
    assert (req["accelerator"], req["cloud"], req["total_chips"], md["source"]["line"]) == ("h100", "aws", 128, 4)
    assert (md["request"]["count"], md["request"]["replicas_min"], md["request"]["replicas_max"]) == (8, 2, 16)
    orphan = got["GCPMachineTemplate/default/orphan"]
    assert orphan["request"]["accelerator"] == "h100" and "request-unresolved" in {x["rule"] for x in orphan["findings"]}


def test_ack_nodegroup_and_aso_agent_pool_are_read_as_node_groups(tmp_path: Path) -> None:
    """Before: an AWS Controllers for Kubernetes Nodegroup and an Azure Service Operator ManagedClustersAgentPool of 64
    H100 machines each were no request (the gate read Config Connector and Crossplane only)."""
    f = tmp_path / "pools.yaml"
    f.write_text(
        "apiVersion: eks.services.k8s.aws/v1alpha1\nkind: Nodegroup\nmetadata: {name: ack-ng}\n"
        "spec: {name: ack-ng, clusterName: c, instanceTypes: [p5.48xlarge], capacityType: SPOT,\n"
        "       scalingConfig: {minSize: 0, maxSize: 64, desiredSize: 2}}\n---\n"
        "apiVersion: containerservice.azure.com/v1api20231001\nkind: ManagedClustersAgentPool\nmetadata: {name: aso-pool}\n"
        "spec: {owner: {name: c}, vmSize: Standard_ND96isr_H100_v5, count: 64, scaleSetPriority: Spot}\n"
    )
    got = {r["source"]["address"]: r["request"] for r in _results(str(f))["results"]}
    ack, aso = got["Nodegroup/default/ack-ng"], got["ManagedClustersAgentPool/default/aso-pool"]
    assert (ack["accelerator"], ack["cloud"], ack["total_chips"], ack["pricing"]) == ("h100", "aws", 512, "spot")
    assert (aso["accelerator"], aso["cloud"], aso["total_chips"], aso["pricing"]) == ("h100", "azure", 512, "spot")


def test_a_count_that_is_not_read_fails_max_chips_closed(tmp_path: Path) -> None:
    """Before: ``count = var.n`` (no default), ``count = terraform.workspace == "prod" ? 16 : 1``, an Argo Rollouts Rollout
    and a Knative Service (kinds not read: counted once) were judged at one instance or pod (8 L4) and passed a 64-chip
    policy, with only a warning. Now a total read beside a count that was not is a lower bound, and max_chips fails closed
    on it; a Rollout is read as the Deployment it is (16 x 8), a Knative Service between its min-scale and max-scale
    annotations (unbounded without max-scale: not read)."""
    (tmp_path / ".git").mkdir()
    vm = ('  machine_type = "g2-standard-96"\n  zone = "us-central1-a"\n'
          '  guest_accelerator {\n    type = "nvidia-l4"\n    count = 8\n  }\n}\n')
    (tmp_path / "a.tf").write_text('variable "n" {}\nresource "google_compute_instance" "gpu" {\n  count = var.n\n' + vm)
    (tmp_path / "b.tf").write_text('resource "google_compute_instance" "ws" {\n  count = terraform.workspace == "prod" ? 16 : 1\n' + vm)
    (tmp_path / "c.tf").write_text('resource "google_compute_instance" "one" {\n' + vm)
    (tmp_path / "rollout.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n  replicas: 16\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    knative = ("apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  template:\n"
               "    metadata:\n      annotations: {{{ann}}}\n    spec:\n"
               "      nodeSelector: {{cloud.google.com/gke-accelerator: nvidia-l4}}\n"
               "      containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]\n")
    (tmp_path / "kn.yaml").write_text(
        knative.format(name="open", ann='autoscaling.knative.dev/min-scale: "2"') + "---\n"
        + knative.format(name="bounded", ann='autoscaling.knative.dev/min-scale: "2", autoscaling.knative.dev/max-scale: "4"')
    )
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", str(tmp_path / "policy.yaml"), "--format", "json", str(tmp_path))
    assert r.code == 1, r.out
    failing = {x["source"]["address"]: next((f["message"] for f in x["findings"] if f["rule"] == "policy-max-chips"), None)
               for x in json.loads(r.out)["results"]}
    assert failing["google_compute_instance.one"] is None  # read in full: 8 chips, within the limit
    assert failing["Service/default/bounded"] is None  # 4 x 8 at most
    for addr in ("google_compute_instance.gpu[0]", "google_compute_instance.ws[0]"):
        assert failing[addr] and failing[addr].startswith("asks for at least 8 chips"), (addr, failing[addr])
    assert failing["Rollout/default/r"] and failing["Rollout/default/r"].startswith("asks for 128 chips")
    assert failing["Service/default/open"] and "could not be read" in failing["Service/default/open"]


@pytest.mark.parametrize("instance,accelerator,cloud", [
    ("g6.xlarge", "l4", "aws"), ("g2-standard-12", "l4", "gcp"), ("Standard_ND96isr_H100_v5", "h100", "azure"),
])
def test_an_instance_type_selector_says_its_cloud(tmp_path: Path, instance: str, accelerator: str, cloud: str) -> None:
    """Before: ``node.kubernetes.io/instance-type: g6.xlarge`` (an EC2 instance) read as L4 'cloud not stated: priced on
    gcp' and passed allowed_clouds: [gcp]. Now the instance type's name says its cloud."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
        f"      nodeSelector: {{node.kubernetes.io/instance-type: {instance}}}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path)).out)["results"]
    assert (res["request"]["accelerator"], res["request"]["cloud"]) == (accelerator, cloud)


def test_a_placeholder_resource_name_is_a_request_not_read(tmp_path: Path) -> None:
    """Before: ``${GPU_RESOURCE}: 8`` (envsubst at deploy time) under resources.limits made the file 'Kubernetes manifest
    without accelerator requests'. Now it is a request whose chips are not read, and a chip limit fails closed on it."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 16\n  template:\n    spec:\n"
        "      containers: [{name: c, image: x, resources: {limits: {cpu: 4, '${GPU_RESOURCE}': 8}}}]\n"
    )
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", str(tmp_path / "policy.yaml"), "--format", "json", str(tmp_path / "d.yaml"))
    assert r.code == 1, r.out
    [res] = json.loads(r.out)["results"]
    assert res["request"]["total_chips"] is None and "request-unresolved" in {f["rule"] for f in res["findings"]}


def test_a_module_not_read_whose_inputs_ask_for_chips_fails_closed(tmp_path: Path) -> None:
    """Before: aws-ia/eks-data-addons installing the Triton chart with ``nvidia.com/gpu: 4`` in the Helm values it passes
    on (ai-on-eks), and a module given ``instance_type = "p5.48xlarge"``, were 'Terraform HCL without accelerator
    resources'. Now each is a request at the module block whose count is not read; a module whose inputs only name a
    GPU feature flag (enable_nvidia_device_plugin) or a toleration of the GPU taint is none."""
    (tmp_path / "main.tf").write_text(
        'module "triton" {\n  source = "aws-ia/eks-data-addons/aws"\n  enable_nvidia_triton_server = true\n'
        '  nvidia_triton_server_helm_config = {\n    values = [\n      <<-EOT\n      resources:\n        limits:\n'
        '          nvidia.com/gpu: 4\n      EOT\n    ]\n  }\n}\n'
        'module "nodes" {\n  source = "git::https://example.com/nodes.git"\n  instance_type = "p5.48xlarge"\n}\n'
        'module "addons" {\n  source = "aws-ia/eks-blueprints-addons/aws"\n  enable_nvidia_device_plugin = true\n'
        '  nvidia_device_plugin_helm_config = {\n    tolerations = [{ key = "nvidia.com/gpu", operator = "Exists" }]\n  }\n}\n'
    )
    got = {r["source"]["address"]: r for r in _results(str(tmp_path / "main.tf"))["results"]}
    assert set(got) == {"module.triton", "module.nodes"}
    assert got["module.nodes"]["request"]["accelerator"] == "h100" and got["module.nodes"]["source"]["line"] == 14
    for r in got.values():
        assert r["request"]["count"] is None and "request-unresolved" in {f["rule"] for f in r["findings"]}


def test_dra_first_available_alternatives_are_held_to_the_policy(tmp_path: Path) -> None:
    """Before: a ResourceClaimTemplate whose firstAvailable lists 1 L4, then 8 H100, was read as its first alternative
    only (1 L4 per pod) and passed a policy allowing L4 alone, though the scheduler falls back to the H100 when no L4 is
    free. Now the others are alternatives, each held to the policy."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpus}\nspec:\n  spec:\n    devices:\n"
        "      requests:\n      - name: g\n        firstAvailable:\n"
        "        - {name: small, deviceClassName: gpu.nvidia.com, count: 1, selectors: [{cel: {expression: "
        "'device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA L4\"'}}]}\n"
        "        - {name: big, deviceClassName: gpu.nvidia.com, count: 8, selectors: [{cel: {expression: "
        "'device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA H100 80GB HBM3\"'}}]}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: t}\nspec:\n  replicas: 8\n  template:\n    spec:\n"
        "      resourceClaims: [{name: gpus, resourceClaimTemplateName: gpus}]\n"
        "      containers: [{name: c, image: x, resources: {claims: [{name: gpus}]}}]\n"
    )
    (tmp_path / "policy.yaml").write_text("limits:\n  allowed_accelerators: [l4]\n  max_chips: 32\n")
    r = run_cli("check", "--policy", str(tmp_path / "policy.yaml"), "--format", "json", str(tmp_path / "d.yaml"))
    assert r.code == 1, r.out
    [res] = json.loads(r.out)["results"]
    assert res["request"]["accelerator"] == "l4" and res["request"]["total_chips"] == 8
    assert {"policy-accelerator-not-allowed", "policy-max-chips"} <= {f["rule"] for f in res["findings"]}


def test_a_device_class_the_files_define_is_read(tmp_path: Path) -> None:
    """Before: a DeviceClass named h100 defined in the repository (its CEL selector picks gpu.nvidia.com's H100 devices),
    claimed 8 per pod by 16 pods, was no request: only the drivers' own class names were known."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: h100}\nspec:\n  selectors:\n"
        "  - cel: {expression: 'device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"].productName == "
        "\"NVIDIA H100 80GB HBM3\"'}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: nics}\nspec:\n  selectors:\n"
        "  - cel: {expression: 'device.driver == \"rdma.example.com\"'}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpus}\nspec:\n  spec:\n    devices:\n"
        "      requests:\n      - {name: g, exactly: {deviceClassName: h100, count: 8}}\n"
        "      - {name: n, exactly: {deviceClassName: nics, count: 4}}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: t}\nspec:\n  replicas: 16\n  template:\n    spec:\n"
        "      resourceClaims: [{name: gpus, resourceClaimTemplateName: gpus}]\n"
        "      containers: [{name: c, image: x, resources: {claims: [{name: gpus}]}}]\n"
    )
    [res] = _results(str(tmp_path / "d.yaml"))["results"]
    assert (res["request"]["accelerator"], res["request"]["count"], res["request"]["total_chips"]) == ("h100", 8, 128)


def test_mig_slices_of_one_parent_gpu_are_one_gpu(tmp_path: Path) -> None:
    """Before: NVIDIA's k8s-dra-driver-gpu quickstart gpu-test4 (four MIG slices per pod that a matchAttribute on
    gpu.nvidia.com/parentUUID puts on one GPU, 4 pods) read as 4 GPUs per pod, 16 in all, with no note. Now the slices of
    one parent are one GPU; without that constraint each slice stays a GPU (an upper bound), and says so."""
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: mig}\nspec:\n  spec:\n    devices:\n"
             "      requests:\n" + "".join(f"      - {{name: r{i}, exactly: {{deviceClassName: mig.nvidia.com}}}}\n" for i in range(4))
             + "CONSTRAINTS---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: pod}\nspec:\n  replicas: 4\n  template:\n"
             "    spec:\n      resourceClaims: [{name: mig, resourceClaimTemplateName: mig}]\n"
             "      containers: [{name: c, image: x, resources: {claims: [{name: mig}]}}]\n")
    one_parent = "      constraints: [{matchAttribute: gpu.nvidia.com/parentUUID}]\n"
    (tmp_path / "d.yaml").write_text(claim.replace("CONSTRAINTS", one_parent))
    [res] = _results(str(tmp_path / "d.yaml"))["results"]
    assert (res["request"]["count"], res["request"]["total_chips"]) == (1, 4)
    (tmp_path / "d.yaml").write_text(claim.replace("CONSTRAINTS", ""))
    [res] = _results(str(tmp_path / "d.yaml"))["results"]
    assert (res["request"]["count"], res["request"]["total_chips"]) == (4, 16)
    assert any("upper bound" in n for n in res["notes"])
