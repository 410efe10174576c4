"""The physics that carries the estimator across chips, precisions and batch sizes (docs/estimator.md):
the memory-bound share of a training step (MFU falls with the chip's FLOP-to-byte ratio), what a chip's
kernels attain of its datasheet peaks (microbenchmarks, relative to the family's reference chip), a decode
step as two kernels each at its own bound, and serving ranges at least as wide as the step model's misses
on its fit rows. The held-out check of the whole base runs in the slow group."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.api import Context
from advisor.catalog import load_catalog
from advisor.constants import load_constants
from advisor.estimate import serving
from advisor.estimate.search import estimate
from advisor.estimate.sizing import attained_scale
from advisor.estimate.training import intensity_factor
from advisor.models import Profile

CAT = load_catalog()
C = load_constants()


def train(acc: str, precision: str = "bf16") -> Any:
    p = Profile.model_validate({
        "name": "t", "task": "training", "domain": "llm", "software": {"framework": "jax" if acc.startswith("tpu") else "pytorch"},
        "model": {"params_b": 70, "layers": 80, "hidden_size": 8192, "kv_heads": 8, "precision": precision},
        "training": {"tokens_b": 100, "seq_len": 4096},
    })
    return estimate(p, CAT.get(acc), 256, C)


def test_reference_chips_are_what_the_catalog_says() -> None:
    """The FLOP-to-byte ratio and attained fractions each family's constants stand on are its reference chip's
    catalog figures (a catalog edit that moves them fails here, not silently)."""
    for fam, ref in C.estimator.training_intensity.reference.items():
        acc = CAT.get(ref.accelerator)
        assert acc.device == fam
        assert ref.flop_per_byte == pytest.approx(acc.peak_bf16_flops / (acc.specs.memory_bandwidth_gbps * 1e9), abs=0.05)
        att = acc.specs.attained
        assert dict(ref.matmul) == (dict(att.matmul) if att else {})
        assert ref.memory == (att.memory if att else None)


def test_mfu_falls_with_the_flop_to_byte_ratio() -> None:
    """One stack, one model: a chip with more FLOPs per byte of HBM reaches less of its peak (v5p 166 and v5e 241
    above v6e 560; A100 153 above H100 295), and an FP8 step less of the FP8 peak than a bf16 step of the bf16 one."""
    for fam in ("tpu", "gpu"):
        assert 0 < C.estimator.training_intensity.k(fam) < 0.01
    v6e, v5p, v5e = (CAT.get(x) for x in ("tpu-v6e", "tpu-v5p", "tpu-v5e"))
    assert intensity_factor(v6e, v6e.peak_bf16_flops, C) == pytest.approx(1.0, rel=1e-3)
    assert intensity_factor(v5p, v5p.peak_bf16_flops, C) > intensity_factor(v5e, v5e.peak_bf16_flops, C) > 1.0
    h100, a100 = CAT.get("h100"), CAT.get("a100-80gb")
    assert intensity_factor(a100, a100.peak_bf16_flops, C) > 1.0
    assert intensity_factor(h100, h100.peak_bf16_flops, C) == pytest.approx(1.0, rel=1e-3)
    assert intensity_factor(h100, h100.peak_flops("fp8"), C) < 1.0
    cpu = next(a for a in CAT.accelerators.values() if a.device == "cpu")
    assert intensity_factor(cpu, cpu.peak_bf16_flops, C) == 1.0  # a family without a reference chip keeps its row
    # and it reaches the estimate: the same model on v5p computes at a larger share of its peak than on v6e
    assert train("tpu-v5p").assumptions["intensity_factor"] > train("tpu-v6e").assumptions["intensity_factor"]


def test_a_chip_that_attains_less_of_its_peak_runs_slower() -> None:
    """MI300X GEMMs reach ~0.53 of the bf16 peak and ~0.47 of the fp8 peak where H100's reach 0.80 and 0.70; its HBM
    0.79 where H100's 0.88 (catalog specs.attained, microbenchmarks): every compute- and memory-bound phase scales."""
    mi = CAT.get("mi300x")
    m16, mem = attained_scale(mi, C, "bf16")
    m8, _ = attained_scale(mi, C, "fp8")
    assert m16 == pytest.approx(0.53 / 0.80) and m8 == pytest.approx(0.47 / 0.70) and mem == pytest.approx(0.79 / 0.88)
    # fp16 runs on the bf16 datapath, int8 and 4-bit on the 8-bit one: the same figures, never a silent 1
    assert attained_scale(mi, C, "fp16") == attained_scale(mi, C, "bf16")
    assert attained_scale(mi, C, "int8") == attained_scale(mi, C, "fp8") == attained_scale(mi, C, "int4")
    assert attained_scale(CAT.get("h100"), C, "bf16") == (1.0, 1.0)
    assert attained_scale(CAT.get("tpu-v6e"), C, "bf16") == (1.0, 1.0)  # no microbenchmark read: the reference's
    assert attained_scale(CAT.get("b200"), C, "bf16")[1] == 1.0  # a missing memory figure inherits the reference's
    ctx = Context.load()
    plain = ctx.catalog.get("mi300x").specs.model_copy(update={"attained": None})
    bare = ctx.catalog.get("mi300x").model_copy(update={"specs": plain})
    p = Profile.model_validate({"name": "s", "task": "inference", "domain": "llm",
                                "model": {"params_b": 70, "layers": 80, "hidden_size": 8192, "kv_heads": 8},
                                "inference": {"mode": "batch", "input_tokens": 1024, "output_tokens": 1024, "peak_qps": 1}})
    slow, fast = estimate(p, ctx.catalog.get("mi300x"), 8, C, batch=512), estimate(p, bare, 8, C, batch=512)
    assert (slow.tokens_per_second or 0) < 0.9 * (fast.tokens_per_second or 0)


