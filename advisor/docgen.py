"""Generated artifacts: the JSON Schemas under ``schemas/`` and the references under ``docs/reference/``.

Everything here is derived from the code and the data (the pydantic models,
``rules/``), so it cannot drift: ``python -m advisor.docgen`` rewrites the
files, ``python -m advisor.docgen --check`` lists the stale ones (exit 1), and
a test fails when a committed file differs from what this module produces.
The output is deterministic: sorted keys, no dates, no absolute paths.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

    from advisor.conditions import Condition
    from advisor.knowledge import Rule

SchemaKind = Literal["profile", "rules", "catalog"]
SCHEMA_KINDS: tuple[SchemaKind, ...] = ("profile", "rules", "catalog")
SCHEMA_BASE_URL = "https://raw.githubusercontent.com/advisor-project/advisor/main/schemas/"
GENERATOR = "python -m advisor.docgen"

# One sentence per profile field: the JSON Schema ``description`` (editor
# hover text), the field reference and the comments of ``advisor init``.
FIELD_DOCS: dict[str, str] = {
    "name": "Free-text name of the workload, shown in every output.",
    "task": "What the accelerators will do: train from scratch, fine-tune, or serve.",
    "domain": "Kind of model; decides which heuristics apply (llm and nlp transformers count as language models).",
    "model": "The model being trained or served.",
    "model.params_b": "Total parameters, billions.",
    "model.active_params_b": "Mixture-of-experts: parameters active per token, billions (at most params_b).",
    "model.architecture": "Model family; matrix-dominated families (transformer, moe, cnn, diffusion) suit TPUs.",
    "model.precision": "Numeric precision of weights and compute.",
    "model.layers": "Number of layers; estimated from params_b when absent.",
    "model.hidden_size": "Hidden (model) dimension; estimated from params_b when absent.",
    "model.kv_heads": "Key/value heads (grouped-query attention); sizes the KV cache.",
    "model.experts_per_token": "Mixture of experts: routed experts each token goes to (top-k), which sizes the expert-parallel all-to-all of a serving replica spread over several chips. Default 2 (Mixtral); DeepSeek-V3 and Qwen3-MoE route to 8.",
    "model.attention": "Attention format, which sets the KV cache per token (optional; absent: grouped-query attention with model.kv_heads).",
    "model.attention.kind": "gqa (default) or mha: 2 x layers x kv_heads x head_dim values per token; mla (DeepSeek-V2/V3 multi-head latent attention): layers x (kv_lora_rank + rope_dim) values; sliding: like gqa, but windowed layers keep at most `window` tokens.",
    "model.attention.kv_heads": "Key/value heads (overrides model.kv_heads). Default: 8 for models of 7B parameters or more, else one per 128 of hidden size (full attention).",
    "model.attention.head_dim": "Dimension of one attention head. Default 128 (Llama, Mistral, Qwen, Gemma-2).",
    "model.attention.kv_lora_rank": "MLA: dimension of the cached key/value latent. Default 512 (DeepSeek-V2 and V3).",
    "model.attention.rope_dim": "MLA: dimension of the decoupled RoPE key cached beside the latent. Default 64 (DeepSeek-V2 and V3).",
    "model.attention.window": "Sliding window: tokens each windowed layer attends to and caches (Mistral 7B v0.1: 4096; Gemma 3 local layers: 1024). Default 4096.",
    "model.attention.sliding_fraction": "Sliding window: share of layers that are windowed; the rest attend to the whole context (Gemma 3: 5/6). Default 1.",
    "model.context_tokens": "Maximum context length, tokens.",
    "model.flops_per_sample": "FLOPs of one forward pass over one sample (an image, a row); training counts 3x per sample. ResNet-152 at 224x224: ~23e9.",
    "model.hf_id": "Hugging Face model id, used in the setup commands (for example meta-llama/Llama-3.1-8B-Instruct).",
    "model.family": "A known architecture (resnet-152, vit-b-16, yolov8x, sdxl, whisper-large-v3, bert-base, ...; docs/reference/model-families.md): its sourced FLOPs per sample replace the parameter-based guess.",
    "model.embeddings": "Recommendation models: the embedding tables, held in accelerator memory sharded over the chips, read per sample and exchanged all-to-all.",
    "model.embeddings.rows": "Rows over all embedding tables.",
    "model.embeddings.dim": "Embedding dimension (values per row).",
    "model.embeddings.lookups_per_sample": "Rows read per sample over all tables (multi-hot features count each id).",
    "model.embeddings.tables": "Pooled vectors per sample exchanged all-to-all (usually the number of tables); lookups_per_sample when absent.",
    "model.embeddings.precision": "Precision of the tables; model.precision when absent.",
    "model.traits": "Properties of the computation that matter for TPUs (irregular access, custom ops, host I/O).",
    "training": "Required when task is training or fine-tuning.",
    "training.tokens_b": "Tokens processed over the whole run, billions (epochs x dataset tokens).",
    "training.samples": "Non-token workloads: samples processed over the whole run (images x epochs); replaces tokens_b, with FLOPs from model.flops_per_sample.",
    "training.seq_len": "Sequence length, tokens.",
    "training.method": "Full training, or parameter-efficient fine-tuning (LoRA, QLoRA).",
    "training.epochs": "With samples: passes over them (samples is then one epoch); absent: samples is the whole run.",
    "training.deadline_hours": "Wall-clock hours the run must finish in.",
    "training.global_batch": "Sequences per optimiser step; bounds how many chips data parallelism can use.",
    "inference": "Required when task is inference.",
    "inference.mode": "online: requests with a latency target; batch: offline, each replica at saturation (the largest batch memory and the serving engine allow).",
    "inference.peak_qps": "Requests per second at peak; sizes the number of replicas (online; batch jobs give requests_per_day instead).",
    "inference.requests_per_day": "Offline batch jobs (mode: batch): requests to finish per day; with window_hours it sizes the replicas, each run at saturation. Absent: one replica at saturation, its throughput reported.",
    "inference.window_hours": "Offline batch jobs: hours per day the job may run to finish requests_per_day (default hours_per_day); prices the month.",
    "inference.input_tokens": "Prompt tokens per request.",
    "inference.output_tokens": "Generated tokens per request.",
    "inference.max_input_tokens": "Longest prompt the server must accept, tokens (default: inference.input_tokens); "
    "the generated serving flags (--max-model-len) use max input + max output.",
    "inference.max_output_tokens": "Longest generation the server must allow, tokens (default: inference.output_tokens).",
    "inference.latency_p99_ms": "End-to-end latency target per request (p99), milliseconds.",
    "inference.hours_per_day": "Hours per day the service runs; prices the month.",
    "inference.steps": "Diffusion models: denoising steps per request.",
    "inference.kv_cache_dtype": "Precision of the KV cache, a serving flag independent of the weights (vLLM/SGLang --kv-cache-dtype): auto (default) stores it in 1 byte for fp8/int8/int4 weights and 2 otherwise; fp8 or int8 halve a bf16 cache.",
    "inference.min_replicas": "Replicas kept running whatever the load (availability, zones); priced even when the peak needs fewer.",
    "software": "Framework, serving stack and CUDA dependencies.",
    "software.framework": "Training or model framework.",
    "software.serving_stack": "Inference server (none for training or custom serving).",
    "software.custom_cuda_kernels": "Hand-written CUDA/Triton kernels on the hot path (must be ported for TPUs).",
    "software.dynamic_shapes": "Tensor shapes change from step to step (forces XLA recompiles on TPUs).",
    "software.fp64": "Needs double precision (TPUs have none).",
    "software.cuda_libraries": "GPU libraries the code uses; where one has no kernels for a family (docs/reference/software.md) that family is excluded unless accept_equivalents.",
    "software.accept_equivalents": "Size families where a hot-path library does not run with its nearest equivalent (bf16 LoRA for QLoRA on TPU) instead of excluding them.",
    "deployment": "Where the workload may run.",
    "deployment.clouds": "Clouds the team may use (TPUs need gcp).",
    "deployment.edge": "Runs on phones, cars or IoT devices rather than in a data centre.",
    "deployment.region": "Preferred cloud region, used in prices and setup commands.",
    "deployment.pricing": "Price kind used for costs.",
    "deployment.accelerators": "Only these catalog ids are considered (aliases accepted); a family with none listed is excluded.",
    "deployment.owned": "Hardware the team already has: the run is sized within it first, costed at its running cost only (power and hosting, price kind 'owned (running cost)'; chip-hours where the chip's power is not in the catalog), and other configurations are suggested only when it is not enough.",
    "deployment.owned[].accelerator": "Catalog id of an owned accelerator (aliases accepted).",
    "deployment.owned[].count": "How many of that accelerator the team owns (chips, not nodes).",
    "deployment.local": "One machine the user owns (a workstation, a laptop): sized on local devices (workstation GPUs, Apple silicon) and the CPU, costed at the machine's running cost (power at the local PUE, no hosting; price kind 'owned (running cost)').",
    "deployment.onprem": "What owning hardware costs, overriding the catalog's sourced defaults (`advisor catalog --format json` shows them): on-prem chips are priced at (purchase / amortisation + hosting) / utilisation + TDP x PUE x $/kWh (price kind 'on-prem (amortised)'); owned and local ones at the running cost only.",
    "deployment.onprem.usd_per_kwh": "Electricity price in USD per kWh (default: the catalog's, from EIA commercial-sector prices).",
    "deployment.onprem.pue": "Power usage effectiveness of the data centre, >= 1 (default: the catalog's, from the Uptime Institute survey; local machines use 1.0 unless this is set).",
    "deployment.onprem.amortisation_years": "Years over which the purchase price is spread (per used hour: see utilisation) (default: the catalog's, from hyperscaler server useful lives).",
    "deployment.onprem.hosting_usd_per_chip_month": "Rack space, network and operations per chip per month in USD (default: the catalog's stated assumption; 0 for local machines unless this is set).",
    "deployment.onprem.utilisation": "Share of hours (0-1] the bought hardware does useful work: the fixed part (amortised purchase + hosting) is charged per used hour, fixed / utilisation, while power is charged only for used hours (default: the catalog's 0.8, LBNL's 75-85 % for GPU servers as quoted by Uptime Institute; set your fleet's own figure). Owned and local hardware keep the running-cost basis.",
    "team": "What the team already knows.",
    "team.tpu_experience": "Experience with TPUs (JAX, PyTorch/XLA).",
    "team.gpu_experience": "Experience with GPUs (CUDA, PyTorch).",
    "goal": "What to optimise and the budget.",
    "goal.optimize": "Pick the cheapest, the fastest, or a balance of both among feasible configurations.",
    "goal.budget_usd": "Budget ceiling, USD: for the run (training) or per month (inference).",
    "proposal": "What an infrastructure proposal asks for; judged by advisor check.",
    "proposal.accelerator": "Catalog id or alias of the accelerator asked for (advisor catalog lists them).",
    "proposal.count": "Chips or GPUs asked for in total; for inference advisor splits them into replicas of a real single-host shape.",
    "proposal.hours": "Hours asked for: run length (training) or hours per month (inference).",
    "match": "CI gate: the infrastructure this profile describes: Terraform addresses, Kubernetes Kind/namespace/name or SkyPilot files (glob patterns); advisor check links those resources to this workload.",
    "match[]": "One Terraform address, Kubernetes Kind/namespace/name or SkyPilot file path (glob patterns allowed).",
    "proposal.waivers": "Accepted exceptions to check findings, each with a reason and an expiry.",
    "proposal.waivers[].rule": "Id of the check finding waived.",
    "proposal.waivers[].reason": "Why the exception is accepted (required for the waiver to count).",
    "proposal.waivers[].owner": "Who accepted the exception.",
    "proposal.waivers[].expires": "Date the waiver stops counting (YYYY-MM-DD).",
}

RULE_DOCS: dict[str, str] = {
    "id": "Stable kebab-case id; equals the file name without .yaml.",
    "title": "One line: what the rule says.",
    "category": "Grouping for listings.",
    "when": "Condition tree over profile fields and derived facts (all / any / not / {field, op, value}).",
    "effect": "Points for a device family (device + points), or an exclusion (exclude).",
    "reason": "One sentence: why, applied to the profile.",
    "fix": "What would change the outcome (porting route, setting to change).",
    "source": "A seed claim (seed:S-A2.1) or an https:// documentation URL; a list is allowed.",
    "examples": "The rule's own tests: partial profiles that fire it and that do not.",
    "aliases": "Former ids that still resolve to this rule.",
}

OP_TEXT: dict[str, str] = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "lte": "<=",
    "gt": ">",
    "gte": ">=",
    "in": "in",
    "not_in": "not in",
    "contains": "contains",
    "contains_any": "contains any of",
}

OP_DOCS: dict[str, str] = {
    "eq": "equals the value",
    "ne": "differs from the value",
    "lt": "number below the value (false when the field is unset)",
    "lte": "number at most the value (false when unset)",
    "gt": "number above the value (false when unset)",
    "gte": "number at least the value (false when unset)",
    "in": "one of the listed values",
    "not_in": "none of the listed values",
    "contains": "the list field holds the value",
    "contains_any": "the list field shares an element with the listed values",
    "is_set": "value true: the optional field has a value (a list: is non-empty); false: it has none",
}


# --------------------------------------------------------------------------- helpers


def flow(value: Any) -> str:
    """A value as it is written in YAML (flow style)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def number(value: float) -> str:
    """A number without exponent notation, so that YAML reads it back as a number."""
    if not math.isfinite(value):
        return str(value)  # nan / inf: not a YAML number, so validation names the field
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def leaf_text(field: str, op: str, value: Any) -> str:
    if op == "is_set":
        return f"{field} {'is set' if value else 'is not set'}"
    return f"{field} {OP_TEXT.get(op, op)} {flow(value)}"


