"""Authoring commands through the real CLI: init, schema, rules list/show/test, generated docs."""

from __future__ import annotations

import io
import json
import re
import typing
from pathlib import Path

import pytest

from .conftest import PROFILES, PROPOSALS, ROOT, run_cli

BROKEN_RULE = """\
id: big-model-gpu
title: Big models like GPUs
when: {field: model.params_b, op: gte, value: 100}
effect: {device: gpu, points: 3}
reason: A test rule whose first examples contradict its condition.
source: seed:S-A2.1
examples:
  fires:
    - {model: {params_b: 7}}
    - {model: {params_b: 300}}
  not_fires:
    - {model: {params_b: 200}}
"""

TYPO_RULE = """\
id: typo-rule
title: A rule with a misspelt field
when: {field: model.param_b, op: gte, value: 100}
effect: {device: gpu, points: 3}
reason: Test.
source: seed:S-A2.1
examples:
  fires: [{model: {params_b: 700}}]
  not_fires: [{model: {params_b: 1}}]
"""


# --------------------------------------------------------------------------- init


@pytest.mark.parametrize(
    "flags",
    [
        ["--task", "inference", "--params-b", "8", "--qps", "40", "--clouds", "gcp,aws"],
        ["--task", "training", "--params-b", "70", "--framework", "jax", "--tokens-b", "1400"],
        ["--task", "fine-tuning", "--params-b", "13", "--domain", "nlp"],
        ["--task", "inference", "--domain", "diffusion", "--params-b", "3.5", "--name", "image gen: v2"],
        ["--no-input"],
    ],
)
def test_init_round_trips_through_validate_and_recommend(tmp_path: Path, flags: list[str]) -> None:
    target = tmp_path / "w.yaml"
    r = run_cli("init", str(target), *flags)
    assert r.code == 0, r.err
    assert f"wrote {target}" in r.out
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=https://")
    assert text.splitlines()[0].endswith("schemas/profile.schema.json")
    v = run_cli("validate", str(target))
    assert v.code == 0, v.err
    rec = run_cli("recommend", str(target), "--format", "json", "--no-flip")
    assert rec.code == 0, rec.err
    data = json.loads(rec.out)
    assert data["verdict"]["device"] in {"tpu", "gpu", "cpu", "edge"}
    if "--task" in flags:
        task = flags[flags.index("--task") + 1]
        assert f"\ntask: {task}\n" in text


def test_init_values_from_flags(tmp_path: Path) -> None:
    import yaml

    target = tmp_path / "bot.yaml"
    r = run_cli("init", str(target), "--task", "inference", "--params-b", "8", "--qps", "40", "--clouds", "gcp, aws", "--framework", "jax")
    assert r.code == 0, r.err
    data = yaml.safe_load(target.read_text())
    assert data["name"] == "bot"
    assert data["model"]["params_b"] == 8
    assert data["inference"]["peak_qps"] == 40
    assert data["deployment"]["clouds"] == ["gcp", "aws"]
    assert data["software"]["framework"] == "jax"
    assert "training" not in data


def test_init_is_fully_commented(tmp_path: Path) -> None:
    target = tmp_path / "w.yaml"
    assert run_cli("init", str(target), "--no-input").code == 0
    text = target.read_text()
    # every field documented above it, allowed values spelled out
    assert "# What the accelerators will do" in text
    flat = re.sub(r"\n\s*# ", " ", text)  # comment blocks as one line each
    assert "One of: training | fine-tuning | inference." in flat
    assert "# latency_p99_ms: 2000" in text  # optional fields as commented-out examples
    assert "# proposal:" in text
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*[a-z_]+:", line):
            assert lines[i - 1].lstrip().startswith("#"), f"field without a comment: {line!r}"


def test_init_without_terminal_writes_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NotATerminal(io.StringIO):
        def isatty(self) -> bool:
            return False

    monkeypatch.setattr("sys.stdin", NotATerminal(""))
    target = tmp_path / "workload.yaml"
    r = run_cli("init", str(target))
    assert r.code == 0, r.err
    assert "name: my-workload" in target.read_text()


