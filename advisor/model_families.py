"""Model families: sourced per-sample forward FLOPs of common non-token architectures (``rules/model-families.yaml``).

Selected by ``model.family``; used by the training FLOPs (3 x forward x samples x epochs), the
per-request serving FLOPs and the rule facts. Loaded once per process; a profile naming a family
that is not in the table is refused at load time with the known ids.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import datetime as dt
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from advisor.models import Profile, Strict
from advisor.validation import builtin_rules_dir, load_table

Kind = Literal["vision", "diffusion", "speech", "encoder"]


class Source(Strict):
    url: Annotated[str, Field(min_length=1, max_length=1000)]
    retrieved: dt.date
    note: Annotated[str, Field(max_length=4000)] | None = None


class Family(Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9]+([.-][a-z0-9]+)*$", max_length=64)]
    kind: Kind
    forward_flops: Annotated[float, Field(gt=0, le=1e18)]  # per image / denoising step / 30 s window / token
    decoder_flops_per_token: Annotated[float, Field(gt=0, le=1e15)] | None = None
    # an encoder-decoder's cross-attention cache: values (keys and values, every decoder layer, every encoder position)
    # one request holds while its transcript is decoded
    cross_kv_values: Annotated[float, Field(gt=0, le=1e12)] | None = None
    params_m: Annotated[float, Field(gt=0, le=1e7)]
    resolution: Annotated[int, Field(gt=0, le=100_000)] | None = None
    # the longest input its position embeddings take (an encoder's learned positions: BERT's 512): the context a
    # server of it accepts where the profile gives none (model.context_tokens)
    context_tokens: Annotated[int, Field(gt=0, le=10_000_000)] | None = None
    # the unit its serving cost is quoted in ("per audio hour") and how many requests make one
    unit: Annotated[str, Field(min_length=1, max_length=60)] | None = None
    requests_per_unit: Annotated[float, Field(gt=0, le=1e12)] | None = None
    source: Annotated[list[str], Field(min_length=1)]
    note: Annotated[str, Field(max_length=2000)] | None = None


class FamilyTable(Strict):
    schema_version: Literal[1]
    sources: dict[str, Source]
    families: Annotated[list[Family], Field(min_length=1)]

    @model_validator(mode="after")
    def _refs(self) -> "FamilyTable":
        ids = [f.id for f in self.families]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate family ids")
        for f in self.families:
            missing = [s for s in f.source if s not in self.sources]
            if missing:
                raise ValueError(f"{f.id}: unknown source ids {missing}")
        return self

    def get(self, fid: str | None) -> Family | None:
        return next((f for f in self.families if f.id == fid), None) if fid else None


def table_path() -> Path:
    return builtin_rules_dir() / "model-families.yaml"


@cache
def load_families() -> FamilyTable:
    return load_table(table_path(), FamilyTable)


def family_of(profile: Profile) -> Family | None:
    return load_families().get(profile.model.family)


def forward_flops(profile: Profile) -> float | None:
    """Forward FLOPs of one training sample from the family table (None without model.family)."""
    fam = family_of(profile)
    return fam.forward_flops if fam is not None else None
