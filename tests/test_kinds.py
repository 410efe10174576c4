"""Kinds and counting rules beyond the real files: a Helm chart rendered when helm is on PATH,
``kind: List``, init containers and sidecars, plan JSON under for_each and modules mapped back
to their .tf lines, HCL count / for_each / locals / conditionals, TPU v2/v3 core-named types,
N1 hosts, SkyPilot min_replicas 0."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli
from .test_infra import rc

POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{cloud.google.com/gke-accelerator: nvidia-l4}}
  initContainers:
  - name: warm
    resources: {{limits: {{nvidia.com/gpu: {init}}}}}
  - name: proxy
    restartPolicy: Always
    resources: {{limits: {{nvidia.com/gpu: {sidecar}}}}}
  containers:
  - name: main
    resources: {{limits: {{nvidia.com/gpu: {main}}}}}
"""


def results(*args: str) -> dict[str, dict]:
    r = run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", *args)
    assert r.code == 0, r.err
    return {x["source"]["address"]: x for x in json.loads(r.out)["results"]}


@pytest.mark.parametrize(("init", "sidecar", "main", "chips"), [(0, 0, 1, 1), (1, 2, 1, 3), (8, 1, 1, 8), (0, 1, 0, 1)])
def test_init_containers_and_sidecars_count(tmp_path: Path, init: int, sidecar: int, main: int, chips: int) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(POD.format(name="p", init=init, sidecar=sidecar, main=main))
    assert results(str(f))["Pod/default/p"]["request"]["count"] == chips


def test_kind_list_items_are_read(tmp_path: Path) -> None:
    pod = POD.format(name="x", init=0, sidecar=0, main=2)
    items = "\n".join("  - " + line if i == 0 else "    " + line for i, line in enumerate(pod.splitlines()))
    f = tmp_path / "list.yaml"
    f.write_text("apiVersion: v1\nkind: List\nitems:\n" + items + "\n")
    got = results(str(f))
    assert got["Pod/default/x"]["request"]["count"] == 2 and got["Pod/default/x"]["source"]["line"] == 6


def test_helm_chart_is_rendered_when_helm_is_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chart = tmp_path / "charts" / "serve"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: serve\nversion: 0.1.0\n")
    (chart / "templates" / "d.yaml").write_text("replicas: {{ .Values.n }}\n")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    helm = bin_ / "helm"
    rendered = POD.format(name="from-helm", init=0, sidecar=0, main=4)
    helm.write_text(f"#!/bin/sh\n[ \"$1\" = template ] || exit 1\ncat <<'EOF'\n---\n# Source: serve/templates/d.yaml\n{rendered}EOF\n")
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    got = results(str(tmp_path / "charts"))
    assert got["Pod/default/from-helm"]["request"]["count"] == 4
    assert got["Pod/default/from-helm"]["source"]["path"] == str(chart)
    # a values file beside values.yaml is rendered too (helm template CHART -f FILE), as a variant of its own
    (chart / "values-prod.yaml").write_text("n: 2\n")
    prod = POD.format(name="from-helm", init=0, sidecar=0, main=8)
    helm.write_text(
        f"#!/bin/sh\n[ \"$1\" = template ] || exit 1\nif [ \"$3\" = -f ] && [ \"$4\" = {chart}/values-prod.yaml ]; then\n"
        f"cat <<'EOF'\n{prod}EOF\nelse\ncat <<'EOF'\n{rendered}EOF\nfi\n"
    )
    got = results(str(tmp_path / "charts"))
    assert {a: r["request"]["count"] for a, r in got.items()} == {
        "Pod/default/from-helm": 4,
        "Pod/default/from-helm [-f values-prod.yaml]": 8,
    }


def test_plan_for_each_instances_and_module_addresses_map_to_tf_lines(tmp_path: Path) -> None:
    mod = tmp_path / "modules" / "gke"
    mod.mkdir(parents=True)
    (mod / "pools.tf").write_text('variable "x" {}\n\nresource "google_container_node_pool" "pools" {\n  for_each = var.pools\n}\n')
    (tmp_path / "main.tf").write_text(
        'module "gke" {\n  source = "./modules/gke"\n}\n\nresource "google_compute_instance" "vm" {\n  name = "vm"\n}\n'
    )
    pool = {"location": "us-central1-a", "node_count": 1, "node_config": [{"machine_type": "a3-highgpu-8g"}]}
    changes = [
        rc('module.gke.google_container_node_pool.pools["h100-a"]', pool),
        rc('module.gke.google_container_node_pool.pools["h100-b"]', {**pool, "node_count": 2}),
        rc("google_compute_instance.vm", {"machine_type": "g2-standard-8", "zone": "us-central1-a"}),
    ]
    for c in changes:
        c["type"] = c["address"].split(".")[-2].split("[")[0] if "[" not in c["address"].split(".")[-1] else c["address"].split(".")[-2]
    plan = {"format_version": "1.2", "resource_changes": changes,
            "configuration": {"root_module": {"module_calls": {"gke": {"source": "./modules/gke", "module": {}}}}}}
    (tmp_path / "plan.json").write_text(json.dumps(plan, indent=1))
    got = results(str(tmp_path / "plan.json"))
    a, b = got['module.gke.google_container_node_pool.pools["h100-a"]'], got['module.gke.google_container_node_pool.pools["h100-b"]']
    assert a["request"]["total_chips"] == 8 and b["request"]["total_chips"] == 16
    assert a["source"]["config"] == {"path": str(mod / "pools.tf"), "line": 3}
    assert got["google_compute_instance.vm"]["source"]["config"] == {"path": str(tmp_path / "main.tf"), "line": 5}