def test_a_decode_step_is_two_kernels_each_at_its_own_bound() -> None:
    """The weight GEMMs and the decode attention run one after the other: at a batch where the GEMMs are
    compute-bound the KV read is added to them, not hidden under them (a whole-step max was 1.4-2x fast)."""
    r = serving.LlmReplica(
        weights=16e9, active_bytes=16e9, n_active=8e9, kv_per_token=131072, layers=32, attn_dim=4096,
        input_tokens=1024, output_tokens=1024, bandwidth=3.35e12, compute=989e12, overhead=0.0,
    )
    b = 1024
    pt = r.point(b, 1.0, 1.0)
    gemm = max(16e9 / 3.35e12, (2 * 8e9 * b + r._fixed[2] * (b - 1)) / 989e12)
    att = b * max(r.kv_bytes(1024 + 512) / 3.35e12, 4 * 32 * 4096 * 1536 / 989e12)
    assert pt.tpot == pytest.approx(gemm + att, rel=1e-9)
    assert pt.tpot > max(16e9 / 3.35e12 + b * r.kv_bytes(1536) / 3.35e12, gemm)
    # the closed-form guess the search starts from stays consistent with the step model
    target = pt.latency * 1.0001
    guess = r.concurrency_within(target, 1.0, 1.0)
    assert guess is not None and abs(guess - b) <= 2


def test_serving_ranges_are_as_wide_as_the_fit_rows_misses() -> None:
    """A serving estimate's range holds the step model's smallest and largest measured / estimated ratio on the
    fit rows of its level (serving_spread; a level of its own only from >= 9 rows, else the one above)."""
    p = Profile.model_validate({"name": "s", "task": "inference", "domain": "llm",
                                "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8},
                                "inference": {"mode": "online", "peak_qps": 5, "input_tokens": 1024, "output_tokens": 256,
                                              "latency_p99_ms": 20000},
                                "software": {"serving_stack": "vllm"}})
    e = estimate(p, CAT.get("l4"), 1, C)
    lv = e.assumptions["levels"]["serving_spread"]
    assert lv["fit_rows"] >= 9
    lo, hi = e.ranges["tokens_per_second"]
    tps = e.tokens_per_second or 0
    assert lo <= tps * min(lv["low"], 1) * 1.0001 and hi >= tps * max(lv["high"], 1) * 0.9999
    t_lo, t_hi = e.ranges["tpot_ms"]
    assert t_lo <= (e.tpot_ms or 0) / max(lv["high"], 1) * 1.0001 and t_hi >= (e.tpot_ms or 0) / min(lv["low"], 1) * 0.9999
    for row in C.estimator.levels:
        if row.constant == "serving_spread" and row.level != "global":
            assert len(row.fit_rows) >= 9


