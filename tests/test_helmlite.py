"""Helm charts on a runner without helm: advisor renders the templates with the chart's values itself
(``advisor.check.infra.helmlite``) and reads the manifests, instead of skipping the chart and passing
the gate. Real material: the vLLM production-stack chart (vllm-project/production-stack, helm/ at
a6c01db05f65f556235413ba8dbcfb0c01132fff, Apache-2.0: tests/data/helm-real/vllm-stack/LICENSE) with
the values files of its own tutorials (tutorials/assets/, same commit); the Ollama chart (otwld/ollama-helm
at eadf03e6d6885b4042b2d7623e2e4741f4799f78, MIT: tests/data/helm-real/ollama/LICENSE) with the GPU
settings its values.yaml documents; and the KubeRay ray-cluster chart in tests/data/platform-repo."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.check.infra.helmlite import _lex, _lines, _parse, _Renderer, _Scope, release_root

from .conftest import ROOT, run_cli

REAL = ROOT / "tests" / "data" / "helm-real"


@pytest.fixture(autouse=True)
def _no_helm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("advisor.check.files.helm", lambda: None)


def _chart(root: Path, values: dict[str, Any] | str, templates: dict[str, str], name: str = "serve") -> Path:
    chart = root / "charts" / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values if isinstance(values, str) else yaml.safe_dump(values))
    for fname, text in templates.items():
        (chart / "templates" / fname).write_text(text)
    return chart


def _check(*args: str) -> tuple[int, dict[str, Any], str]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", *args)
    return r.code, json.loads(r.out) if r.out.strip().startswith("{") else {}, r.err


def _requests(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["source"]["address"]: {**r["request"], "line": r["source"]["line"], "path": r["source"]["path"],
                                     "rules": [f["rule"] for f in r["findings"]]} for r in data["results"]}


# The chart `helm create` scaffolds, with a GPU server's resources and node selector in its values.
SCAFFOLD = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "serve.fullname" . }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  template:
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
HELPERS = """{{- define "serve.fullname" -}}
{{- if .Values.fullnameOverride }}{{ .Values.fullnameOverride | trunc 63 }}
{{- else }}{{ printf "%s-%s" .Release.Name .Chart.Name }}{{- end }}
{{- end }}
"""
HPA = """{{- if .Values.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "serve.fullname" . }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "serve.fullname" . }}
  minReplicas: {{ .Values.autoscaling.minReplicas }}
  maxReplicas: {{ .Values.autoscaling.maxReplicas }}
{{- end }}
"""
VALUES: dict[str, Any] = {
    "replicaCount": 16,
    "image": {"repository": "vllm/vllm-openai", "tag": "v0.11.0"},
    "fullnameOverride": "",
    "autoscaling": {"enabled": False, "minReplicas": 2, "maxReplicas": 6},
    "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"cpu": 8}},
    "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
}


def test_a_chart_is_read_without_helm_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 'skipped: a Helm chart ... helm is not on PATH', 0 proposals, exit 0, for 128 H100."""
    _chart(tmp_path, VALUES, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    got = _requests(data)
    assert list(got) == ["Deployment/default/release-name-serve"]
    q = got["Deployment/default/release-name-serve"]
    assert (q["accelerator"], q["count"], q["replicas_min"], q["replicas_max"], q["total_chips"]) == ("h100", 8, 16, 16, 128)
    assert q["path"] == "charts/serve/templates/deployment.yaml" and q["line"] == 4  # the template's own line
    assert data["skipped_files"] == []
    # the same chart named by one of its files, as a pre-commit hook passes it
    code, data, _ = _check("charts/serve/values.yaml")
    assert _requests(data)["Deployment/default/release-name-serve"]["total_chips"] == 128
    # a policy's budget fails the chart as it fails the rendered manifest
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", "policy.yaml", "--format", "json", ".")
    assert r.code == 1, r.out
    assert "policy-max-chips" in {f["rule"] for res in json.loads(r.out)["results"] for f in res["findings"]}


def test_values_decide_conditions_autoscaling_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = {**VALUES, "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6}, "fullnameOverride": "llm"}
    _chart(tmp_path, values, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    q = _requests(data)["Deployment/default/llm"]
    assert (q["replicas_min"], q["replicas_max"], q["total_chips"]) == (2, 6, 48), err


def test_each_values_file_beside_the_chart_is_a_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deploy pipeline passes values-prod.yaml with -f: a pull request that raises its replicas is
    seen, and the prod variant's autoscaler scales the prod variant only."""
    chart = _chart(tmp_path, VALUES, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    (chart / "values-prod.yaml").write_text("autoscaling: {enabled: true, minReplicas: 4, maxReplicas: 40}\n")
    (chart / "staging.values.yaml").write_text("replicaCount: 1\nresources: {limits: {nvidia.com/gpu: 1}}\n")
    (chart / "ci").mkdir()
    (chart / "ci" / "test-values.yaml").write_text("replicaCount: 999\n")  # chart-testing's files: not a deployment
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: (q["replicas_min"], q["replicas_max"], q["total_chips"]) for a, q in _requests(data).items()}
    assert got == {
        "Deployment/default/release-name-serve": (16, 16, 128),
        "Deployment/default/release-name-serve [-f staging.values.yaml]": (1, 1, 1),
        "Deployment/default/release-name-serve [-f values-prod.yaml]": (4, 40, 320),
    }, err
    (chart / "values-bad.yaml").write_text("- a list\n")
    code, data, _err = _check(".")
    assert code == 2 and "values file: expected a mapping" in json.dumps(data["invalid"])


def test_range_over_models_and_disabled_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = """{{- range $i, $m := .Values.models }}
{{- if and (ne ($m.enabled | toString) "false") (gt (int $m.gpus) 0) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ $.Release.Name }}-{{ $m.name }}"
spec:
  replicas: {{ $m.replicas | default 1 }}
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: {{ $m.tpu | quote }}
        cloud.google.com/gke-tpu-topology: {{ $m.topology }}
      containers:
        - name: server
          resources:
            limits:
              google.com/tpu: {{ $m.gpus | quote }}
{{- end }}
{{- end }}
"""
    values = {"models": [
        {"name": "a", "gpus": 4, "replicas": 3, "tpu": "tpu-v6e-slice", "topology": "2x2"},
        {"name": "b", "gpus": 8, "tpu": "tpu-v6e-slice", "topology": "2x4"},
        {"name": "c", "gpus": 8, "enabled": False, "tpu": "tpu-v6e-slice", "topology": "2x4"},
        {"name": "d", "gpus": 0.5, "tpu": "tpu-v6e-slice", "topology": "2x4"},
    ]}
    _chart(tmp_path, values, {"serve.yaml": template})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _requests(data)
    assert set(got) == {"Deployment/default/release-name-a", "Deployment/default/release-name-b"}, err
    assert (got["Deployment/default/release-name-a"]["count"], got["Deployment/default/release-name-a"]["replicas_max"]) == (4, 3)
    assert got["Deployment/default/release-name-b"]["total_chips"] == 8
    assert got["Deployment/default/release-name-b"]["accelerator"] == "tpu-v6e"


def test_what_is_not_evaluated_is_unresolved_never_guessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      {{- if include "common.gpu.enabled" . }}
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
      {{- end }}
      containers:
        - name: t
          resources:
            limits:
              nvidia.com/gpu: {{ .Files.Get "gpus.txt" }}
"""
    chart = _chart(tmp_path, {}, {"job.yaml": template})
    (chart / "gpus.txt").write_text("64\n")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    [res] = data["results"]
    messages = [f["message"] for f in res["findings"] if f["rule"] == "request-unresolved"]
    assert res["request"]["count"] is None and res["request"]["accelerator"] == "l4", err
    assert any("not a literal value" in m and ".Files.Get" in m for m in messages)
    assert any("could not be evaluated" in m and "common.gpu.enabled" in m for m in messages)  # a library chart's helper, absent
    assert all(f["line"] in (8, 16) for f in res["findings"] if f["rule"] == "request-unresolved")


# A chart that takes its values at install (no values.yaml: AI-Hypercomputer/gpu-recipes src/helm-charts,
# 56d3d4f): `.Values.job.image.repository` of a missing `job` stops helm template; read as empty it gave
# 'image: :' and the chart was an input error. A `toYaml ... | nindent` of such a value alone on a line
# broke the env list around it.
AT_INSTALL = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-h100-80gb
      containers:
        - name: t
          image: {{ .Values.job.image.repository }}:{{ .Values.job.image.tag }}
          env:
            - name: A
              value: "1"
            {{- if .Values.workload.envs }}
            {{- toYaml .Values.workload.envs | nindent 12 }}
            {{- end }}
          resources:
            limits:
              nvidia.com/gpu: 8
"""


def test_a_chart_given_its_values_at_install_is_read_and_what_is_missing_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _chart(tmp_path, "", {"job.yaml": AT_INSTALL})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0 and not data["invalid"], err
    [res] = data["results"]
    assert res["request"]["count"] == 8 and res["request"]["accelerator"] == "h100"
    messages = [f["message"] for f in res["findings"] if f["rule"] == "request-unresolved"]
    assert any("left out" in m and "toYaml" in m for m in messages), messages
    assert any("could not be evaluated" in m and ".Values.workload.envs" in m for m in messages), messages


def test_a_left_out_line_that_may_hold_the_request_stays_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod's resources come from the values through `tpl` (not evaluated): without that line the
    pod asks for nothing, and the values name GPUs, so the chart is not passed over."""
    template = """apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: t
      image: i
      resources:
        {{- tpl .Values.resources . | nindent 8 }}
      env:
        - name: A
          value: "1"
"""
    _chart(tmp_path, {"resources": "limits:\n  nvidia.com/gpu: 8\n"}, {"pod.yaml": template})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 2 and not data.get("results"), err
    assert "pod.yaml:10:" in err and "resources: expected a mapping" in err


def test_a_chart_without_accelerators_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "tests" / "data" / "platform-repo")
    code, data, err = _check("charts")
    assert code == 0 and data["results"] == [], err
    skipped = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert "Helm chart without accelerator requests" in skipped.pop("charts/ray-cluster")
    # what the chart does not render (chart-testing's ci/ values, helm-unittest suites) is read as any file
    assert sorted(skipped) == ["charts/ray-cluster/ci/ci-values.yaml", "charts/ray-cluster/tests/raycluster_test.yaml"]


def _overlay(tmp_path: Path, overlay: str | None) -> Path:
    chart = tmp_path / "vllm-stack"
    shutil.copytree(REAL / "vllm-stack", chart)
    if overlay:
        base = yaml.safe_load((chart / "values.yaml").read_text())
        over = yaml.safe_load((REAL / "overlays" / overlay).read_text())

        def merge(a: Any, b: Any) -> Any:
            if isinstance(a, dict) and isinstance(b, dict):
                return {**a, **{k: merge(a.get(k), v) if k in a else v for k, v in b.items()}}
            return b

        (chart / "values.yaml").write_text(yaml.safe_dump(merge(base, over)))
    return chart


REAL_CASES = {
    # the chart's own values: its one example model is `enabled: false`
    None: {},
    "values-04-multiple-models.yaml": {
        "Deployment/default/release-name-llama3-deployment-vllm": 1,
        "Deployment/default/release-name-mistral-deployment-vllm": 1,
    },
    "values-25-v100-multi-gpu-tp2.yaml": {"Deployment/default/release-name-qwen7b-deployment-vllm": 2},
    "values-15-a-minimal-pipeline-parallel-example-raycluster.yaml": {
        "RayCluster/default/release-name-distilgpt2-raycluster-raycluster/head": 1,
        "RayCluster/default/release-name-distilgpt2-raycluster-raycluster/ray": 1,
    },
    # requestGPU: 0.5 is `int 0` in the template's `gt (int ...) 0`: no GPU limit is rendered
    "values-01-2pods-minimal-example.yaml": {},
}


@pytest.mark.parametrize("overlay", list(REAL_CASES), ids=[str(k) for k in REAL_CASES])
def test_real_vllm_production_stack_chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlay: str | None) -> None:
    _overlay(tmp_path, overlay)
    monkeypatch.chdir(tmp_path)
    code, data, err = _check("vllm-stack")
    assert code == 0 and data["invalid"] == [], err
    got = _requests(data)
    assert {a: q["total_chips"] for a, q in got.items()} == REAL_CASES[overlay]
    for q in got.values():
        assert q["hardware"] == "nvidia.com/gpu" and "request-unknown-accelerator" in q["rules"]  # the chart names no GPU type
        assert "request-unresolved" not in q["rules"]  # every condition on the way was evaluated
    if not got:
        assert "without accelerator requests" in data["skipped_files"][0]["reason"]


OLLAMA_CASES: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({}, None),  # ollama.gpu.enabled: false by default
    ({"ollama": {"gpu": {"enabled": True, "number": 2}}, "replicaCount": 3,
      "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
     {"hardware": "nvidia-l4", "count": 2, "replicas_min": 3, "replicas_max": 3, "total_chips": 6}),
    ({"ollama": {"gpu": {"enabled": True, "type": "amd", "number": 1}}},
     {"hardware": "amd.com/gpu", "count": 1, "replicas_min": 1, "replicas_max": 1, "total_chips": 1}),
    ({"ollama": {"gpu": {"enabled": True, "mig": {"enabled": True, "devices": {"1g.10gb": 2}}}}},
     {"hardware": "nvidia.com/mig-1g.10gb", "count": 2, "replicas_min": 1, "replicas_max": 1, "total_chips": 2}),
    ({"ollama": {"gpu": {"enabled": True}}, "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 5}},
     {"hardware": "nvidia.com/gpu", "count": 1, "replicas_min": 2, "replicas_max": 5, "total_chips": 5}),
]


@pytest.mark.parametrize(("values", "want"), OLLAMA_CASES, ids=["default", "nvidia-l4", "amd", "mig", "autoscaling"])
def test_real_ollama_chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], want: dict[str, Any] | None) -> None:
    chart = tmp_path / "ollama"
    shutil.copytree(REAL / "ollama", chart)
    (chart / "values-gpu.yaml").write_text(yaml.safe_dump(values))
    monkeypatch.chdir(tmp_path)
    code, data, err = _check("ollama")
    assert code == 0 and data["invalid"] == [], err
    got = {a: {k: q[k] for k in ("hardware", "count", "replicas_min", "replicas_max", "total_chips")} for a, q in _requests(data).items()}
    assert got == ({} if want is None else {"Deployment/default/release-name-ollama [-f values-gpu.yaml]": want})


def _render(src: str, values: dict[str, Any]) -> str:
    root = release_root(values, {"name": "c"}, "c")
    nodes = _parse(_lex(src), "t.yaml")
    defines = {n.expr.strip('"'): n.body for n in nodes if getattr(n, "kind", "") == "define"}
    r = _Renderer("t.yaml", root, defines)
    r.run(nodes, _Scope(root, {"$": root}))
    return _lines(r.out)[0]


@pytest.mark.parametrize(
    ("src", "values", "want"),
    [
        ("a: {{ .Values.x | default 3 }}", {}, "a: 3"),
        ("a: {{ .Values.x | default 3 }}", {"x": 5}, "a: 5"),
        ("a: {{ default 3 .Values.x | quote }}", {"x": 0}, 'a: "3"'),
        ("{{- if .Values.on }}a{{- else if .Values.b }}b{{- else }}c{{- end }}", {"b": 1}, "b"),
        ("{{ with .Values.m }}{{ .k }}{{ else }}none{{ end }}", {"m": {}}, "none"),
        ("{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};{{ end }}", {"m": {"b": 2, "a": 1}}, "a=1;b=2;"),
        ("{{ $n := 2 }}{{ if eq .Values.t \"x\" }}{{ $n = 4 }}{{ end }}{{ $n }}", {"t": "x"}, "4"),
        ("{{ mul (int .Values.a) 2 | add 1 }}", {"a": "3"}, "7"),
        ("k:{{- toYaml .Values.r | nindent 2 }}", {"r": {"b": 1, "a": [1]}}, "k:\n  a:\n  - 1\n  b: 1"),
        ('{{ define "h" }}[{{ .x }}]{{ end }}{{ include "h" (dict "x" .Values.v) }}', {"v": 9}, "[9]"),
        # a missing key is nil; a field of nil stops helm template ('nil pointer evaluating interface {}.b'):
        # not evaluated (AI-Hypercomputer/gpu-recipes charts take their values at install and rendered 'image: :')
        ("{{ .Values.a }}|{{ .Values.a.b.c }}|{{ hasKey .Values \"a\" }}", {}, "|${.Values.a.b.c}|false"),
        ("{{ env \"HOME\" }}", {}, "${env}"),
        # a recursive helper whose stop condition is unknown stops at the include depth, as unknown
        ('{{ define "m" }}{{ if .x }}{{ include "m" . }}{{ end }}{{ end }}[{{ include "m" (dict "x" (env "X")) }}]', {},
         "[${include m .}]"),
        ('{{ if semverCompare ">=1.19-0" .Capabilities.KubeVersion.GitVersion }}new{{ else }}old{{ end }}', {}, "new"),
        ('{{ if .Capabilities.APIVersions.Has "autoscaling/v2" }}a{{ end }}'
         '{{ if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}b{{ end }}', {}, "a"),
        ("{{ $l := list }}{{ range $k, $v := .Values.m }}{{ $l = append $l $k }}{{ end }}{{ len $l }}", {"m": {"a": 1, "b": 2}}, "2"),
        ("{{ $r := deepCopy (dict \"limits\" (dict \"nvidia.com/gpu\" 2)) | mergeOverwrite .Values.r }}{{ toYaml $r }}",
         {"r": {"limits": {"cpu": 1}}}, "limits:\n  cpu: 1\n  nvidia.com/gpu: 2"),
        ("{{ .Values.x | tpl $ }}", {"x": "{{ secret }}"}, "${tpl}"),
    ],
)
def test_template_subset(src: str, values: dict[str, Any], want: str) -> None:
    assert _render(src, values) == want


HOSTILE = {
    "fan-out-include": ('{{ define "x" }}{{ include "x" . }}{{ include "x" . }}{{ end }}{{ include "x" . }}', "steps"),
    "range-bomb": ("{{ range 10000 }}{{ range 10000 }}x{{ end }}{{ end }}", "steps"),
    "string-doubling": ('{{ $s := "xxxxxxxxxxxxxxxx" }}' + '{{ $s = printf "%s%s" $s $s }}' * 40 + "{{ $s }}", "MiB"),
    "deep-blocks": ("{{ if true }}" * 500 + "x" + "{{ end }}" * 500, "nested more than"),
    "unclosed": ("{{ if .Values.x }}\nkind: Pod\n", "never closed"),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_templates_are_input_errors_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    src, message = HOSTILE[case]
    _chart(tmp_path, {}, {"t.yaml": src + "\nnvidia.com/gpu: 1\n"})
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    r = run_cli("check", "--no-config", "--format", "json", ".")
    assert time.monotonic() - start < 20
    assert r.code == 2 and message in r.out + r.err, (r.out[-400:], r.err[-400:])
    assert "Traceback" not in r.err


def test_files_and_secrets_are_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = """apiVersion: v1
kind: Pod
metadata:
  name: "{{ .Files.Get "creds" }}{{ env "AWS_SECRET_ACCESS_KEY" }}{{ expandenv "$HOME" }}{{ (lookup "v1" "Secret" "ns" "s").data }}"
spec:
  nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
  containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
    chart = _chart(tmp_path, {}, {"pod.yaml": template})
    (chart / "creds").write_text("TOPSECRET\n")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", ".")
    assert r.code == 0, r.err
    assert "TOPSECRET" not in r.out + r.err and "ENVSECRET" not in r.out + r.err
    assert json.loads(r.out)["results"][0]["request"]["total_chips"] == 1


ARGO = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: llm-prod
spec:
  project: default
  source:
    repoURL: https://github.com/example/platform
    path: charts/serve
    helm:
      valueFiles: [values-prod.yaml, $values/envs/prod.yaml]
      valuesObject:
        replicaCount: 4
      parameters:
        - name: resources.limits.nvidia\\.com/gpu
          value: "2"
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ingress
spec:
  source: {repoURL: https://kubernetes.github.io/ingress-nginx, chart: ingress-nginx, targetRevision: 4.11.0}
"""
FLUX = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: llm-staging
spec:
  chart:
    spec:
      chart: ./charts/serve
      sourceRef: {kind: GitRepository, name: platform}
  values:
    replicaCount: 1
    nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
  valuesFrom:
    - {kind: ConfigMap, name: llm-overrides}
"""
HELMFILE = """releases:
  - name: llm-batch
    chart: ./charts/serve
    values:
      - envs/batch.yaml
      - {replicaCount: 3}
      - envs/secrets.yaml.gotmpl
    set:
      - {name: autoscaling.enabled, value: "false"}
  - name: monitoring
    chart: prometheus-community/kube-prometheus-stack
"""


def test_releases_of_a_chart_in_the_repository_are_judged_with_their_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Argo CD, Flux and helmfile keep the production sizes outside the chart: a pull request that raises a
    GPU count there changed nothing the gate read."""
    chart = _chart(tmp_path, VALUES, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    (chart / "values-prod.yaml").write_text("resources: {limits: {nvidia.com/gpu: 4}}\n")
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "llm.yaml").write_text(ARGO)
    (tmp_path / "apps" / "flux.yaml").write_text(FLUX)
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "batch.yaml").write_text("nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-a100}\n")
    (tmp_path / "helmfile.yaml").write_text(HELMFILE)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: (q["accelerator"], q["count"], q["replicas_max"], q["path"], q["line"]) for a, q in _requests(data).items()}
    # each rendered for its release: .Release.Name the Argo CD application's, the Flux HelmRelease's, the helmfile release's
    # parameters over valuesObject over files
    assert got["Deployment/default/llm-prod-serve [argocd llm-prod]"] == ("h100", 2, 4, "apps/llm.yaml", 9), err
    assert got["Deployment/default/llm-staging-serve [flux llm-staging]"] == ("l4", 8, 1, "apps/flux.yaml", 8)
    assert got["Deployment/default/llm-batch-serve [helmfile llm-batch]"] == ("a100-40gb", 8, 3, "helmfile.yaml", 3)
    assert got["Deployment/default/release-name-serve"][:3] == ("h100", 8, 16)  # the chart itself, as helm template names it
    unread = {a: [f["message"] for f in r["findings"] if f["rule"] == "request-unresolved"] for a, r in
              ((r["source"]["address"], r) for r in data["results"])}
    assert any("$values/envs/prod.yaml" in m for m in unread["Deployment/default/llm-prod-serve [argocd llm-prod]"])
    assert any("valuesFrom" in m for m in unread["Deployment/default/llm-staging-serve [flux llm-staging]"])
    assert any("secrets.yaml.gotmpl" in m for m in unread["Deployment/default/llm-batch-serve [helmfile llm-batch]"])
    assert not any("ingress" in a or "monitoring" in a for a in got)  # charts from a repository: not rendered here


TF = """resource "helm_release" "llm" {
  name   = "llm"
  chart  = "${path.module}/../charts/serve"
  values = [file("${path.module}/values/prod.yaml"), templatefile("${path.module}/values/tpl.yaml", { n = var.n })]
  set {
    name  = "replicaCount"
    value = "6"
  }
  set {
    name  = "image.tag"
    value = var.tag
  }
}

resource "helm_release" "ingress" {
  name       = "ingress"
  repository = "https://kubernetes.github.io/ingress-nginx"
  chart      = "ingress-nginx"
}
"""


def test_a_terraform_helm_release_of_a_chart_in_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """helm_release with chart = "${path.module}/charts/...", values = [file(...)] and set blocks, the
    form the Terraform Helm provider's users write: rendered with those values, at the resource's line."""
    _chart(tmp_path, VALUES, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    (tmp_path / "infra" / "values").mkdir(parents=True)
    (tmp_path / "infra" / "main.tf").write_text(TF)
    (tmp_path / "infra" / "values" / "prod.yaml").write_text("resources: {limits: {nvidia.com/gpu: 4}}\n")
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = _requests(data)
    q = got["Deployment/default/llm-serve [terraform helm_release.llm]"]
    assert (q["accelerator"], q["count"], q["replicas_max"], q["path"], q["line"]) == ("h100", 4, 6, "infra/main.tf", 1), err
    unread = [f["message"] for r in data["results"] if r["source"]["address"].endswith("helm_release.llm]") for f in r["findings"]
              if f["rule"] == "request-unresolved"]
    assert any("templatefile" in m for m in unread) and any("image.tag" in m for m in unread)
    assert not any("ingress" in a for a in got)


def test_real_gpu_recipes_chart_that_takes_its_values_at_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """AI-Hypercomputer/gpu-recipes src/helm-charts/a3mega/sglang-inference (tests/data/helm-real/README.md):
    no values.yaml. It was an input error ('image: :'); now its LeaderWorkerSet is read, and what the values
    would decide (replicas, the group size, the GPUs per pod) is request-unresolved, never guessed; the
    conditions it could not evaluate are said in one finding."""
    monkeypatch.chdir(REAL)
    code, data, err = _check("gpu-recipes-sglang")
    assert code == 0 and not data["invalid"], err
    [res] = data["results"]
    assert res["source"]["address"] == "LeaderWorkerSet/default/release-name/leader"
    unresolved = [f["message"] for f in res["findings"] if f["rule"] == "request-unresolved"]
    assert any("${.Values.sglang.replicaCount}" in m for m in unresolved)
    assert any("nvidia.com/gpu = ${.Values.job.gpus}" in m for m in unresolved)
    assert sum("template condition(s) could not be evaluated" in m for m in unresolved) == 1


UMBRELLA = """apiVersion: v2
name: platform
version: 0.1.0
dependencies:
  - name: vllm-stack
    version: 0.1.7
    repository: https://vllm-project.github.io/production-stack
  - name: redis
    version: 19.0.0
    repository: oci://registry-1.docker.io/bitnamicharts
    condition: redis.enabled
"""


def test_an_umbrella_chart_whose_gpus_are_in_a_dependency_not_in_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An umbrella chart names a remote chart in Chart.yaml and asks it for GPUs in its values (the vLLM
    production-stack's requestGPU); without `helm dependency build` its charts/ is empty. Before, the gate
    rendered the umbrella's own templates and passed it as 'a Helm chart without accelerator requests'."""
    chart = _chart(tmp_path, {"vllm-stack": {"servingEngineSpec": {"modelSpec": [{"name": "llama3", "requestGPU": 8}]}},
                              "redis": {"enabled": False}},
                   {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n"}, name="platform")
    (chart / "Chart.yaml").write_text(UMBRELLA)
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    [res] = data["results"]
    assert res["source"]["address"] == "helm-dependency/platform/vllm-stack" and res["source"]["line"] == 5
    assert any("depends on vllm-stack 0.1.7" in f["message"] for f in res["findings"] if f["rule"] == "request-unresolved")
    # values that ask the dependency for no accelerator (a toleration naming nvidia.com/gpu asks for none: the
    # NVIDIA/k8s-device-plugin chart's nfd dependency): a skip that names what was not rendered
    (chart / "values.yaml").write_text("vllm-stack: {servingEngineSpec: {modelSpec: [{name: llama3, requestCPU: 8}]},"
                                       " tolerations: [{key: nvidia.com/gpu, operator: Exists}]}\n")
    code, data, err = _check(".")
    assert code == 0 and not data["results"]
    assert "not rendered: its dependencies vllm-stack" in data["skipped_files"][0]["reason"]
    # vendored as a package (helm dependency build writes charts/NAME-VERSION.tgz): rendered by helm only, so the
    # values that ask it for GPUs are reported as before, never passed over
    (chart / "values.yaml").write_text("vllm-stack: {servingEngineSpec: {modelSpec: [{name: llama3, requestGPU: 8}]}}\n")
    (chart / "charts").mkdir()
    (chart / "charts" / "vllm-stack-0.1.7.tgz").write_bytes(b"\x1f\x8b")
    code, data, err = _check(".")
    [res] = data["results"]
    assert any("charts/vllm-stack-0.1.7.tgz (packaged" in f["message"] for f in res["findings"] if f["rule"] == "request-unresolved")


GITOPS = {
    "app.yaml": """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: vllm-prod
spec:
  source:
    repoURL: https://vllm-project.github.io/production-stack
    chart: vllm-stack
    targetRevision: 0.1.7
    helm:
      valuesObject:
        servingEngineSpec:
          modelSpec:
            - {name: llama3, replicaCount: 4, requestGPU: 8}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: grafana
spec:
  source:
    repoURL: https://grafana.github.io/helm-charts
    chart: grafana
    targetRevision: 8.0.0
    helm:
      values: |
        persistence:
          enabled: true
""",
    "hr.yaml": """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ollama}
spec:
  chart:
    spec:
      chart: ollama
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: otwld}
  values:
    ollama:
      gpu: {enabled: true, type: nvidia, number: 2}
""",
    "helmfile.yaml": """releases:
  - name: kuberay
    chart: kuberay/ray-cluster
    version: 1.1.0
    set:
      - name: worker.resources.limits.nvidia\\\\.com/gpu
        value: 4
  - name: off
    chart: otwld/ollama
    values: [{ollama: {gpu: {enabled: false, number: 2}}}]
  - name: redis
    chart: bitnami/redis
""",
}


def test_releases_of_remote_charts_whose_values_ask_for_gpus_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GitOps repository installs charts from Helm repositories with its own values: an Argo CD Application
    (chart + repoURL, valuesObject requestGPU: 8), a Flux HelmRelease (ollama.gpu.enabled), a helmfile release
    (set nvidia.com/gpu = 4). None can be rendered here; before, all three passed unseen. Each is now a request
    at the chart's name, unknown and request-unresolved; releases whose values ask for no accelerator (grafana,
    redis, a disabled gpu block) are not."""
    for name, text in GITOPS.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    got = {r["source"]["address"]: r for r in data["results"]}
    assert set(got) == {"helm-release/argocd vllm-prod", "helm-release/flux ollama", "helm-release/helmfile kuberay"}
    assert got["helm-release/argocd vllm-prod"]["source"]["line"] == 8
    assert got["helm-release/flux ollama"]["request"]["hardware"] == "ollama.gpu.enabled"
    for r in got.values():
        assert any("a chart from a Helm repository" in f["message"] for f in r["findings"] if f["rule"] == "request-unresolved")


TF_REMOTE = '''resource "helm_release" "vllm" {
  name       = "vllm"
  repository = "https://vllm-project.github.io/production-stack"
  chart      = "vllm-stack"
  values = [
    <<-EOT
    servingEngineSpec:
      modelSpec:
      - name: llama
        requestGPU: 8
    EOT
  ]
}

resource "helm_release" "tgi" {
  name       = "tgi"
  repository = "oci://ghcr.io/example/charts"
  chart      = "tgi"
  set {
    name  = "resources.limits.nvidia\\\\.com/gpu"
    value = var.gpus
  }
}

resource "helm_release" "encoded" {
  name       = "encoded"
  repository = "https://charts.example.com"
  chart      = "server"
  values = [yamlencode({
    resources = { limits = { "nvidia.com/gpu" = 2 } }
  })]
}

resource "helm_release" "redis" {
  name       = "redis"
  repository = "https://charts.bitnami.com/bitnami"
  chart      = "redis"
  values     = [yamlencode({ replica = { replicaCount = 3 } })]
  set {
    name  = "gpu.enabled"
    value = "false"
  }
}
'''


def test_terraform_releases_of_remote_charts_asking_for_gpus_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Terraform Helm provider installs a chart from a Helm repository with values that ask it for GPUs: a
    heredoc (requestGPU: 8), a set block behind a variable (nvidia.com/gpu = var.gpus), yamlencode of an object.
    Before, the file was skipped as 'Terraform HCL without accelerator resources' and the 8 GPUs passed unseen
    (fail open, as the Argo CD / Flux / helmfile releases did). Each is now a request at the release's address,
    unknown and request-unresolved; a release whose values ask for none (redis, gpu.enabled false) is not."""
    (tmp_path / "main.tf").write_text(TF_REMOTE)
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    got = {r["source"]["address"]: r for r in data["results"]}
    assert set(got) == {"helm_release.vllm", "helm_release.tgi", "helm_release.encoded"}, err
    assert got["helm_release.vllm"]["request"]["hardware"] == "servingEngineSpec.modelSpec[0].requestGPU"
    assert got["helm_release.encoded"]["request"]["hardware"] == "resources.limits.nvidia.com/gpu"
    assert [got[a]["source"]["line"] for a in ("helm_release.vllm", "helm_release.tgi", "helm_release.encoded")] == [1, 15, 25]
    for r in got.values():
        assert any("vllm-stack" in f["message"] or "tgi from oci://" in f["message"] or "server from https" in f["message"]
                   for f in r["findings"] if f["rule"] == "request-unresolved"), r["findings"]
    # what no file settles reads "?", never "None"; a proposal with nothing estimated has no table of a header alone
    md = run_cli("check", "--no-config", "--format", "markdown", "--fail-on", "never", ".").out
    assert "requestGPU × ? × 1 = ? chips" in md and "None" not in md
    assert "| | accelerator | count | time | cost |" not in md
    text = run_cli("check", "--no-config", "--fail-on", "never", ".").out
    assert "x ? x 1" in " ".join(text.split()) and "None" not in text


def test_a_terraform_helm_release_heredoc_values_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """values = [<<-EOT ... EOT] is how the provider's documentation writes inline values; a chart in the repository
    is rendered with them (before, the heredoc was said as a values source not read and the chart's defaults stood)."""
    _chart(tmp_path, VALUES, {"deployment.yaml": SCAFFOLD, "_helpers.tpl": HELPERS, "hpa.yaml": HPA})
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "main.tf").write_text('''resource "helm_release" "llm" {
  name   = "llm"
  chart  = "${path.module}/../charts/serve"
  values = [
    <<-EOT
    resources:
      limits:
        nvidia.com/gpu: 2
    EOT
  ]
}
''')
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    q = _requests(data)["Deployment/default/llm-serve [terraform helm_release.llm]"]
    assert (q["accelerator"], q["count"]) == ("h100", 2), err
    assert not any(f["rule"] == "request-unresolved" and "EOT" in f["message"] for r in data["results"] for f in r["findings"])


def test_a_chart_whose_dependencies_is_no_list_is_read_past(tmp_path: Path) -> None:
    """Chart.yaml `dependencies: true` beside a charts/ directory raised TypeError (an internal error, found by a mutation
    fuzzer); the conditions are read from a list only, and the chart and its subchart are still rendered."""
    gpu = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
           "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n")
    chart = _chart(tmp_path, {}, {"pod.yaml": gpu})
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: serve\nversion: 0.1.0\ndependencies: true\n")
    _chart(chart, {}, {"pod.yaml": gpu.replace("name: p}", "name: q}")}, name="sub")
    _, data, err = _check(str(chart))
    assert "internal error" not in json.dumps(data) + err and data["results"], err


def test_every_template_but_the_partials_is_a_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Helm renders every file under templates/ except the partials (a name that starts with _) and NOTES.txt
    (pkg/releaseutil/manifest_sorter.go): before, templates/deploy.tpl was taken for a helper and 64 x 8 L4 passed unseen."""
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("replicas: 64\n")
    (chart / "templates" / "_helpers.tpl").write_text('{{- define "c.name" -}}trainer{{- end -}}\n')
    (chart / "templates" / "NOTES.txt").write_text("Installed {{ .Release.Name }}\n")
    (chart / "templates" / "deploy.tpl").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ include \"c.name\" . }}, namespace: ml}\nspec:\n"
        "  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    monkeypatch.setenv("PATH", "")  # advisor's own renderer
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check("chart")
    assert [(x["source"]["address"], x["request"]["replicas"]) for x in data["results"]] == [("Deployment/ml/trainer", 64)], err


def test_a_subcharts_values_are_scoped_by_its_chart_name_not_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Helm gives a subchart the parent's values under the subchart's Chart.yaml name (or alias): before, the folder name
    was used, so charts/worker-sub (name: gpuworker) never saw `gpuworker.replicas: 64` and was judged at 1."""
    chart = tmp_path / "chart"
    sub = chart / "charts" / "worker-sub"
    (sub / "templates").mkdir(parents=True)
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: parent\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("gpuworker:\n  replicas: 64\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: gpuworker\nversion: 0.1.0\n")
    (sub / "values.yaml").write_text("replicas: 1\n")
    (sub / "templates" / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer, namespace: ml}\nspec:\n  replicas: {{ .Values.replicas }}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    monkeypatch.setenv("PATH", "")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check("chart")
    assert [(x["source"]["address"], x["request"]["replicas"]) for x in data["results"]] == [("Deployment/ml/trainer", 64)], err


def test_a_template_comment_may_hold_an_action(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Go template comment ends at */}} (or */ -}}), whatever it holds: before, {{/* DEBUG {{ .Values.tag }} */}} ended
    at the first }} and the rest of the comment leaked into the manifest (aws/sagemaker-hyperpod-cli's chart: exit 2)."""
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("replicas: 3\ntag: v1\n")
    (chart / "templates" / "d.yaml").write_text(
        '{{/* DEBUG: tag {{ .Values.tag | default "not set" }} */}}\n{{- /* another {{ .x }} */ -}}\n'
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n  replicas: {{ .Values.replicas }}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: 'x:{{ .Values.tag }}', resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    monkeypatch.setenv("PATH", "")
    monkeypatch.chdir(tmp_path)
    code, data, err = _check("chart")
    assert code == 0 and not data["invalid"], err
    assert [(x["source"]["address"], x["request"]["replicas"]) for x in data["results"]] == [("Deployment/ml/d", 3)]


def test_a_template_that_branches_on_the_release_state_is_judged_as_install_and_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: ``replicas: {{ if .Release.IsInstall }}1{{ else }}64{{ end }}`` rendered only as helm template's install
    (1 pod x 8 L4) and passed a 64-chip policy, though every upgrade of the release deploys 64 pods. Now the chart is also
    rendered as an upgrade (helm template --is-upgrade), its requests marked [helm upgrade]; a chart that never reads the
    release's state renders once."""
    deploy = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer}\nspec:\n"
        "  replicas: {{ if .Release.IsInstall }}{{ .Values.replicas }}{{ else }}64{{ end }}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers:\n      - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}\n"
    )
    _chart(tmp_path, {"replicas": 1}, {"deploy.yaml": deploy})
    plain = deploy.replace(".Release.IsInstall", ".Values.replicas").replace("name: trainer", "name: plain")
    _chart(tmp_path, {"replicas": 1}, {"deploy.yaml": plain}, name="plain")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: r["total_chips"] for a, r in _requests(data).items()}
    assert got == {"Deployment/default/trainer": 8, "Deployment/default/trainer [helm upgrade]": 512, "Deployment/default/plain": 8}, err
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", "policy.yaml", "--format", "json", "charts/serve")
    assert r.code == 1, r.out