HCL = """
variable "enable_tpu" { default = false }
variable "gpus" { default = 2 }
locals {
  zones = ["us-central1-a", "us-central1-b"]
  big   = { "h200" = "a3-ultragpu-8g" }
}
resource "google_compute_instance" "gpu" {
  count        = var.enable_tpu ? 0 : length(local.zones) > 0 ? 2 : 0
  machine_type = "n1-standard-8"
  zone         = local.zones[count.index]
  guest_accelerator {
    type  = "nvidia-tesla-t4"
    count = var.gpus
  }
}
resource "google_compute_instance" "host" {
  count        = 3
  machine_type = "n1-standard-8"
  zone         = "us-central1-a"
}
resource "google_container_node_pool" "big" {
  for_each   = local.big
  location   = "us-central1-a"
  node_count = "2"
  node_config { machine_type = each.value }
}
resource "google_tpu_v2_vm" "v3" {
  count            = var.enable_tpu ? 1 : 0
  accelerator_type = "v3-8"
  zone             = "us-central1-a"
}
resource "google_tpu_v2_vm" "v2" {
  accelerator_type = "v2-32"
  zone             = "us-central1-a"
}
"""


def test_hcl_literal_evaluation(tmp_path: Path) -> None:
    f = tmp_path / "main.tf"
    f.write_text(HCL)
    got = results(str(f))
    # count = cond ? 0 : length(...) > 0 ? 2 : 0: Terraform's length() is evaluated (before: unresolved, one instance)
    gpus = {"google_compute_instance.gpu[0]", "google_compute_instance.gpu[1]"}
    assert {k for k in got if k.startswith("google_compute_instance.gpu")} == gpus
    for k in gpus:
        assert "request-unresolved" not in {x["rule"] for x in got[k]["findings"]} and got[k]["request"]["count"] == 2
    # plain N1 hosts imply no GPU
    assert not any(k.startswith("google_compute_instance.host") for k in got)
    big = got['google_container_node_pool.big["h200"]']
    assert (big["request"]["accelerator"], big["request"]["count"], big["request"]["replicas_max"]) == ("h200", 8, 2)
    assert big["source"]["line"] == 22
    assert not any(k.startswith("google_tpu_v2_vm.v3") for k in got)  # count = false ? 1 : 0
    v2 = got["google_tpu_v2_vm.v2"]["request"]
    assert (v2["accelerator"], v2["hardware"], v2["count"], v2["hosts_per_replica"]) == (None, "v2-32", 16, 4)


def test_tpu_core_named_types(ctx) -> None:  # type: ignore[no-untyped-def]
    from advisor.check.infra.names import name_index

    ix = name_index(ctx.catalog)
    for name, chips, hosts in (("tpu-v2-8", 4, 1), ("v2-8", 4, 1), ("v3-8", 4, 1), ("v3-32", 16, 4), ("tpu-v3-2048", 1024, 256)):
        hw = ix.lookup(name)
        assert (hw.accelerator, hw.chips, hw.hosts) == (None, chips, hosts), name
    assert ix.lookup("n1-standard-8").chips is None and not ix.lookup("n1-standard-8").known


def test_skypilot_min_replicas_zero(tmp_path: Path) -> None:
    f = tmp_path / "svc.yaml"
    f.write_text("service:\n  replica_policy:\n    min_replicas: 0\n    max_replicas: 3\nresources:\n  accelerators: L4:1\nrun: x\n")
    q = results(str(f))["svc.yaml"]["request"]
    assert (q["replicas_min"], q["replicas_max"]) == (0, 3)


def test_real_gke_sample_with_n1_cpu_pool() -> None:
    """The real module's n1-standard-16 CPU pool is no GPU request; its GPU pool is T4 x 2 per node."""
    got = results(str(ROOT / "tests" / "data" / "infra-real" / "kubernetes-engine-samples__gke-ray-gke_standard" / "main.tf"))
    assert set(got) == {"google_container_node_pool.gpu_pool[0]"}


