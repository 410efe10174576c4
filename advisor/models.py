"""The workload profile: the input contract of DESIGN.md as pydantic models.

Every model forbids unknown keys. Numbers are finite and bounded so that an
absurd input is refused with its accepted range instead of producing an
absurd (or infinite) estimate.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Task = Literal["training", "fine-tuning", "inference"]
Domain = Literal[
    "llm", "nlp", "vision", "diffusion", "speech", "recommendation", "scientific", "tabular", "other"
]
Architecture = Literal["transformer", "moe", "cnn", "diffusion", "rnn", "gnn", "tree", "other"]
Precision = Literal["fp64", "fp32", "bf16", "fp16", "fp8", "int8", "int4"]
# Bytes one value takes at each precision (weights, KV cache, gradients).
PRECISION_BYTES: dict[str, float] = {"fp64": 8.0, "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
Trait = Literal[
    "branch-heavy",
    "elementwise-heavy",
    "sparse-access",
    "host-io-bound",
    "huge-embeddings",
    "custom-ops-in-loop",
]
Method = Literal["full", "lora", "qlora"]
Mode = Literal["online", "batch"]
Framework = Literal["pytorch", "jax", "tensorflow", "keras", "other"]
ServingStack = Literal["vllm", "tgi", "jetstream", "triton", "tensorrt-llm", "sglang", "none"]
# the serving stacks that are LLM servers (Profile.serves_llm)
LLM_SERVERS = ("vllm", "tgi", "jetstream", "tensorrt-llm", "sglang")
CudaLibrary = Literal[
    "deepspeed", "megatron", "flash-attention", "tensorrt", "apex", "bitsandbytes", "xformers",
    "triton-kernels", "onnxruntime",
]


def _registry_ids(table: str, key: str) -> tuple[str, ...]:
    """The ids of a registry in ``rules/`` (its ``key`` mapping's keys, in the file's order): a
    contract's choices are the registry's own, never a second list kept by hand."""
    import yaml

    from advisor.validation import builtin_rules_dir

    with open(builtin_rules_dir() / table, encoding="utf-8") as f:  # a shipped file; the C safe loader, every run reads it
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return tuple(str(k) for k in data[key])


if TYPE_CHECKING:
    Cloud = str
    Device = str
else:
    Cloud = Literal[_registry_ids("clouds.yaml", "clouds")]  # rules/clouds.yaml
    Device = Literal[_registry_ids("families.yaml", "families")]  # rules/families.yaml
Pricing = Literal["on-demand", "spot", "committed-1y", "committed-3y"]
# How a team is willing to obtain capacity (rules/capacity.yaml kinds): dws is GCP's Dynamic Workload Scheduler flex-start,
# reservation a calendar-mode reservation / EC2 Capacity Block or a negotiated one, committed a committed-use term
Procurement = Literal["on-demand", "spot", "dws", "reservation", "committed"]
EdgeDevice = Literal["android", "jetson"]
Experience = Literal["none", "some", "expert"]
Optimize = Literal["cost", "time", "balanced"]

# Bounds: generous for real workloads, tight enough to keep every estimate finite.
PositiveBillions = Annotated[float, Field(strict=True, gt=0, le=1_000_000, allow_inf_nan=False)]
Count = Annotated[int, Field(strict=True, gt=0, le=100_000_000)]


class Strict(BaseModel):
    """Base of every input model: unknown keys are errors, values immutable and finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)



class Embeddings(Strict):
    """Embedding tables of a recommender (DLRM-style): held in accelerator memory, sharded over chips."""

    rows: Annotated[int, Field(strict=True, gt=0, le=10**13)]  # rows over all tables
    dim: Annotated[int, Field(strict=True, gt=0, le=100_000)]
    lookups_per_sample: Annotated[int, Field(strict=True, gt=0, le=1_000_000)]  # rows read per sample, all tables
    tables: Annotated[int, Field(strict=True, gt=0, le=1_000_000)] | None = None  # pooled vectors per sample
    precision: Precision | None = None  # of the tables; model.precision when absent

    @property
    def params(self) -> float:
        return float(self.rows) * self.dim


