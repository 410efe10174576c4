from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.catalog import load_catalog
from advisor.constants import load_constants
from advisor.errors import InputError
from advisor.estimate.replica import model_shape
from advisor.estimate.search import estimate
from advisor.models import Profile

from . import calibration
from .conftest import run_cli

CAT = load_catalog()
C = load_constants()


def train(**over) -> Profile:  # type: ignore[no-untyped-def]
    data = {"name": "t", "task": "training", "domain": "llm", "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8},
            "training": {"tokens_b": 100, "seq_len": 4096}}
    data.update(over)
    return Profile.model_validate(data)


def serve(**over) -> Profile:  # type: ignore[no-untyped-def]
    data = {"name": "s", "task": "inference", "domain": "llm", "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8},
            "inference": {"peak_qps": 10, "input_tokens": 512, "output_tokens": 256}}
    data.update(over)
    return Profile.model_validate(data)


# ---------------------------------------------------------------- calibration against published measurements


def test_calibration_against_published_measurements() -> None:
    rows = calibration.run(CAT, C)
    assert len(rows) >= 10
    s = calibration.summary(rows)
    assert s["median_abs_error"] <= 0.35, s
    for r in rows:
        assert 0.5 <= r.ratio <= 2.0, (r.id, r.ratio)
    assert {r.kind for r in rows} == {"training", "inference"}
    assert any(CAT.get(r.accelerator).device == "tpu" for r in rows)
    assert any(CAT.get(r.accelerator).device == "gpu" for r in rows)


def test_every_measurement_names_its_source() -> None:
    for m in calibration.measurements():
        assert m["source"] and m["measured"]["value"] > 0


# ---------------------------------------------------------------- catalog


def test_catalog_has_design_ids_and_sources() -> None:
    for cid in (
        "tpu-v4",
        "tpu-v5e",
        "tpu-v5p",
        "tpu-v6e",
        "tpu-v7",
        "t4",
        "l4",
        "a10g",
        "a100-40gb",
        "a100-80gb",
        "h100",
        "h200",
        "b200",
        "mi300x",
    ):
        acc = CAT.get(cid)
        assert acc.specs.source and acc.specs.as_of and acc.shapes.source
        for p in acc.prices:
            assert p.source and p.as_of and p.usd_per_chip_hour > 0
    assert CAT.resolve("ironwood") == "tpu-v7" and CAT.resolve("trillium") == "tpu-v6e"
    assert CAT.resolve("v5litepod") == "tpu-v5e" and CAT.resolve("H100-SXM") == "h100"


def test_tpu_slice_names_count_cores_or_chips() -> None:
    assert CAT.get("tpu-v5p").slice_for(4).accelerator_type == "v5p-8"
    assert CAT.get("tpu-v4").slice_for(4).accelerator_type == "v4-8"
    assert CAT.get("tpu-v5e").slice_for(8).accelerator_type == "v5litepod-8"
    assert CAT.get("tpu-v6e").slice_for(8).accelerator_type == "v6e-8"


def _override(tmp_path: Path, text: str) -> str:
    f = tmp_path / "over.yaml"
    f.write_text(text)
    return str(f)


