"""Hostile pull requests, review 18 of the gate (tests/data/hostile-review18): each case is a file set an attacker who
controls every file of a pull request writes, against a policy given with --policy from the base branch.

- 03: infra/terraform.tfvars, a symbolic link to the runner's ~/.terraformrc (hashicorp/setup-terraform writes the
  Terraform Cloud token there), read as the module's variable values: a guest_accelerator type taken from it printed
  the token in text, GitHub annotations, the markdown comment and SARIF. The walk refused links out of the repository
  for manifest names only, and the module's sibling files were opened by name, links followed.
- 01: a plan JSON committed in the pull request (infra/old-plan.json) that 'deletes' an 8-L4 node pool: its
  change.before was taken as the baseline without --baseline, so a new 8-L4 Deployment cost $0 net and passed
  max_monthly_increase_usd 2,000 with exit 0. Only a plan the workflow names (a file on the command line, stdin)
  carries its own before.
- 02: Dynamic Resource Allocation claims: the model was the first productName == literal whatever surrounded it, and
  a claim's requests were summed under the first request's model: '!(productName == "NVIDIA L4")' x 8 (any GPU but an
  L4) was judged l4 x 8, and 1 L4 + 8 H100 l4 x 9, both passing allowed_accelerators [l4] with exit 0.
- 06: a JobSet linked to a training profile was priced for its Jobs' 24 h deadline ($192 one-off) though each restart
  recreates them with a fresh one: maxRestarts 30 runs up to 744 h, and a RestartJobSetAndIgnoreMaxRestarts rule has no
  bound; both passed max_monthly_increase_usd and max_one_off_increase_usd of $2,000 with exit 0.
- 05: SkyPilot and dstack tasks that pin no cloud or region (SkyPilot launches on any cloud it has credentials for), or
  list fallbacks elsewhere (ordered: gcp/us-central1 then aws/us-east-1; dstack backends [gcp, aws]), passed
  allowed_clouds [gcp] and allowed_regions [us-central1] with exit 0: only the option priced was held to them.
- 07: a Deployment whose required node affinity allows topology.kubernetes.io/region In [us-central1, europe-west4]
  was judged in us-central1 only and passed allowed_regions [us-central1].
- 04: an advisor.dev/workload annotation naming an absolute or ../ path out of the repository was opened as a
  profile: whether a runner's file exists, and its first validation fault, reached every output.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .conftest import ROOT, git_checkout, run_cli

CASES = ROOT / "tests" / "data" / "hostile-review18"
SECRET = "SECRETTOKEN0123456789.atlasv1.abcdefghijklmnop"


def _repo(tmp_path: Path, case: str) -> Path:
    return git_checkout(CASES / case, tmp_path)


def _policy(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    return p


def test_a_tfvars_link_out_of_the_repository_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "home" / ".terraformrc"
    outside.parent.mkdir()
    outside.write_text(f'credentials "app.terraform.io" {{\n  token = "{SECRET}"\n}}\n')
    repo = _repo(tmp_path, "03-tfvars-link")
    os.symlink(outside, repo / "infra" / "terraform.tfvars")
    pol = _policy(tmp_path, "limits:\n  max_chips: 8\n  allowed_accelerators: [l4]\n")
    for fmt in ("text", "github", "markdown", "sarif", "json", "junit"):
        r = run_cli("check", str(repo / "infra"), "--policy", str(pol), "--format", fmt)
        assert SECRET not in r.out + r.err, fmt
        assert r.code == 2, (fmt, r.code, r.err[-500:])
    # the directory named explicitly, and the file beside it, the same
    r = run_cli("check", str(repo / "infra" / "main.tf"), "--policy", str(pol), "--format", "json")
    assert SECRET not in r.out + r.err and r.code == 2
    r = run_cli("check", str(repo / "infra"), "--policy", str(pol), "--format", "json")
    assert "terraform.tfvars:1:1: error: a symbolic link to a file outside the repository" in r.err, r.err


def test_a_plan_found_in_the_checkout_is_no_baseline(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "01-fake-plan")
    pol = _policy(tmp_path, "limits:\n  max_monthly_increase_usd: 2000\n")
    r = run_cli("check", str(repo / "infra"), "--policy", str(pol), "--format", "json")
    assert r.code == 1, (r.code, r.err)
    data = json.loads(r.out)
    assert data["diff"]["cost_delta_usd"] > 2000 and data["diff"]["baseline"] == "none", data["diff"]
    assert "policy-monthly-increase" in {f["rule"] for x in data["results"] for f in x["findings"]}
    # named by the workflow, the same plan is its resources' baseline (what the documented workflow does)
    r = run_cli("check", str(repo / "infra" / "old-plan.json"), "--policy", str(pol), "--format", "json")
    assert json.loads(r.out)["diff"]["baseline"] == "plan-prior-state"


def test_a_dra_selector_names_a_model_only_as_a_plain_equality(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "02-dra-selectors")
    pol = _policy(tmp_path, "limits:\n  max_chips: 16\n  allowed_accelerators: [l4]\n")
    r = run_cli("check", str(repo), "--policy", str(pol), "--format", "json")
    data = json.loads(r.out)
    got = {x["source"]["address"]: x for x in data["results"]}
    assert r.code == 1, r.err
    for name in ("Deployment/ml/neg", "Deployment/ml/cls"):  # every GPU but an L4: unknown, held to the policy
        req = got[name]["request"]
        assert req["accelerator"] is None and req["total_chips"] == 8, (name, req)
        assert "policy-accelerator-not-allowed" in {f["rule"] for f in got[name]["findings"]}, name
    two = got["Deployment/ml/two"]  # 1 L4 + 8 H100: 9 devices, judged on the H100, the L4 held to the policy too
    assert (two["request"]["accelerator"], two["request"]["total_chips"]) == ("h100", 9), two["request"]
    assert "policy-accelerator-not-allowed" in {f["rule"] for f in two["findings"]}
    plain = got["Deployment/ml/plain"]  # an equality in a conjunction names the model
    assert (plain["request"]["accelerator"], plain["request"]["total_chips"]) == ("l4", 2), plain["request"]
    assert "policy-accelerator-not-allowed" not in {f["rule"] for f in plain["findings"]}


def test_a_jobset_run_is_bounded_by_its_deadline_times_its_restarts(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "06-jobset-restarts")
    pol = _policy(tmp_path, "limits:\n  max_monthly_increase_usd: 2000\n  max_one_off_increase_usd: 2000\n")
    r = run_cli("check", str(repo / "infra"), "--policy", str(pol), "--format", "json")
    assert r.code == 1, (r.code, r.err)
    jobs = [x for x in json.loads(r.out)["results"] if x["source"]["kind"] != "profile"]
    assert len(jobs) == 2 and all(x["cost_kind"] == "monthly" for x in jobs), [(x["key"], x["cost_kind"]) for x in jobs]
    # no restarts: the deadline is the bound, a run
    one = (repo / "infra" / "jobset.yaml")
    one.write_text(one.read_text().replace("maxRestarts: 30", "maxRestarts: 0"))
    (repo / "infra" / "jobset-ignore-max.yaml").unlink()
    r = run_cli("check", str(repo / "infra"), "--policy", str(pol), "--format", "json")
    (job,) = [x for x in json.loads(r.out)["results"] if x["source"]["kind"] != "profile"]
    assert job["cost_kind"] == "one-off" and job["proposal"]["request"]["hours"] == 24.0, job["proposal"]["request"]


def test_a_launcher_task_is_held_to_the_policy_in_every_place_it_may_launch(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "05-launcher-places")
    pol = _policy(tmp_path, "limits:\n  allowed_clouds: [gcp]\n  allowed_regions: [us-central1]\n")
    r = run_cli("check", str(repo), "--policy", str(pol), "--format", "json")
    assert r.code == 1, (r.code, r.err)
    got = {Path(x["source"]["path"]).name: {f["rule"] for f in x["findings"]} for x in json.loads(r.out)["results"]}
    assert "policy-region-not-allowed" in got["anyregion.yaml"], got
    for name in ("no-cloud.yaml", "ordered.yaml", "dstack-two-backends.dstack.yml"):
        assert {"policy-cloud-not-allowed", "policy-region-not-allowed"} <= got[name], (name, got[name])
    # pinned to the allowed cloud and region: no finding
    (repo / "tasks" / "pinned.yaml").write_text(
        "name: pinned\nresources:\n  accelerators: L4:8\n  infra: gcp/us-central1\nrun: echo\n")
    r = run_cli("check", str(repo / "tasks" / "pinned.yaml"), "--policy", str(pol), "--format", "json")
    (only,) = json.loads(r.out)["results"]
    assert not {"policy-cloud-not-allowed", "policy-region-not-allowed"} & {f["rule"] for f in only["findings"]}


def test_every_region_a_node_affinity_allows_is_held_to_the_policy(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "07-region-affinity")
    pol = _policy(tmp_path, "limits:\n  allowed_regions: [us-central1]\n")
    r = run_cli("check", str(repo), "--policy", str(pol), "--format", "json")
    (dep,) = json.loads(r.out)["results"]
    assert r.code == 1 and any(f["rule"] == "policy-region-not-allowed" and "europe-west4" in f["message"] for f in dep["findings"])
    r = run_cli("check", str(repo), "--policy", str(_policy(tmp_path, "limits:\n  allowed_regions: [us-central1, europe-*]\n")),
                "--format", "json")
    (dep,) = json.loads(r.out)["results"]
    assert "policy-region-not-allowed" not in {f["rule"] for f in dep["findings"]}


def test_a_workload_link_out_of_the_repository_is_never_opened(tmp_path: Path) -> None:
    outside = tmp_path / "runner" / "kubeconfig.yaml"
    outside.parent.mkdir()
    outside.write_text("apiVersion: v1\nclusters: [{name: prod-secret-cluster}]\n")
    repo = tmp_path / "repo"
    (repo / "infra").mkdir(parents=True)
    job = (CASES / "04-workload-link" / "job.yaml").read_text()
    (repo / "infra" / "job.yaml").write_text(job.replace("ABSOLUTE", str(outside)).replace(
        "RELATIVE", "../" * (len(repo.parts) + 2) + str(outside).lstrip("/")))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    r = run_cli("check", str(repo / "infra"), "--no-config", "--format", "json", "--fail-on", "never")
    assert r.code == 0, r.err
    assert "prod-secret-cluster" not in r.out + r.err and "clusters" not in r.out
    broken = [f["message"] for x in json.loads(r.out)["results"] for f in x["findings"] if f["rule"] == "workload-link-broken"]
    assert len(broken) == 2 and all("outside the repository" in m for m in broken), broken


def test_every_fallback_and_padded_list_is_held_to_the_policy(tmp_path: Path) -> None:
    # review 19 of this change: a pinned first option hid an unpinned or unknown-cloud fallback, and lists padded with
    # an allowed value hid the one after the bound (dstack regions, node-affinity values)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "fallback.yaml").write_text(
        "name: f\nresources:\n  ordered:\n    - {infra: gcp/us-central1, accelerators: L4:8}\n    - {accelerators: L4:8}\nrun: echo\n")
    (repo / "runpod.yaml").write_text(
        "name: r\nresources:\n  ordered:\n    - {infra: gcp/us-central1, accelerators: L4:8}\n"
        "    - {infra: runpod, accelerators: L4:8}\nrun: echo\n")
    padded = ", ".join(["us-central1"] * 70 + ["europe-west4"])
    (repo / "padded.dstack.yml").write_text(
        f"type: task\nname: p\nbackends: [gcp]\nregions: [{padded}]\nresources:\n  gpu: L4:8\ncommands: [echo]\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    pol = _policy(tmp_path, "limits:\n  allowed_clouds: [gcp]\n  allowed_regions: [us-central1]\n")
    r = run_cli("check", str(repo), "--policy", str(pol), "--format", "json")
    got = {Path(x["source"]["path"]).name: {f["rule"] for f in x["findings"]} for x in json.loads(r.out)["results"]}
    assert r.code == 1 and {"policy-cloud-not-allowed", "policy-region-not-allowed"} <= got["fallback.yaml"], got
    assert "policy-cloud-not-allowed" in got["runpod.yaml"], got
    assert "policy-region-not-allowed" in got["padded.dstack.yml"], got


def test_a_workload_link_out_of_the_repository_says_the_same_whether_the_file_exists(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "infra").mkdir(parents=True)
    job = (CASES / "04-workload-link" / "job.yaml").read_text()
    (repo / "infra" / "job.yaml").write_text(job.replace("ABSOLUTE", "/nonexistent/a.yaml").replace("RELATIVE", "/etc/hostname.yaml"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    r = run_cli("check", str(repo / "infra"), "--no-config", "--format", "json", "--fail-on", "never")
    broken = [f["message"] for x in json.loads(r.out)["results"] for f in x["findings"] if f["rule"] == "workload-link-broken"]
    assert len(broken) == 2 and all("outside the repository" in m for m in broken), broken


def test_a_link_to_the_workflows_plan_is_not_that_plan(tmp_path: Path) -> None:
    # the workflow names its plan; a link to it the pull request adds, found by the walk, is a plan found in the checkout:
    # its before is no baseline (its deletions are not credited a second time)
    repo = _repo(tmp_path, "01-fake-plan")
    os.symlink(repo / "infra" / "old-plan.json", repo / "infra" / "again.json")
    pol = _policy(tmp_path, "limits:\n  max_monthly_increase_usd: 2000\n")
    r = run_cli("check", str(repo / "infra" / "old-plan.json"), str(repo / "infra"), "--policy", str(pol), "--format", "json")
    data = json.loads(r.out)
    trusted = [x["source"]["path"] for x in data["results"] if x.get("before") is not None]
    assert trusted and all(Path(p).name == "old-plan.json" for p in trusted), trusted


def test_a_run_made_wider_and_shorter_moves_a_months_spend_by_what_it_does(tmp_path: Path) -> None:
    # review 19 of this change: a baseline run of 8 L4 for 7,300 h changed to 80 L4 for 730 h costs the same, so the
    # monthly limit saw +$0, though its costliest month is ten times dearer (each side now at its own month share)
    def run(count: int, hours: int) -> str:
        return ("name: ft\ntask: fine-tuning\ndomain: llm\nmodel: {params_b: 8}\ntraining: {tokens_b: 1, method: lora}\n"
                f"deployment: {{clouds: [gcp]}}\nproposal: {{accelerator: l4, count: {count}, hours: {hours}}}\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "ft.yaml").write_text(run(8, 7300))
    base = tmp_path / "base.json"
    r = run_cli("check", str(repo / "ft.yaml"), "--no-config", "--format", "json", "--fail-on", "never", "-o", str(base))
    assert r.code == 0, r.err
    (repo / "ft.yaml").write_text(run(80, 730))
    pol = _policy(tmp_path, "limits:\n  max_monthly_increase_usd: 1000\n")
    r = run_cli("check", str(repo / "ft.yaml"), "--policy", str(pol), "--baseline", str(base), "--format", "json")
    data = json.loads(r.out)
    (change,) = data["diff"]["changes"]
    assert abs(change["cost_delta_usd"]) < 1 and change["month_delta_usd"] > 1000, change
    assert r.code == 1 and "policy-monthly-increase" in {f["rule"] for x in data["results"] for f in x["findings"]}