AttentionKind = Literal["mha", "gqa", "mla", "sliding"]
KvCacheDtype = Literal["auto", "bf16", "fp16", "fp8", "int8"]


class Attention(Strict):
    """How the model attends, which sets its KV cache (all optional; defaults documented)."""

    kind: AttentionKind = "gqa"
    kv_heads: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    head_dim: Annotated[int, Field(strict=True, gt=0, le=100_000)] | None = None
    # query heads: with head_dim, the width attention computes at (heads x head_dim), which need not be
    # hidden_size (Qwen3-32B: 64 x 128 = 8,192 on a 5,120 model; gpt-oss-120b: 64 x 64 = 4,096 on 2,880)
    heads: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    # MLA (DeepSeek-V2/V3): the cached latent and the decoupled RoPE key per token per layer
    kv_lora_rank: Annotated[int, Field(strict=True, gt=0, le=1_000_000)] | None = None
    rope_dim: Annotated[int, Field(strict=True, gt=0, le=100_000)] | None = None
    # sliding window: tokens each windowed layer keeps, and the share of layers that are windowed
    window: Annotated[int, Field(strict=True, gt=0, le=100_000_000)] | None = None
    sliding_fraction: Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)] = 1.0

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> "Attention":
        if self.kind != "mla" and (self.kv_lora_rank is not None or self.rope_dim is not None):
            raise ValueError("kv_lora_rank and rope_dim describe kind: mla")
        if self.kind != "sliding" and self.window is not None:
            raise ValueError("window describes kind: sliding")
        return self


class Model(Strict):
    params_b: Annotated[float, Field(strict=True, gt=0, le=100_000, allow_inf_nan=False)]
    active_params_b: Annotated[float, Field(strict=True, gt=0, le=100_000, allow_inf_nan=False)] | None = None
    architecture: Architecture = "transformer"
    precision: Precision = "bf16"
    # Weight-only quantisation: the stored weights' precision where it differs from the compute precision
    # (AWQ/GPTQ int4 weights with bf16 activations; gpt-oss's MXFP4 experts served with fp8 or bf16 activations).
    # Sets the weights' memory and the bytes each decode step reads; FLOPs run at model.precision.
    weights_precision: Precision | None = None
    layers: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    hidden_size: Annotated[int, Field(strict=True, gt=0, le=1_000_000)] | None = None
    kv_heads: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    attention: Attention | None = None
    experts_per_token: Annotated[int, Field(strict=True, gt=0, le=1_000)] | None = None  # MoE top-k routing
    experts: Annotated[int, Field(strict=True, gt=1, le=100_000)] | None = None  # MoE routed experts per MoE layer
    context_tokens: Annotated[int, Field(strict=True, gt=0, le=100_000_000)] | None = None
    # tokens of the language-model head's vocabulary: training keeps the fp32 logits of each sequence for the loss
    vocab_size: Annotated[int, Field(strict=True, gt=0, le=10_000_000)] | None = None
    # FLOPs of one forward pass over one sample (a 224x224 image for ResNet-152: ~23e9); training
    # counts 3x (forward and backward), serving 1x per request.
    flops_per_sample: Annotated[float, Field(strict=True, gt=0, le=1e18, allow_inf_nan=False)] | None = None
    # Pasted into setup commands and manifests, so only a Hugging Face id's own alphabet.
    hf_id: (
        Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")] | None
    ) = None
    # A known architecture of rules/model-families.yaml (resnet-152, vit-b-16, whisper-large-v3, ...):
    # its sourced FLOPs per sample replace the params-based guess.
    family: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9]+([.-][a-z0-9]+)*$")] | None = None
    embeddings: Embeddings | None = None
    traits: list[Trait] = Field(default_factory=list, max_length=16)

    @model_validator(mode="after")
    def _active_not_above_total(self) -> "Model":
        if self.experts is not None and self.experts_per_token is not None and self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) cannot exceed experts ({self.experts})")
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError(
                f"active_params_b ({self.active_params_b:g}) cannot exceed params_b "
                f"({self.params_b:g})"
            )
        if self.embeddings is not None and self.embeddings.params > self.params_b * 1e9 * 1.01:
            raise ValueError(
                f"params_b ({self.params_b:g}) must include the embedding tables "
                f"({self.embeddings.params / 1e9:g} B parameters: rows x dim)"
            )
        return self

    @property
    def weight_bytes(self) -> float:
        """Bytes per stored weight: model.weights_precision, else model.precision."""
        return PRECISION_BYTES[self.weights_precision or self.precision]

    @property
    def dense_params_b(self) -> float:
        """Parameters outside the embedding tables (all of them without model.embeddings)."""
        if self.embeddings is None:
            return self.params_b
        return max(self.params_b - self.embeddings.params / 1e9, self.params_b * 1e-4)