def test_catalog_override_changes_a_price(tmp_path: Path) -> None:
    f = _override(tmp_path, """\
schema_version: 1
sources:
  NEGOTIATED: {url: "https://example.com/contract", retrieved: "2026-11-01"}
accelerators:
  - id: h100
    prices:
      - {cloud: gcp, kind: on-demand, usd_per_chip_hour: 2.5, source: [NEGOTIATED], as_of: "2026-11-01"}
""")
    cat = load_catalog([f])
    h100 = cat.get("h100")
    assert h100.price(["gcp"], "on-demand").usd_per_chip_hour == 2.5
    # the other prices (AWS, spot) are kept: an override changes only what it names
    assert h100.price(["aws"], "on-demand") is not None and h100.price(["gcp"], "spot") is not None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  - id: h100\n    prices:\n      - {cloud: gcp, kind: on-demand, usd_per_chip_hour: -1, source: [S], as_of: '2026-01-01'}\n",
         "accelerators[0].prices[0].usd_per_chip_hour: Input should be greater than 0"),
        ("  - id: h100\n    prices:\n      - {cloud: gcp, kind: on-demand, usd_per_chip_hour: 2}\n",
         "accelerators[0].prices[0].source: required field is missing"),
        ("  - id: h100\n    prices:\n      - {cloud: gcp, kind: on-demand, usd_per_chip_hour: 2, source: [NOPE], as_of: '2026-01-01'}\n",
         "unknown source 'NOPE'"),
        ("  - id: h1000\n    device: gpu\n", "(new accelerator; to change an existing one use its id; did you mean 'h100'?)"),
        ("  - id: h100\n    prices:\n      - {cloud: gcp, kind: on-demand, usd_per_chip_hour: 'free', source: [S], as_of: '2026-01-01'}\n",
         "Input should be a valid number"),
    ],
)
def test_bad_catalog_override(tmp_path: Path, body: str, expected: str) -> None:
    f = _override(tmp_path, "schema_version: 1\nsources:\n  S: {url: 'https://x', retrieved: '2026-01-01'}\naccelerators:\n" + body)
    with pytest.raises(InputError) as exc:
        load_catalog([f])
    assert expected in str(exc.value)
    assert str(exc.value).startswith(f + ":")


def test_catalog_entry_without_source_is_rejected(tmp_path: Path) -> None:
    f = _override(tmp_path, """\
schema_version: 1
accelerators:
  - id: my-chip
    device: gpu
    name: My chip
    vendor: me
    specs: {peak_tflops: {bf16: 100}, memory_gib: 10, memory_bandwidth_gbps: 100}
    shapes: {gpus_per_node: 8, partial_node_counts: [1, 8], source: [X], as_of: "2026-01-01"}
""")
    with pytest.raises(InputError) as exc:
        load_catalog([f])
    assert "specs.source: required field is missing" in str(exc.value)
    assert "specs.as_of: required field is missing" in str(exc.value)


def test_cli_catalog_json_and_override_error(tmp_path: Path) -> None:
    r = run_cli("catalog", "--format", "json")
    assert r.code == 0
    data = json.loads(r.out)
    assert data["as_of"] and len(data["accelerators"]) >= 14
    bad = _override(tmp_path, "schema_version: 2\n")
    r = run_cli("catalog", "--catalog", bad)
    assert r.code == 2 and f"{bad}:1:17: error: schema_version" in r.err


# ---------------------------------------------------------------- training model


def test_training_flops_time_and_lora() -> None:
    acc = CAT.get("tpu-v6e")
    full = estimate(train(), acc, 8, C)
    lora = estimate(train(training={"tokens_b": 100, "seq_len": 4096, "method": "lora"}), acc, 8, C)
    # 6 N D plus causal attention, 6 x layers x seq_len x hidden per token (new physics: attention charged)
    assert full.assumptions["flops"] == f"{6 * 8e9 * 100e9 + 6 * 32 * 4096 * 4096 * 100e9:.3e}"
    assert lora.hours < full.hours
    assert lora.memory_per_chip_gb < full.memory_per_chip_gb
    assert full.hours_low < full.hours < full.hours_high
    assert full.cost_low < full.cost_usd < full.cost_high


def test_memory_decides_the_smallest_shape() -> None:
    big = train(model={"params_b": 70, "layers": 80, "hidden_size": 8192, "kv_heads": 8})
    acc = CAT.get("tpu-v5e")
    assert not estimate(big, acc, 8, C).fits_memory
    assert estimate(big, acc, 256, C).fits_memory


def test_deadline_and_budget_feasibility() -> None:
    p = train(training={"tokens_b": 100, "seq_len": 4096, "deadline_hours": 1}, goal={"budget_usd": 10})
    e = estimate(p, CAT.get("h100"), 8, C)
    assert e.meets_deadline is False and e.within_budget is False and not e.feasible
    assert "deadline" in e.why_not and "budget" in e.why_not


def test_missing_price_is_unpriced_never_zero() -> None:
    e = estimate(train(), CAT.get("tpu-v7"), 8, C)
    assert e.cost_usd is None and any("unpriced" in w for w in e.warnings)


