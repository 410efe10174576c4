from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import PROFILES, run_cli

# The verdict device of every bundled profile (the knowledge base and estimator decide it;
# a change here is a change of advice and must be deliberate).
VERDICTS = {
    "aws-only-team.yaml": "gpu",
    "bert-tpu.yaml": "tpu",
    "edge-vision.yaml": "edge",
    "fp64-simulation.yaml": "gpu",
    "frontier-pretrain-405b.yaml": "gpu",
    "gpt2-8gpu-day.yaml": "gpu",
    "onprem-owned-h100.yaml": "gpu",
    "qlora-single-gpu.yaml": "gpu",
    "image-generation.yaml": "tpu",
    "llama3-8b-lora.yaml": "tpu",
    "llm-batch-summarise.yaml": "tpu",  # goal cost: v6e-8 x 5 on demand; B200 is not sold on demand on Google Cloud (a reservation)
    "llm-chatbot.yaml": "tpu",
    "llm-pretrain-70b.yaml": "tpu",
    "moe-serving.yaml": "gpu",
    "deepseek-v3-serving.yaml": "gpu",  # MLA + 256 experts at DeepSeek's published load: B200 with data-parallel attention
    "recsys-api.yaml": "cpu",  # 0.1 B dense parameters a request; its 64 embedding rows are gathered, not multiplied
    "recsys-training.yaml": "tpu",  # embeddings sharded over a v5e slice: the all-to-all stays on ICI
    "speech-asr.yaml": "tpu",
    "text-embeddings.yaml": "gpu",  # goal cost: the L4 serves it for less than a v5e-1
    "research-custom-cuda.yaml": "gpu",
    "tabular-cpu.yaml": "cpu",
    "vision-resnet-training.yaml": "tpu",
    "tts-service.yaml": "gpu",  # 600 tokens in 2 s: a TPU step costs ~3 ms of host round trip (tests/data/serving.yaml fit)
}


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    r = run_cli("recommend", *map(str, PROFILES), "--format", "json")
    assert r.code == 0, r.err
    return {Path(d["profile"]).name: d for d in json.loads(r.out)}


def test_every_bundled_profile_is_covered() -> None:
    assert {p.name for p in PROFILES} == set(VERDICTS)
    assert len(PROFILES) >= 12


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_verdict(results: dict[str, dict], name: str) -> None:
    d = results[name]
    v = d["verdict"]
    assert v["device"] == VERDICTS[name], (name, d["scores"], [c["rule"] for c in d["contributions"]])
    assert 0.0 <= v["confidence"] <= 1.0
    if v["device"] in ("tpu", "gpu"):
        est = d["estimate"]
        assert v["accelerator"] and v["count"] >= 1
        assert est["fits_memory"] is True
        assert est["feasible"] is True, est["why_not"]
        assert est["meets_deadline"] in (True, None) and est["meets_latency"] in (True, None)
        assert (est["cost_usd"] or 0) > 0 or est.get("owned_chips")  # owned hardware has no price
    elif v["device"] == "cpu":  # CPU instances are sized like any other family
        est = d["estimate"]
        assert v["accelerator"] and v["count"] >= 1 and est["feasible"] is True and est["cost_usd"] > 0
    else:
        assert v["accelerator"] is None and v["count"] is None and d["estimate"] is None
    assert v["setup_path"], name


def test_at_least_three_distinct_verdicts(results: dict[str, dict]) -> None:
    assert len({d["verdict"]["device"] for d in results.values()}) >= 3


def test_json_contract(results: dict[str, dict]) -> None:
    for d in results.values():
        for key in (
            "profile",
            "name",
            "verdict",
            "scores",
            "estimate",
            "candidates",
            "contributions",
            "excluded",
            "flip",
            "warnings",
            "catalog_as_of",
            "advisor_version",
        ):
            assert key in d
        assert set(d["verdict"]) >= {"device", "accelerator", "count", "confidence", "setup_path"}
        for c in d["contributions"]:
            assert set(c) >= {"rule", "device", "points", "reason", "source"}
        for x in d["excluded"]:
            assert set(x) >= {"device", "rule", "reason"}
        for c in d["candidates"]:
            assert set(c) >= {"accelerator", "device", "count", "hours", "cost_usd", "feasible", "why_not"}
            assert (c["why_not"] is None) == c["feasible"] or c["cost_usd"] is None


def test_contributions_add_up_to_scores(results: dict[str, dict]) -> None:
    for d in results.values():
        sums: dict[str, float] = {}
        for c in d["contributions"]:
            sums[c["device"]] = sums.get(c["device"], 0.0) + c["points"]
        for dev, score in d["scores"].items():
            assert abs(sums.get(dev, 0.0) - score) < 0.05


def test_hard_constraints() -> None:
    r = run_cli(
        "recommend",
        "--format",
        "json",
        "--no-flip",
        "profiles/aws-only-team.yaml",
        "profiles/fp64-simulation.yaml",
        "profiles/edge-vision.yaml",
    )
    aws, fp64, edge = json.loads(r.out)
    assert {"device": "tpu", "rule": "tpu-requires-google-cloud"}.items() <= next(
        x for x in aws["excluded"] if x["device"] == "tpu"
    ).items()
    assert any(x["device"] == "tpu" for x in fp64["excluded"])
    assert {x["device"] for x in edge["excluded"]} >= {"tpu", "gpu", "cpu"}
    assert all(c["device"] == "gpu" for c in [aws["estimate"]])


