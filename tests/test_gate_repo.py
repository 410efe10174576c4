"""advisor check on a whole platform repository: what is read, what is skipped and why, what is
excluded (--exclude, the policy's exclude, .gitignore), and files of several kinds at once."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

FIXTURE = ROOT / "tests" / "data" / "platform-repo"


def repo(tmp_path: Path) -> Path:
    """The committed fixture (a real KubeRay Helm chart, a real GKE sample, a real GitHub workflow,
    conda / Hydra / Ansible / docker-compose files) plus what a checkout holds but never commits."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    venv = root / "venv"
    (venv / "lib" / "python3.11" / "site-packages" / "pkg").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "python3.11" / "site-packages" / "pkg" / "data.yaml").write_text("key: [unclosed\n")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "bad.yaml").write_text(": : :\n")
    (root / "out").mkdir()
    (root / "out" / "broken.yaml").write_text("key: [unclosed\n")
    (root / "scratch" / "a" / "b").mkdir(parents=True)
    (root / "scratch" / "a" / "b" / "broken.yaml").write_text("key: [unclosed\n")
    (root / "scratch" / "top.json").write_text('{"not": "ignored: the pattern asks for yaml under a directory"}')
    (root / "other.secret.json").write_text("{")
    (root / "keep.secret.json").write_text('{"a": 1}')
    (root / ".gitignore").write_text((FIXTURE / ".gitignore").read_text() + "*.secret.json\n!keep.secret.json\n")
    return root


def src(r: dict) -> dict:
    return r["source"] or {"kind": "profile", "path": r["profile"]}


def check(*args: str) -> tuple[int, dict, str]:
    r = run_cli("check", "--no-config", "--format", "json", *args)
    assert r.code in (0, 1, 2), r.err
    return r.code, json.loads(r.out) if r.out.strip().startswith("{") else {}, r.err


def test_platform_repository_passes_and_lists_what_it_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repo(tmp_path)
    monkeypatch.chdir(root)
    code, data, err = check("--fail-on", "never", ".")
    assert code == 0, err
    skipped = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert "Helm chart without accelerator requests" in skipped["charts/ray-cluster"]  # rendered (by helm, else by advisor)
    assert "virtual environment" in skipped["venv"]
    assert "node_modules" in skipped["node_modules"]
    assert skipped["envs/environment.yml"] == "a conda environment file"
    assert skipped["conf/config.yaml"] == "a Hydra / OmegaConf configuration"
    assert skipped["ansible/playbook.yml"] == "an Ansible playbook or task list"
    assert skipped["workflows/ci.yml"] == "a GitHub Actions workflow"
    assert skipped["docker-compose.yml"] == "a docker-compose file"
    assert "keep.secret.json" in skipped and "scratch/top.json" in skipped
    assert not any(p.startswith(("out", "scratch/a")) or p == "other.secret.json" for p in skipped)
    assert data["summary"]["skipped_files"] == len(skipped)
    assert data["summary"]["excluded_files"] == 3  # out/, scratch/a/b/broken.yaml, other.secret.json
    kinds = {src(r)["kind"] for r in data["results"]}
    assert {"kubernetes", "profile"} <= kinds
    assert data["invalid"] == []
    # the text and markdown reports list the same skipped files, and count them
    text = run_cli("check", "--no-config", "--fail-on", "never", ".")
    assert text.code == 0 and "environment.yml" in text.out and "a conda environment file" in text.out
    md = run_cli("check", "--no-config", "--fail-on", "never", "--format", "markdown", ".")
    assert md.code == 0 and "environment.yml" in md.out and "Helm chart" in md.out


