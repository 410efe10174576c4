"""Review 34: a pull request that controls every file, against the gate after review 29 and 30
(tests/test_hostile_review29.py). Each case fails on the code before its fix."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_hostile_review29 import TOKEN, _check, _repo

DATA = ROOT / "tests" / "data" / "hostile-review34"
_POD = """metadata: {name: trainer}
spec:
  containers:
  - name: c
    image: nvcr.io/nvidia/pytorch:24.01-py3
    resources:
      limits: {nvidia.com/gpu: 8}
  nodeSelector:
    cloud.google.com/gke-accelerator: nvidia-h100-80gb
"""


@pytest.mark.parametrize("text", [
    "<<: {apiVersion: v1, kind: Pod}\n" + _POD,  # a merge key holds the kind
    "!pod\napiVersion: v1\nkind: Pod\n" + _POD,  # a custom tag on the root mapping
])
def test_a_manifest_behind_a_merge_key_or_a_root_tag_is_not_passed_as_other_yaml(tmp_path: Path, text: str) -> None:
    """kubectl applies a Pod of 8 H100 from both; the gate read them as 'YAML the gate does not read', exit 0."""
    repo = _repo(tmp_path, {"pod.yaml": text})
    code, out = _check(tmp_path, repo)
    assert code == 2 and "pod.yaml:1:1: error:" in out, out


def test_a_skypilot_task_behind_a_merge_key_is_not_passed(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"sky.yaml": "name: train\n<<:\n  resources:\n    accelerators: H100:8\n    cloud: aws\n"
                                        "  num_nodes: 16\nrun: python train.py\n"})
    code, out = _check(tmp_path, repo)
    assert code == 2, out


def test_yaml_of_another_tool_with_merge_keys_is_still_no_proposal(tmp_path: Path) -> None:
    """The fix refuses only what merges into a manifest: a compose-like file of anchors and merge keys stays skipped."""
    repo = _repo(tmp_path, {"compose.yaml": "x-base: &b {image: nginx}\nservices:\n  web:\n    <<: *b\n    ports: ['80']\n"})
    code, out = _check(tmp_path, repo)
    assert code == 0, out


@pytest.mark.parametrize("trick", ["...\r--- \"\n---#\n", "---#\n"])
def test_documents_kubectl_splits_otherwise_are_an_input_error(tmp_path: Path, trick: str) -> None:
    """A bare carriage return and a '---#' line: the YAML parser read a quoted string where kubectl applied a Pod."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: decoy}\n" + trick + "apiVersion: v1\nkind: Pod\n" + _POD + "---#\n#\"\n"
    repo = _repo(tmp_path, {"pod.yaml": text})
    code, out = _check(tmp_path, repo)
    assert code == 2 and "kubectl" in out, out


def test_an_unreadable_chart_template_that_names_a_machine_type_is_not_skipped(tmp_path: Path) -> None:
    """A Cluster API MachineDeployment of 64 p5.48xlarge behind a merge key: 'a Helm chart without accelerator
    requests', exit 0 (only chip resources counted as naming hardware)."""
    md = ("apiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineDeployment\nmetadata: {name: gpu-md}\nspec:\n  clusterName: c\n"
          "  replicas: {{ .Values.nodes }}\n  template:\n    spec:\n      <<: {clusterName: c}\n      infrastructureRef:\n"
          "        apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\n        kind: AWSMachineTemplate\n        name: p5\n---\n"
          "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSMachineTemplate\nmetadata: {name: p5}\nspec:\n"
          "  template:\n    spec:\n      instanceType: p5.48xlarge\n")
    repo = _repo(tmp_path, {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "chart/values.yaml": "nodes: 64\n",
                            "chart/templates/md.yaml": md})
    code, out = _check(tmp_path, repo, "--format", "github")
    assert code != 0 and "without accelerator requests" not in out, out


