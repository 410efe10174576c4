"""The JSON Schemas of the profile, rules and catalog (``schemas/``, ``advisor schema``) with one
description per field, and the walk over their fields the references are built from."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

from advisor.docgen.text import dumps, flow, number

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
    "model.weights_precision": (
        "Precision the weights are stored at where it differs from model.precision (weight-only quantisation: AWQ/GPTQ "
        "int4 weights with bf16 activations, gpt-oss's MXFP4 experts with fp8 activations). Sets the serving memory and "
        "the bytes each decode step reads, and LoRA's frozen base; FLOPs run at model.precision. Default: model.precision."
    ),
    "model.layers": "Number of layers; estimated from params_b when absent.",
    "model.hidden_size": "Hidden (model) dimension; estimated from params_b when absent.",
    "model.kv_heads": "Key/value heads (grouped-query attention); sizes the KV cache.",
    "model.experts_per_token": "Mixture of experts: routed experts each token goes to (top-k), which sizes the expert-parallel "
                               "all-to-all of a serving replica spread over several chips. Default 2 (Mixtral); DeepSeek-V3 and "
                               "Qwen3-MoE route to 8.",
    "model.experts": "Mixture of experts: routed experts per MoE layer (Mixtral 8, Qwen3-MoE 128, DeepSeek-V3 256). With "
                     "experts_per_token it splits the active parameters into the routed experts (a grouped GEMM of its own) and "
                     "the rest (attention, shared experts, dense layers), which computes like a dense model.",
    "model.attention": "Attention format, which sets the KV cache per token (optional; absent: grouped-query attention with "
                       "model.kv_heads).",
    "model.attention.kind": "gqa (default) or mha: 2 x layers x kv_heads x head_dim values per token; mla (DeepSeek-V2/V3 multi-head "
                            "latent attention): layers x (kv_lora_rank + rope_dim) values; sliding: like gqa, but windowed layers keep "
                            "at most `window` tokens.",
    "model.attention.kv_heads": "Key/value heads (overrides model.kv_heads). Default: 8 for models of 7B parameters or more, else one "
                                "per 128 of hidden size (full attention).",
    "model.attention.head_dim": "Dimension of one attention head. Default 128 (Llama, Mistral, Qwen, Gemma-2).",
    "model.attention.heads": (
        "Query heads. With head_dim, attention computes at heads x head_dim, which need not be hidden_size "
        "(Qwen3-32B: 64 x 128 = 8,192 on a 5,120 model): the attention FLOPs of training and prefill. Default: hidden_size."
    ),
    "model.attention.kv_lora_rank": "MLA: dimension of the cached key/value latent. Default 512 (DeepSeek-V2 and V3).",
    "model.attention.rope_dim": "MLA: dimension of the decoupled RoPE key cached beside the latent. Default 64 (DeepSeek-V2 and V3).",
    "model.attention.window": "Sliding window: tokens each windowed layer attends to and caches (Mistral 7B v0.1: 4096; Gemma 3 local "
                              "layers: 1024). Default 4096.",
    "model.attention.sliding_fraction": "Sliding window: share of layers that are windowed; the rest attend to the whole context (Gemma "
                                        "3: 5/6). Default 1.",
    "model.vocab_size": "Tokens in the language model's vocabulary (its output head; Llama 3: 128,256). Training an LLM keeps "
                        "each sequence's fp32 logits for the loss, 4 x seq_len x vocab bytes (split over tensor parallelism): "
                        "about 67 GB for one 131,072-token sequence. Default for an LLM: rules/estimator.yaml "
                        "memory.default_vocab_size (128,256).",
    "model.context_tokens": "The model's maximum context length, tokens: a generated server accepts the longest prompt + output "
    "(inference.max_input_tokens + max_output_tokens), at most this.",
    "model.flops_per_sample": "FLOPs of one forward pass over one sample (an image, a row; for diffusion, one denoising step, "
                              "multiplied by inference.steps); training counts 3x per sample. ResNet-152 at 224x224: ~23e9.",
    "model.hf_id": "Hugging Face model id, used in the setup commands (for example meta-llama/Llama-3.1-8B-Instruct).",
    "model.family": "A known architecture (resnet-152, vit-b-16, yolov8x, sdxl, whisper-large-v3, bert-base, ...; "
                    "docs/reference/model-families.md): its sourced FLOPs per sample replace the parameter-based guess.",
    "model.embeddings": "Recommendation models: the embedding tables, held in accelerator memory sharded over the chips, read per sample "
                        "and exchanged all-to-all.",
    "model.embeddings.rows": "Rows over all embedding tables.",
    "model.embeddings.dim": "Embedding dimension (values per row).",
    "model.embeddings.lookups_per_sample": "Rows read per sample over all tables (multi-hot features count each id).",
    "model.embeddings.tables": "Pooled vectors per sample exchanged all-to-all (usually the number of tables); lookups_per_sample when "
                               "absent.",
    "model.embeddings.precision": "Precision of the tables; model.precision when absent.",
    "model.traits": "Properties of the computation that matter for TPUs (irregular access, custom ops, host I/O).",
    "training": "Required when task is training or fine-tuning.",
    "training.tokens_b": "Tokens processed over the whole run, billions (epochs x dataset tokens).",
    "training.samples": "Non-token workloads: samples processed over the whole run (images x epochs); replaces tokens_b, with FLOPs from "
                        "model.flops_per_sample.",
    "training.seq_len": "Sequence length, tokens.",
    "training.method": "Full training, or parameter-efficient fine-tuning (LoRA, QLoRA).",
    "training.epochs": "With samples: passes over them (samples is then one epoch); absent: samples is the whole run.",
    "training.deadline_hours": "Wall-clock hours the run must finish in.",
    "training.global_batch": "Sequences per optimiser step; bounds how many chips data parallelism can use.",
    "inference": "Required when task is inference.",
    "inference.mode": "online: requests with a latency target; batch: offline, each replica at saturation (the largest batch memory "
                      "and the serving engine allow).",
    "inference.peak_qps": "Requests per second at peak; sizes the number of replicas (online; batch jobs give requests_per_day instead).",
    "inference.requests_per_day": "Offline batch jobs (mode: batch): requests to finish per day; with window_hours it sizes the "
                                  "replicas, each run at saturation. Absent (and no peak_qps): sized for peak_qps's default, 1 request/s "
                                  "(86,400 a day), each replica at saturation, with a warning.",
    "inference.window_hours": "Offline batch jobs: hours per day the job may run to finish requests_per_day (default hours_per_day); "
                              "prices the month.",
    "inference.input_tokens": "Prompt tokens per request.",
    "inference.output_tokens": "Generated tokens per request.",
    "inference.max_input_tokens": "Longest prompt the server must accept, tokens; the generated serving flags (--max-model-len) use "
    "max input + max output, each by default the 99th percentile of lengths with the mean (about 4.6 x input_tokens / "
    "output_tokens), capped at model.context_tokens and the replica's KV cache.",
    "inference.max_output_tokens": "Longest generation the server must allow, tokens (server limit default: the 99th percentile of "
                                   "lengths with the mean output_tokens; the latency model takes every request at the mean). A limit above "
                                   "the mean says lengths vary: the p99 length is then the mean x ln 100 (a constant chance of stopping), "
                                   "capped at this.",
    "inference.output_tokens_p99": "The 99th-percentile generated length, tokens, where you know it (server logs); the p99 latency "
                                   "is computed for it.",
    "inference.ttft_p99_ms": "Target for the 99th-percentile time to first token, ms (LLM serving), compared with the p99 estimate "
                             "(queueing for a slot, prefill) not the typical request.",
    "inference.tpot_p99_ms": "Target for the 99th-percentile time per output token, ms (LLM serving): a request's own average "
                             "per token, as benchmarks measure TPOT, compared with the p99 estimate (including prefill interference).",
    "inference.latency_p99_ms": "End-to-end latency target per request (p99), milliseconds.",
    "inference.hours_per_day": "Hours per day the service runs; prices the month.",
    "inference.steps": "Diffusion models: denoising steps per request.",
    "inference.width": "Diffusion models: width of the generated image or video frame, pixels (with height). A diffusion "
                       "transformer's FLOPs per step follow from its latent tokens: 2 x params x tokens + 4 x layers x width x tokens^2.",
    "inference.height": "Diffusion models: height of the generated image or video frame, pixels (with width).",
    "inference.frames": "Diffusion models: frames of a generated video (default 1, an image); a video VAE keeps 1 + (frames - 1) / 4 "
                        "latent frames.",
    "inference.classifier_free_guidance": "Diffusion models: two passes a denoising step, with and without the prompt (default true); "
                                          "false for a guidance-distilled model.",
    "inference.kv_cache_dtype": "Precision of the KV cache, a serving flag independent of the weights (vLLM/SGLang --kv-cache-dtype): "
                                "auto (default) stores it in 1 byte for fp8/int8/int4 weights and 2 otherwise; fp8 or int8 halve a bf16 "
                                "cache.",
    "inference.prefix_cache_hit_rate": "Share of the input tokens whose KV cache the server already holds (0 to below 1; default 0): "
                                       "a shared system prompt, earlier turns of a conversation (vLLM automatic prefix caching, "
                                       "SGLang's radix cache, both on by default). Their prefill is not computed again; the "
                                       "request still holds their KV cache. DeepSeek reports 56.3% of its input tokens hitting its cache.",
    "inference.attention_parallel": "How a mixture of experts' replica splits its attention (LLM serving): tensor (by head, with "
                                    "the experts; MLA's single latent and KV heads fewer than the chips are copied on every chip), "
                                    "data (each chip attends for its own requests with a whole copy of the attention weights, the "
                                    "experts split over all chips: vLLM --data-parallel-size with --enable-expert-parallel, SGLang "
                                    "--enable-dp-attention) or auto (default: both estimated where tensor would copy the KV cache, "
                                    "the one needing fewer chips kept). The setup files use the layout estimated.",
    "inference.min_replicas": "Replicas kept running whatever the load (availability, zones); priced even when the peak needs fewer.",
    "software": "Framework, serving stack and CUDA dependencies.",
    "software.framework": "Training or model framework.",
    "software.serving_stack": "Inference server (none for training or custom serving).",
    "software.custom_cuda_kernels": "Hand-written CUDA/Triton kernels on the hot path (must be ported for TPUs).",
    "software.dynamic_shapes": "Tensor shapes change from step to step (forces XLA recompiles on TPUs).",
    "software.fp64": "Needs double precision (TPUs have none).",
    "software.cuda_libraries": "GPU libraries the code uses; where one has no kernels for a family (docs/reference/software.md) that "
                               "family is excluded unless accept_equivalents.",
    "software.accept_equivalents": "Size families where a hot-path library does not run with its nearest equivalent (bf16 LoRA for QLoRA "
                                   "on TPU) instead of excluding them.",
    "deployment": "Where the workload may run.",
    "deployment.clouds": "Clouds the team may use (TPUs need gcp).",
    "deployment.edge": "Runs on phones, cars or IoT devices rather than in a data centre.",
    "deployment.edge_device": "The end device of an edge deployment: android (a phone: LiteRT or ONNX Runtime pushed with adb) or "
                              "jetson (NVIDIA Jetson with JetPack: TensorRT, or llama.cpp for an LLM). The setup route is that device's "
                              "(rules/edge-devices.yaml).",
    "deployment.region": "Preferred cloud region, used in prices and setup commands (only on the cloud it belongs to).",
    "deployment.regions": "Regions it may run in (data residency), a hard constraint: each cloud runs only in its own listed regions "
                          "and only where it offers the accelerator (rules/regions.yaml); a cloud with none listed is out.",
    "deployment.pricing": "Price kind used for costs.",
    "deployment.procurement": (
        "The procurement kinds the team accepts (one or a list: on-demand, spot, dws, reservation, committed): a count none of "
        "them delivers (rules/capacity.yaml) is infeasible, never bought another way. Absent: any kind, escalating from pricing."
    ),
    "deployment.accelerators": "Only these catalog ids are considered (aliases accepted); a family with none listed is excluded.",
    "deployment.owned": "Hardware the team already has: the run is sized within it first, costed at its running cost only (power and "
                        "hosting, price kind 'owned (running cost)'; chip-hours where the chip's power is not in the catalog), and other "
                        "configurations are suggested only when it is not enough.",
    "deployment.owned[].accelerator": "Catalog id of an owned accelerator (aliases accepted).",
    "deployment.owned[].count": "How many of that accelerator the team owns (chips, not nodes).",
    "deployment.local": "One machine the user owns (a workstation, a laptop): sized on local devices (workstation GPUs, Apple silicon) "
                        "and the CPU, costed at the machine's running cost (power at the local PUE, no hosting; price kind 'owned "
                        "(running cost)').",
    "deployment.onprem": "What owning hardware costs, overriding the catalog's sourced defaults (`advisor catalog --format json` shows "
                         "them): on-prem chips are priced at (purchase / amortisation + hosting) / utilisation + TDP x PUE x $/kWh "
                         "(price kind 'on-prem (amortised)'); owned and local ones at the running cost only.",
    "deployment.onprem.usd_per_kwh": "Electricity price in USD per kWh (default: the catalog's, from EIA commercial-sector prices).",
    "deployment.onprem.pue": "Power usage effectiveness of the data centre, >= 1 (default: the catalog's, from the Uptime Institute "
                             "survey; local machines use 1.0 unless this is set).",
    "deployment.onprem.amortisation_years": "Years over which the purchase price is spread (per used hour: see utilisation) (default: "
                                            "the catalog's, from hyperscaler server useful lives).",
    "deployment.onprem.hosting_usd_per_chip_month": "Rack space, network and operations per chip per month in USD (default: the "
                                                    "catalog's stated assumption; 0 for local machines unless this is set).",
    "deployment.onprem.purchase": "Buy the hardware (true): only then are catalog chips priced on-prem at their amortised purchase, "
                                  "with the outlay, lead time, utilisation assumed and break-even against renting shown "
                                  "(estimate.purchase). Without it, on-prem means hardware in deployment.owned.",
    "deployment.onprem.lead_time_weeks": "Weeks from the purchase order to a working cluster (default: the catalog's "
                                         "onprem.lead_time_weeks, a stated assumption).",
    "deployment.onprem.utilisation": "Share of hours (0-1] the bought hardware does useful work: the fixed part (amortised purchase + "
                                     "hosting) is charged per used hour, fixed / utilisation, while power is charged only for used hours "
                                     "(default: the catalog's 0.8, LBNL's 75-85 % for GPU servers as quoted by Uptime Institute; set "
                                     "your fleet's own figure). Owned and local hardware keep the running-cost basis.",
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
    "match": "CI gate: the infrastructure this profile describes: Terraform addresses, Kubernetes Kind/namespace/name or SkyPilot files "
             "(glob patterns); advisor check links those resources to this workload.",
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
