"""Hostile and malformed input: every case ends in exit 2 with one clear
``path:line:col: error:`` line (or exit 0 where the input is odd but valid),
never a traceback, a hang or runaway memory."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

GOOD = (ROOT / "profiles" / "llm-chatbot.yaml").read_text()
MINI = "name: x\ntask: inference\nmodel: {params_b: 1}\ninference: {peak_qps: 1}\n"
TIME_LIMIT_S = 5.0


def _alias_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\nname: *a11\n"


# name -> (file content (str or bytes), expected exit code, substring of the message)
CASES: dict[str, tuple[str | bytes, int, str]] = {
    "alias-bomb": (_alias_bomb(), 2, "alias expansion limit"),
    "deep-flow-seq": ("[" * 50_000 + "]" * 50_000, 2, "nest"),
    "deep-flow-map": ("{a: " * 50_000 + "1" + "}" * 50_000, 2, "nest"),
    "deep-block-map": "".join(f"{' ' * i}k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n",
    "binary-junk": (bytes(random.Random(7).randrange(256) for _ in range(4096)), 2, "error:"),
    "invalid-utf8": (b"name: caf\xe9\ntask: inference\n", 2, ":1:10: error: not valid UTF-8 text"),
    "nul-byte": ("name: a\x00b\n", 2, "NUL byte"),
    "control-char": ("name: a\x07b\n", 2, "invalid YAML"),
    "utf16-bom": ("\ufeffname: x\n".encode("utf-16"), 2, "not valid UTF-8"),
    "utf8-bom-valid": ("\ufeff" + MINI, 0, ""),
    "non-ascii-name-valid": (MINI.replace("name: x", "name: 챗봇 서비스 ☁"), 0, ""),
    "tab-indent": ("name: x\nmodel:\n\tparams_b: 1\n", 2, "invalid YAML"),
    "python-object-apply": ("name: !!python/object/apply:os.system ['id']\n", 2, "not allowed"),
    "python-name": ("name: !!python/name:os.system\n", 2, "not allowed"),
    "python-module": ("name: !!python/module:os\n", 2, "not allowed"),
    "python-object-new": ("name: !!python/object/new:subprocess.Popen [['id']]\n", 2, "not allowed"),
    "custom-tag": ("name: !include /etc/passwd\n", 2, "not allowed"),
    "binary-tag": ("name: !!binary aGVsbG8=\n", 2, "not allowed"),
    "set-tag": ("name: !!set {a, b}\n", 2, "not allowed"),
    "merge-key": ("base: &b {name: x}\n<<: *b\n", 2, "merge keys"),
    "complex-key": ("? [a, b]\n: 1\n", 2, "cannot be a mapping key"),
    "duplicate-nested": (MINI + "model: {params_b: 2}\n", 2, "duplicate key 'model'"),
    "nan": (MINI.replace("params_b: 1", "params_b: .nan"), 2, "finite number"),
    "inf": (MINI.replace("params_b: 1", "params_b: .inf"), 2, "finite number"),
    "neg-inf": (MINI.replace("peak_qps: 1", "peak_qps: -.inf"), 2, "inference.peak_qps"),
    "1e400": (MINI.replace("params_b: 1", "params_b: 1e400"), 2, "finite number"),
    "zero-params": (MINI.replace("params_b: 1", "params_b: 0"), 2, "greater than 0"),
    "negative-qps": (MINI.replace("peak_qps: 1", "peak_qps: -5"), 2, "accepted range"),
    "absurd-tokens": ("name: x\ntask: training\nmodel: {params_b: 1}\ntraining: {tokens_b: 1e30}\n", 2, "accepted range: (0, 1e+06]"),
    "absurd-params": (MINI.replace("params_b: 1", "params_b: 1e12"), 2, "accepted range: (0, 100000]"),
    "huge-int": (MINI.replace("params_b: 1", "params_b: " + "9" * 5000), 2, "is too large"),
    # YAML 1.1 base 60: 8:8:8... is one number of thousands of digits that no digit limit stops and Python cannot print
    "huge-base60-int": (MINI.replace("params_b: 1", "params_b: " + ":".join(["8"] * 5000)), 2, "is too large"),
    "string-for-number": (MINI.replace("params_b: 1", "params_b: seventy"), 2, "valid number"),
    "bool-for-number": (MINI.replace("params_b: 1", "params_b: true"), 2, "model.params_b"),
    "list-for-mapping": (MINI.replace("model: {params_b: 1}", "model: [1, 2]"), 2, "model:"),
    "mapping-for-list": (MINI + "deployment: {clouds: {gcp: 1}}\n", 2, "deployment.clouds"),
    "missing-blocks": ("name: x\ntask: inference\n", 2, "model: required field is missing"),
    "null-document": ("~\n", 2, "empty"),
    "comments-only": ("# nothing here\n", 2, "empty file"),
    "scalar-document": ("just a string\n", 2, "expected a workload profile, got a string"),
    "long-name": (MINI.replace("name: x", "name: " + "x" * 10_000), 2, "name:"),
    "code-looking-string": (MINI.replace("name: x", "name: \"__import__('os').system('id')\""), 0, ""),
    "unknown-accelerator": (MINI + "proposal: {accelerator: 'h100; rm -rf /', count: 1, hours: 1}\n", 2, "unknown accelerator"),
    "too-large": ("# " + "x" * (1024 * 1024) + "\n" + MINI, 2, "limit"),
    "many-documents-one-bad": ((MINI + "---\n") * 50 + "name: [\n", 2, "invalid YAML"),
    "wide-list": (MINI + "deployment: {clouds: [" + ", ".join(["gcp"] * 5000) + "]}\n", 2, "deployment.clouds"),
}
CASES["deep-block-map"] = (CASES["deep-block-map"], 2, "nest")  # type: ignore[assignment]


BASE60 = ":".join(["8"] * 5000)
GATE_BASE60 = {
    "pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n"
                f"    resources: {{limits: {{nvidia.com/gpu: {BASE60}}}}}\n",
    "deploy.yaml": f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: x}}\nspec:\n  replicas: {BASE60}\n",
    "sky.yaml": f"resources:\n  accelerators: H100:8\nnum_nodes: {BASE60}\nrun: x\n",
    "d.dstack.yml": f"type: task\ncommands: [x]\nresources:\n  gpu: {BASE60}\n",
}


@pytest.mark.parametrize("name", sorted(GATE_BASE60))
def test_a_number_too_large_to_print_is_an_input_error_in_the_gate(tmp_path: Path, name: str) -> None:
    """A base-60 number of thousands of digits in a manifest, task or configuration was an internal error (its message
    could not print it); it is a positioned input error at the YAML reader, as a long decimal one already was."""
    f = tmp_path / name
    f.write_text(GATE_BASE60[name])
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2 and "internal error" not in r.err and r.err.startswith(f"{f}:") and "is too large" in r.err, r.err


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_profile(tmp_path: Path, name: str) -> None:
    content, code, needle = CASES[name]
    f = tmp_path / f"{name}.yaml"
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content, encoding="utf-8")
    start = time.perf_counter()
    r = run_cli("recommend", str(f), "--format", "json", "--no-flip")
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT_S, f"{name} took {elapsed:.1f}s"
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert r.code == code, (name, r.code, r.err[:500])
    if code == 2:
        first = r.err.splitlines()[0]
        assert first.startswith(f"{f}:") and ": error: " in first, first
        assert needle in r.err, (needle, r.err[:500])
        assert r.out == ""


def test_corpus_size() -> None:
    assert len(CASES) + len(FILE_CASES) + len(RULE_CASES) + len(CATALOG_CASES) >= 40


# ----------------------------------------------------------------------------- files


def _fifo(tmp: Path) -> str:
    p = tmp / "fifo.yaml"
    os.mkfifo(p)
    return str(p)


def _loop(tmp: Path) -> str:
    a, b = tmp / "a.yaml", tmp / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    return str(a)


FILE_CASES = {
    "nonexistent": (lambda tmp: str(tmp / "nope.yaml"), "no such file"),
    "directory": (lambda tmp: str(tmp), "is a directory"),
    "fifo": (_fifo, "not a regular file"),
    "dev-zero": (lambda tmp: "/dev/zero", "not a regular file"),
    "symlink-loop": (_loop, "cannot read"),
}


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_hostile_paths(tmp_path: Path, name: str) -> None:
    make, needle = FILE_CASES[name]
    path = make(tmp_path)
    start = time.perf_counter()
    r = run_cli("validate", path)
    assert time.perf_counter() - start < TIME_LIMIT_S
    assert r.code == 2 and needle in r.err and r.err.startswith(f"{path}:1:1: error:"), r.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path: Path) -> None:
    f = tmp_path / "secret.yaml"
    f.write_text(MINI)
    f.chmod(0)
    r = run_cli("validate", str(f))
    assert r.code == 2 and "permission denied" in r.err


# ----------------------------------------------------------------------------- rules and catalog overrides

RULE = """\
id: r
title: t
when: {field: model.params_b, op: gt, value: 1}
effect: {device: tpu, points: 1}
reason: because
source: https://example.com
examples:
  fires: [{model: {params_b: 2}}]
  not_fires: [{model: {params_b: 1}}]