def test_init_asks_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    # name, task (a typo first, re-asked), domain (default), params, framework, clouds (a typo first), tokens (default)
    answers = "bot\ntrainig\nfine-tuning\n\n13\njax\ngcp,azur\ngcp,azure\n\n"
    monkeypatch.setattr("sys.stdin", Terminal(answers))
    target = tmp_path / "asked.yaml"
    r = run_cli("init", str(target))
    assert r.code == 0, r.err + r.out
    assert "did you mean 'azure'?" in r.out + r.err
    import yaml

    data = yaml.safe_load(target.read_text())
    assert data["name"] == "bot" and data["task"] == "fine-tuning" and data["domain"] == "llm"
    assert data["model"]["params_b"] == 13 and data["software"]["framework"] == "jax"
    assert data["deployment"]["clouds"] == ["gcp", "azure"]
    assert data["training"] == {"tokens_b": 1, "seq_len": 2048, "method": "lora"}
    assert run_cli("validate", str(target)).code == 0


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "w.yaml"
    target.write_text("precious: true\n")
    r = run_cli("init", str(target), "--no-input")
    assert r.code == 2
    assert "already exists" in r.err and "--force" in r.err
    assert target.read_text() == "precious: true\n"
    r = run_cli("init", str(target), "--no-input", "--force")
    assert r.code == 0, r.err
    assert "precious" not in target.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["w.yaml"]  # no temp file left behind


def test_init_to_stdout(tmp_path: Path) -> None:
    r = run_cli("init", "-", "--task", "training", "--params-b", "7")
    assert r.code == 0, r.err
    assert r.out.startswith("# yaml-language-server: $schema=")
    target = tmp_path / "from-stdout.yaml"
    target.write_text(r.out)
    assert run_cli("validate", str(target)).code == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--clouds", "gcp,awz"], "did you mean 'aws'?"),
        (["--params-b", "0"], "model.params_b"),
        (["--params-b", "nan"], "model.params_b"),
        (["--qps", "inf"], "inference.peak_qps"),
        (["--task", "training", "--qps", "3"], "--qps applies to task inference"),
        (["--task", "trianing"], "trianing"),
    ],
)
def test_init_bad_values_are_exit_2(tmp_path: Path, flags: list[str], message: str) -> None:
    target = tmp_path / "w.yaml"
    r = run_cli("init", str(target), *flags)
    assert r.code == 2
    assert message in r.err
    assert "Traceback" not in r.err
    assert not target.exists()


def test_init_into_missing_directory_is_exit_2(tmp_path: Path) -> None:
    r = run_cli("init", str(tmp_path / "nope" / "w.yaml"), "--no-input")
    assert r.code == 2 and "does not exist" in r.err


def test_init_choices_match_the_profile_model() -> None:
    from advisor import models
    from advisor.commands import authoring

    assert typing.get_args(authoring.TaskChoice) == typing.get_args(models.Task) == authoring.TASKS
    assert typing.get_args(authoring.DomainChoice) == typing.get_args(models.Domain) == authoring.DOMAINS
    assert typing.get_args(authoring.FrameworkChoice) == typing.get_args(models.Framework) == authoring.FRAMEWORKS
    from advisor import clouds

    assert typing.get_args(models.Cloud) == authoring.cloud_ids() == clouds.ids()  # one registry: rules/clouds.yaml


# --------------------------------------------------------------------------- schema


def test_schema_profile() -> None:
    r = run_cli("schema")
    assert r.code == 0, r.err
    schema = json.loads(r.out)
    assert {"name", "task", "model"} <= set(schema["required"])
    assert schema["additionalProperties"] is False
    assert schema["properties"]["model"]["description"]
    assert r.out == run_cli("schema", "--kind", "profile").out  # deterministic
    from advisor.commands.authoring import SCHEMA_URL

    assert schema["$id"] == SCHEMA_URL  # what `advisor init` writes on the first line


@pytest.mark.parametrize("kind", ["profile", "rules", "catalog"])
def test_schema_kinds_are_valid_json_and_match_the_repo(kind: str) -> None:
    r = run_cli("schema", "--kind", kind)
    assert r.code == 0, r.err
    schema = json.loads(r.out)
    assert schema["$schema"].startswith("https://json-schema.org/")
    published = ROOT / "schemas" / f"{kind}.schema.json"
    assert r.out == published.read_text(encoding="utf-8"), f"{published} is stale: run `python -m advisor.docgen`"


def test_schema_bad_kind_is_exit_2() -> None:
    assert run_cli("schema", "--kind", "policy").code == 2


def test_bundled_profiles_point_at_the_published_schema() -> None:
    for path in PROFILES + PROPOSALS:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        m = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
        assert m, f"{path}: first line is not a yaml-language-server $schema line"
        assert (path.parent / m.group(1)).resolve() == (ROOT / "schemas" / "profile.schema.json").resolve(), path