def test_values_yml_is_not_the_charts_values_but_a_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a chart without values.yaml had its values.yml read as its values (replicas 1), though Helm loads only
    values.yaml and renders the template's default (16 replicas of 8 L4): 128 chips passed as 8. Now the chart renders
    with its defaults, and values.yml as a variant a pipeline may pass with -f."""
    chart = _chart(tmp_path, {}, {"dep.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: {{ .Values.replicas | default 16 }}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n")})
    (chart / "values.yaml").unlink()
    (chart / "values.yml").write_text("replicas: 1\n")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: r["total_chips"] for a, r in _requests(data).items()}
    assert got == {"Deployment/default/d": 128, "Deployment/default/d [-f values.yml]": 8}, (got, err)


@pytest.mark.parametrize(
    "key", ['{{ tpl .Values.gpuResource . }}', '{{ .Values.gpuResource | b64dec }}', '{{ printf "nvidia.com/gp%c" 117 }}']
)
def test_a_resource_name_from_a_value_is_never_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """Before: a chip resource whose name a template computes (``{{ tpl .Values.gpuResource . }}: 8``, b64dec of a value,
    printf's %c verb) vanished: 'a Helm chart without accelerator requests', 16 pods of 8 H100 passed. Now %c is rendered
    (nvidia.com/gpu) and a name not rendered is a resource whose chips are not read (request-unresolved)."""
    _chart(tmp_path, {"gpuResource": "bnZpZGlhLmNvbS9ncHU="}, {"dep.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 16\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}\n"
        f"      containers:\n      - name: c\n        image: x\n        resources:\n          limits:\n            {key}: 8\n")})
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    [req] = _requests(data).values()
    assert req["accelerator"] == "h100", err
    assert req["total_chips"] == 128 if "printf" in key else "request-unresolved" in req["rules"]


@pytest.mark.parametrize(
    "cond", ['.Capabilities.APIVersions.Has "kueue.x-k8s.io/v1beta1"', 'semverCompare ">=1.31-0" .Capabilities.KubeVersion.Version']
)
def test_a_branch_the_cluster_decides_is_guessed_not_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cond: str) -> None:
    """Before: a branch on the cluster's API groups or Kubernetes version was decided by advisor's fixed cluster (no
    kueue, v1.30): 1 pod of 8 L4, and a 64-chip policy passed though a current cluster renders 16. Now such a branch is
    a guessed condition (request-unresolved), and a chip limit fails closed on it."""
    _chart(tmp_path, {}, {"dep.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n"
        f"  replicas: {{{{ if {cond} }}}}16{{{{ else }}}}1{{{{ end }}}}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n")})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy.yaml").write_text("limits:\n  max_chips: 64\n")
    r = run_cli("check", "--policy", "policy.yaml", "--format", "json", ".")
    assert r.code == 1, r.out
    [res] = json.loads(r.out)["results"]
    assert "request-unresolved" in {f["rule"] for f in res["findings"]}


def test_a_document_break_glued_to_the_next_line_splits_as_helm_splits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: '---' followed by '{{- $root := . -}}' rendered '---apiVersion: batch/v1' (ai-infra-cluster-provisioning's
    megatron-gke chart), which Helm splits as a document break and a YAML reader does not: an input error (duplicate key
    'kind') and the Job's 128 GPUs never counted. Now the break is split off, the template's lines kept."""
    _chart(tmp_path, {}, {"job.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n{{- $root := . -}}\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 16\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n")})
    monkeypatch.chdir(tmp_path)
    code, data, err = _check(".")
    assert code == 0, err
    [(address, req)] = _requests(data).items()
    assert (address, req["total_chips"], req["line"]) == ("Job/default/j", 128, 8)


