"""Estimator constants (``rules/estimator.yaml``) and scoring policy (``rules/scoring.yaml``).

Utilisation figures and overheads are measurements from published sources,
each with low/expected/high; policy values (how many points a cost ratio is
worth) are design choices and say so in their note.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from advisor.catalog import SourceRef
from advisor.knowledge import builtin_rules_dir
from advisor.models import Strict
from advisor.validation import load_table

SourceIds = Annotated[list[str], Field(min_length=1)]




class Range(Strict):
    low: Annotated[float, Field(gt=0)]
    expected: Annotated[float, Field(gt=0)]
    high: Annotated[float, Field(gt=0)]
    source: SourceIds
    note: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "Range":
        if not self.low <= self.expected <= self.high:
            raise ValueError("needs low <= expected <= high")
        return self


class MfuRow(Range):
    device: Literal["tpu", "gpu", "cpu"]
    stack: Literal["jax", "pytorch-xla", "pytorch", "megatron", "tensorflow"]
    accelerator: str | list[str] | None = None  # one catalog id, or several with the same compute die

    def applies_to(self, acc_id: str) -> bool:
        return acc_id == self.accelerator or (isinstance(self.accelerator, list) and acc_id in self.accelerator)


class Value(Strict):
    value: float
    source: SourceIds
    note: str | None = None


class StackFactor(Strict):
    """A factor measured for some serving stacks only (the others keep 1)."""

    value: Annotated[float, Field(gt=0)]
    stacks: list[str]
    source: SourceIds
    note: str | None = None


class FamilyStacks(Strict):
    """Per device family: the serving stacks that offer a feature."""

    tpu: list[str] = Field(default_factory=list)
    gpu: list[str] = Field(default_factory=list)
    cpu: list[str] = Field(default_factory=list)
    source: SourceIds
    note: str | None = None

    def stacks(self, device: str) -> list[str]:
        """Stacks that offer it on ``device``'s family."""
        found: list[str] = getattr(self, device, [])
        return found


class MultiHostServing(FamilyStacks):
    # per device family: the serving stacks that serve one replica from several hosts
    max_hosts_per_replica: Annotated[int, Field(ge=1)]
    cross_host_collective_us: Annotated[float, Field(gt=0)]


class KvReservation(Strict):
    """The share of a request's output tokens whose KV cache its serving stack holds for it on average
    while it runs, per stack: a paged engine that allocates on demand holds the context reached so far
    (over a request's life, input + half the output); one that reserves the longest request up front holds
    all of it. ``default`` for stacks without a row."""

    share: dict[str, Annotated[float, Field(ge=0, le=1)]]
    default: Annotated[float, Field(ge=0, le=1)] = 1.0
    source: SourceIds
    note: str | None = None

    def get(self, stack: str) -> float:
        return self.share.get(stack, self.default)


class EngineLimit(Strict):
    """One default of a serving engine (the most sequences it runs at once, the prompt tokens one forward
    takes) on a family: where the default depends on the chip, only on named chips (``accelerators``), from
    a memory size up, or except named chips."""

    device: Literal["tpu", "gpu", "cpu"]
    stack: str
    value: Annotated[int, Field(ge=1)]
    accelerators: list[str] = Field(default_factory=list)
    min_memory_gib: float | None = None
    except_accelerators: list[str] = Field(default_factory=list)


class EngineLimits(Strict):
    rows: list[EngineLimit]
    source: SourceIds
    note: str | None = None

    def get(self, acc: Any, stack: str) -> int | None:
        """The first row for the chip's family and the stack that applies to the chip."""
        for row in self.rows:
            if row.device != acc.device or row.stack != stack or acc.id in row.except_accelerators:
                continue
            if row.accelerators and acc.id not in row.accelerators:
                continue
            if row.min_memory_gib is not None and acc.specs.memory_gib < row.min_memory_gib:
                continue
            return row.value
        return None


