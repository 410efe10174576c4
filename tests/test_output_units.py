"""A serving estimate says what its rate counts: generated tokens where requests generate them, else the requests
themselves (review 23 F12). An embedding job (output_tokens 0), an image model or a recommender has no time per
output token and no tokens per second; its rate is requests (or images) per second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ROOT, run_cli

EMBEDDING = ROOT / "tests" / "data" / "review23" / "09-batch-embedding.yaml"


def _estimate(path: Path, *args: str) -> dict[str, Any]:
    r = run_cli("estimate", str(path), *args, "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    return out[0] if isinstance(out, list) else out  # type: ignore[no-any-return]


def test_a_job_that_generates_no_token_has_no_tpot_and_counts_requests() -> None:
    # 40M e5-mistral embeddings a night: the estimate said tokens_per_second 36.7 (its requests/s) and tpot_ms 6,695
    # (the time of a whole saturated step) for a job that generates nothing
    e = _estimate(EMBEDDING, "-a", "tpu-v6e", "-n", "1")
    assert e["tpot_ms"] is None and e["at_concurrency_1"]["tpot_ms"] is None
    assert e["tokens_per_second"] is None
    assert e["throughput"]["unit"] == "requests/s"
    assert e["throughput"]["per_second"] == pytest.approx(e["capacity_requests_per_second"], rel=0.01)
    assert "tpot_ms" not in e["ranges"] and "tokens_per_second" not in e["ranges"]
    lo, hi = e["ranges"]["throughput"]
    assert lo < e["throughput"]["per_second"] < hi
    offline = e["assumptions"]["operating_point"]["offline"]
    assert "saturated_tokens_per_second_per_replica" not in offline
    r = run_cli("estimate", str(EMBEDDING), "-a", "tpu-v6e", "-n", "1")
    assert r.code == 0, r.err
    assert "requests/s per replica" in r.out and "TPOT" not in r.out


def test_a_generating_llm_keeps_its_tokens(tmp_path: Path) -> None:
    e = _estimate(ROOT / "profiles" / "llm-chatbot.yaml", "-a", "h100", "-n", "1")
    assert e["throughput"]["unit"] == "generated tokens/s"
    assert e["tokens_per_second"] == pytest.approx(e["throughput"]["per_second"], rel=1e-3)
    assert e["tpot_ms"] > 0 and "tpot_ms" in e["ranges"] and "tokens_per_second" in e["ranges"]


@pytest.mark.parametrize(
    ("name", "unit"), [("image-generation", "images/s"), ("recsys-api", "requests/s"), ("text-embeddings", "requests/s")],
)
def test_a_one_pass_request_counts_its_requests(name: str, unit: str) -> None:
    r = run_cli("recommend", str(ROOT / "profiles" / f"{name}.yaml"), "--format", "json")
    assert r.code == 0, r.err
    e = json.loads(r.out)["estimate"]
    assert e["throughput"]["unit"] == unit
    assert e["tokens_per_second"] is None and e["tpot_ms"] is None


def test_a_vision_request_is_not_counted_once_per_default_output_token(tmp_path: Path) -> None:
    # a one-pass model's rate multiplied its requests by inference.output_tokens, 256 by default: a classifier
    # that omits the field read 256x its requests per second
    base = yaml.safe_load((ROOT / "profiles" / "edge-vision.yaml").read_text())
    base["inference"].pop("output_tokens", None)
    omitted = tmp_path / "omitted.yaml"
    omitted.write_text(yaml.safe_dump(base))
    base["inference"]["output_tokens"] = 1
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(base))
    a, b = _estimate(omitted, "-a", "l4", "-n", "1"), _estimate(one, "-a", "l4", "-n", "1")
    assert a["throughput"] == b["throughput"]
    assert a["throughput"]["unit"] == "requests/s"
    assert a["throughput"]["per_second"] == pytest.approx(a["batch"] / a["latency_ms"] * 1000, rel=0.01)


def test_a_tpot_target_on_a_job_without_output_tokens_is_said_unused(tmp_path: Path) -> None:
    p = yaml.safe_load(EMBEDDING.read_text())
    p["inference"].update(mode="online", peak_qps=50, tpot_p99_ms=20)
    p["inference"].pop("requests_per_day")
    p["inference"].pop("window_hours")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(p))
    e = _estimate(path, "-a", "h100", "-n", "1")
    assert any("tpot_p99_ms" in w and "no token" in w for w in e["warnings"]), e["warnings"]
    assert "tpot_ms" not in (e["p99"] or {})
    assert not any("TPOT" in m for m in (e["p99"] or {}).get("misses", []))
