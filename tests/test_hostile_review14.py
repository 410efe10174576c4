"""Hostile pull requests, a review of the gate (tests/data/hostile-review14): each case is a file set an attacker who
controls every file of a pull request writes, where an earlier version passed accelerators a policy given with
--policy forbids, or stopped the run.

- 04: a Helm chart (judged without helm) whose two helper files define one name, templates/_a_gpus.tpl (64 GPUs)
  and templates/_z_defaults.tpl (1): Helm parses templates deepest first and, at one depth, in descending name order
  (pkg/engine sortTemplates: sort.Reverse(byPathLen)), so the alphabetically first file's definition is parsed last
  and wins (64); advisor parsed them ascending and judged 1 GPU, exit 0 under max_chips 8. An empty redefinition
  (only whitespace and comments) replaces nothing, as text/template's IsEmptyTree rule says;
- 02: a Cluster API MachineDeployment annotated cluster-api-autoscaler-node-group-max-size: "+100", which the cluster
  autoscaler reads as 100 (strconv.Atoi), was judged at 1 replica (the value dropped as absent), exit 0;
- 03: Unicode digits ("²" passes str.isdigit(), int() refuses it) in a Cluster API size, an Argo withSequence bound,
  a Cloud Run GPU limit and an Argo CD Application's kustomize replicas: an internal error per file, or the whole run
  dead (exit 3, no report); now a count not read (request-unresolved, the policy failing closed) or an input error;
- 01: a CloudFormation AutoScalingGroup and an EKS Nodegroup of 100 g6.xlarge that take the instance type from a
  LaunchTemplate: judged as the template alone, 'l4 x 1', exit 0.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .conftest import ROOT, git_checkout, run_cli

CASES = ROOT / "tests" / "data" / "hostile-review14"
POLICY = CASES / "policy.yaml"  # max_chips 8, allowed_accelerators [l4], max_monthly_increase_usd 20,000


def _repo(tmp_path: Path, case: str) -> Path:
    return git_checkout(CASES / case, tmp_path)


def _gate(repo: Path, *paths: str) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", *[str(repo / p) for p in paths], "--policy", str(POLICY), "--format", "json")
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def test_a_named_template_defined_twice_is_the_one_helm_keeps(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "04-helm-define-precedence")
    code, data, err = _gate(repo, "chart")
    (r,) = data["results"]
    assert r["request"]["total_chips"] == 64 and code == 1, (code, r["request"], err)
    assert "policy-max-chips" in {f["rule"] for f in r["findings"]}
    # an empty redefinition, parsed last, keeps the definition before it
    code, data, err = _gate(repo, "empty-redefinition")
    (r,) = data["results"]
    assert r["request"]["total_chips"] == 64 and code == 1, (code, r["request"], err)


def test_a_cluster_api_size_is_read_as_the_autoscaler_reads_it(tmp_path: Path) -> None:
    # before: 'l4 x 1 x 1', pass, exit 0: "+100" (strconv.Atoi: 100) was dropped as if absent
    repo = _repo(tmp_path, "02-capi-plus-sign")
    code, data, err = _gate(repo, "capi.yaml")
    (r,) = data["results"]
    assert r["request"]["replicas_max"] == 100 and r["request"]["total_chips"] == 100 and code == 1, (code, r["request"], err)
    assert "policy-max-chips" in {f["rule"] for f in r["findings"]}


def test_unicode_digits_are_a_count_not_read_never_an_internal_error(tmp_path: Path) -> None:
    # before: 'internal error while reading this file ... (a bug in advisor)' for each file, and through the Argo CD
    # Application the whole run died (exit 3) with no report written
    repo = _repo(tmp_path, "03-unicode-digits")
    for name in ("capi.yaml", "argo-workflow.yaml", "cloudrun.tf"):
        code, data, err = _gate(repo, name)
        assert "internal error" not in err + json.dumps(data), (name, err)
        (r,) = data["results"]
        rules = {f["rule"] for f in r["findings"]}
        assert code == 1 and {"request-unresolved", "policy-max-chips"} <= rules, (name, code, rules)
    out = repo / "comment.md"
    r = run_cli("check", str(repo), "--policy", str(POLICY), "--format", "markdown", "-o", str(out))
    assert r.code == 2 and "argocd-app.yaml:11:28: error: replicas[0].count: expected a whole number, got '²'" in r.err, r.err
    assert out.is_file() and "good-deployment.yaml" in out.read_text(), "the other files' findings are reported"


def test_a_cloudformation_group_is_counted_at_its_size_with_its_launch_templates_hardware(tmp_path: Path) -> None:
    # before: 'LT l4 x 1', pass, exit 0, for 100 x g6.xlarge in an AutoScalingGroup or an EKS Nodegroup
    repo = _repo(tmp_path, "01-cfn-groups")
    for name in ("asg.yaml", "nodegroup.yaml"):
        code, data, err = _gate(repo, name)
        (r,) = data["results"]  # the template is counted once, in its group
        assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("l4", 100) and code == 1, (name, r, err)
        assert "policy-max-chips" in {f["rule"] for f in r["findings"]}
    code, data, err = _gate(repo, "asg-mixed-params.yaml")
    (r,) = data["results"]  # MaxSize from a parameter's default, the template named through Fn::GetAtt
    assert (r["request"]["accelerator"], r["request"]["total_chips"]) == ("h100", 96), (r["request"], err)


def test_a_file_dependency_is_never_read_through_a_link_out_of_the_repository(tmp_path: Path) -> None:
    # before: the dependency's values.yaml, a link to a file outside the repository, was read and its secret printed
    # ("'SECRET-abc123' is ...") by a check of the parent chart
    secret = tmp_path / "outside-secret.yaml"
    secret.write_text("token: SECRET-abc123\n")
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "15-helm-file-deps" / "helm-leak", repo)
    (repo / "dep" / "values.yaml").symlink_to(secret)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    r = run_cli("check", str(repo / "parent"), "--policy", str(POLICY), "--format", "json")
    assert "SECRET-abc123" not in r.out + r.err, (r.out, r.err)


def test_a_chart_some_chart_names_as_a_file_dependency_is_still_judged(tmp_path: Path) -> None:
    # before: a decoy chart listing worker (64 L4) as a dependency it disables made the worker 'judged there': exit 0
    repo = _repo(tmp_path, "15-helm-file-deps")
    code, data, err = _gate(repo, "helm-cond")
    assert code == 1 and sum(r["request"]["total_chips"] or 0 for r in data["results"]) >= 64, (code, err)
    # a chart naming itself (file://.) is not its own subchart: rendered once, not 40 times
    code, data, err = _gate(repo, "helm-self")
    assert len(data["results"]) == 1, [r["source"]["path"] for r in data["results"]]
    # a dependency kept higher up on disk is still a subchart: the parent's own helper wins (64, as helm renders it)
    code, data, err = _gate(repo, "helm-order")
    (r,) = data["results"]
    assert r["request"]["total_chips"] == 64 and code == 1, (r["request"], err)


def test_a_second_template_reference_does_not_decoy_a_group_off_its_gpu_template(tmp_path: Path) -> None:
    # before: an Auto Scaling group of 100 that also names a CPU launch template (in a tag) joined that one, was dropped,
    # and the GPU template was judged alone, 'l4 x 1', exit 0; the same in Terraform; and a template named by its
    # literal LaunchTemplateName was never joined
    repo = _repo(tmp_path, "01-cfn-groups")
    for name in ("decoy.yaml", "named.yaml"):
        code, data, err = _gate(repo, name)
        chips = [(r["request"]["accelerator"], r["request"]["total_chips"]) for r in data["results"]]
        assert ("l4", 100) in chips and code == 1, (name, chips, err)
    repo = tmp_path / "tf"
    shutil.copytree(CASES / "16-tf-decoy-template", repo)
    code, data, err = _gate(repo, "main.tf")
    chips = [(r["request"]["accelerator"], r["request"]["total_chips"]) for r in data["results"]]
    assert ("l4", 100) in chips and code == 1, (chips, err)


def test_the_new_readers_fail_closed(tmp_path: Path) -> None:
    """A review of this round's readers: KAI's gpu-fraction-num-devices (64 GPUs read as 1), KServe maxReplicas: null
    (read as bounded), a VLLMRuntime of -60 GPUs (subtracted from the run's totals) or with a malformed selector
    (an internal error), and a CRLF file whose broken document made the whole file skip a valid 50-GPU Deployment."""
    repo = _repo(tmp_path, "17-new-readers")

    def one(name: str) -> tuple[int, dict[str, Any], str]:
        return _gate(repo, name)

    code, data, err = one("kai-multi.yaml")
    assert data["results"][0]["request"]["total_chips"] == 64 and code == 1, (data, err)
    code, data, err = one("null-max.yaml")
    assert "request-unresolved" in {f["rule"] for f in data["results"][0]["findings"]}, data
    code, data, err = one("neg.yaml")
    assert code == 2 and "neg.yaml:7:22: error: spec.deploymentConfig.resources.gpu: -60 is out of range" in err, err
    code, data, err = one("crash.yaml")
    assert "internal error" not in err + json.dumps(data) and data["results"], (err, data)
    crlf = repo / "kai-crlf.yaml"  # the case with CRLF line endings, written here (a checkout may convert them)
    crlf.write_bytes((repo / "kai-broken.yaml").read_bytes().replace(b"\n", b"\r\n"))
    code, data, err = one("kai-crlf.yaml")
    assert code == 2 and "kai-crlf.yaml:23:5: error: invalid YAML" in err, err  # never skipped whole


def _run_case(tmp_path: Path, deadline_s: int | None, policy: str) -> tuple[int, dict[str, Any]]:
    repo = _repo(tmp_path, "05-month-long-run")
    (repo / "policy.yaml").unlink()  # the policy is the workflow's, not the pull request's
    if deadline_s is not None:
        job = repo / "job.yaml"
        job.write_text(job.read_text().replace("2592000", str(deadline_s)))
    pol = tmp_path / "policy.yaml"
    pol.write_text(policy)
    r = run_cli("check", str(repo), "--policy", str(pol), "--format", "json")
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def _rules(data: dict[str, Any]) -> set[str]:
    return {f["rule"] for x in data["results"] for f in x["findings"] if not f["waived"]}


def test_a_month_long_run_linked_to_a_profile_of_the_same_change_is_held_to_the_monthly_limit(tmp_path: Path) -> None:
    # 05: 8 pods x 8 L4 for 30 days (activeDeadlineSeconds 2592000), linked to a fine-tuning profile the pull request
    # adds, is a run priced one-off (~$46k); before, the monthly limit of $20,000 did not read one-off spend: exit 0
    policy = (CASES / "05-month-long-run" / "policy.yaml").read_text()
    code, data = _run_case(tmp_path / "a", None, policy)
    (job,) = [x for x in data["results"] if x["source"]["kind"] != "profile"]
    assert job["cost_kind"] == "one-off" and job["proposal"]["request"]["cost_usd"] > 20_000
    assert code == 1 and "policy-monthly-increase" in {f["rule"] for f in job["findings"]}, job["findings"]
    # a run of a day (~$1.5k) stays under it
    code, data = _run_case(tmp_path / "b", 86_400, policy)
    assert "policy-monthly-increase" not in _rules(data), _rules(data)
    # a deadline past a month is always-on spend, as before
    code, data = _run_case(tmp_path / "c", 2 * 2_592_000, policy)
    (change,) = [c for c in data["diff"]["changes"] if c["key"].endswith("job.yaml::Job/default/j")]
    assert change["cost_kind"] == "monthly" and code == 1 and "policy-monthly-increase" in _rules(data)


def test_one_off_runs_have_a_limit_of_their_own(tmp_path: Path) -> None:
    code, data = _run_case(tmp_path / "a", 86_400, "limits:\n  max_one_off_increase_usd: 1000\n")
    assert code == 1 and _rules(data) >= {"policy-one-off-increase"}, _rules(data)
    assert "policy-monthly-increase" not in _rules(data)
    code, data = _run_case(tmp_path / "b", 86_400, "limits:\n  max_one_off_increase_usd: 100000\n")
    assert "policy-one-off-increase" not in _rules(data), _rules(data)
