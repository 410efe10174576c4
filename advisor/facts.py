"""The fields rules may test: profile paths and derived facts, with their types.

The registry is generated from the pydantic models, so a new profile field is
usable in rules without touching this module; derived facts are listed in
``FACTS`` with their meaning (documented in docs/data-formats.md).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

from advisor.model_families import forward_flops
from advisor.models import Profile

Kind = Literal["number", "bool", "str", "enum", "list"]

# Fraction of the training FLOPs of full fine-tuning that LoRA/QLoRA spend:
# no weight-gradient GEMMs for frozen weights (forward 2N + input-gradient 2N
# of 6N). The estimator uses the sourced value from rules/estimator.yaml; the
# fact only needs the same order of magnitude for thresholds.
_PEFT_FLOPS_FACTOR = 4.0 / 6.0


@dataclass(frozen=True)
class FieldSpec:
    """A testable field: its kind and, for enums and enum lists, the allowed values."""

    path: str
    kind: Kind
    choices: tuple[str, ...] = ()
    optional: bool = False
    doc: str = ""


def _literal_values(tp: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in typing.get_args(tp))


def _spec_for(path: str, annotation: Any) -> FieldSpec | None:
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else annotation
        origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
        origin = typing.get_origin(annotation)
    if origin is Literal:
        return FieldSpec(path, "enum", _literal_values(annotation), optional)
    if origin is list:
        (item,) = typing.get_args(annotation)
        if typing.get_origin(item) is Literal:
            return FieldSpec(path, "list", _literal_values(item), optional)
        return FieldSpec(path, "list", (), optional)
    if annotation is bool:
        return FieldSpec(path, "bool", (), optional)
    if annotation in (int, float):
        return FieldSpec(path, "number", (), optional)
    if annotation is str:
        return FieldSpec(path, "str", (), optional)
    return None


def _walk(cls: type[BaseModel], prefix: str, out: dict[str, FieldSpec]) -> None:
    for name, info in cls.model_fields.items():
        path = f"{prefix}{name}"
        ann = info.annotation
        nested = [
            a
            for a in (typing.get_args(ann) or (ann,))
            if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if nested:
            if name == "proposal":
                continue  # what a pull request asks for is not evidence about the workload
            _walk(nested[0], f"{path}.", out)
            continue
        spec = _spec_for(path, ann)
        if spec is not None:
            out[path] = spec


@dataclass(frozen=True)
class Fact:
    spec: FieldSpec
    compute: Callable[[Profile], Any]


def _train_flops(p: Profile) -> float:
    if p.training is None:
        return 0.0
    # the rules' coarse view: the profile's formula with the CNN ratio of ResNet-50 (300 FLOPs/param/image)
    return p.training_flops(_PEFT_FLOPS_FACTOR if p.training.method != "full" else 1.0, 300.0, forward_flops(p))[0]


_IRREGULAR = {"branch-heavy", "elementwise-heavy", "sparse-access"}

FACTS: dict[str, Fact] = {
    f.spec.path: f
    for f in [
        Fact(FieldSpec("facts.is_training", "bool", doc="task is training or fine-tuning"), lambda p: p.is_training),
        Fact(FieldSpec("facts.is_inference", "bool", doc="task is inference"), lambda p: p.task == "inference"),
        Fact(
            FieldSpec("facts.active_params_b", "number",
                      doc="active parameters per token, billions (a recommender's embedding tables are gathered, not computed: "
                          "outside them)"),
            lambda p: p.active_dense_params / 1e9,
        ),
        Fact(FieldSpec("facts.train_flops", "number", doc="total training FLOPs (0 for inference)"), _train_flops),
        Fact(FieldSpec("facts.llm", "bool", doc="a language model (llm, or nlp transformer/moe)"), lambda p: p.is_language_model),
        Fact(
            FieldSpec("facts.llm_server", "bool", doc="inference an LLM server runs: a language model, or an LLM serving stack"),
            lambda p: p.serves_llm,
        ),
        Fact(
            FieldSpec("facts.large_llm", "bool", doc="a language model with >= 7 B active parameters"),
            lambda p: p.is_language_model and p.active_params_b >= 7,
        ),
        Fact(
            FieldSpec(
                "facts.matrix_dominated",
                "bool",
                doc="transformer/moe/cnn/diffusion without branch-heavy, elementwise-heavy or sparse-access traits",
            ),
            lambda p: p.model.architecture in ("transformer", "moe", "cnn", "diffusion")
            and not _IRREGULAR.intersection(p.model.traits),
        ),
        Fact(FieldSpec("facts.gcp_allowed", "bool", doc="gcp is among deployment.clouds"), lambda p: "gcp" in p.deployment.clouds),
        Fact(
            FieldSpec("facts.on_prem_only", "bool", doc="deployment.clouds is exactly [on-prem]"),
            lambda p: set(p.deployment.clouds) == {"on-prem"},
        ),
        Fact(
            FieldSpec("facts.output_tokens_per_s", "number", doc="peak generated tokens per second (inference)"),
            lambda p: p.inference.peak_qps * p.inference.output_tokens if p.inference and p.task == "inference" else 0.0,
        ),
        Fact(
            FieldSpec("facts.tokens_per_day", "number",
                      doc="tokens processed per day (inference): an offline job's requests_per_day, else peak QPS over its hours"),
            lambda p: p.inference.tokens_per_day if p.inference and p.task == "inference" else 0.0,
        ),
        Fact(
            FieldSpec("facts.cuda_dependent", "bool", doc="custom CUDA kernels or CUDA-only libraries"),
            lambda p: p.software.custom_cuda_kernels or bool(p.software.cuda_libraries),
        ),
        Fact(
            FieldSpec("facts.tpu_native_framework", "bool", doc="framework is jax, tensorflow or keras"),
            lambda p: p.software.framework in ("jax", "tensorflow", "keras"),
        ),
    ]
}


@cache
def field_specs() -> dict[str, FieldSpec]:
    """Every field a rule may test, profile paths first, then facts."""
    out: dict[str, FieldSpec] = {}
    _walk(Profile, "", out)
    out.update({name: fact.spec for name, fact in FACTS.items()})
    return out


class FieldReader:
    """Reads field values from one profile, computing each fact once."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._cache: dict[str, Any] = {}

    def get(self, path: str) -> Any:
        if path in self._cache:
            return self._cache[path]
        fact = FACTS.get(path)
        if fact is not None:
            value = fact.compute(self.profile)
        else:
            value = self.profile
            for part in path.split("."):
                value = getattr(value, part, None) if value is not None else None
        self._cache[path] = value
        return value