# ---------------------------------------------------------------- inference model


def test_decode_is_bandwidth_bound_and_batch_respects_latency() -> None:
    acc = CAT.get("h100")
    loose = estimate(serve(), acc, 1, C)
    tight = estimate(serve(inference={"peak_qps": 10, "input_tokens": 512, "output_tokens": 256, "latency_p99_ms": 3000}), acc, 1, C)
    assert tight.batch <= loose.batch and tight.latency_ms <= 3000
    # batch 1: time per token ~ weights / (bandwidth x utilisation)
    one = estimate(serve(), acc, 1, C, batch=1)
    ic = C.estimator.inference
    expected_ms = 16e9 / (3350e9 * ic.decode_bandwidth_utilisation.expected) * 1000 + 32 * ic.gpu_step_overhead_per_layer_us.value / 1000
    assert one.tpot_ms == pytest.approx(expected_ms, rel=0.15)


def test_replicas_cover_peak_qps_and_cost_per_token() -> None:
    acc = CAT.get("tpu-v6e")
    low = estimate(serve(), acc, 4, C)
    high = estimate(serve(inference={"peak_qps": 1000, "input_tokens": 512, "output_tokens": 256}), acc, 4, C)
    assert high.replicas > low.replicas
    assert high.cost_usd > low.cost_usd
    assert low.usd_per_million_tokens > 0


def test_kv_cache_approximation_when_shape_absent() -> None:
    s = model_shape(Profile.model_validate({"name": "x", "task": "inference", "model": {"params_b": 8}, "inference": {}}))
    assert 28 <= s.layers <= 40 and 3500 <= s.hidden <= 5000 and s.kv_dim == 1024
    assert set(s.approximated) == {"layers", "hidden_size", "kv_heads"}


def test_a_mixture_of_experts_shape_comes_from_its_active_weights() -> None:
    """DeepSeek-V3 (61 layers x 7,168; 37B of 671B active): a token passes one attention and its
    experts per layer, so 12 x layers x hidden^2 is the active count, not the total."""
    def shape(**model):  # type: ignore[no-untyped-def]
        return model_shape(Profile.model_validate({"name": "x", "task": "inference", "model": {"params_b": 671, "active_params_b": 37,
                                                   "architecture": "moe", **model}, "inference": {}}))

    s = shape()
    assert 50 <= s.layers <= 70 and 6000 <= s.hidden <= 8500
    assert 50 <= shape(hidden_size=7168).layers <= 70 and 6000 <= shape(layers=61).hidden <= 8500


def test_weights_that_do_not_fit_are_infeasible() -> None:
    e = estimate(serve(model={"params_b": 405}), CAT.get("l4"), 1, C)
    assert not e.fits_memory and not e.feasible and "do not fit" in e.why_not


def test_non_llm_request_model() -> None:
    p = Profile.model_validate(
        {
            "name": "sd",
            "task": "inference",
            "domain": "diffusion",
            "model": {"params_b": 3.5, "architecture": "diffusion"},
            "inference": {"peak_qps": 2, "input_tokens": 77, "output_tokens": 1},
        }
    )
    e = estimate(p, CAT.get("h100"), 1, C)
    assert e.assumptions["memory"]["request_model"].startswith("diffusion")


def test_estimate_cli_json_contract() -> None:
    r = run_cli("estimate", "profiles/llm-chatbot.yaml", "--accelerator", "trillium", "--count", "8", "--format", "json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    for key in ("accelerator", "count", "hours", "cost_usd", "tokens_per_second", "memory_per_chip_gb", "fits_memory", "assumptions",
                "batch", "ttft_ms", "tpot_ms", "latency_ms", "replicas", "usd_per_million_tokens"):
        assert key in d
    assert d["accelerator"] == "tpu-v6e"
    r = run_cli("estimate", "profiles/llm-pretrain-70b.yaml", "-a", "h100", "-n", "512", "-f", "json")
    d = json.loads(r.out)
    assert d["hours"] > 0 and d["tokens_per_second"] > 0 and "batch" not in d


