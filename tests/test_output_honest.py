"""Honest output: skipped files listed and counted in every format, the assumptions beside each cost,
a named cloud priced on that cloud, unlinked resources told how to link, unpriced chips a warning,
monthly and one-off costs never added, per-resource waivers in every carrier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

CHATBOT = (ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml").read_text()
PRETRAIN = (ROOT / "profiles" / "proposals" / "over-budget-pretrain.yaml").read_text()
K8S = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  annotations:
    advisor.dev/waive: |
      policy-max-chips until 2099-01-01: capacity approved in INFRA-42
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
      - name: c
        resources: {limits: {nvidia.com/gpu: 4}}
"""


def check(*args: str) -> tuple[int, str, str]:
    r = run_cli("check", "--no-config", *args)
    return r.code, r.out, r.err


def test_skipped_files_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "environment.yml").write_text("name: x\nchannels: [conda-forge]\ndependencies: [python=3.11]\n")
    (tmp_path / "p.yaml").write_text(CHATBOT)
    reason = "a conda environment file"
    for fmt, needle in (("json", reason), ("text", reason), ("markdown", reason), ("sarif", reason), ("junit", reason), ("github", reason)):
        code, out, err = check("--format", fmt, str(tmp_path))
        assert code == 0, err
        flat = " ".join(out.split())  # text output wraps prose at the terminal's width
        assert "environment.yml" in out and needle in flat, fmt
    data = json.loads(check("--format", "json", str(tmp_path))[1])
    assert data["summary"]["skipped_files"] == 1
    assert "1 file skipped" in check("--format", "markdown", str(tmp_path))[1]
    assert "1 file(s) skipped" in check("--format", "github", str(tmp_path))[1]
    junit = check("--format", "junit", str(tmp_path))[1]
    assert 'skipped="1"' in junit and f'<skipped message="{reason}" />' in junit


def test_assumptions_beside_the_cost_and_unlinked_said(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text("name: job\nresources:\n  accelerators: H100:8\nrun: train.py\n")
    md = check("--format", "markdown", str(f))[1]
    assert "priced as a whole month" in md and "cloud not stated: priced on" in md
    assert "no workload linked — link one with `match:` to get a recommendation" in md and "none feasible" not in md
    text = " ".join(check(str(f))[1].split())  # text output wraps prose at the terminal's width
    assert "cost assumes: a job with no linked workload: priced as a whole month" in text
    assert "no workload linked" in text or "[workload-not-linked]" in text  # the table cell may fold; the note says how to link


def test_a_named_cloud_is_priced_on_it(tmp_path: Path, ctx) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "t.yaml"
    f.write_text("name: t\nresources:\n  cloud: aws\n  accelerators: {H100: 8, L4: 8}\nrun: x\n")
    r = json.loads(check("--format", "json", str(f))[1])["results"][0]
    assert r["request"]["cloud"] == "aws"
    acc = ctx.catalog.accelerators[r["request"]["accelerator"]]
    price = acc.price(["aws"], "on-demand", None, 8)
    assert r["proposal"]["request"]["cost_usd"] == pytest.approx(price.usd_per_chip_hour * 8 * 730, rel=1e-6)
    assert not any("cloud not stated" in n for n in r.get("notes", []))


def test_unpriced_is_a_warning(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("name: t\nresources:\n  cloud: aws\n  accelerators: tpu-v6e-8\nrun: x\n")
    code, out, _ = check("--format", "json", str(f))
    r = json.loads(out)["results"][0]
    assert code == 0 and r["status"] == "warning"
    assert {x["rule"]: x["severity"] for x in r["findings"]}["request-unpriced"] == "warning"
    assert json.loads(out)["summary"]["unpriced"] == 1
    assert "unpriced" in check("--format", "markdown", str(f))[1]


def test_monthly_and_one_off_are_never_added(tmp_path: Path) -> None:
    (tmp_path / "chat.yaml").write_text(CHATBOT)
    (tmp_path / "pre.yaml").write_text(PRETRAIN)
    s = json.loads(check("--format", "json", "--fail-on", "never", str(tmp_path))[1])["summary"]
    assert s["proposed_cost_usd"] is None and s["proposed_monthly_usd"] > 0 and s["proposed_one_off_usd"] > 0
    md = check("--format", "markdown", "--fail-on", "never", str(tmp_path))[1]
    assert "/month + " in md and " one-off" in md


def _rules(out: str) -> dict[str, dict]:
    r = json.loads(out)["results"][0]
    return {x["rule"]: x for x in r["findings"]}


def test_kubernetes_annotation_waiver(tmp_path: Path) -> None:
    (tmp_path / ".advisor.yaml").write_text("limits: {max_chips: 4}\n")
    f = tmp_path / "k.yaml"
    f.write_text(K8S)
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "json", str(f))
    found = _rules(r.out)
    assert r.code == 0 and found["policy-max-chips"]["waived"] and "INFRA-42" in found["policy-max-chips"]["waiver"]["reason"]
    f.write_text(K8S.replace("2099-01-01", "2020-01-01"))
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "json", str(f))
    found = _rules(r.out)
    assert r.code == 1 and not found["policy-max-chips"]["waived"] and "expired on 2020-01-01" in found["waiver-invalid"]["message"]


