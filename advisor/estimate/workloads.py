"""Compute per workload kind beyond dense token models (docs/estimator.md "Workload kinds").

* sourced per-sample FLOPs of known architectures (``model.family``): training 3 x forward x
  samples x epochs; serving one forward pass per request (vision), per denoising step
  (diffusion), per 30 s window plus decoder FLOPs per output token (speech), per input token
  (encoder-only: embeddings and classifiers, no decode);
* recommendation (``model.embeddings``): the tables held in memory sharded over the chips, the
  rows each sample reads and updates (memory-bandwidth bound) and the all-to-all of the pooled
  vectors over the interconnect or the scale-out network, next to the dense part's FLOPs;
* a clear warning, with what is assumed, for an architecture without a formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.catalog import Accelerator
from advisor.constants import Constants
from advisor.estimate import sizing
from advisor.model_families import Family, family_of
from advisor.models import PRECISION_BYTES, Profile

# Architectures whose compute the estimator models: transformers and MoE from active params,
# CNNs from the family table (else FLOPs per parameter), diffusion per denoising step.
WITH_FORMULA = ("transformer", "moe", "cnn", "diffusion")


def formula_warning(profile: Profile) -> str | None:
    """A warning for a model whose compute has no formula (given FLOPs or a family silence it)."""
    m = profile.model
    if m.flops_per_sample or family_of(profile) or m.embeddings:
        return None
    if profile.inference is not None and profile.is_diffusion:
        # the one diffusion figure is SDXL's per 1024x1024 image (rules/estimator.yaml request_flops): a larger image or a
        # video (its frames times latent tokens, attention quadratic in them) computes far more per denoising step
        if profile.inference.generated_pixels is not None:
            return None  # a diffusion transformer over the generated size's latent tokens (replica.dit)
        return ("diffusion compute per request is SDXL's per 1024x1024 image (3,100 FLOP per parameter per denoising step, "
                "MLPerf): a larger image or a video costs far more (Wan2.1 at 720p x 81 frames ~300x); set inference.width "
                "and inference.height (and inference.frames for a video), model.flops_per_sample (one forward pass: for "
                "diffusion, one denoising step) or model.family for a real figure")
    if m.architecture in WITH_FORMULA:
        return None
    unit = "sample" if profile.training is not None and profile.training.sample_based else "token"
    return (
        f"no compute formula for a '{m.architecture}' model: assumed a dense network doing 2 FLOPs per "
        f"parameter per {unit} forward (x3 to train); set model.flops_per_sample (or model.family, "
        "model.embeddings) for a real figure"
    )


def mfu_factor(profile: Profile, acc: Accelerator, c: Constants) -> float:
    """What the workload kind reaches of the stack's training MFU (CNNs on GPUs: about half)."""
    if profile.model.architecture != "cnn":
        return 1.0
    row = next((r for r in c.estimator.workloads.cnn_mfu_factor if r.device == acc.device), None)
    return row.value if row is not None else 1.0


def no_decode(profile: Profile) -> bool:
    """Families served one pass per request (vision, diffusion, encoders) or with their own decoder model."""
    fam = family_of(profile)
    return fam is not None


def request_flops(profile: Profile) -> tuple[float, str] | None:
    """FLOPs of one request from the family table, and the formula in words (None without a family)."""
    fam = family_of(profile)
    inf = profile.inference
    if fam is None or inf is None:
        return None
    flops, formula = _family_request(fam, inf.steps, inf.input_tokens, inf.output_tokens)
    if fam.kind == "diffusion":
        size = inf.generated_pixels
        if size is not None and fam.resolution:
            # a U-Net's convolutions run over every latent pixel: its FLOPs per step grow with the image's area
            scale = size[0] * size[1] * size[2] / float(fam.resolution * fam.resolution)
            flops *= scale
            frames = f" x {size[2]} frames" if size[2] > 1 else ""
            formula += f" x {scale:.3g} (the generated {size[0]}x{size[1]}{frames} over its {fam.resolution}^2)"
        if not inf.classifier_free_guidance:
            flops /= 2.0
            formula += " / 2 (no classifier-free guidance: one pass a step, where the figure has two)"
    return flops, formula


