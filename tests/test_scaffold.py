"""``advisor scaffold``: the generated files parse, validate and match the golden copies.

Golden files live in tests/golden/scaffold/<profile>/; regenerate them after an
intended change with ``ADVISOR_UPDATE_GOLDEN=1 python -m pytest tests/test_scaffold.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden" / "scaffold"
UPDATE = os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1"

# The three accelerator cases with golden files, and what each must produce.
ACCEL = {
    "llm-chatbot": {  # TPU serving: GKE + vLLM TPU
        "k8s/deployment.yaml", "k8s/service.yaml", "k8s/hpa.yaml", "k8s/podmonitoring.yaml",
        "setup.sh", "sky.yaml", "README.md",
    },
    "llama3-8b-lora": {"setup.sh", "train.py", "sky.yaml", "README.md"},  # TPU fine-tune
    "research-custom-cuda": {"setup.sh", "train.py", "sky.yaml", "README.md"},  # GPU training
}
NO_ACCEL = {
    "tabular-cpu": {"setup.sh", "train.py", "README.md"},
    "edge-vision": {"setup.sh", "README.md"},
}
# For JAX, the other training-script stack.
EXTRA = {"llm-pretrain-70b": {"setup.sh", "train.py", "sky.yaml", "README.md"}}
ALL = {**ACCEL, **NO_ACCEL, **EXTRA}

# SkyPilot task YAML fields, from the SkyPilot YAML reference:
# https://docs.skypilot.co/en/latest/reference/yaml-spec.html
# (source: docs/source/reference/yaml-spec.rst in skypilot-org/skypilot). "All fields
# in the YAML specification are optional."
SKY_TOP = {
    "name", "workdir", "num_nodes", "resources", "envs", "secrets", "file_mounts",
    "setup", "run", "config", "service",
}
SKY_RESOURCES = {
    "infra", "accelerators", "accelerator_args", "cpus", "memory", "instance_type", "use_spot",
    "disk_size", "disk_tier", "network_tier", "image_id", "ports", "labels", "autostop",
    "any_of", "ordered", "job_recovery",
}
# A candidate in resources.any_of / resources.ordered is a resources mapping that
# overrides the fields outside it.
SKY_CANDIDATE = SKY_RESOURCES - {"any_of", "ordered"}
SKY_ACCELERATOR_ARGS = {"runtime_version", "tpu_name", "tpu_vm"}
SKY_INFRA = re.compile(r"^(aws|gcp|azure|oci|k8s|kubernetes|lambda|runpod|nebius)(/[^/\s]+){0,2}$")
# `<name>:<count>` for GPUs, `tpu-<type>` for Cloud TPUs (`sky show-gpus`).
SKY_ACCELERATOR = re.compile(r"^(tpu-[a-z0-9-]+|[A-Za-z0-9][A-Za-z0-9-]*:[1-9][0-9]*)$")

# Custom resources (CRDs) the scaffold may emit; kubernetes-validate ships only the core schemas.
CRD_KINDS = {("monitoring.googleapis.com/v1", "PodMonitoring")}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every case scaffolded once through the real CLI."""
    base = tmp_path_factory.mktemp("scaffold")
    dirs = {}
    for name in ALL:
        d = base / name
        r = run_cli("scaffold", str(ROOT / "profiles" / f"{name}.yaml"), "-o", str(d))
        assert r.code == 0, r.err
        assert f"wrote {len(ALL[name])} files to {d}" in r.out
        dirs[name] = d
    return dirs


