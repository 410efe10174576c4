"""Review 29: a security review that controls every file of a pull request, run against the gate with a fixed policy
(at most 8 chips, H100 only). Each case is written here, in a repository of its own (a .git directory)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from .conftest import run_cli

POLICY = "fail_on: error\nlimits:\n  max_chips: 8\n  allowed_accelerators: [h100]\n"
TOKEN = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX1NFQ1JFVA=="

_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  replicas: 1
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-h100-80gb
      containers:
      - name: c
        image: x
        resources:
          limits:
            nvidia.com/gpu: 1
"""

_JOB = """apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: ml}}
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {{key: cloud.google.com/gke-accelerator, operator: In, values: [nvidia-h100-80gb]}}
{terms}
      containers:
      - name: c
        image: x
        resources:
          limits:
            nvidia.com/gpu: 8
"""


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f'[http "https://github.com/"]\n\textraheader = {TOKEN}\n')
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (tmp_path / "policy.yaml").write_text(POLICY)
    return repo


def _check(tmp_path: Path, repo: Path, *extra: str) -> tuple[int, str]:
    r = run_cli("check", str(repo), "--policy", str(tmp_path / "policy.yaml"), *extra)
    return r.code, r.out + r.err


def test_the_runners_token_in_git_config_never_reaches_an_output(tmp_path: Path) -> None:
    """actions/checkout keeps the job's token in .git/config; a kustomization read it as a ConfigMap source and a
    replacement copied it into a Deployment's name, shown in the markdown, SARIF and annotations. Now nothing under
    .git is read: an input error naming the entry."""
    repo = _repo(tmp_path, {
        "dep.yaml": _DEPLOYMENT,
        "kustomization.yaml": "resources: [dep.yaml]\nconfigMapGenerator:\n- name: leak\n  envs: [.git/config]\n"
                              "replacements:\n- source: {kind: ConfigMap, name: leak, fieldPath: data.extraheader}\n"
                              "  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [metadata.name]\n",
    })
    for fmt in ("markdown", "sarif", "github", "text"):
        code, out = _check(tmp_path, repo, "--format", fmt)
        assert code == 2, (fmt, out)
        assert "eC1hY2Nl" not in out and "AUTHORIZATION" not in out, fmt
        assert "config' is outside the repository (or in its version-control metadata); not read" in " ".join(out.split())


def test_every_node_affinity_term_is_held_to_the_policy(tmp_path: Path) -> None:
    """Terms of required node affinity are ORed: a second one naming a4-highgpu-8g (B200), one with Exists (any type),
    or a 17th naming B200 let a Job judged as H100 x 8 pass a policy allowing H100 only (exit 0)."""
    cases = {
        "b200": "            - matchExpressions:\n              - {key: node.kubernetes.io/instance-type, operator: In, "
                "values: [a4-highgpu-8g]}",
        "exists": "            - matchExpressions:\n              - {key: cloud.google.com/gke-accelerator, operator: Exists}",
        "17th": "".join("            - matchExpressions:\n              - {key: cloud.google.com/gke-accelerator, operator: "
                        "In, values: [nvidia-h100-80gb]}\n" for _ in range(15))
                + "            - matchExpressions:\n              - {key: cloud.google.com/gke-accelerator, operator: In, "
                  "values: [nvidia-b200]}",
    }
    for name, terms in cases.items():
        repo = _repo(tmp_path / name, {"job.yaml": _JOB.format(terms=terms)})
        code, out = _check(tmp_path / name, repo)
        assert code == 1 and "policy-accelerator-not-allowed" in out, (name, out)
    # a nodeSelector fixes the type whatever the terms say: the H100 pod passes
    fixed = _JOB.format(terms=cases["exists"]).replace("      affinity:", "      nodeSelector: {cloud.google.com/gke-accelerator: "
                                                          "nvidia-h100-80gb}\n      affinity:")
    repo = _repo(tmp_path / "fixed", {"job.yaml": fixed})
    assert _check(tmp_path / "fixed", repo)[0] == 0


