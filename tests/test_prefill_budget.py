"""The prompt-token budget per server step and the p99 it gives (estimate/tail.py, rules/estimator.yaml
latency_prefill_budget): a decode step that shares its batch with another request's prompt chunk takes that chunk's
time too, and the chunk is the server's budget (vLLM --max-num-batched-tokens, 8,192 on an 80 GB GPU by default;
SGLang --chunked-prefill-size). The p99 figures are at the budget the server runs with; where a p99 target is missed
with the default, the estimate picks a smaller budget and every artefact of the setup sets it.

The profile is tests/data/scaffold/latency-tuned-serving.yaml: 1,500-token prompts and a 9 ms p99 TPOT target.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.api import Context, estimate_config
from advisor.estimate import tail
from advisor.models import Profile

from .conftest import make_profile, run_cli

ROOT = Path(__file__).resolve().parent.parent
VOICE = ROOT / "tests" / "data" / "scaffold" / "latency-tuned-serving.yaml"


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.load()


def _profile(**over: Any) -> Profile:
    data = yaml.safe_load(VOICE.read_text())
    inference = {k: v for k, v in over.items() if k != "software"}
    extra: dict[str, Any] = {"inference": inference} if inference else {}
    if "software" in over:
        extra["software"] = over["software"]
    return make_profile(data, extra)


def test_a_tpot_target_sets_a_smaller_budget_that_meets_it(ctx: Context) -> None:
    e = estimate_config(_profile(), "h100", 2, ctx)
    assert e.p99 is not None
    chosen = e.p99["prefill_budget"]
    assert chosen["default"] == 8192 and chosen["tokens"] < 8192, chosen  # vLLM's default on an 80 GB GPU
    assert e.prefill_budget == chosen["tokens"]
    assert e.p99["terms"]["prefill_budget_tokens"] == chosen["tokens"]
    assert e.p99["tpot_ms"] <= 9 and "misses" not in e.p99, e.p99
    assert e.meets_latency


def test_where_no_budget_meets_the_target_the_smallest_is_set_and_the_miss_is_said(ctx: Context) -> None:
    # one H100 with a ~7 ms step: even 512-token chunks leave the p99 request at ~9 ms per token, over an 8 ms target
    e = estimate_config(_profile(tpot_p99_ms=8), "h100", 1, ctx)
    assert e.p99 is not None and e.p99["prefill_budget"]["tokens"] == 512
    assert any("p99 TPOT" in m for m in e.p99["misses"]) and e.meets_latency is False


def test_without_a_target_the_server_keeps_its_default_and_the_p99_says_what_it_costs(ctx: Context) -> None:
    e = estimate_config(_profile(ttft_p99_ms=None, tpot_p99_ms=None), "h100", 2, ctx)
    tuned = estimate_config(_profile(), "h100", 2, ctx)
    assert e.p99 is not None and tuned.p99 is not None
    assert "prefill_budget" not in e.p99 and e.prefill_budget == 0
    assert e.p99["terms"]["prefill_budget_tokens"] == 8192
    # a whole 1,500-token prompt shares a decode step at the default; a chunk of it at the tuned budget
    assert e.p99["tpot_ms"] > 9 > tuned.p99["tpot_ms"]
    # the slowest single step (a decode step that carries a prompt chunk) is the inter-token latency, said apart
    assert e.p99["itl_ms"] > e.p99["tpot_ms"] and tuned.p99["itl_ms"] > tuned.p99["tpot_ms"]
    assert e.p99["terms"]["prefill_chunk_ms"] > tuned.p99["terms"]["prefill_chunk_ms"]


def test_a_smaller_budget_shortens_the_p99_tpot_and_lengthens_a_long_prompts_ttft(ctx: Context) -> None:
    inf = _profile(max_input_tokens=32000).inference
    assert inf is not None
    kw: dict[str, Any] = {"inf": inf, "prefill_s": 0.2, "qps_per_replica": 5.0, "slots": 64, "service_s": 2.0}
    big, small = tail.p99(0.3, 0.02, chunk_tokens=8192, **kw), tail.p99(0.3, 0.02, chunk_tokens=512, **kw)
    assert small["tpot_ms"] < big["tpot_ms"]
    # the longest prompt over the budget: every step after its first also runs the batch's decode (one TPOT each)
    steps = lambda b: math.ceil(32000 / b) - 1  # noqa: E731
    assert small["ttft_ms"] - big["ttft_ms"] == pytest.approx((steps(512) - steps(8192)) * 20.0, abs=0.2)
    assert big["terms"]["prefill_chunk_steps_ms"] == pytest.approx(steps(8192) * 20.0, abs=0.1)
    unknown = tail.p99(0.3, 0.02, **kw)  # a stack without a budget row: 512-token chunks, the prompt in one forward
    assert unknown["terms"]["prefill_budget_tokens"] == tail.PREFILL_CHUNK_TOKENS
    assert unknown["terms"]["prefill_chunk_steps_ms"] == 0.0


def test_a_stack_whose_budget_is_not_known_is_never_tuned(ctx: Context) -> None:
    e = estimate_config(_profile(software={"serving_stack": "tensorrt-llm"}), "h100", 1, ctx)
    assert e.p99 is not None and "prefill_budget" not in e.p99 and e.prefill_budget == 0
    assert e.p99["terms"]["prefill_budget_tokens"] == tail.PREFILL_CHUNK_TOKENS


@pytest.mark.parametrize(("stack", "flag"), [("vllm", "--max-num-batched-tokens="), ("sglang", "--chunked-prefill-size ")])
def test_the_setup_runs_the_budget_the_p99_was_estimated_at(tmp_path: Path, stack: str, flag: str) -> None:
    data = yaml.safe_load(VOICE.read_text())
    data["software"] = {**data["software"], "serving_stack": stack}
    data["deployment"] = {"clouds": ["aws"]}  # GPUs only: the k8s path serves the profile's stack
    profile = tmp_path / "voice.yaml"
    profile.write_text(yaml.safe_dump(data))
    rec = run_cli("recommend", str(profile), "-f", "json", "--no-flip")
    assert rec.code == 0, rec.err
    [out] = json.loads(rec.out) if rec.out.lstrip().startswith("[") else [json.loads(rec.out)]
    budget = out["estimate"]["p99"]["prefill_budget"]["tokens"]
    res = run_cli("scaffold", str(profile), "-o", str(tmp_path / "out"))
    assert res.code == 0, res.err
    k8s = (tmp_path / "out" / "k8s" / "deployment.yaml").read_text()
    command = " ".join(str(w) for w in yaml.safe_load_all(k8s).__next__()["spec"]["template"]["spec"]["containers"][0]["command"])
    assert f"{flag}{budget}" in command, command
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "prompt tokens per step instead of the server's default" in readme
