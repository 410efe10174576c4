"""The docs/ci.md recipes, end to end: each recipe's commands, as written, run in a git repository
with a base branch and a pull request that changes one line (T4 -> L4); terraform, kubectl and pip
are stand-ins (no network), advisor is the real command. The pre-commit hook runs as pre-commit
would run it (its files / exclude patterns, then the entry with the file names)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT

DOC = (ROOT / "docs" / "ci.md").read_text()
BOT = (ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml").read_text().replace("proposal:", "old_proposal:").split("old_proposal:")[0]


def recipe(heading: str) -> object:
    part = DOC.split(heading, 1)[1]
    block = re.search(r"```yaml\n(.*?)```", part, re.S)
    assert block is not None, heading
    return yaml.safe_load(block.group(1))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"},
    )


def repo(tmp_path: Path, base: dict[str, str], change: tuple[str, str, str]) -> Path:
    """A clone with main pushed to its origin and a pull-request branch changing one line."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--bare", "-b", "main", str(origin)], check=True, capture_output=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", str(origin), str(work)], check=True, capture_output=True)
    git(work, "checkout", "-b", "main")
    for name, text in base.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-m", "base")
    git(work, "push", "origin", "main")
    git(work, "checkout", "-b", "pr")
    path, old, new = change
    f = work / path
    f.write_text(f.read_text().replace(old, new))
    git(work, "commit", "-am", "change")
    return work


def stubs(tmp_path: Path, plan: str | None = None) -> dict[str, str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    scripts = {
        "pip": "#!/bin/sh\nexit 0\n",
        "kubectl": "#!/bin/sh\n[ \"$1\" = kustomize ] || exit 1\ncat \"$2\"/*.yaml\n",
        "terraform": f"#!/bin/sh\ncase \"$1\" in show) cat '{plan}' ;; *) exit 0 ;; esac\n" if plan else "#!/bin/sh\nexit 1\n",
    }
    for name, text in scripts.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    venv_bin = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{venv_bin}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}


def run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