def test_hostile_patterns_and_templates_end_in_good_time(tmp_path: Path) -> None:
    """Each took minutes before: a kustomize target name of ten a{,30} (Python's {,n} quantifier), a Helm template of
    20,000 unclosed {{, a JSON file of a quote and 40,000 escaped quotes, and three nested empty Helm ranges over
    1,000 values (a step per iteration now)."""
    cases = {
        "redos": {"dep.yaml": _DEPLOYMENT.replace("name: serve", "name: " + "a" * 120),
                  "kustomization.yaml": "resources: [dep.yaml]\npatches:\n- target: {kind: Deployment, name: \""
                                        + "a{,30}" * 10 + "x\"}\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n"
                                        "      value: 2\n"},
        "helm-lexer": {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
                       "chart/templates/t.yaml": "{{" * 20_000},
        "json": {"x.json": '"' + '\\"' * 40_000},
        "helm-steps": {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
                       "chart/values.yaml": "l: [" + ",".join(["1"] * 1000) + "]\n",
                       "chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n"
                                                  "{{- range $a := .Values.l }}{{- range $b := $.Values.l }}"
                                                  "{{- range $c := $.Values.l }}{{ end }}{{ end }}{{ end }}\n"},
    }
    for name, files in cases.items():
        repo = _repo(tmp_path / name, files)
        start = time.monotonic()
        code, out = _check(tmp_path / name, repo)
        assert time.monotonic() - start < 20, name
        assert code in (0, 1, 2) and "internal error" not in out, (name, out)


def test_a_json_schema_file_is_no_internal_error(tmp_path: Path) -> None:
    """A top-level ``type`` that is a list (a JSON Schema's ["object", "null"]) or a mapping raised TypeError: every
    repository with a schema file failed the gate with an internal error."""
    repo = _repo(tmp_path, {"schema.json": '{"$schema": "http://json-schema.org/draft-07/schema#", "type": ["object", "null"]}',
                            "t.yaml": "type: {a: 1}\n"})
    code, out = _check(tmp_path, repo)
    assert code == 0 and "internal error" not in out, out
    (repo / "u.yaml").write_text("task: [a]\nmodel: {}\n")  # read as a profile: its errors, never an internal one
    code, out = _check(tmp_path, repo)
    assert code == 2 and "internal error" not in out and "task: ['a'] is not one of" in " ".join(out.split()), out


_POOL = """resource "google_container_node_pool" "{name}" {{
  name       = "{name}"
  cluster    = "c"
  location   = "us-central1-a"
  node_count = {count}
  node_config {{
    machine_type = "a3-highgpu-8g"
  }}
}}
"""
_UNPARSEABLE = '"${~ "pool" ~}"'  # a template strip marker: Terraform takes it, python-hcl2 does not


