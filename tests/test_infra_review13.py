"""Real repository files a review read by hand (tests/data/infra-review13/README.md names each upstream file): platform
repositories full of Helm charts and operator resources (vllm-project/production-stack, NVIDIA/nim-deploy,
substratusai/kubeai, kaito-project/kaito, GoogleCloudPlatform/ai-on-gke)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.api import Context

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review13"


def _check(path: Path) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(path))
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def _results(path: Path) -> dict[str, dict[str, Any]]:
    code, data, err = _check(path)
    assert code == 0, err
    return {r["source"]["address"]: r for r in data["results"]}


def test_azure_gpu_sizes_are_counted_and_an_unknown_one_is_never_a_silent_zero() -> None:
    # before: Standard_NC12s_v3 and Standard_NV36ads_A10_v5 had total_chips null and no request-unresolved
    got = _results(CASES / "04-azure-sizes" / "workspaces.yaml")
    chips = {a.rsplit("/", 1)[-1]: r["request"]["total_chips"] for a, r in got.items()}
    assert chips == {"tuning-nc12s-v3": 2, "infer-nv36ads-a10-v5": 1, "control-nc6s-v3": 1}, chips
    unknown = _results(CASES / "04-azure-sizes" / "unknown-size.yaml")["Workspace/default/infer-nv36ads-a10-v5"]
    assert unknown["request"]["total_chips"] is None and "request-unresolved" in {f["rule"] for f in unknown["findings"]}


def _rules(r: dict[str, Any]) -> set[str]:
    return {f["rule"] for f in r["findings"]}


def test_a_kubeai_model_without_max_replicas_is_unbounded() -> None:
    # before: h100 x 2, replicas 0..1, no finding: 'read as at most one replica (a lower bound)'
    (r,) = _results(CASES / "01-kubeai-no-max" / "model.yaml").values()
    assert "request-unresolved" in _rules(r) and "Empty value means no limit" in json.dumps(r), r
    (b,) = _results(CASES / "01-kubeai-no-max" / "bounded.yaml").values()
    assert b["request"]["total_chips"] == 3 and "request-unresolved" not in _rules(b), b


def test_a_kserve_service_without_max_replicas_is_unbounded_unless_raw_deployment() -> None:
    # before: 1..1 with no finding, where Knative scales a Serverless InferenceService without a top
    (r,) = _results(CASES / "02-kserve-no-max" / "isvc.yaml").values()
    assert "request-unresolved" in _rules(r) and "Serverless mode" in json.dumps(r), r
    (raw,) = _results(CASES / "02-kserve-no-max" / "raw-deployment.yaml").values()
    assert "request-unresolved" not in _rules(raw) and raw["request"]["total_chips"] == 1, raw


def test_a_vllm_production_stack_runtime_is_read_as_its_operator_deploys_it() -> None:
    # before: 'Kubernetes manifest without accelerator requests' (the GPU count is the CR's own field)
    case = CASES / "03-vllmruntime"
    (r,) = _results(case / "vllmruntime.yaml").values()
    assert r["request"]["total_chips"] == 2 and r["request"]["accelerator"] is None, r["request"]
    auto = {a.rsplit("/", 1)[-1]: x["request"]["total_chips"] for a, x in _results(case / "autoscaling.yaml").items()}
    assert auto == {"vllmruntime-autoscaling-minimal": 2, "vllmruntime-autoscaling-scale-to-zero": 2,
                    "vllmruntime-autoscaling-sample": 4}, auto
    (l4,) = _results(case / "selected-l4.yaml").values()
    assert (l4["request"]["accelerator"], l4["request"]["total_chips"]) == ("l4", 6), l4["request"]


def test_gke_module_pools_from_a_typed_variable_are_read_or_fail_closed() -> None:
    # before: both skipped ('module.gke...pools["?"]: node_pools cannot be evaluated from the source'), exit 0
    case = CASES / "05-tf-gke-pools"
    (r,) = _results(case / "a-optional-attr").values()  # optional(string, "") filled in: the for reads it
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("l4", 3), r["request"]
    (b,) = _results(case / "b-required-var").values()  # a variable without a default: not evaluated, not passed over
    assert {"request-unresolved", "request-unknown-accelerator"} <= _rules(b), b
    (c,) = _results(case / "control").values()
    assert (c["request"]["accelerator"], c["request"]["total_chips"]) == ("l4", 3), c["request"]


def test_a_type_constraints_optional_defaults_are_read() -> None:
    from advisor.check.infra.hclexpr import type_shape

    shape = type_shape('list(object({name = string, zones = optional(list(string), ["a", "b"]), n = optional(number),'
                       ' spec = optional(object({gpu = optional(number, 1)}), {})}))')
    assert shape == ("list", ("object", {"name": (None, False, None), "zones": (("list", None), True, ["a", "b"]),
                                         "n": (None, False, None), "spec": (("object", {"gpu": (None, True, 1)}), True, {})}))
    assert type_shape("map(string)") == ("map", None) and type_shape("not a type (") is None


def test_a_kaito_partition_is_a_gpu_request() -> None:
    # before: 'Kubernetes manifest without accelerator requests' (only resource.instanceType was read)
    got = {a.split("/")[0]: r for a, r in _results(CASES / "06-kaito-partition" / "workspace.yaml").items()}
    assert got["Workspace"]["request"]["total_chips"] == 2 and got["InferenceSet"]["request"]["total_chips"] == 2, got
    assert all("request-unknown-accelerator" in _rules(r) for r in got.values())


def test_the_directory_scan_for_accelerator_names_is_done_once_and_bounded(tmp_path: Path, monkeypatch: Any) -> None:
    """A file of many GKE module calls whose node pools cannot be evaluated asks once whether its directory names an
    accelerator (before: once per call, each reading every file of the directory: 30 calls beside 50 MB of .tfvars took
    minutes); a directory past MAX_NAMES_SCAN_BYTES is taken to name one (fail closed), unread; only the .tfvars
    Terraform loads by itself (terraform.tfvars, *.auto.tfvars) are read."""
    from advisor.check.infra import hcl
    from advisor.check.infra.names import name_index

    calls = "\n".join(f'module "gke{i}" {{\n  source = "terraform-google-modules/kubernetes-engine/google"\n'
                      f'  node_pools = [for p in var.pools : p if p.x]\n}}' for i in range(30))
    main = tmp_path / "main.tf"
    main.write_text('variable "pools" {\n  type = any\n}\n' + calls + "\n")
    (tmp_path / "gpu.auto.tfvars").write_text('note = "nvidia-l4"\n')
    seen: list[int] = []
    real = hcl.names_hardware
    monkeypatch.setattr(hcl, "names_hardware", lambda text, index: seen.append(len(text)) or real(text, index))
    index = name_index(Context.load().catalog)
    got = hcl.parse(str(main), main.read_text(), index)
    assert len(got.requests) == 30 and all(r.unknown for r in got.requests) and len(seen) == 1, (len(got.requests), seen)
    big = tmp_path / "big"
    big.mkdir()
    (big / "main.tf").write_text(main.read_text())
    for i in range(3):
        (big / f"pad{i}.auto.tfvars").write_text("# " + "x" * (hcl.MAX_NAMES_SCAN_BYTES // 2) + "\n")
    seen.clear()
    got = hcl.parse(str(big / "main.tf"), (big / "main.tf").read_text(), index)
    assert len(got.requests) == 30 and not seen  # past the bound: taken to name one, the text never scanned
