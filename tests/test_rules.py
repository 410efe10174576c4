from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.knowledge import load_knowledge
from advisor.ruletest import run_rule

from .conftest import ROOT

KB = load_knowledge()
DIGEST = Path(ROOT).parent / "shared" / "seeds" / "DIGEST.md"


@pytest.mark.parametrize("rule", KB.rules, ids=lambda r: r.id)
def test_rule_examples(rule) -> None:  # type: ignore[no-untyped-def]
    results = run_rule(rule)
    assert any(r.kind == "fires" for r in results) and any(r.kind == "not_fires" for r in results)
    bad = [f"{r.kind}[{r.index}]: {r.detail}" for r in results if not r.ok]
    assert not bad, bad


def test_every_rule_cites_a_source_and_has_a_reason() -> None:
    for rule in KB.rules:
        assert rule.sources and rule.reason, rule.id
        assert all(s.startswith(("seed:S-", "https://")) for s in rule.sources), rule.id


@pytest.mark.skipif(not DIGEST.is_file(), reason="shared/seeds not beside the checkout")
def test_every_seed_claim_is_encoded_or_explained() -> None:
    ids = set(re.findall(r"\*\*(S-[AB][0-9.]+)\*\*", DIGEST.read_text(encoding="utf-8")))
    assert len(ids) >= 25
    assert ids <= KB.cited_claims(), sorted(ids - KB.cited_claims())


def test_setup_paths_cover_every_device_with_a_fallback() -> None:
    for device in ("tpu", "gpu", "cpu", "edge"):
        assert any(p.device == device and p.when is None for p in KB.setup_paths), device
    required = {
        "tpu-vm-pytorch-xla", "tpu-vm-jax", "vertex-ai-tpu", "gke-vllm-tpu", "tpu-v5e-hf-finetune",
        "maxtext-tpu", "maxdiffusion-tpu", "jetstream-maxtext-tpu", "gpu-vm-pytorch", "gke-vllm-gpu", "vertex-ai-gpu",
    }
    assert required <= {p.id for p in KB.setup_paths}


def _write(tmp: Path, name: str, text: str) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / name).write_text(text)
    return tmp


GOOD = """\
id: my-rule
title: A user rule
when: {field: model.params_b, op: gt, value: 100}
effect: {device: tpu, points: 3}
reason: Big models.
source: https://example.com/why
examples:
  fires: [{model: {params_b: 200}}]
  not_fires: [{model: {params_b: 1}}]
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("model.params_b", "model.param_b"),
            "my-rule.yaml:3:15: error: unknown field 'model.param_b'; did you mean 'model.params_b'?",
        ),
        (GOOD.replace("op: gt", "op: gtee"), "my-rule.yaml:3:35: error: unknown operator 'gtee'; did you mean 'gte'?"),
        (
            GOOD.replace("field: model.params_b, op: gt, value: 100", "field: task, op: eq, value: trianing"),
            "my-rule.yaml:3:36: error: 'trianing' is not a value of task (training, fine-tuning, inference); did you mean 'training'?",
        ),
        (
            GOOD.replace("field: model.params_b, op: gt", "field: task, op: gt"),
            "my-rule.yaml:3:25: error: operator 'gt' does not apply to task (enum)",
        ),
        (
            GOOD.replace("effect: {device: tpu, points: 3}", "effect: {device: tpu}"),
            "my-rule.yaml:4:9: error: effect: a scoring effect needs both 'device' and 'points'",
        ),
        (GOOD.replace("id: my-rule", "id: other-rule"), "my-rule.yaml:1:5: error: rule id 'other-rule' must match the file name 'my-rule'"),
        (GOOD.replace("reason: Big models.\n", ""), "my-rule.yaml:1:1: error: reason: required field is missing"),
        (GOOD.replace("when: {", "when: {evil: __import__('os'), "), "my-rule.yaml:3:8: error: unknown condition key 'evil'"),
        (
            GOOD.replace("source: https://example.com/why", "source: my blog"),
            "my-rule.yaml:6:9: error: source[0]: 'my blog' is not a seed claim (seed:S-A2.1) or an https:// URL",
        ),
    ],
)
def test_bad_user_rules_are_load_errors_with_positions(tmp_path: Path, text: str, expected: str) -> None:
    d = _write(tmp_path / "rules", "my-rule.yaml", text)
    with pytest.raises(InputError) as exc:
        load_knowledge([str(d)], builtin=False)
    messages = [str(p).replace(str(d) + "/", "") for p in exc.value.problems]
    assert any(m.startswith(expected) for m in messages), messages


def test_duplicate_rule_id_across_dirs(tmp_path: Path) -> None:
    builtin = next(iter(KB.rules))
    d = tmp_path / "rules"
    d.mkdir()
    shutil.copy(builtin.path, d / Path(builtin.path).name)
    with pytest.raises(InputError) as exc:
        load_knowledge([str(d)])
    assert f"duplicate rule id {builtin.id!r}" in str(exc.value)


def test_user_rule_dir_adds_rules(tmp_path: Path) -> None:
    d = _write(tmp_path / "rules", "my-rule.yaml", GOOD)
    kb = load_knowledge([str(d)])
    assert kb.rule("my-rule") is not None
    assert len(kb.rules) == len(KB.rules) + 1


SETUP = """\
id: my-path
title: A user setup path
device: gpu
source: https://example.com/how
summary: Serve it.
steps:
  - title: Serve with vLLM
    task: inference
    when: {field: facts.llm_server, op: eq, value: true}
    commands: ['vllm serve {model}']
  - title: Start your own server
    task: inference
    when: {field: facts.llm_server, op: eq, value: false}
