"""Hostile pull requests, round 3: each case directory of tests/data/hostile-pr is a repository whose files ask for
accelerators the fixed policy (tests/data/hostile-pr/policy.yaml: at most 64 chips, L4 or TPU v6e, GCP only, $10,000 a
month) forbids, written so that an earlier gate passed it (exit 0) or hung. Each must now fail (exit 1), in good time.

- 01-ray-y, 02-nim-y, 11-krm-nap-y, 03-helm-n: ``enabled: y`` / ``cpuOnly: n``, booleans to kubectl, Helm and
  eksctl (YAML 1.1 through go-yaml v2), text to PyYAML: autoscaling read as off, a GPU branch as not taken;
- 04-json-stream: a .json file of two objects back to back (kubectl applies both), the chip names in \\u escapes;
- 05-tofu-ext: main.tofu, which OpenTofu loads beside *.tf;
- 07-hpa-namespace: an autoscaler in the namespace the Deployment is applied to, the Deployment naming none;
- 09-kustomize-replacement-accel: a kustomization whose only transform is ``replacements`` (chips and count);
- 12-argocd-kustomize-overrides, 13-flux-kustomization-patches: replicas and patches an Argo CD Application and a Flux
  Kustomization apply to the path they build;
- 14..17: Terraform types no reader takes (region commitment, Dataproc, Cloud Run job, notebooks runtime) whose
  accelerator fields name chips;
- 18-tpu-multihost-job-underfilled: a Job asking for 4 chips of the 256-chip v6e 16x16 slice its selector names;
- 19-hcl-string-doubling-dos: 24 locals each twice the one before: evaluated 2^24 times and 268 MB long before;
- r4-02..r4-13: Argo CD spec.sources overrides, a replacement into a bracketed key ([nvidia.com/gpu]) or onto an
  HPA's target, name-prefix / namespace overrides and autoscalers outside the build that scales them, Flux's generated
  kustomization of a subdirectory with its own, an exact-namespace HPA shadowing a larger one, a leader/worker group
  on part of a TPU slice, an unread Terraform type whose accelerator is a variable without a default, YAML in a .json.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "hostile-pr"
# round 4 (r4-): the attacks on round 3's own new readers; two do not end in exit 1:
# - r4-01: a Deployment in a file whose second document is no YAML (kubectl applies the first): an input error now
#   (exit 2), where the first document's escaped chip names had let it pass as "no YAML, names no accelerator";
# - r4-14: an ApplicationSet whose template is null raised AttributeError (an internal error); now read past (exit 0)
EXPECTED = {"r4-01-syntax-error-skip-partial-apply": 2, "r4-14-applicationset-null-template-crash": 0}


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_a_hostile_pull_request_fails_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / case, repo)
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    start = time.monotonic()
    r = run_cli("check", ".", "--policy", str(CASES / "policy.yaml"), "--format", "json")
    assert time.monotonic() - start < 20, "the gate must answer in good time"
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err[-2000:]
    assert r.code == EXPECTED.get(case, 1), r.out[-2000:] + r.err[-2000:]
    if r.code != 1:
        return
    errors = {f["rule"] for res in json.loads(r.out)["results"] for f in res["findings"] if f["severity"] == "error"}
    assert errors & {"policy-max-chips", "policy-accelerator-not-allowed", "policy-cloud-not-allowed", "policy-monthly-increase"}


def test_a_template_that_links_to_a_file_of_the_repository_is_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: templates/job.yaml -> ../../docs/serving-example.md (in the repository) was dropped as a link, and the chart
    read as one without accelerators; Helm's loader follows it and renders 32 x 8 H100."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "serving-example.md").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  parallelism: {{ .Values.n }}\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("n: 32\n")
    (chart / "templates" / "job.yaml").symlink_to(Path("..") / ".." / "docs" / "serving-example.md")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", ".", "--policy", str(CASES / "policy.yaml"), "--format", "json")
    assert r.code == 1, r.out[-2000:]
    [res] = [x for x in json.loads(r.out)["results"] if x["request"]["accelerator"] == "h100"]
    assert res["request"]["total_chips"] == 256
