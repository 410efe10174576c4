from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from advisor import __version__

from .conftest import ROOT, run_cli


def test_version() -> None:
    r = run_cli("--version")
    assert r.code == 0 and r.out == f"advisor {__version__}\n"


def test_python_dash_m(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", str(ROOT / "profiles" / "tabular-cpu.yaml"), "--format", "json", "--no-flip"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert '"device": "cpu"' in p.stdout


def test_no_args_shows_help() -> None:
    r = run_cli()
    assert "recommend" in r.out + r.err


def test_bad_option_is_exit_2() -> None:
    r = run_cli("recommend", "--bogus", "x")
    assert r.code == 2 and "No such option" in r.err


def test_bad_format_is_exit_2() -> None:
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--format", "yaml")
    assert r.code == 2


def test_internal_error_is_exit_3_with_hint(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import advisor.api

    def boom(*a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("kaboom")

    monkeypatch.setattr(advisor.api, "recommend_files", boom)
    r = run_cli("recommend", "profiles/llm-chatbot.yaml")
    assert r.code == 3
    assert "internal error (RuntimeError: kaboom)" in r.err and "--debug" in r.err
    assert "Traceback" not in r.err
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--debug")
    assert r.code == 3 and "Traceback" in r.err


def test_global_flags_anywhere() -> None:
    r = run_cli("catalog", "--no-color", "-q")
    assert r.code == 0 and "tpu-v6e" in r.out


def test_compiled_data_cache(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    from advisor import cache
    from advisor.api import Context
    from advisor.knowledge import builtin_rules_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ADVISOR_NO_CACHE", raising=False)
    first = Context.load()
    files = list((tmp_path / "advisor").glob("builtin-*.pickle"))
    assert len(files) == 1 and (files[0].stat().st_mode & 0o777) == 0o600
    assert cache.load(builtin_rules_dir()) is not None
    second = Context.load()
    assert [r.id for r in second.kb.rules] == [r.id for r in first.kb.rules]
    # a cache file others can write to is never read
    os.chmod(files[0], 0o666)
    assert cache.load(builtin_rules_dir()) is None
    # a cache written with another key (restored from elsewhere) is never unpickled
    os.chmod(files[0], 0o600)
    (tmp_path / "state" / "advisor" / "cache.key").write_bytes(b"x" * 32)
    assert cache.load(builtin_rules_dir()) is None
    # a damaged cache is rebuilt, not trusted
    files[0].write_bytes(b"not a pickle")
    assert cache.load(builtin_rules_dir()) is None
    assert Context.load().kb.rules