def test_a_packaged_subchart_whose_values_ask_for_gpus_is_not_passed(tmp_path: Path) -> None:
    """charts/sub-0.1.0.tgz: a Deployment that inserts .Values.resources, its values.yaml 16 x 8 H100."""
    repo = _repo(tmp_path, {"parent/Chart.yaml": "apiVersion: v2\nname: parent\nversion: 0.1.0\n", "parent/values.yaml": "{}\n",
                            "parent/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
    (repo / "parent" / "charts").mkdir()
    shutil.copy(DATA / "sub-0.1.0.tgz", repo / "parent" / "charts" / "sub-0.1.0.tgz")
    code, out = _check(tmp_path, repo, "--format", "github")
    assert code == 1 and "sub-0.1.0.tgz" in out, out


def _fake_helm(tmp_path: Path) -> Path:
    """A helm that renders what .Files.Get ".git/config" would give a template: a Pod named from the chart's .git/config
    where the directory it is given holds one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helm = bin_dir / "helm"
    helm.write_text(
        f"#!{sys.executable}\nimport os, re, sys\nchart = sys.argv[2]\ncfg = os.path.join(chart, '.git', 'config')\n"
        "name = 'safe'\nif os.path.exists(cfg):\n    name = re.sub(r'[^a-z0-9]+', '-', open(cfg).read().lower()).strip('-')[-60:]\n"
        "print('apiVersion: v1\\nkind: Pod\\nmetadata: {name: ' + name + '}\\nspec:\\n  containers:\\n  - name: c\\n    image: i\\n"
        "    resources:\\n      limits: {nvidia.com/gpu: 1}\\n  nodeSelector:\\n    cloud.google.com/gke-accelerator: nvidia-l4')\n")
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_helm_never_gets_a_chart_directory_that_holds_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chart at the repository's root, helm on PATH: its template read .git/config (the job's token) through
    .Files.Get into a name shown in every output. helm now renders a copy without the version-control directory."""
    repo = _repo(tmp_path, {"Chart.yaml": "apiVersion: v2\nname: leak\nversion: 0.1.0\n", "templates/pod.yaml": "x: {{ .Files }}\n"})
    monkeypatch.setenv("PATH", f"{_fake_helm(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    for fmt in ("markdown", "sarif", "github"):
        _, out = _check(tmp_path, repo, "--format", fmt)
        assert "extraheader" not in out and TOKEN.lower()[:20] not in out.lower() and "Pod/default/safe" in out, out


def test_kustomize_common_annotations_are_applied(tmp_path: Path) -> None:
    """commonAnnotations put KAI's gpu-fraction on a Deployment's pod template (16 x 8 H100) and raised a Cluster API
    node group's autoscaling bound from 1 to 50: neither was applied, the first not even built."""
    dep = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer}\nspec:\n  replicas: 16\n  selector: {matchLabels: {a: b}}\n"
           "  template:\n    metadata:\n      labels: {a: b, kai.scheduler/queue: research}\n    spec:\n"
           "      schedulerName: kai-scheduler\n      containers:\n      - name: c\n        image: i\n      nodeSelector:\n"
           "        cloud.google.com/gke-accelerator: nvidia-h100-80gb\n")
    repo = _repo(tmp_path, {"deploy.yaml": dep, "kustomization.yaml": "resources: [deploy.yaml]\ncommonAnnotations:\n"
                            "  gpu-fraction: \"1.0\"\n  gpu-fraction-num-devices: \"8\"\n"})
    code, out = _check(tmp_path, repo, "--format", "github")
    assert code == 1 and "128" in out, out


def test_a_block_comment_across_lines_in_a_resource_head_does_not_hide_it(tmp_path: Path) -> None:
    tf = ('resource /*\n*/ "google_container_node_pool" "pool" {\n  name = "pool"\n  cluster = "c"\n  location = "us-central1-a"\n'
          '  node_count = 64\n  node_config {\n    machine_type = "a3-highgpu-8g"\n    guest_accelerator {\n'
          '      type  = "nvidia-h100-80gb"\n      count = 8\n    }\n  }\n}\n')
    repo = _repo(tmp_path, {"main.tf": tf})
    code, out = _check(tmp_path, repo)
    assert code == 1, out


def _timed(tmp_path: Path, repo: Path) -> tuple[int, str, float]:
    start = time.monotonic()
    code, out = _check(tmp_path, repo, "--format", "github")
    return code, out, time.monotonic() - start


def test_helm_template_arithmetic_and_printing_are_bounded(tmp_path: Path) -> None:
    """fromYaml of a 40-deep alias chain printed by toJson filled 23 GB; `mul $x $x` 34 times and `list $x $x` 60 times
    ran past two minutes. Now each is a value the gate does not know, or an input error, in well under a second."""
    chain = "\\n".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" if i else "a0: &a0 [x, x]" for i in range(40))
    cases = {
        "from": ("bomb: \"" + chain + "\"\n", "data: {n: {{ (fromYaml .Values.bomb) | toJson | len | quote }}}\n"),
        "mul": ("{}\n", "{{- $x := 10 }}{{- range until 34 }}{{- $x = mul $x $x }}{{- end }}\ndata: {n: \"{{ len (toString $x) }}\"}\n"),
        "list": ("{}\n", "{{- $x := list 1 }}{{- range until 60 }}{{ $x = list $x $x }}{{ end }}\ndata: {n: \"{{ toJson $x | len }}\"}\n"),
    }
    for name, (values, body) in cases.items():
        repo = _repo(tmp_path / name, {"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "c/values.yaml": values,
                                       "c/templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n" + body})
        code, out, took = _timed(tmp_path / name, repo)
        assert code in (0, 2) and took < 20, (name, code, took, out[-300:])


def test_terraform_arithmetic_is_bounded(tmp_path: Path) -> None:
    lines = ["locals {", "  a0 = 10", *(f"  a{i} = local.a{i - 1} * local.a{i - 1}" for i in range(1, 40)), "}",
             'resource "google_container_node_pool" "p" {', '  name = "p"', '  cluster = "c"', "  node_count = local.a39",
             '  node_config {', '    machine_type = "a3-highgpu-8g"', "  }", "}"]
    repo = _repo(tmp_path, {"main.tf": "\n".join(lines) + "\n"})
    code, out, took = _timed(tmp_path, repo)
    assert took < 20 and code == 1, (code, took, out[-300:])




def test_a_chart_that_links_to_itself_is_copied_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy without .git follows no link to a directory: templates/loop -> .. would copy the chart into itself down
    to the longest path the system takes."""
    repo = _repo(tmp_path, {"Chart.yaml": "apiVersion: v2\nname: leak\nversion: 0.1.0\n", "templates/pod.yaml": "x: 1\n",
                            **{f"files/f{i}.txt": "x\n" for i in range(200)}})
    (repo / "templates" / "loop").symlink_to("..")
    monkeypatch.setenv("PATH", f"{_fake_helm(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    _, out = _check(tmp_path, repo, "--format", "github")
    assert time.monotonic() - start < 20 and "Pod/default/safe" in out, out[-300:]
