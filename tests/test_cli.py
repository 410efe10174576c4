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



def test_the_cache_holds_every_built_in_table_a_run_reads(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A run served from the cache reads no file of rules/ (software support, model families, device
    families, clouds come with the knowledge base); a table outside rules/ is read every time."""
    import shutil

    from advisor import validation, yamlsrc
    from advisor.api import Context
    from advisor.software import SoftwareTable

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ADVISOR_NO_CACHE", raising=False)
    Context.load()  # writes the cache
    stored = validation.builtin_tables()
    assert {name for name, _ in stored} >= {"software.yaml", "model-families.yaml", "families.yaml", "clouds.yaml"}
    monkeypatch.setattr(validation, "_BUILTIN_TABLES", {})  # a fresh process
    read: list[str] = []
    real = yamlsrc.load_file
    monkeypatch.setattr(validation, "load_file", lambda path, **kw: read.append(path) or real(path, **kw))
    monkeypatch.setattr(yamlsrc, "load_file", lambda path, **kw: read.append(path) or real(path, **kw))
    Context.load()
    assert validation.builtin_tables().keys() == stored.keys()
    assert (
        validation.load_table(validation.builtin_rules_dir() / "software.yaml", SoftwareTable)
        is validation.builtin_tables()[("software.yaml", "advisor.software.SoftwareTable")]
    )
    assert read == []
    mine = tmp_path / "software.yaml"
    shutil.copy(validation.builtin_rules_dir() / "software.yaml", mine)
    one, two = validation.load_table(mine, SoftwareTable), validation.load_table(mine, SoftwareTable)
    assert one is not two and read == [str(mine), str(mine)]


# --------------------------------------------------------------------------- rules list: both kinds


def test_rules_list_kinds_text() -> None:
    from advisor.check.rules import CHECK_RULES
    from advisor.knowledge import load_knowledge

    heuristic_ids = [r.id for r in load_knowledge().rules]
    default = run_cli("rules", "list")
    assert default.code == 0, default.err
    assert f"{len(heuristic_ids)} heuristics (advisor recommend)" in default.out
    assert "check rules (advisor check)" not in default.out and "--kind check" in default.out
    check = run_cli("rules", "list", "--kind", "check")
    assert check.code == 0, check.err
    assert f"{len(CHECK_RULES)} check rules (advisor check)" in check.out and "heuristics" not in check.out
    assert all(rid in check.out for rid in CHECK_RULES)
    assert not any(hid in check.out for hid in heuristic_ids)
    both = run_cli("rules", "list", "-k", "all")
    assert both.code == 0, both.err
    assert "heuristics (advisor recommend)" in both.out and "check rules (advisor check)" in both.out
    assert all(rid in both.out for rid in [*CHECK_RULES, *heuristic_ids])


def test_rules_list_kinds_json() -> None:
    import json

    from advisor.check.rules import CHECK_RULES

    heuristics = json.loads(run_cli("rules", "list", "--format", "json").out)
    assert heuristics == json.loads(run_cli("rules", "list", "--kind", "heuristics", "--format", "json").out)
    check = json.loads(run_cli("rules", "list", "--kind", "check", "--format", "json").out)
    assert [c["id"] for c in check] == sorted(CHECK_RULES)
    for c in check:
        rule = CHECK_RULES[c["id"]]
        assert (c["severity"], c["scope"], c["title"], c["help"]) == (rule.severity, rule.scope, rule.title, rule.help)
        assert c["checked_in"].startswith("advisor/")
    both = json.loads(run_cli("rules", "list", "--kind", "all", "--format", "json").out)
    assert both == {"heuristics": heuristics, "check_rules": check}


def test_rules_list_unknown_kind_is_exit_2() -> None:
    r = run_cli("rules", "list", "--kind", "checks")
    assert r.code == 2 and "--kind" in r.err


def test_rules_show_check_rule() -> None:
    import json

    r = run_cli("rules", "show", "proposal-oversized")
    assert r.code == 0, r.err
    assert r.out.startswith("proposal-oversized: More chips than needed\n")
    assert "check rule (advisor check)" in r.out and "severity: warning" in r.out and "check/rules.py: oversized()" in r.out
    data = json.loads(run_cli("rules", "show", "waiver-invalid", "-f", "json").out)
    assert data["kind"] == "check" and data["severity"] == "error" and data["scope"] == "waiver"
    typo = run_cli("rules", "show", "proposal-oversizd")
    assert typo.code == 2 and "did you mean 'proposal-oversized'" in typo.err