def _tokens_or_samples_schema(schema: dict[str, Any]) -> None:
    """JSON Schema: tokens_b or samples (the model fills tokens_b from samples)."""
    required = [r for r in schema.get("required", []) if r != "tokens_b"]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    schema["anyOf"] = [{"required": ["tokens_b"]}, {"required": ["samples"]}]


class Training(Strict):
    model_config = ConfigDict(**Strict.model_config, json_schema_extra=_tokens_or_samples_schema)

    tokens_b: PositiveBillions  # filled from samples for non-token workloads (one sample = one unit)
    # Non-token workloads (vision, recommendation, ...): samples over the whole run (images x epochs).
    samples: Annotated[float, Field(strict=True, gt=0, le=1e15, allow_inf_nan=False)] | None = None
    seq_len: Annotated[int, Field(strict=True, gt=0, le=10_000_000)] = 2048
    method: Method = "full"
    deadline_hours: Annotated[float, Field(strict=True, gt=0, le=1_000_000, allow_inf_nan=False)] | None = None
    global_batch: Annotated[int, Field(strict=True, gt=0, le=100_000_000)] | None = None
    # With samples: passes over them (samples is then one epoch); absent: samples is the whole run.
    epochs: Annotated[float, Field(strict=True, gt=0, le=1_000_000, allow_inf_nan=False)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _tokens_or_samples(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("tokens_b") is not None:
            return data
        samples = data.get("samples")
        if samples is None:
            raise ValueError("training needs tokens_b (token workloads) or samples (images, rows, examples)")
        if isinstance(samples, (int, float)) and not isinstance(samples, bool) and samples > 0:
            # a sample counts as one unit of work: one 'token' in a 'sequence' of one
            epochs = data.get("epochs")
            scale = float(epochs) if isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and epochs > 0 else 1.0
            data = {**data, "tokens_b": float(samples) * scale / 1e9}
            data.setdefault("seq_len", 1)
        return data

    @property
    def sample_based(self) -> bool:
        return self.samples is not None

    @property
    def total_samples(self) -> float:
        """Samples over the whole run (samples x epochs)."""
        return (self.samples or 0.0) * (self.epochs or 1.0)


class Inference(Strict):
    mode: Mode = "online"
    peak_qps: Annotated[float, Field(strict=True, gt=0, le=10_000_000, allow_inf_nan=False)] = 1.0
    input_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] = 512
    output_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] = 256
    # the longest request the server must accept (default: input_tokens / output_tokens)
    max_input_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None = None
    max_output_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None = None
    # the 99th percentile of the generated length, where the user knows it (logs); else it follows from the mean
    # under a constant chance of stopping, capped at max_output_tokens (advisor/estimate/tail.py)
    output_tokens_p99: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None = None
    latency_p99_ms: Annotated[float, Field(strict=True, gt=0, le=86_400_000, allow_inf_nan=False)] | None = None
    # p99 targets for the time to first token and the time per output token (LLM serving)
    ttft_p99_ms: Annotated[float, Field(strict=True, gt=0, le=86_400_000, allow_inf_nan=False)] | None = None
    tpot_p99_ms: Annotated[float, Field(strict=True, gt=0, le=86_400_000, allow_inf_nan=False)] | None = None
    hours_per_day: Annotated[float, Field(strict=True, gt=0, le=24, allow_inf_nan=False)] = 24.0
    steps: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None  # diffusion denoising steps
    min_replicas: Annotated[int, Field(strict=True, ge=1, le=100_000)] = 1  # kept running whatever the load
    kv_cache_dtype: KvCacheDtype = "auto"  # auto: 1 byte for fp8/int8/int4 weights, else 2
    # Share of the input tokens whose KV cache the server already holds (prefix caching: a shared system
    # prompt, the earlier turns of a conversation); their prefill is not computed again (LLM serving).
    prefix_cache_hit_rate: Annotated[float, Field(strict=True, ge=0, lt=1, allow_inf_nan=False)] = 0.0
    # How a mixture of experts' replica splits its attention over its chips: tensor (by head, as plain
    # tensor parallelism), data (each chip attends for its own requests, the experts split over all: vLLM
    # --data-parallel-size with --enable-expert-parallel, SGLang --enable-dp-attention) or auto (the cheaper).
    attention_parallel: Literal["auto", "tensor", "data"] = "auto"
    # An offline batch job (mode: batch) has a volume and a window, not a peak rate: requests it must
    # finish per day, within window_hours of each day (default hours_per_day). Replicas run at saturation.
    requests_per_day: Annotated[float, Field(strict=True, gt=0, le=1e13, allow_inf_nan=False)] | None = None
    window_hours: Annotated[float, Field(strict=True, gt=0, le=24, allow_inf_nan=False)] | None = None
    # What a diffusion request generates: an image of width x height pixels, or a video of that many frames. A
    # diffusion transformer computes over latent tokens that follow from them (docs/estimator.md "Diffusion").
    width: Annotated[int, Field(strict=True, gt=0, le=16_384)] | None = None
    height: Annotated[int, Field(strict=True, gt=0, le=16_384)] | None = None
    frames: Annotated[int, Field(strict=True, gt=0, le=100_000)] | None = None
    # Classifier-free guidance: each denoising step runs the model twice (with and without the prompt); a
    # guidance-distilled model (FLUX.1-schnell, 4-step distillations) runs it once.
    classifier_free_guidance: bool = True

    @model_validator(mode="after")
    def _generated_size(self) -> "Inference":
        if (self.width is None) != (self.height is None):
            raise ValueError("inference.width and inference.height go together (the generated image's pixels)")
        if self.frames is not None and self.width is None:
            raise ValueError("inference.frames needs inference.width and inference.height (the size of each frame)")
        return self

    @property
    def generated_pixels(self) -> tuple[int, int, int] | None:
        """(width, height, frames) of what a diffusion request generates, where the profile says."""
        if self.width is None or self.height is None:
            return None
        return self.width, self.height, self.frames or 1

    @property
    def run_hours_per_day(self) -> float:
        """Hours a day the replicas run and are priced: an offline job's window, else hours_per_day."""
        return (self.window_hours or self.hours_per_day) if self.mode == "batch" else self.hours_per_day

    @property
    def tokens_per_day(self) -> float:
        """Tokens (input + output) a day: an offline job's volume, else the peak rate over the hours served."""
        per_request = self.input_tokens + self.output_tokens
        if self.mode == "batch" and self.requests_per_day is not None:
            return self.requests_per_day * per_request
        return self.peak_qps * per_request * 3600 * self.run_hours_per_day


