"""Real repository files a review read by hand (tests/data/infra-review5/*/README names each upstream file and commit),
where the gate reported a request that is none, missed one, or stopped the run:

- 01: a Kubernetes object applied by a Terraform module of the repository (kubectl_manifest in ../mod) is read at the
  module's call;
- 02: a Helm release of a device plugin / exporter whose values only select nodes by a presence label
  (aws.amazon.com/neuron.present, nvidia.com/gpu.present) asks for no chips;
- 03: a Spark Operator SparkApplication whose executors ask for GPUs (gpu: {name, quantity}) x executor.instances;
- 04: GKE queued provisioning: a v1 PodTemplate (its pod under a top-level ``template``) that a ProvisioningRequest
  names asks for 8 GPUs;
- 07: a chart that depends on a library chart not vendored (bitnami common): a Service labelled by its helper names no
  accelerator and must not stop the run, though the chart's values ask for a GPU for a sample application.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import ROOT, run_cli

CASES = ROOT / "tests" / "data" / "infra-review5"


def _run(case: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(CASES / case))
    data = json.loads(r.out)
    got = {x["source"]["address"]: x["request"] for x in data["results"]}
    return r.code, got, data


def test_a_presence_label_in_a_helm_release_is_no_request() -> None:
    code, got, _ = _run("02-helm-release-nodeselector-label-false-positive")
    assert code == 0 and got == {}, got


def test_a_pod_template_of_queued_provisioning_is_read() -> None:
    _code, got, _ = _run("04-provisioningrequest-podtemplate-missed")
    [(address, req)] = got.items()
    assert address.startswith("PodTemplate/ml-team/h100-job") and req["total_chips"] == 8, got


def test_a_template_of_an_unvendored_library_chart_does_not_stop_the_run() -> None:
    code, got, data = _run("07-helm-missing-library-include-exit2")
    assert code == 0 and not data["invalid"], data["invalid"]
    assert got == {}


def test_an_unvendored_helper_given_values_that_ask_for_chips_fails_closed() -> None:
    """07b (constructed): the same missing library's helper renders a pod spec from the values, which ask for 8 GPUs:
    advisor cannot render it, so it stays an input error (exit 2), never passed over."""
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(CASES / "07b-unvendored-helper-renders-values"))
    assert r.code == 2 and "job.yaml:8:7: error:" in r.err, (r.code, r.err)


def test_a_replacement_sourced_from_a_generated_config_map_is_applied() -> None:
    """06: a kustomize overlay's replacement copies data.APP_LABEL of the ConfigMap its configMapGenerator makes (from
    an env file) into the Deployment's labels: the build makes the ConfigMap, so the replacement applies and the 1-GPU
    Deployment is read as built. Before, 'its source is not in the build' left 125 of 126 builds of
    accelerated-platforms unresolved."""
    _code, got, data = _run("06-kustomize-configmapgenerator-replacement-source/overlay")
    [req] = [r for r in got.values() if r.get("total_chips")]
    assert req["total_chips"] == 1 and req["accelerator"] == "l4", got
    flagged = [f for x in data["results"] for f in x["findings"] if f["rule"] == "request-unresolved"]
    assert not flagged, flagged


def test_an_autoscaler_of_another_stack_judges_its_target_at_the_maximum() -> None:
    """08: AIBrix's PodAutoscaler (scaleTargetRef, minReplicas 0, maxReplicas 10) scales a 1-GPU Deployment of 4
    replicas: judged at 10, as an HPA would be. Before, at its static replicas, a silent undercount."""
    _code, got, _ = _run("08-aibrix-podautoscaler-max")
    [req] = got.values()
    assert (req["replicas_min"], req["replicas_max"], req["total_chips"]) == (0, 10, 10), req


def test_a_made_up_autoscaler_cannot_lower_the_count() -> None:
    """08b (constructed, hostile): a kind known only by its autoscaler shape with maxReplicas 1 targets a Deployment of
    40 replicas: it may raise the count judged, never lower it."""
    _code, got, _ = _run("08b-made-up-autoscaler-cannot-lower")
    [req] = got.values()
    assert req["replicas_max"] == 40 and req["total_chips"] == 40, req


def test_spark_executors_asking_for_gpus_are_read() -> None:
    """03: a Spark Operator SparkApplication's executors ask for a GPU each (gpu: {name, quantity}), four of them on
    g6.2xlarge (L4); the driver asks for none. Before: 'Kubernetes manifest without accelerator requests', passed over."""
    _code, got, _ = _run("03-sparkapplication-executor-gpu")
    assert list(got) == ["SparkApplication/spark-team-a/tpcds-benchmark-rapids/executor"], got
    req = got["SparkApplication/spark-team-a/tpcds-benchmark-rapids/executor"]
    assert (req["accelerator"], req["count"], req["total_chips"], req["cloud"], req["always_on"]) == ("l4", 1, 4, "aws", False)


def test_spark_dynamic_allocation_is_judged_at_its_maximum() -> None:
    """03b (constructed after the operator's API): a ScheduledSparkApplication's template; dynamic allocation scales the
    executors to maxExecutors (16 x 2 H100), the driver asks for 1; without maxExecutors the count has no upper bound and
    is unresolved (fails closed), never taken for executor.instances."""
    _code, got, _ = _run("03b-spark-dynamic-allocation")
    assert got["ScheduledSparkApplication/data/nightly-embeddings/driver"]["total_chips"] == 1
    ex = got["ScheduledSparkApplication/data/nightly-embeddings/executor"]
    assert (ex["accelerator"], ex["count"], ex["replicas_min"], ex["replicas_max"], ex["total_chips"]) == ("h100", 2, 2, 16, 32)
    unbounded = got["SparkApplication/data/unbounded/executor"]
    assert unbounded["total_chips"] is None and unbounded["replicas_max"] is None


def test_a_spark_gpu_the_file_does_not_fix_fails_closed(tmp_path: Path) -> None:
    """A quantity or a resource name that is a template placeholder is unresolved, never zero."""
    (tmp_path / "app.yaml").write_text(
        "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: a, namespace: ml}\n"
        "spec:\n  executor:\n    instances: 2\n    gpu: {name: nvidia.com/gpu, quantity: '${GPUS}'}\n"
        "    nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}\n"
        "  driver:\n    gpu: {name: '${GPU_RESOURCE}', quantity: 1}\n"
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path))
    data = json.loads(r.out)
    rules = {x["source"]["address"]: {f["rule"] for f in x["findings"]} for x in data["results"]}
    assert "request-unresolved" in rules["SparkApplication/ml/a/executor"], rules
    assert "request-unresolved" in rules["SparkApplication/ml/a/driver"], rules


def test_a_compute_class_of_the_run_gives_the_hardware() -> None:
    """05: a Deployment asks for nvidia.com/gpu and selects the ComputeClass gpu-h100-80gb-high-x1, whose first priority
    is an H100 (a3-highgpu-1g). Before: 'names no accelerator type', unknown and unpriced (138 requests of
    accelerated-platforms)."""
    _code, got, _ = _run("05-compute-class-hardware")
    req = got["Deployment/inference/diffusers"]
    assert (req["accelerator"], req["cloud"], req["total_chips"]) == ("h100", "gcp", 1), req


def test_a_compute_class_first_priority_is_priced_and_the_others_are_held_to_the_policy(tmp_path: Path) -> None:
    """05b (constructed after GKE's ComputeClass reference): the first priority (L4, Spot) is priced as Spot; the A100
    machine type and the node pools after it are alternatives a chip policy holds too; a class no file defines leaves
    the hardware unknown and says so; a type label of the pod's own wins over the class."""
    _code, got, data = _run("05b-compute-class-priorities")
    chat = got["Deployment/serve/chat"]
    assert (chat["accelerator"], chat["pricing"], chat["total_chips"]) == ("l4", "spot", 3), chat
    assert chat["alternatives"][0] == "a2-highgpu-1g"
    assert got["Deployment/serve/pinned"]["accelerator"] == "a100-40gb"
    assert got["Deployment/serve/elsewhere"]["accelerator"] is None
    elsewhere = next(x for x in data["results"] if x["source"]["address"] == "Deployment/serve/elsewhere")
    assert any("compute class 'defined-in-another-repo', which no file checked defines" in f["message"] for f in elsewhere["findings"])
    policy = tmp_path / "policy.yaml"
    policy.write_text("limits:\n  allowed_accelerators: [l4]\n")
    case = CASES / "05b-compute-class-priorities"
    r = run_cli("check", "--policy", str(policy), "--format", "json", "--fail-on", "never",
                str(case / "classes.yaml"), str(case / "workloads.yaml"))
    out = json.loads(r.out)
    chat_rules = {f["rule"] for x in out["results"] if x["source"]["address"] == "Deployment/serve/chat" for f in x["findings"]}
    assert "policy-accelerator-not-allowed" in chat_rules, chat_rules


def test_a_kubernetes_object_a_local_module_applies_is_read_at_the_call() -> None:
    """01: root/main.tf calls ../mod, whose kubectl_manifest applies a 1-GPU Deployment. The module's own file is judged
    at the call, not alone; before, the call read only the module's node pools and VMs, so the Deployment appeared
    nowhere (exit 0, no result: aibrix's deployment/terraform)."""
    _code, got, _ = _run("01-module-kubernetes-objects")
    [(address, req)] = got.items()
    assert address == "module.app.kubectl_manifest.model/Deployment/default/vllm" and req["total_chips"] == 1, got


def test_a_module_object_takes_the_call_inputs() -> None:
    """01b (constructed): the module's kubernetes_deployment_v1 has count from an input and GPUs and replicas from
    inputs: the prod call (4 GPUs x 2 replicas) is 8 L4, the dev call (deploy_example_model = false) applies nothing."""
    _code, got, _ = _run("01b-module-objects-by-input")
    [(address, req)] = got.items()
    assert address == "module.prod.kubernetes_deployment_v1.model[0]/Deployment/serving/model", got
    assert (req["accelerator"], req["count"], req["replicas"], req["total_chips"]) == ("l4", 4, 2, 8)


def test_a_trainium_instance_counts_its_chips(tmp_path: Path) -> None:
    """trn1.32xlarge carries 16 Trainium chips (the Neuron docs): not in the catalog, so unknown and unpriced, but the
    count is known, so a chip limit is judged on it. Before, the count was null (terraform-aws-eks-blueprints
    patterns/aws-neuron-efa: 2 nodes read as '? chips', never held to max_chips)."""
    (tmp_path / "main.tf").write_text(
        'resource "aws_eks_node_group" "neuron" {\n  cluster_name = "c"\n  node_group_name = "neuron"\n'
        '  instance_types = ["trn1.32xlarge"]\n  scaling_config {\n    desired_size = 2\n    min_size = 2\n    max_size = 2\n  }\n}\n'
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text("limits:\n  max_chips: 16\n")
    r = run_cli("check", "--policy", str(policy), "--format", "json", "--fail-on", "never", str(tmp_path / "main.tf"))
    [res] = json.loads(r.out)["results"]
    assert (res["request"]["hardware"], res["request"]["count"], res["request"]["total_chips"]) == ("trn1.32xlarge", 16, 32)
    assert "policy-max-chips" in {f["rule"] for f in res["findings"]}


def test_an_oci_shape_names_its_gpus(tmp_path: Path) -> None:
    """OME's runtimes select OCI shapes (node.kubernetes.io/instance-type: BM.GPU.H100.8): eight H100 on OCI, from
    SkyPilot's OCI catalog. Before, unknown hardware; an OCI GPU shape the index lacks is still unknown, never a CPU."""
    (tmp_path / "rt.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: llama, namespace: ml}\nspec:\n  replicas: 2\n  template:\n"
        "    spec:\n      nodeSelector: {node.kubernetes.io/instance-type: BM.GPU.H100.8}\n      containers:\n      - name: s\n"
        "        resources: {limits: {nvidia.com/gpu: 8}}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: later, namespace: ml}\nspec:\n  template:\n"
        "    spec:\n      nodeSelector: {node.kubernetes.io/instance-type: BM.GPU.X99.8}\n      containers:\n      - name: s\n"
        "        resources: {limits: {nvidia.com/gpu: 8}}\n"
    )
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path))
    got = {x["source"]["address"]: x["request"] for x in json.loads(r.out)["results"]}
    llama = got["Deployment/ml/llama"]
    assert (llama["accelerator"], llama["cloud"], llama["total_chips"]) == ("h100", "oci", 16), llama
    assert got["Deployment/ml/later"]["accelerator"] is None and got["Deployment/ml/later"]["cloud"] == "oci"


def test_a_compute_class_too_long_to_read_fails_closed(tmp_path: Path) -> None:
    """Hostile: a ComputeClass of 41 L4 priorities (Spot and not, in turn) and an H100 42nd, past the priorities read:
    the ones not read are an unknown alternative, so a policy that allows only L4 still fails (never judged on the L4
    alone)."""
    prios = "".join(f"  - gpu: {{type: nvidia-l4, count: 1}}\n    spot: {str(i % 2 == 0).lower()}\n" for i in range(40))
    prios += "  - gpu: {type: nvidia-h100-80gb, count: 8}\n"
    (tmp_path / "c.yaml").write_text(
        "apiVersion: cloud.google.com/v1\nkind: ComputeClass\nmetadata: {name: many}\nspec:\n  priorities:\n"
        "  - gpu: {type: nvidia-l4, count: 1}\n" + prios + "---\napiVersion: apps/v1\nkind: Deployment\n"
        "metadata: {name: d, namespace: ml}\nspec:\n  template:\n    spec:\n      nodeSelector: {cloud.google.com/compute-class: many}\n"
        "      containers:\n      - name: s\n        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    (tmp_path / "p.yaml").write_text("limits:\n  allowed_accelerators: [l4]\n")
    r = run_cli("check", str(tmp_path / "c.yaml"), "--policy", str(tmp_path / "p.yaml"), "--format", "json")
    [res] = json.loads(r.out)["results"]
    assert res["request"]["accelerator"] == "l4" and r.code == 1
    assert "policy-accelerator-not-allowed" in {f["rule"] for f in res["findings"]}


def test_spark_gpus_in_a_pod_template_or_the_spark_conf_are_read() -> None:
    """03c (constructed after a review with hostile files): the executors' GPUs in their pod template (32 x 8 H100),
    instances and GPUs only in sparkConf (64 x 8), and dynamic allocation switched on in sparkConf (up to 500 x 8).
    Before, the first was skipped as asking for nothing (a regression of the Spark reader: the generic pod search had
    found it), and the others were judged at one executor or not at all."""
    _code, got, _ = _run("03c-spark-template-and-conf")
    assert got["SparkApplication/data/d/executor-template"]["total_chips"] == 256, got
    conf = got["SparkApplication/data/b/executor"]
    assert (conf["count"], conf["replicas_max"], conf["total_chips"], conf["hardware"]) == (8, 64, 512, "nvidia.com/gpu"), conf
    assert got["SparkApplication/data/c/executor"]["total_chips"] == 4000


def test_a_compute_class_is_judged_on_a_priority_that_can_hold_the_pod(tmp_path: Path) -> None:
    """A pod asking for nvidia.com/gpu selects a class whose first priority is a CPU machine type: judged on the H100
    after it, not priced as 8 x n2-standard-8. Two ComputeClasses of one name that differ (a decoy file priced L4): no
    price from either, every priority held to the policy, unresolved."""
    pod = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n  replicas: 2\n  template:\n"
           "    spec:\n      nodeSelector: {cloud.google.com/compute-class: big}\n      containers:\n      - name: s\n"
           "        resources: {limits: {nvidia.com/gpu: 8}}\n")
    cls = "apiVersion: cloud.google.com/v1\nkind: ComputeClass\nmetadata: {name: big}\nspec:\n  priorities:\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "c.yaml").write_text(cls + "  - machineType: n2-standard-8\n  - gpu: {type: nvidia-h100-80gb, count: 8}\n")
    (tmp_path / "a" / "pod.yaml").write_text(pod)
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path / "a"))
    [res] = json.loads(r.out)["results"]
    assert res["request"]["accelerator"] == "h100", res["request"]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "00-decoy.yaml").write_text(cls + "  - gpu: {type: nvidia-l4, count: 8}\n    spot: true\n")
    (tmp_path / "b" / "c.yaml").write_text(cls + "  - gpu: {type: nvidia-h100-80gb, count: 8}\n")
    (tmp_path / "b" / "pod.yaml").write_text(pod)
    (tmp_path / "p.yaml").write_text("limits:\n  allowed_accelerators: [l4]\n")
    r = run_cli("check", "--policy", str(tmp_path / "p.yaml"), "--format", "json", str(tmp_path / "b"))
    [res] = json.loads(r.out)["results"]
    rules = {f["rule"] for f in res["findings"]}
    assert res["request"]["accelerator"] is None and res["request"]["alternatives"] == ["nvidia-l4", "nvidia-h100-80gb"]
    assert {"request-unresolved", "policy-accelerator-not-allowed"} <= rules and r.code == 1, rules


