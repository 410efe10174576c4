"""A diffusion request's compute from what it generates (inference.width / height / frames): a diffusion transformer
over its latent tokens, against published timings (rules/estimator.yaml S_LIGHTX2V_BENCH)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.api import Context
from advisor.estimate.search import estimate
from advisor.models import Profile

from .conftest import run_cli

CTX = Context.load()
# Wan2.1-I2V-14B (wan/configs: 40 layers of width 5120), 81 frames, 40 steps with classifier-free guidance, on one
# H200 with the official implementation: LightX2V's benchmark (docs/EN/source/getting_started/benchmark.md @930c320)
WAN = {"params_b": 14, "architecture": "diffusion", "precision": "bf16", "layers": 40, "hidden_size": 5120}
PUBLISHED_S = {(832, 480): 366.0, (1280, 720): 974.0}


def _profile(inference: dict[str, Any], model: dict[str, Any] | None = None) -> Profile:
    return Profile.model_validate({
        "name": "video", "task": "inference", "domain": "diffusion", "model": model or WAN,
        "inference": {"peak_qps": 0.001, "latency_p99_ms": 1e7, **inference}, "deployment": {"clouds": ["gcp", "aws"]},
    })


def _latency_s(inference: dict[str, Any], model: dict[str, Any] | None = None, acc: str = "h200") -> float:
    e = estimate(_profile(inference, model), CTX.catalog.get(acc), 1, CTX.constants)
    assert e.feasible and e.latency_ms, e.why_not
    return float(e.latency_ms) / 1000.0


def _flops(e: Any) -> float:
    return float(e.assumptions["memory"]["request_flops"])


@pytest.mark.parametrize("size", sorted(PUBLISHED_S))
def test_a_video_model_takes_its_published_time_within_2x(size: tuple[int, int]) -> None:
    # before: every diffusion request was SDXL's 3,100 FLOP per parameter per step (a 1024x1024 image): 1.7e15 FLOPs,
    # about 4 s for a clip that takes 366 s (480P) or 974 s (720P)
    got = _latency_s({"steps": 40, "width": size[0], "height": size[1], "frames": 81})
    ratio = got / PUBLISHED_S[size]
    assert 0.5 <= ratio <= 2.0, (size, got, PUBLISHED_S[size])


def test_attention_makes_a_longer_video_more_than_proportionally_dearer() -> None:
    # 81 frames are 21 latent frames, 41 frames 11: the weights' FLOPs scale with the tokens, attention with their square
    short = _latency_s({"steps": 40, "width": 832, "height": 480, "frames": 41})
    long = _latency_s({"steps": 40, "width": 832, "height": 480, "frames": 81})
    assert long / short > 21 / 11


def test_guidance_off_halves_a_step() -> None:
    for inference in ({"steps": 4, "width": 1024, "height": 1024}, {"steps": 4}):
        on = estimate(_profile(inference), CTX.catalog.get("h100"), 1, CTX.constants)
        off = estimate(_profile({**inference, "classifier_free_guidance": False}), CTX.catalog.get("h100"), 1, CTX.constants)
        assert _flops(off) == pytest.approx(_flops(on) / 2, rel=1e-3), inference


def test_a_unet_familys_figure_scales_with_the_image_area() -> None:
    sdxl = {"params_b": 3.5, "architecture": "diffusion", "family": "sdxl"}
    base = estimate(_profile({"steps": 20}, sdxl), CTX.catalog.get("h100"), 1, CTX.constants)
    big = estimate(_profile({"steps": 20, "width": 2048, "height": 2048}, sdxl), CTX.catalog.get("h100"), 1, CTX.constants)
    assert _flops(big) == pytest.approx(4 * _flops(base), rel=1e-3)


def test_the_size_silences_the_sdxl_warning_and_names_the_formula(tmp_path: Path) -> None:
    data = {"name": "video", "task": "inference", "domain": "diffusion", "model": WAN,
            "inference": {"peak_qps": 0.01, "steps": 50}, "deployment": {"clouds": ["gcp"]}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    r = run_cli("estimate", str(path), "-a", "h100", "-n", "1", "--format", "json")
    assert r.code == 0, r.err
    warns = json.loads(r.out)["warnings"]
    assert any("inference.width" in w and "one denoising step" in w for w in warns), warns
    data["inference"].update(width=1280, height=720, frames=81)
    path.write_text(yaml.safe_dump(data))
    r = run_cli("estimate", str(path), "-a", "h100", "-n", "1", "--format", "json")
    out = json.loads(r.out)
    assert not any("SDXL" in w for w in out["warnings"]), out["warnings"]
    assert "75,600 latent tokens" in out["assumptions"]["memory"]["request_model"]


@pytest.mark.parametrize("inference", [{"width": 1280}, {"frames": 81}])
def test_a_size_without_both_sides_is_an_input_error(tmp_path: Path, inference: dict[str, Any]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"name": "v", "task": "inference", "domain": "diffusion", "model": WAN,
                                    "inference": {"peak_qps": 0.01, **inference}}))
    r = run_cli("recommend", str(path))
    assert r.code == 2
    assert f"{path}:" in r.err and "error:" in r.err and "inference." in r.err, r.err


def test_a_size_on_an_llm_is_named_not_used(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"name": "l", "task": "inference", "domain": "llm", "model": {"params_b": 8},
                                    "inference": {"peak_qps": 1, "width": 512, "height": 512}}))
    r = run_cli("recommend", str(path), "--format", "json")
    assert r.code == 0, r.err
    assert any("inference.width" in w and "not used" in w for w in json.loads(r.out)["warnings"])


def test_a_video_is_split_over_the_chips_of_one_node() -> None:
    # before: 8 GPUs served 8 videos at once, one a GPU, and a lone 720P clip took one GPU's 20 minutes: a 10-minute
    # target read infeasible on every configuration. Sequence parallelism splits its latent tokens over the node
    clip = {"steps": 50, "width": 1280, "height": 720, "frames": 81}
    one = _latency_s(clip, acc="h100")
    e = estimate(_profile(clip), CTX.catalog.get("h100"), 8, CTX.constants)
    sp = e.assumptions["memory"]["sequence_parallel"]
    assert sp["chips_per_request"] == 8 and sp["copies"] == 1
    assert 0 < sp["all_to_all_seconds_per_request"] < 0.05 * one  # NVLink: the all-to-alls are a few percent
    assert one / 8 < float(e.latency_ms) / 1000 < one / 6


def test_sequence_parallelism_stays_inside_one_scale_up_fabric() -> None:
    # 16 H100 are two NVLink nodes: a request is split over one node's 8, the two nodes serve a video each
    e = estimate(_profile({"steps": 50, "width": 1280, "height": 720, "frames": 81}), CTX.catalog.get("h100"), 16, CTX.constants)
    sp = e.assumptions["memory"]["sequence_parallel"]
    assert sp["chips_per_request"] == 8 and sp["copies"] == 2