def test_hcl_for_each_over_a_for_expression_is_unresolved_not_an_error(tmp_path: Path) -> None:
    """GoogleCloudPlatform/accelerated-platforms federated-learning container_node_pool/main.tf (9320f3b):
    for_each over a local built by a for expression, each.value.* in the block. each.* was evaluated
    as an expression that came straight back to the reference, and the file was an input error
    ('too deeply nested')."""
    f = tmp_path / "main.tf"
    f.write_text(
        """locals {
  tenants = { for name in var.names : name => { pool = "pool-${name}" } }
}
variable "names" { default = ["a", "b"] }
resource "google_container_node_pool" "tenant" {
  for_each = local.tenants
  name     = each.value.pool
  count_of = count.index
  node_config {
    machine_type = "a3-highgpu-8g"
  }
  autoscaling { total_max_node_count = 4 }
}
"""
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    assert r.code == 0, r.out + r.err
    # the for expression evaluates (the template string in its value is that element's own unknown, since 5aca569): one
    # pool per tenant, as Terraform creates them
    got = {x["source"]["address"]: x["request"] for x in json.loads(r.out)["results"]}
    assert sorted(got) == ['google_container_node_pool.tenant["a"]', 'google_container_node_pool.tenant["b"]'], got
    assert all(req["accelerator"] == "h100" for req in got.values())


def test_hcl_attribute_written_as_a_for_expression_is_evaluated_not_an_error(tmp_path: Path) -> None:
    """terraform-google-kubernetes-engine's node pool, vendored in GoogleCloudPlatform/kubernetes-engine-samples
    (databases/gke-stateful-postgres/terraform/modules/gke/cluster.tf): guest_accelerator = [for ... : {...}].
    The expression has braces of its own; it was passed on as text and the file was an input error
    ('expected a list of blocks, got str'), then reported as not read. Now the for expression, lookup() and the
    conditional are evaluated: 2 L4 per node, as Terraform reads it."""
    f = tmp_path / "main.tf"
    f.write_text(
        """variable "pools" { default = { gpu = { accelerator_type = "nvidia-l4", accelerator_count = 2 } } }
resource "google_container_node_pool" "pools" {
  for_each = var.pools
  name     = each.key
  node_config {
    machine_type = "g2-standard-24"
    guest_accelerator = [
      for g in lookup(each.value, "accelerator_count", 0) > 0 ? [{
        type  = lookup(each.value, "accelerator_type", "")
        count = lookup(each.value, "accelerator_count", 0)
      }] : [] : {
        type  = g["type"]
        count = g["count"]
      }
    ]
  }
}
"""
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    assert r.code == 0, r.out + r.err
    [res] = json.loads(r.out)["results"]
    assert (res["request"]["accelerator"], res["request"]["count"]) == ("l4", 2)
    assert not [x for x in res["findings"] if x["rule"] == "request-unresolved"]
    # a for expression over what the source does not settle is still reported, not guessed
    f.write_text(f.read_text().replace("for_each = var.pools", "for_each = data.external.pools.result"))
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]
    assert "request-unresolved" in {x["rule"] for x in res["findings"]}


@pytest.mark.parametrize(
    "kind,field,value",
    [
        ("Deployment", "replicas", "${N}"),
        ("Deployment", "replicas", "$N"),  # envsubst's bare form
        ("MPIJob", "replicas", "$NUM_WORKERS"),
        ("LeaderWorkerSet", "size", "${GROUP}"),
    ],
)
def test_a_placeholder_count_is_unresolved_never_one(tmp_path: Path, kind: str, field: str, value: str) -> None:
    """`replicas: ${N}` on 8-GPU pods was read as one replica and passed without a finding (a proposal of any
    size slipped past the policy); envsubst's `$NUM_WORKERS` (GoogleCloudPlatform/kubernetes-engine-samples
    hpc/mpi/hpl-demo.tpl.yaml) was an input error even on CPU-only pods."""
    pod = ("spec:\n  nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}\n  containers:\n"
           "  - {name: w, image: i, resources: {limits: {nvidia.com/gpu: 8}}}\n")
    def nest(text: str, n: int) -> str:
        return "".join(" " * n + line + "\n" for line in text.splitlines())
    body = {
        "Deployment": ("apps/v1", f"spec:\n  {field}: {value}\n  template:\n" + nest(pod, 4)),
        "MPIJob": ("kubeflow.org/v2beta1",
                   f"spec:\n  mpiReplicaSpecs:\n    Worker:\n      {field}: {value}\n      template:\n" + nest(pod, 8)),
        "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",
                            f"spec:\n  replicas: 1\n  leaderWorkerTemplate:\n    {field}: {value}\n    workerTemplate:\n" + nest(pod, 6)),
    }[kind]
    f = tmp_path / "w.yaml"
    f.write_text(f"apiVersion: {body[0]}\nkind: {kind}\nmetadata: {{name: x}}\n{body[1]}")
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    assert r.code == 0, r.out + r.err
    [res] = json.loads(r.out)["results"]
    unresolved = [x["message"] for x in res["findings"] if x["rule"] == "request-unresolved"]
    assert any(value in m and field in m for m in unresolved), unresolved
    cpu = tmp_path / "cpu.yaml"
    text = f.read_text().replace("nvidia.com/gpu: 8", "cpu: 8")
    cpu.write_text(text.replace("cloud.google.com/gke-accelerator: nvidia-h100-80gb", "a: b"))
    r = run_cli("check", "--no-config", "--format", "json", str(cpu))
    assert r.code == 0 and not json.loads(r.out)["invalid"], r.out + r.err


def test_a_release_is_rendered_by_helm_with_its_values_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With helm on PATH, a helmfile release of a chart in the repository is rendered by
    helm template CHART -f FILE -f INLINE: the values files and the inline values, in order."""
    chart = tmp_path / "charts" / "serve"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: serve\nversion: 0.1.0\n")
    (tmp_path / "prod.yaml").write_text("gpus: 8\n")
    (tmp_path / "helmfile.yaml").write_text(
        "releases:\n  - name: prod\n    chart: ./charts/serve\n    values: [prod.yaml, {replicas: 2}]\n"
    )
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    helm = bin_ / "helm"
    pods = {n: POD.format(name="from-helm", init=0, sidecar=0, main=n) for n in (1, 3)}
    # one pod of 1 chip for the chart alone; 3 chips when given the release's name (helm template NAME CHART) and two
    # values files (prod.yaml, then the inline values)
    helm.write_text(
        "#!/bin/sh\n[ \"$1\" = template ] || exit 1\n"
        f"if [ \"$2\" = prod ] && [ \"$4\" = -f ] && [ \"$5\" = prod.yaml ] && [ \"$6\" = -f ] && grep -q replicas \"$7\"; then\n"
        f"cat <<'EOF'\n{pods[3]}EOF\nelse\ncat <<'EOF'\n{pods[1]}EOF\nfi\n"
    )
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    got = results(".")
    assert {a: r["request"]["count"] for a, r in got.items()} == {"Pod/default/from-helm": 1, "Pod/default/from-helm [helmfile prod]": 3}
    assert got["Pod/default/from-helm [helmfile prod]"]["source"]["path"] == "helmfile.yaml"


DYNAMO = """apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: llama-disagg
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0}
    VllmDecodeWorker:
      componentType: worker
      replicas: 2
      resources:
        limits:
          gpu: "4"
      multinode:
        nodeCount: 2
      extraPodSpec:
        nodeSelector:
          cloud.google.com/gke-accelerator: nvidia-gb200
        mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0}