class Software(Strict):
    framework: Framework = "pytorch"
    serving_stack: ServingStack = "none"
    custom_cuda_kernels: bool = False
    dynamic_shapes: bool = False
    fp64: bool = False
    cuda_libraries: list[CudaLibrary] = Field(default_factory=list, max_length=16)
    # Where a hot-path library does not run on a family, size that family with the nearest
    # equivalent of docs/reference/software.md (bf16 LoRA for QLoRA on TPU) instead of excluding it.
    accept_equivalents: bool = False


class Owned(Strict):
    accelerator: Annotated[str, Field(min_length=1, max_length=64)]
    count: Annotated[int, Field(strict=True, ge=1, le=1_000_000)]


class OnPrem(Strict):
    """Overrides of the catalog's on-prem cost defaults (catalog.yaml ``onprem``)."""

    usd_per_kwh: Annotated[float, Field(strict=True, ge=0, le=10, allow_inf_nan=False)] | None = None
    pue: Annotated[float, Field(strict=True, ge=1, le=5, allow_inf_nan=False)] | None = None
    amortisation_years: Annotated[float, Field(strict=True, gt=0, le=30, allow_inf_nan=False)] | None = None
    hosting_usd_per_chip_month: Annotated[float, Field(strict=True, ge=0, le=1e6, allow_inf_nan=False)] | None = None
    # Share of the hours the hardware does useful work: the fixed cost is charged per used hour.
    utilisation: Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)] | None = None
    # Buy the hardware: only then is a catalog chip priced at its amortised purchase on-prem
    # (hardware the team already has goes in deployment.owned).
    purchase: bool = False
    # Weeks from order to a working cluster (default: the catalog's onprem.lead_time_weeks).
    lead_time_weeks: Annotated[float, Field(strict=True, ge=0, le=520, allow_inf_nan=False)] | None = None