def test_flip_is_recomputed_not_guessed(results: dict[str, dict]) -> None:
    d = results["aws-only-team.yaml"]
    assert d["flip"][0].startswith("deployment.clouds: ['aws'] -> ['aws', 'gcp'] makes it TPU")
    # several independent CUDA dependencies: no single change flips it, and none is invented
    assert results["research-custom-cuda.yaml"]["flip"] == []
    for f in results["llm-chatbot.yaml"]["flip"]:
        assert " makes it " in f


def test_deterministic_output() -> None:
    a = run_cli("recommend", "--format", "json", *map(str, PROFILES[:4]))
    b = run_cli("recommend", "--format", "json", *map(str, PROFILES[:4]))
    assert a.out == b.out and a.code == 0


def test_text_view_shows_verdict_candidates_and_setup() -> None:
    r = run_cli("recommend", "profiles/llm-chatbot.yaml")
    assert r.code == 0, r.err
    for needle in ("confidence", "Why (the points that decided it", "Top candidates", "Setup:", "What would change", "catalog as of"):
        assert needle in r.out
    assert "\x1b[" not in r.out  # NO_COLOR
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--explain")
    assert r.code == 0, r.err
    for needle in ("advisor verdict", "Why (every point)", "Candidates", "Setup:", "kubectl apply", "catalog as of"):
        assert needle in r.out


def _rule_dir(tmp_path: Path, rule_id: str, when: str, effect: str, fires: str, not_fires: str) -> Path:
    """A user rule directory holding one rule."""
    d = tmp_path / "rules"
    d.mkdir()
    (d / f"{rule_id}.yaml").write_text(
        f"id: {rule_id}\ntitle: t\ncategory: platform\nwhen: {when}\neffect: {effect}\n"
        f"reason: A policy.\nsource: https://example.com/policy\nexamples:\n  fires: [{fires}]\n  not_fires: [{not_fires}]\n"
    )
    return d


def test_user_rules_change_the_verdict(tmp_path: Path) -> None:
    d = _rule_dir(tmp_path, "policy-gpu-only", "{field: facts.is_inference, op: eq, value: true}", "{exclude: [tpu]}",
                  "{task: inference}", "{task: training}")
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--rules", str(d), "--format", "json", "--no-flip")
    assert r.code == 0, r.err
    assert json.loads(r.out)["verdict"]["device"] == "gpu"


def test_bad_rules_dir_exits_2(tmp_path: Path) -> None:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "x.yaml").write_text("id: x\ntitle: t\nwhen: {field: nope, op: eq, value: 1}\n")
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--rules", str(d))
    assert r.code == 2
    assert f"{d / 'x.yaml'}:" in r.err and "Traceback" not in r.err


def test_edge_training_still_needs_a_datacentre(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("name: x\ntask: training\ndomain: llm\nmodel: {params_b: 7}\ntraining: {tokens_b: 100}\ndeployment: {edge: true}\n")
    d = json.loads(run_cli("recommend", str(f), "--format", "json", "--no-flip").out)
    assert d["verdict"]["device"] in ("tpu", "gpu") and d["verdict"]["accelerator"]


def test_on_prem_only_is_costed_at_the_amortised_price(tmp_path: Path) -> None:
    # a purchase: the amortised price applies only to hardware the team says it will buy
    f = tmp_path / "p.yaml"
    f.write_text(
        "name: x\ntask: inference\ndomain: llm\nmodel: {params_b: 8}\ninference: {peak_qps: 5}\ndeployment: {clouds: [on-prem], onprem: "
        "{purchase: true}}\n"
    )
    d = json.loads(run_cli("recommend", str(f), "--format", "json", "--no-flip").out)
    v = d["verdict"]
    assert (
        v["device"] == "gpu" and v["accelerator"] and v["setup_path"] == "k8s-vllm-gpu"
    )  # LLM serving on-prem: Kubernetes, no cloud commands
    assert d["estimate"]["cost_usd"] and d["estimate"]["price"]["kind"] == "on-prem (amortised)"
    assert "gcloud" not in json.dumps(d["setup"])


def test_aws_team_gets_aws_setup_and_no_gcp_machine_names() -> None:
    d = json.loads(run_cli("recommend", "profiles/aws-only-team.yaml", "--format", "json", "--no-flip").out)
    assert d["verdict"]["setup_path"] == "gpu-any-cloud"
    assert "-highgpu-" not in d["verdict"]["shape"] and "gcloud" not in json.dumps(d["setup"])


def test_every_family_excluded_is_warned(tmp_path: Path) -> None:
    d = _rule_dir(tmp_path, "exclude-all", "{field: model.params_b, op: gt, value: 0}", "{exclude: [tpu, gpu, cpu, edge]}",
                  "{model: {params_b: 1}}", "{model: {params_b: 0.0000001}}")
    out = json.loads(run_cli("recommend", "profiles/llm-chatbot.yaml", "--rules", str(d), "--format", "json", "--no-flip").out)
    assert any("every device family is excluded" in w for w in out["warnings"])


def test_setup_names_are_valid_resource_names(tmp_path: Path) -> None:
    """The setup path's resource names start with a letter (GCE, GKE and Kubernetes reject a digit)."""
    prof = tmp_path / "p.yaml"
    prof.write_text(
        "name: 7B Chat -- EU!\ntask: inference\ndomain: llm\nmodel: {params_b: 7}\ninference: {peak_qps: 2}\ndeployment: {clouds: [gcp]}\n"
    )
    r = run_cli("recommend", str(prof), "--format", "json", "--no-flip")
    assert r.code == 0, r.err
    text = json.dumps(json.loads(r.out)["setup"])
    assert "w-7b-chat-eu" in text and "7b-chat-eu-cluster" not in text.replace("w-7b-chat-eu-cluster", "")
