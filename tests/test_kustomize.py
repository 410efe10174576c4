"""Kustomize overlays: the gate judges what a kustomization deploys (advisor.check.infra.kustomize),
not only its base files. Before, an overlay that raised a GPU Deployment's replicas from 1 to 20
(``replicas:`` or a patch) passed unseen, and a patch file was counted as a workload of its own.
Real material: GoogleCloudPlatform/accelerated-platforms overlays (tests/data/kustomize-real)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, run_cli

REAL = ROOT / "tests" / "data" / "kustomize-real" / "accelerated-platforms"

BASE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 1
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-h100-80gb
      containers:
        - name: server
          image: vllm/vllm-openai:v0.11.0
          resources:
            limits:
              nvidia.com/gpu: 8
        - name: sidecar
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: vllm
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  minReplicas: 1
  maxReplicas: 2
"""


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _check(*args: str) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", *args)
    return r.code, json.loads(r.out) if r.out.strip().startswith("{") else {}, r.err


def _got(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["source"]["address"]: {
            **{k: r["request"][k] for k in ("accelerator", "count", "replicas_min", "replicas_max", "total_chips")},
            "path": r["source"]["path"],
            "line": r["source"]["line"],
            "unresolved": [f["message"] for f in r["findings"] if f["rule"] == "request-unresolved"],
        }
        for r in data["results"]
    }


def test_an_overlay_that_scales_a_gpu_deployment_is_judged_as_deployed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, {
        "base/deploy.yaml": BASE,
        "base/kustomization.yaml": "resources: [deploy.yaml]\n",
        "overlays/prod/kustomization.yaml": "resources:\n  - ../../base\nreplicas:\n  - name: vllm\n    count: 20\n",
    })
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _got(data)
    assert got["Deployment/default/vllm"]["total_chips"] == 18, err  # the base as written, its HPA 1..2 (8 + 1 sidecar)
    prod = got["Deployment/default/vllm [kustomize overlays/prod]"]
    assert (prod["count"], prod["replicas_min"], prod["replicas_max"]) == (9, 1, 2)  # the HPA still decides replicas
    assert prod["path"] == "overlays/prod/kustomization.yaml" and prod["line"] == 4  # the replicas entry
    # without the autoscaler the overlay's 20 replicas are what is deployed, and a policy stops it
    (tmp_path / "base" / "deploy.yaml").write_text(BASE.split("---")[0])
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", "policy.yaml", "--format", "json", ".")
    assert r.code == 1
    failing = {x["source"]["address"] for x in json.loads(r.out)["results"] if any(f["rule"] == "policy-max-chips" for f in x["findings"])}
    assert failing == {"Deployment/default/vllm [kustomize overlays/prod]"}