def _files(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _all(out: dict[str, Path], suffix: str) -> list[Path]:
    return sorted(p for d in out.values() for p in d.rglob(f"*{suffix}") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("name", sorted(ALL))
def test_files_written(out: dict[str, Path], name: str) -> None:
    assert _files(out[name]) == ALL[name]
    mode = (out[name] / "setup.sh").stat().st_mode
    assert mode & stat.S_IXUSR


def test_shell_scripts_parse(out: dict[str, Path]) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    scripts = _all(out, ".sh")
    assert len(scripts) == len(ALL)
    for script in scripts:
        r = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"{script}: {r.stderr}"
        text = script.read_text()
        assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text


def test_python_compiles(out: dict[str, Path]) -> None:
    scripts = _all(out, ".py")
    assert len(scripts) == 4
    for script in scripts:
        r = subprocess.run([sys.executable, "-m", "py_compile", str(script)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"{script}: {r.stderr}"


def test_yaml_parses(out: dict[str, Path]) -> None:
    files = _all(out, ".yaml")
    assert files
    for f in files:
        docs = list(yaml.safe_load_all(f.read_text()))
        assert docs and all(isinstance(d, dict) for d in docs), f


def _validate_k8s(d: Path) -> list[dict]:  # type: ignore[type-arg]
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    docs = []
    for f in sorted((d / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            key = (doc["apiVersion"], doc["kind"])
            if key in CRD_KINDS:
                assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}, f
                assert doc["spec"]["selector"]["matchLabels"] and doc["spec"]["endpoints"], f
            else:
                # strict: unknown properties are errors too
                kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
            docs.append(doc)
    return docs


def test_k8s_manifests_validate_tpu(out: dict[str, Path]) -> None:
    docs = {d["kind"]: d for d in _validate_k8s(out["llm-chatbot"])}
    assert set(docs) == {"Deployment", "Service", "HorizontalPodAutoscaler", "PodMonitoring"}
    dep = docs["Deployment"]
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "2x2",
    }
    (c,) = pod["containers"]
    assert c["resources"]["limits"] == {"google.com/tpu": "4"}  # v6e-4: one host of 4 chips
    assert c["image"].startswith("vllm/vllm-tpu")
    assert c["command"][:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    assert "--tensor-parallel-size=4" in c["command"]
    est = json.loads(run_cli("recommend", str(ROOT / "profiles" / "llm-chatbot.yaml"), "--format", "json", "--no-flip").out)["estimate"]
    assert est["replicas"] >= 2  # the estimate's replicas for 40 QPS (inference.min_replicas: 2)
    assert dep["spec"]["replicas"] == est["replicas"]
    assert docs["HorizontalPodAutoscaler"]["spec"]["maxReplicas"] == est["replicas"]
    assert docs["Service"]["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]


def test_k8s_manifests_validate_gpu(tmp_path: Path) -> None:
    r = run_cli("scaffold", str(ROOT / "profiles" / "moe-serving.yaml"), "-o", str(tmp_path), "--path", "gke-vllm-gpu")
    assert r.code == 0, r.err
    est = _estimate("moe-serving")
    docs = {d["kind"]: d for d in _validate_k8s(tmp_path)}
    # an autoscaler (and its metrics) exactly when the service needs more than one replica
    assert {"Deployment", "Service"} <= set(docs) and ("HorizontalPodAutoscaler" in docs) == (est["replicas"] > 1)
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    from advisor.catalog import load_catalog

    acc = load_catalog().accelerators[est["accelerator"]]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": acc.deploy.gke_accelerator}
    (c,) = pod["containers"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": str(est["count"])}
    assert f"--tensor-parallel-size={est['count']}" in c["command"] and c["image"].startswith("vllm/vllm-openai")
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    setup = (tmp_path / "setup.sh").read_text()
    machine = acc.shapes.machine_types[est["count"]]  # the GKE node pool's machine type for the priced count
    assert f"--machine-type={machine} --accelerator=type={acc.deploy.gke_accelerator},count={est['count']}" in setup


def test_path_flag_switches_family(tmp_path: Path) -> None:
    # the bundled budget leaves a feasible TPU for --path to switch to
    prof = tmp_path / "moe.yaml"
    prof.write_text((ROOT / "profiles" / "moe-serving.yaml").read_text())
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "out"), "--path", "gke-vllm-tpu")
    tmp_path = tmp_path / "out"
    assert r.code == 0, r.err
    docs = {d["kind"]: d for d in _validate_k8s(tmp_path)}
    assert "cloud.google.com/gke-tpu-topology" in docs["Deployment"]["spec"]["template"]["spec"]["nodeSelector"]
    readme = (tmp_path / "README.md").read_text()
    assert "chosen with `--path`" in readme and "the verdict is GPU" in readme


def test_sky_yaml_schema(out: dict[str, Path]) -> None:
    files = _all(out, "sky.yaml")
    assert len(files) == len(ACCEL) + len(EXTRA)
    for f in files:
        task = yaml.safe_load(f.read_text())
        assert set(task) <= SKY_TOP, (f, set(task) - SKY_TOP)
        assert {"name", "resources", "setup", "run"} <= set(task)
        assert isinstance(task.get("num_nodes", 1), int) and task.get("num_nodes", 1) >= 1
        res = task["resources"]
        assert set(res) <= SKY_RESOURCES, (f, set(res) - SKY_RESOURCES)
        assert res["ordered"], f
        for cand in res["ordered"]:
            assert set(cand) <= SKY_CANDIDATE, (f, set(cand) - SKY_CANDIDATE)
            assert SKY_ACCELERATOR.match(cand["accelerators"]), cand
            assert "infra" not in cand or SKY_INFRA.match(cand["infra"]), cand
            assert set(cand.get("accelerator_args", {})) <= SKY_ACCELERATOR_ARGS
        assert all(isinstance(v, str | None) for v in task.get("envs", {}).values())
        assert isinstance(task["setup"], str) and isinstance(task["run"], str)


def _sky(out: dict[str, Path], name: str) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((out[name] / "sky.yaml").read_text())  # type: ignore[no-any-return]


def _estimate(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(run_cli("recommend", str(ROOT / "profiles" / f"{name}.yaml"), "--format", "json", "--no-flip").out)["estimate"]


def test_sky_yaml_chosen_first_then_same_family(out: dict[str, Path]) -> None:
    chat = _sky(out, "llm-chatbot")
    accs = [c["accelerators"] for c in chat["resources"]["ordered"]]
    assert accs[0] == "tpu-v6e-4"  # the chosen configuration first, then the same family's next-best
    assert all(a.startswith("tpu-") for a in accs)
    assert chat["resources"]["ordered"][0]["accelerator_args"] == {"runtime_version": "v2-alpha-tpuv6e"}
    assert chat["resources"]["ports"] == 8000 and "vllm serve" in chat["run"]
    lora = _sky(out, "llama3-8b-lora")
    assert lora["resources"]["ordered"][0]["accelerators"] == "tpu-v6e-1"
    assert "PJRT_DEVICE=TPU python3 train.py" in lora["run"]
    gpu = _sky(out, "research-custom-cuda")
    est = _estimate("research-custom-cuda")
    assert gpu["num_nodes"] == est["count"] // 8  # one node per VM of 8
    # the chosen configuration first, on the cloud and in the region it was priced in; then the same family
    first = gpu["resources"]["ordered"][0]
    assert first == {"accelerators": f"{est['accelerator'].upper()}:8", "infra": f"{est['price']['cloud']}/{est['region']}"}
    assert all(c["accelerators"].endswith(":8") for c in gpu["resources"]["ordered"])
    assert len({c["accelerators"] for c in gpu["resources"]["ordered"]}) > 1  # fallbacks
    assert "torchrun" in gpu["run"] and "$SKYPILOT_NODE_RANK" in gpu["run"]


def test_setup_sh_commands(out: dict[str, Path]) -> None:
    lora = (out["llama3-8b-lora"] / "setup.sh").read_text()
    assert "--accelerator-type=v6e-1 --runtime-version=v2-alpha-tpuv6e" in lora
    assert "gcloud compute tpus queued-resources create ${NAME}" in lora
    assert "wait_active gcloud compute tpus queued-resources describe" in lora
    assert "tensorboard --logdir ./runs" in lora
    for var in ("PROJECT_ID", "REGION", "ZONE", "NAME"):
        assert re.search(rf"^{var}=\${{{var}:-", lora, re.M), var
    # the setup targets the cloud the chosen configuration is priced on, not both
    gpu = (out["research-custom-cuda"] / "setup.sh").read_text()
    est = _estimate("research-custom-cuda")
    create = {"gcp": "gcloud compute instances create", "aws": "aws ec2 run-instances"}
    assert create[est["price"]["cloud"]] in gpu and all(c not in gpu for k, c in create.items() if k != est["price"]["cloud"])
    assert est["shape"].split(" x ")[-1] in gpu  # the priced machine or instance type
    assert "torchrun --nnodes=16 --rdzv-backend=c10d" in gpu  # 16 VMs, each started (test_scaffold_remote.py)
    chat = (out["llm-chatbot"] / "setup.sh").read_text()
    assert "gcloud container clusters create ${CLUSTER}" in chat
    assert "--machine-type=ct6e-standard-4t --tpu-topology=2x2" in chat
    reps = json.loads(run_cli("recommend", str(ROOT / "profiles" / "llm-chatbot.yaml"), "--format", "json", "--no-flip").out)["estimate"][
        "replicas"
    ]
    # room for every replica, and never fewer than the profile's inference.min_replicas (2: availability)
    assert f"--enable-autoscaling --min-nodes=2 --max-nodes={reps}" in chat and reps >= 2
    assert "kubectl apply -f k8s/" in chat and "<<'EOF'" not in chat
    assert "set -- create connect deploy\n" in chat  # the default run stops before interactive steps


def test_train_py_stacks(out: dict[str, Path]) -> None:
    xla = (out["llama3-8b-lora"] / "train.py").read_text()
    assert "import torch_xla" in xla and "xm.optimizer_step(optimizer)" in xla
    assert "MODEL_ID = 'meta-llama/Meta-Llama-3-8B'" in xla and "METHOD = 'lora'" in xla
    assert "SummaryWriter" in xla
    cuda = (out["research-custom-cuda"] / "train.py").read_text()
    assert 'dist.init_process_group("nccl"' in cuda and "DistributedDataParallel" in cuda
    assert "MODEL_ID = None" in cuda and "SummaryWriter" in cuda
    jax_ = (out["llm-pretrain-70b"] / "train.py").read_text()
    assert "import jax" in jax_ and "NamedSharding" in jax_ and "torch" not in jax_
    cpu = (out["tabular-cpu"] / "train.py").read_text()
    assert "import xgboost" in cpu


@pytest.mark.parametrize("name", sorted(NO_ACCEL))
def test_cpu_and_edge_have_nothing_to_provision(out: dict[str, Path], name: str) -> None:
    readme = (out[name] / "README.md").read_text()
    assert "## Nothing to provision" in readme
    assert not (out[name] / "sky.yaml").exists() and not (out[name] / "k8s").exists()
    setup = (out[name] / "setup.sh").read_text()
    auto = re.search(r"^    set -- (.*)$", setup, re.M)
    assert auto is not None
    for key in auto.group(1).split():  # nothing the default run does touches the cloud
        body = re.search(rf"^step_{key}\(\) {{\n(.*?)^}}", setup, re.M | re.S)
        assert body is not None and "gcloud " not in body.group(1), key


@pytest.mark.parametrize("name", sorted(ACCEL))
def test_golden(out: dict[str, Path], name: str) -> None:
    golden = GOLDEN / name
    got = {rel: (out[name] / rel).read_text() for rel in _files(out[name])}
    if UPDATE:
        shutil.rmtree(golden, ignore_errors=True)
        for rel, text in got.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_text(text)
    assert golden.is_dir(), f"no golden files for {name}: run with ADVISOR_UPDATE_GOLDEN=1"
    assert _files(golden) == set(got)
    for rel, text in got.items():
        assert (golden / rel).read_text() == text, f"{name}/{rel} differs from the golden copy (ADVISOR_UPDATE_GOLDEN=1 regenerates)"


def test_deterministic(ctx) -> None:  # type: ignore[no-untyped-def]
    from advisor import __version__
    from advisor.api import recommend_files
    from advisor.scaffold import scaffold

    [rec] = recommend_files([str(ROOT / "profiles" / "llm-chatbot.yaml")], ctx, with_flip=False)
    first, second = scaffold(rec, ctx), scaffold(rec, ctx)
    assert first == second and list(first) == sorted(first)
    assert all(__version__ not in text for text in first.values())


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    profile = str(ROOT / "profiles" / "llama3-8b-lora.yaml")
    assert run_cli("scaffold", profile, "-o", str(tmp_path)).code == 0
    (tmp_path / "setup.sh").write_text("# mine\n")
    r = run_cli("scaffold", profile, "-o", str(tmp_path))
    assert r.code == 2 and "--force" in r.err and "Traceback" not in r.err
    assert (tmp_path / "setup.sh").read_text() == "# mine\n"
    assert not list(tmp_path.glob(".advisor-scaffold-*")) and not list(tmp_path.parent.glob(".advisor-scaffold-*"))
    r = run_cli("scaffold", profile, "-o", str(tmp_path), "--force")
    assert r.code == 0, r.err
    assert (tmp_path / "setup.sh").read_text().startswith("#!/usr/bin/env bash")


def test_unknown_path_is_exit_2_with_hint(tmp_path: Path) -> None:
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"), "-o", str(tmp_path), "--path", "gke-vllm-tpuu")
    assert r.code == 2
    assert "unknown setup path 'gke-vllm-tpuu'; did you mean 'gke-vllm-tpu'?" in r.err
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_path_for_a_family_with_no_feasible_configuration(tmp_path: Path) -> None:
    r = run_cli("scaffold", str(ROOT / "profiles" / "aws-only-team.yaml"), "-o", str(tmp_path), "--path", "tpu-vm-jax")
    assert r.code == 2 and "no TPU configuration" in r.err


def test_output_option_is_required() -> None:
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"))
    assert r.code == 2 and "--output" in r.err


def test_bad_profile_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: trianing\nmodel: {params_b: 1}\n")
    r = run_cli("scaffold", str(bad), "-o", str(tmp_path / "out"))
    assert r.code == 2 and "bad.yaml:2:" in r.err
    assert not (tmp_path / "out").exists()


def test_write_is_all_or_nothing_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.scaffold.write as sc
    from advisor.errors import EnvironmentFault, UsageError

    calls = {"n": 0}
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(sc.os, "fsync", failing_fsync)
    with pytest.raises(EnvironmentFault, match="no space left on device") as fault:  # a full disk is exit 4
        sc.write_scaffold({"a.txt": "A" * 10_000, "k8s/b.yaml": "b: 1\n"}, tmp_path / "o")
    assert fault.value.exit_code == 4
    assert not (tmp_path / "o").exists()  # nothing half-written: not even the directory
    assert not list(tmp_path.glob(".advisor-scaffold-*"))  # nor the staging directory beside it

    monkeypatch.setattr(sc.os, "fsync", real_fsync)
    written = sc.write_scaffold({"a.txt": "A\n", "k8s/b.yaml": "b: 1\n"}, tmp_path / "o")
    assert [p.relative_to(tmp_path / "o").as_posix() for p in written] == ["a.txt", "k8s/b.yaml"]
    with pytest.raises(UsageError, match="refusing to overwrite"):
        sc.write_scaffold({"a.txt": "new\n"}, tmp_path / "o")
    assert (tmp_path / "o" / "a.txt").read_text() == "A\n"


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x", "a/../../x", ""])
def test_write_rejects_unsafe_names(tmp_path: Path, bad: str) -> None:
    from advisor.errors import UsageError
    from advisor.scaffold import write_scaffold

    with pytest.raises(UsageError):
        write_scaffold({bad: "x"}, tmp_path)
    assert not any(tmp_path.iterdir())


def test_fill_command_respects_quoting() -> None:
    from advisor.scaffold import fill_command

    literal = {"name": "n", "zone": "z", "model": "o'rg/m $x"}
    shell = {"name": "NAME", "zone": "ZONE"}
    assert fill_command("ssh {name} --zone={zone}", literal, shell) == "ssh ${NAME} --zone=${ZONE}"
    # inside single quotes the quote is closed around the variable
    assert fill_command("x --command='echo {zone}'", literal, shell) == "x --command='echo '\"${ZONE}\"''"
    # literal values are quoted for where they stand
    assert fill_command("serve {model}", literal, shell) == "serve 'o'\"'\"'rg/m $x'"
    assert fill_command('serve "{model}"', literal, shell) == 'serve "o\'rg/m \\$x"'
    # a quoted heredoc body is literal text
    text = "cat <<'EOF'\nname: {name}\nEOF\necho {name}"
    assert fill_command(text, literal, shell) == "cat <<'EOF'\nname: n\nEOF\necho ${NAME}"


def test_hostile_profile_values_stay_inert(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    marker = tmp_path / "pwned"
    profile = tmp_path / "p.yaml"
    hostile = {
        "name": f"x; touch {marker} #",
        "task": "fine-tuning",
        "model": {"params_b": 1, "hf_id": f"o/m'$(touch {marker})\""},
        "training": {"tokens_b": 1},
    }
    # A model id outside the Hugging Face alphabet is refused before anything is generated.
    profile.write_text(yaml.safe_dump(hostile))
    r = run_cli("scaffold", str(profile), "-o", str(tmp_path / "o"))
    assert r.code == 2 and "model.hf_id" in r.err and not marker.exists()
    # The free-text name still reaches the scripts, quoted.
    hostile["model"] = {"params_b": 1, "hf_id": "o/m"}
    profile.write_text(yaml.safe_dump(hostile))
    r = run_cli("scaffold", str(profile), "-o", str(tmp_path / "o"))
    assert r.code == 0, r.err
    setup = tmp_path / "o" / "setup.sh"
    assert subprocess.run([bash, "-n", str(setup)], capture_output=True, timeout=30).returncode == 0
    # evaluate the settings block: the model id must come out verbatim, running nothing
    block = re.search(r"^# ---- settings.*?\n\n", setup.read_text(), re.M | re.S)
    assert block is not None
    p = subprocess.run(
        [bash, "-c", block.group(0) + 'printf %s "${MODEL_ID:-}"'],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"]},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout in ("", "o/m")
    assert not marker.exists()
    r = subprocess.run([sys.executable, "-m", "py_compile", str(tmp_path / "o" / "train.py")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_new_accelerator_is_one_catalog_entry(tmp_path: Path) -> None:
    """A GPU added with --catalog (no code table) is a candidate, a SkyPilot fallback and in the scaffold."""
    cat = tmp_path / "extra.yaml"
    cat.write_text(
        'schema_version: 1\nas_of: "2026-12-01"\n'
        'sources: {X: {url: "https://example.com/new-gpu", retrieved: "2026-12-01"}}\n'
        "accelerators:\n"
        "  - id: h100-test\n    device: gpu\n    name: Test H100 twin\n    vendor: nvidia\n    clouds: [gcp]\n"
        "    specs: {peak_tflops: {bf16: 989, fp8: 1979}, memory_gib: 80, memory_bandwidth_gbps: 3350, scale_up_chips: 8,"
        ' scale_out_gbit_per_chip: 400, fabric_source: [X], source: [X], as_of: "2026-12-01"}\n'
        '    shapes: {gpus_per_node: 8, partial_node_counts: [8], max_nodes: 64, source: [X], as_of: "2026-12-01"}\n'
        # on gcp: 16 nodes for minutes come from DWS flex-start at this rate (on aws, a capacity block bills a
        # day); cheap enough to lead the fallbacks
        '    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: 1.5, source: [X], as_of: "2026-12-01"}]\n'
        "    deploy: {skypilot: H100TEST}\n"
    )
    prof = ROOT / "profiles" / "research-custom-cuda.yaml"
    r = run_cli("recommend", str(prof), "--catalog", str(cat), "--format", "json", "--no-flip")
    assert r.code == 0, r.err
    assert any(c["accelerator"] == "h100-test" for c in json.loads(r.out)["candidates"])
    out = tmp_path / "scaffold"
    r = run_cli("scaffold", str(prof), "--catalog", str(cat), "-o", str(out))
    assert r.code == 0, r.err
    sky = yaml.safe_load((out / "sky.yaml").read_text())
    names = [c["accelerators"] for c in sky["resources"]["ordered"]]
    assert any(n.startswith("H100TEST:") for n in names), names


def _user_path(tmp_path: Path, artefacts: str, command: str = "echo hello") -> Path:
    d = tmp_path / "rules"
    (d / "setup").mkdir(parents=True)
    (d / "setup" / "my-path.yaml").write_text(
        "id: my-path\ntitle: Mine\ndevice: tpu\n"
        f"artefacts: {artefacts}\n"
        "source: https://example.com/x\nsummary: A path.\n"
        f"steps:\n  - title: Say hello\n    commands: ['{command}']\n",
        encoding="utf-8",
    )
    return d


def test_artefacts_come_from_the_setup_path_not_its_wording(tmp_path: Path) -> None:
    # No command mentions a cluster or vLLM, yet the declared kubernetes artefact is produced;
    # without it, nothing Kubernetes is written although the command names kubectl and vllm.
    rules = _user_path(tmp_path, "[shell, kubernetes, readme]")
    r = run_cli(
        "scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"), "--rules", str(rules), "--path", "my-path", "-o", str(tmp_path / "a")
    )
    assert r.code == 0, r.err
    assert sorted(p.name for p in (tmp_path / "a").rglob("*") if p.is_file()) == [
        "README.md", "deployment.yaml", "hpa.yaml", "podmonitoring.yaml", "service.yaml", "setup.sh",
    ]
    rules2 = _user_path(tmp_path / "b", "[shell]", "gcloud container clusters create x && vllm serve m")
    r = run_cli(
        "scaffold",
        str(ROOT / "profiles" / "llm-chatbot.yaml"),
        "--rules",
        str(rules2),
        "--path",
        "my-path",
        "-o",
        str(tmp_path / "b" / "out"),
    )
    assert r.code == 0, r.err
    assert sorted(p.name for p in (tmp_path / "b" / "out").iterdir()) == ["setup.sh"]


def test_unknown_artefact_is_a_positioned_error(tmp_path: Path) -> None:
    rules = _user_path(tmp_path, "[shell, helm]")
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"), "--rules", str(rules), "-o", str(tmp_path / "o"))
    assert r.code == 2
    assert "my-path.yaml:4:" in r.err and "helm" in r.err


def test_every_artefact_has_one_generator() -> None:
    from typing import get_args

    from advisor.knowledge import Artefact
    from advisor.scaffold import GENERATORS

    assert set(GENERATORS) == set(get_args(Artefact))


def test_an_artefact_registered_after_the_readme_is_in_the_readme(ctx, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A generator added at the end of the registry still runs before the README, which lists
    every file written; one that declares what it reads runs after it, wherever registered."""
    from advisor.api import recommend_files
    from advisor.scaffold import GENERATORS, Build, Generator, scaffold
    from advisor.scaffold.spec import Spec

    seen: list[str] = []

    def notes(b: Build) -> None:
        seen.append("notes")
        b.files["NOTES.md"] = "notes\n"

    def runbook(b: Build) -> None:
        assert "NOTES.md" in b.files and "setup.sh" in b.files
        b.files["RUNBOOK.md"] = "runbook\n"

    registry = {"runbook": Generator(runbook, after=("notes", "shell")), **GENERATORS, "notes": Generator(notes)}
    monkeypatch.setattr("advisor.scaffold.GENERATORS", registry)
    produces = Spec.produces
    monkeypatch.setattr(Spec, "produces", lambda self, a: a in ("notes", "runbook") or produces(self, a))
    [rec] = recommend_files([str(ROOT / "profiles" / "llm-chatbot.yaml")], ctx, with_flip=False)
    files = scaffold(rec, ctx)
    assert seen == ["notes"] and "RUNBOOK.md" in files
    assert "| `NOTES.md` |" in files["README.md"] and "| `RUNBOOK.md` |" in files["README.md"]


def test_an_artefact_order_that_cannot_be_met_is_refused() -> None:
    from advisor.scaffold import GENERATORS, Generator, run_order

    assert run_order(GENERATORS)[-1] == "readme"
    with pytest.raises(ValueError, match="cycle"):
        run_order({"a": Generator(lambda b: None, after=("b",)), "b": Generator(lambda b: None, after=("a",))})
    with pytest.raises(ValueError, match="not registered"):
        run_order({"a": Generator(lambda b: None, after=("helm",))})
    with pytest.raises(ValueError, match="after every other"):
        run_order({"a": Generator(lambda b: None, after=("readme",)), "readme": Generator(lambda b: None, reads_all=True)})


def test_steps_are_counted_for_the_batch_the_skeleton_runs(tmp_path: Path) -> None:
    """Before: 112 chips and a global batch of 512: train.py ran 512 // 112 = 4 sequences per chip (448 a step) for the
    steps counted at 512, and trained 262B of the profile's 300B tokens. Its steps were then counted for 448; now a
    stated batch is split evenly (sizing.plans: the data-parallel width divides it), so the plan takes 128 chips and
    train.py runs the whole batch for the profile's tokens."""
    out = tmp_path / "s"
    r = run_cli("scaffold", str(ROOT / "tests" / "data" / "scaffold" / "batch-not-divisible.yaml"), "-o", str(out))
    assert r.code == 0, r.err
    train = (out / "train.py").read_text()
    steps = int(re.search(r"^MAX_STEPS = (\d+)", train, re.M).group(1))  # type: ignore[union-attr]
    batch = int(re.search(r"^GLOBAL_BATCH = (\d+)", train, re.M).group(1))  # type: ignore[union-attr]
    profile = yaml.safe_load((ROOT / "tests" / "data" / "scaffold" / "batch-not-divisible.yaml").read_text())
    chips = int(re.search(r"chips_per_replica=(\d+)", train).group(1))  # type: ignore[union-attr]
    run = max(1, batch // chips) * chips
    tokens = steps * run * profile["training"]["seq_len"]
    assert abs(tokens / (profile["training"]["tokens_b"] * 1e9) - 1) < 0.01, (steps, run, chips)
    assert batch % chips == 0 and run == batch, (batch, chips)
    # the README's summary says so too
    readme = (out / "README.md").read_text()
    assert f"train.py runs {steps:,} steps of {run} sequences" in readme


def test_tpu_vm_multislice_is_one_queued_resource_of_every_slice(tmp_path: Path) -> None:
    """A multislice plan on a TPU VM path (9 x v6e-64) is created as one queued resource of 9 nodes and run on every
    host of every node (rules/provisioning.yaml nodes); before, setup.sh created one slice of the nine it priced."""
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-pretrain-70b.yaml"), "-o", str(tmp_path), "--path", "tpu-vm-jax")
    assert r.code == 0, r.err
    sh = (tmp_path / "setup.sh").read_text()
    plan = re.search(r"slices=(\d+)", sh)
    assert plan is not None and int(plan.group(1)) > 1
    create = next(line for line in sh.splitlines() if "queued-resources create" in line)
    assert f"--node-count={plan.group(1)}" in create and "--node-prefix=${NAME}" in create and "--node-id" not in create
    assert "tpu-vm ssh" not in sh and "tpu-vm scp" not in sh
    assert re.search(r"queued-resources ssh \$\{NAME\} .*--node=all --worker=all --command=\"python3 train.py\"", sh)
    assert "setup.sh provisions one slice" not in r.out + r.err


def test_jetstream_converts_and_serves_the_profiles_model(tmp_path: Path) -> None:
    """The JetStream path converts and serves the profile's model (rules/jetstream-models.yaml), with the plan's batch per
    chip; a model the conversion script is not known to take leaves MaxText's names to the user (setup.sh asks for
    them) and says so. Before, every profile's setup.sh converted Llama-2 7B and served model_name=llama2-7b at
    per_device_batch_size=11."""
    prof = tmp_path / "l2.yaml"
    prof.write_text(re.sub(r"hf_id: .*", "hf_id: meta-llama/Llama-2-13b-chat-hf", (ROOT / "profiles" / "llm-chatbot.yaml").read_text()))
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "a"), "--path", "jetstream-maxtext-tpu")
    assert r.code == 0, r.err
    sh = (tmp_path / "a" / "setup.sh").read_text()
    assert "model_ckpt_conversion.sh llama2 13b " in sh and "model_name=llama2-13b " in sh and "llama2-7b" not in sh
    seqs, chips = re.search(r"max_seqs=(\d+)", sh), re.search(r"chips_per_replica=(\d+)", sh)
    assert seqs and chips and f"per_device_batch_size={-(-int(seqs.group(1)) // int(chips.group(1)))}" in sh
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"), "-o", str(tmp_path / "b"), "--path", "jetstream-maxtext-tpu")
    assert r.code == 0, r.err
    sh = (tmp_path / "b" / "setup.sh").read_text()
    assert "model_ckpt_conversion.sh ${MAXTEXT_MODEL} ${MAXTEXT_SIZE} " in sh and "model_name=${MAXTEXT_MODEL}-${MAXTEXT_SIZE} " in sh
    assert re.search(r"need MAXTEXT_MODEL MAXTEXT_SIZE", sh)
    assert "setup.sh asks for MAXTEXT_MODEL" in sh


def test_a_servicemonitor_is_applied_only_where_its_crd_is(tmp_path: Path) -> None:
    """Off GKE the HPA's metric comes from a ServiceMonitor, a Prometheus Operator kind: it is written apart
    (k8s/monitoring/, which 'kubectl apply -f k8s/' does not read) and applied where the cluster has its CRD. Before,
    'kubectl apply -f k8s/' failed on a cluster without the operator (no matches for kind ServiceMonitor) and setup.sh
    stopped there."""
    prof = tmp_path / "svc.yaml"
    prof.write_text((ROOT / "profiles" / "llm-chatbot.yaml").read_text().replace("clouds: [gcp]", "clouds: [aws]"))
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "out"), "--path", "k8s-vllm-gpu")
    assert r.code == 0, r.err
    out = tmp_path / "out"
    if not (out / "k8s" / "hpa.yaml").exists():
        pytest.skip("one replica: no autoscaler")
    assert (out / "k8s" / "monitoring" / "servicemonitor.yaml").exists() and not (out / "k8s" / "servicemonitor.yaml").exists()
    sh = (out / "setup.sh").read_text()
    guard = "if kubectl get crd servicemonitors.monitoring.coreos.com >/dev/null 2>&1; then"
    assert f"{guard} kubectl apply -f k8s/monitoring/servicemonitor.yaml" in sh


def test_train_py_that_cannot_hold_the_priced_state_says_so(tmp_path: Path) -> None:
    """The estimate sizes training with the state sharded over all chips (FSDP / ZeRO-3); train.py keeps a full copy
    per chip. Where that copy does not fit a chip, the scaffold says so (setup.sh and README). Before, a 13B full
    fine-tune on A100 40GB got a train.py that runs out of memory at start, without a word."""
    prof = tmp_path / "ft.yaml"
    prof.write_text(
        "name: ft13b\ntask: training\ndomain: llm\nmodel: {params_b: 13, layers: 40, hidden_size: 5120, kv_heads: 40}\n"
        "training: {tokens_b: 5, seq_len: 4096, method: full}\nsoftware: {framework: pytorch}\n"
        "deployment: {clouds: [aws], accelerators: [a100-40gb]}\n"
    )
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "out"))
    assert r.code == 0, r.err
    sh = (tmp_path / "out" / "setup.sh").read_text()
    # a language model of >= 7 B trained in full takes Megatron-LM, which shards the state as the estimate does
    assert "pretrain_gpt.py" in (tmp_path / "out" / "train.py").read_text()
    assert "keeps the whole training state" not in sh
    five = tmp_path / "five.yaml"  # below 7 B the PyTorch loop stays, and 5 B x 16 bytes of state exceed a 40 GB chip
    five.write_text(prof.read_text().replace("params_b: 13, layers: 40, hidden_size: 5120, kv_heads: 40", "params_b: 5"))
    r = run_cli("scaffold", str(five), "-o", str(tmp_path / "five-out"))
    assert r.code == 0, r.err
    sh = (tmp_path / "five-out" / "setup.sh").read_text()
    assert "keeps the whole training state on every chip" in " ".join(sh.replace("#", " ").split())
    small = tmp_path / "small.yaml"
    small.write_text(prof.read_text().replace("params_b: 13, layers: 40, hidden_size: 5120, kv_heads: 40", "params_b: 0.35"))
    r = run_cli("scaffold", str(small), "-o", str(tmp_path / "small-out"))
    assert r.code == 0, r.err
    assert "keeps the whole training state" not in (tmp_path / "small-out" / "setup.sh").read_text()


def test_a_service_of_multi_node_replicas_says_sky_launch_starts_one(tmp_path: Path) -> None:
    """A replica over two H100 VMs, three of them: SkyServe runs single-node replicas only, so sky.yaml is one
    replica's cluster, and its header and the README say to launch one per replica. Before, nothing said it served a
    third of the peak."""
    r = run_cli("scaffold", str(ROOT / "tests" / "data" / "scaffold" / "multihost-replicas.yaml"), "-o", str(tmp_path / "o"))
    assert r.code == 0, r.err
    sky = (tmp_path / "o" / "sky.yaml").read_text()
    reps = re.search(r"max_replicas=(\d+)", sky)
    assert reps and int(reps.group(1)) > 1 and "num_nodes: 2" in sky and "service:" not in sky
    assert f"sky launch starts one; launch {reps.group(1)} clusters" in " ".join(sky.replace("#", " ").split())
    assert f"launch {reps.group(1)} clusters and balance" in (tmp_path / "o" / "README.md").read_text()


def test_spot_training_says_where_its_checkpoints_must_live(tmp_path: Path) -> None:
    """A training run priced on Spot capacity: train.py's checkpoints go to the VM's own disk, which a preemption
    deletes; the scaffold says to give it persistent storage and how to relaunch. Before, 'a restart resumes from the
    latest' checkpoint that the preemption had deleted, without a word. On-demand, nothing is said."""
    text = (ROOT / "profiles" / "gpt2-8gpu-day.yaml").read_text()
    for pricing, said in (("spot", True), ("on-demand", False)):
        prof = tmp_path / f"{pricing}.yaml"
        prof.write_text(re.sub(r"pricing: \S+", f"pricing: {pricing}", text) if "pricing:" in text
                        else text.replace("deployment:", f"deployment:\n  pricing: {pricing}", 1))
        r = run_cli("scaffold", str(prof), "-o", str(tmp_path / pricing))
        assert r.code == 0, r.err
        sh = " ".join((tmp_path / pricing / "setup.sh").read_text().replace("#", " ").split())
        assert ("Spot capacity: train.py checkpoints to --output-dir" in sh) is said, pricing


def test_the_hf_trainer_smoke_test_runs_the_plans_shapes_sharded_over_the_slice(tmp_path: Path) -> None:
    """Before: the Hugging Face fine-tuning route ran run_clm.py at 1,024-token blocks, 8 sequences, unsharded ('a smoke
    test on one chip') for an 8B full fine-tune planned at 8,192 tokens with FSDPv2 over a v6e-8: it cannot fit one chip.
    Now the step runs the plan's block size and global batch with the Trainer's FSDPv2 over every chip."""
    r = run_cli("scaffold", str(ROOT / "tests" / "data" / "scaffold" / "xla-fsdp-8b.yaml"), "-o", str(tmp_path))
    assert r.code == 0, r.err
    sh = (tmp_path / "setup.sh").read_text()
    plan = dict(re.findall(r"(\w+)=(\S+)", " ".join(line for line in sh.splitlines() if line.startswith("# plan:"))))
    [run] = [line for line in sh.splitlines() if "run_clm.py" in line and not line.startswith("#")]
    flag = dict(re.findall(r"--(\w+) ([^-\s]\S*)", run))
    assert flag["block_size"] == plan["seq_len"] == "8192"
    assert int(flag["per_device_train_batch_size"]) * int(flag["gradient_accumulation_steps"]) == int(plan["global_batch"])
    assert int(flag["per_device_train_batch_size"]) == int(plan["chips_per_replica"])  # one sequence a chip per micro-step
    assert "XLA_USE_SPMD=1" in run and flag["fsdp"] == "full_shard" and flag["fsdp_config"] == "fsdp-v2.json"
    assert '\\"xla_fsdp_v2\\": true' in sh and "> fsdp-v2.json" in sh
    assert "16 GiB HBM each" not in sh  # the v5e note on a v6e plan


@pytest.mark.parametrize("path", ["tpu-vm-pytorch-xla", "gpu-vm-pytorch"])
def test_the_stand_in_model_runs_at_a_long_context_without_a_dense_mask(tmp_path: Path, path: str) -> None:
    """Before: train.py's stand-in at SEQ_LEN = 131072 built torch.nn.Transformer.generate_square_subsequent_mask(131072),
    64 GiB in fp32, and attended through TransformerEncoderLayer (batch x heads x S^2 scores): it could not run on a
    32 GiB v6e chip or an 80 GB GPU. Now its blocks attend through a flash kernel (no S x S tensor)."""
    data = yaml.safe_load((ROOT / "tests" / "data" / "scaffold" / "long-context-128k.yaml").read_text())
    data["training"]["method"] = "lora"  # a full run of a model this large takes Megatron-LM on a GPU (its own attention)
    profile = tmp_path / "long.yaml"
    profile.write_text(yaml.safe_dump(data))
    r = run_cli("scaffold", str(profile), "-o", str(tmp_path / "out"), "--path", path)
    assert r.code == 0, r.err
    train = (tmp_path / "out" / "train.py").read_text()
    compile(train, "train.py", "exec")
    assert re.search(r"^SEQ_LEN = 131072$", train, re.M)
    assert "generate_square_subsequent_mask" not in train and "TransformerEncoder" not in train
    if path.startswith("tpu"):
        assert "from torch_xla.experimental.custom_kernel import flash_attention" in train
        assert "flash_attention(q, k, v, causal=True, sm_scale=" in train
    else:
        assert "F.scaled_dot_product_attention(q, k, v, is_causal=True)" in train


@pytest.mark.parametrize(("hf_id", "flag"), [
    ("meta-llama/Llama-3.1-8B-Instruct", True),  # bf16 weights quantized to FP8 on the fly
    ("meta-llama/Llama-3.1-8B-Instruct-FP8", False),  # Meta's FBGEMM FP8 release: config quant_method fbgemm_fp8
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", False),  # compressed-tensors
    ("nvidia/Llama-3.1-8B-Instruct-FP8", False),  # modelopt
])
def test_a_published_fp8_checkpoint_gets_no_on_the_fly_quantization_flag(tmp_path: Path, hf_id: str, flag: bool) -> None:
    """Before: every fp8 profile's server got --quantization=fp8, which vLLM refuses when the checkpoint's config names
    another method (ModelConfig._verify_quantization: Meta's FP8 405B is fbgemm_fp8), so the Deployment crash-looped.
    A checkpoint whose name says it is published quantized (rules/checkpoints.yaml) is served with no such flag."""
    data = yaml.safe_load((ROOT / "profiles" / "llm-chatbot.yaml").read_text())
    data["model"].update(precision="fp8", hf_id=hf_id)
    data["deployment"]["clouds"] = ["aws"]
    data["deployment"].pop("region", None)
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump(data))
    r = run_cli("scaffold", str(profile), "-o", str(tmp_path / "out"), "--path", "gke-vllm-gpu")
    assert r.code == 0, r.err
    argv = "\n".join(p.read_text() for p in sorted((tmp_path / "out" / "k8s").glob("*.yaml")))
    assert ("--quantization=fp8" in argv) is flag, hf_id
    readme = (tmp_path / "out" / "README.md").read_text()
    assert ("Precision: the published checkpoint" in readme) is not flag


def test_a_qlora_setup_installs_what_train_py_imports_and_runs_the_micro_batch_priced(tmp_path: Path) -> None:
    """Before: setup.sh installed 'torch transformers accelerate tensorboard' (no peft, no bitsandbytes) while train.py
    imports both, and train.py ran all 4 sequences x 4,096 tokens per GPU at once with no activation checkpointing
    (~365 GB of Llama-70B activations per GPU), where the estimate's memory assumed checkpointed activations."""
    r = run_cli("scaffold", str(ROOT / "tests" / "data" / "scaffold" / "qlora-70b-one-node.yaml"), "-o", str(tmp_path))
    assert r.code == 0, r.err
    sh, sky, train = ((tmp_path / f).read_text() for f in ("setup.sh", "sky.yaml", "train.py"))
    [install] = [line.split("&& ", 2)[-1] for line in sh.splitlines() if "pip install" in line and not line.lstrip().startswith("#")]
    assert {"peft", "bitsandbytes", "accelerate", "transformers"} <= set(install.split())
    assert install.strip() in sky  # one install line for setup.sh and sky.yaml
    assert 'gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})' in train
    assert "prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)" in train
    micro = int(re.search(r"^MICRO_BATCH = (\d+)", train, re.M).group(1))  # type: ignore[union-attr]
    plan = dict(re.findall(r"(\w+)=(\S+)", " ".join(line for line in sh.splitlines() if line.startswith("# plan:"))))
    share = int(plan["global_batch"]) // int(plan["chips_per_replica"])
    assert 1 <= micro <= share
    assert "(loss / accum).backward()" in train and "model.no_sync()" in train
    compile(train, "train.py", "exec")


def test_an_encoders_readme_speaks_of_requests_not_generated_tokens(tmp_path: Path) -> None:
    """Before: an embedding model (output_tokens 0) read 'time to first token 218 ms, 218.1 ms per output token' and
    '4,695 generated tokens/s', priced per million generated tokens; it yields one result a request."""
    r = run_cli("scaffold", str(ROOT / "profiles" / "text-embeddings.yaml"), "-o", str(tmp_path / "enc"))
    assert r.code == 0, r.err
    readme = (tmp_path / "enc" / "README.md").read_text()
    [cost] = [line for line in readme.splitlines() if line.startswith("- Cost:")]
    [latency] = [line for line in readme.splitlines() if line.startswith("- Latency:")]
    assert "per million requests" in cost and "generated tokens" not in readme, cost
    assert "time to first token" not in latency and "per output token" not in latency, latency
    assert re.search(r"^- Throughput: [0-9,]+ requests/s per replica\.$", readme, re.M), readme
    r = run_cli("scaffold", str(ROOT / "profiles" / "llm-chatbot.yaml"), "-o", str(tmp_path / "llm"))
    llm = (tmp_path / "llm" / "README.md").read_text()
    assert "generated tokens/s per replica" in llm and "per million output tokens" in llm and "time to first token" in llm


def test_the_server_table_is_read_once() -> None:
    # 4f576c8 put checkpoint_method between servers() and its cache decorator: every call re-read and re-validated
    # rules/serving-stacks.yaml
    from advisor.scaffold.stacks import checkpoint_method, servers

    assert servers() is servers()
    assert checkpoint_method("meta-llama/Llama-3.1-8B-Instruct-FP8") == "fp8" and checkpoint_method("openai/gpt-oss-20b") == "mxfp4"


def test_the_micro_batch_divides_each_gpus_share_of_the_global_batch(tmp_path: Path) -> None:
    """A micro-batch that does not divide a GPU's share dropped sequences (a global batch of 256 over 8 GPUs at micro 5
    trained 240): the plan's MICRO_BATCH is a divisor of the share, and train.py takes one at any GPU count."""
    r = run_cli("scaffold", str(ROOT / "tests" / "data" / "scaffold" / "qlora-70b-one-node.yaml"), "-o", str(tmp_path / "q"))
    assert r.code == 0, r.err
    train = (tmp_path / "q" / "train.py").read_text()
    assert "while per_gpu % micro:" in train and "accum = per_gpu // micro" in train
    sh = (tmp_path / "q" / "setup.sh").read_text()
    plan = dict(re.findall(r"(\w+)=(\S+)", " ".join(line for line in sh.splitlines() if line.startswith("# plan:"))))
    share = int(plan["global_batch"]) // int(plan["chips_per_replica"])
    micro = int(re.search(r"^MICRO_BATCH = (\d+)", train, re.M).group(1))  # type: ignore[union-attr]
    assert share % micro == 0, (share, micro)


def _profile_file(tmp_path: Path, name: str, **blocks: object) -> Path:
    """A training profile of an 8B-class LLM written to tmp_path/p.yaml: ``blocks`` replace its model, training,
    software, deployment, team and goal blocks."""
    data: dict[str, object] = {"name": name, "task": "training", "domain": "llm",
                               "model": {"params_b": 8, "architecture": "transformer", "precision": "bf16"},
                               "software": {"framework": "pytorch"}, **blocks}
    prof = tmp_path / "p.yaml"
    prof.write_text(yaml.safe_dump(data))
    return prof


def test_a_vertex_ai_job_outlives_the_default_limit_and_keeps_its_checkpoints(tmp_path: Path) -> None:
    # review 16, D3: a 665 h run on the Vertex AI TPU path got a job spec with no scheduling.timeout (Vertex AI stops a
    # job at 7 days) and no baseOutputDirectory (no AIP_MODEL_DIR: checkpoints on the container's disk, lost with it)
    prof = _profile_file(
        tmp_path, "long-tpu-run",
        model={"params_b": 3.2, "architecture": "transformer", "precision": "bf16", "layers": 28, "hidden_size": 3072},
        training={"tokens_b": 300, "seq_len": 4096, "method": "full", "global_batch": 512, "deadline_hours": 720},
        deployment={"clouds": ["gcp"]}, team={"tpu_experience": "none"}, goal={"optimize": "cost", "budget_usd": 20000},
    )
    est = json.loads(run_cli("recommend", str(prof), "--format", "json").out)["estimate"]
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "s"), "--path", "vertex-ai-tpu")
    assert r.code == 0, r.err
    script = (tmp_path / "s" / "setup.sh").read_text()
    spec = script.split("cat > job.yaml <<EOF\n", 1)[1].split("\nEOF", 1)[0]
    job = yaml.safe_load(spec.replace("${PROJECT_ID}", "p").replace("${NAME}", "n"))
    timeout_h = int(job["scheduling"]["timeout"].rstrip("s")) / 3600
    assert est["hours"] > 168 and timeout_h >= max(est["hours"], est["hours_range"][1]), (timeout_h, est["hours"])
    assert job["baseOutputDirectory"]["outputUriPrefix"].startswith("gs://")
    # train.py writes the gs:// directories Vertex AI passes through the Cloud Storage mount
    train = (tmp_path / "s" / "train.py").read_text()
    ns: dict[str, object] = {}
    exec(compile(train.split("def vertex_path", 1)[1].join(["def vertex_path", ""]).split("\n\n\n", 1)[0], "t", "exec"), ns)
    assert ns["vertex_path"]("gs://b/model/") == "/gcs/b/model/" and ns["vertex_path"]("./runs") == "./runs"  # type: ignore[operator]
    assert 'vertex_path(os.environ.get("AIP_MODEL_DIR"' in train


def test_a_configuration_priced_on_owned_hardware_is_not_launched_on_a_cloud(tmp_path: Path) -> None:
    # review 16, D4: 16 owned H100 (running cost, $14k) with clouds [on-prem, gcp] were launched by sky.yaml on GCP under
    # the owned price; renting them there costs some 30 times as much
    prof = _profile_file(
        tmp_path, "owned-and-gcp", training={"tokens_b": 2000, "seq_len": 8192, "method": "full", "global_batch": 512},
        deployment={"clouds": ["on-prem", "gcp"], "owned": [{"accelerator": "h100", "count": 16}]}, goal={"optimize": "cost"},
    )
    est = json.loads(run_cli("recommend", str(prof), "--format", "json").out)["estimate"]
    assert est["accelerator"] == "h100" and est["price"]["cloud"] == "on-prem", est["price"]
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "s"))
    assert r.code == 0, r.err
    sky = yaml.safe_load((tmp_path / "s" / "sky.yaml").read_text())
    first, *rest = sky["resources"]["ordered"]
    assert first == {"accelerators": "H100:8", "infra": "kubernetes"}, first
    assert all(not (o["accelerators"] == "H100:8" and o["infra"].startswith("gcp")) for o in rest), rest
    assert "on your own cluster" in (tmp_path / "s" / "README.md").read_text()