def test_a_resource_waiver_meets_the_same_conditions_as_a_profile_waiver(tmp_path: Path) -> None:
    """An annotation is written by whoever writes the pull request: a reason of zero-width spaces
    waives nothing, and a waiver of ``waiver-invalid`` cannot hide another waiver's error."""
    (tmp_path / ".advisor.yaml").write_text("limits: {max_chips: 4}\n")
    f = tmp_path / "k.yaml"
    f.write_text(K8S.replace("capacity approved in INFRA-42", "\u200b\u200b"))
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "json", str(f))
    found = _rules(r.out)
    assert r.code == 1 and not found["policy-max-chips"]["waived"] and "no visible text" in found["waiver-invalid"]["message"]
    f.write_text(K8S.replace("capacity approved in INFRA-42", "ok\n      waiver-invalid until 2099-01-01: hide it"))
    r = run_cli("check", "--config", str(tmp_path / ".advisor.yaml"), "--format", "json", str(f))
    findings = json.loads(r.out)["results"][0]["findings"]
    invalid = [x for x in findings if x["rule"] == "waiver-invalid"]
    assert r.code == 1 and invalid and not any(x["waived"] for x in invalid)
    assert any("cannot be waived" in x["message"] for x in invalid)


def test_hcl_comment_and_skypilot_field_waivers(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text("limits: {allowed_accelerators: [h100]}\n")
    tf = tmp_path / "main.tf"
    tf.write_text(
        '# advisor:waive policy-accelerator-not-allowed until 2099-01-01: T4 for the demo only\nresource "aws_instance" "demo" {\n'
        '  instance_type = "g4dn.xlarge"\n}\n\nresource "aws_instance" "other" {\n  instance_type = "g5.xlarge"  # advisor:waive '
        'policy-accelerator-not-allowed\n}\n'
    )
    sky = tmp_path / "sky.yaml"
    sky.write_text(
        "name: s\nenvs:\n  ADVISOR_WAIVE: 'policy-accelerator-not-allowed until 2099-01-01: benchmark'\nresources:\n  accelerators: "
        "L4:1\nrun: x\n"
    )
    r = run_cli("check", "--config", str(tmp_path / "policy.yaml"), "--format", "json", str(tmp_path / "main.tf"), str(sky))
    res = {x["source"]["address"]: {f["rule"]: f for f in x["findings"]} for x in json.loads(r.out)["results"]}
    assert res["aws_instance.demo"]["policy-accelerator-not-allowed"]["waived"]
    assert not res["aws_instance.other"]["policy-accelerator-not-allowed"]["waived"]
    assert "has no reason" in res["aws_instance.other"]["waiver-invalid"]["message"]
    assert res["s"]["policy-accelerator-not-allowed"]["waived"]