def condition_lines(cond: Condition, depth: int = 0) -> list[str]:
    """A condition tree as indented lines: ``all of:`` / ``any of:`` / ``not:`` over leaves."""
    from advisor.conditions import All, AnyOf, Leaf

    pad = "  " * depth
    if isinstance(cond, Leaf):
        return [pad + leaf_text(cond.field, cond.op, cond.value)]
    if isinstance(cond, (All, AnyOf)):
        head = "all of:" if isinstance(cond, All) else "any of:"
        return [pad + head] + [line for c in cond.items for line in condition_lines(c, depth + 1)]
    return [pad + "not:", *condition_lines(cond.item, depth + 1)]


def condition_json(cond: Condition) -> Any:
    """A condition tree back in its YAML/JSON form."""
    from advisor.conditions import All, AnyOf, Leaf

    if isinstance(cond, Leaf):
        value = list(cond.value) if isinstance(cond.value, tuple) else cond.value
        return {"field": cond.field, "op": cond.op, "value": value}
    if isinstance(cond, All):
        return {"all": [condition_json(c) for c in cond.items]}
    if isinstance(cond, AnyOf):
        return {"any": [condition_json(c) for c in cond.items]}
    return {"not": condition_json(cond.item)}


def rule_json(rule: Rule) -> dict[str, Any]:
    effect: dict[str, Any] = (
        {"exclude": list(rule.exclude)} if rule.exclude else {"device": rule.device, "points": rule.points}
    )
    return {
        "id": rule.id,
        "title": rule.title,
        "category": rule.category,
        "effect": effect,
        "effect_text": rule.effect_text,
        "sources": list(rule.sources),
    }