def test_estimate_unknown_accelerator_is_exit_2() -> None:
    r = run_cli("estimate", "profiles/llm-chatbot.yaml", "--accelerator", "h1000", "--count", "8")
    assert r.code == 2 and "did you mean 'h100'?" in r.err


def test_shapes_a_cloud_does_not_sell_at_that_pricing() -> None:
    # GCP sells H100 on demand only as whole 8-GPU VMs (a3-highgpu-8g); 1-4 GPUs are Spot/Flex-start.
    p = serve()
    one = estimate(p, CAT.get("h100"), 1, C)
    assert not one.feasible and "only from 8 chips" in one.why_not and one.cost_usd is None
    assert estimate(p, CAT.get("h100"), 8, C).priced
    spot = serve(deployment={"clouds": ["gcp"], "pricing": "spot"})
    assert estimate(spot, CAT.get("h100"), 1, C).priced


def _train(**model: Any) -> Profile:
    data = {"name": "t", "task": "training", "model": {"params_b": 8, "layers": 32, "hidden_size": 4096} | model,
            "training": {"tokens_b": 100, "seq_len": 8192}}
    return Profile.model_validate(data)


def test_training_charges_causal_attention() -> None:
    """6 N D leaves out attention: 6 x layers x seq_len x d_attn per token (PaLM appendix B, causal half as
    MaxText and Megatron count it) -- 13% more for an 8B model at 8k, 3x more at 128k."""
    from advisor.estimate.training import attention_flops

    p = _train()
    dense = 6 * 8e9 * 100e9
    assert attention_flops(p) == pytest.approx(6 * 32 * 8192 * 4096 * 100e9)
    e = estimate(p, CAT.get("h100"), 8, C)
    assert float(e.assumptions["flops"]) == pytest.approx(dense + attention_flops(p), rel=1e-3)
    assert "attention" in e.assumptions["flops_formula"]
    long = _train().model_copy(update={"training": p.training.model_copy(update={"seq_len": 131072})})  # type: ignore[union-attr]
    assert attention_flops(long) > 2 * dense


def test_moe_and_8_bit_training_take_their_fitted_levels() -> None:
    """A mixture of experts reaches less of the peak than a dense model (all-to-all, routing imbalance,
    grouped GEMMs) and an 8-bit run less than twice its 16-bit rate; each factor comes from the most
    specific level with >= 3 fit rows from >= 2 publications, and the estimate says which."""
    dense = estimate(_train(params_b=30), CAT.get("h100"), 64, C)
    moe = estimate(_train(params_b=30, active_params_b=30, architecture="moe"), CAT.get("h100"), 64, C)
    assert (moe.hours or 0) > 1.5 * (dense.hours or 0)
    lv = moe.assumptions["levels"]["moe_training_factor"]
    assert lv["level"] == "global" and lv["fit_rows"] >= 3 and len(lv["fit_sources"]) >= 2
    # v6e's own MoE rows are coarse (Mixtral): a coarse MoE on v6e takes them, one without its routing the TPU family's
    mixtral_like = _train(params_b=30, active_params_b=30, architecture="moe", experts=8, experts_per_token=2)
    coarse = estimate(mixtral_like, CAT.get("tpu-v6e"), 64, C)
    assert coarse.assumptions["levels"]["moe_training_factor"]["level"].startswith("generation")
    tpu = estimate(_train(params_b=30, active_params_b=30, architecture="moe"), CAT.get("tpu-v6e"), 64, C)
    assert tpu.assumptions["levels"]["moe_training_factor"]["level"].startswith("family")
    fp8 = estimate(_train(precision="fp8"), CAT.get("h100"), 8, C)
    bf16 = estimate(_train(), CAT.get("h100"), 8, C)
    speedup = ((bf16.hours or 0) - 0.17) / ((fp8.hours or 0) - 0.17)
    assert 1.0 < speedup < 2.0  # attained FP8 rate below 2x the bf16 one
    assert "low_precision_training_factor" in fp8.assumptions["levels"]