def test_an_amd_training_setup_checks_and_installs_for_rocm(tmp_path: Path) -> None:
    # review 16, D6: owned MI300X got setup.sh steps that stop at nvidia-smi (set -e; a ROCm node has rocm-smi) and
    # install PyPI's torch (the CUDA build), and a README that asks Kubernetes for nvidia.com/gpu
    prof = _profile_file(
        tmp_path, "owned-mi300x", training={"tokens_b": 500, "seq_len": 8192, "method": "full", "global_batch": 512},
        deployment={"clouds": ["on-prem"], "owned": [{"accelerator": "mi300x", "count": 32}]}, goal={"optimize": "balanced"},
    )
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "s"))
    assert r.code == 0, r.err
    script = (tmp_path / "s" / "setup.sh").read_text()
    sky = yaml.safe_load((tmp_path / "s" / "sky.yaml").read_text())
    commands = [ln.strip() for ln in script.splitlines() if not ln.lstrip().startswith("#")]
    assert "rocm-smi" in commands and "nvidia-smi" not in script
    rocm = "pip install torch --index-url https://download.pytorch.org/whl/rocm6.4 && pip install transformers"
    assert rocm in script and sky["setup"].startswith(rocm), sky["setup"]
    assert "amd.com/gpu limits" in script and "nvidia.com/gpu" not in script
    subprocess.run(["bash", "-n", str(tmp_path / "s" / "setup.sh")], check=True)