class Deployment(Strict):
    clouds: list[Cloud] = Field(default_factory=lambda: list[Cloud](["gcp"]), min_length=1, max_length=8)
    edge: bool = False
    # The end device of an edge deployment (rules/edge-devices.yaml): its own runtime and setup route.
    edge_device: EdgeDevice | None = None
    region: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")] | None = None
    # Where it may run (data residency): a hard constraint, each cloud in its own listed regions.
    regions: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")]], Field(min_length=1, max_length=32)
    ] | None = None
    pricing: Pricing = "on-demand"
    # The procurement kinds the team accepts (one, or a list): a count no accepted kind delivers is infeasible, never
    # bought some other way. Absent: any kind, escalating from the one `pricing` names (rules/capacity.yaml order).
    procurement: Procurement | Annotated[list[Procurement], Field(min_length=1, max_length=5)] | None = None
    # Only these catalog ids are considered (a team with access to one chip, a published chip).
    accelerators: Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]], Field(max_length=64)] | None = None
    # Hardware the team already has: sized within it first (no price: chip-hours), more only if it is not enough.
    owned: Annotated[list[Owned], Field(max_length=64)] | None = None
    # One machine the user owns (a workstation, a laptop): sized on local devices and the CPU only.
    local: bool = False
    # What owning hardware costs (on-prem and local machines): overrides of the catalog defaults.
    onprem: OnPrem | None = None


class Team(Strict):
    tpu_experience: Experience = "none"
    gpu_experience: Experience = "some"


class Goal(Strict):
    optimize: Optimize = "balanced"
    budget_usd: Annotated[float, Field(strict=True, gt=0, le=1e12, allow_inf_nan=False)] | None = None


class Waiver(Strict):
    rule: Annotated[str, Field(min_length=1, max_length=100)]
    reason: Annotated[str, Field(max_length=2000)] = ""
    owner: Annotated[str, Field(max_length=200)] | None = None
    expires: dt.date | None = None


class Proposal(Strict):
    accelerator: Annotated[str, Field(min_length=1, max_length=64)]
    count: Count
    hours: Annotated[float, Field(strict=True, gt=0, le=1_000_000, allow_inf_nan=False)]
    waivers: list[Waiver] = Field(default_factory=list, max_length=100)


