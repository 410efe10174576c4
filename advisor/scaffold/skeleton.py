"""``train.py`` and ``Dockerfile``: a runnable training skeleton for the stack.

PyTorch/XLA (TPU + PyTorch), JAX, TensorFlow, PyTorch + CUDA with Hugging Face
(GPU), XGBoost (CPU); it logs to TensorBoard in ``./runs``. The templates live
in ``advisor/templates/scaffold``.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from advisor.constants import load_constants
from advisor.estimate.training import vocab_size
from advisor.families import family
from advisor.scaffold.plan import statement
from advisor.scaffold.spec import Spec, one_line, train_model_id, verdict_line
from advisor.setuppath import per_runtime, stack_pip, training_stack, vendor_pip

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "scaffold"

def stack_title(stack: str) -> str:
    """How the README names a training stack (rules/training-stacks.yaml ``title``)."""
    title: str = training_stack(stack)["title"]
    return title


def train_py(spec: Spec) -> str:
    assert spec.stack is not None
    tmpl = string.Template((TEMPLATES / training_stack(spec.stack)["template"]).read_text(encoding="utf-8"))
    p = spec.profile
    t = p.training
    title = f"{one_line(p.name)} ({p.task}, {p.model.params_b:g} B params"
    title += f", {verdict_line(spec)})" if spec.est else ")"
    plan = spec.plan
    text = tmpl.substitute(
        title=title.replace("\\", "/").replace('"""', "'''"),
        model_id=repr(train_model_id(spec)) if train_model_id(spec) else "None",
        method=repr(t.method if t else "full"),
        seq_len=str(t.seq_len if t else 2048),
        global_batch=str(spec.global_batch or 256),
        micro_batch=str(micro_batch(spec)),
        max_steps=str(spec.max_steps or 100),
        checkpoint_every=str(spec.checkpoint_every or spec.max_steps or 100),
        checkpoint_why=("about every 30 minutes of the estimated run: Spot capacity is reclaimed without notice"
                        if plan.spot else "about every 2 hours of the estimated run"),
        precision=plan.precision,
        torch_dtype=TORCH_DTYPE.get(plan.precision, "bfloat16"),
        **_layout_values(spec),
    )
    return "".join(f"# {line}\n" for line in statement(plan)) + text


# Megatron-LM's arguments for the profile's precision (FP8 through Transformer Engine's hybrid E4M3 / E5M2 recipe, the
# format of Megatron-LM's own Llama 3 FP8 example); fp32 is its default
MEGATRON_PRECISION = {"bf16": ["--bf16"], "fp8": ["--bf16", "--fp8-format", "hybrid"], "fp16": ["--fp16"]}
# Megatron FSDP shards in 16-bit and FP8 runs (its functional tests: bf16, fp8); fp16 and fp32 take the distributed optimizer
_MEGATRON_FSDP_PRECISIONS = ("bf16", "fp8")


def _layout_values(spec: Spec) -> dict[str, str]:
    """The plan's layout and the model's shape, for a skeleton that runs the plan's parallelism itself (Megatron-LM):
    tensor x pipeline x data as the estimate laid the run out, the shape MaxText's path is given too
    (setuppath._layout), and how the state is sharded (Megatron FSDP without pipeline stages, else the distributed
    optimizer). Learning rates: Megatron-LM's Llama 3 8B example for pre-training (1.5e-4 to 1e-5), the Hugging Face
    skeleton's full fine-tune rate (3e-5) for fine-tuning."""
    plan, v = spec.plan, spec.values
    row = training_stack(spec.stack) if spec.stack else {}
    shard = spec.skeleton_shards and plan.pipeline == 1 and plan.precision in _MEGATRON_FSDP_PRECISIONS
    tune = spec.profile.task == "fine-tuning"
    return {
        "tensor": str(plan.tensor), "pipeline": str(plan.pipeline), "data": str(plan.data),
        "layers": v.get("layers") or "0", "hidden": v.get("emb_dim") or "0", "heads": v.get("heads") or "0",
        "kv_heads": v.get("kv_heads") or "0", "head_dim": v.get("head_dim") or "0", "ffn": v.get("mlp_dim") or "0",
        "num_experts": v.get("num_experts") or "1", "experts_per_token": v.get("experts_per_token") or "1",
        "moe_ffn": v.get("moe_mlp_dim") or "0", "vocab": v.get("vocab") or str(vocab_size(spec.profile, load_constants())),
        "shard": str(shard), "precision_args": repr(MEGATRON_PRECISION.get(plan.precision, [])),
        "megatron_tag": str(row.get("tag") or ""), "lr": "3e-5" if tune else "1.5e-4", "min_lr": "3e-6" if tune else "1e-5",
    }