def test_static_files_of_a_chart_and_its_crds_directory_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a static template with no '{{' (a Config Connector ContainerNodePool of H100 nodes) was skipped unless it
    named nvidia.com/gpu or a GKE label, and a Deployment under crds/ (which helm install applies as written) was never
    read. Now every static template but CustomResourceDefinitions is read, and crds/ too."""
    chart = _chart(tmp_path, {}, {"pool.yaml": (
        "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerNodePool\nmetadata: {name: p}\n"
        "spec:\n  location: us-central1-a\n  nodeCount: 4\n  clusterRef: {name: c}\n"
        "  nodeConfig:\n    machineType: a3-highgpu-8g\n"),
        "crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.example.com}\n"})
    (chart / "crds").mkdir()
    (chart / "crds" / "dep.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 16\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: (r["accelerator"], r["total_chips"]) for a, r in _requests(data).items()}
    assert got == {"ContainerNodePool/default/p": ("h100", 32), "Deployment/default/d": ("l4", 128)}, (got, err)


def test_an_argocd_application_set_renders_its_template_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: an ApplicationSet whose template installs the repository's chart with valuesObject.replicas: 16 was
    'Kubernetes manifest without accelerator requests' (a plain Application was read): the chart's default of 1 pod
    passed. Now its template is read as the release it makes, once per generator element (how many is not read: said,
    and a chip limit fails closed on it)."""
    _chart(tmp_path, {"replicas": 1}, {"d.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: {{ .Values.replicas }}\n"
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n")}, name="trainer")
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "set.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: trainers}\nspec:\n"
        "  generators: [{list: {elements: [{region: us-central1}]}}]\n  template:\n    metadata: {name: 'trainer-{{region}}'}\n"
        "    spec:\n      source: {repoURL: 'https://example.com/r', path: charts/trainer, helm: {valuesObject: {replicas: 16}}}\n"
        "      destination: {namespace: ml}\n")
    monkeypatch.chdir(tmp_path)
    _code, data, err = _check(".")
    got = {a: (r["total_chips"], r["path"], "request-unresolved" in r["rules"]) for a, r in _requests(data).items()}
    # in the namespace its destination names (helm install puts the chart's objects there)
    assert got["Deployment/ml/d [argocd applicationset trainers]"] == (128, "apps/set.yaml", True), (got, err)


def test_len_of_a_string_counts_its_bytes_as_go_does() -> None:
    """Before: ``{{ len "éé" }}`` rendered 2 (characters); helm renders 4 (Go's len counts UTF-8 bytes), so a count
    written that way read half."""
    assert _render('replicas: {{ len "éé" }}\nn: {{ len .Values.l }}\n', {"l": [1, 2, 3]}) == "replicas: 4\nn: 3\n"
