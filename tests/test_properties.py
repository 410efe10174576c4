"""Property-based tests: random valid profiles never crash, outputs are deterministic,
confidence stays in [0, 1], every estimate is finite and non-negative; random YAML
text only ever exits 0 or 2."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.api import Context
from advisor.check.batch import judge
from advisor.estimate.search import estimate
from advisor.loading import LoadedProfile
from advisor.models import Profile
from advisor.policy import Policy
from advisor.recommend import recommend
from advisor.yamlsrc import Document

from .conftest import run_cli

CTX = Context.load()
ACCELERATORS = sorted(CTX.catalog.accelerators)


def _num(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)


@st.composite
def profiles(draw: st.DrawFn, with_proposal: bool = False) -> dict[str, Any]:
    task = draw(st.sampled_from(["training", "fine-tuning", "inference"]))
    params = draw(_num(0.0001, 2000))
    model: dict[str, Any] = {
        "params_b": params,
        "architecture": draw(st.sampled_from(["transformer", "moe", "cnn", "diffusion", "rnn", "gnn", "tree", "other"])),
        "precision": draw(st.sampled_from(["fp64", "fp32", "bf16", "fp16", "fp8", "int8", "int4"])),
        "traits": draw(
            st.lists(
                st.sampled_from(
                    ["branch-heavy", "elementwise-heavy", "sparse-access", "host-io-bound", "huge-embeddings", "custom-ops-in-loop"]
                ),
                max_size=3,
                unique=True,
            )
        ),
    }
    if draw(st.booleans()):
        model["active_params_b"] = params * draw(_num(0.05, 1.0))
    if draw(st.booleans()):
        model.update(layers=draw(st.integers(1, 200)), hidden_size=draw(st.integers(64, 32768)), kv_heads=draw(st.integers(1, 128)))
    data: dict[str, Any] = {
        "name": draw(st.text(min_size=1, max_size=30)),
        "task": task,
        "domain": draw(
            st.sampled_from(["llm", "nlp", "vision", "diffusion", "speech", "recommendation", "scientific", "tabular", "other"])
        ),
        "model": model,
        "software": {
            "framework": draw(st.sampled_from(["pytorch", "jax", "tensorflow", "keras", "other"])),
            "serving_stack": draw(st.sampled_from(["vllm", "tgi", "jetstream", "triton", "tensorrt-llm", "sglang", "none"])),
            "custom_cuda_kernels": draw(st.booleans()),
            "dynamic_shapes": draw(st.booleans()),
            "fp64": draw(st.booleans()),
        },
        "deployment": {
            "clouds": draw(st.lists(st.sampled_from(["gcp", "aws", "azure", "oci", "on-prem"]), min_size=1, max_size=3, unique=True)),
            "edge": draw(st.booleans()),
            "pricing": draw(st.sampled_from(["on-demand", "spot", "committed-1y", "committed-3y"])),
        },
        "team": {"tpu_experience": draw(st.sampled_from(["none", "some", "expert"]))},
        "goal": {"optimize": draw(st.sampled_from(["cost", "time", "balanced"]))},
    }
    if draw(st.booleans()):
        data["goal"]["budget_usd"] = draw(_num(1, 1e9))
    if task == "inference":
        data["inference"] = {
            "mode": draw(st.sampled_from(["online", "batch"])),
            "peak_qps": draw(_num(0.01, 100_000)),
            "input_tokens": draw(st.integers(0, 200_000)),
            "output_tokens": draw(st.integers(0, 20_000)),
            "hours_per_day": draw(_num(0.5, 24)),
        }
        if draw(st.booleans()):
            data["inference"]["latency_p99_ms"] = draw(_num(1, 1e6))
    else:
        data["training"] = {
            "tokens_b": draw(_num(0.0001, 100_000)),
            "seq_len": draw(st.integers(16, 1_000_000)),
            "method": draw(st.sampled_from(["full", "lora", "qlora"])),
        }
        if draw(st.booleans()):
            data["training"]["deadline_hours"] = draw(_num(0.1, 100_000))
    if with_proposal:
        data["proposal"] = {
            "accelerator": draw(st.sampled_from(ACCELERATORS)),
            "count": draw(st.integers(1, 4096)),
            "hours": draw(_num(0.1, 10_000)),
        }
    return data


def _finite_nonneg(value: Any, where: str) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        assert math.isfinite(value) and value >= 0, (where, value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in ("assumptions", "scores", "contributions", "points"):
                continue
            _finite_nonneg(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite_nonneg(v, f"{where}[{i}]")


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(profiles())
def test_recommend_never_crashes_and_is_deterministic(data: dict[str, Any]) -> None:
    profile = Profile.model_validate(data)
    a = recommend(profile, CTX.kb, CTX.catalog, CTX.constants, with_flip=True).to_json()
    b = recommend(profile, CTX.kb, CTX.catalog, CTX.constants, with_flip=True).to_json()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    json.dumps(a, allow_nan=False)
    assert 0.0 <= a["verdict"]["confidence"] <= 1.0
    assert a["verdict"]["device"] in ("tpu", "gpu", "cpu", "edge")
    _finite_nonneg(a["estimate"], "estimate")
    _finite_nonneg(a["candidates"], "candidates")
    v = a["verdict"]
    if v["device"] in ("tpu", "gpu") and a["candidates"]:
        # a TPU/GPU verdict always names a configuration: the best feasible one, else the closest
        assert v["accelerator"] and v["count"]
    if v["accelerator"] and v["feasible"]:
        assert a["estimate"]["feasible"] and a["estimate"]["fits_memory"]


@SETTINGS
@given(profiles(), st.sampled_from(ACCELERATORS), st.integers(1, 100_000))
def test_estimate_is_finite_for_any_configuration(data: dict[str, Any], acc: str, count: int) -> None:
    e = estimate(Profile.model_validate(data), CTX.catalog.get(acc), count, CTX.constants)
    out = e.to_json()
    json.dumps(out, allow_nan=False)
    _finite_nonneg({k: v for k, v in out.items() if k != "assumptions"}, "estimate")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles(with_proposal=True))
def test_check_never_crashes(data: dict[str, Any]) -> None:
    profile = Profile.model_validate(data)
    doc = Document("p.yaml", 0, data, (1, 1))
    r = judge(LoadedProfile(profile, doc), CTX, Policy(), dt.date(2026, 12, 2))
    assert r.status in ("pass", "warning", "error")
    json.dumps(r.to_json(), allow_nan=False)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles())
def test_report_never_crashes_and_is_deterministic(data: dict[str, Any]) -> None:
    from advisor.report import render

    profile = Profile.model_validate(data)
    rec = recommend(profile, CTX.kb, CTX.catalog, CTX.constants, label="p.yaml", with_flip=False)
    assert render([rec], CTX) == render([rec], CTX)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.sampled_from(list("{}[]:,-?&*!|>'\"#%@` \n\tabc01.~")), max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
))
def test_random_yaml_text_only_exits_0_or_2(tmp_path_factory: Any, text: str) -> None:
    f = tmp_path_factory.mktemp("y") / "p.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass") if "\ud800" not in text else f.write_bytes(text.encode("utf-8", "replace"))
    r = run_cli("validate", str(f))
    assert r.code in (0, 2), r.err
    assert "Traceback" not in r.err and "internal error" not in r.err


_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False)),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=40,
)


@given(_json_values)
@settings(max_examples=400, deadline=None)
def test_the_json_writer_writes_what_the_standard_library_writes(value: object) -> None:
    """advisor's JSON text (one recursive encoder, for speed) is byte for byte json.dumps(indent=2,
    ensure_ascii=False, allow_nan=False): every key kind, nesting, empty containers, any text."""
    from advisor.renderers.json import dumps

    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def test_the_json_writer_refuses_what_the_standard_library_refuses() -> None:
    import math

    from advisor.renderers.json import dumps

    loop: list[object] = []
    loop.append(loop)
    for bad, error in (
        (math.nan, ValueError),
        ({"a": math.inf}, ValueError),
        (loop, ValueError),
        ({1j: 1}, TypeError),
        (object(), TypeError),
    ):
        with pytest.raises(error):
            dumps(bad)
