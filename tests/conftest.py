"""Shared fixtures: the real CLI in-process, the loaded context, isolation from $HOME."""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROFILES = sorted((ROOT / "profiles").glob("*.yaml"))
PROPOSALS = sorted((ROOT / "profiles" / "proposals").glob("*.yaml"))


def sampled(items: list[Any], every: int = 3, offset: int = 0, ids: Any = None) -> list[Any]:
    """Parameters for a test that repeats one check over many inputs: every ``every``-th item
    (from ``offset``) runs in the default suite, the others are marked ``slow`` and run with
    ``-m slow`` (.ci/run runs both), so that the two runs together cover every item."""
    out = []
    for i, item in enumerate(items):
        name = ids(item) if callable(ids) else (ids[i] if ids is not None else None)
        marks = () if i % every == offset % every else (pytest.mark.slow,)
        out.append(pytest.param(item, marks=marks, id=name))
    return out


@dataclass
class Result:
    code: int
    out: str
    err: str


def git_checkout(case: Path, tmp_path: Path) -> Path:
    """A copy of a test case's directory as a git repository of its own (tracked files, as a pull request's checkout)."""
    import shutil
    import subprocess

    repo = tmp_path / "repo"
    shutil.copytree(case, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    return repo


def run_cli(*args: str) -> Result:
    """Run ``advisor ARGS`` through the real entry point (exit codes and all), in-process."""
    from advisor.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(autouse=True)
def _isolate_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture(scope="session")
def ctx():  # type: ignore[no-untyped-def]
    from advisor.api import Context

    return Context.load()


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


def pytest_configure(config: pytest.Config) -> None:
    sys.path.insert(0, str(ROOT))


# CI runs the property tests on a fixed sequence of examples (a red build must be reproducible);
# locally every run explores new ones.
from hypothesis import settings as _hyp_settings  # noqa: E402

_hyp_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    _hyp_settings.load_profile("ci")


def make_profile(data: dict[str, Any], over: dict[str, Any]) -> Any:
    """A Profile from ``data`` with ``over`` laid on top (blocks merged one level deep)."""
    from advisor.models import Profile

    merged = dict(data)
    for key, value in over.items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return Profile.model_validate(merged)