def test_exclude_flag_and_policy_exclude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repo(tmp_path)
    monkeypatch.chdir(root)
    code, data, _ = check("--fail-on", "never", "--exclude", "k8s/**", "--exclude", "*.yml", ".")
    assert code == 0
    paths = {s["path"] for s in data["skipped_files"]} | {src(r)["path"] for r in data["results"]}
    assert not any(p.startswith("k8s/") or p.endswith(".yml") for p in paths)
    assert "docker-compose.yml" not in paths and "conf/config.yaml" in paths
    (root / ".advisor.yaml").write_text("exclude:\n  - conf\n  - profiles/*.yaml\n")
    r = run_cli("check", "--format", "json", "--fail-on", "never", ".")
    data = json.loads(r.out)
    paths = {s["path"] for s in data["skipped_files"]} | {src(r)["path"] for r in data["results"]}
    assert not any(p.startswith(("conf/", "profiles/")) for p in paths), paths
    # pyproject's [tool.advisor] exclude, relative to the pyproject's directory
    (root / ".advisor.yaml").unlink()
    (root / "pyproject.toml").write_text('[tool.advisor]\nexclude = ["k8s/"]\n')
    os.chdir(root / "k8s")
    r = run_cli("check", "--format", "json", "--fail-on", "never", "..")
    data = json.loads(r.out)
    assert not any("k8s" in src(r)["path"] for r in data["results"])
    # an explicitly named file is still left out by --exclude (pre-commit passes file names)
    r = run_cli("check", "--no-config", "--format", "json", "--exclude", "*.yaml", "deploy-llm.yaml")
    assert r.code == 2 and "no YAML, JSON or Terraform files" in r.err


@pytest.mark.parametrize(("pattern", "path", "is_dir", "hit"), [
    ("venv", "venv", True, True),
    ("venv", "a/venv/x.yaml", False, True),
    ("venv/", "a/venv", False, False),  # a trailing slash: directories only
    ("venv/", "a/venv/x.yaml", False, True),
    ("*.yaml", "a/b/c.yaml", False, True),
    ("*.yaml", "a/b/c.yml", False, False),
    ("/out/", "out/x.yaml", False, True),
    ("/out/", "a/out/x.yaml", False, False),  # anchored to the base
    ("a/*.yaml", "a/x.yaml", False, True),
    ("a/*.yaml", "a/b/x.yaml", False, False),  # '*' stays in one component
    ("a/**/x.yaml", "a/b/c/x.yaml", False, True),
    ("a/**/x.yaml", "a/x.yaml", False, True),
    ("k8s/**", "k8s/deep/x.yaml", False, True),
    ("**/gen", "p/q/gen/x.yaml", False, True),
    ("f?o.json", "foo.json", False, True),
    ("[ab].tf", "b.tf", False, True),
    ("[!ab].tf", "b.tf", False, False),
])
def test_glob_semantics(tmp_path: Path, pattern: str, path: str, is_dir: bool, hit: bool) -> None:
    from advisor.check.files import Pattern

    p = Pattern.parse(pattern, str(tmp_path))
    assert p is not None
    assert p.matches(str(tmp_path / path), is_dir) is hit


def test_gitignore_negation_and_comments(tmp_path: Path) -> None:
    from advisor.check.files import _ignored, patterns

    rules = patterns(["# comment", "", "*.json", "!keep.json", "build/"], str(tmp_path))
    assert _ignored(str(tmp_path / "x.json"), False, rules)
    assert not _ignored(str(tmp_path / "keep.json"), False, rules)
    assert _ignored(str(tmp_path / "build"), True, rules)
    assert not _ignored(str(tmp_path / "a.yaml"), False, rules)


def test_pre_commit_hook_reads_only_infrastructure_and_profiles() -> None:
    import re

    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    rx = re.compile(hooks["advisor-check"]["files"])
    excl = re.compile(hooks["advisor-check"].get("exclude", "^$"))

    def picked(p: str) -> bool:
        return bool(rx.search(p)) and not excl.search(p)

    assert picked("profiles/chatbot.yaml") and picked("infra/main.tf") and picked("k8s/deploy.yaml") and picked("plan.json")
    assert not picked("charts/ray/templates/deploy.yaml") and not picked(".github/workflows/ci.yml")
    assert not picked("environment.yml") and not picked("docker-compose.yml") and not picked("package.json")
    assert not picked("venv/lib/x.yaml") and not picked(".venv/lib/x.yaml")


