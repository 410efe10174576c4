"""The workload profile: the input contract of DESIGN.md as pydantic models.

Every model forbids unknown keys. Numbers are finite and bounded so that an
absurd input is refused with its accepted range instead of producing an
absurd (or infinite) estimate.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Task = Literal["training", "fine-tuning", "inference"]
Domain = Literal[
    "llm", "nlp", "vision", "diffusion", "speech", "recommendation", "scientific", "tabular", "other"
]
Architecture = Literal["transformer", "moe", "cnn", "diffusion", "rnn", "gnn", "tree", "other"]
Precision = Literal["fp64", "fp32", "bf16", "fp16", "fp8", "int8", "int4"]
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
CudaLibrary = Literal[
    "deepspeed", "megatron", "flash-attention", "tensorrt", "apex", "bitsandbytes", "xformers"
]
Cloud = Literal["gcp", "aws", "azure", "oci", "on-prem"]
Pricing = Literal["on-demand", "spot", "committed-1y", "committed-3y"]
Experience = Literal["none", "some", "expert"]
Optimize = Literal["cost", "time", "balanced"]
Device = Literal["tpu", "gpu", "cpu", "edge"]

# Bounds: generous for real workloads, tight enough to keep every estimate finite.
PositiveBillions = Annotated[float, Field(strict=True, gt=0, le=1_000_000, allow_inf_nan=False)]
Count = Annotated[int, Field(strict=True, gt=0, le=100_000_000)]


class Strict(BaseModel):
    """Base of every input model: unknown keys are errors, values immutable and finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)



class Model(Strict):
    params_b: Annotated[float, Field(strict=True, gt=0, le=100_000, allow_inf_nan=False)]
    active_params_b: Annotated[float, Field(strict=True, gt=0, le=100_000, allow_inf_nan=False)] | None = None
    architecture: Architecture = "transformer"
    precision: Precision = "bf16"
    layers: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    hidden_size: Annotated[int, Field(strict=True, gt=0, le=1_000_000)] | None = None
    kv_heads: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None
    context_tokens: Annotated[int, Field(strict=True, gt=0, le=100_000_000)] | None = None
    # FLOPs of one forward pass over one sample (a 224x224 image for ResNet-152: ~23e9); training
    # counts 3x (forward and backward), serving 1x per request.
    flops_per_sample: Annotated[float, Field(strict=True, gt=0, le=1e18, allow_inf_nan=False)] | None = None
    # Pasted into setup commands and manifests, so only a Hugging Face id's own alphabet.
    hf_id: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")] | None = None
    traits: list[Trait] = Field(default_factory=list, max_length=16)

    @model_validator(mode="after")
    def _active_not_above_total(self) -> Model:
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError(
                f"active_params_b ({self.active_params_b:g}) cannot exceed params_b "
                f"({self.params_b:g})"
            )
        return self


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
            data = {**data, "tokens_b": float(samples) / 1e9}
            data.setdefault("seq_len", 1)
        return data

    @property
    def sample_based(self) -> bool:
        return self.samples is not None


class Inference(Strict):
    mode: Mode = "online"
    peak_qps: Annotated[float, Field(strict=True, gt=0, le=10_000_000, allow_inf_nan=False)] = 1.0
    input_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] = 512
    output_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] = 256
    # the longest request the server must accept (default: input_tokens / output_tokens)
    max_input_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None = None
    max_output_tokens: Annotated[int, Field(strict=True, ge=0, le=10_000_000)] | None = None
    latency_p99_ms: Annotated[float, Field(strict=True, gt=0, le=86_400_000, allow_inf_nan=False)] | None = None
    hours_per_day: Annotated[float, Field(strict=True, gt=0, le=24, allow_inf_nan=False)] = 24.0
    steps: Annotated[int, Field(strict=True, gt=0, le=10_000)] | None = None  # diffusion denoising steps
    min_replicas: Annotated[int, Field(strict=True, ge=1, le=100_000)] = 1  # kept running whatever the load


class Software(Strict):
    framework: Framework = "pytorch"
    serving_stack: ServingStack = "none"
    custom_cuda_kernels: bool = False
    dynamic_shapes: bool = False
    fp64: bool = False
    cuda_libraries: list[CudaLibrary] = Field(default_factory=list, max_length=16)


class Owned(Strict):
    accelerator: Annotated[str, Field(min_length=1, max_length=64)]
    count: Annotated[int, Field(strict=True, ge=1, le=1_000_000)]


class OnPrem(Strict):
    """Overrides of the catalog's on-prem cost defaults (catalog.yaml ``onprem``)."""

    usd_per_kwh: Annotated[float, Field(strict=True, ge=0, le=10, allow_inf_nan=False)] | None = None
    pue: Annotated[float, Field(strict=True, ge=1, le=5, allow_inf_nan=False)] | None = None
    amortisation_years: Annotated[float, Field(strict=True, gt=0, le=30, allow_inf_nan=False)] | None = None
    hosting_usd_per_chip_month: Annotated[float, Field(strict=True, ge=0, le=1e6, allow_inf_nan=False)] | None = None


class Deployment(Strict):
    clouds: list[Cloud] = Field(default_factory=lambda: list[Cloud](["gcp"]), min_length=1, max_length=8)
    edge: bool = False
    region: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")] | None = None
    pricing: Pricing = "on-demand"
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
    def _task_block(self) -> Profile:
        if self.task in ("training", "fine-tuning") and self.training is None:
            raise ValueError(f"task {self.task!r} needs a 'training:' block (tokens_b, seq_len, ...)")
        if self.task == "inference" and self.inference is None:
            raise ValueError("task 'inference' needs an 'inference:' block (peak_qps, ...)")
        return self

    @property
    def is_training(self) -> bool:
        return self.task in ("training", "fine-tuning")

    @property
    def is_language_model(self) -> bool:
        """The one test of "is this an LLM" (the rules' ``facts.llm``): domain llm, or an nlp
        transformer/MoE. How a model decodes is the estimator's own question
        (``estimator.is_llm_inference``: autoregressive generation, speech and TTS included)."""
        return self.domain == "llm" or (self.domain == "nlp" and self.model.architecture in ("transformer", "moe"))

    @property
    def active_params_b(self) -> float:
        return self.model.active_params_b or self.model.params_b

    def training_flops(self, method_factor: float, flops_per_param_per_sample: float) -> tuple[float, str, bool]:
        """(FLOPs of the whole run, the formula in words, whether it was assumed rather than given).

        Tokens: 6 x active params x tokens (x the LoRA/QLoRA factor). Samples: 3 x
        model.flops_per_sample x samples (forward and backward); without flops_per_sample a CNN
        takes ``flops_per_param_per_sample`` x params per forward pass, anything else 2 x params.
        """
        t = self.training
        assert t is not None
        m = self.model
        if not t.sample_based:
            flops = 6.0 * self.active_params_b * 1e9 * t.tokens_b * 1e9 * method_factor
            return flops, "6 x active params x tokens" + (f" x {method_factor:g} ({t.method})" if method_factor != 1 else ""), False
        samples = t.samples or 0.0
        if m.flops_per_sample:
            return 3.0 * m.flops_per_sample * samples * method_factor, "3 x model.flops_per_sample x training.samples", False
        per = flops_per_param_per_sample if m.architecture == "cnn" else 2.0
        return (
            3.0 * per * self.active_params_b * 1e9 * samples * method_factor,
            f"3 x {per:g} FLOPs per parameter per sample x params x samples (ASSUMED: set model.flops_per_sample)",
            True,
        )