def rule_file(rule: Rule) -> str:
    """The rule's file relative to its rule directory's parent (``rules/heuristics/x.yaml``)."""
    from advisor.knowledge import builtin_rules_dir

    path = Path(rule.path).resolve()
    try:
        return "rules/" + path.relative_to(builtin_rules_dir().resolve()).as_posix()
    except ValueError:
        return rule.path


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- JSON Schema


def _annotate(schema: dict[str, Any], docs: dict[str, str]) -> None:
    """Add ``description`` from ``docs`` to every property reached by a documented path."""
    for row in iter_fields(schema):
        text = docs.get(row.path)
        if text:
            row.prop["description"] = text


def _condition_defs() -> dict[str, Any]:
    from advisor.conditions import OPERATORS
    from advisor.facts import field_specs

    cond = {"$ref": "#/$defs/Condition"}
    return {
        "Condition": {
            "description": "A condition: {all: [...]}, {any: [...]}, {not: ...} or a leaf {field, op, value}.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"all": {"type": "array", "items": cond, "minItems": 1}},
                    "required": ["all"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"any": {"type": "array", "items": cond, "minItems": 1}},
                    "required": ["any"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"not": cond},
                    "required": ["not"],
                    "additionalProperties": False,
                },
                {"$ref": "#/$defs/Leaf"},
            ],
        },
        "Leaf": {
            "description": "Compare one profile field or derived fact with a value.",
            "type": "object",
            "properties": {
                "field": {"enum": sorted(field_specs()), "description": "A profile path or a facts.* fact."},
                "op": {"enum": list(OPERATORS), "description": "Operator; checked against the field's type on load."},
                "value": {"description": "Scalar, list (in, not_in, contains_any) or boolean (is_set)."},
            },
            "required": ["field", "op", "value"],
            "additionalProperties": False,
        },
    }