"""

KUBEAI = """apiVersion: kubeai.org/v1
kind: Model
metadata:
  name: llama-3.1-70b-instruct-fp8-h100
spec:
  features: [TextGeneration]
  url: hf://neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8
  engine: VLLM
  resourceProfile: nvidia-gpu-h100:2
  minReplicas: 1
  maxReplicas: 3
"""


KAITO = """apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata:
  name: workspace-deepseek-r1
resource:
  count: 2
  instanceType: "Standard_ND96isr_H100_v5"
  labelSelector:
    matchLabels:
      apps: deepseek-r1
inference:
  preset:
    name: deepseek-r1-0528
"""


def test_a_kaito_workspace_is_its_nodes_of_the_instance_type(tmp_path: Path) -> None:
    """kaito-project/kaito examples (0 of 45 Workspaces were proposals): resource.count nodes of
    resource.instanceType, each with that machine's GPUs; an instance type the catalog lacks is unknown hardware."""
    (tmp_path / "ws.yaml").write_text(KAITO)
    (tmp_path / "v100.yaml").write_text(KAITO.replace("Standard_ND96isr_H100_v5", "Standard_NC6s_v3").replace("r1\n", "r1-v100\n", 1))
    got = results(str(tmp_path))
    h100 = got["Workspace/default/workspace-deepseek-r1"]["request"]
    assert (h100["accelerator"], h100["count"], h100["total_chips"]) == ("h100", 16, 16)
    v100 = got["Workspace/default/workspace-deepseek-r1-v100"]
    assert v100["request"]["accelerator"] is None and "request-unknown-accelerator" in {f["rule"] for f in v100["findings"]}


def test_dynamo_graph_deployment_and_kubeai_model_are_read(tmp_path: Path) -> None:
    """Two serving CRDs of real platform repositories the gate passed over: NVIDIA Dynamo's
    DynamoGraphDeployment (AI-Hypercomputer/gpu-recipes a4x inference templates: `resources.limits.gpu`
    per node x `multinode.nodeCount`, `replicas`) and KubeAI's Model (substratusai/kubeai manifests/models:
    `resourceProfile: nvidia-gpu-h100:2`, minReplicas..maxReplicas). Before, neither gave a request."""
    (tmp_path / "dynamo.yaml").write_text(DYNAMO)
    (tmp_path / "kubeai.yaml").write_text(KUBEAI)
    (tmp_path / "cpu.yaml").write_text(KUBEAI.replace("nvidia-gpu-h100:2", "cpu:4").replace("h100", "cpu"))
    got = {a: x["request"] for a, x in results(str(tmp_path)).items()}
    assert set(got) == {"DynamoGraphDeployment/default/llama-disagg/VllmDecodeWorker", "Model/default/llama-3.1-70b-instruct-fp8-h100"}
    dyn = got["DynamoGraphDeployment/default/llama-disagg/VllmDecodeWorker"]
    assert (dyn["accelerator"], dyn["count"], dyn["replicas_min"], dyn["total_chips"]) == ("gb200", 8, 2, 16)
    kai = got["Model/default/llama-3.1-70b-instruct-fp8-h100"]
    assert (kai["accelerator"], kai["count"], kai["replicas_min"], kai["replicas_max"]) == ("h100", 2, 1, 3)


def test_a_lone_container_asking_for_chips_in_an_unread_kind_is_reported(tmp_path: Path) -> None:
    """sgl-project/ome config/runtimes: a ClusterServingRuntime's engineConfig.runner is a container with
    nvidia.com/gpu: 4 but no pod spec (no containers list) around it; the gate called 287 such runtimes
    'without accelerator requests'. Each is now counted once, its replicas unknown."""
    (tmp_path / "rt.yaml").write_text(
        "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: srt-command-r}\nspec:\n  engineConfig:\n"
        "    nodeSelector: {node.kubernetes.io/instance-type: BM.GPU.H100.8}\n"
        "    runner:\n      name: ome-container\n      image: lmsysorg/sglang:v0.5.5\n"
        "      resources:\n        limits: {cpu: 20, nvidia.com/gpu: 4}\n"
        "  cpuOnly:\n    resources: {limits: {cpu: 4}}\n"
    )
    [res] = results(str(tmp_path)).values()
    assert res["source"]["address"] == "ClusterServingRuntime/default/srt-command-r/engineConfig.runner"
    assert res["request"]["count"] == 4 and "request-unresolved" in {f["rule"] for f in res["findings"]}