def test_terraform_a_pull_request_hides_from_the_reader_fails_closed(tmp_path: Path) -> None:
    """Each passed (exit 0) before: a file python-hcl2 cannot parse whose block labels are bare identifiers, or whose
    resource sits between a heredoc holding /* and one holding */ (skipped as naming no accelerator); an override file
    it cannot parse, or one past the 200th file of its directory (not merged); a terraform.tfvars it cannot parse, one
    over the size limit, or the 51st auto.tfvars (the variable's default judged); a .tf.json in its array form."""
    pool = _POOL.format(name="pool", count=100)
    var_pool = 'variable "nodes" {\n  type    = number\n  default = 1\n}\n' + _POOL.format(name="gpu", count="var.nodes")
    cases: dict[str, dict[str, str]] = {
        "bare-labels": {"main.tf": pool.replace('resource "google_container_node_pool" "pool"', "resource google_container_node_pool pool")
                        .replace('"pool"\n', _UNPARSEABLE + "\n", 1)},
        "heredoc-comment": {"main.tf": 'locals {\n  a = <<-EOT\n    /* notes\n  EOT\n}\n' + pool.replace('"pool"\n', _UNPARSEABLE + "\n", 1)
                            + 'locals {\n  b = <<-EOT\n    end */\n  EOT\n}\n'},
        "override-unparsed": {"main.tf": _POOL.format(name="pool", count=1),
                              "pool_override.tf": f'resource "google_container_node_pool" "pool" {{\n  name = {_UNPARSEABLE}\n'
                                                  '  node_count = 100\n}\n'},
        "override-past-200": {"main.tf": _POOL.format(name="pool", count=1),
                              "pool_override.tf": 'resource "google_container_node_pool" "pool" {\n  node_count = 100\n}\n',
                              **{f"a_{i:03d}.tf": f'locals {{\n  x{i} = {i}\n}}\n' for i in range(202)}},
        "tfvars-unicode": {"main.tf": var_pool, "terraform.tfvars": "nodes = 100\nnœud = 1\n"},
        "tfvars-large": {"main.tf": var_pool, "terraform.tfvars": "nodes = 100\n" + "# padding\n" * 30_000},
        "tfvars-51st": {"main.tf": var_pool, **{f"a{i:02d}.auto.tfvars": "nodes = 1\n" for i in range(50)},
                        "z.auto.tfvars": "nodes = 100\n"},
        "tf-json-array": {"main.tf.json": '{"resource": [{"google_container_node_pool": {"pool": {"name": "pool", "cluster": '
                                          '"c", "location": "us-central1-a", "node_count": 5, "node_config": '
                                          '{"machine_type": "a3-highgpu-8g"}}}}]}'},
    }
    for name, files in cases.items():
        repo = _repo(tmp_path / name, files)
        code, out = _check(tmp_path / name, repo)
        assert code == 1 and "policy-max-chips" in out, (name, out)


def test_a_65th_pod_spec_of_an_unread_kind_is_found(tmp_path: Path) -> None:
    """64 CPU-only component specs of a SeldonDeployment used up the search's bound: the 65th, asking for 8 B200, was
    never examined (exit 0). The bound now counts pod specs that ask for chips."""
    cpu = "".join(f"  - name: p{i}\n    componentSpecs:\n    - spec:\n        containers:\n        - {{name: c, image: x}}\n"
                  for i in range(64))
    gpu = ("  - name: gpu\n    componentSpecs:\n    - spec:\n        nodeSelector: {cloud.google.com/gke-accelerator: nvidia-b200}\n"
           "        containers:\n        - name: c\n          image: x\n          resources: {limits: {nvidia.com/gpu: 8}}\n")
    repo = _repo(tmp_path, {"sd.yaml": "apiVersion: machinelearning.seldon.io/v1\nkind: SeldonDeployment\n"
                                       "metadata: {name: m, namespace: ml}\nspec:\n  predictors:\n" + cpu + gpu})
    code, out = _check(tmp_path, repo)
    assert code == 1 and "policy-accelerator-not-allowed" in out, out