"""

RULE_CASES = {
    "unknown-operator": (RULE.replace("op: gt", "op: matches"), "unknown operator 'matches'"),
    "unknown-field": (RULE.replace("model.params_b", "model.__class__"), "unknown field 'model.__class__'"),
    "code-in-value": (RULE.replace("value: 1}", "value: \"__import__('os').system('id')\"}"), "value must be a finite number"),
    "python-tag-in-rule": (RULE.replace("value: 1}", "value: !!python/object/apply:os.system [id]}"), "not allowed"),
    "points-out-of-range": (RULE.replace("points: 1", "points: 1e9"), "effect.points"),
    "deep-condition": (
        RULE.replace(
            "when: {field: model.params_b, op: gt, value: 1}",
            "when: " + "{not: " * 40 + "{field: model.params_b, op: gt, value: 1}" + "}" * 40,
        ),
        "nested more than 32 levels",
    ),
    "duplicate-id": (None, "duplicate rule id 'r'"),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_hostile_rules(tmp_path: Path, name: str) -> None:
    text, needle = RULE_CASES[name]
    d = tmp_path / "rules"
    d.mkdir()
    if text is None:
        (d / "r.yaml").write_text(RULE)
        sub = tmp_path / "more"
        sub.mkdir()
        (sub / "r.yaml").write_text(RULE)
        r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--rules", str(d), "--rules", str(sub))
    else:
        (d / "r.yaml").write_text(text)
        r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--rules", str(d))
    assert r.code == 2 and needle in r.err and "Traceback" not in r.err, r.err
    assert r.err.startswith(str(tmp_path)) and ": error: " in r.err.splitlines()[0]


OVERRIDE = "schema_version: 1\nsources:\n  S: {url: 'https://x', retrieved: '2026-01-01'}\naccelerators:\n"
CATALOG_CASES = {
    "negative-price": (
        OVERRIDE + "  - id: h100\n    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: -3, source: [S], as_of: '2026-01-01'}]\n",
        "greater than 0",
    ),
    "string-price": (
        OVERRIDE
        + "  - id: h100\n    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: cheap, source: [S], as_of: '2026-01-01'}]\n",
        "valid number",
    ),
    "nan-price": (
        OVERRIDE + "  - id: h100\n    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: .nan, source: [S], as_of: '2026-01-01'}]\n",
        "finite number",
    ),
    "unknown-id": (OVERRIDE + "  - id: h1000\n    prices: []\n", "did you mean 'h100'?"),
    "unknown-cloud": (
        OVERRIDE + "  - id: h100\n    prices: [{cloud: gpc, kind: on-demand, usd_per_chip_hour: 1, source: [S], as_of: '2026-01-01'}]\n",
        "did you mean 'gcp'?",
    ),
    "bad-date": (
        OVERRIDE + "  - id: h100\n    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: 1, source: [S], as_of: 'yesterday'}]\n",
        "as_of",
    ),
}


@pytest.mark.parametrize("name", sorted(CATALOG_CASES))
def test_hostile_catalog_override(tmp_path: Path, name: str) -> None:
    text, needle = CATALOG_CASES[name]
    f = tmp_path / "override.yaml"
    f.write_text(text)
    r = run_cli("recommend", "profiles/llm-chatbot.yaml", "--catalog", str(f))
    assert r.code == 2 and needle in r.err and r.err.startswith(f"{f}:"), r.err


# ----------------------------------------------------------------------------- memory


def test_peak_memory_of_the_largest_hostile_inputs(tmp_path: Path) -> None:
    """A 1 MiB document and an alias bomb stay within a small multiple of the file size."""
    big = tmp_path / "big.yaml"
    items = ", ".join(f"k{i}: {i}" for i in range(60_000))
    big.write_text("name: x\nextra: {" + items + "}\n"[: 1024 * 1024 - 20])
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(CASES["alias-bomb"][0])  # type: ignore[arg-type]
    # The probe reports its own high-water mark (VmHWM belongs to the process image after exec;
    # the child's ru_maxrss would also count the pages of the forked test runner).
    probe = (
        "import sys\nfrom advisor.cli import main\ntry:\n    main(['validate', sys.argv[1]])\nexcept SystemExit as e:\n"
        "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
        "    print(e.code, hwm[0] if hwm else 0)\n"
    )
    for f in (big, bomb):
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", probe, str(f)], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert time.perf_counter() - start < 20
        code, kib = p.stdout.split()
        assert code == "2", p.stdout
        peak_mib = int(kib) / 1024
        assert peak_mib < 150, f"{f.name}: {peak_mib:.0f} MiB"


# ----------------------------------------------------------------------------- report templates

SECRET = "s3cr3t-token-do-not-leak"
PROFILE = str(ROOT / "profiles" / "llm-chatbot.yaml")


def _tpl(body: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / "report.md.j2").write_text(body)
        return str(tmp / "report.md.j2")

    return make


def _symlink_environ(tmp: Path) -> str:
    (tmp / "report.md.j2").symlink_to("/proc/self/environ")
    return str(tmp / "report.md.j2")


def _symlink_dir(tmp: Path) -> str:
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "report.md.j2").write_text("{{ reports[0].name }}")
    (tmp / "tpl").symlink_to(elsewhere)
    return "tpl/report.md.j2"  # relative to the working directory, as CI names it


def _git_config_itself(tmp: Path) -> str:
    return str(tmp / ".git" / "config")


def _include_symlink(tmp: Path) -> str:
    (tmp / "part.j2").symlink_to("/proc/self/environ")
    return _tpl("{% include 'part.j2' %}")(tmp)


# name -> (make the template, return its path; substring of the one error line)
TEMPLATE_CASES: dict[str, tuple[Callable[[Path], str], str]] = {
    "include-git-config": (_tpl("{% include '.git/config' %}"), "dotfiles and dot directories"),
    "include-parent-git-config": (_tpl("{% include '../' ~ 'x/.git/config' %}"), "not allowed"),
    "import-git-config": (_tpl("{% import '.git/config' as c %}"), "dotfiles"),
    "extends-absolute": (_tpl("{% extends '/proc/self/environ' %}"), "only files of the template's directory"),
    "include-absolute": (_tpl("{% include '/etc/passwd' %}"), "only files of the template's directory"),
    "include-symlink": (_include_symlink, "symbolic link"),
    "template-is-git-config": (_git_config_itself, "nothing under .git"),
    "template-symlink-environ": (_symlink_environ, "symbolic link"),
    "template-under-symlinked-dir": (_symlink_dir, "symbolic link"),
    "center-1e9": (_tpl("{{ 'x'|center(10**9) }}"), "too large"),
    "lipsum": (_tpl("{{ lipsum(10**6) }}"), "lipsum"),
    "nested-ranges": (_tpl("{% for a in range(10**5) %}{% for b in range(10**5) %}{% endfor %}{% endfor %}"), "range"),
    "range-1e9": (_tpl("{{ range(10**9)|join(',') }}"), "range"),
    "format-width": (_tpl("{{ '%999999999s'|format(1) }}"), "too large"),
    "format-star-width": (_tpl("{{ '%*s'|format(999999999, 1) }}"), "'*' widths"),
    "percent-width": (_tpl("{{ '%999999999s' % 1 }}"), "too large"),
    "str-format-width": (_tpl("{{ '{:>999999999}'.format(1) }}"), "too large"),
    "str-format-nested": (_tpl("{{ '{:>{}}'.format(1, 999999999) }}"), "nested"),
    "rjust": (_tpl("{{ 'x'.rjust(10**9) }}"), "too large"),
    "indent": (_tpl("{{ 'a\nb'|indent(10**9) }}"), "too large"),
    "batch-fill": (_tpl("{{ [1]|batch(10**9, 0)|list }}"), "too large"),
    "repeat": (_tpl("{{ 'x' * 10**11 }}"), "repetition too large"),
    "list-repeat": (_tpl("{{ ([1] * 10**8)|length }}"), "repetition too large"),
    "join-blowup": (_tpl("{% set s = 'x' * 10**7 %}{{ [s, s, s]|join(s) }}"), "join"),
    "replace-blowup": (_tpl("{{ ('x' * 10**6)|replace('x', 'y' * 1000) }}"), "replace"),
    "memory": (
        _tpl(
            "{% set s = 'x' * 19000000 %}{{ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ "
            "s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s }}"
        ),
        "memory",
    ),
    "recursion": (_tpl("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"), "recursion"),
    "mutation": (_tpl("{% set l = [] %}{{ l.append(1) }}"), "SecurityError"),
    "internals": (_tpl("{{ reports.__class__.__mro__[1].__subclasses__() }}"), "template error"),
    "environ-via-globals": (_tpl("{{ cycler.__init__.__globals__.os.environ }}"), "template error"),
}


@pytest.mark.parametrize("name", sorted(TEMPLATE_CASES))
def test_hostile_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A hostile ``report --template``: exit 2, one ``path:line:col: error:`` line, no output
    file, no secret; refused for what it does, never by running into the sandbox's time limit
    (which starts before Jinja2 does), so well within that limit however loaded the machine."""
    monkeypatch.setenv("ADVISOR_SECRET", SECRET)
    monkeypatch.chdir(tmp_path)
    git = tmp_path / ".git"
    git.mkdir()
    (git / "config").write_text(f'[remote "origin"]\n\turl = https://x-access-token:{SECRET}@github.com/o/r\n')
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / ".git").symlink_to(git)
    make, needle = TEMPLATE_CASES[name]
    path = make(tmp_path)
    out = tmp_path / "report.md"
    start = time.perf_counter()
    r = run_cli("report", PROFILE, "--template", path, "-o", str(out))
    elapsed = time.perf_counter() - start
    from advisor.report import TEMPLATE_SECONDS  # the sandbox stops a template there

    assert elapsed < TEMPLATE_SECONDS, f"{name} took {elapsed:.1f}s"
    assert "took longer than" not in r.err, r.err
    assert r.code == 2, (r.code, r.err[:500])
    assert SECRET not in r.out + r.err
    assert len(r.err.splitlines()) == 1 and ": error: " in r.err and "Traceback" not in r.err, r.err
    assert needle in r.err, r.err
    assert not out.exists() and r.out == ""


@pytest.mark.slow  # a fault provocation that needs seconds (a subprocess under a memory cap)
def test_hostile_template_memory_is_bounded(tmp_path: Path) -> None:
    """The render child's peak resident memory stays under its address-space limit."""
    from advisor.sandbox import MEMORY_BYTES

    tpl = tmp_path / "t.md.j2"
    probe = (
        "import resource, sys\nfrom advisor.cli import main\ntry:\n    main(['report', sys.argv[1], '--template', sys.argv[2]])\n"
        "except SystemExit as e:\n    print(e.code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    for body in (TEMPLATE_CASES["memory"], TEMPLATE_CASES["center-1e9"], TEMPLATE_CASES["nested-ranges"]):
        body[0](tmp_path)
        (tmp_path / "report.md.j2").rename(tpl)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", probe, PROFILE, str(tpl)], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert time.perf_counter() - start < 20
        code, parent_kib, child_kib = p.stdout.split()
        assert code == "2", (p.stdout, p.stderr)
        assert int(child_kib) * 1024 < int(parent_kib) * 1024 + MEMORY_BYTES, (parent_kib, child_kib)