def test_a_mixture_of_experts_gains_from_fp8_only_in_its_matmuls() -> None:
    """moe_training_factor sizes what a MoE adds to its matmuls (dispatch, permutation, imbalance); an 8-bit peak
    halves the matmuls, not that (Amdahl). In 16 bits the MoE runs at dense x factor; in FP8 it gains less than a
    dense model does (Ironwood MaxText, one chip and stack: dense Llama-3 1.53x, DeepSeek-V3 1.21x, Qwen3-235B 1.12x)."""
    from advisor.estimate.training import _training_rate

    ironwood = CAT.get("tpu-v7")
    moe = {"params_b": 235, "active_params_b": 22, "architecture": "moe", "experts": 128, "experts_per_token": 8,
           "layers": 94, "hidden_size": 4096}

    def rate(precision: str, **model: Any) -> float:
        r = _training_rate(_train(precision=precision, **model), ironwood, C)
        return r.peak * r.size_factor

    dense_gain = rate("fp8") / rate("bf16")
    moe_gain = rate("fp8", **moe) / rate("bf16", **moe)
    assert 1.3 < dense_gain < 2.0 and 1.0 < moe_gain < dense_gain
    factor = C.estimator.level("moe_training_factor", {"device": "tpu", "accelerator": "tpu-v7", "routing": "fine"})
    assert factor is not None
    bf16_dense = _training_rate(_train(precision="bf16", **{k: moe[k] for k in ("layers", "hidden_size")}, params_b=22), ironwood, C)
    # in 16 bits: the dense-equivalent rate times the factor (the same size class, so the same dense levels)
    assert rate("bf16", **moe) == pytest.approx(bf16_dense.peak * bf16_dense.size_factor * factor.value, rel=1e-9)
    # the law on the factor: the MoE's FP8 gain is 1 / (f / s + 1 - f), s the dense one (1.19x at f 0.47, s 1.5)
    assert moe_gain == pytest.approx(1.0 / (factor.value / dense_gain + 1.0 - factor.value), rel=1e-9)


def test_a_level_below_global_needs_three_rows_from_two_sources() -> None:
    from pydantic import ValidationError

    from advisor.constants import LevelRow

    row = {"constant": "moe_training_factor", "level": "vendor", "match": {"device": "gpu", "vendor": "amd"}, "value": 0.5,
           "low": 0.4, "high": 0.6, "fit_rows": ["a", "b", "c"], "fit_sources": ["one", "one", "one"], "source": ["S"]}
    with pytest.raises(ValidationError, match="independent sources"):
        LevelRow.model_validate(row)
    LevelRow.model_validate(row | {"fit_sources": ["one", "two", "two"]})
    for lv in C.estimator.levels:
        assert lv.level == "global" or (len(lv.fit_rows) >= 3 and len(set(lv.fit_sources)) >= 2)


@pytest.mark.slow  # an exhaustive refit of every level (seconds), as test_training_intensity_is_what_the_fit_rows_give
def test_the_levels_are_what_the_fit_rows_give() -> None:
    """rules/estimator.yaml levels are reproduced by python -m tests.fit_levels from the fit rows alone."""
    from . import fit_levels

    def key(r: Any) -> tuple[Any, ...]:
        return (r.constant, r.level, tuple(sorted(r.match.items())), r.value, r.low, r.high, tuple(r.fit_rows), tuple(r.fit_sources))

    assert [key(r) for r in fit_levels.fit_all()] == [key(r) for r in C.estimator.levels]


def test_every_time_and_throughput_has_a_range() -> None:
    """Training and serving estimates carry low / high for each time, throughput and latency, from the
    spread of each constant's level (training: the MFU table and the fitted levels; serving: the
    bandwidth utilisation, prefill MFU and loaded-prefill spreads), and the estimate lies inside."""
    t = estimate(_train(), CAT.get("tpu-v6e"), 8, C)
    for key in ("hours", "tokens_per_second"):
        lo, hi = t.ranges[key]
        assert lo < getattr(t, key) < hi, key
    s = estimate(serve(), CAT.get("h100"), 1, C)
    for key in ("ttft_ms", "tpot_ms", "latency_ms", "tokens_per_second"):
        lo, hi = s.ranges[key]
        assert lo <= getattr(s, key) <= hi and lo < hi, key
    assert set(s.to_json()["ranges"]) == {"ttft_ms", "tpot_ms", "latency_ms", "tokens_per_second"}