def json_schema(kind: SchemaKind) -> dict[str, Any]:
    """JSON Schema of a profile, a rule file or the catalog, from the pydantic models."""
    meta: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE_URL}{kind}.schema.json",
    }
    if kind == "profile":
        from advisor.models import Profile

        schema = Profile.model_json_schema()
        _annotate(schema, FIELD_DOCS)
        meta["title"] = "advisor workload profile"
        meta["description"] = (
            "A workload for `advisor recommend` / `advisor check`: required are name, task, "
            "model.params_b and the training: or inference: block the task needs."
        )
    elif kind == "rules":
        from advisor.knowledge import RuleSpec

        schema = RuleSpec.model_json_schema()
        props = schema["properties"]
        props["when"] = {"$ref": "#/$defs/Condition"}
        item = props["source"]["items"]
        props["source"] = {"anyOf": [item, {k: v for k, v in props["source"].items() if k != "title"}]}
        schema.setdefault("$defs", {}).update(_condition_defs())
        for name, text in RULE_DOCS.items():
            props[name]["description"] = text
        meta["title"] = "advisor rule (rules/heuristics/*.yaml)"
        meta["description"] = "One heuristic of the knowledge base, with its own examples."
    elif kind == "catalog":
        from advisor.catalog import CatalogFile

        schema = CatalogFile.model_json_schema()
        meta["title"] = "advisor accelerator catalog (rules/catalog.yaml)"
        meta["description"] = "Accelerator specs, shapes and prices, each with a source and an as-of date."
    else:  # pragma: no cover - guarded by the Literal
        raise ValueError(f"unknown schema kind {kind!r}")
    schema.pop("title", None)
    schema.pop("description", None)
    return {**meta, **schema}


