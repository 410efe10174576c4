"""What the estimate of a workload reads of its profile: every field a user gave either changes an
estimate (or the verdict, the setup) or is named in a warning as not used (tests/test_read_set.py
checks it field by field over the schema, for each kind of task). The fields `advisor scaffold` reads
(model.hf_id, model.context_tokens, inference.max_input_tokens / max_output_tokens: the model and the
server's --max-model-len) and those `advisor check` reads (proposal, match) are theirs, not the estimate's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from advisor.estimate.replica import is_llm_inference
from advisor.model_families import family_of
from advisor.models import Profile


def _given(block: BaseModel | None, prefix: str) -> list[str]:
    """Dotted paths of the fields a user gave in ``block`` (nested blocks expanded)."""
    if block is None:
        return []
    out: list[str] = []
    for name in sorted(block.model_fields_set):
        value: Any = getattr(block, name)
        if isinstance(value, BaseModel):
            out += _given(value, f"{prefix}{name}.") or [f"{prefix}{name}"]
        else:
            out.append(f"{prefix}{name}")
    return out


def unused_fields(profile: Profile) -> list[str]:
    """One warning per group of given fields this workload's estimate does not read, saying why."""
    m, t, inf = profile.model, profile.training, profile.inference
    notes: list[tuple[list[str], str]] = []
    if profile.is_training:
        notes.append((_given(inf, "inference."), f"a {profile.task} task has no serving"))
    else:
        notes.append((_given(t, "training."), "an inference task has no training run"))
    llm_serving = inf is not None and not profile.is_training and is_llm_inference(profile)
    token_training = t is not None and profile.is_training and not t.sample_based
    if not llm_serving:
        cache = _given(m.attention, "model.attention.") + (["model.kv_heads"] if "kv_heads" in m.model_fields_set else [])
        if token_training and m.architecture in ("transformer", "moe"):
            # a token run's attention FLOPs read the width attention computes at and its window (training.attention_flops)
            read = {f"model.attention.{n}" for n in ("kind", "heads", "head_dim", "window", "sliding_fraction")}
            cache = [f for f in cache if f not in read]
        notes.append((cache, "only an LLM's serving reads the KV-cache shape"))
        if inf is not None and not profile.is_training:
            notes.append(
                ([f"inference.{n}" for n in ("kv_cache_dtype", "prefix_cache_hit_rate") if n in inf.model_fields_set],
                 "no KV cache in one-pass serving")
            )
    if not (llm_serving and m.architecture == "moe"):
        # a mixture of experts' training reads its expert count (its fitted factor's routing level: coarse or fine)
        moe_training = profile.is_training and m.architecture == "moe"
        notes.append(
            (["model.experts_per_token"] * bool(m.experts_per_token) + ["model.experts"] * bool(m.experts and not moe_training),
             "only a mixture of experts' serving reads the routing (experts, top-k)" + ("; its training reads the expert count"
                                                                                       if moe_training else ""))
        )
        if inf is not None and "attention_parallel" in inf.model_fields_set:
            notes.append(
                (["inference.attention_parallel"], "only a mixture of experts' LLM serving splits its attention apart from its experts")
            )
    if m.weights_precision is not None and profile.is_training and (t is None or t.method != "lora"):
        notes.append((["model.weights_precision"], "full training keeps its weights at model.precision and QLoRA its base at 4 bits;"
                      " only serving and LoRA's frozen base store weights apart"))
    if m.flops_per_sample and (token_training or llm_serving):
        notes.append((["model.flops_per_sample"], "token workloads take 6 x params per token (training) or the step model (serving)"))
    if m.family and (token_training or llm_serving or family_of(profile) is None):
        notes.append((["model.family"], "this workload takes its FLOPs per token, not the family table"))
    if m.vocab_size is not None and not (token_training and m.architecture in ("transformer", "moe")):
        # training.language_vocab: only a token run's output head keeps logits the size of the vocabulary
        notes.append((["model.vocab_size"], "only a language model's training keeps the vocabulary's logits (serving samples one "
                      "token per sequence)"))
    if token_training and t is not None and t.epochs is not None:
        notes.append((["training.epochs"], "epochs multiply training.samples; a token run counts training.tokens_b"))
    if inf is not None and not profile.is_training:
        given = inf.model_fields_set
        if inf.mode == "batch":
            targets = [f"inference.{n}" for n in ("latency_p99_ms", "ttft_p99_ms", "tpot_p99_ms", "output_tokens_p99") if n in given]
            notes.append((targets, "an offline batch job has no latency target: replicas run at saturation"))
            if inf.requests_per_day is not None and "peak_qps" in given:
                notes.append((["inference.peak_qps"], "a batch job with requests_per_day is sized by its volume and window"))
        else:
            notes.append(([f"inference.{n}" for n in ("requests_per_day", "window_hours") if n in given],
                          "an online service is sized by peak_qps (these size a mode: batch job)"))
        if llm_serving and inf.output_tokens == 0:
            notes.append(([f"inference.{n}" for n in ("tpot_p99_ms", "output_tokens_p99") if n in given],
                          "output_tokens is 0: a request generates no token (an embedding, a score), so none is timed"))
        if not llm_serving and inf.mode != "batch":
            notes.append(([f"inference.{n}" for n in ("ttft_p99_ms", "tpot_p99_ms", "output_tokens_p99") if n in given],
                          "only an LLM's serving has a first token and tokens after it"))
        diffusion = profile.is_diffusion
        if "steps" in given and not diffusion:
            notes.append((["inference.steps"], "only diffusion models take denoising steps"))
        generated = [f"inference.{n}" for n in ("width", "height", "frames", "classifier_free_guidance") if n in given]
        if not diffusion:
            notes.append((generated, "only a diffusion model's request generates an image or video"))
        elif m.flops_per_sample:
            notes.append((generated, "model.flops_per_sample gives the FLOPs of a whole denoising step"))
        fam = family_of(profile)
        one_pass = (
            not llm_serving
            and not m.flops_per_sample
            and (
                diffusion
                or profile.domain == "vision"
                or m.architecture == "cnn"
                or (fam is not None and fam.kind in ("diffusion", "vision"))
                or (profile.domain == "recommendation" and m.embeddings is not None)
            )
        )
        if one_pass and "input_tokens" in given:
            notes.append((["inference.input_tokens"], "a one-pass request's FLOPs do not depend on the prompt length"))
    if inf is not None and not profile.is_training and m.embeddings is not None:
        given = m.embeddings.model_fields_set
        # a recommendation request gathers its lookups_per_sample rows (a read per request); the pooled vectors per
        # table are exchanged only by training's all-to-all
        unread = ("tables",) if profile.domain == "recommendation" else ("lookups_per_sample", "tables")
        notes.append(([f"model.embeddings.{n}" for n in unread if n in given],
                      "serving gathers each request's rows from the tables it holds; the pooled vectors are exchanged only in training"))
        if profile.domain != "recommendation":
            notes.append(
                (
                    [f"model.embeddings.{n}" for n in ("rows", "dim") if n in given],
                    "serving holds params_b whole: the tables are part of it, and only a recommendation model streams the rest apart",
                )
            )
    sw = profile.software
    if sw.accept_equivalents and not sw.cuda_libraries and not (t is not None and t.method == "qlora"):
        notes.append((["software.accept_equivalents"], "no library of this profile needs an equivalent"))
    dep = profile.deployment
    if dep.edge_device is not None and not dep.edge:
        notes.append((["deployment.edge_device"], "only an edge deployment (deployment.edge) names its end device"))
    if dep.onprem is not None and "on-prem" not in dep.clouds and not dep.local and not dep.owned:
        notes.append(
            (_given(dep.onprem, "deployment.onprem."), "on-prem costs apply only with deployment.clouds on-prem, owned or local hardware")
        )
    return [f"{', '.join(paths)}: not used ({why})" for paths, why in notes if paths]