POD = """apiVersion: apps/v1
kind: Deployment
metadata: {name: bot, namespace: prod}
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-t4}
      containers:
      - name: vllm
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_pip_package_name_and_no_unrelated_install() -> None:
    assert "pip install advisor\n" not in DOC and "pip install advisor " not in DOC
    assert DOC.count("pip install tpu-gpu-advisor") >= 3
    assert 'name = "tpu-gpu-advisor"' in (ROOT / "pyproject.toml").read_text()


def test_github_gke_recipe(tmp_path: Path) -> None:
    work = repo(
        tmp_path,
        {"overlays/prod/deploy.yaml": POD, "workloads/bot.yaml": BOT},
        ("overlays/prod/deploy.yaml", "nvidia-tesla-t4", "nvidia-l4"),
    )
    env = {**stubs(tmp_path), "GITHUB_WORKSPACE": str(work)}
    steps = recipe("### A GKE manifests repository (GitHub Actions)")["jobs"]["advisor"]["steps"]  # type: ignore[index]
    for step in steps:
        if "run" in step:
            done = run(step["run"].replace("${{ github.base_ref }}", "main"), work, env)
            assert done.returncode == 0, (step["run"], done.stderr[-2000:])
    md = (work / "advisor.md").read_text()
    assert "accelerator t4 → l4" in md and "0 new finding(s), 0 fixed" in md, md[:1500]
    assert (work / "base-check.json").is_file()


def test_gitlab_skypilot_recipe(tmp_path: Path) -> None:
    sky = "name: train\nresources:\n  accelerators: T4:1\n  cloud: gcp\nnum_nodes: 2\nrun: python train.py\n"
    work = repo(tmp_path, {"sky/train.yaml": sky, "workloads/bot.yaml": BOT}, ("sky/train.yaml", "T4:1", "L4:1"))
    base = tmp_path / "base"
    env = {**stubs(tmp_path), "CI_PROJECT_DIR": str(work), "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
    job = recipe("### A SkyPilot repository (GitLab CI)")["advisor"]  # type: ignore[index]
    script = "\n".join(job["script"]).replace("/tmp/base", str(base))
    done = run(script, work, env)
    assert done.returncode == 0, done.stderr[-2000:]
    md = (work / "advisor.md").read_text()
    assert "accelerator t4 → l4" in md and "0 new finding(s), 0 fixed" in md, md[:1500]
    assert "<testsuites" in (work / "advisor.xml").read_text()


def test_github_terraform_recipe(tmp_path: Path) -> None:
    import json

    plan = tmp_path / "plan-fixture.json"
    plan.write_text(
        json.dumps(
            {
                "format_version": "1.2",
                "resource_changes": [
                    {
                        "address": "aws_instance.infer",
                        "mode": "managed",
                        "type": "aws_instance",
                        "name": "infer",
                        "change": {
                            "actions": ["update"],
                            "before": {"instance_type": "g4dn.xlarge"},
                            "after": {"instance_type": "g6.xlarge"},
                            "after_unknown": {},
                        },
                    }
                ],
                "configuration": {"provider_config": {"aws": {"expressions": {"region": {"constant_value": "us-east-1"}}}}},
            }
        )
    )
    work = repo(tmp_path, {"main.tf": 'resource "aws_instance" "infer" {\n  instance_type = "g4dn.xlarge"\n}\n', "workloads/bot.yaml": BOT},
                ("main.tf", "g4dn.xlarge", "g6.xlarge"))
    env = stubs(tmp_path, str(plan))
    steps = recipe("### A Terraform repository (GitHub Actions)")["jobs"]["advisor"]["steps"]  # type: ignore[index]
    for step in steps:
        if "run" in step:
            done = run(step["run"], work, env)
            assert done.returncode == 0, (step["run"], done.stderr[-2000:])
    md = (work / "advisor.md").read_text()
    assert "Against the plan's prior state" in md and "accelerator t4 → l4" in md, md[:1500]
    sarif = json.loads((work / "advisor.sarif").read_text())
    assert sarif["version"] == "2.1.0"


def test_pre_commit_recipe(tmp_path: Path) -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    cfg = recipe("## pre-commit")["repos"][0]["hooks"]  # type: ignore[index]
    mine = next(h for h in cfg if h["id"] == "advisor-check")
    hook = {**hooks["advisor-check"], **mine}
    files = {"workloads/bot.yaml": BOT, "k8s/deploy.yaml": POD, "environment.yml": "name: x\ndependencies: [python]\n",
             "charts/x/templates/d.yaml": "a: {{ .Values.x }}\n", "charts/x/Chart.yaml": "apiVersion: v2\nname: x\nversion: 1\n",
             "bad/over.yaml": (ROOT / "profiles" / "proposals" / "over-budget-pretrain.yaml").read_text()}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    inc, exc = re.compile(hook["files"]), re.compile(hook.get("exclude", "^$"))
    picked = sorted(n for n in files if inc.search(n) and not exc.search(n))
    assert picked == ["bad/over.yaml", "k8s/deploy.yaml", "workloads/bot.yaml"]
    entry = hook["entry"].split()
    env = stubs(tmp_path)
    ok = subprocess.run(
        [*entry, *hook.get("args", []), "workloads/bot.yaml", "k8s/deploy.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout[-1500:] + ok.stderr[-1500:]
    bad = subprocess.run([*entry, *hook.get("args", []), *picked], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1, bad.stdout[-1500:]
    # even given everything (pre-commit run --all-files with a looser pattern), nothing is an input error
    every = subprocess.run(
        [*entry, *hook.get("args", []), "--fail-on", "never", *files], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert every.returncode == 0, every.stdout[-1500:] + every.stderr[-1500:]


@pytest.fixture(autouse=True)
def _git_available() -> None:
    if shutil.which("git") is None:  # pragma: no cover
        pytest.skip("git is not installed")
