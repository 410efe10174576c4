"""A mixture of experts' attention layout (inference.attention_parallel) and cached prompt prefixes
(inference.prefix_cache_hit_rate): the estimate weighs tensor- against data-parallel attention, the setup runs the
layout it costed, and a cached prefix is not prefilled again.

The deployment check: DeepSeek published the load of its own DeepSeek-V3/R1 service (open-infra-index, "Day 6:
DeepSeek-V3/R1 Inference System Overview", 2025-03-01) and the chips that carried it, 226.75 nodes of 8 x H800 on
average, 278 at peak. profiles/deepseek-v3-serving.yaml is that load; the H100 (an H800 with full NVLink) and H200
counts must be within 2x of the average. With tensor-parallel attention only (8 copies of MLA's latent cache on 8
GPUs) and every prompt prefilled in full they read 8,880 H100 and 4,304 H200 (4.9x and 2.4x).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.api import Context, estimate_config
from advisor.estimate.serving import LlmReplica
from advisor.models import Profile

from .conftest import make_profile, run_cli

ROOT = Path(__file__).resolve().parent.parent
DEEPSEEK = ROOT / "profiles" / "deepseek-v3-serving.yaml"
PUBLISHED_AVERAGE_GPUS = 226.75 * 8  # H800, the day DeepSeek published


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.load()


def _profile(**inference: Any) -> Profile:
    data = yaml.safe_load(DEEPSEEK.read_text())
    return make_profile(data, {"inference": inference} if inference else {})


def _chips(ctx: Context, profile: Profile, acc: str, count: int) -> int:
    e = estimate_config(profile, acc, count, ctx)
    assert e.fits_memory and not e.why_not, e.why_not
    return e.count * (e.replicas or 1)


@pytest.mark.parametrize(("acc", "count"), [("h100", 16), ("h200", 8)])
def test_deepseek_v3_at_its_published_load_needs_about_the_published_gpus(ctx: Context, acc: str, count: int) -> None:
    chips = _chips(ctx, _profile(), acc, count)
    assert PUBLISHED_AVERAGE_GPUS / 2 <= chips <= PUBLISHED_AVERAGE_GPUS * 2, chips


def test_auto_keeps_data_parallel_attention_where_it_needs_fewer_chips(ctx: Context) -> None:
    auto = estimate_config(_profile(), "h200", 8, ctx)
    tensor = estimate_config(_profile(attention_parallel="tensor"), "h200", 8, ctx)
    assert auto.parallelism is not None and auto.parallelism["attention_data"] == 8
    assert auto.parallelism["tensor"] == 1
    assert "copies_per_replica" not in auto.assumptions["memory"]["kv_cache"]  # one latent cache
    assert auto.assumptions["memory"]["attention"]["replicated_attention_gb"] > 0  # every chip holds the projections
    assert tensor.assumptions["memory"]["kv_cache"]["copies_per_replica"] == 8
    assert any("MLA's latent KV cache is held whole" in w for w in tensor.warnings)
    assert auto.count * (auto.replicas or 1) < tensor.count * (tensor.replicas or 1)
    assert auto.assumptions["memory"]["max_batch_by_memory"] > tensor.assumptions["memory"]["max_batch_by_memory"]


def test_data_parallel_attention_costs_a_lone_request_latency(ctx: Context) -> None:
    # at concurrency 1 every chip reads its own copy of the attention weights and the lone prompt is prefilled on one
    data = estimate_config(_profile(attention_parallel="data"), "h200", 8, ctx)
    tensor = estimate_config(_profile(attention_parallel="tensor"), "h200", 8, ctx)
    assert data.at_concurrency_1["tpot_ms"] > tensor.at_concurrency_1["tpot_ms"]
    assert data.at_concurrency_1["ttft_ms"] > tensor.at_concurrency_1["ttft_ms"]


def test_data_layout_where_it_does_not_apply_is_said_and_not_used(ctx: Context) -> None:
    tpu = estimate_config(_profile(attention_parallel="data"), "tpu-v7", 8, ctx)  # no TPU stack offers it
    assert any(w.startswith("inference.attention_parallel: data not used on tpu-v7") for w in tpu.warnings)
    assert tpu.parallelism is not None and "attention_data" not in tpu.parallelism
    chatbot = yaml.safe_load((ROOT / "profiles" / "llm-chatbot.yaml").read_text())
    dense = make_profile(chatbot, {"inference": {"attention_parallel": "data"}})
    e = estimate_config(dense, "h100", 8, ctx)
    assert any(w.startswith("inference.attention_parallel: not used") for w in e.warnings)
    assert e.parallelism is not None and "attention_data" not in e.parallelism


def _replica(cached: float) -> LlmReplica:
    return LlmReplica(
        weights=16e9, active_bytes=16e9, n_active=8e9, kv_per_token=131072.0, layers=32, attn_dim=4096,
        input_tokens=4000, output_tokens=200, bandwidth=3.35e12, compute=989e12, overhead=0.005, cached_input=cached,
    )


def test_a_cached_prefix_is_not_prefilled_again() -> None:
    full, half = _replica(0.0), _replica(2000.0)
    a, b = full.point(1, 0.8, 0.5), half.point(1, 0.8, 0.5)
    assert b.ttft < a.ttft
    # the weights' FLOPs halve, the new tokens still attend to the cached half: more than half of the attention remains
    flops_full, flops_half = full._prefill_flops(4000), half._prefill_flops(4000)
    weights = 2.0 * 8e9 * 2000
    assert flops_full - flops_half == pytest.approx(weights + 4.0 * 32 * 4096 * 2000 * 2000 / 2.0)
    assert half.kv_bytes(4100) == full.kv_bytes(4100)  # the cached prefix still sits in the request's KV cache
    loaded_full, loaded_half = full.point(64, 0.8, 0.5), half.point(64, 0.8, 0.5)
    assert loaded_half.tokens_per_second > loaded_full.tokens_per_second  # fewer prompt chunks in each step


def test_prefix_cache_hits_lower_the_chips_of_a_prompt_heavy_service(ctx: Context) -> None:
    cold = _chips(ctx, _profile(prefix_cache_hit_rate=0.0), "h200", 8)
    warm = _chips(ctx, _profile(), "h200", 8)
    assert warm < cold


def test_the_setup_runs_the_layout_the_estimate_costed(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = run_cli("scaffold", str(DEEPSEEK), "-o", str(out))
    assert r.code == 0, r.err
    readme = (out / "README.md").read_text()  # the server command as the manifest runs it, on one line
    assert "--tp-size 8" in readme and "--dp-size 8 --enable-dp-attention --ep-size 8" in readme
    # 1,024 sequences (the capacity its p99 counts): SGLang's flag is the server's, split over its 8 schedulers by SGLang
    # itself (model_runner: max_running_requests // dp_size); 128 here ran 16 a scheduler (review 23 F3)
    assert "--max-running-requests 1024" in readme
    assert "data-parallel attention over 8 chips" in readme
    assert "--enable-dp-attention" in (out / "k8s" / "deployment.yaml").read_text()
    # a replica over two H100 nodes: vLLM's multi-node data-parallel form, each worker its own block of ranks
    h100 = tmp_path / "h100.yaml"
    data = yaml.safe_load(DEEPSEEK.read_text())
    data["deployment"]["accelerators"] = ["h100"]
    h100.write_text(yaml.safe_dump(data))
    out2 = tmp_path / "s2"
    r = run_cli("scaffold", str(h100), "-o", str(out2))
    assert r.code == 0, r.err
    lws = (out2 / "k8s" / "leaderworkerset.yaml").read_text()
    assert "--data-parallel-size=16" in lws and "--data-parallel-size-local=8" in lws
    assert "--data-parallel-start-rank=$(( $(LWS_WORKER_INDEX) * 8 ))" in lws
    assert "--tensor-parallel-size=1" in lws and "--pipeline-parallel-size" not in lws