GKE_MODULE = """variable "region" { default = "us-central1" }
module "gke" {
  source     = "terraform-google-modules/kubernetes-engine/google//modules/private-cluster"
  version    = "~> 33.0"
  project_id = "p"
  name       = "ml"
  region     = var.region
  zones      = ["us-central1-a", "us-central1-c"]
  node_pools = [
    { name = "cpu", machine_type = "e2-standard-8", min_count = 1, max_count = 3 },
    {
      name              = "l4"
      machine_type      = "g2-standard-24"
      accelerator_type  = "nvidia-l4"
      accelerator_count = 2
      min_count         = 0
      max_count         = 4
      spot              = true
    },
    { name = "tpu", machine_type = "ct5lp-hightpu-4t", autoscaling = false, node_count = 4, tpu_topology = "4x4",
      node_locations = "us-central1-a" },
    { name = "later", machine_type = "a3-highgpu-8g", max_count = var.gpu_nodes },
  ]
}
"""


@pytest.mark.parametrize("source", ["terraform-google-modules/kubernetes-engine/google//modules/private-cluster",
                                    "terraform-google-modules/kubernetes-engine/google",
                                    "github.com/terraform-google-modules/terraform-google-kubernetes-engine//modules/beta-private-cluster?ref=v33.0.0"])
def test_the_gke_registry_module_node_pools_are_read(tmp_path: Path, source: str) -> None:
    """terraform-google-modules/kubernetes-engine, the module GKE clusters are commonly declared with: its
    node_pools input is a list of maps, each a google_container_node_pool the module creates. Before, a call
    of it was 'Terraform HCL without accelerator resources'. Module defaults apply (autoscaling on, counts per
    zone); a value that is not a literal is request-unresolved."""
    default = "terraform-google-modules/kubernetes-engine/google//modules/private-cluster"
    (tmp_path / "main.tf").write_text(GKE_MODULE.replace(default, source))
    got = results(str(tmp_path))
    l4 = got['module.gke.google_container_node_pool.pools["l4"]']
    assert l4["source"]["line"] == 2
    req = l4["request"]
    assert (req["accelerator"], req["count"], req["replicas_max"], req["pricing"]) == ("l4", 2, 8, "spot")
    tpu = got['module.gke.google_container_node_pool.pools["tpu"]']["request"]
    assert (tpu["accelerator"], tpu["count"], tpu["replicas_max"]) == ("tpu-v5e", 16, 1)
    later = got['module.gke.google_container_node_pool.pools["later"]']
    assert later["request"]["accelerator"] == "h100"
    assert any("max_count" in f["message"] for f in later["findings"] if f["rule"] == "request-unresolved")
    assert not any("cpu" in a for a in got)


EKS_MODULE = """provider "aws" { region = "us-east-1" }
module "eks" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 20.0"
  cluster_name = "ml"
  eks_managed_node_group_defaults = { capacity_type = "SPOT" }
  eks_managed_node_groups = {
    system = { instance_types = ["m5.large"], min_size = 1, max_size = 3, desired_size = 2 }
    gpu = {
      ami_type       = "AL2023_x86_64_NVIDIA"
      instance_types = ["p5.48xlarge"]
      min_size       = 0
      max_size       = 4
      desired_size   = 2
      capacity_type  = "ON_DEMAND"
    }
    inf = { instance_types = ["g6.12xlarge"], max_size = 2 }
  }
}
"""


def test_the_eks_registry_module_node_groups_are_read(tmp_path: Path) -> None:
    """terraform-aws-modules/eks: eks_managed_node_groups is a map of managed node groups over
    eks_managed_node_group_defaults, each the aws_eks_node_group the module creates; the registry source
    (no '//submodule') is matched too. Before, 'Terraform HCL without accelerator resources'."""
    (tmp_path / "main.tf").write_text(EKS_MODULE)
    got = {a: x["request"] for a, x in results(str(tmp_path)).items()}
    gpu = got['module.eks.module.eks_managed_node_group["gpu"].aws_eks_node_group.this[0]']
    assert (gpu["accelerator"], gpu["count"], gpu["replicas_min"], gpu["replicas_max"], gpu["pricing"]) == ("h100", 8, 0, 4, "on-demand")
    inf = got['module.eks.module.eks_managed_node_group["inf"].aws_eks_node_group.this[0]']
    assert (inf["accelerator"], inf["count"], inf["replicas_min"], inf["replicas_max"], inf["pricing"]) == ("l4", 4, 1, 2, "spot")
    assert len(got) == 2  # the m5.large system group asks for no accelerator


BLUEPRINT = """blueprint_name: gke-a3-ultra

vars:
  project_id: my-project
  deployment_name: a3u
  region: europe-west1
  zone: europe-west1-b
  a3_nodes: 4
  reservation: a3u-res

deployment_groups:
- group: primary
  modules:
  - id: net
    source: modules/network/vpc
  - id: a3-ultragpu-pool
    source: modules/compute/gke-node-pool
    use: [cluster]
    settings:
      machine_type: a3-ultragpu-8g
      zones: [$(vars.zone)]
      static_node_count: $(vars.a3_nodes)
      reservation_affinity:
        consume_reservation_type: SPECIFIC_RESERVATION
        specific_reservations:
        - name: $(vars.reservation)
  - id: system-pool
    source: modules/compute/gke-node-pool
    settings:
      machine_type: e2-standard-16
  - id: tpu_pool
    source: modules/compute/gke-node-pool
    settings:
      machine_type: ct6e-standard-4t
      num_slices: 2
      spot: true
      placement_policy: {type: COMPACT, tpu_topology: 4x4}
  - id: l4_pool
    source: modules/compute/gke-node-pool
    settings:
      machine_type: g2-standard-24
      autoscaling_total_max_nodes: $(network.max_nodes)
- group: slurm
  modules:
  - id: a3_nodeset
    source: community/modules/compute/schedmd-slurm-gcp-v6-nodeset
    settings:
      machine_type: a3-megagpu-8g
      node_count_static: 2
      enable_spot_vm: true
"""


