from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import PROFILES, PROPOSALS, ROOT, run_cli

BAD = ROOT / "tests" / "data" / "bad_profiles"

# file -> the exact problems it must produce (path:line:col: error: message)
EXPECTED = {
    "alias-bomb.yaml": ["7:29: error: document expands to more than 50000 nodes (alias expansion limit)"],
    "bad-cloud.yaml": ["9:12: error: deployment.clouds[0]: 'gpc' is not one of gcp, aws, azure, oci, on-prem; did you mean 'gcp'?"],
    "bad-enum.yaml": ["3:7: error: task: 'trianing' is not one of training, fine-tuning, inference; did you mean 'training'?"],
    "duplicate-key.yaml": ["6:3: error: model.params_b: duplicate key 'params_b' (first defined at line 5, column 3)"],
    "empty.yaml": ["1:1: error: empty file: expected a workload profile"],
    "missing-inference-block.yaml": ["2:1: error: task 'inference' needs an 'inference:' block (peak_qps, ...)"],
    "missing-required.yaml": ["5:3: error: model.params_b: required field is missing"],
    "missing-training-block.yaml": ["2:1: error: task 'training' needs a 'training:' block (tokens_b, seq_len, ...)"],
    "misspelt-required-key.yaml": [
        "5:3: error: model.params_b: required field is missing",
        "6:3: error: model.params_bb: unknown field; did you mean 'params_b'?",
    ],
    "multi-doc-one-bad.yaml": [
        "15:13: error: model.params_b: Input should be a valid number (got 'seventy') (accepted range: (0, 100000])"
    ],
    "nan.yaml": ["5:13: error: model.params_b: Input should be a finite number (got nan) (accepted range: (0, 100000])"],
    "negative.yaml": ["5:13: error: model.params_b: Input should be greater than 0 (got -1) (accepted range: (0, 100000])"],
    "not-a-mapping.yaml": ["2:1: error: expected a workload profile, got a list"],
    "out-of-range.yaml": [
        "8:18: error: inference.hours_per_day: Input should be less than or equal to 24 (got 30) (accepted range: (0, 24])"
    ],
    "python-tag.yaml": ["2:7: error: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed (plain data only)"],
    "syntax-error.yaml": ["7:10: error: invalid YAML: did not find expected ',' or ']'"],
    "unknown-accelerator.yaml": ["9:16: error: proposal.accelerator: unknown accelerator 'h1000'; did you mean 'h100'?"],
    "unknown-key.yaml": ["6:3: error: model.achitecture: unknown field; did you mean 'architecture'?"],
    "unknown-top-level-key.yaml": ["8:1: error: deployement: unknown field; did you mean 'deployment'?"],
    "wrong-type.yaml": ["5:13: error: model.params_b: Input should be a valid number (got 'big') (accepted range: (0, 100000])"],
}


def test_every_bad_profile_has_an_expectation() -> None:
    assert {p.name for p in BAD.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("command", ["validate", "recommend"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_profile_exits_2_with_positions(name: str, command: str) -> None:
    path = str(BAD / name)
    r = run_cli(command, path)
    assert r.code == 2, r
    assert "Traceback" not in r.err and r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == len(EXPECTED[name])
    for line, want in zip(lines, EXPECTED[name], strict=True):
        assert line.startswith(f"{path}:{want}"), (line, want)


def test_problems_of_several_files_are_reported_together() -> None:
    r = run_cli("validate", str(BAD / "bad-enum.yaml"), str(BAD / "negative.yaml"), str(PROFILES[0]))
    assert r.code == 2
    assert "bad-enum.yaml:3:7" in r.err and "negative.yaml:5:13" in r.err


def test_missing_file_and_directory(tmp_path: Path) -> None:
    r = run_cli("validate", str(tmp_path / "nope.yaml"), str(tmp_path))
    assert r.code == 2
    assert f"{tmp_path / 'nope.yaml'}:1:1: error: no such file" in r.err
    assert f"{tmp_path}:1:1: error: is a directory, expected a YAML file" in r.err


@pytest.mark.parametrize("path", PROFILES + PROPOSALS, ids=lambda p: p.name)
def test_bundled_profiles_validate(path: Path) -> None:
    r = run_cli("validate", str(path))
    assert r.code == 0, r.err
    assert r.out.startswith(f"{path}: ok")


def test_bundled_profiles_have_a_header_comment() -> None:
    for path in PROFILES + PROPOSALS:
        lines = path.read_text().splitlines()
        assert lines[0].startswith("# yaml-language-server: $schema="), path
        assert sum(1 for line in lines[:8] if line.startswith("#")) >= 3, path


def test_multi_document_file(tmp_path: Path) -> None:
    text = PROFILES[0].read_text()
    f = tmp_path / "two.yaml"
    f.write_text(text + "\n---\n" + text)
    r = run_cli("recommend", str(f), "--format", "json", "--no-flip")
    assert r.code == 0, r.err
    import json

    data = json.loads(r.out)
    assert [d["profile"] for d in data] == [str(f), f"{f}#2"]


def test_fp64_flag_and_precision_accepted_yaml12_floats(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("name: x\ntask: training\nmodel: {params_b: 1e-1}\ntraining: {tokens_b: 1.5e1}\n")
    assert run_cli("validate", str(f)).code == 0
