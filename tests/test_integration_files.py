"""action.yml, the example workflows and the pre-commit hooks are valid against their published schemas."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from .conftest import ROOT

pytest.importorskip("check_jsonschema")


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("vendor.github-actions", "action.yml"),
        ("vendor.github-workflows", "docs/examples/github-workflow.yml"),
        ("vendor.gitlab-ci", "docs/examples/gitlab-ci.yml"),
    ],
)
def test_against_published_schema(schema: str, path: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(ROOT / path)],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_pre_commit_hooks() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"advisor-check", "advisor-validate"}
    for h in hooks:
        assert h["entry"].startswith("advisor ") and h["language"] == "python"
