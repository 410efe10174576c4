"""The read set: for each kind of task, every profile field, enumerated over the schema (not sampled),
either changes some output of `advisor recommend` when perturbed or draws a warning that it is not used.

Each leaf of the Profile schema is perturbed on a base profile of each kind (LLM training, sample-based
vision training, online LLM serving, offline batch LLM serving, diffusion serving): a field's value is
replaced by another valid one (the next choice of a Literal, a boolean flipped, a number doubled or halved, a
sample value for strings and lists; an absent block is filled from a sample). The recommendation (without the
what-ifs) must differ, or its warnings must name the field as not used. Fields that `advisor check` reads
instead (the proposal and the infrastructure match) are listed apart with that reason.
"""

from __future__ import annotations

import datetime as dt
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from advisor.api import Context, recommend_profile
from advisor.models import Profile

CTX = Context.load()
# read by `advisor check`, not by recommend: the proposal judged and the infrastructure it matches
CHECK_ONLY = {"proposal", "match"}
# read by `advisor scaffold`: the model the setup files load and the server's --max-model-len
SCAFFOLD_READS = {"model.hf_id": "meta-llama/Llama-3.1-8B", "model.context_tokens": 32768,
                  "inference.max_input_tokens": 8192, "inference.max_output_tokens": 4096}

KINDS: dict[str, dict[str, Any]] = {
    "llm-training": {"name": "k", "task": "training", "domain": "llm", "model": {"params_b": 8},
                     "training": {"tokens_b": 50, "seq_len": 4096}, "deployment": {"clouds": ["gcp", "aws"]}},
    "vision-training": {"name": "k", "task": "training", "domain": "vision", "model": {"params_b": 0.025, "architecture": "cnn"},
                        "training": {"samples": 1.28e6, "epochs": 10}, "deployment": {"clouds": ["gcp", "aws"]}},
    "llm-online": {"name": "k", "task": "inference", "domain": "llm", "model": {"params_b": 8},
                   "inference": {"peak_qps": 5, "input_tokens": 512, "output_tokens": 256}, "software": {"serving_stack": "vllm"},
                   "deployment": {"clouds": ["gcp", "aws"]}},
    "llm-batch": {"name": "k", "task": "inference", "domain": "llm", "model": {"params_b": 8},
                  "inference": {"mode": "batch", "requests_per_day": 50000, "input_tokens": 512, "output_tokens": 256},
                  "software": {"serving_stack": "vllm"}, "deployment": {"clouds": ["gcp", "aws"]}},
    "diffusion-serving": {"name": "k", "task": "inference", "domain": "diffusion", "model": {"params_b": 3.5, "architecture": "diffusion"},
                          "inference": {"peak_qps": 2, "input_tokens": 77, "output_tokens": 1}, "deployment": {"clouds": ["gcp", "aws"]}},
}
# a valid value for a block absent from the base profile, and for fields whose type needs a sample
SAMPLES: dict[str, Any] = {
    "model.attention": {"kind": "gqa", "kv_heads": 4},
    "model.embeddings": {"rows": 100_000, "dim": 16, "lookups_per_sample": 26},
    "training": {"tokens_b": 10, "seq_len": 2048},
    "inference": {"peak_qps": 3, "input_tokens": 256, "output_tokens": 128},
    "deployment.onprem": {"usd_per_kwh": 0.3},
    "deployment.owned": [{"accelerator": "h100", "count": 8}],
    "proposal": {"accelerator": "h100", "count": 8, "hours": 10},
}
# what a value needs beside it to be valid (a field that describes another attention kind, a task's block)
WITH = {"model.attention.kv_lora_rank": {"model.attention.kind": "mla"}, "model.attention.rope_dim": {"model.attention.kind": "mla"},
        "model.attention.window": {"model.attention.kind": "sliding"},
        # a generated image's size is both sides; a video's frames, a size each
        "inference.width": {"inference.height": 720}, "inference.height": {"inference.width": 1280},
        "inference.frames": {"inference.width": 1280, "inference.height": 720}}
STRINGS = {"model.hf_id": "meta-llama/Llama-3.1-8B", "model.family": "resnet-50", "deployment.region": "europe-west4",
           "name": "another name"}
LISTS = {
    "model.traits": ["branch-heavy"],
    "software.cuda_libraries": ["flash-attention"],
    "deployment.clouds": ["gcp"],
    "deployment.accelerators": ["h100", "tpu-v6e"],
    "deployment.regions": ["europe-west4"],
    "match": ["kubernetes:Deployment/default/x"],
}