def schema_text(kind: SchemaKind) -> str:
    return dumps(json_schema(kind))


# --------------------------------------------------------------------------- field walk


@dataclass
class FieldRow:
    path: str
    prop: dict[str, Any]
    resolved: dict[str, Any]
    nullable: bool
    required: bool


def _resolve(schema: dict[str, Any], prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The property's own schema with ``$ref`` followed and ``anyOf [X, null]`` unwrapped."""
    nullable = False
    node = prop
    options = node.get("anyOf")
    if options:
        rest = [o for o in options if o.get("type") != "null"]
        if len(rest) < len(options) and len(rest) == 1:
            nullable = True
            node = rest[0]
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = schema["$defs"][ref.removeprefix("#/$defs/")]
    return node, nullable


def iter_fields(schema: dict[str, Any], node: dict[str, Any] | None = None, prefix: str = "") -> Iterator[FieldRow]:
    """Every property of an object schema, depth first, nested objects and lists of objects included."""
    node = schema if node is None else node
    required = set(node.get("required", []))
    for name, prop in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        resolved, nullable = _resolve(schema, prop)
        yield FieldRow(path, prop, resolved, nullable, name in required)
        if resolved.get("type") == "object" and "properties" in resolved:
            yield from iter_fields(schema, resolved, f"{path}.")
        elif resolved.get("type") == "array":
            item, _ = _resolve(schema, resolved.get("items", {}))
            if item.get("type") == "object" and "properties" in item:
                yield from iter_fields(schema, item, f"{path}[].")


def _model_defaults(cls: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Field path -> default value (factories called); nested models walked, sections skipped."""
    from pydantic import BaseModel

    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        path = f"{prefix}{name}"
        if not info.is_required():
            value = info.get_default(call_default_factory=True)
            if not isinstance(value, BaseModel):
                out[path] = value
        for sub, suffix in _nested_models(info.annotation):
            out.update(_model_defaults(sub, f"{path}{suffix}."))
    return out


def _nested_models(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _nested_models(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _nested_models(arg)]
    if origin is list:
        return [(m, "[]") for m, _ in _nested_models(typing.get_args(annotation)[0])]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    return []


def _type_text(row: FieldRow, schema: dict[str, Any]) -> str:
    node = row.resolved
    if "enum" in node:
        text = "enum"
    elif "const" in node:
        text = f"constant {flow(node['const'])}"
    elif node.get("type") == "array":
        item, _ = _resolve(schema, node.get("items", {}))
        kind = "enum" if "enum" in item else ("object" if item.get("type") == "object" else item.get("type", "any"))
        text = f"list of {kind}"
    elif node.get("type") == "string" and node.get("format") == "date":
        text = "date"
    elif node.get("type") == "object":
        text = "section" if "properties" in node else "mapping"
    else:
        text = str(node.get("type", "any"))
    return text + (" or null" if row.nullable else "")


def _bound(value: Any) -> str:
    return number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def allowed_text(row: FieldRow, schema: dict[str, Any], *, markdown: bool = True) -> str:
    """Allowed values or range of a field, for the reference (markdown) or a YAML comment."""

    def code(v: Any) -> str:
        return f"`{v}`" if markdown else str(v)

    node = row.resolved
    if node.get("type") == "array":
        item, _ = _resolve(schema, node.get("items", {}))
        parts = []
        if "enum" in item:
            parts.append("any of " + ", ".join(code(v) for v in item["enum"]))
        if "minItems" in node or "maxItems" in node:
            lo, hi = node.get("minItems", 0), node.get("maxItems")
            parts.append(f"{lo}..{hi if hi is not None else ''} items")
        return "; ".join(parts)
    if "enum" in node:
        return (" \\| " if markdown else " | ").join(code(v) for v in node["enum"])
    if node.get("type") in ("number", "integer"):
        lo = node.get("exclusiveMinimum", node.get("minimum"))
        hi = node.get("exclusiveMaximum", node.get("maximum"))
        left = ("(" if "exclusiveMinimum" in node else "[") + (_bound(lo) if lo is not None else "-inf")
        right = (_bound(hi) if hi is not None else "inf") + (")" if "exclusiveMaximum" in node else "]")
        return f"{left}, {right}" if lo is not None or hi is not None else ""
    if node.get("type") == "string":
        if node.get("format") == "date":
            return "YYYY-MM-DD"
        lo, hi = node.get("minLength"), node.get("maxLength")
        return f"{lo or 0}..{hi} characters" if hi is not None else ""
    return ""


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------- markdown references


def profile_fields_md() -> str:
    from advisor.models import Profile

    schema = json_schema("profile")
    defaults = _model_defaults(Profile)
    lines = [
        "<!-- Generated by `python -m advisor.docgen` from advisor/models.py; do not edit by hand. -->",
        "",
        "# Profile field reference",
        "",
        "Every field of a workload profile, generated from the pydantic models (the same",
        "source as [`schemas/profile.schema.json`](../../schemas/profile.schema.json) and",
        "`advisor schema`). Unknown keys are errors with a \"did you mean\"; ranges are",
        "inclusive `[ ]` or exclusive `( )`. Required: `name`, `task`, `model.params_b`,",
        "and the `training:` (training, fine-tuning) or `inference:` block the task needs.",
        "",
    ]
    sections: dict[str, list[FieldRow]] = {}
    for row in iter_fields(schema):
        head = row.path.split(".")[0].split("[")[0]
        sections.setdefault(head, []).append(row)
    top = [rows[0] for rows in sections.values() if len(rows) == 1]
    if top:
        lines += ["## Top level", "", "| field | type | required | default | allowed | description |", "|---|---|---|---|---|---|"]
        lines += [_field_line(row, schema, defaults) for row in top]
        lines.append("")
    for head, rows in sections.items():
        if len(rows) == 1:
            continue
        section, fields = rows[0], rows[1:]
        intro = FIELD_DOCS.get(head, "") + (" Required." if section.required else "")
        lines += [f"## `{head}`", "", intro.strip() or f"The `{head}` section.", ""]
        lines += ["| field | type | required | default | allowed | description |", "|---|---|---|---|---|---|"]
        lines += [_field_line(row, schema, defaults) for row in fields]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _field_line(row: FieldRow, schema: dict[str, Any], defaults: dict[str, Any]) -> str:
    if row.required:
        default = "—"
    elif row.path in defaults:
        value = defaults[row.path]
        default = '`""`' if value == "" else f"`{flow(value)}`"
    else:
        default = "—"
    cells = [
        f"`{row.path}`",
        _type_text(row, schema),
        "yes" if row.required else "",
        default,
        allowed_text(row, schema),
        _md(FIELD_DOCS.get(row.path, "")),
    ]
    return "| " + " | ".join(cells) + " |"


def rules_md() -> str:
    from advisor.conditions import OPERATORS
    from advisor.facts import FACTS, field_specs
    from advisor.knowledge import builtin_rules_dir, load_knowledge

    kb = load_knowledge()
    rules = sorted(kb.rules, key=lambda r: (r.category, r.id))
    lines = [
        "<!-- Generated by `python -m advisor.docgen` from rules/; do not edit by hand. -->",
        "",
        "# Rules reference",
        "",
        f"The {len(rules)} built-in heuristics of the knowledge base (`rules/heuristics/`), the",
        f"{len(kb.setup_paths)} setup paths (`rules/setup/`), and the fields and operators a",
        "condition may use. How to write a rule: [the rule-authoring guide](../rule-authoring.md).",
        "From the command line: `advisor rules list`, `advisor rules show ID`, `advisor rules test`.",
        "",
        "## Heuristics",
        "",
        "| id | category | effect | title |",
        "|---|---|---|---|",
    ]
    lines += [f"| [`{r.id}`](#{r.id}) | {r.category} | {r.effect_text} | {_md(r.title)} |" for r in rules]
    lines.append("")
    for r in rules:
        rel = rule_file(r)
        lines += [
            f"### {r.id}",
            "",
            f"**{_md(r.title)}**",
            "",
            f"- category: `{r.category}`",
            f"- effect: **{r.effect_text}**",
            f"- file: [`{rel}`](../../{rel})",
        ]
        if r.aliases:
            lines.append("- aliases: " + ", ".join(f"`{a}`" for a in r.aliases))
        lines += ["", "When:", "", "```text", *condition_lines(r.when), "```", "", f"Reason: {r.reason}", ""]
        if r.fix:
            lines += [f"Fix: {r.fix}", ""]
        lines += ["Sources:", ""]
        lines += [f"- {_source_md(s)}" for s in r.sources]
        lines.append("")
    lines += [
        "## Setup paths",
        "",
        "The setup path printed with a verdict is the highest-priority path for the verdict's",
        "device whose condition matches the profile.",
        "",
        "| id | device | priority | title | sources |",
        "|---|---|---|---|---|",
    ]
    root = builtin_rules_dir().resolve()
    for sp in sorted(kb.setup_paths, key=lambda s: (s.device, -s.priority, s.id)):
        try:
            rel = "rules/" + Path(sp.path).resolve().relative_to(root).as_posix()
        except ValueError:
            rel = sp.path
        srcs = ", ".join(_source_md(s) for s in sp.sources)
        lines.append(f"| [`{sp.id}`](../../{rel}) | {sp.device} | {sp.priority} | {_md(sp.title)} | {srcs} |")
    lines += [
        "",
        "## Condition fields",
        "",
        "Profile paths (see the [profile field reference](profile-fields.md)) and derived facts.",
        "",
        "| field | kind | values | meaning |",
        "|---|---|---|---|",
    ]
    for path, spec in field_specs().items():
        values = ", ".join(f"`{c}`" for c in spec.choices)
        kind = spec.kind + (" (optional)" if spec.optional else "")
        doc = FACTS[path].spec.doc if path in FACTS else FIELD_DOCS.get(path, "")
        lines.append(f"| `{path}` | {kind} | {values} | {_md(doc)} |")
    lines += ["", "## Operators", "", "| op | written | applies to | meaning |", "|---|---|---|---|"]
    for op, (kinds, _, _) in OPERATORS.items():
        written = "is set / is not set" if op == "is_set" else OP_TEXT.get(op, op)
        lines.append(f"| `{op}` | `{written}` | {', '.join(sorted(kinds))} | {OP_DOCS.get(op, '')} |")
    return "\n".join(lines).rstrip("\n") + "\n"


def software_md() -> str:
    """docs/reference/software.md: rules/software.yaml as one table per entry, a source per row."""
    from advisor.software import load_software

    table = load_software()
    lines = [
        "# Software compatibility",
        "",
        f"Generated by `{GENERATOR}` from `rules/software.yaml`; do not edit.",
        "",
        "Which libraries, serving stacks and frameworks run on which device family (and vendor, where",
        "it matters). **supported**: runs; **caveats**: runs with the port, fork or limitation in the note;",
        "**not-supported**: no kernels or backend. A *hot-path* entry that is not supported on a family makes",
        "that family's configurations infeasible, and the family is excluded when none of its chips can run it,",
        "with the fix; with `software.accept_equivalents: true` the family is sized with the equivalent",
        "instead (its method and precision), and a warning says so. `training.method: qlora` implies",
        "bitsandbytes.",
        "",
    ]
    for e in table.software:
        implied = f"; implied by `{e.implied_by.field}: {e.implied_by.value}`" if e.implied_by else ""
        lines += [
            f"## {_md(e.name)}",
            "",
            f"`{e.field}: {e.value}` (id `{e.id}`; {'hot path' if e.hot_path else 'not on the hot path'}{implied})",
            "",
            "| target | status | note | nearest equivalent | source |",
            "|---|---|---|---|---|",
        ]
        for r in e.support:
            eq = ""
            if r.equivalent is not None:
                sized = [f"{k} {v}" for k, v in (("method", r.equivalent.method), ("precision", r.equivalent.precision)) if v]
                eq = _md(r.equivalent.name) + (f" (sized as {', '.join(sized)})" if sized else "")
            src = ", ".join(_source_md(table.sources[s].url or s) for s in r.source)
            lines.append(f"| `{r.target}` | {r.status} | {_md(r.note or '')} | {eq} | {src} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def families_md() -> str:
    """docs/reference/model-families.md: the sourced FLOPs table of rules/model-families.yaml."""
    from advisor.model_families import load_families

    table = load_families()
    lines = [
        "# Model families",
        "",
        f"Generated by `{GENERATOR}` from `rules/model-families.yaml`; do not edit.",
        "",
        "`model.family` selects a row: its forward FLOPs replace the parameter-based guess. Training counts",
        "3 x forward x `training.samples` (x `training.epochs`); serving counts one image (vision), one",
        "denoising step x `inference.steps` (diffusion), one 30 s window plus decoder FLOPs per output token",
        "(speech) or one pass per input token with no decode (encoder). FLOPs count a multiply-add as 2.",
        "",
        "| family | kind | forward FLOPs | decoder FLOPs/token | params (M) | resolution | note | source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in table.families:
        dec = f"{f.decoder_flops_per_token:.3g}" if f.decoder_flops_per_token else ""
        src = ", ".join(_source_md(table.sources[s].url) for s in f.source)
        lines.append(
            f"| `{f.id}` | {f.kind} | {f.forward_flops:.4g} | {dec} | {f.params_m:g} | {f.resolution or ''} | {_md(f.note or '')} | {src} |"
        )
    return "\n".join(lines) + "\n"


def check_rules_md() -> str:
    from advisor.check.rules import CHECK_RULES, SCOPES

    lines = [
        "<!-- Generated by `python -m advisor.docgen` from advisor/check/rules.py; do not edit by hand. -->",
        "",
        "# Check rules reference",
        "",
        f"The {len(CHECK_RULES)} check rules of `advisor check`, the CI gate ([ci.md](../ci.md)). A finding",
        "carries the rule id, its severity, a message and the line; `--fail-on` sets the lowest",
        "severity that fails the job, `--disable ID` (or `disabled_rules:` in the policy) turns a rule",
        "off, and a proposal's `waivers:` waive one with a reason and an expiry date. These are not the",
        "heuristics that score devices ([rules.md](rules.md)). From the command line:",
        "`advisor rules list --kind check`, `advisor rules show ID`.",
        "",
        "Each rule is one registered unit in `advisor/check/rules.py`: id, severity, title, docs and its",
        "check of a proposal and/or of an infrastructure request. The waiver rules and the monthly",
        "increase limit are checked where their input is read (the module named below).",
        "",
    ]
    for scope, what in SCOPES.items():
        rules = sorted((r for r in CHECK_RULES.values() if r.scope == scope), key=lambda r: r.id)
        lines += [f"## {scope.capitalize()} rules", "", f"Read from {what}.", "", "| id | severity | title | checked in |", "|---|---|---|---|"]
        lines += [f"| [`{r.id}`](#{r.id}) | {r.severity} | {_md(r.title)} | `{r.where}` |" for r in rules]
        lines.append("")
        for r in rules:
            lines += [f"### {r.id}", "", f"**{_md(r.title)}** ({r.severity})", "", r.help, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _source_md(source: str) -> str:
    return f"<{source}>" if source.startswith("https://") else f"`{source}`"


# --------------------------------------------------------------------------- files


def outputs() -> dict[str, str]:
    """Repository-relative path -> generated text, for every generated file."""
    out = {f"schemas/{kind}.schema.json": schema_text(kind) for kind in SCHEMA_KINDS}
    out["docs/reference/profile-fields.md"] = profile_fields_md()
    out["docs/reference/rules.md"] = rules_md()
    out["docs/reference/software.md"] = software_md()
    out["docs/reference/model-families.md"] = families_md()
    out["docs/reference/check-rules.md"] = check_rules_md()
    return out


def stale(root: Path) -> list[str]:
    """Generated files that are missing or differ from what this module produces."""
    out = []
    for rel, text in outputs().items():
        path = root / rel
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            out.append(rel)
    return out


def write(root: Path) -> list[str]:
    """Write every generated file that changed (atomically); return the paths written."""
    from advisor.output import write_atomic

    written = []
    for rel, text in outputs().items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        written.append(rel)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=GENERATOR, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="list stale generated files and exit 1; write nothing")
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    root: Path = args.root or Path(__file__).resolve().parent.parent
    if args.root is None and not (root / "pyproject.toml").is_file():
        print(f"{GENERATOR}: {root} is not a checkout of advisor (an installed copy?); pass --root", file=sys.stderr)
        return 2
    if args.check:
        old = stale(root)
        for rel in old:
            print(f"{rel}: stale; run `{GENERATOR}`", file=sys.stderr)
        return 1 if old else 0
    for rel in write(root):
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