def test_patches_names_namespace_and_autoscaler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = """resources: [../../base]
namespace: ml
namePrefix: prod-
patches:
  - path: gpus.yaml
  - target: {kind: Deployment, name: vl.*}
    patch: |-
      - op: replace
        path: /spec/template/spec/nodeSelector/cloud.google.com~1gke-accelerator
        value: nvidia-l4
  - target: {kind: HorizontalPodAutoscaler}
    patch: |-
      - op: replace
        path: /spec/maxReplicas
        value: 6
patchesStrategicMerge:
  - |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: vllm}
    spec:
      template:
        spec:
          containers:
            - name: sidecar
              $patch: delete
"""
    gpus = """apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm}
spec:
  template:
    spec:
      containers:
        - name: server
          resources: {limits: {nvidia.com/gpu: 4}}
"""
    _tree(tmp_path, {"base/deploy.yaml": BASE, "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "overlays/prod/kustomization.yaml": overlay, "overlays/prod/gpus.yaml": gpus})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _got(data)
    prod = got["Deployment/ml/prod-vllm [kustomize overlays/prod]"]
    assert (prod["accelerator"], prod["count"], prod["replicas_min"], prod["replicas_max"]) == ("l4", 4, 1, 6), err
    assert "overlays/prod/gpus.yaml" in {s["path"] for s in data["skipped_files"]}  # a patch is not a workload of its own
    assert not any(a.startswith("Deployment/default/vllm ") or "gpus.yaml" in q["path"] for a, q in got.items())


def test_a_kustomization_that_ships_big_crds_and_a_patch_for_another_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kserve/kserve config/ (13 kustomizations): the build read its CRDs (~100k YAML nodes) with the 50k
    bound of a small file, not the 500k of any manifest, and every overlay was an input error; then
    config/crd's JSON patch for the v1beta1 CRD (target group/version) was applied to the v1 CRD and
    failed with "operation 0: 'validation'". kustomize matches a target's group and version."""
    props = "".join(f"          f{i}: {{type: string, description: field {i}}}\n" for i in range(12_000))
    crd = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: isvc.serving.kserve.io\n"
           "spec:\n  versions:\n  - name: v1beta1\n    schema:\n      openAPIV3Schema:\n        properties:\n" + props)
    patch = "- op: add\n  path: /spec/validation/openAPIV3Schema/required/1\n  value: protocol\n"
    kustomization = ("resources: [crd.yaml, ../base]\npatches:\n- path: protocol.yaml\n  target:\n"
                     "    group: apiextensions.k8s.io\n    version: v1beta1\n    kind: CustomResourceDefinition\n"
                     "    name: isvc.serving.kserve.io\nreplicas:\n  - name: vllm\n    count: 3\n")
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "config/crd.yaml": crd, "config/protocol.yaml": patch, "config/kustomization.yaml": kustomization})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check("config")
    assert code == 0 and not data["invalid"], err
    assert _got(data)["Deployment/default/vllm [kustomize config]"]["total_chips"] == 27
    # the same patch aimed at the v1 CRD: kustomize build stops, and so does the gate, saying where and why
    (tmp_path / "config" / "kustomization.yaml").write_text(kustomization.replace("version: v1beta1", "version: v1"))
    code, data, err = _check("config")
    assert code == 2 and "/spec/validation/openAPIV3Schema/required/1 does not exist in CustomResourceDefinition/isvc" in err, err


def test_components_and_a_strategic_merge_that_adds_a_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    component = """apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: vllm}
      spec:
        template:
          spec:
            containers:
              - name: draft-model
                image: vllm/vllm-openai:v0.11.0
                resources: {limits: {nvidia.com/gpu: 2}}
"""
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "components/draft/kustomization.yaml": component,
                     "overlays/spec/kustomization.yaml": "resources: [../../base]\ncomponents: [../../components/draft]\n"})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    assert _got(data)["Deployment/default/vllm [kustomize overlays/spec]"]["count"] == 11, err  # 8 + 1 + 2


def test_the_real_accelerated_platforms_overlays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REAL)
    code, data, err = _check(".")
    assert code == 0 and data["invalid"] == [], err
    got = _got(data)
    ns, overlays = "Deployment/replaced-by-kustomize/vllm", "online-inference-gpu/vllm"
    assert {a: q["count"] for a, q in got.items()} == {
        f"{ns}-h100-llama-3-3-70b-instruct [kustomize {overlays}/h100-llama-3-3-70b-instruct]": 4,
        f"{ns}-l4-gemma-3-1b-it [kustomize {overlays}/l4-gemma-3-1b-it]": 1,
    }
    skipped = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert skipped["online-inference-gpu/vllm/l4-gemma-3-1b-it/patch-resources.yaml"].startswith("a kustomize patch")
    assert skipped["online-inference-gpu/vllm/base/kustomization.yaml"].startswith("a kustomization")


def test_what_is_not_built_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = """resources:
  - ../../base
  - https://github.com/example/manifests//gpu?ref=v1
  - generated.yaml
patches:
  - target: {labelSelector: app=vllm}
    patch: |-
      - {op: replace, path: /spec/replicas, value: 50}
replacements:
  - source: {kind: ConfigMap, name: sizes, fieldPath: data.replicas}
    targets:
      - select: {kind: Deployment}
        fieldPaths: [spec.replicas]
"""
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "overlays/prod/kustomization.yaml": overlay})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    messages = _got(data)["Deployment/default/vllm [kustomize overlays/prod]"]["unresolved"]
    assert len(messages) == 4
    assert any("remote resource https://github.com/example" in m for m in messages)
    assert any("generated.yaml (not in the repository)" in m for m in messages)
    assert any("label / annotation selector" in m for m in messages)
    assert any("replacements to spec.replicas" in m for m in messages)


