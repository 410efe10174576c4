"""Sizing at every scale: real shapes without caps, the scale model, objectives, no-price basis,
verdicts that always name a configuration, and the published-run calibration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.api import Context
from advisor.estimate.search import estimate
from advisor.models import Profile
from advisor.recommend import recommend

from . import calibration_runs
from .conftest import make_profile, run_cli

CTX = Context.load()
CAT = CTX.catalog
C = CTX.constants


def pretrain(**over: Any) -> Profile:
    data: dict[str, Any] = {
        "name": "p", "task": "training", "domain": "llm",
        "model": {"params_b": 7, "layers": 32, "hidden_size": 4096, "kv_heads": 8},
        "training": {"tokens_b": 1000, "seq_len": 4096, "deadline_hours": 240},
        "software": {"framework": "pytorch"},
        "deployment": {"clouds": ["gcp", "aws"], "accelerators": ["h100"]},
    }
    return make_profile(data, over)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- real shapes


def test_whole_nodes_are_real_shapes_at_any_count() -> None:
    h200 = CAT.get("h200")
    assert h200.is_shape(160)  # 20 whole 8-GPU nodes
    assert not h200.is_shape(4)  # H200 VMs are whole 8-GPU nodes only
    assert h200.round_up(150) == 152
    assert CAT.get("h100").max_chips() >= 100_000
    assert CAT.get("h100").round_up(16_000) == 16_000
    assert CAT.get("h100").round_up(200_000) is None


def test_tpu_multislice_shapes() -> None:
    v5e = CAT.get("tpu-v5e")
    assert v5e.is_shape(256 * 196)
    assert v5e.is_shape(3 * 256)  # three identical v5e-256 slices over DCN
    assert not v5e.is_shape(257)
    assert v5e.round_up(300) == 304  # 19 x v5e-16 (fewest chips), not 2 x 256
    v4 = CAT.get("tpu-v4")
    assert v4.is_shape(6144)  # PaLM: two 3,072-chip pods
    assert v4.round_up(5000) == 6144


def test_check_accepts_whole_node_counts(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text(
        "name: h200-run\ntask: training\nmodel: {params_b: 70}\n"
        "training: {tokens_b: 200, seq_len: 4096, deadline_hours: 300}\n"
        "deployment: {clouds: [gcp]}\nproposal: {accelerator: h200, count: 160, hours: 300}\n"
    )
    r = run_cli("check", str(prof), "--format", "json", "--fail-on", "never")
    rules = [f["rule"] for res in json.loads(r.out)["results"] for f in res["findings"]]
    assert "proposal-not-a-real-shape" not in rules
    prof.write_text(prof.read_text().replace("count: 160", "count: 161"))
    r = run_cli("check", str(prof), "--format", "json", "--fail-on", "never")
    rules = [f["rule"] for res in json.loads(r.out)["results"] for f in res["findings"]]
    assert "proposal-not-a-real-shape" in rules


# ---------------------------------------------------------------- the scale model


def test_flat_inside_a_node_and_a_slice() -> None:
    p = pretrain()
    for acc, n in (("h100", 8), ("tpu-v6e", 256)):
        e = estimate(p, CAT.get(acc), n, C)
        assert e.parallelism is not None
        assert e.parallelism["comm_exposed_fraction"] == 0.0
        assert e.assumptions["scaling_efficiency"] > 0.99


def test_405b_on_80gb_gpus_is_sharded_and_fits() -> None:
    p = pretrain(model={"params_b": 405, "layers": 126, "hidden_size": 16384, "kv_heads": 8},
                 training={"tokens_b": 15600, "seq_len": 8192, "deadline_hours": 1882},
                 software={"framework": "pytorch", "cuda_libraries": ["megatron"]})
    e = estimate(p, CAT.get("h100"), 16384, C)
    assert e.fits_memory and e.parallelism is not None
    assert e.parallelism["data"] * e.parallelism["tensor"] * e.parallelism["pipeline"] == 16384
    # published MFU at 16K H100 is 38-43%: the modelled effective MFU must land near it
    eff = e.assumptions["scaling_efficiency"] * e.assumptions["mfu"]["expected"]
    assert 0.33 <= eff <= 0.46


def test_more_chips_than_the_batch_can_use_is_not_a_candidate() -> None:
    p = pretrain(
        model={"params_b": 0.125, "layers": 12, "hidden_size": 768}, training={"tokens_b": 10, "seq_len": 1024, "global_batch": 64}
    )
    e = estimate(p, CAT.get("h100"), 8192, C)
    assert not e.feasible and "batch" in (e.why_not or "")


# ---------------------------------------------------------------- objectives and the no-price basis


def _verdict(p: Profile) -> Any:
    return recommend(p, CTX.kb, CAT, C, with_flip=False)


def test_cost_is_the_cheapest_count_that_meets_the_deadline() -> None:
    rec = _verdict(pretrain(goal={"optimize": "cost"}))
    e = rec.estimate
    assert e is not None and e.meets_deadline and e.cost_usd is not None
    assert e.count > 8
    smaller = e.count - 8  # one whole node fewer
    assert CAT.get("h100").is_shape(smaller)
    fewer = estimate(pretrain(), CAT.get("h100"), smaller, C)
    # one node fewer misses the deadline, or (capacity bought by the day) needs another whole day of it and costs more
    assert not (fewer.hours or 0) <= 240 or (fewer.cost_usd or 0.0) > e.cost_usd, (smaller, fewer.hours, fewer.cost_usd)
    if e.capacity is not None and e.capacity.get("step_hours"):
        # before: with whole-day billing the smallest count that meets the deadline (144 H100, 239.9 h: 11 days) and the
        # ladder's 256 / 512 were the only counts costed; 208 H100 for 166 h (7 days) is cheaper than each
        for n in (144, 256, 512):
            other = estimate(pretrain(), CAT.get("h100"), n, C)
            assert (other.cost_usd or 0.0) >= e.cost_usd, (n, other.cost_usd, e.cost_usd)


def test_balanced_does_not_buy_a_large_count_for_a_marginal_gain() -> None:
    cost = _verdict(pretrain(goal={"optimize": "cost"})).estimate
    bal = _verdict(pretrain(goal={"optimize": "balanced"})).estimate
    assert cost is not None and bal is not None
    assert cost.count <= bal.count <= 1.5 * cost.count
    assert (bal.hours or 0) <= 240 * (1 - C.scoring.balanced_deadline_margin.value) + 1e-6


def test_time_never_goes_past_the_knee() -> None:
    rec = _verdict(pretrain(goal={"optimize": "time"}, training={"deadline_hours": None}))
    assert rec.estimate is not None and not rec.estimate.past_knee
    assert rec.estimate.count < CAT.get("h100").max_chips()


def test_without_prices_the_smallest_that_meets_the_deadline_not_the_biggest_cluster() -> None:
    p = pretrain(model={"params_b": 0.066, "layers": 6, "hidden_size": 768},
                 task="fine-tuning", training={"tokens_b": 0.1, "seq_len": 512, "deadline_hours": 24},
                 deployment={"clouds": ["on-prem"], "accelerators": None})
    rec = _verdict(p)
    assert rec.estimate is not None and rec.estimate.feasible
    assert rec.estimate.count <= 8


def test_without_a_deadline_the_default_is_stated() -> None:
    rec = _verdict(pretrain(training={"deadline_hours": None}))
    assert rec.estimate is not None
    assert "default" in rec.estimate.assumptions.get("target_hours_note", "")
    assert (rec.estimate.hours or 0) <= C.estimator.scaling.default_deadline_hours.value


def test_an_impossible_deadline_names_the_closest_configuration() -> None:
    rec = _verdict(pretrain(training={"deadline_hours": 0.5}))
    d = rec.to_json()
    assert d["verdict"]["feasible"] is False
    assert d["verdict"]["accelerator"] == "h100" and d["verdict"]["count"]
    assert rec.flip and rec.flip[0].startswith("training.deadline_hours: 0.5 ->")


def test_candidates_are_one_row_per_accelerator_with_the_closest_for_infeasible_ones() -> None:
    p = pretrain(deployment={"clouds": ["gcp"], "accelerators": None})
    d = recommend(p, CTX.kb, CAT, C, with_flip=False).to_json()
    ids = [c["accelerator"] for c in d["candidates"]]
    assert len(ids) == len(set(ids))
    for c in d["candidates"]:
        if not c["feasible"] and c["device"] == "gpu" and c["accelerator"] in ("a100-80gb", "h100"):
            assert c["fits_memory"]  # never the 1-chip shape that cannot hold the model


def test_unknown_accelerator_in_allow_list_is_an_input_error(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("name: x\ntask: training\nmodel: {params_b: 1}\ntraining: {tokens_b: 1}\ndeployment: {accelerators: [h1000]}\n")
    r = run_cli("recommend", str(prof))
    assert r.code == 2
    assert f"{prof}:5:" in r.err and "h100" in r.err


# ---------------------------------------------------------------- published runs


@pytest.fixture(scope="module")
def run_rows() -> list[calibration_runs.RunRow]:
    return calibration_runs.run(CTX)


def test_published_runs_are_sized_within_2x(run_rows: list[calibration_runs.RunRow]) -> None:
    assert len(run_rows) >= 12
    assert {r.split for r in run_rows} == {"fit", "held-out"}
    misses = [r.id for r in run_rows if not (r.chosen and 0.5 <= r.count_ratio <= 2.0)]
    # tinyllama-1.1b (published 16 A100, 56% MFU, a tuned run the stack's sourced figures do not reach) was sized at 40,
    # 2.5x, while its range compounded the MFU table's low..high with the fitted level's spread (slow end 1.71x the
    # expected hours); with the level's spread alone it takes 32, the fewest whose slow end meets the published 90 days
    assert not misses, misses
    # never past 2x: a cost tie takes the fewest chips whose slow end meets the target (79e8893 took 64 there)
    worst = max(max(r.count_ratio, 1.0 / r.count_ratio) for r in run_rows if r.chosen)
    assert worst <= 2.0, worst


def test_published_runs_wall_time_median(run_rows: list[calibration_runs.RunRow]) -> None:
    every = calibration_runs.summary(run_rows)
    assert every["median_time_error"] <= 0.35
    held = calibration_runs.summary([r for r in run_rows if r.split == "held-out"])
    # 9 whole runs, three of them 2022-era Megatron-DeepSpeed / FSDP on A100 that the FLOP-to-byte law reads 1.5-1.8x
    # fast (their software, not their chip); the 144 held-out rows of tests/data/published.yaml are the broader check
    assert held["median_time_error"] <= 0.50


# ---------------------------------------------------------------- non-token workloads and software


def test_vision_training_counts_flops_per_sample() -> None:
    """ResNet-152, ImageNet, 90 epochs: 3 x 23 GFLOPs x 115 M images = 7.9e18 FLOPs; published
    ~3.5 h on 8 A100 and 15-35 h on one v5e: within 2x."""
    p = Profile.model_validate({
        "name": "r", "task": "training", "domain": "vision",
        "model": {"params_b": 0.06, "architecture": "cnn", "flops_per_sample": 23e9},
        "training": {"samples": 115e6}, "software": {"framework": "tensorflow"},
    })
    e = estimate(p, CAT.get("a100-40gb"), 8, C)
    assert float(e.assumptions["flops"]) == pytest.approx(7.935e18, rel=0.01)
    assert 3.5 / 2 <= (e.hours or 0) <= 3.5 * 2
    v5e = estimate(p, CAT.get("tpu-v5e"), 1, C)
    assert 15 / 2 <= (v5e.hours or 0) <= 35 * 2
    assert not any("no FLOPs per sample" in w for w in e.warnings)


def test_a_cnn_without_flops_per_sample_says_what_it_assumed() -> None:
    p = Profile.model_validate({
        "name": "r", "task": "training", "domain": "vision",
        "model": {"params_b": 0.06, "architecture": "cnn"}, "training": {"samples": 115e6},
    })
    e = estimate(p, CAT.get("a100-40gb"), 8, C)
    assert any("no FLOPs per sample" in w and "ASSUMED" in w for w in e.warnings)


def test_qlora_on_tpu_is_bf16_lora_and_fp8_training_needs_fp8_hardware() -> None:
    q = pretrain(task="fine-tuning", model={"params_b": 70, "layers": 80, "hidden_size": 8192, "kv_heads": 8},
                 training={"tokens_b": 0.05, "method": "qlora", "deadline_hours": 48}, deployment={"clouds": ["gcp"], "accelerators": None})
    tpu = estimate(q, CAT.get("tpu-v6e"), 4, C)
    gpu = estimate(q, CAT.get("a100-80gb"), 1, C)
    # bitsandbytes (implied by QLoRA) has no TPU kernels: infeasible there, with the fix
    assert not tpu.feasible and "bitsandbytes" in (tpu.why_not or "") and "accept_equivalents" in (tpu.why_not or "")
    assert gpu.feasible and not any("bitsandbytes" in w for w in gpu.warnings)
    sw = q.software.model_copy(update={"accept_equivalents": True})
    tpu = estimate(q.model_copy(update={"software": sw}), CAT.get("tpu-v6e"), 4, C)
    assert any("bitsandbytes" in w and "bf16 LoRA" in w for w in tpu.warnings)
    assert not tpu.fits_memory  # 140 GB of bf16 base weights do not fit a 128 GB v6e-4
    assert gpu.fits_memory  # 35 GB of NF4 weights fit one 80 GB GPU
    fp8 = pretrain(model={"params_b": 7, "layers": 32, "hidden_size": 4096, "kv_heads": 8, "precision": "fp8"})
    a100 = estimate(fp8, CAT.get("a100-80gb"), 8, C)
    h100 = estimate(fp8, CAT.get("h100"), 8, C)
    assert any("no fp8 rate" in w for w in a100.warnings) and not any("no fp8 rate" in w for w in h100.warnings)
    assert a100.assumptions["peak_tflops_per_chip"] == 312.0


def test_training_needs_tokens_or_samples(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("name: x\ntask: training\nmodel: {params_b: 1}\ntraining: {seq_len: 512}\n")
    r = run_cli("validate", str(prof))
    assert r.code == 2 and "tokens_b" in r.err and "samples" in r.err
