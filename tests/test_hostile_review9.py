"""Hostile pull requests, a review of the whole tool (tests/data/hostile-review9): each case is a file set an attacker
who controls every file of a pull request writes, where an earlier version ran the attacker's commands, passed
accelerators the policy forbids or hung.

- 01: a catalog override (negotiated prices kept in the repository) whose slice machine_type holds a newline and a
  command: it ended setup.sh's step comment and ran on every ./setup.sh call (even --list), and its markdown reached
  the report. Names that reach generated files are a cloud's name alphabet (catalog.CloudName); an override that is
  not is an input error at its position;
- 09: a Terraform file python-hcl2 cannot parse (valid HCL: enabled = !!true) whose node pool takes its machine from a
  local of another file (machine_type = local.machine, "a3-highgpu-8g" in locals.tf): it was skipped as naming no
  accelerator, so 100 x a3-highgpu-8g passed a policy allowing L4 only; now a request of unknown hardware, unresolved;
- 13: a committed GPU manifest the change's .gitignore lists, in a checkout another user owns (a container job in CI):
  git ls-files refused it ("dubious ownership") and the .gitignore alone decided, so 80 H100 passed; advisor names the
  repository safe for its own git call, and any other git failure stops the run (exit 4);
- 04, 05, 06: a .gitignore glob (*a*a*a*a*a*b) and a kustomize target name (a?a?...aaa...) that backtracked
  exponentially against a long name (past 120 s), and a .gitignore range git accepts ([z-a]) that crashed the gate;
- 03: parts of a Helm chart that Helm deploys, unseen without helm: a packaged subchart (charts/gpu-0.1.0.tgz, not
  listed in Chart.yaml) whose template asks for 8 H100 x 100, and charts/, charts/gpu or crds/ as links to directories
  of the repository (Helm's loader follows them): each passed with exit 0, total_chips 0;
- 11: a Job of 64 H100 that never ends, linked to a tiny fine-tuning profile the same change adds: its cost became a
  one-off run of 10 minutes ($56), which max_monthly_increase_usd does not read ($512,941 a month passed, exit 0). A
  linked estimate prices a run only within what the manifest enforces (activeDeadlineSeconds); else a month;
- 02: kustomize overlays that kubectl kustomize (v5.5) builds to 100 replicas of 8 L4 read at 1 (800 GPUs under
  max_chips 64, exit 0): replicas after the kustomization's own ReplicaCountTransformer, replicas and a JSON 6902
  patch naming the prefixed name, and configurations (field specs) ignored. The builtin transformers now run in
  kustomize's order, its own transformers last, and configurations are request-unresolved;
- 14: a glob path (k8s/**/*.yaml, the Action's paths input) skipped the committed k8s/.gpu.yaml and k8s/.hidden/*.yaml
  (glob never matches a leading dot): 160 H100 passed, where the directory k8s fails; now the same files are read;
- 12: a Jsonnet file an Argo CD directory application deploys (100 x 8 H100) was neither read nor listed (exit 0): one
  that names accelerators is now an input error at that name, another a skipped file;
- 08: a CronJob every minute with concurrencyPolicy Allow (the default) and day-long runs (~1,440 Jobs of 8 GPUs at
  once) was read as one Job; its runs may overlap, so the count is request-unresolved unless Forbid or Replace;
- 07, 10: an output path through a link the change commits: advisor.md -> /dev/null (the report lost), scaffold ->
  ../outside (an executable setup.sh written out of the checkout), reports -> ../outside for report -o.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from advisor.scaffold.fill import fill_command

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "hostile-review9"


@pytest.mark.parametrize("command", ["scaffold", "report", "recommend"])
def test_a_catalog_override_cannot_carry_commands_or_markup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "01-catalog-override-injection", repo)
    monkeypatch.chdir(repo)
    for override in ("policy/negotiated-prices.yaml", "policy/markdown.yaml"):
        out = tmp_path / "out"
        args = {"scaffold": ["-o", str(out)], "report": ["-o", str(tmp_path / "r.md")], "recommend": []}[command]
        r = run_cli(command, "bert.yaml", "--catalog", override, *args)
        assert r.code == 2, (command, override, r.code, r.out[-400:])
        assert f"{override}:" in r.err and "machine_type" in r.err and "should match pattern" in r.err, r.err
        assert not out.exists() and not (tmp_path / "r.md").exists()


def test_a_value_in_a_heredoc_cannot_end_it() -> None:
    """Defence in depth (every catalog and profile value is validated first): a placeholder's value in a heredoc body is
    one line, so it cannot put the delimiter on a line of its own."""
    cmd = "cat > job.yaml <<EOF\nmachineType: {machine_type}\nEOF"
    got = fill_command(cmd, {"machine_type": "ct6e\nEOF\ntouch /tmp/x"}, {})
    assert got.splitlines().count("EOF") == 1 and got.splitlines()[-1] == "EOF", got
    quoted = fill_command("cat > job.yaml <<'EOF'\nmachineType: {machine_type}\nEOF", {"machine_type": "a\nEOF\nid"}, {})
    assert quoted.splitlines().count("EOF") == 1, quoted


def test_an_unparseable_terraform_file_whose_machine_is_a_reference_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES / "09-unparseable-tf-machine-elsewhere")
    r = run_cli("check", "tf", "--policy", str(CASES / "policy-09.yaml"), "--format", "json")
    assert r.code == 1, (r.code, r.err[-400:])
    [res] = json.loads(r.out)["results"]
    assert res["source"]["address"] == "google_container_node_pool.pool" and res["request"]["hardware"] == "local.machine"
    assert {"request-unknown-accelerator", "request-unresolved"} <= {f["rule"] for f in res["findings"]}


def _repo_of(tmp_path: Path, case: str) -> Path:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    repo = tmp_path / "repo"
    shutil.copytree(CASES / case, repo)
    (repo / "gitignore.pr").rename(repo / ".gitignore")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "."], ["add", "-A"], ["add", "-f", "k8s/gpu.yaml"],
                 ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "pr"]):
        subprocess.run([git, *args], cwd=repo, check=True, env=env, capture_output=True, timeout=60)
    return repo


def test_a_gitignore_cannot_hide_a_committed_file_from_a_checkout_another_user_owns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to give the checkout to another user")
    repo = _repo_of(tmp_path, "13-gitignore-hides-tracked")
    for d, _dirs, files in os.walk(repo):
        for name in [d, *(os.path.join(d, f) for f in files)]:
            os.chown(name, 1001, 1001)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(repo)
    r = run_cli("check", "k8s", "--policy", str(CASES / "policy-13.yaml"), "--format", "json")
    assert r.code == 1, (r.code, r.err[-400:])
    assert json.loads(r.out)["summary"]["total_chips"] == 80


def test_a_git_failure_stops_the_run_rather_than_trusting_the_gitignore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo_of(tmp_path, "13-gitignore-hides-tracked")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\necho 'fatal: something went wrong' >&2\nexit 128\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(repo)
    r = run_cli("check", "k8s", "--policy", str(CASES / "policy-13.yaml"), "--format", "json")
    assert r.code == 4 and "git ls-files" in r.err and "something went wrong" in r.err, (r.code, r.err)


def _plain_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (repo / ".git").mkdir()
    return repo


GPU_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
           "    resources: {limits: {nvidia.com/gpu: 8}}\n")


@pytest.mark.parametrize("line", ["*a*a*a*a*a*b", "[z-a]", "[[:alpha:]]x", "[!a-"])
def test_a_gitignore_line_neither_hangs_nor_crashes_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    repo = _plain_repo(tmp_path, {"k8s/" + "a" * 200 + ".yaml": GPU_POD, ".gitignore": line + "\n"})
    monkeypatch.chdir(repo)
    t = time.monotonic()
    r = run_cli("check", "k8s", "--no-config", "--format", "json", "--fail-on", "never")
    assert r.code == 0 and time.monotonic() - t < 30, (r.code, r.err[-300:], time.monotonic() - t)
    assert json.loads(r.out)["summary"]["total_chips"] == 8


def test_glob_matching_is_the_gitignore_semantics() -> None:
    from advisor.check.files import _Glob

    cases = [("*.yaml", "x.yaml", True), ("*.yaml", "a/x.yaml", False), ("**/foo", "a/b/foo", True), ("**/foo", "foo", True),
             ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True), ("a/**/b", "ab", False), ("a/**", "a/x/y", True),
             ("[a-c]x", "bx", True), ("[!a-c]x", "bx", False), ("[z-a]", "z", False), ("[[:digit:]]", "7", True),
             ("?", "/", False), ("a\\*", "a*", True), ("a\\*", "ab", False)]
    for pattern, text, want in cases:
        assert _Glob(pattern).match(text) is want, (pattern, text)


def test_a_kustomize_target_pattern_that_backtracks_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 32
    deploy = GPU_POD.replace("kind: Pod\nmetadata: {name: p}\nspec:\n", "kind: Deployment\nmetadata: {name: " + "a" * n + "b}\n"
                             "spec:\n  replicas: 1\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n"
                             "    spec:\n").replace("\n  containers:", "\n      containers:").replace("\n  - name", "\n      - name")
    deploy = deploy.replace("\n    image: x\n    resources", "\n        image: x\n        resources")
    kz = ("resources: [deploy.yaml]\npatches:\n- target: {kind: Deployment, name: \"" + "a?" * n + "a" * n + "\"}\n"
          "  patch: |-\n    - {op: replace, path: /spec/replicas, value: 2}\n")
    repo = _plain_repo(tmp_path, {"k8s/deploy.yaml": deploy, "k8s/kustomization.yaml": kz})
    monkeypatch.chdir(repo)
    t = time.monotonic()
    r = run_cli("check", "k8s", "--no-config", "--format", "json", "--fail-on", "never")
    assert time.monotonic() - t < 30 and r.code == 0, (r.code, r.err[-300:])
    rules = {f["rule"] for x in json.loads(r.out)["results"] for f in x["findings"]}
    assert "request-unresolved" in rules, rules


@pytest.mark.parametrize("case", ["a-packaged-subchart", "b-charts-dir-symlink", "c-subchart-symlink", "d-crds-dir-symlink"])
def test_every_part_of_a_chart_helm_deploys_is_read_without_helm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str,
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "03-helm-chart-parts", repo, symlinks=True)
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no helm: advisor renders the chart itself
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "helm" else _which(name, *a, **k))
    r = run_cli("check", f"deploy/{case}", "--policy", str(CASES / "policy-03.yaml"), "--format", "json")
    assert r.code == 1, (case, r.code, r.err[-300:])
    [res] = json.loads(r.out)["results"]
    if case == "a-packaged-subchart":  # not rendered: the packaged templates name a chip resource
        assert "gpu-0.1.0.tgz" in res["request"]["hardware"], res["request"]
        assert {"request-unknown-accelerator", "request-unresolved"} <= {f["rule"] for f in res["findings"]}
    else:
        assert res["request"]["total_chips"] == 800, res["request"]


_which = shutil.which


def test_a_profile_of_the_change_cannot_shorten_a_job_nothing_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "11-linked-job-monthly", repo)
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    policy = str(CASES / "policy-11.yaml")
    r = run_cli("check", "k8s", "workloads", "--policy", policy, "--format", "json")
    assert r.code == 1, (r.code, r.err[-300:])
    [res] = json.loads(r.out)["results"]
    assert res["cost_kind"] == "monthly" and "policy-monthly-increase" in {f["rule"] for f in res["findings"]}, res["cost_kind"]
    # a deadline the manifest enforces prices the run at it (the most it runs), as a run
    job = repo / "k8s" / "job.yaml"
    job.write_text(job.read_text().replace("spec:\n", "spec:\n  activeDeadlineSeconds: 7200\n", 1))
    r = run_cli("check", "k8s", "workloads", "--policy", policy, "--format", "json")
    [res] = json.loads(r.out)["results"]
    assert res["cost_kind"] == "one-off" and res["proposal"]["request"]["hours"] == pytest.approx(2.0), res["proposal"]["request"]


@pytest.mark.parametrize("command", ["check", "report", "scaffold", "init"])
def test_no_command_writes_through_a_link_the_change_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "01-catalog-override-injection", repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(repo)
    out = {"check": "advisor.md", "report": "reports/r.md", "scaffold": "scaffold", "init": "new/w.yaml"}[command]
    link = Path(out.split("/")[0])
    link.symlink_to(outside if command != "check" else Path(os.devnull))
    args = {"check": ["check", "bert.yaml", "--format", "markdown", "-o", out],
            "report": ["report", "bert.yaml", "-o", out],
            "scaffold": ["scaffold", "bert.yaml", "-o", out],
            "init": ["init", out]}[command]
    r = run_cli(*args)
    assert r.code == 2 and "symbolic link" in r.err, (command, r.code, r.err[-300:])
    assert not link.is_symlink() and list(outside.iterdir()) == []


@pytest.mark.parametrize("case", ["a-transformer-after-replicas", "b-replicas-by-prefixed-name", "c-json6902-by-prefixed-name",
                                  "d-configurations-extend-replicas"])
def test_kustomize_overlays_are_built_in_kustomizes_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CASES / "02-kustomize-order", repo)
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    r = run_cli("check", case, "--policy", str(CASES / "policy-02.yaml"), "--format", "json")
    assert r.code == 1, (case, r.code, r.err[-300:])
    built = [x for x in json.loads(r.out)["results"] if "[kustomize" in x["key"]]
    assert built, case
    if case.startswith("d-"):  # the field specs are not applied: the count is not known
        assert "request-unresolved" in {f["rule"] for f in built[0]["findings"]}
    else:
        assert built[0]["request"]["total_chips"] == 800, built[0]["request"]


def test_a_glob_path_reads_committed_hidden_files_as_the_directory_walk_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    repo = _plain_repo(tmp_path, {"k8s/.gpu.yaml": GPU_POD, "k8s/.hidden/gpu2.yaml": GPU_POD.replace("name: p", "name: q"),
                                  "k8s/.untracked/gpu3.yaml": GPU_POD.replace("name: p", "name: r")})
    (repo / ".git").rmdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "."], ["add", "k8s/.gpu.yaml", "k8s/.hidden/gpu2.yaml"]):
        subprocess.run([git, *args], cwd=repo, check=True, env=env, capture_output=True, timeout=60)
    monkeypatch.chdir(repo)
    r = run_cli("check", "k8s/**/*.yaml", "--no-config", "--format", "json", "--fail-on", "never")
    got = sorted(x["source"]["path"] for x in json.loads(r.out)["results"])
    assert got == ["k8s/.gpu.yaml", "k8s/.hidden/gpu2.yaml"], got  # the untracked hidden file stays out, as in the walk


def test_a_jsonnet_file_that_names_accelerators_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deploy = "{ kind: 'Deployment', spec: { template: { spec: { containers: [{ resources: { limits: { 'nvidia.com/gpu': 8 } } }] } } } }"
    repo = _plain_repo(tmp_path, {"apps/train/deploy.jsonnet": deploy, "apps/lib/util.libsonnet": "{ name: 'x' }"})
    monkeypatch.chdir(repo)
    r = run_cli("check", ".", "--no-config", "--format", "json")
    assert r.code == 2 and "apps/train/deploy.jsonnet:1:" in r.err and "Jsonnet" in r.err, (r.code, r.err[-300:])
    (repo / "apps" / "train" / "deploy.jsonnet").unlink()
    r = run_cli("check", ".", "--no-config", "--format", "json")
    assert r.code == 0 and any(x["path"].endswith("util.libsonnet") for x in json.loads(r.out)["skipped_files"]), r.out[-300:]


@pytest.mark.parametrize("policy, unresolved", [(None, True), ("Allow", True), ("Forbid", False), ("Replace", False)])
def test_a_cronjob_whose_runs_may_overlap_is_not_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str | None, unresolved: bool,
) -> None:
    pod = GPU_POD.split("spec:\n", 1)[1].replace("\n  ", "\n          ").replace("  containers:", "          containers:", 1)
    cron = ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: train}\nspec:\n  schedule: '* * * * *'\n"
            + (f"  concurrencyPolicy: {policy}\n" if policy else "")
            + "  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n" + pod)
    repo = _plain_repo(tmp_path, {"k8s/cron.yaml": cron})
    monkeypatch.chdir(repo)
    r = run_cli("check", "k8s", "--no-config", "--format", "json", "--fail-on", "never")
    [res] = json.loads(r.out)["results"]
    assert res["request"]["count"] == 8
    assert ("request-unresolved" in {f["rule"] for f in res["findings"]}) is unresolved, (policy, res["findings"])