def test_a_patch_of_a_remote_base_is_read_as_what_is_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llm-d's guides are remote bases that accelerated-platforms patches with the GPU count: the patch
    is the part known here, counted (a lower bound) and said, not dropped with the base."""
    overlay = """resources:
  - https://github.com/llm-d/llm-d//guides/optimized-baseline/modelserver/gpu/vllm/base?ref=main
nameSuffix: -h100
patches:
  - path: patch-resources.yaml
    target: {kind: Deployment, name: decode}
"""
    patch = """apiVersion: apps/v1
kind: Deployment
metadata: {name: decode}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: modelserver
          resources: {limits: {nvidia.com/gpu: "4"}}
"""
    overlay += """  - target: {kind: Deployment, name: decode}
    patch: '[{op: replace, path: /spec/template/spec/containers/0/args/3, value: --max-model-len=8192}]'
"""
    _tree(tmp_path, {"overlay/kustomization.yaml": overlay, "overlay/patch-resources.yaml": patch})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    q = _got(data)["Deployment/default/decode-h100 [kustomize overlay]"]
    assert (q["count"], q["replicas_max"], q["total_chips"]) == (4, 2, 8), err
    assert any("remote resource https://github.com/llm-d" in m for m in q["unresolved"])
    assert any("in a remote base (only the patch is read)" in m for m in q["unresolved"])
    assert any("a JSON patch of Deployment/decode held in a remote base" in m for m in q["unresolved"])  # its path is in the base
    assert {s["path"]: s["reason"] for s in data["skipped_files"]}["overlay/patch-resources.yaml"].startswith("a kustomize patch")


def test_a_catastrophic_target_pattern_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request writes the target's regular expression and the names it is matched against."""
    name = "a" * 60
    overlay = f"""resources: [deploy.yaml]
patches:
  - target: {{kind: Deployment, name: "(a+)+b"}}
    patch: '[{{op: replace, path: /spec/replicas, value: 50}}]'
  - target: {{kind: Deployment, name: "{name[:3]}.*"}}
    patch: '[{{op: replace, path: /spec/replicas, value: 3}}]'
"""
    _tree(tmp_path, {"deploy.yaml": BASE.split("---")[0].replace("name: vllm", f"name: {name}"), "kustomization.yaml": overlay})
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    _code, data, err = _check(".")
    assert time.monotonic() - start < 10
    q = _got(data)[f"Deployment/default/{name} [kustomize .]"]
    assert q["replicas_max"] == 3, err  # the plain pattern applied, the catastrophic one not
    assert any("target name pattern '(a+)+b'" in m for m in q["unresolved"])