"""


def test_setup_step_when_picks_the_steps(tmp_path: Path) -> None:
    """A step's ``when`` decides which steps a profile gets: vLLM's command for a language model, the team's own
    server for a diffusion pipeline (its setup never runs ``vllm serve``)."""
    from advisor.models import Profile
    from advisor.setuppath import applicable_steps

    d = _write(tmp_path / "rules" / "setup", "my-path.yaml", SETUP).parent
    [path] = [p for p in load_knowledge([str(d)], builtin=False).setup_paths if p.id == "my-path"]
    base = {"name": "x", "task": "inference", "inference": {"peak_qps": 1, "input_tokens": 10, "output_tokens": 10}}
    llm = Profile.model_validate({**base, "domain": "llm", "model": {"params_b": 8}})
    sdxl = Profile.model_validate({**base, "domain": "diffusion", "model": {"params_b": 3.5, "architecture": "diffusion"},
                                   "software": {"serving_stack": "triton"}})
    assert [s.title for s in applicable_steps(path, llm, "gcp")] == ["Serve with vLLM"]
    assert [s.title for s in applicable_steps(path, sdxl, "gcp")] == ["Start your own server"]


def test_setup_step_when_errors_have_positions(tmp_path: Path) -> None:
    text = SETUP.replace("facts.llm_server, op: eq, value: true", "facts.llm_sever, op: eq, value: true")
    d = _write(tmp_path / "rules" / "setup", "my-path.yaml", text).parent
    with pytest.raises(InputError) as exc:
        load_knowledge([str(d)], builtin=False)
    messages = [str(p).replace(str(d) + "/setup/", "") for p in exc.value.problems]
    assert any(m.startswith("my-path.yaml:9:19: error: unknown field 'facts.llm_sever'") for m in messages), messages


def test_a_kubernetes_path_deploys_the_teams_server_by_name() -> None:
    """Before: an SGLang team on EKS was shown 'Deploy vLLM' while the scaffold's k8s/ ran SGLang; the step now names
    the server the manifests run."""
    from advisor.api import Context, recommend_files

    ctx = Context.load()
    [rec] = recommend_files([str(ROOT / "tests" / "data" / "scaffold" / "sglang-aws.yaml")], ctx, with_flip=False)
    titles = [t for t, _c, _n in rec.setup.steps]
    assert "Deploy the team's server (SGLang or TGI)" in titles and "Deploy vLLM" not in titles, titles


def test_recommend_shows_the_server_the_scaffold_runs() -> None:
    """A 405B SGLang replica over two GPU hosts is served with vLLM (SGLang serves from one host only on GPUs): the
    scaffold's k8s/ runs vLLM, and recommend's steps now deploy vLLM too (setuppath.choose_server, one choice for
    both). Before, recommend showed 'Deploy the team's server (SGLang or TGI)' for it."""
    from advisor.api import Context, recommend_files

    ctx = Context.load()
    [rec] = recommend_files([str(ROOT / "tests" / "data" / "scaffold" / "multihost-405b.yaml")], ctx, with_flip=False)
    assert rec.estimate is not None and rec.estimate.device == "gpu"
    assert rec.setup is not None
    titles = [t for t, _c, _n in rec.setup.steps]
    assert "Deploy vLLM" in titles and "Deploy the team's server (SGLang or TGI)" not in titles, titles