@pytest.mark.slow
def test_training_intensity_is_what_the_fit_rows_give() -> None:
    from . import fit_levels

    ti = C.estimator.training_intensity
    ctx = Context.load()
    assert fit_levels.fit_intensity() == {fam: ti.k(fam) for fam in fit_levels.families(ctx)}
    # each k within its physical bound: the step without its memory-bound share reaches at most what the matmuls attain
    for fam in fit_levels.families(ctx):
        assert ti.k(fam) <= fit_levels.intensity_bound(ctx, fam)


@pytest.mark.slow
def test_held_out_publications_stay_within_their_bounds() -> None:
    """The held-out side of tests/data/published.yaml (whole publications no constant saw): median |error|, rows
    outside 2x, TPU / GPU optimism tilt and range coverage as the closing notes report them (python -m
    tests.calibration_published); a change that loses ground fails here."""
    from . import calibration_published as cp

    held = [x for x in cp.run() if x.split == "held-out"]
    s = cp.summarise(held)
    assert s.n >= 180
    # 16.9% on 188 rows; 18.0% since 25 fresh rows of 14 publications were added held out (2026-12-07)
    assert s.median_abs_error is not None and s.median_abs_error <= 0.185
    # 5 rows outside 2x before the GPUStack performance lab was added (held out, 2026-12-05); its vLLM baselines added 8
    # offline rows outside 2x (gpt-oss pessimistic 0.26-0.50 on A100 and H100; optimistic 2.6-5.1: the 128/4-token runs of
    # DeepSeek-R1 on H200 and Qwen3-14B on H100, Qwen3-32B 4000/200 on H100), 7 since tensor-parallel KV replication;
    # the 25 fresh rows (2026-12-07) added 6, 3 left once the MoE routing level was fitted across families (SGLang-JAX on
    # Ironwood 2.0-2.3x optimistic, DeepSeek-R1 AWQ at concurrency 1 on H100 2.75x); 14 once the Ironwood vLLM rows took
    # their benchmark's real lengths and the server's 135-request cap (1k/8k 0.50 -> 0.54): the bar is where the base
    # stands, not #28's
    assert s.outside_2x <= 14
    assert 0.87 <= s.signed["tpu"] / s.signed["gpu"] <= 1.15
    # 0.90 while a training range compounded the MFU table's low..high with the fitted levels' spread (every held-out
    # training row inside: too wide to inform); 0.85 with the levels' spread alone, read where it rests on >= 9 fit rows
    assert s.covered / s.with_range >= 0.82
    # offline batch (issue #28: within 2x of the saturated published figures): 44 of 44 before the lab, 81 of 88 with it
    batch = cp.summarise([x for x in held if x.regime == "serve batch"])
    assert batch.n >= 80 and batch.outside_2x <= 7


def test_a_training_range_is_its_fitted_levels_spread_not_also_the_mfu_tables() -> None:
    """A fitted level's low..high is the smallest and largest factor its fit rows needed on top of the MFU table's
    expected figure: it already spans how far published runs sit from it. Compounded with the table's own low..high
    (0.25..0.45 around 0.35 for the PyTorch class) the range ran 0.56x..1.71x of the expected hours and every held-out
    training row fell inside it. Now the range is the level's spread, read where it rests on >= 9 fit rows (H100's own
    level has 7: its value is H100's, its range the GPU family's); a run with no fitted level keeps the table's range."""
    from advisor.constants import MIN_SPREAD_ROWS

    e = train("h100")
    rows = e.assumptions["levels"]["dense_training_factor"]
    assert rows["level"] == "generation (device gpu, accelerator h100)" and rows["fit_rows"] < MIN_SPREAD_ROWS
    spread = rows["range"]
    assert spread["level"] == "family (device gpu)" and spread["fit_rows"] >= MIN_SPREAD_ROWS
    compute = e.hours - e.assumptions["startup_hours"]
    assert (e.hours_high - e.assumptions["startup_hours"]) / compute == pytest.approx(1 / spread["low"], rel=0.02)
    assert (e.hours_low - e.assumptions["startup_hours"]) / compute == pytest.approx(1 / spread["high"], rel=0.02)
    assert e.hours_high / e.hours < 1.3
    # TPU v6e's level rests on 11 rows: value and range its own
    v6e = train("tpu-v6e").assumptions["levels"]["dense_training_factor"]
    assert v6e["fit_rows"] >= MIN_SPREAD_ROWS and "range" not in v6e