_RAYJOB = """apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
  namespace: ml
  annotations: {advisor.dev/workload: ray-train}
spec:
  entrypoint: python train.py
  activeDeadlineSeconds: 60
SHUTDOWN  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: head, image: ray}]
    workerGroupSpecs:
    - groupName: gpu
      replicas: 8
      minReplicas: 8
      maxReplicas: 8
      rayStartParams: {}
      template:
        spec:
          nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
          containers:
          - name: w
            image: ray
            resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_a_rayjobs_deadline_bounds_its_cost_only_where_its_cluster_is_shut_down(tmp_path: Path) -> None:
    """A RayJob's activeDeadlineSeconds fails the job; its RayCluster, 64 H100, is deleted only with
    shutdownAfterJobFinishes: true (KubeRay's default: false). Before, a 60-second deadline priced it as a $14 one-off
    and the gate passed a $5,000 monthly limit."""
    files = {"profile.yaml": "name: ray-train\ntask: training\ndomain: llm\nmodel: {params_b: 8, architecture: transformer, "
                             "precision: bf16}\ntraining: {tokens_b: 1, seq_len: 2048, method: full}\n"}
    policy = "fail_on: error\nlimits:\n  max_chips: 64\n  allowed_accelerators: [h100]\n  max_monthly_increase_usd: 5000\n"
    for shutdown, expected in (("", 1), ("  shutdownAfterJobFinishes: true\n", 0)):
        repo = _repo(tmp_path / str(expected), {**files, "rayjob.yaml": _RAYJOB.replace("SHUTDOWN", shutdown)})
        (tmp_path / str(expected) / "policy.yaml").write_text(policy)
        code, out = _check(tmp_path / str(expected), repo)
        assert code == expected, (shutdown, out)


def test_one_charts_bad_values_file_does_not_stop_the_batch(tmp_path: Path) -> None:
    """ci.md, bad files in a batch: the chart is listed as invalid and the good file beside it is still judged and
    reported. Before, the run stopped with one stderr line and wrote no report."""
    repo = _repo(tmp_path, {"dep.yaml": _DEPLOYMENT.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 8").replace("replicas: 1", "replicas: 4"),
                            "chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
                            "chart/values.yaml": "a: [1, 2\nb: 3\n",
                            "chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    report = tmp_path / "out.md"
    code, out = _check(tmp_path, repo, "--format", "markdown", "-o", str(report))
    assert code == 2 and report.exists(), out
    text = report.read_text()
    assert "dep.yaml" in text and "values.yaml" in text and "policy-max-chips" in text


def test_a_patch_target_pattern_prints_no_python_warning(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"dep.yaml": _DEPLOYMENT,
                            "kustomization.yaml": 'resources: [dep.yaml]\npatches:\n- target: {kind: Deployment, name: "[[a]]"}\n'
                                                  "  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 2\n"})
    # a process of its own: pytest would catch the warning before it reached stderr
    r = subprocess.run([sys.executable, "-m", "advisor", "check", str(repo), "--policy", str(tmp_path / "policy.yaml")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr


def test_a_broken_document_after_a_thousand_others_keeps_the_file_an_input_error(tmp_path: Path) -> None:
    """kubectl applies the documents before one it cannot read: a Deployment asking for GPU fractions past 1,000 ConfigMaps,
    then a broken document, was skipped as 'names no accelerator' (exit 0); it is an input error now (exit 2)."""
    maps = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(1000))
    kai = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: serve, namespace: ml}\nspec:\n  replicas: 100\n"
           "  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"0.5\"\n    spec:\n"
           "      schedulerName: kai-scheduler\n      containers:\n      - {name: c, image: x}\n")  # KAI: half a GPU each
    repo = _repo(tmp_path, {"big.yaml": maps + "---\n" + kai + "---\na: {b\n"})
    code, out = _check(tmp_path, repo)
    assert code == 2 and "invalid YAML" in out, out


def test_jsonnet_that_computes_what_a_pod_asks_for_is_not_passed_over(tmp_path: Path) -> None:
    """vendor + '.com/' + 'g' + 'pu' as a computed limits key (Argo CD evaluates every *.jsonnet of a directory
    application) was skipped as naming no accelerator; it stops the run now. Literal CPU limits are still skipped."""
    app = ("local vendor = 'nvidia';\nlocal res = vendor + '.com/' + 'g' + 'pu';\n{ apiVersion: 'apps/v1', kind: 'Deployment',"
           " spec: { replicas: 100, template: { spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { [res]: 8 }"
           " } }] } } } }\n")
    repo = _repo(tmp_path / "computed", {"app.jsonnet": app})
    code, out = _check(tmp_path / "computed", repo)
    assert code == 2 and "Jsonnet computes what a pod asks for" in " ".join(out.split()), out
    plain = app.replace("{ [res]: 8 }", "{ cpu: '1', memory: '2Gi' }")
    repo = _repo(tmp_path / "plain", {"app.jsonnet": plain})
    code, out = _check(tmp_path / "plain", repo)
    assert code == 0 and "names no accelerator" in " ".join(out.split()), out