def test_a_cluster_toolkit_blueprint_is_read(tmp_path: Path) -> None:
    """GoogleCloudPlatform/cluster-toolkit blueprints (gcluster deploy), the way A3 / A4 / TPU clusters are
    commonly deployed on GCP: each gke-node-pool / Slurm nodeset / vm-instance module with accelerators is a
    request, $(vars.X) resolved, the modules' own defaults for what is left out, a module output
    request-unresolved. Before, the file was 'YAML that is not a workload profile ...'."""
    (tmp_path / "blueprint.yaml").write_text(BLUEPRINT)
    got = results(str(tmp_path))
    assert set(got) == {"gke-a3-ultra/primary/a3-ultragpu-pool", "gke-a3-ultra/primary/tpu_pool", "gke-a3-ultra/primary/l4_pool",
                        "gke-a3-ultra/slurm/a3_nodeset"}
    a3 = got["gke-a3-ultra/primary/a3-ultragpu-pool"]
    assert a3["source"]["line"] == 16
    req = a3["request"]
    assert (req["accelerator"], req["count"], req["replicas_max"], req["pricing"]) == ("h200", 8, 4, "reservation")
    assert req["region"] == "europe-west1"
    tpu = got["gke-a3-ultra/primary/tpu_pool"]["request"]
    assert (tpu["accelerator"], tpu["count"], tpu["replicas_max"], tpu["pricing"]) == ("tpu-v6e", 16, 2, "spot")
    l4 = got["gke-a3-ultra/primary/l4_pool"]
    assert l4["request"]["replicas_max"] is None
    assert any("$(network.max_nodes)" in f["message"] for f in l4["findings"] if f["rule"] == "request-unresolved")
    slurm = got["gke-a3-ultra/slurm/a3_nodeset"]["request"]
    assert (slurm["accelerator"], slurm["replicas_min"], slurm["replicas_max"], slurm["pricing"]) == ("h100", 2, 12, "spot")


def test_a_blueprint_takes_the_vars_of_its_deployment_file(tmp_path: Path) -> None:
    """cluster-toolkit's ML examples keep the node count in NAME-deployment.yaml (gcluster deploy -d FILE
    NAME.yaml): its vars are put over the blueprint's; another deployment file in the directory is not this
    blueprint's, and a var that is no number there is unresolved, not an input error."""
    (tmp_path / "gke-a3u.yaml").write_text(
        "blueprint_name: a3u\nvars:\n  deployment_name: a3u\n  a3_nodes: 1\ndeployment_groups:\n- group: primary\n  modules:\n"
        "  - id: pool\n    source: modules/compute/gke-node-pool\n    settings:\n      machine_type: a3-ultragpu-8g\n"
        "      static_node_count: $(vars.a3_nodes)\n"
    )
    (tmp_path / "gke-a3u-deployment.yaml").write_text("terraform_backend_defaults: {type: gcs}\nvars:\n  a3_nodes: 6\n")
    (tmp_path / "other-deployment.yaml").write_text("vars:\n  a3_nodes: 99\n")
    [res] = results(str(tmp_path)).values()
    assert res["source"]["address"] == "a3u/primary/pool [-d gke-a3u-deployment.yaml]"
    assert (res["request"]["accelerator"], res["request"]["replicas_max"], res["request"]["total_chips"]) == ("h200", 6, 48)
    (tmp_path / "gke-a3u-deployment.yaml").write_text("vars:\n  a3_nodes: NODE_COUNT\n")
    [res] = results(str(tmp_path)).values()
    assert res["request"]["replicas_max"] is None
    assert any("NODE_COUNT" in f["message"] for f in res["findings"] if f["rule"] == "request-unresolved")


def test_blueprint_vars_in_a_cycle_are_unresolved_not_a_crash(tmp_path: Path) -> None:
    """Hostile input: vars that name each other ($(vars.n) -> $(vars.m) -> $(vars.n)) were followed until the
    interpreter's recursion limit ('input too large or too deeply nested'); they stop after 16 steps, unresolved."""
    (tmp_path / "x.yaml").write_text(
        "blueprint_name: x\nvars:\n  n: $(vars.m)\n  m: $(vars.n)\ndeployment_groups:\n- group: g\n  modules:\n  - id: p\n"
        "    source: modules/compute/gke-node-pool\n    settings:\n      machine_type: a3-highgpu-8g\n      static_node_count: $(vars.n)\n"
    )
    [res] = results(str(tmp_path)).values()
    assert res["request"]["replicas_max"] is None and "request-unresolved" in {f["rule"] for f in res["findings"]}


def test_a_documents_angle_bracket_placeholder_is_unresolved_not_an_input_error(tmp_path: Path) -> None:
    """GoogleCloudPlatform/cluster-toolkit community/cos-nvidia-bug-report/bug-report-pod.yaml
    (nvidia.com/gpu: <number_of_gpus>) and examples/gke-tpu-v6e/.../sample_job.yaml (gke-tpu-topology:
    <tpu_topology>): a document's placeholder was an input error that stopped the run; it is
    request-unresolved, as ${N} is."""
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector:\n    cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice\n"
        "    cloud.google.com/gke-tpu-topology: <tpu_topology>\n  containers:\n  - name: c\n    image: i\n"
        "    resources: {limits: {google.com/tpu: <CHIPS_PER_NODE>}}\n"
    )
    [res] = results(str(tmp_path)).values()
    messages = [f["message"] for f in res["findings"] if f["rule"] == "request-unresolved"]
    assert any("<CHIPS_PER_NODE>" in m for m in messages) and any("<tpu_topology>" in m for m in messages), messages