class Profile(Strict):
    name: Annotated[str, Field(min_length=1, max_length=200)]
    task: Task
    domain: Domain = "other"
    model: Model
    training: Training | None = None
    inference: Inference | None = None
    software: Software = Field(default_factory=Software)
    deployment: Deployment = Field(default_factory=Deployment)
    team: Team = Field(default_factory=Team)
    goal: Goal = Field(default_factory=Goal)
    proposal: Proposal | None = None
    # CI gate: the infrastructure resources this profile describes (Terraform addresses,
    # Kubernetes Kind/namespace/name, SkyPilot files; glob patterns allowed).
    match: Annotated[list[Annotated[str, Field(min_length=1, max_length=500)]], Field(max_length=200)] | None = None

    @model_validator(mode="after")
    def _task_block(self) -> "Profile":
        if self.task in ("training", "fine-tuning") and self.training is None:
            raise ValueError(f"task {self.task!r} needs a 'training:' block (tokens_b, seq_len, ...)")
        if self.task == "inference" and self.inference is None:
            raise ValueError("task 'inference' needs an 'inference:' block (peak_qps, ...)")
        return self

    @property
    def is_training(self) -> bool:
        return self.task in ("training", "fine-tuning")

    @property
    def is_diffusion(self) -> bool:
        """A diffusion model (domain or architecture): denoising steps, an image or video a request."""
        return self.domain == "diffusion" or self.model.architecture == "diffusion"

    @property
    def is_language_model(self) -> bool:
        """The one test of "is this an LLM" (the rules' ``facts.llm``): domain llm, or an nlp
        transformer/MoE. How a model decodes is the estimator's own question
        (``replica.is_llm_inference``: autoregressive generation, speech and TTS included)."""
        return self.domain == "llm" or (self.domain == "nlp" and self.model.architecture in ("transformer", "moe"))

    @property
    def serves_llm(self) -> bool:
        """Inference that an LLM server runs (the rules' ``facts.llm_server``; the scaffold's serving files): a
        language model, or a profile whose serving stack is one (vLLM, SGLang, TGI, TensorRT-LLM, JetStream).
        Triton and ``none`` with another model (diffusion, vision, speech) serve it some other way."""
        return self.task == "inference" and (self.software.serving_stack in LLM_SERVERS or self.is_language_model)

    @property
    def active_params_b(self) -> float:
        return self.model.active_params_b or self.model.params_b

    @property
    def active_dense_params(self) -> float:
        """Parameters one token passes through, outside the embedding tables (the 6 N D of training,
        the 12 x layers x hidden^2 of a transformer's shape)."""
        return min(self.active_params_b, self.model.dense_params_b) * 1e9

    def training_flops(
        self, method_factor: float, flops_per_param_per_sample: float, family_flops: float | None = None,
    ) -> tuple[float, str, bool]:
        """(FLOPs of the whole run, the formula in words, whether it was assumed rather than given).

        Tokens: 6 x active params x tokens (x the LoRA/QLoRA factor). Samples: 3 x forward FLOPs
        per sample x samples x epochs (forward and backward), the forward FLOPs from
        model.flops_per_sample, else the model.family table (``family_flops``), else a CNN takes
        ``flops_per_param_per_sample`` x params per forward pass and anything else 2 x params
        (outside the embedding tables).
        """
        t = self.training
        assert t is not None
        m = self.model
        dense = self.active_dense_params
        if not t.sample_based:
            flops = 6.0 * dense * t.tokens_b * 1e9 * method_factor
            what = "active params" if m.embeddings is None else "dense (non-embedding) params"
            return flops, f"6 x {what} x tokens" + (f" x {method_factor:g} ({t.method})" if method_factor != 1 else ""), False
        samples = t.total_samples
        run = "training.samples" + (" x training.epochs" if t.epochs else "")
        if m.flops_per_sample:
            return 3.0 * m.flops_per_sample * samples * method_factor, f"3 x model.flops_per_sample x {run}", False
        if family_flops:
            return 3.0 * family_flops * samples * method_factor, f"3 x forward FLOPs of {m.family} (model.family table) x {run}", False
        per = flops_per_param_per_sample if m.architecture == "cnn" else 2.0
        return (
            3.0 * per * dense * samples * method_factor,
            f"3 x {per:g} FLOPs per parameter per sample x params x {run} (ASSUMED: set model.flops_per_sample or model.family)",
            m.embeddings is None,
        )