HOSTILE = {
    "cycle": ({"a/kustomization.yaml": "resources: [../b]\nnamePrefix: x-\n", "b/kustomization.yaml": "resources: [../a]\n"},
              "includes itself"),
    "outside": ({"a/kustomization.yaml": "resources: [../../../../../../../../etc]\nnamePrefix: x-\n"}, "outside the repository"),
    "deep": ({**{f"k{i}/kustomization.yaml": f"resources: [../k{i + 1}]\nnamePrefix: p-\n" for i in range(30)},
              "k30/kustomization.yaml": "resources: []\n"}, "nested more than"),
    # each level names the next twice: 2**17 builds of one empty base took ~30 s; stopped at 1,000 reads
    "diamond": ({**{f"k{i}/kustomization.yaml": f"resources: [../k{i + 1}, ../k{i + 1}/]\nnamePrefix: p-\n" for i in range(17)},
                 "k17/kustomization.yaml": "resources: []\n"}, "kustomizations read in one build"),
    "bad-replicas": ({"a/kustomization.yaml": "resources: []\nreplicas: [{name: x, count: lots}]\n"}, "expected a whole number"),
    "bad-json-patch": ({"a/d.yaml": BASE.split("---")[0],
                        "a/kustomization.yaml": "resources: [d.yaml]\npatches:\n  - target: {kind: Deployment}\n"
                                                "    patch: '[{op: remove, path: /nope/x}]'\n"},
                       "JSON patch operation 0"),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_kustomizations_are_input_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    files, message = HOSTILE[case]
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()  # the repository boundary
    _tree(repo, files)
    monkeypatch.chdir(repo)
    start = time.monotonic()
    r = run_cli("check", "--no-config", "--format", "json", ".")
    assert time.monotonic() - start < 20
    assert r.code == 2 and message in r.out + r.err, (r.out[-500:], r.err[-500:])
    assert "Traceback" not in r.err


def test_a_json_patch_replace_of_a_missing_member_adds_it_as_kustomize_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ray-project/kuberay apiserver/deploy/local/e2e: `replace /spec/template/spec/containers/0/imagePullPolicy`
    on a Deployment without one. kustomize build adds the member (kubernetes-sigs/kustomize issue 4380); the
    gate called the overlay an input error."""
    patch = ("patches:\n- patch: |-\n    - op: replace\n      path: /spec/template/spec/containers/0/imagePullPolicy\n"
             "      value: IfNotPresent\n  target:\n    kind: Deployment\n    name: vllm\n    version: v1\n"
             "replicas:\n  - name: vllm\n    count: 2\n")
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "e2e/kustomization.yaml": "resources: [../base]\n" + patch})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check("e2e")
    assert code == 0 and not data["invalid"], err
    assert _got(data)["Deployment/default/vllm [kustomize e2e]"]["total_chips"] == 18


def test_transformers_that_scale_or_patch_are_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: an overlay's `transformers: [scale.yaml]` (a builtin PatchTransformer setting replicas to 64) was not applied:
    the gate read 1 replica where kubectl kustomize builds 64. A ReplicaCountTransformer is applied too."""
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    base.mkdir()
    overlay.mkdir()
    (base / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer, namespace: ml}\nspec:\n  replicas: 1\n  template:\n"
        "    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    (base / "kustomization.yaml").write_text("resources: [deploy.yaml]\n")
    (overlay / "scale.yaml").write_text(
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: scale}\n"
        "patch: '[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 64}]'\ntarget: {kind: Deployment, name: trainer}\n"
    )
    (overlay / "kustomization.yaml").write_text("resources: [../base]\ntransformers: [scale.yaml]\n")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(overlay))
    got = {x["source"]["address"]: x["request"]["replicas"] for x in json.loads(r.out)["results"]}
    assert 64 in got.values(), got
    (overlay / "scale.yaml").write_text(
        "apiVersion: builtin\nkind: ReplicaCountTransformer\nmetadata: {name: rc}\nreplica: {name: trainer, count: 32}\n"
        "fieldSpecs: [{path: spec/replicas, kind: Deployment}]\n"
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(overlay))
    assert 32 in {x["request"]["replicas"] for x in json.loads(r.out)["results"]}


def test_a_resource_file_of_another_name_is_read_through_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``resources: [gpu.txt]`` (kustomize reads any file as YAML) holding 64 pods x 8 GPUs was neither built (no
    transform) nor read on its own (not *.yaml): the kustomization was skipped and 512 chips passed. Now the build reads it;
    a kustomization of *.yaml files only is still not built (its files are read on their own)."""
    _tree(tmp_path, {
        "gpu.txt": BASE.split("---")[0].replace("replicas: 1", "replicas: 64"),
        "kustomization.yaml": "resources: [gpu.txt]\n",
        "plain/deploy.yaml": BASE.split("---")[0],
        "plain/kustomization.yaml": "resources: [deploy.yaml]\n",
    })
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _got(data)
    assert set(got) == {"Deployment/default/vllm [kustomize .]", "Deployment/default/vllm"}, err
    assert got["Deployment/default/vllm [kustomize .]"]["total_chips"] == 64 * 9
    assert got["Deployment/default/vllm"]["path"] == "plain/deploy.yaml"


def test_helm_charts_are_inflated_as_kustomize_build_enable_helm_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a kustomization of ``helmCharts`` only (a chart of the repository under helmGlobals.chartHome with
    valuesInline replicas: 16, or a chart pulled from a repository whose inline values ask for 8 H100) was no
    kustomization at all ('YAML that is not a workload profile'): the chart's default of 1 pod passed, the remote chart
    vanished. Now a local chart is rendered with valuesFile and valuesInline and patched like any resource of the build;
    a remote one whose values ask for accelerators is a request whose chips are not read."""
    _tree(tmp_path, {
        "charts/trainer/Chart.yaml": "apiVersion: v2\nname: trainer\nversion: 0.1.0\n",
        "charts/trainer/values.yaml": "replicas: 1\n",
        "charts/trainer/templates/d.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer}\nspec:\n  replicas: {{ .Values.replicas }}\n"
            "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
            "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"),
        "local/kustomization.yaml": "helmGlobals: {chartHome: ../charts}\nhelmCharts:\n- name: trainer\n  releaseName: t\n"
                                    "  valuesInline: {replicas: 16}\n",
        "remote/kustomization.yaml": "helmCharts:\n- name: vllm\n  repo: https://charts.example.com\n  version: 1.0.0\n"
                                     "  valuesInline: {resources: {limits: {nvidia.com/gpu: 8}}, replicaCount: 16}\n",
    })
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _got(data)
    local = got["Deployment/default/trainer [kustomize local]"]
    assert (local["total_chips"], local["path"]) == (128, "local/kustomization.yaml"), err
    remote = got["helm-chart/vllm 1.0.0 [kustomize remote]"]
    assert remote["total_chips"] is None and remote["unresolved"], remote


