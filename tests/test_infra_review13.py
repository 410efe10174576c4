"""Real repository files a review read by hand (tests/data/infra-review13/README.md names each upstream file): platform
repositories full of Helm charts and operator resources (vllm-project/production-stack, NVIDIA/nim-deploy,
substratusai/kubeai, kaito-project/kaito, GoogleCloudPlatform/ai-on-gke)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