def test_an_offline_job_runs_its_window_with_every_replica_and_stops_after(tmp_path: Path) -> None:
    # review 16, D5: a nightly batch job (200k requests within an 8-hour window) was priced for 8 h a day, but its
    # setup ran the server 24 h a day (no service-hours CronJobs) and let the autoscaler drop to 1 of the 5 replicas
    # the estimate sized to run at saturation through the window
    data = yaml.safe_load((ROOT / "profiles" / "llm-batch-summarise.yaml").read_text())
    data["inference"].pop("hours_per_day")  # the window alone says how long it runs
    prof = tmp_path / "p.yaml"
    prof.write_text(yaml.safe_dump(data))
    est = json.loads(run_cli("recommend", str(prof), "--format", "json").out)["estimate"]
    assert est["replicas"] > 1 and est["assumptions"]["operating_point"]["offline"]["window_hours_per_day"] == 8
    r = run_cli("scaffold", str(prof), "-o", str(tmp_path / "s"), "--path", "gke-vllm-tpu")
    assert r.code == 0, r.err
    k8s = tmp_path / "s" / "k8s"
    jobs = [d for d in yaml.safe_load_all((k8s / "schedule.yaml").read_text()) if d["kind"] == "CronJob"]
    start, stop = (int(j["spec"]["schedule"].split()[1]) for j in sorted(jobs, key=lambda j: j["metadata"]["name"]))
    assert (stop - start) % 24 == 8, (start, stop)
    scale = [c for j in jobs for c in j["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]]
    assert f"--replicas={est['replicas']}" in scale and "--replicas=0" in scale, scale
    assert not (k8s / "hpa.yaml").exists()  # nothing scales the job below its sized replicas
    deployment = yaml.safe_load((k8s / "deployment.yaml").read_text())
    assert deployment["spec"]["replicas"] == est["replicas"]
    sky = yaml.safe_load((tmp_path / "s" / "sky.yaml").read_text())
    policy = sky.get("service", {}).get("replicas") or sky.get("service", {}).get("replica_policy", {})
    assert policy in (est["replicas"], {"min_replicas": est["replicas"], "max_replicas": est["replicas"]}) or not sky.get("service"), sky