def test_a_replacement_whose_source_lacks_the_field_is_said_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replacement sourced from a ConfigMap of the build that has no such key (data.replicas where the ConfigMap only
    has data.other) leaves the count it replaces unresolved. Before, an internal error (KeyError) stopped the run: any
    pull request could crash the gate with two files."""
    overlay = """resources: [../../base, sizes.yaml]
replacements:
  - source: {kind: ConfigMap, name: sizes, fieldPath: data.replicas}
    targets:
      - select: {kind: Deployment}
        fieldPaths: [spec.replicas]
configMapGenerator:
  - name: generated
    literals: [a=1]
"""
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "overlays/prod/kustomization.yaml": overlay,
                     "overlays/prod/sizes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sizes}\ndata: {other: '1'}\n"})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    messages = _got(data)["Deployment/default/vllm [kustomize overlays/prod]"]["unresolved"]
    assert any("replacements to spec.replicas" in m and "no data.replicas" in m for m in messages), messages


def test_a_replacement_of_a_field_that_counts_nothing_is_not_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replacement the build cannot apply leaves a request unresolved only where its target may change what is
    counted: a volume picked by [name=...] whose bucketName it sets, or a container's image, counts nothing (before,
    the 'name' in the selector flagged 146 requests of accelerated-platforms); a workload's metadata.name still is."""
    def overlay(path: str) -> str:
        return f"""resources: [../../base]
replacements:
  - source: {{kind: ConfigMap, name: not-built, fieldPath: data.x}}
    targets:
      - select: {{kind: Deployment}}
        fieldPaths: ["{path}"]
"""
    _tree(tmp_path, {"base/deploy.yaml": BASE.split("---")[0], "base/kustomization.yaml": "resources: [deploy.yaml]\n",
                     "overlays/a/kustomization.yaml": overlay("spec.template.spec.volumes.[name=hub].csi.volumeAttributes.bucketName"),
                     "overlays/b/kustomization.yaml": overlay("spec.template.spec.containers.[name=vllm].image"),
                     "overlays/c/kustomization.yaml": overlay("metadata.name")})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    got = _got(data)
    assert not got["Deployment/default/vllm [kustomize overlays/a]"]["unresolved"]
    assert not got["Deployment/default/vllm [kustomize overlays/b]"]["unresolved"]
    assert any("metadata.name" in m for m in got["Deployment/default/vllm [kustomize overlays/c]"]["unresolved"])


_GPU_DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
      - name: s
        resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_a_file_a_build_deploys_is_counted_once_in_the_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file as written and the kustomization that builds it (replicas 3) are both judged, but the summary's chips
    and cost count what the build deploys, once. Before, total_chips added both (8 + 12 = 20: the review of sgl-project/ome
    found 267 of 900 chips counted twice)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deploy.yaml").write_text(_GPU_DEPLOY)
    (tmp_path / "kustomization.yaml").write_text("resources: [deploy.yaml]\nreplicas:\n- {name: vllm, count: 3}\n")
    _code, data, _ = _check(".")
    got = {r["source"]["address"]: r for r in data["results"]}
    assert set(got) == {"Deployment/ml/vllm", "Deployment/ml/vllm [kustomize .]"}, set(got)
    assert data["summary"]["total_chips"] == 12 and data["summary"]["counted_in_builds"] == 1
    built = got["Deployment/ml/vllm [kustomize .]"]
    assert data["summary"]["proposed_monthly_usd"] == built["proposal"]["request"]["cost_usd"], (data["summary"], built["proposal"])