def test_schemas_accept_the_bundled_files(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    from advisor.docgen import json_schema

    cases = {
        "profile": PROFILES + PROPOSALS,
        "rules": sorted((ROOT / "rules" / "heuristics").glob("*.yaml")),
        "catalog": [ROOT / "rules" / "catalog.yaml"],
    }
    for kind, paths in cases.items():
        schema = json_schema(kind)  # type: ignore[arg-type]
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        for path in paths:
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if doc is not None:
                    errors = [e.message for e in validator.iter_errors(doc)]
                    assert not errors, f"{path}: {errors[:3]}"
    target = tmp_path / "w.yaml"
    assert run_cli("init", str(target), "--no-input").code == 0
    validator = jsonschema.Draft202012Validator(json_schema("profile"))
    assert not list(validator.iter_errors(yaml.safe_load(target.read_text())))
    assert list(validator.iter_errors({"name": "x", "task": "inference", "model": {"params_b": 1}, "modle": {}}))


# --------------------------------------------------------------------------- rules list / show


def test_rules_list_text() -> None:
    r = run_cli("rules", "list")
    assert r.code == 0, r.err
    for rule_id in ("tpu-custom-cuda-kernels", "fp64-excludes-tpu", "gpu-cuda-ecosystem"):
        assert rule_id in r.out
    assert "excludes tpu" in r.out and "-10 tpu" in r.out


def test_rules_list_json() -> None:
    from advisor.knowledge import load_knowledge

    r = run_cli("rules", "list", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [d["id"] for d in data] == sorted(rule.id for rule in load_knowledge().rules)
    first = {d["id"]: d for d in data}["tpu-custom-cuda-kernels"]
    assert first["effect"] == {"exclude": ["tpu"]}  # the kernels do not run on a TPU until ported
    assert first["effect_text"] == "excludes tpu"
    assert first["title"] and first["category"] == "ecosystem" and first["sources"]


def test_rules_list_includes_user_rules(tmp_path: Path) -> None:
    (tmp_path / "big-model-gpu.yaml").write_text(BROKEN_RULE)
    r = run_cli("rules", "list", "--rules", str(tmp_path), "-f", "json")
    assert r.code == 0, r.err
    assert "big-model-gpu" in [d["id"] for d in json.loads(r.out)]


def test_rules_show_known_id() -> None:
    r = run_cli("rules", "show", "tpu-very-large-model-training")
    assert r.code == 0, r.err
    out = r.out
    assert out.startswith("tpu-very-large-model-training: ")
    for part in (
        "when:",
        "all of:",
        "facts.is_training == true",
        "model.params_b >= 30",
        "reason:",
        "sources:",
        "seed:S-B7",
        "fires:",
        "does not fire:",
        "rules/heuristics/tpu-very-large-model-training.yaml",
    ):
        assert part in out, part


def test_rules_show_json() -> None:
    r = run_cli("rules", "show", "tpu-custom-cuda-kernels", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["when"] == {"field": "software.custom_cuda_kernels", "op": "eq", "value": True}
    assert data["fix"] and data["reason"] and data["examples"]["fires"] and data["examples"]["not_fires"]


def test_rules_show_unknown_id_suggests() -> None:
    r = run_cli("rules", "show", "tpu-custm-cuda-kernels")
    assert r.code == 2
    assert "unknown rule 'tpu-custm-cuda-kernels'" in r.err
    assert "did you mean 'tpu-custom-cuda-kernels'?" in r.err


# --------------------------------------------------------------------------- rules test


def test_rules_test_builtin_passes() -> None:
    r = run_cli("rules", "test")
    assert r.code == 0, r.out + r.err
    assert "PASS tpu-custom-cuda-kernels fires[0]" in r.out
    assert "FAIL" not in r.out
    assert re.search(r"^\d+ passed, 0 failed \(\d+ rules\)$", r.out.splitlines()[-1])


def test_rules_test_quiet_prints_only_the_summary() -> None:
    r = run_cli("rules", "test", "--quiet")
    assert r.code == 0
    assert len(r.out.splitlines()) == 1 and " passed, 0 failed" in r.out


def test_rules_test_broken_directory_fails(tmp_path: Path) -> None:
    (tmp_path / "big-model-gpu.yaml").write_text(BROKEN_RULE)
    r = run_cli("rules", "test", str(tmp_path))
    assert r.code == 1, r.out + r.err
    lines = r.out.splitlines()
    assert "FAIL big-model-gpu fires[0]: expected the rule to fire, it did not fire" in lines
    assert "FAIL big-model-gpu not_fires[0]: expected the rule not to fire, it fired" in lines
    assert "PASS big-model-gpu fires[1]" in lines
    assert "    model.params_b >= 100: false (model.params_b = 7)" in lines  # why it failed
    assert lines[-1] == "1 passed, 2 failed (1 rule)"
    # only the user's directory is tested, not the built-in rules
    assert not any("tpu-" in line for line in lines)


def test_rules_test_json(tmp_path: Path) -> None:
    (tmp_path / "big-model-gpu.yaml").write_text(BROKEN_RULE)
    r = run_cli("rules", "test", str(tmp_path), "--format", "json")
    assert r.code == 1
    data = json.loads(r.out)
    assert data["passed"] == 1 and data["failed"] == 2
    assert {"rule": "big-model-gpu", "case": "fires[1]", "ok": True, "detail": None} in data["results"]


def test_rules_test_passing_user_directory(tmp_path: Path) -> None:
    heuristics = tmp_path / "heuristics"
    heuristics.mkdir()
    fixed = BROKEN_RULE.replace("params_b: 7}", "params_b: 700}").replace("params_b: 200}", "params_b: 20}")
    (heuristics / "big-model-gpu.yaml").write_text(fixed)
    r = run_cli("rules", "test", str(tmp_path))
    assert r.code == 0, r.out + r.err
    assert r.out.splitlines()[-1] == "3 passed, 0 failed (1 rule)"


def test_rules_test_load_error_is_exit_2_with_position(tmp_path: Path) -> None:
    (tmp_path / "typo-rule.yaml").write_text(TYPO_RULE)
    r = run_cli("rules", "test", str(tmp_path))
    assert r.code == 2
    assert f"{tmp_path / 'typo-rule.yaml'}:3:" in r.err
    assert "did you mean 'model.params_b'?" in r.err
    assert "Traceback" not in r.err


def test_rules_test_missing_or_empty_directory_is_exit_2(tmp_path: Path) -> None:
    r = run_cli("rules", "test", str(tmp_path / "nope"))
    assert r.code == 2 and "does not exist" in r.err
    r = run_cli("rules", "test", str(tmp_path))
    assert r.code == 2 and "no rules to test" in r.err


# --------------------------------------------------------------------------- help, docs


def test_help_lists_the_authoring_commands() -> None:
    r = run_cli("--help")
    for cmd in ("init", "schema", "rules"):
        assert re.search(rf"^\s+{cmd}\s", r.out, re.M), cmd
    r = run_cli("rules", "--help")
    assert r.code == 0 and all(c in r.out for c in ("list", "show", "test"))


def test_generated_docs_and_schemas_are_not_stale() -> None:
    from advisor.docgen import stale

    assert stale(ROOT) == [], "generated files are stale: run `python -m advisor.docgen`"


def test_docgen_check_mode(tmp_path: Path) -> None:
    from advisor import docgen

    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0
    assert (tmp_path / "docs" / "reference" / "rules.md").read_text() == (ROOT / "docs" / "reference" / "rules.md").read_text()


def test_every_profile_field_is_documented() -> None:
    from advisor.docgen import FIELD_DOCS, iter_fields, json_schema

    paths = [row.path for row in iter_fields(json_schema("profile"))]
    missing = [p for p in paths if p not in FIELD_DOCS]
    assert not missing, f"add a description to FIELD_DOCS in advisor/docgen.py for: {missing}"
    reference = (ROOT / "docs" / "reference" / "profile-fields.md").read_text()
    for p in paths:
        assert f"`{p}`" in reference


def test_rules_reference_lists_every_rule() -> None:
    from advisor.knowledge import load_knowledge

    reference = (ROOT / "docs" / "reference" / "rules.md").read_text()
    for rule in load_knowledge().rules:
        assert f"### {rule.id}\n" in reference


@pytest.mark.parametrize(
    "doc", ["docs/user-guide.md", "docs/rule-authoring.md", "docs/reference/profile-fields.md", "docs/reference/rules.md"]
)
def test_doc_links_resolve(doc: str) -> None:
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "#")):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve()
        assert resolved.exists(), f"{doc}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", resolved.read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{doc}: no heading for #{anchor} in {file_part}"