# the share of a GPU's memory train.py fills with the model's state and micro-batches (the allocator's fragmentation,
# CUDA context and NCCL buffers take the rest)
_MEMORY_USE = 0.9


def micro_batch(spec: Spec) -> int:
    """Sequences one GPU runs per forward/backward in train.py (the rest of its share of the global batch accumulates):
    as many as fit beside a whole copy of the training state (DistributedDataParallel holds one on each GPU; the
    estimate's memory.state_gb_total), at the estimate's checkpointed activations per sequence (memory.
    activations_gb_per_sequence, whole: train.py splits no layer over GPUs), at least 1 and at most the GPU's share of the
    global batch. 1 without an estimate."""
    est = spec.est
    memory = (est.assumptions.get("memory") or {}) if est is not None else {}
    if est is None or not est.memory_capacity_gb or not memory.get("activations_gb_per_sequence"):
        return 1
    per_seq = float(memory["activations_gb_per_sequence"])  # train.py splits no layer over GPUs
    free = _MEMORY_USE * est.memory_capacity_gb - float(memory.get("state_gb_total") or 0.0)
    share = max(1, -(-(spec.global_batch or 1) // max(1, est.count)))
    most = max(1, min(share, int(free // per_seq) if free > 0 else 1))
    return max(d for d in range(1, most + 1) if share % d == 0)  # a divisor of the share: no sequence is dropped


# torch dtypes of the profile precisions train.py computes in (quantized ones compute in bf16)
TORCH_DTYPE = {"fp32": "float32", "fp64": "float32", "bf16": "bfloat16", "fp16": "float16"}

def pip(spec: Spec) -> str:
    """The install line of the skeleton's stack on the configuration's device (rules/training-stacks.yaml)."""
    method = spec.profile.training.method if spec.profile.training else None
    fam = family(spec.device).setup
    return vendor_pip(stack_pip(spec.stack, fam.runtime or "", method), fam.vendor(spec.acc.vendor if spec.acc else None))


# A training over several machines of a Vertex AI custom job (a worker pool of one primary and one of the others, each
# the same container): torchrun on each meets at the primary, whose address Vertex AI gives every replica in CLUSTER_SPEC
# (cluster: pool name -> host:port list, workerpool0 the primary); its arguments in place of --standalone
# (https://cloud.google.com/vertex-ai/docs/training/distributed-training, "CLUSTER_SPEC")
CLUSTER_LAUNCH = (
    "import json, os, sys; c = json.loads(os.environ.get('CLUSTER_SPEC') or '{}').get('cluster', {}); "
    "hosts = [h for pool in sorted(c) for h in c[pool]]; head = hosts[0].rsplit(':', 1)[0] if hosts else 'localhost'; "
    "os.execvp('torchrun', ['torchrun', '--nnodes=%d' % max(1, len(hosts)), '--rdzv-backend=c10d', "
    "'--rdzv-endpoint=%s:29400' % head, '--rdzv-id=' + os.environ.get('CLOUD_ML_JOB_ID', 'train'), "
    "'--rdzv-conf=join_timeout=1800', *sys.argv[1:]])"
)


def entrypoint(spec: Spec) -> list[str]:
    """The container's entry point: the stack's, or over several machines (hosts above 1) its torchrun started with the
    job's rendezvous (CLUSTER_LAUNCH) in place of ``--standalone``."""
    row: list[str] = [str(w) for w in training_stack(spec.stack or "cuda")["entrypoint"]]
    several = spec.training and int(spec.values.get("hosts") or 1) > 1 and not family(spec.device).sliced
    if several and row[:2] == ["torchrun", "--standalone"]:
        return ["python3", "-c", CLUSTER_LAUNCH, *row[2:]]
    return row


def dockerfile(spec: Spec) -> str:
    """The training container: the stack's image, install line, environment and entry point."""
    row = training_stack(spec.stack or "cuda")
    runtime = family(spec.device).setup.runtime or ""
    lines = [
        f"# Training container for {spec.path.id}, generated by `advisor scaffold`.",
        "# gcloud builds submit (setup.sh) builds it from this directory.",
        f"FROM {per_runtime(row['image'], runtime)}",
        "WORKDIR /app",
        f"RUN {pip(spec)}",
        *(["RUN pip install google-cloud-secret-manager  # train.py reads HF_TOKEN_SECRET"] if train_model_id(spec) else []),
        "COPY train.py .",
        *(f"ENV {k}={v}" for k, v in (row.get("env") or {}).items()),
        "ENTRYPOINT " + json.dumps(entrypoint(spec)),
    ]
    return "\n".join(lines) + "\n"