def test_a_build_that_scales_a_file_to_zero_does_not_hide_it_from_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile: a PR adds a kustomization that scales a 4-GPU x 2 Deployment to 0. The build asks for nothing, but the file
    as written is still judged and held to the policy (a pipeline may apply it with kubectl apply -f)."""
    (tmp_path / "deploy.yaml").write_text(_GPU_DEPLOY)
    (tmp_path / "kustomization.yaml").write_text("resources: [deploy.yaml]\nreplicas:\n- {name: vllm, count: 0}\n")
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 4\n")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "deploy.yaml", "kustomization.yaml", "--policy", "policy.yaml", "--format", "json")
    data = json.loads(r.out)
    raw = next(x for x in data["results"] if x["source"]["address"] == "Deployment/ml/vllm")
    assert "policy-max-chips" in {f["rule"] for f in raw["findings"]} and r.code == 1, (r.code, raw["findings"])


def test_a_file_whose_object_the_build_deletes_stays_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An overlay that reads a GPU Deployment file and deletes it ($patch: delete) deploys nothing of it: the file as
    written is counted in the summary (before, it was left out as 'in the build', and the summary read 0 chips beside a
    row of 8)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "gpu.yaml").write_text(_GPU_DEPLOY)
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        "resources: [../base/gpu.yaml]\npatches:\n- patch: |-\n    $patch: delete\n    apiVersion: apps/v1\n    kind: Deployment\n"
        "    metadata: {name: vllm, namespace: ml}\n")
    _code, data, _ = _check(".")
    assert data["summary"]["total_chips"] == 8 and data["summary"]["counted_in_builds"] == 0, data["summary"]


def test_a_directory_checked_from_elsewhere_reads_its_own_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 27 (GoogleCloudPlatform/kubernetes-engine-samples, the jax-a100 kustomization, copied outside any git work
    tree): checked from another directory, its own job.yaml was refused as 'outside the repository' (exit 2) and the
    patch judged on its own as 1 unknown GPU, where kubectl kustomize builds 32 x A100 80GB. A file outside any work
    tree may read within the directory checked; a link from it to elsewhere is still never read."""
    repo, elsewhere, secret = tmp_path / "platform", tmp_path / "runner", tmp_path / "outside"
    elsewhere.mkdir()
    secret.mkdir()
    _tree(repo / "k8s", {"deploy.yaml": BASE.split("---")[0], "kustomization.yaml": "resources: [deploy.yaml]\nreplicas:\n"
                         "  - name: vllm\n    count: 4\n"})
    monkeypatch.chdir(elsewhere)
    code, data, err = _check(str(repo / "k8s"))
    assert code == 0 and not data["invalid"], err
    [(_addr, got)] = [(a, g) for a, g in _got(data).items() if a.startswith("Deployment/default/vllm [kustomize")]
    assert got["replicas_max"] == 4, got
    # a resource linked out of the checked directory is still refused
    (secret / "deploy.yaml").write_text(BASE.split("---")[0])
    (repo / "k8s" / "linked.yaml").symlink_to(secret / "deploy.yaml")
    (repo / "k8s" / "kustomization.yaml").write_text("resources: [linked.yaml]\n")
    code, _data, err = _check(str(repo / "k8s"))
    assert code == 2 and "outside the repository" in err, (code, err)


def test_a_directory_checked_through_a_link_is_no_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory a run checks bounds what its files read only where it is named as it is: checked through a
    symbolic link (a pull request's `k8s -> /somewhere`), its kustomization's resources are outside what was asked."""
    outside, runner = tmp_path / "outside", tmp_path / "runner"
    runner.mkdir()
    _tree(outside, {"deploy.yaml": BASE.split("---")[0],
                    "kustomization.yaml": "resources: [deploy.yaml]\nreplicas:\n  - name: vllm\n    count: 4\n"})
    (runner / "k8s").symlink_to(outside)
    monkeypatch.chdir(tmp_path / "runner")
    code, _data, err = _check("k8s")
    assert code == 2 and "outside the repository" in err, (code, err)