def _serve(model: dict[str, Any], stack: str = "vllm", acc: str = "h100", count: int = 1, output: int = 4096) -> Any:
    p = Profile.model_validate({
        "name": "s", "task": "inference", "domain": "llm", "software": {"serving_stack": stack},
        "model": model, "inference": {"mode": "batch", "input_tokens": 1024, "output_tokens": output, "peak_qps": 1},
    })
    return estimate(p, CAT.get(acc), count, C)


def _train(model: dict[str, Any], seq_len: int = 32768) -> Any:
    p = Profile.model_validate({"name": "t", "task": "training", "domain": "llm", "model": model,
                                "training": {"tokens_b": 100, "seq_len": seq_len}})
    return estimate(p, CAT.get("h100"), 64, C)


GEMMA3_12B = {"params_b": 12.2, "layers": 48, "hidden_size": 3840, "kv_heads": 8}


def test_weight_only_quantisation_sets_the_weights_memory_not_the_compute_rate() -> None:
    """gpt-oss-120b's MXFP4 experts served with fp8 activations: 4-bit weights (58 GB, not 117) leave the KV cache room
    for several times the requests, while the FLOPs still run at the fp8 rate."""
    oss = {"params_b": 116.8, "active_params_b": 5.1, "architecture": "moe", "experts": 128, "experts_per_token": 4,
           "layers": 36, "hidden_size": 2880, "kv_heads": 8, "precision": "fp8"}
    fp8, w4 = _serve(oss, "tensorrt-llm", "h200"), _serve({**oss, "weights_precision": "int4"}, "tensorrt-llm", "h200")
    assert fp8.assumptions["memory"]["weights_gb"] == pytest.approx(116.8)
    assert w4.assumptions["memory"]["weights_gb"] == pytest.approx(58.4)
    assert w4.assumptions["memory"]["max_batch_by_memory"] > 3 * fp8.assumptions["memory"]["max_batch_by_memory"]
    assert w4.assumptions["peak_tflops_per_chip"] == fp8.assumptions["peak_tflops_per_chip"]


def test_attention_flops_use_heads_times_head_dim_and_the_window() -> None:
    """Training attention computes at heads x head_dim (Gemma 3 12B: 16 x 256 = 4,096 on a 3,840 model), and a sliding
    window bounds the keys of its layers (5 of 6 at 1,024 tokens): at 32k tokens the run is well over 1.2x faster than
    with full attention on every layer, and wider heads cost more than hidden_size would."""
    full = _train(GEMMA3_12B)
    wide = _train({**GEMMA3_12B, "attention": {"heads": 16, "head_dim": 256}})
    gemma = _train({**GEMMA3_12B, "attention": {"kind": "sliding", "heads": 16, "head_dim": 256, "window": 1024,
                                                 "sliding_fraction": 0.8333}})
    assert wide.hours > full.hours
    assert full.hours / gemma.hours > 1.2
    # a window longer than the sequence changes nothing
    long_window = _train({**GEMMA3_12B, "attention": {"kind": "sliding", "heads": 16, "head_dim": 256, "window": 65536}})
    assert long_window.hours == pytest.approx(wide.hours)


def test_a_paged_engine_holds_the_context_reached_a_reserving_one_the_whole_request() -> None:
    """vLLM allocates KV blocks as tokens are generated (a request holds input + half its output over its life);
    TensorRT-LLM's default GUARANTEED_NO_EVICT reserves prompt + maximum output: the same memory holds more vLLM
    requests, by (1024 + 4096) / (1024 + 2048), less what vLLM keeps out of the cache for its prefill activations."""
    llama = {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8}
    vllm, trt = _serve(llama, "vllm"), _serve(llama, "tensorrt-llm")
    ratio = vllm.assumptions["memory"]["max_batch_by_memory"] / trt.assumptions["memory"]["max_batch_by_memory"]
    assert 1.55 < ratio <= 5120 / 3072
    # no stack named: the setup paths serve it with vLLM, so it is sized as vLLM holds its requests
    unnamed = _serve(llama, "none")
    assert unnamed.assumptions["memory"]["max_batch_by_memory"] > 1.55 * trt.assumptions["memory"]["max_batch_by_memory"]