def test_a_module_object_of_an_unread_count_is_unresolved(tmp_path: Path) -> None:
    """A module called with count = var.copies (no default): its Kubernetes objects, like its node pools, say the count
    is not read (before, only the node pools did and the Deployment passed, counted once)."""
    (tmp_path / ".git").mkdir()  # the repository boundary: ../mod is inside it
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "main.tf").write_text(
        'resource "kubectl_manifest" "m" {\n  yaml_body = <<EOT\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: v\n'
        '  namespace: ml\nspec:\n  template:\n    spec:\n      containers:\n        - name: s\n          resources:\n'
        '            limits:\n              nvidia.com/gpu: "8"\nEOT\n}\n')
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "main.tf").write_text('variable "copies" {}\nmodule "k" {\n  source = "../mod"\n  count  = var.copies\n}\n')
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path))
    [res] = json.loads(r.out)["results"]
    assert res["source"]["address"] == "module.k[0].kubectl_manifest.m/Deployment/ml/v", res["source"]
    assert "request-unresolved" in {f["rule"] for f in res["findings"]}, res["findings"]


def test_nested_module_calls_that_multiply_past_the_budget_are_an_input_error(tmp_path: Path) -> None:
    """Hostile: three levels of local modules, each called with count = 20 and the last applying a GPU Deployment, are
    8,420 module instances; before, each level was bounded on its own and the product ran for minutes (4 levels of 30:
    past 120 s). Now the file is an input error that says so, in seconds."""
    import time

    (tmp_path / ".git").mkdir()
    leaf = ('resource "kubectl_manifest" "m" {\n  yaml_body = <<EOT\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n'
            '  name: v\nspec:\n  template:\n    spec:\n      containers:\n        - name: s\n          resources:\n'
            '            limits:\n              nvidia.com/gpu: "8"\nEOT\n}\n')
    for level, child in (("c", None), ("b", "c"), ("a", "b")):
        (tmp_path / level).mkdir()
        body = leaf if child is None else f'module "{child}" {{\n  source = "../{child}"\n  count  = 20\n}}\n'
        (tmp_path / level / "main.tf").write_text(body)
    (tmp_path / "main.tf").write_text('module "a" {\n  source = "./a"\n  count  = 20\n}\n')
    start = time.perf_counter()
    r = run_cli("check", "--no-config", str(tmp_path / "main.tf"))
    assert time.perf_counter() - start < 60
    assert r.code == 2 and "make more than 2,000 instances: check the plan JSON instead" in r.err, (r.code, r.err[-400:])