class LatencyBudgets(Strict):
    """The prompt-token budgets per step a latency target may set below the stack's default (smaller budgets: shorter
    decode steps where a prompt chunk shares them), and the stacks whose setup writes the budget."""

    values: list[Annotated[int, Field(ge=1)]]
    stacks: list[str]
    source: SourceIds
    note: str | None = None


class InferenceConstants(Strict):
    decode_bandwidth_utilisation: Range
    prefill_mfu: Range
    tpu_decode_bandwidth_utilisation: Range | None = None
    cpu_decode_bandwidth_utilisation: Range | None = None
    tpu_prefill_mfu: Range | None = None
    tpu_kv_read_factor: StackFactor | None = None
    moe_routed_share: Value
    decode_mfu: Range | None = None
    gpu_step_overhead_per_layer_us: Value
    tpu_step_overhead_ms: Value
    tp_allreduce_us: Value
    target_utilisation: Value
    unattainable_latency_slack: Value
    default_ttft_ms: Value
    default_tpot_ms: Value
    max_concurrency: Value
    multi_host_serving: MultiHostServing
    # per device family: the stacks that serve a mixture of experts with data-parallel attention
    data_parallel_attention: FamilyStacks | None = None
    prefill_token_budget: EngineLimits | None = None  # prompt tokens one prefill forward takes by default
    latency_prefill_budget: LatencyBudgets | None = None  # smaller budgets a p99 latency or TPOT target may set
    engine_max_num_seqs: EngineLimits | None = None
    kv_reserved_output: KvReservation | None = None

    def _own(self, key: str | None, name: str) -> Any:
        """A family's own figure, ``<key>_<name>`` (key: rules/families.yaml decode_utilisation), or None."""
        return getattr(self, f"{key}_{name}", None) if key else None

    def decode_utilisation(self, key: str | None) -> Range:
        """The decode bandwidth utilisation of a family (its own where sourced, else the GPU one)."""
        own: Range | None = self._own(key, "decode_bandwidth_utilisation")
        return own or self.decode_bandwidth_utilisation

    def kv_read_factor(self, key: str | None, stack: str) -> float:
        """How many times longer a family's decode step takes to read a byte of KV cache than a byte
        of weights (``<key>_kv_read_factor`` for the stacks it was fitted on, else 1)."""
        own: StackFactor | None = self._own(key, "kv_read_factor")
        return float(own.value) if own is not None and stack in own.stacks else 1.0

    def prefill_utilisation(self, key: str | None) -> Range:
        """The LLM prefill MFU of a family (its own ``<key>_prefill_mfu`` where sourced)."""
        own: Range | None = self._own(key, "prefill_mfu")
        return own or self.prefill_mfu


class FineTuning(Strict):
    lora_flops_factor: Value
    qlora_flops_factor: Value
    lora_trainable_fraction: Value


class Memory(Strict):
    optimizer_bytes_per_param_full: Value
    activation_overhead_fraction: Value
    serving_memory_reserve_fraction: Value
    logits_bytes_per_token_per_vocab: Value
    default_vocab_size: Value


class Overheads(Strict):
    xla_compile_minutes: Range
    startup_minutes: Range


class PowerLaw(Strict):
    coefficient: Annotated[float, Field(gt=0)]
    exponent: float
    source: SourceIds
    note: str | None = None


class Scaling(Strict):
    batch_size_law: PowerLaw
    # the most of its peak (at the precision computed in) any scenario of a training run reaches
    mfu_ceiling: Value
    default_finetune_batch_tokens: Value
    default_sample_batch: Value
    max_model_parallel: Value
    max_pipeline_parallel: Value
    pipeline_virtual_stages: Value
    dp_bytes_per_param_full: Value
    network_efficiency: Value
    dp_overlap: Value
    pcie_gbyte_per_s: Value
    failure_rate_per_chip_hour: Value
    failure_cost_hours: Value
    default_deadline_hours: Value
    knee_speedup_per_doubling: Value


