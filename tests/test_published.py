"""tests/data/published.yaml is a sourced, split measurement base (no error thresholds: the calibration script reports them)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from advisor.catalog import load_catalog
from tests.calibration_published import load, not_evaluable, regime

DATA = load()
ROWS: list[dict[str, Any]] = DATA["rows"]
SOURCES: dict[str, dict[str, Any]] = DATA["sources"]
STACKS = {"maxtext", "megatron-nemo", "torchtitan", "pytorch-fsdp", "pytorch-other", "megatron-deepspeed", "jax-other",
          "vllm-gpu", "vllm-tpu", "sglang", "sglang-jax", "tensorrt-llm", "jetstream"}
METRICS = {"training_tokens_per_s_per_chip", "wall_hours", "time_to_train_min", "output_tokens_per_s_per_chip", "output_tokens_per_s",
           "throughput_tokens_per_s", "tpot_ms", "ttft_ms", "latency_s", "samples_per_s_per_chip", "mfu"}
URL = re.compile(r"^https?://\S+$")
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def test_enough_rows_chips_and_stacks() -> None:
    assert len(ROWS) >= 120
    assert len({r["accelerator"] for r in ROWS}) >= 12
    assert len({r["stack"] for r in ROWS}) >= 6


def test_held_out_share() -> None:
    held = sum(1 for r in ROWS if r["split"] == "held-out")
    assert held / len(ROWS) >= 0.40


@pytest.mark.parametrize("r", ROWS, ids=[r["id"] for r in ROWS])
def test_row_is_sourced_and_complete(r: dict[str, Any]) -> None:
    for key in ("id", "source", "source_id", "split", "date", "kind", "accelerator", "count", "stack", "model", "precision", "metric", "value", "unit"):
        assert r.get(key) not in (None, ""), key
    assert URL.match(r["source"]), r["source"]
    assert DATE.match(str(r["date"])), r["date"]
    assert r["split"] in ("fit", "held-out")
    assert r["kind"] in ("training", "serving")
    assert r["stack"] in STACKS
    assert r["metric"] in METRICS
    assert isinstance(r["value"], (int, float)) and r["value"] > 0
    assert isinstance(r["count"], int) and r["count"] >= 1
    assert r["model"]["params_b"] > 0
    if r["model"].get("active_params_b"):
        assert r["model"]["active_params_b"] <= r["model"]["params_b"]
    if r["kind"] == "training":
        assert r.get("seq_len"), "training rows give the sequence length"
    if r["metric"] == "wall_hours":
        assert r.get("tokens_b"), "whole runs give their tokens"
    if r["kind"] == "serving" and not_evaluable(r) is None:
        assert r.get("concurrency") or r.get("scenario") == "batch"
    assert regime(r)


def test_rows_match_their_source_and_split() -> None:
    """A publication is on one side only: every row carries its source's split and the source is listed."""
    for r in ROWS:
        assert r["source_id"] in SOURCES, r["id"]
        assert r["split"] == SOURCES[r["source_id"]]["split"], r["id"]
    for sid, s in SOURCES.items():
        assert s["split"] in ("fit", "held-out") and URL.match(s["url"]) and DATE.match(str(s["date"])), sid
    assert {r["source_id"] for r in ROWS} == set(SOURCES)


def test_ids_unique_and_accelerators_in_catalog() -> None:
    ids = Counter(r["id"] for r in ROWS)
    assert [i for i, n in ids.items() if n > 1] == []
    catalog = load_catalog()
    for r in ROWS:
        catalog.get(r["accelerator"])  # raises on an unknown id