@pytest.mark.parametrize(("text", "kind"), [
    ("task: inference\nmodel: {params_b: 8}\n", "profile"),
    ("# yaml-language-server: $schema=../schemas/profile.schema.json\nname: x\n", "profile"),
    ('{"$schema": "https://x/schemas/profile.schema.json", "name": "x"}', "profile"),
    ("apiVersion: advisor.dev/v1\nname: x\n", "profile"),
    ("name: x\ntask: training\n", "profile"),  # only advisor keys: judged, so its errors are reported
    ("task: pretrain\nmodel: {name: llama}\ntrainer: {devices: 8}\nhydra: {run: {dir: x}}\n", "other"),
    ("name: env\nchannels: [conda-forge]\ndependencies: [python]\n", "other"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "kubernetes"),
    ("name: t\nresources: {accelerators: L4:1}\nsetup: x\nmystery: 1\n", "skypilot"),  # names hardware: read, whatever else is there
])
def test_document_kinds(text: str, kind: str) -> None:
    import yaml as _yaml

    from advisor.check.infra.sniff import doc_kind, has_profile_modeline

    assert doc_kind(_yaml.safe_load(text), modeline=has_profile_modeline(text)).split(":")[0] == kind


TRAIN_TF = (
    'resource "google_compute_instance" "{name}" {{\n  name = "{name}"\n  machine_type = "a3-highgpu-8g"\n'
    '  zone = "us-central1-a"\n}}\n'
)