class RequestFlops(Strict):
    diffusion_flops_per_param_per_step: Value
    diffusion_default_steps: Value
    # a diffusion transformer's latent tokens: pixels per token side (VAE downsampling x patch) and video frames
    # per latent frame (the VAE's temporal stride)
    dit_pixels_per_token: Value
    dit_frames_per_latent_frame: Value
    vision_flops_per_param: Value


class DeviceValue(Value):
    device: Literal["tpu", "gpu", "cpu"]


class WorkloadConstants(Strict):
    cnn_mfu_factor: list[DeviceValue]
    all_to_all_efficiency: Value


class SmallModel(Value):
    applies_below_params_b: Annotated[float, Field(gt=0)]


class ReferenceChip(Strict):
    """The chip a family's fitted constants stand on (tests check these figures against its catalog entry)."""

    accelerator: str  # a catalog id
    flop_per_byte: Annotated[float, Field(gt=0)]  # its dense 16-bit peak FLOP/s over its HBM bytes/s
    matmul: dict[str, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)  # its specs.attained
    memory: Annotated[float, Field(gt=0, le=1)] | None = None
    # the family's own memory-bound share (training_intensity.value where absent): fitted on its own fit rows
    k: Annotated[float, Field(ge=0, lt=1)] | None = None


class TrainingIntensity(Value):
    """The memory-bound share of a training step: MFU falls with the chip's FLOP-to-byte ratio
    (peak FLOP/s at the training precision over HBM bytes/s) as 1 / (1 + k x ratio), relative
    to the family's reference chip, on which the stack's MFU rows were measured; k is the family's
    own (reference.k) where fitted, else ``value``."""

    reference: dict[str, ReferenceChip]  # family -> the chip its MFU rows describe

    def k(self, family: str) -> float:
        ref = self.reference.get(family)
        return ref.k if ref is not None and ref.k is not None else self.value


# The levels a fitted constant can be set at, from the most general to the most specific; a
# configuration takes the most specific row that matches it (docs/estimator.md "Levels").
LEVELS = ("global", "family", "generation", "stack", "vendor", "routing", "precision")
LevelName = Literal["global", "family", "generation", "stack", "vendor", "routing", "precision"]
# Which of two matching rows a configuration takes, the most specific last: a vendor spans its generations
# (an NVIDIA row covers H100 and B200), so a generation's own row outranks it, and a stack's (Megatron on
# whatever chip) outranks both; a mixture of experts' routing (coarse: a few large experts) says more about its
# efficiency than the chip it runs on, so it outranks those.
PRECEDENCE = ("global", "family", "vendor", "generation", "stack", "routing", "precision")
# the attribute each level adds to the match (a row may also narrow by the levels above it)
LEVEL_KEY = {"family": "device", "generation": "accelerator", "stack": "stack", "vendor": "vendor", "routing": "routing",
             "precision": "precision"}
# A mixture of experts with at most this many routed experts is coarse (Mixtral 8x7B / 8x22B, Grok-1: eight large
# experts, top-2, each GEMM as wide as a dense model's); more, fine-grained (DeepSeek-V3 256, Qwen3 128, gpt-oss 128).
COARSE_EXPERTS = 8
MIN_FIT_ROWS = 3
MIN_FIT_SOURCES = 2
# the smallest..largest of n fit rows holds a new row with probability (n - 1) / (n + 1) (order statistics of n
# exchangeable draws): a level's low..high is a range of its own (80%) only from 9 fit rows
MIN_SPREAD_ROWS = 9


