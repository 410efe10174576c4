"""A verdict you can trust: material differences, ties, scaled budget penalties, a confidence
from the estimator's scenarios, and what-ifs that lead with numeric break-evens."""

from __future__ import annotations

from typing import Any

from advisor import trust
from advisor.api import Context
from advisor.models import Profile
from advisor.recommend import recommend

from .conftest import make_profile

CTX = Context.load()
C = CTX.constants


def profile(**over: Any) -> Profile:
    data: dict[str, Any] = {
        "name": "t", "task": "fine-tuning", "domain": "llm",
        "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "kv_heads": 8},
        "training": {"tokens_b": 0.05, "seq_len": 4096, "method": "lora", "deadline_hours": 24},
        "software": {"framework": "pytorch"}, "deployment": {"clouds": ["gcp"]}, "goal": {"optimize": "cost"},
    }
    return make_profile(data, over)  # type: ignore[no-any-return]


def rec(p: Profile, flip: bool = False) -> Any:
    return recommend(p, CTX.kb, CTX.catalog, C, with_flip=flip)


def test_materiality_weighs_the_dollars_at_stake() -> None:
    p = profile()
    small = trust.ratio_points(21.0, 54.0, "cost", p, C)  # $33 apart, 2.6x
    large = trust.ratio_points(21_000.0, 54_000.0, "cost", p, C)  # $33,000 apart, 2.6x
    assert 0 < small < C.scoring.tie_points.value < large
    assert large > 0.9 * C.scoring.cost_points_per_doubling.value * 1.36  # nearly the full log2(2.6) x 8
    # a budget makes a difference material relative to it
    rich = profile(goal={"budget_usd": 10_000_000})
    assert trust.ratio_points(21_000.0, 54_000.0, "cost", rich, C) < large


def test_a_small_job_reports_a_cost_tie_and_the_rules_decide() -> None:
    d = rec(profile()).to_json()
    rules = {c["rule"]: c for c in d["contributions"]}
    assert "estimate-cost-tie" in rules and "estimate-cost-ratio" not in rules
    assert rules["estimate-cost-tie"]["points"] == 0.0


def test_a_large_job_counts_the_cost_ratio() -> None:
    p = profile(task="training", training={"tokens_b": 500, "method": "full", "deadline_hours": 720},
                deployment={"clouds": ["gcp", "aws"]})
    rules = {c["rule"] for c in rec(p).to_json()["contributions"]}
    assert "estimate-cost-ratio" in rules


def test_budget_overrun_scales_the_penalty() -> None:
    class E:  # the closest configuration, failing only on budget
        within_budget = False
        why_not = "costs $10,700, budget $10,000"
        cost_usd = 10_700.0

    p = profile(goal={"budget_usd": 10_000})
    assert trust.budget_penalty(E(), p, C) == C.scoring.no_feasible_penalty.value * 0.07 / 0.5  # type: ignore[arg-type]
    E.why_not = "latency 900 ms > 500 ms; costs $10,700, budget $10,000"
    assert trust.budget_penalty(E(), p, C) == C.scoring.no_feasible_penalty.value  # type: ignore[arg-type]


def test_confidence_is_a_probability_and_names_its_sensitivity() -> None:
    p = profile(task="training", training={"tokens_b": 500, "method": "full", "deadline_hours": 720},
                deployment={"clouds": ["gcp", "aws"]})
    d = rec(p).to_json()["verdict"]
    assert 0.5 <= d["confidence"] <= 0.99
    assert d["sensitive_to"] and "estimate" in d["sensitive_to"]


def test_an_infeasible_verdict_has_low_confidence() -> None:
    d = rec(profile(training={"deadline_hours": 0.01})).to_json()["verdict"]
    assert d["feasible"] is False and d["confidence"] < 0.5


def test_what_ifs_lead_with_a_numeric_break_even() -> None:
    p = Profile.model_validate({
        "name": "tts", "task": "inference", "domain": "speech",
        "model": {"params_b": 0.8, "layers": 24, "hidden_size": 1536, "kv_heads": 8},
        "inference": {"peak_qps": 50, "input_tokens": 64, "output_tokens": 600, "latency_p99_ms": 2000},
        "deployment": {"clouds": ["gcp"]}, "team": {"tpu_experience": "none"},
    })
    r = rec(p, flip=True)
    assert r.flip, "a break-even exists for this profile"
    first = r.flip[0]
    assert first.startswith(("inference.", "model.", "goal.")) and (" below " in first or " above " in first)
    assert not any(f.startswith(("software.", "team.")) for f in r.flip)  # code facts only when nothing else flips


def test_code_facts_only_when_nothing_numeric_flips() -> None:
    r = rec(profile(software={"framework": "jax"}, team={"tpu_experience": "expert"}), flip=True)
    numeric = [f for f in r.flip if " below " in f or " above " in f or "precision" in f or "pricing" in f]
    facts = [f for f in r.flip if f.startswith(("software.", "team.", "deployment.clouds"))]
    assert not (numeric and facts)


# ---------------------------------------------------------------- public decisions

def test_engine_beats_the_four_line_baseline_on_held_out_decisions() -> None:
    from . import decisions

    rows = decisions.run(CTX)
    assert len(rows) >= 25
    assert {r.outcome for r in rows} == {"tpu", "gpu", "cpu", "edge"}
    held = [r for r in rows if r.split == "held-out"]
    assert decisions.accuracy(held) > decisions.accuracy(held, of="baseline")
    right, n = decisions.confident(rows)
    assert n >= 10 and right / n >= 0.8