def _family_request(fam: Family, steps: int | None, input_tokens: int, output_tokens: int) -> tuple[float, str]:
    if fam.kind == "diffusion":
        n = steps or 20
        return fam.forward_flops * n, f"diffusion: {fam.id} FLOPs per step x {n} steps"
    if fam.kind == "speech":
        dec = (fam.decoder_flops_per_token or 0.0) * output_tokens
        return fam.forward_flops + dec, f"speech: {fam.id} encoder per 30 s window + decoder FLOPs x {output_tokens} output tokens"
    if fam.kind == "encoder":
        return fam.forward_flops * max(input_tokens, 1), f"encoder-only: {fam.id} FLOPs per token x {input_tokens} input tokens (no decode)"
    return fam.forward_flops, f"vision: {fam.id} forward FLOPs per image"


@dataclass
class Embedding:
    """What the embedding tables add to one training configuration."""

    bytes_per_chip: float = 0.0
    seconds: tuple[float, float, float] = (0.0, 0.0, 0.0)  # (at high, expected, low bandwidth utilisation)
    notes: dict[str, Any] = field(default_factory=dict)


def embedding_training(profile: Profile, acc: Accelerator, count: int, c: Constants, mbu: Any) -> Embedding:
    """Tables sharded over ``count`` chips; rows read and written back per sample at the HBM
    bandwidth (x ``mbu``); pooled vectors exchanged all-to-all, forward and backward."""
    emb = profile.model.embeddings
    t = profile.training
    if emb is None or t is None:
        return Embedding()
    wbytes = PRECISION_BYTES[emb.precision or profile.model.precision]
    act = min(wbytes, 2.0) if (emb.precision or profile.model.precision) != "fp32" else 4.0
    samples = t.total_samples if t.sample_based else t.tokens_b * 1e9
    table_bytes = emb.params * wbytes
    # forward read + backward read-modify-write of every row looked up
    lookup_bytes = samples * emb.lookups_per_sample * emb.dim * wbytes * 3.0
    hbm = acc.specs.memory_bandwidth_gbps * 1e9 * count * sizing.attained_scale(acc, c, None)[1]
    pooled = emb.tables or emb.lookups_per_sample
    a2a_per_chip = samples * pooled * emb.dim * act * 2.0 * (count - 1) / count / count if count > 1 else 0.0
    crosses = count > sizing.fast_domain(acc, count)
    if crosses:
        link = sizing.scale_out_bytes_per_s(acc, c)
        over = "the scale-out network"
    else:
        link = sizing.link_bytes_per_s(acc, c)
        over = "the chip interconnect" if acc.specs.interconnect_gbps else "PCIe"
    a2a = a2a_per_chip / (link * c.estimator.workloads.all_to_all_efficiency.value)
    secs = tuple(lookup_bytes / (hbm * u) + a2a for u in (mbu.high, mbu.expected, mbu.low))
    return Embedding(
        table_bytes / count,
        (secs[0], secs[1], secs[2]),
        {
            "tables_gb": round(table_bytes / 1e9, 2),
            "tables_gb_per_chip": round(table_bytes / count / 1e9, 3),
            "lookup_hours": round(lookup_bytes / (hbm * mbu.expected) / 3600, 4),
            "all_to_all_hours": round(a2a / 3600, 4),
            "all_to_all_over": over if count > 1 else "none (one chip)",
            "model": (
                "tables sharded over all chips; rows read and written back at HBM bandwidth x decode utilisation; "
                "pooled vectors (tables x dim) exchanged all-to-all forward and backward"
            ),
        },
    )


def embedding_serving_bytes(profile: Profile) -> float:
    """Bytes of the embedding tables a serving replica holds (0 without model.embeddings)."""
    emb = profile.model.embeddings
    if emb is None:
        return 0.0
    return emb.params * PRECISION_BYTES[emb.precision or profile.model.precision]


def embedding_lookup_bytes(profile: Profile) -> float:
    """Bytes one recommendation request gathers from the tables: lookups_per_sample rows of dim values (0 for any
    other model, or without model.embeddings)."""
    emb = profile.model.embeddings
    if emb is None or profile.domain != "recommendation":
        return 0.0
    return float(emb.lookups_per_sample) * emb.dim * PRECISION_BYTES[emb.precision or profile.model.precision]