@pytest.mark.parametrize("units", ["²", "9" * 5000, "two"])
def test_a_kubeai_profile_count_that_is_no_number_is_unresolved(tmp_path: Path, units: str) -> None:
    """Hostile input (found in review): 'nvidia-gpu-l4:²' passed str.isdigit() and failed int(), a
    5,000-digit count past int()'s digit limit: an internal error. ASCII digits, six at most, else unresolved."""
    head = "apiVersion: kubeai.org/v1\nkind: Model\nmetadata: {name: m}\nspec:\n"
    (tmp_path / "m.yaml").write_text(head + f'  resourceProfile: "nvidia-gpu-l4:{units}"\n')
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path))
    assert r.code == 0 and "Traceback" not in r.err, r.out + r.err
    [res] = json.loads(r.out)["results"]
    assert res["request"]["count"] is None and "request-unresolved" in {f["rule"] for f in res["findings"]}


def test_device_plugin_quantities_are_not_chips_and_an_empty_quantity_is_not_zero(tmp_path: Path) -> None:
    """Before: HAMi's nvidia.com/gpumem: 1024 and gpucores: 30 were added to nvidia.com/gpu: 2 (1,056
    GPUs), an empty `nvidia.com/gpu:` (a values key rendered as nothing) asked for 0 chips and passed,
    and habana.ai/gaudi was no accelerator request at all."""
    f = tmp_path / "pods.yaml"
    f.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: hami, namespace: ml}\nspec:\n  replicas: 1\n  template:\n    spec:\n"
        "      containers: [{name: c, image: x, resources: {limits: "
        "{nvidia.com/gpu: '2', nvidia.com/gpucores: '30', nvidia.com/gpumem: '1024'}}}]\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: empty, namespace: ml}\nspec:\n  replicas: 2\n  template:\n    spec:\n"
        "      containers:\n      - name: c\n        image: x\n        resources:\n          limits:\n            nvidia.com/gpu:\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: gaudi, namespace: ml}\nspec:\n"
        "  containers: [{name: c, image: x, resources: {limits: {habana.ai/gaudi: 8}}}]\n"
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    out = {x["source"]["address"]: x for x in json.loads(r.out)["results"]}
    assert out["Deployment/ml/hami"]["request"]["count"] == 2
    assert out["Deployment/ml/empty"]["request"]["count"] is None
    assert "request-unresolved" in {g["rule"] for g in out["Deployment/ml/empty"]["findings"]}
    assert out["Pod/ml/gaudi"]["request"]["count"] == 8


def test_a_karpenter_pool_of_cpu_families_the_catalog_prices_is_no_accelerator_request(tmp_path: Path) -> None:
    """Before: a Graviton pool (c6g, c7g, c8g) read as c7g-2xlarge, request-unresolved, and an m7i / c7i pool as unknown
    accelerators: the catalog prices those CPU machines for CPU inference, which made them 'accelerators'."""
    f = tmp_path / "pools.yaml"
    pool = (
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n      requirements:\n"
        "      - {{key: {key}, operator: In, values: {values}}}\n  limits: {{cpu: 1000}}\n"
    )
    f.write_text("---\n".join([
        pool.format(name="graviton", key="karpenter.k8s.aws/instance-family", values="[c6g, c7g, c8g]"),
        pool.format(name="general", key="karpenter.k8s.aws/instance-family", values="[m7i, c7i, r7i]"),
        pool.format(name="sized", key="node.kubernetes.io/instance-type", values="[c7i.2xlarge, m7i.2xlarge]"),
    ]))
    r = run_cli("check", "--no-config", "--format", "json", str(f))
    out = json.loads(r.out)
    assert out["results"] == [] and out["skipped_files"], out["results"]
    f.write_text(pool.format(name="gpu", key="karpenter.k8s.aws/instance-family", values="[g6e, c7i]"))
    out = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)
    assert [x["request"]["accelerator"] for x in out["results"]] == ["l40s"]


def test_a_keda_scaled_object_scales_its_target_like_an_hpa(tmp_path: Path) -> None:
    """Before: a KEDA ScaledObject with maxReplicaCount 64 on an 8-GPU Deployment was ignored (judged at 1 replica); an
    HPA was not. Without maxReplicaCount KEDA's default, 100, is the top."""
    f = tmp_path / "serve.yaml"
    deploy = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n  replicas: 1\n  template:\n    spec:\n"
        "      nodeSelector: {{cloud.google.com/gke-accelerator: nvidia-l4}}\n"
        "      containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]\n---\n"
    )
    scaled = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: s-{name}, namespace: ml}}\nspec:\n" \
             "  scaleTargetRef: {{name: {name}}}\n{extra}  triggers: [{{type: cpu, metricMetadata: {{value: '50'}}}}]\n---\n"
    f.write_text(deploy.format(name="a") + scaled.format(name="a", extra="  minReplicaCount: 1\n  maxReplicaCount: 64\n")
                 + deploy.format(name="b") + scaled.format(name="b", extra=""))
    out = {x["source"]["address"]: x["request"] for x in json.loads(run_cli("check", "--no-config", "--format", "json",
                                                                            "--fail-on", "never", str(f)).out)["results"]}
    assert (out["Deployment/ml/a"]["replicas_min"], out["Deployment/ml/a"]["replicas_max"]) == (1, 64)
    assert out["Deployment/ml/b"]["replicas_max"] == 100