class LevelRow(Strict):
    """One fitted value of a constant at one level: global, or for a family, a generation (catalog
    id), a stack, a vendor, a mixture of experts' routing (coarse / fine) or a precision. Below global it needs >= 3 fit rows of
    tests/data/published.yaml from >= 2 independent publications; otherwise the configuration
    inherits the level above. low / high: the spread of the fit rows at that level."""

    constant: str
    level: LevelName
    match: dict[str, str] = Field(default_factory=dict)
    value: Annotated[float, Field(gt=0)]
    low: Annotated[float, Field(gt=0)]
    high: Annotated[float, Field(gt=0)]
    fit_rows: list[str]
    fit_sources: list[str]
    source: SourceIds
    note: str | None = None

    @model_validator(mode="after")
    def _supported(self) -> "LevelRow":
        if not self.low <= self.value <= self.high:
            raise ValueError("needs low <= value <= high")
        if self.level == "global":
            if self.match:
                raise ValueError("a global row matches everything: no 'match'")
            return self
        key = LEVEL_KEY[self.level]
        if key not in self.match:
            raise ValueError(f"a {self.level} row needs match.{key}")
        if len(self.fit_rows) < MIN_FIT_ROWS or len(set(self.fit_sources)) < MIN_FIT_SOURCES:
            raise ValueError(
                f"{self.constant} at level {self.level} ({self.match}) has {len(self.fit_rows)} fit rows from "
                f"{len(set(self.fit_sources))} sources: a level of its own needs >= {MIN_FIT_ROWS} rows from >= "
                f"{MIN_FIT_SOURCES} independent sources; leave it to the level above"
            )
        return self

    def matches(self, attrs: dict[str, str]) -> bool:
        return all(attrs.get(k) == v for k, v in self.match.items())

    def describe(self) -> dict[str, Any]:
        """What an estimate states about the level it used."""
        where = ", ".join(f"{k} {v}" for k, v in self.match.items())
        return {
            "level": self.level + (f" ({where})" if where else ""), "value": self.value, "low": self.low, "high": self.high,
            "fit_rows": len(self.fit_rows), "fit_sources": sorted(set(self.fit_sources)),
        }


class EstimatorConstants(Strict):
    schema_version: Literal[1]
    sources: dict[str, SourceRef]
    training_mfu: Annotated[list[MfuRow], Field(min_length=1)]
    small_model_factor: SmallModel
    training_intensity: TrainingIntensity
    inference: InferenceConstants
    fine_tuning: FineTuning
    memory: Memory
    overheads: Overheads
    scaling: Scaling
    request_flops: RequestFlops
    workloads: WorkloadConstants
    levels: list[LevelRow] = Field(default_factory=list)

    def level(self, constant: str, attrs: dict[str, str]) -> LevelRow | None:
        """The most specific row of ``constant`` whose match holds for ``attrs`` (None: no row)."""
        rows = [r for r in self.levels if r.constant == constant and r.matches(attrs)]
        return max(rows, key=lambda r: (len(r.match), PRECEDENCE.index(r.level))) if rows else None

    def spread(self, constant: str, attrs: dict[str, str]) -> LevelRow | None:
        """The most specific row of ``constant`` for ``attrs`` whose low..high rests on MIN_SPREAD_ROWS fit rows or
        more: the range a value from ``level`` carries (a level of 3 rows has its own value, but its smallest..largest
        holds a new measurement only half the time; the level above, of more rows, gives the range)."""
        rows = [r for r in self.levels if r.constant == constant and r.matches(attrs) and len(r.fit_rows) >= MIN_SPREAD_ROWS]
        return max(rows, key=lambda r: (len(r.match), PRECEDENCE.index(r.level))) if rows else self.level(constant, attrs)


class Scoring(Strict):
    schema_version: Literal[1]
    cost_points_per_doubling: Value
    cost_points_max: Value
    no_feasible_penalty: Value
    confidence_scale_points: Value
    balanced_cost_slack: Value
    time_cost_slack: Value
    time_price_exponent: Value
    unmet_target_time_slack: Value
    balanced_deadline_margin: Value
    materiality_floor_usd: Value
    materiality_budget_fraction: Value
    tie_points: Value
    budget_overrun_for_full_penalty: Value
    cost_tie_fraction: Value
    latency_tie_fraction: Value
    nearest_family_margin: Value


@dataclass(frozen=True)
class Constants:
    estimator: EstimatorConstants
    scoring: Scoring


@cache
def load_constants() -> Constants:
    root = builtin_rules_dir()
    est = load_table(root / "estimator.yaml", EstimatorConstants)
    sc = load_table(root / "scoring.yaml", Scoring)
    return Constants(est, sc)