def _commit(root: Path, *add: str) -> None:
    """A repository at ``root`` whose one commit holds ``add`` (git add's arguments: paths, -f)."""
    import subprocess

    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", *add], check=True)
    subprocess.run([*git, "commit", "-qm", "pr"], check=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_tracked_file_is_read_whatever_the_pull_request_ignores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pull request writes the .gitignore files too: a file committed with `git add -f`, or
    under a hidden directory, is still infrastructure to judge. Untracked ignored files and
    hidden directories (.terraform) stay out; a hidden CI file without accelerators is not
    listed as skipped; --exclude (the workflow's) still leaves out a tracked file."""

    root = tmp_path / "pr"
    (root / ".infra").mkdir(parents=True)
    (root / ".terraform").mkdir()
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / "gpu.tf").write_text(TRAIN_TF.format(name="ignored"))
    (root / ".infra" / "hidden.tf").write_text(TRAIN_TF.format(name="hidden"))
    (root / ".terraform" / "module.tf").write_text(TRAIN_TF.format(name="untracked"))
    (root / "scratch.tf").write_text(TRAIN_TF.format(name="scratch"))
    (root / ".github" / "workflows" / "ci.yml").write_text("name: ci\non: [push]\njobs: {t: {runs-on: x, steps: [{run: echo}]}}\n")
    (root / ".gitignore").write_text("gpu.tf\nscratch.tf\n")
    _commit(root, "-f", "gpu.tf", ".infra", ".github", ".gitignore")
    monkeypatch.chdir(root)

    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", ".")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert sorted(x["source"]["address"] for x in out["results"]) == ["google_compute_instance.hidden", "google_compute_instance.ignored"]
    assert out["skipped_files"] == []
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", "--exclude", ".infra", ".")
    assert [x["source"]["address"] for x in json.loads(r.out)["results"]] == ["google_compute_instance.ignored"]


def test_a_link_out_of_the_repository_is_refused_and_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request can commit a symbolic link named like infrastructure that points at the
    runner's credentials: an input error naming the link, and nothing of the target in any output."""
    secret = "TOPSECRET-4f9a"
    (tmp_path / "credentials").write_text(f"[default]\naws_secret_access_key = {secret}\n")
    repo_dir = tmp_path / "repo"
    (repo_dir / "infra").mkdir(parents=True)
    (repo_dir / "infra" / "main.tf").symlink_to(tmp_path / "credentials")
    (repo_dir / "infra" / "env.yaml").symlink_to("/proc/self/environ")
    (repo_dir / "infra" / "ok.yaml").write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n")
    (repo_dir / "same.yaml").symlink_to(repo_dir / "infra" / "ok.yaml")  # inside: read as usual
    monkeypatch.chdir(repo_dir)
    monkeypatch.setenv("ADVISOR_TEST_SECRET", secret)
    for args in ((".",), ("infra/main.tf", "infra/env.yaml"), ("infra/*",)):
        for fmt in ("text", "json", "sarif", "markdown"):
            r = run_cli("check", "--no-config", "--format", fmt, *args)
            assert r.code == 2, (args, fmt, r.code, r.err)
            assert secret not in r.out + r.err
            assert "symbolic link to a file outside the repository" in r.out + r.err
    r = run_cli("check", "--no-config", "--format", "json", "same.yaml")
    assert r.code == 0 and json.loads(r.out)["skipped_files"], r.err


def test_a_chart_that_links_out_of_the_repository_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``{{ .Files.Get "files/creds" }}`` would render a linked credentials file into a manifest:
    the chart is refused before it is rendered (by helm, or by advisor where helm is not installed)."""
    (tmp_path / "credentials").write_text("aws_secret_access_key = TOPSECRET\n")
    chart = tmp_path / "repo" / "charts" / "serve"
    (chart / "templates").mkdir(parents=True)
    (chart / "files").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: serve\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text('apiVersion: v1\nkind: ConfigMap\ndata: {x: {{ .Files.Get "files/creds" | quote }}}\n')
    (chart / "files" / "creds").symlink_to(tmp_path / "credentials")
    monkeypatch.chdir(tmp_path / "repo")
    for args in ((".",), ("charts/serve/templates/cm.yaml",)):
        r = run_cli("check", "--no-config", "--format", "json", *args)
        assert r.code == 2 and "charts/serve/files/creds" in r.out + r.err and "TOPSECRET" not in r.out + r.err, (args, r.err)


def test_an_unreadable_terraform_file_is_described_by_position_not_content(tmp_path: Path) -> None:
    f = tmp_path / "main.tf"
    f.write_text("[default]\naws_secret_access_key = TOPSECRET\n")
    r = run_cli("check", "--no-config", "--format", "json", str(f))
    assert r.code == 0 and "TOPSECRET" not in r.out + r.err, r.out
    [why] = [x["reason"] for x in json.loads(r.out)["skipped_files"]]
    assert "cannot parse" in why and "line 1, column 1" in why


# Ordinary files of real repositories that stopped the gate (exit 2) though they propose nothing: mkdocs.yml
# with its !!python/name tags (ray-project/kuberay, substratusai/kubeai), an e2e test resource with {{ }}
# placeholders as keys (kserve/kserve test/e2e/graph/test-resources), a .json log of JSON lines
# (AI-Hypercomputer/gpu-recipes dllogger.json), a .json with a comment header (kubernetes-engine-samples
# infw-gw dashboard.json). Each names no accelerator; what does stays an input error.
ORDINARY = {
    "mkdocs.yml": ("site_name: x\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
                   "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"),
    "ig_test.yaml": "apiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: {{ .Name }}\nspec:\n  nodes: {}\n",
    "dllogger.json": 'DLLL {"timestamp": "1", "type": "LOG"}\nDLLL {"timestamp": "2", "type": "LOG"}\n',
    "dashboard.json": '/* Copyright 2025 */\n{"title": "latency"}\n',
    # merge keys (gpustack/gpustack gpustack/assets/model-catalog.yaml, docker-compose, GitLab CI)
    "catalog.yaml": "defaults: &d\n  backend: vllm\nmodels:\n  - <<: *d\n    name: qwen3-8b\n",
    # another tool's local tags (an AWS CloudFormation template)
    "cfn.yaml": "Resources:\n  Bucket:\n    Type: AWS::S3::Bucket\n    Properties:\n      BucketName: !Sub '${AWS::StackName}-data'\n",
}
STILL_ERRORS = {
    "pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: !!python/object/apply:os.system [id]\n",  # a manifest with a python tag
    # a tag that builds or calls a python object is an input error in any file (the slow batch test's bad member)
    "apply.yaml": "name: !!python/object/apply:os.system ['id']\n",
    "tpl.yaml": "kind: Pod\nmetadata:\n  name: {{ .Name }}\nspec: {containers: [{resources: {limits: {nvidia.com/gpu: 8}}}]}\n",
    "gpu.json": '// H100 x 8\n{"machine_type": "a3-highgpu-8g"}\n',
    "merge.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: &p {image: i}}\nspec:\n  containers:\n  - <<: *p\n    name: c\n",
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_files_that_name_no_accelerator_do_not_stop_the_gate(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(ORDINARY[name])
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path))
    assert r.code == 0, r.out + r.err
    data = json.loads(r.out)
    assert not data["invalid"] and len(data["skipped_files"]) == 1, data


@pytest.mark.parametrize("name", sorted(STILL_ERRORS))
def test_unreadable_files_that_name_accelerators_stay_input_errors(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(STILL_ERRORS[name])
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path))
    assert r.code == 2, r.out + r.err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_chart_file_or_a_venv_marker_does_not_hide_the_pull_requests_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a three-line Chart.yaml at the root made the whole repository 'a Helm chart without
    accelerator requests', and an empty pyvenv.cfg (or a node_modules / conda-meta name) hid its
    directory as 'a Python virtual environment': exit 0 on 512 H100 either way. The chart's own files
    (templates/, values) stay the chart's; the rest is read; untracked environments stay out."""

    root = tmp_path / "pr"
    for d in ("terraform", "infra/gpu", "node_modules/x", "templates", "scratch/.venv-like"):
        (root / d).mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: innocent\nversion: 0.1.0\n")
    (root / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (root / "terraform" / "main.tf").write_text(TRAIN_TF.format(name="chart_hidden"))
    (root / "infra" / "gpu" / "main.tf").write_text(TRAIN_TF.format(name="venv_hidden"))
    (root / "infra" / "gpu" / "pyvenv.cfg").write_text("")
    (root / "node_modules" / "x" / "main.tf").write_text(TRAIN_TF.format(name="modules_hidden"))
    (root / "scratch" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "scratch" / "main.tf").write_text(TRAIN_TF.format(name="untracked_env"))
    _commit(root, "Chart.yaml", "templates", "terraform", "infra", "node_modules")
    monkeypatch.chdir(root)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", ".")
    assert r.code == 0, r.err
    found = sorted(x["source"]["address"] for x in json.loads(r.out)["results"])
    assert found == [f"google_compute_instance.{n}_hidden" for n in ("chart", "modules", "venv")]
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", "terraform/main.tf")
    assert [x["source"]["address"] for x in json.loads(r.out)["results"]] == ["google_compute_instance.chart_hidden"]


def test_a_charts_own_data_files_beside_its_templates_are_the_charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a chart keeps outside templates/ and is no manifest of its own: a runtime under files/ that a template
    includes with .Files.Get and tpl (YAML only once rendered), a values file under configs/ passed with -f. They are the
    chart's (skipped with the reason), not input errors; a plain manifest beside the chart is still read."""
    root = tmp_path / "chart"
    for d in ("templates", "files", "configs", "extra"):
        (root / d).mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: trainer\nversion: 0.1.0\n")
    (root / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (root / "files" / "runtime.yaml").write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: r\n  labels:\n"
        "    {{- with .Values.labels }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"
        "spec:\n  template:\n    spec:\n      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    (root / "configs" / "base.yaml").write_text(
        "engine: {type: vllm}\nmodel: {name: qwen3-8b, tensorParallel: 1}\ndeployment: {type: disaggregated}\n"
        "workers: {prefill: {replicas: 1}}\nresources:\n  gpu: 1\n  rdma: 1\n  memory: {sharedMemory: true}\n"
    )
    (root / "extra" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\nspec:\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", "chart")
    assert r.code == 0, r.out + r.err
    out = json.loads(r.out)
    assert out["invalid"] == []
    assert [x["source"]["address"] for x in out["results"]] == ["Job/ml/j"]
    skipped = {s["path"]: s["reason"] for s in out["skipped_files"]}
    assert "Helm chart" in skipped["chart/files/runtime.yaml"] and "Helm chart" in skipped["chart/configs/base.yaml"]