def test_an_argo_fan_out_runs_that_many_pods_at_once(tmp_path: Path) -> None:
    """Before: a step over withSequence {count: "64"} of an 8-L4 template was counted as one pod (8 chips). Now withItems and
    withSequence fan it out (up to the workflow's parallelism), and withParam's width, known at run time, is unresolved."""
    wf = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n{par}  entrypoint: main\n"
        "  templates:\n  - name: main\n    steps:\n    - - name: t\n        template: train\n        {fan}\n"
        "  - name: train\n    nodeSelector: {{cloud.google.com/gke-accelerator: nvidia-l4}}\n"
        "    container: {{image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}\n---\n"
    )
    f = tmp_path / "wf.yaml"
    f.write_text(wf.format(name="seq", par="", fan='withSequence: {count: "64"}')
                 + wf.format(name="items", par="  parallelism: 2\n", fan="withItems: [a, b, c]")
                 + wf.format(name="param", par="", fan="withParam: '{{steps.gen.outputs.result}}'"))
    out = {x["source"]["address"]: x for x in json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never",
                                                                 str(f)).out)["results"]}
    assert out["Workflow/ml/seq/train"]["request"]["total_chips"] == 512
    assert out["Workflow/ml/items/train"]["request"]["total_chips"] == 16  # 3 items, 2 at once
    assert out["Workflow/ml/param/train"]["request"]["total_chips"] is None
    assert "request-unresolved" in {g["rule"] for g in out["Workflow/ml/param/train"]["findings"]}


def test_the_eks_module_from_git_and_its_self_managed_groups_are_read(tmp_path: Path) -> None:
    """Before: only the registry source's eks_managed_node_groups were read: the same module from its GitHub repository
    (git::https://.../terraform-aws-eks.git?ref=...) and self_managed_node_groups were 'without accelerator resources'."""
    f = tmp_path / "main.tf"
    f.write_text(
        'module "eks_git" {\n  source = "git::https://github.com/terraform-aws-modules/terraform-aws-eks.git?ref=v21.0.0"\n'
        '  eks_managed_node_groups = {\n    efa = {\n      instance_types = ["p5.48xlarge"]\n      min_size = 1\n      max_size = 2\n'
        '      desired_size = 1\n    }\n  }\n}\n'
        'module "eks_self" {\n  source = "terraform-aws-modules/eks/aws"\n  self_managed_node_groups = {\n    gpu = {\n'
        '      instance_type = "g5.12xlarge"\n      min_size = 1\n      max_size = 4\n      desired_size = 2\n    }\n  }\n}\n'
    )
    out = {x["source"]["address"]: x["request"] for x in json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on",
                                                                            "never", str(f)).out)["results"]}
    git = out['module.eks_git.module.eks_managed_node_group["efa"].aws_eks_node_group.this[0]']
    assert (git["accelerator"], git["count"], git["replicas_max"]) == ("h100", 8, 2)
    own = out['module.eks_self.module.self_managed_node_group["gpu"].aws_eks_node_group.this[0]']
    assert (own["accelerator"], own["count"], own["replicas_max"]) == ("a10g", 4, 4)


@pytest.mark.parametrize("text", [
    # a sample's bare-word stand-in for a count, and an eksctl region left to fill in
    "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r, namespace: ml}\nspec:\n  headGroupSpec:\n    template:\n      spec:\n"
    "        containers: [{name: h, image: x}]\n  workerGroupSpecs:\n  - groupName: g\n    replicas: PLACEHOLDER_NUM_NODES\n"
    "    template:\n      spec:\n        nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}\n"
    "        containers: [{name: w, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n",
])
def test_a_bare_word_placeholder_is_unresolved_not_an_input_error(tmp_path: Path, text: str) -> None:
    """Before: replicas: PLACEHOLDER_NUM_NODES (aws-samples/awsome-distributed-training's verl RayCluster) stopped the gate
    with exit 2, while its $NUM_NODES twin was request-unresolved."""
    f = tmp_path / "r.yaml"
    f.write_text(text)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f))
    assert r.code == 0, r.err
    [res] = json.loads(r.out)["results"]
    assert res["request"]["accelerator"] == "h100" and "request-unresolved" in {g["rule"] for g in res["findings"]}


def test_an_eksctl_region_placeholder_is_no_region(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata: {name: c, region: PLACEHOLDER_AWS_REGION}\n"
        "managedNodeGroups:\n- name: gpu\n  instanceType: p5.48xlarge\n  desiredCapacity: 2\n"
    )
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]
    assert res["request"]["region"] != "PLACEHOLDER_AWS_REGION"


def test_an_eksctl_group_in_a_capacity_block_is_priced_as_reserved_capacity(tmp_path: Path) -> None:
    """Before: capacityReservation / instanceMarketOptions.marketType capacity-block groups were priced on demand."""
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata: {name: c, region: us-east-1}\nmanagedNodeGroups:\n"
        "- name: p5\n  instanceType: p5.48xlarge\n  desiredCapacity: 2\n  instanceMarketOptions: {marketType: capacity-block}\n"
        "  capacityReservation: {capacityReservationTarget: {capacityReservationID: cr-1}}\n"
        "- name: od\n  instanceType: p5.48xlarge\n  desiredCapacity: 2\n"
    )
    out = {x["source"]["address"].split("/")[-1]: x["request"] for x in
           json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]}
    assert out["p5"]["pricing"] == "reservation" and out["od"]["pricing"] == "on-demand"
