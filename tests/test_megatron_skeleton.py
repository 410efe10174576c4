"""A large language model trained in full on NVIDIA GPUs gets a setup that runs the plan it was priced on (review 20
D5): the estimate lays the run out as tensor x pipeline x data parallelism with the training state sharded over the
GPUs, and the skeleton was a DistributedDataParallel loop (a whole copy of the model on every GPU, no tensor or
pipeline parallelism) that could not run it. The skeleton for such a run is Megatron-LM's pretrain_gpt.py with the
plan's degrees (rules/training-stacks.yaml megatron)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ROOT, run_cli

LONG = ROOT / "tests" / "data" / "review20" / "11-llama70b-128k-finetune.yaml"
FLAGS = set(yaml.safe_load((ROOT / "tests" / "data" / "megatron_arguments.yaml").read_text())["flags"])


def _scaffold(profile: Path, out: Path, *args: str) -> tuple[dict[str, Any], str]:
    r = run_cli("recommend", str(profile), "--format", "json", *args)
    assert r.code == 0, r.err
    est = json.loads(r.out)["estimate"]
    r = run_cli("scaffold", str(profile), "-o", str(out), *args)
    assert r.code == 0, r.err
    return est, (out / "train.py").read_text()


def _args(train: str) -> list[str]:
    """megatron_args() of a generated train.py (it imports only os, runpy and sys)."""
    ns: dict[str, Any] = {"__name__": "train", "__file__": "train.py"}
    exec(compile(train, "train.py", "exec"), ns)  # the project's own generated file
    return list(ns["megatron_args"]())


def _value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_a_long_context_70b_fine_tune_runs_the_priced_layout(tmp_path: Path) -> None:
    est, train = _scaffold(LONG, tmp_path / "out")
    par = est["parallelism"]
    assert est["device"] == "gpu" and par["tensor"] > 1  # the plan splits layers: a plain data-parallel loop cannot
    assert "DistributedDataParallel" not in train and "pretrain_gpt.py" in train
    args = _args(train)
    assert int(_value(args, "--tensor-model-parallel-size")) == par["tensor"]
    assert int(_value(args, "--pipeline-model-parallel-size")) == par.get("pipeline", 1)
    assert "--sequence-parallel" in args  # the activations outside the matmuls split over the tensor group
    # the state sharded over the data-parallel GPUs, as the estimate's memory assumed (ZeRO-3: Megatron FSDP)
    assert "sharded" in est["assumptions"]["memory"]["sharding"]
    assert _value(args, "--data-parallel-sharding-strategy") == "optim_grads_params" and "--use-megatron-fsdp" in args
    assert _value(args, "--recompute-granularity") == "full"  # activations recomputed, as its memory assumed
    assert int(_value(args, "--seq-length")) == 131072
    assert int(_value(args, "--global-batch-size")) == 16 and 16 % par["data"] == 0
    assert int(_value(args, "--num-layers")) == 80 and int(_value(args, "--hidden-size")) == 8192
    assert int(_value(args, "--num-query-groups")) == 8 and "--group-query-attention" in args
    assert _value(args, "--lr") == "3e-5"  # a fine-tune's rate
    unknown = {a for a in args if a.startswith("--")} - FLAGS
    assert not unknown, f"not arguments of Megatron-LM core_v0.15.0: {sorted(unknown)}"
    sh = (tmp_path / "out" / "setup.sh").read_text()
    assert "--branch core_v0.15.0 https://github.com/NVIDIA/Megatron-LM.git" in sh
    assert "keeps the whole training state on every chip" not in sh  # the warning of a loop that does not shard
    sky = yaml.safe_load((tmp_path / "out" / "sky.yaml").read_text())
    assert "Megatron-LM" in sky["setup"] and "train.py" in sky["run"] and "--nnodes" in sky["run"]


def test_a_precision_megatron_fsdp_does_not_run_takes_the_distributed_optimizer(tmp_path: Path) -> None:
    # Megatron FSDP shards 16-bit and FP8 runs; an fp16 run takes the distributed optimizer (its state and gradients
    # sharded), and its precision flag is fp16's
    data = yaml.safe_load(LONG.read_text())
    data["model"]["precision"] = "fp16"
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    est, train = _scaffold(path, tmp_path / "out")
    args = _args(train)
    assert int(_value(args, "--tensor-model-parallel-size")) == est["parallelism"]["tensor"]
    assert "--use-megatron-fsdp" not in args and "--use-distributed-optimizer" in args and "--overlap-grad-reduce" in args
    assert "--fp16" in args and "--bf16" not in args
    assert not {a for a in args if a.startswith("--")} - FLAGS


def test_a_plan_the_skeleton_cannot_lay_out_is_said(tmp_path: Path) -> None:
    # a 1.3 B research model of its own architecture (Megatron's GPT is no hybrid state-space model) planned over 4
    # pipeline stages: its PyTorch loop runs data parallelism only, and the setup says so instead of implying the plan
    est, train = _scaffold(ROOT / "profiles" / "research-custom-cuda.yaml", tmp_path / "out")
    assert est["parallelism"]["pipeline"] > 1 and "pretrain_gpt.py" not in train
    notes = " ".join(line.lstrip("# ") for line in (tmp_path / "out" / "setup.sh").read_text().splitlines() if line.startswith("#"))
    assert "pipeline parallelism 4" in notes and "data parallelism only" in notes


def test_the_launcher_runs_pretrain_gpt_with_the_plan_and_extra_arguments(tmp_path: Path) -> None:
    # main() hands Megatron's own script the plan's arguments, then what follows train.py on the command line
    _scaffold(LONG, tmp_path / "out")
    fake = tmp_path / "Megatron-LM"
    fake.mkdir()
    (fake / "pretrain_gpt.py").write_text(
        "import json, os, sys\n"
        "json.dump({'argv': sys.argv[1:], 'conn': os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS')},"
        " open(os.environ['OUT_JSON'], 'w'))\n"
    )
    env = {**os.environ, "MEGATRON_LM": str(fake), "OUT_JSON": str(tmp_path / "argv.json"), "WORLD_SIZE": "16",
           "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    r = subprocess.run([sys.executable, str(tmp_path / "out" / "train.py"), "--data-path", "my_text_document"],
                       env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "argv.json").read_text())
    assert got["argv"][-2:] == ["--data-path", "my_text_document"] and "--tensor-model-parallel-size" in got["argv"]
    assert got["conn"] is None  # Megatron FSDP refuses CUDA_DEVICE_MAX_CONNECTIONS=1
    missing = subprocess.run([sys.executable, str(tmp_path / "out" / "train.py")], capture_output=True, text=True,
                             env={**os.environ, "MEGATRON_LM": str(tmp_path / "none")}, timeout=60, check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_a_lora_run_keeps_the_hugging_face_skeleton(tmp_path: Path, method: str) -> None:
    data = yaml.safe_load(LONG.read_text())
    data["training"]["method"] = method
    data["training"]["seq_len"] = 4096
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    r = run_cli("scaffold", str(path), "-o", str(tmp_path / "out"), "--path", "gpu-vm-pytorch")
    assert r.code == 0, r.err
    train = (tmp_path / "out" / "train.py").read_text()
    assert "pretrain_gpt.py" not in train and "peft" in train


def test_a_mixture_of_experts_gets_its_experts_width(tmp_path: Path) -> None:
    # a routed expert's MLP is not the dense width: Qwen3-235B-A22B's experts are 1,536 wide (its config's
    # moe_intermediate_size), which the totals give, (P - A) / (1 - k / E) over E x layers x 3 x hidden; at the dense
    # 3.5 x hidden (14,336) 128 experts in 94 layers would be a ~2 T-parameter model
    data = yaml.safe_load(LONG.read_text())
    data["model"] = {"params_b": 235, "active_params_b": 22, "architecture": "moe", "experts": 128, "experts_per_token": 8,
                     "layers": 94, "hidden_size": 4096, "kv_heads": 4, "precision": "bf16", "hf_id": "Qwen/Qwen3-235B-A22B"}
    data["training"].update(seq_len=4096, tokens_b=20, global_batch=512)
    data["training"].pop("deadline_hours", None)
    path = tmp_path / "moe.yaml"
    path.write_text(yaml.safe_dump(data))
    est, train = _scaffold(path, tmp_path / "out")
    if est["device"] != "gpu":  # the verdict's family; the GPU setup is asked for by its path
        r = run_cli("scaffold", str(path), "-o", str(tmp_path / "gpu"), "--path", "gpu-vm-pytorch")
        assert r.code == 0, r.err
        train = (tmp_path / "gpu" / "train.py").read_text()
    args = _args(train)
    assert int(_value(args, "--num-experts")) == 128 and int(_value(args, "--moe-router-topk")) == 8
    assert int(_value(args, "--moe-ffn-hidden-size")) == 1536
    assert not {a for a in args if a.startswith("--")} - FLAGS


# the option names tools/preprocess_data.py declares at core_v0.15.0 (its own; the tokenizer's come from arguments.py)
PREPROCESS = {"--input", "--json-keys", "--split-sentences", "--keep-newlines", "--append-eod", "--lang", "--output-prefix",
              "--workers", "--partitions", "--log-interval", "--keep-sequential-samples"}


def test_on_vertex_ai_the_launcher_reads_what_the_job_hands_it(tmp_path: Path) -> None:
    """The Vertex AI path's job hands the container DATA_PATH (the bucket's text), AIP_MODEL_DIR and AIP_TENSORBOARD_LOG_DIR
    (gs:// URIs under baseOutputDirectory) and HF_TOKEN_SECRET, and its Dockerfile installs the Secret Manager client
    'train.py reads HF_TOKEN_SECRET'. The Megatron launcher read none of them: it trained on mock data, wrote checkpoints
    inside the container (lost with the job, so a resubmitted 10-day run restarted from step 0) and TensorBoard logs the
    follow-up step never found. Now a text DATA_PATH is converted once per node by Megatron's preprocess_data.py with the
    model's tokenizer and trained on; checkpoints and logs go through the /gcs mount."""
    profile = tmp_path / "vertex.yaml"
    profile.write_text(LONG.read_text().replace("gpu_experience: expert", "gpu_experience: none")
                       .replace("tpu_experience: some", "tpu_experience: none"))
    out = tmp_path / "out"
    _scaffold(profile, out)
    assert "HF_TOKEN_SECRET" in (out / "Dockerfile").read_text() and "AIP_MODEL_DIR" in (out / "README.md").read_text()
    train = (out / "train.py").read_text()
    assert "HF_TOKEN_SECRET" in train and "AIP_MODEL_DIR" in train and "DATA_PATH" in train
    fake = tmp_path / "Megatron-LM"
    (fake / "tools").mkdir(parents=True)
    (fake / "pretrain_gpt.py").write_text(
        "import json, os, sys\njson.dump(sys.argv[1:], open(os.environ['OUT_JSON'], 'w'))\n")
    (fake / "tools" / "preprocess_data.py").write_text(
        "import json, os, sys\n"
        "a = sys.argv[1:]\n"
        "json.dump(a, open(os.environ['PRE_JSON'], 'w'))\n"
        "docs = [json.loads(x)['text'] for x in open(a[a.index('--input') + 1])]\n"
        "p = a[a.index('--output-prefix') + 1] + '_text_document'\n"
        "open(p + '.bin', 'w').write('\\n'.join(docs)); open(p + '.idx', 'w').write(str(len(docs)))\n")
    text = tmp_path / "bucket" / "data" / "train.txt"
    text.parent.mkdir(parents=True)
    text.write_text("first document\n\nsecond document\n")
    env = {**os.environ, "MEGATRON_LM": str(fake), "OUT_JSON": str(tmp_path / "argv.json"), "PRE_JSON": str(tmp_path / "pre.json"),
           "WORLD_SIZE": "8", "DATA_PATH": str(text), "DATA_CACHE": str(tmp_path / "cache"), "HF_TOKEN": "x",
           "AIP_MODEL_DIR": "gs://bucket/model", "AIP_TENSORBOARD_LOG_DIR": "gs://bucket/logs"}
    r = subprocess.run([sys.executable, str(out / "train.py")], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    pre = json.loads((tmp_path / "pre.json").read_text())
    assert {a for a in pre if a.startswith("--")} <= PREPROCESS | FLAGS
    assert _value(pre, "--tokenizer-model") == "meta-llama/Llama-3.1-70B" and "--append-eod" in pre
    assert (tmp_path / "cache" / "train_text_document.bin").read_text() == "first document\nsecond document"
    args = json.loads((tmp_path / "argv.json").read_text())
    assert {a for a in args if a.startswith("--")} <= FLAGS and "--mock-data" not in args
    assert _value(args, "--data-path") == str(tmp_path / "cache" / "train_text_document")
    assert _value(args, "--tokenizer-type") == "HuggingFaceTokenizer"
    assert _value(args, "--save") == _value(args, "--load") == "/gcs/bucket/model"  # outlives the job; a resubmit resumes
    assert _value(args, "--tensorboard-dir") == "/gcs/bucket/logs"
    # an indexed dataset is trained on as it is; a path that does not exist stops with what to do
    binary = str(tmp_path / "cache" / "train_text_document.bin")
    r = subprocess.run([sys.executable, str(out / "train.py")], env={**env, "DATA_PATH": binary},
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and _value(json.loads((tmp_path / "argv.json").read_text()), "--data-path") == binary[:-4]
    r = subprocess.run([sys.executable, str(out / "train.py")], env={**env, "DATA_PATH": str(tmp_path / "nope.txt")},
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode != 0 and "no such file; upload your training text there" in r.stderr