def test_a_fine_grained_mixture_of_experts_does_not_take_coarse_experts_efficiency() -> None:
    """v6e's own MoE training rows are all Mixtral (eight large experts, top-2, near a dense model's efficiency): their
    level describes coarse routing only, so DeepSeek-V3 (256 experts) on v6e takes the fine-grained routing level (fitted
    on fine-grained rows of every family), while Mixtral takes its own; a MoE that does not give its experts inherits the
    TPU family's factor."""
    def level(model: dict[str, Any]) -> Any:
        p = Profile.model_validate({"name": "m", "task": "training", "domain": "llm", "software": {"framework": "jax"},
                                    "model": {"architecture": "moe", **model}, "training": {"tokens_b": 100, "seq_len": 4096}})
        return estimate(p, CAT.get("tpu-v6e"), 256, C).assumptions["levels"]["moe_training_factor"]

    fine = level({"params_b": 671, "active_params_b": 37, "experts": 256, "experts_per_token": 8, "layers": 61, "hidden_size": 7168})
    coarse = level({"params_b": 46.7, "active_params_b": 12.9, "experts": 8, "experts_per_token": 2, "layers": 32, "hidden_size": 4096})
    unknown = level({"params_b": 46.7, "active_params_b": 12.9})
    assert "routing coarse" in coarse["level"] and "routing fine" in fine["level"] and "routing" not in unknown["level"]
    assert fine["value"] < 0.7 * coarse["value"]
    fine_rows = next(r for r in C.estimator.levels if r.constant == "moe_training_factor" and r.match.get("routing") == "fine")
    assert not any("mixtral" in r for r in fine_rows.fit_rows)
    for row in C.estimator.levels:  # no level of the MoE factor built on coarse rows alone covers fine-grained ones
        if row.constant == "moe_training_factor" and row.level != "global" and "routing" not in row.match:
            assert any("mixtral" not in r for r in row.fit_rows)


def test_a_language_models_training_keeps_its_vocabularys_logits() -> None:
    """Review 25: the activation memory of a training sequence had no vocabulary term, so a 131,072-token Llama 3 8B run
    read as fitting while its loss alone keeps 4 x 131,072 x 128,256 bytes = 67 GB of fp32 logits per sequence
    (Korthikanti et al. 2022, the output layer's 4sbv, split over tensor parallelism). The term follows
    model.vocab_size (Llama 2's 32,000: a quarter), defaults to Llama 3's vocabulary for an LLM and is absent for a
    model with no language-model head."""
    def run(domain: str = "llm", **model: Any) -> Any:
        p = Profile.model_validate({
            "name": "t", "task": "fine-tuning", "domain": domain, "software": {"framework": "jax"},
            "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8, **model},
            "training": {"tokens_b": 2, "seq_len": 131072, "global_batch": 8},
        })
        return estimate(p, CAT.get("tpu-v6e"), 64, C).assumptions["memory"]

    layers_only = 131072 * 4096 * (2 * 32 + 34) / 1e9
    default = run()
    assert default["logits_gb_per_sequence"] == pytest.approx(4 * 131072 * 128256 / 1e9, rel=1e-3)
    assert default["activations_gb_per_sequence"] == pytest.approx(layers_only + default["logits_gb_per_sequence"], rel=1e-3)
    assert "assumed" in default["vocab_size"]
    llama2 = run(vocab_size=32000)
    assert llama2["logits_gb_per_sequence"] == pytest.approx(4 * 131072 * 32000 / 1e9, rel=1e-3) and llama2["vocab_size"] == 32000
    vision = run("vision")
    assert "logits_gb_per_sequence" not in vision and vision["activations_gb_per_sequence"] == pytest.approx(layers_only, rel=1e-3)