def _leaves(model: type[BaseModel], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, f in model.model_fields.items():
        path = f"{prefix}{name}"
        ann = f.annotation
        sub = _submodel(ann)
        if sub is not None:
            out += _leaves(sub, path + ".")
        else:
            out.append((path, ann))
    return out


def _submodel(ann: Any) -> type[BaseModel] | None:
    args = typing.get_args(ann) if typing.get_origin(ann) in (typing.Union, types.UnionType) else (ann,)
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _get(d: dict[str, Any], path: str) -> Any:
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _set(d: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    import copy

    d = copy.deepcopy(d)
    keys = path.split(".")
    cur = d
    for i, k in enumerate(keys[:-1]):
        block = ".".join(keys[: i + 1])
        if not isinstance(cur.get(k), dict):
            cur[k] = copy.deepcopy(SAMPLES.get(block, {}))
        cur = cur[k]
    cur[keys[-1]] = value
    return d


def _candidates(path: str, ann: Any, current: Any) -> list[Any]:
    if path in STRINGS:
        return [STRINGS[path]]
    if path in LISTS:
        return [LISTS[path], []]
    args = [a for a in typing.get_args(ann) if a is not type(None)] if typing.get_origin(ann) in (typing.Union, types.UnionType) else [ann]
    out: list[Any] = []
    for a in args:
        origin = typing.get_origin(a)
        if origin is typing.Annotated:
            a = typing.get_args(a)[0]
            origin = typing.get_origin(a)
        if origin is typing.Literal:
            out += [v for v in typing.get_args(a) if v != current]
        elif a is bool:
            out += [not current] if current is not None else [True, False]  # an absent flag: either value, one is not its default
        elif a in (int, float):
            base = current if isinstance(current, (int, float)) and not isinstance(current, bool) else 1
            vals = [base * 2, base / 2, base * 1000, base + 1, 1, 100, 0.5, 0.01]
            out += [int(v) if a is int else float(v) for v in vals if (a is float or float(v).is_integer()) and v > 0]
        elif a is dt.date:
            out.append("2030-01-01")
        elif a is str:
            out.append("x")
        elif origin is list:
            out.append(SAMPLES.get(path, []))
    return out


def _output(data: dict[str, Any]) -> tuple[str, list[str]]:
    import json

    rec = recommend_profile(Profile.model_validate(data), CTX, with_flip=False)
    js = rec.to_json() if hasattr(rec, "to_json") else rec.__dict__
    js = {k: v for k, v in js.items() if k not in ("profile", "name")}
    return json.dumps(js, sort_keys=True, default=str), list(rec.warnings)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_is_read_or_warned(kind: str) -> None:
    base = KINDS[kind]
    ref, _ = _output(base)
    silent, unperturbable = [], []
    for path, ann in _leaves(Profile):
        if path.split(".")[0] in CHECK_ONLY or path in SCAFFOLD_READS:
            continue
        current = _get(base, path)
        tried = False
        for value in _candidates(path, ann, current):
            try:
                data = _set(base, path, value)
                for other, v in WITH.get(path, {}).items():
                    data = _set(data, other, v)
                if path == "task":  # a task needs its block
                    block = "inference" if value == "inference" else "training"
                    data.setdefault(block, SAMPLES[block])
                out, warnings = _output(data)
            except (ValidationError, ValueError, KeyError):
                continue
            tried = True
            if path == "name":
                break  # the name is echoed, never estimated
            if out != ref or any(path in w and "not used" in w for w in warnings):
                break
        else:
            (silent if tried else unperturbable).append(path)
    assert not unperturbable, f"{kind}: no valid perturbation for {unperturbable}"
    assert not silent, f"{kind}: fields that change nothing and draw no 'not used' warning: {silent}"


def test_the_fields_scaffold_reads_change_its_files(tmp_path: Any) -> None:
    import yaml

    from .conftest import run_cli

    def files(data: dict[str, Any], name: str) -> dict[str, str]:
        f = tmp_path / f"{name}.yaml"
        f.write_text(yaml.safe_dump(data))
        out = tmp_path / name
        r = run_cli("scaffold", str(f), "-o", str(out))
        assert r.code == 0, r.err
        return {p.name: p.read_text().replace(name, "X") for p in sorted(out.rglob("*")) if p.is_file()}

    base = KINDS["llm-online"]
    ref = files(base, "base")
    for path, value in SCAFFOLD_READS.items():
        assert files(_set(base, path, value), path.replace(".", "-")) != ref, path


def test_a_training_run_is_not_told_that_fields_it_reads_are_unused() -> None:
    # before: a MoE pre-train was warned that model.experts and model.attention (heads, head_dim, kind) were "not used",
    # though its attention FLOPs read the width attention computes at and its MoE factor the expert count (review 16)
    base = {"name": "k", "task": "training", "domain": "llm",
            "model": {"params_b": 30, "active_params_b": 3, "architecture": "moe", "layers": 48, "hidden_size": 2048,
                      "experts": 128, "experts_per_token": 8, "attention": {"kind": "gqa", "heads": 32, "head_dim": 128, "kv_heads": 4}},
            "training": {"tokens_b": 100, "seq_len": 32768}, "deployment": {"clouds": ["gcp"]}}
    rec = recommend_profile(Profile.model_validate(base), CTX, with_flip=False)
    unused = " ".join(w for w in rec.warnings if "not used" in w)
    for read in ("model.attention.heads", "model.attention.head_dim", "model.attention.kind", "model.experts,", "model.experts:"):
        assert read not in unused, (read, unused)
    assert "model.attention.kv_heads" in unused and "model.experts_per_token" in unused
    wide = _set(base, "model.attention.heads", 64)
    assert _output(wide)[0] != _output(base)[0]
