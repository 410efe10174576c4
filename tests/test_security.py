"""Security: every string a pull request controls is escaped for the format it lands in
(markdown, JUnit XML, shell, Python, YAML); catalog imports, scaffolds, waivers, baselines and the
policy hold against hostile files. The template sandbox is tested in test_hostile.py."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, run_cli

FORGED = "x\r\n## all proposals pass ✅ ![](https://t.example/p.png) <img src=x> `cmd` [a](https://t.example) \x1b[31m\x00 \u202e\x0b end"
HOSTILE_NAME = FORGED.encode("unicode_escape").decode("ascii").replace('"', '\\"')
TRAINING = (
    f'name: "{HOSTILE_NAME}"\ntask: training\nmodel: {{params_b: 1}}\ntraining: {{tokens_b: 1}}\n'
    "proposal: {accelerator: h100, count: 8, hours: 10}\n"
)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def _markdown_is_clean(text: str) -> None:
    assert not CONTROL.search(text.replace("\n", "")), repr(CONTROL.search(text.replace("\n", "")))
    assert "\r" not in text
    for line in text.splitlines():
        assert not line.lstrip("> ").startswith("## all proposals"), line
    outside_html = "\n".join(ln for ln in text.splitlines() if not ln.startswith("<details>"))
    assert not re.search(r"(?<!\\)!\[|(?<!\\)<img|(?<!\\)\]\(https://t\.example", outside_html), outside_html


def _hostile_profile(tmp_path: Path, name: str = "p.yaml") -> Path:
    f = tmp_path / name
    f.write_text(TRAINING)
    return f


def test_report_escapes_a_forged_name(tmp_path: Path) -> None:
    f = _hostile_profile(tmp_path)
    r = run_cli("report", str(f))
    assert r.code == 0, r.err
    _markdown_is_clean(r.out)
    assert r.out.startswith(
        "# x ## all proposals pass ✅ \\![\\](https\u200b://t.example/p.png) \\<img src=x> \\`cmd\\` [a\\](https\u200b://t.example) [31m"
    )


def test_report_label_with_backticks_is_one_code_span(tmp_path: Path) -> None:
    f = tmp_path / "a`b.yaml"
    f.write_text((ROOT / "profiles" / "llm-chatbot.yaml").read_text())
    g = tmp_path / "c.yaml"
    g.write_text((ROOT / "profiles" / "llm-chatbot.yaml").read_text())
    r = run_cli("report", str(f), str(g))
    assert r.code == 0, r.err
    assert f"``{f}``" in r.out and f"`{g}`" in r.out


def test_check_markdown_escapes_and_keeps_code_spans_verbatim(tmp_path: Path) -> None:
    f = _hostile_profile(tmp_path, "p\n## all proposals pass ✅.yaml")
    r = run_cli("check", "--no-config", str(f), str(ROOT / "profiles" / "proposals"), "--format", "markdown", "--fail-on", "never")
    assert r.code == 0, r.err
    _markdown_is_clean(r.out)
    assert "&lt;profile name&gt;" not in r.out and "`advisor.dev/workload: <profile name>`" in r.out
    assert "<summary>❌" in r.out or "<summary>⚠️" in r.out
    summary = next(ln for ln in r.out.splitlines() if "<code>" in ln and "p ## all" in ln)
    assert "&lt;img src=x&gt;" in summary and "\x1b" not in summary


def test_junit_is_xml_1_0_legal(tmp_path: Path) -> None:
    f = _hostile_profile(tmp_path, "p\x1b\x0b.yaml")
    bad = tmp_path / "bad\x07.yaml"
    bad.write_text('name: "a\\x1bb"\ntask: inference\n')
    r = run_cli("check", "--no-config", str(f), str(bad), "--format", "junit", "--fail-on", "never")
    assert r.code in (0, 2), r.err
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", r.out)
    root = ET.fromstring(r.out.encode())
    names = [c.get("name") for c in root.iter("testcase")]
    assert any(n and n.endswith("p\ufffd\ufffd.yaml") for n in names), names


SERVING = (
    f'name: "{HOSTILE_NAME}"\ntask: inference\ndomain: llm\n'
    "model: {params_b: 8, hf_id: meta-llama/Llama-3.1-8B}\ninference: {peak_qps: 20}\n"
)


@pytest.mark.parametrize("profile", ["training", "serving"])
def test_scaffold_files_carry_no_control_characters(tmp_path: Path, profile: str) -> None:
    text = (
        TRAINING.replace("proposal: {accelerator: h100, count: 8, hours: 10}\n", "deployment: {clouds: [gcp]}\n")
        if profile == "training"
        else SERVING
    )
    f = tmp_path / "p.yaml"
    f.write_text(text)
    out = tmp_path / "out"
    r = run_cli("scaffold", str(f), "-o", str(out))
    assert r.code == 0, r.err
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files and (profile == "training" or any(p.parent.name == "k8s" for p in files)), files
    for p in files:
        body = p.read_text()
        assert not CONTROL.search(body.replace("\n", "").replace("\t", "")), (p, CONTROL.search(body.replace("\n", "")))
        if p.suffix == ".sh":
            assert subprocess.run(["bash", "-n", str(p)], capture_output=True).returncode == 0
            assert not any(ln.startswith("## all") for ln in body.splitlines())
        if p.suffix == ".py":
            tree = ast.parse(body)
            assert isinstance(tree.body[0], ast.Expr)  # the docstring stays one docstring
        if p.suffix in (".yaml", ".yml"):
            docs = list(yaml.safe_load_all(body))
            assert docs and not any(isinstance(d, dict) and "onprem" in d for d in docs)
        if p.suffix == ".md":
            _markdown_is_clean(body)


@pytest.mark.parametrize("fmt", ["text", "github", "sarif", "json"])
def test_other_check_formats_stay_one_line_per_finding(tmp_path: Path, fmt: str) -> None:
    f = _hostile_profile(tmp_path)
    r = run_cli("check", "--no-config", str(f), "--format", fmt, "--fail-on", "never")
    assert r.code == 0, r.err
    if fmt == "github":
        assert all(ln.startswith("::") or ln.startswith("advisor check:") for ln in r.out.splitlines())


_LOG_HOSTILE = (
    'cluster_name: "[/x] [bold red]x\\n::error file=a.py,line=1::forged\\r\\n  ::add-mask::ghp_token ##[warning]legacy '
    + "a" * 90 + ' ::stop-commands::tok"\n'
    "provider: {type: aws}\n"
    "available_node_types:\n"
    '  "w::error::again\\n##[error]x":\n'
    "    node_config: {InstanceType: p5.48xlarge}\n"
)


@pytest.mark.parametrize("fmt", ["text", "github", "markdown"])
def test_a_hostile_name_runs_no_ci_workflow_command_and_no_console_markup(tmp_path: Path, fmt: str) -> None:
    """A pull request names a resource so that the check's log would carry GitHub Actions workflow commands (a line
    whose text starts with '::' after its leading spaces, or '##[' anywhere: actions/runner ActionCommand.TryParseV2 /
    TryParse) or rich console markup ('[/x]' crashed the text table). Each is shown, inert, on the finding's line."""
    f = tmp_path / "cluster.yaml"
    f.write_text(_LOG_HOSTILE)
    r = run_cli("check", "--no-config", str(f), "--format", fmt, "--fail-on", "never")
    assert r.code == 0, r.err
    ours = ("::notice ", "::warning ", "::error ")  # the github format's own annotations, their data escaped
    for ln in r.out.splitlines():
        if fmt == "github" and ln.startswith(ours):
            assert "%0A" in ln or "\n" not in ln
            continue
        assert not ln.lstrip().startswith("::"), ln
        assert "##[" not in ln, ln
    if fmt == "text":
        assert "bold red" in r.out and "forged" in r.out  # shown, as text


def test_a_hostile_profile_runs_no_ci_workflow_command_in_recommend_or_in_an_input_error(tmp_path: Path) -> None:
    """The recommend header quotes the profile's name, an input error its keys: neither may put a workflow command in
    a CI log ('::' at a line's start, '##[' anywhere), nor console markup."""
    good = tmp_path / "named.yaml"
    good.write_text(
        'name: "ok\\n::error file=x::forged [/x]"\ntask: inference\ndomain: llm\nmodel: {params_b: 8}\n'
        "inference: {peak_qps: 1, input_tokens: 100, output_tokens: 100}\n"
    )
    bad = tmp_path / "keyed.yaml"
    bad.write_text(
        'name: k\ntask: inference\ndomain: llm\nmodel: {params_b: 8, "##[error]forged": 1}\n'
        "inference: {peak_qps: 1, input_tokens: 100, output_tokens: 100}\n"
    )
    rec = run_cli("recommend", str(good), "--no-flip")
    assert rec.code == 0, rec.err
    assert "forged [/x]" in rec.out
    val = run_cli("validate", str(bad))
    assert val.code == 2 and "forged" in val.err + val.out
    for text in (rec.out, rec.err, val.out, val.err):
        for ln in text.splitlines():
            assert not ln.lstrip().startswith("::") and "##[" not in ln, ln


# ----------------------------------------------------------------------------- catalog import

CSV_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"


def _catalog_import(tmp_path: Path, body: str) -> tuple[int, str, Path, Path]:
    src, out = tmp_path / "vms.csv", tmp_path / "override.yaml"
    src.write_text(CSV_HEADER + body)
    r = run_cli("catalog", "import", str(src), "--cloud", "aws", "-o", str(out), "--as-of", "2026-12-01")
    return r.code, r.err, src, out


def test_catalog_import_cell_with_a_newline_injects_nothing(tmp_path: Path) -> None:
    evil = '"H100\nonprem: {usd_per_kwh: {value: 0, note: pwned}}\n# "'
    code, err, _src, out = _catalog_import(tmp_path, f"p5.48xlarge,H100,8,55.04,,us-east-1\np5.x,{evil},8,1.0,,us-east-1\n")
    assert code == 0, err
    doc = yaml.safe_load(out.read_text())
    assert set(doc) == {"schema_version", "as_of", "sources", "accelerators"}
    assert [a["id"] for a in doc["accelerators"]] == ["h100"]
    assert all(ln.startswith("#") for ln in out.read_text().splitlines()[:2])
    r = run_cli("catalog", "--catalog", str(out), "--format", "json")
    assert r.code == 0 and "pwned" not in r.out


def test_catalog_import_region_with_a_newline_is_an_error_at_its_cell(tmp_path: Path) -> None:
    code, err, src, out = _catalog_import(tmp_path, 'p5.48xlarge,H100,8,55.04,,"us-east-1\nonprem: x"\n')
    assert code == 2 and err.startswith(f"{src}:2:28: error: Region:"), err
    assert not out.exists()


def test_catalog_import_price_out_of_range_points_at_the_csv(tmp_path: Path) -> None:
    code, err, src, out = _catalog_import(tmp_path, "g5.xlarge,A10G,1,1.0,,us-east-1\np5.48xlarge,H100,8,999999999,,us-east-1\n")
    assert code == 2 and err.startswith(f"{src}:3:20: error: Price:"), err
    assert "tmp" not in err.replace(str(tmp_path), "") and "override.yaml" not in err
    assert not out.exists()


# ----------------------------------------------------------------------------- waivers, baselines, stdin

PROPOSAL = (
    "name: w\ntask: training\nmodel: {params_b: 1}\ntraining: {tokens_b: 1}\nproposal:\n  accelerator: h100\n  count: 8\n  hours: 10\n"
)


def _waived(tmp_path: Path, waivers: str) -> tuple[int, dict]:
    import json

    f = tmp_path / "w.yaml"
    f.write_text(PROPOSAL + "  waivers:\n" + waivers)
    r = run_cli("check", "--no-config", str(f), "--format", "json", "--fail-on", "warning")
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)["results"][0]


def test_waiver_rules_cannot_be_waived(tmp_path: Path) -> None:
    code, res = _waived(tmp_path, (
        "    - {rule: proposal-oversized, reason: later}\n"  # no expiry: waiver-invalid
        "    - {rule: waiver-invalid, reason: 'trust me', expires: 2999-01-01}\n"
    ))
    active = {f["rule"] for f in res["findings"] if not f.get("waived")}
    assert code == 1 and "waiver-invalid" in active, res["findings"]
    assert any("cannot be waived" in f["message"] for f in res["findings"])


@pytest.mark.parametrize("reason", ["\u200b\u200b", " \u3000\t", "\u2060\ufeff\u200d", "\u0301"])
def test_waiver_reason_needs_visible_text(tmp_path: Path, reason: str) -> None:
    esc = reason.encode("unicode_escape").decode("ascii")
    code, res = _waived(tmp_path, f'    - {{rule: proposal-oversized, reason: "{esc}", expires: 2999-01-01}}\n')
    over = [f for f in res["findings"] if f["rule"] == "proposal-oversized"]
    assert code == 1 and over and not over[0].get("waived"), res["findings"]
    assert any(f["rule"] == "waiver-invalid" and "no visible text" in f["message"] for f in res["findings"])


def _baseline(tmp_path: Path, edit) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    import json

    f = tmp_path / "w.yaml"
    f.write_text(PROPOSAL)
    r = run_cli("check", "--no-config", str(f), "--format", "json", "--fail-on", "never")
    data = json.loads(r.out)
    edit(data)
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps(data))
    return f, base


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d["results"][0]["proposal"].__setitem__("cost_usd", -1e12), "not a finite, non-negative cost"),
        (lambda d: d["results"][0]["proposal"].__setitem__("cost_usd", "cheap"), "not a finite, non-negative cost"),
        (
            lambda d: (
                d["results"][0]["request"].__setitem__("total_chips", -8)
                if d["results"][0].get("request")
                else d["results"][0].__setitem__("request", {"total_chips": -8})
            ),
            "total_chips",
        ),
        (lambda d: d.__setitem__("schema_version", 2), "schema_version"),
        (lambda d: d["results"].append("junk"), "expected an object"),
    ],
)
def test_baseline_is_validated(tmp_path: Path, edit, needle: str) -> None:  # type: ignore[no-untyped-def]
    f, base = _baseline(tmp_path, edit)
    r = run_cli("check", "--no-config", str(f), "--baseline", str(base), "--format", "json", "--fail-on", "never")
    assert r.code == 2 and r.err.startswith(f"{base}:1:1: error: baseline ") and needle in r.err, r.err
    assert r.out == ""


def test_monthly_increase_limit_fails_closed_when_the_delta_is_unknown(tmp_path: Path) -> None:
    f, base = _baseline(tmp_path, lambda d: d["results"][0].__setitem__("proposal", None))
    cfg = tmp_path / "policy.yaml"
    cfg.write_text("limits:\n  max_monthly_increase_usd: 100\n")
    r = run_cli("check", "--config", str(cfg), str(f), "--baseline", str(base), "--format", "json", "--fail-on", "error")
    assert r.code == 1, r.err
    assert "policy-monthly-increase" in r.out and "unknown" in r.out


def test_standard_input_with_a_bom_is_still_a_plan() -> None:
    import json
    import sys

    plan = (ROOT / "profiles" / "proposals" / "infra" / "terraform" / "plan.json").read_bytes()
    p = subprocess.run([sys.executable, "-m", "advisor", "check", "-", "--format", "json", "--fail-on", "never", "--no-config"],
                       input=b"\xef\xbb\xbf" + plan, capture_output=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    results = json.loads(p.stdout)["results"]
    assert results and all(r["source"]["kind"] == "terraform-plan" for r in results)


# ----------------------------------------------------------------------------- scaffold stays inside its directory

CHATBOT = str(ROOT / "profiles" / "llm-chatbot.yaml")


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_scaffold_refuses_a_symlinked_subdirectory(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "k8s").symlink_to(elsewhere)
    r = run_cli("scaffold", CHATBOT, "-o", str(out), "--force")
    assert r.code == 2 and "symbolic link" in r.err and "Traceback" not in r.err, r.err
    assert list(elsewhere.iterdir()) == [] and [p.name for p in out.iterdir()] == ["k8s"]
    assert not list(tmp_path.glob(".advisor-scaffold-*"))


def test_scaffold_refuses_a_symlinked_file_even_with_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("scaffold", CHATBOT, "-o", str(out)).code == 0
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (out / "setup.sh").unlink()
    (out / "setup.sh").symlink_to(victim)
    r = run_cli("scaffold", CHATBOT, "-o", str(out), "--force")
    assert r.code == 2 and "symbolic link" in r.err, r.err
    assert victim.read_text() == "keep me\n"


def test_scaffold_full_disk_leaves_no_half_scaffold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    import advisor.scaffold.write as sc

    real, calls = os.fsync, {"n": 0}

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(sc.os, "fsync", fsync)
    out = tmp_path / "deep" / "out"
    r = run_cli("scaffold", CHATBOT, "-o", str(out))
    assert r.code == 4 and "no space left on device" in r.err, r.err
    assert list(tmp_path.iterdir()) == []  # no directory, no staging directory, not even 'deep'


def test_scaffold_failure_while_moving_in_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of inodes half-way through the renames into an existing directory (--force): every
    file moved in is removed again and every replaced file restored."""
    import errno
    import os

    import advisor.scaffold.write as sc

    out = tmp_path / "out"
    assert run_cli("scaffold", str(ROOT / "profiles" / "llama3-8b-lora.yaml"), "-o", str(out)).code == 0
    (out / "setup.sh").write_text("# mine\n")
    (out / "notes.txt").write_text("unrelated\n")
    before = _tree(out)
    real, calls = os.replace, {"n": 0}

    def replace(src, dst) -> None:  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(sc.os, "replace", replace)
    r = run_cli("scaffold", CHATBOT, "-o", str(out), "--force")
    assert r.code == 4 and "no space left on device" in r.err, r.err
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# ----------------------------------------------------------------------------- the policy from outside the PR

def _repo_with_a_lenient_pr_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "w.yaml").write_text(PROPOSAL)
    # What a pull request can add to the checkout to wave itself through:
    (repo / ".advisor.yaml").write_text(
        "fail_on: never\ndisabled_rules: [proposal-oversized, proposal-hours-excessive, proposal-costs-more-than-best]\n"
    )
    (repo / "pyproject.toml").write_text("[tool.advisor]\nfail_on = 'never'\n")
    monkeypatch.chdir(repo)
    return repo


def test_check_policy_from_outside_the_checkout_is_the_only_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _repo_with_a_lenient_pr_policy(tmp_path, monkeypatch)
    assert run_cli("check", "w.yaml", "--fail-on", "warning").code == 0  # the PR's own policy disables the rules
    base = tmp_path / "base-policy.yaml"
    base.write_text("fail_on: warning\n")
    r = run_cli("check", "w.yaml", "--policy", str(base), "--format", "json")
    assert r.code == 1, r.err
    import json

    data = json.loads(r.out)
    assert data["policy"] == str(base) and data["fail_on"] == "warning"
    assert {f["rule"] for f in data["results"][0]["findings"]} >= {"proposal-oversized"}


def test_check_policy_paths_resolve_against_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo_with_a_lenient_pr_policy(tmp_path, monkeypatch)
    base = tmp_path / "elsewhere" / "policy.yaml"
    base.parent.mkdir()
    base.write_text("catalog: [prices/negotiated.yaml]\n")
    r = run_cli("check", "w.yaml", "--policy", str(base))
    assert r.code == 2 and str(repo / "prices" / "negotiated.yaml") in r.err, r.err


@pytest.mark.parametrize("other", [["--config", "x.yaml"], ["--no-config"]])
def test_check_policy_excludes_other_policy_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: list[str]) -> None:
    _repo_with_a_lenient_pr_policy(tmp_path, monkeypatch)
    base = tmp_path / "p.yaml"
    base.write_text("fail_on: error\n")
    r = run_cli("check", "w.yaml", "--policy", str(base), *other)
    assert r.code == 2 and "--policy cannot be combined" in r.err
    r = run_cli("check", "w.yaml", "--policy", str(tmp_path / "missing.yaml"))
    assert r.code == 2 and "policy file not found" in r.err


def test_action_reads_the_policy_from_the_base_branch() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["inputs"]["policy-from-base"]["default"] == "true"
    script = "\n".join(step.get("run", "") for step in action["runs"]["steps"])
    assert 'git show "origin/$BASE_REF:$name"' in script and "--policy" in script
    assert "${{" not in script  # inputs reach the scripts as environment variables only


def test_action_script_enforces_the_base_branch_policy(tmp_path: Path) -> None:
    """The action's check step, run for real in a clone whose pull-request branch brings a
    lenient .advisor.yaml: the base branch's policy decides (exit 1)."""
    import os
    import shutil
    import sys

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    origin = tmp_path / "origin"
    origin.mkdir()
    git("init", "-q", "-b", "main", cwd=origin)
    (origin / ".advisor.yaml").write_text("fail_on: error\n")
    (origin / "proposals").mkdir()
    (origin / "proposals" / "w.yaml").write_text(PROPOSAL)
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "base", cwd=origin)
    work = tmp_path / "work"
    git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    git("checkout", "-qb", "pr", cwd=work)
    (work / ".advisor.yaml").write_text("disabled_rules: [proposal-oversized, proposal-hours-excessive, proposal-costs-more-than-best]\n")
    git("commit", "-qam", "lenient", cwd=work)
    out, summary = tmp_path / "github_output", tmp_path / "summary"
    run_env = {
        **env,
        "ADVISOR_PATHS": "proposals",
        "ADVISOR_FAIL_ON": "warning",
        "ADVISOR_BASELINE": "",
        "ADVISOR_POLICY_FROM_BASE": "true",
        "BASE_REF": "main",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    }
    p = subprocess.run(["bash", "-c", step["run"]], cwd=work, env=run_env, capture_output=True, text=True, timeout=300)
    assert "exit-code=1" in out.read_text(), (p.stdout, p.stderr)
    assert "advisor-base-policy/.advisor.yaml" in summary.read_text()
    run_env["ADVISOR_POLICY_FROM_BASE"] = "false"
    out.write_text("")
    subprocess.run(["bash", "-c", step["run"]], cwd=work, env=run_env, capture_output=True, text=True, timeout=300)
    assert "exit-code=0" in out.read_text()  # what the pull request's own policy would have allowed


BASE_POLICY = "fail_on: error\nlimits:\n  max_chips: 64\n  allowed_accelerators: [tpu-v6e, l4]\n  allowed_clouds: [gcp]\n"
H100_FLEET = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\n  namespace: prod\n  annotations:\n"
    "    advisor.dev/waive: |\n      policy-max-chips until 2999-12-31: approved\n"
    "      policy-accelerator-not-allowed until 2999-12-31: approved\n"
    "spec:\n  replicas: 64\n  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}\n"
    "      containers:\n      - name: c\n        image: x\n        resources: {limits: {nvidia.com/gpu: 8}}\n"
)


def test_a_pull_requests_waivers_do_not_lift_the_base_branchs_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the pull request's own annotation waived policy-max-chips and policy-accelerator-not-allowed
    until 2999 and the gate passed 512 H100 under a --policy from the base branch. The base policy can
    open them again (waivers.unwaivable: []) and bound how far ahead a waiver may run (waivers.max_days)."""
    (tmp_path / "pr").mkdir()
    (tmp_path / "pr" / "deploy.yaml").write_text(H100_FLEET)
    base = tmp_path / "base.yaml"
    base.write_text(BASE_POLICY)
    monkeypatch.chdir(tmp_path / "pr")
    r = run_cli("check", ".", "--policy", str(base), "--format", "json")
    assert r.code == 1, r.err
    rules = {f["rule"] for x in json.loads(r.out)["results"] for f in x["findings"] if not f.get("waived")}
    assert {"policy-max-chips", "policy-accelerator-not-allowed", "waiver-invalid"} <= rules
    base.write_text(BASE_POLICY + "waivers:\n  unwaivable: []\n")
    assert run_cli("check", ".", "--policy", str(base), "--format", "json").code == 0
    base.write_text(BASE_POLICY + "waivers:\n  unwaivable: []\n  max_days: 90\n")
    r = run_cli("check", ".", "--policy", str(base), "--format", "json")
    assert r.code == 1 and "more than the policy's 90 days ahead" in r.out


def test_the_policys_limits_apply_to_a_profiles_proposal(tmp_path: Path) -> None:
    """Before: a profile proposing 512 H100 met no max_chips or allowed_accelerators check (warnings only, exit 0)."""
    (tmp_path / "p.yaml").write_text(
        "name: big\ntask: training\ndomain: llm\nmodel: {params_b: 70, precision: bf16}\ntraining: {tokens_b: 2000, seq_len: 4096}\n"
        "deployment: {clouds: [gcp, aws]}\ngoal: {optimize: cost}\nproposal: {accelerator: h100, count: 512, hours: 2000}\n"
    )
    base = tmp_path / "base.yaml"
    base.write_text(BASE_POLICY)
    r = run_cli("check", str(tmp_path / "p.yaml"), "--policy", str(base), "--format", "json")
    assert r.code == 1, r.err
    rules = {f["rule"] for x in json.loads(r.out)["results"] for f in x["findings"]}
    assert {"policy-max-chips", "policy-accelerator-not-allowed"} <= rules
    base.write_text("limits:\n  max_chips: 1024\n  allowed_accelerators: [h100]\n")
    r = run_cli("check", str(tmp_path / "p.yaml"), "--policy", str(base), "--format", "json")
    rules = {f["rule"] for x in json.loads(r.out)["results"] for f in x["findings"]}
    assert not rules & {"policy-max-chips", "policy-accelerator-not-allowed"}


def test_a_limit_that_cannot_be_verified_fails_closed(tmp_path: Path) -> None:
    """Before: hardware the catalog does not know, a count that is a placeholder and the fallbacks a
    SkyPilot task lists were warnings at most, so `nvidia-tesla-v100` x 64, `replicas: ${N}` and an
    H100 fallback behind an L4 first choice passed an allowlist of tpu-v6e and l4 with a 64-chip cap."""
    (tmp_path / "a.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: unk, namespace: prod}\nspec:\n  replicas: 8\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-v100}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: unres, namespace: prod}\nspec:\n  replicas: ${N}\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice, cloud.google.com/gke-tpu-topology: 2x4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {google.com/tpu: 8}}}]\n"
    )
    (tmp_path / "sky.yaml").write_text(
        "name: train\nresources:\n  cloud: gcp\n  ordered:\n  - accelerators: L4:8\n  - accelerators: H100:8\n"
        "num_nodes: 4\nrun: python t.py\n"
    )
    base = tmp_path / "base.yaml"
    base.write_text(BASE_POLICY)
    r = run_cli("check", str(tmp_path / "a.yaml"), str(tmp_path / "sky.yaml"), "--policy", str(base), "--format", "json")
    assert r.code == 1, r.err
    found = {(x["source"]["address"], f["rule"]) for x in json.loads(r.out)["results"] for f in x["findings"]}
    assert ("Deployment/prod/unk", "policy-accelerator-not-allowed") in found
    assert ("Deployment/prod/unres", "policy-max-chips") in found
    assert any(a.endswith("train") or "sky" in a for a, rule in found if rule == "policy-accelerator-not-allowed"), found
    # without limits the same files pass as before (the unknowns stay warnings)
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path / "a.yaml"), str(tmp_path / "sky.yaml"))
    assert r.code == 0, r.out


def test_every_node_affinity_value_meets_the_allowlist(tmp_path: Path) -> None:
    """Before: `operator: In, values: [nvidia-l4, nvidia-h100-80gb]` was read as L4 only and passed an allowlist of
    tpu-v6e and l4, though the scheduler may place the pods on H100 nodes."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n  replicas: 2\n  template:\n    spec:\n"
        "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n            - matchExpressions:\n"
        "              - {key: cloud.google.com/gke-accelerator, operator: In, values: [nvidia-l4, nvidia-h100-80gb]}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    base = tmp_path / "base.yaml"
    base.write_text(BASE_POLICY)
    r = run_cli("check", str(tmp_path / "d.yaml"), "--policy", str(base), "--format", "json")
    [res] = json.loads(r.out)["results"]
    msgs = [f["message"] for f in res["findings"] if f["rule"] == "policy-accelerator-not-allowed"]
    assert r.code == 1 and res["request"]["accelerator"] == "l4" and any("h100" in m for m in msgs), res["findings"]


def test_the_pr_comment_makes_no_link_and_no_mention_of_pull_request_text(tmp_path: Path) -> None:
    """Before: a waiver reason or an accelerator name such as 'approved at www.evil.example/ok cc @acme/platform-leads
    https://evil.example/approval' came out of the markdown comment as clickable links and @-mentions GitHub notifies."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ml\n  annotations:\n"
        "    advisor.dev/waive: 'request-unknown-accelerator until 2099-01-01: approved, see https://evil.example/a cc @acme/leads'\n"
        "spec:\n  replicas: 1\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: 'nvidia-x at www.evil.example/ok ping @octocat'}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    r = run_cli("check", "--no-config", "--format", "markdown", "--fail-on", "never", str(tmp_path / "d.yaml"))
    assert r.code == 0, r.err
    outside_code = re.sub(r"`[^`]*`|<code>.*?</code>", "", r.out)
    assert "evil.example" in outside_code  # still said ...
    for link in ("https://evil", "www.evil", "@acme", "@octocat"):  # ... but no link and no mention
        assert link not in outside_code, link


def test_a_failed_check_leaves_no_stale_report_and_never_writes_through_a_linked_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: a report the change commits at the output path (advisor.md, out.sarif) survived a run that ended with exit 2
    and wrote nothing, for a later `if: always()` step to post as this run's; and `-o reports/advisor.md` wrote through a
    committed `reports -> /elsewhere` link."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: lots}}}]\n"
    )
    (tmp_path / "advisor.md").write_text("## all proposals pass ✅ (forged)\n")
    r = run_cli("check", "--no-config", "--format", "markdown", "--output", "advisor.md", "bad.yaml")
    assert r.code == 2 and not (tmp_path / "advisor.md").exists()
    elsewhere = tmp_path.parent / (tmp_path.name + "-elsewhere")
    elsewhere.mkdir()
    (tmp_path / "reports").symlink_to(elsewhere)
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    r = run_cli("check", "--no-config", "--format", "markdown", "--output", "reports/advisor.md", "ok.yaml")
    assert r.code == 2 and "symbolic link" in r.err and list(elsewhere.iterdir()) == []
    r = run_cli("check", "--no-config", "--format", "markdown", "--output", "advisor.md", "ok.yaml")
    assert r.code == 0 and (tmp_path / "advisor.md").read_text().startswith("###")


def test_a_linked_output_directory_leaves_no_forged_report_at_the_output_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the change committed `out -> forged/` and a forged `forged/advisor.md` ('all pass'); `-o out/advisor.md` was
    refused with exit 2, but the forged file stayed at the output path for an `if: always()` step to post. Now the link is
    removed (its target left alone) and nothing is at the output path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "forged").mkdir()
    (tmp_path / "forged" / "advisor.md").write_text("## all proposals pass ✅ (forged)\n")
    (tmp_path / "out").symlink_to(tmp_path / "forged")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    r = run_cli("check", "--no-config", "--format", "markdown", "--output", "out/advisor.md", "ok.yaml")
    assert r.code == 2 and "symbolic link" in r.err
    assert not (tmp_path / "out" / "advisor.md").exists() and not (tmp_path / "out").is_symlink()
    assert (tmp_path / "forged" / "advisor.md").exists()  # the link's target is not the gate's to delete


def test_no_command_reads_a_profile_linked_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `check` refused a link out of the repository, but validate, recommend, report and estimate followed
    `profile.yaml -> ../secret` and echoed the target's values in their error messages ('SECRET123_task' is not one of)."""
    secret = "SECRET-9c1e"
    (tmp_path / "secret.yaml").write_text(f"task: {secret}\nmodel: {{params_b: {secret}}}\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "profile.yaml").symlink_to(tmp_path / "secret.yaml")
    monkeypatch.chdir(repo)
    for args in (("validate",), ("recommend",), ("report",), ("estimate", "--accelerator", "h100")):
        r = run_cli(*args, "profile.yaml")
        assert r.code == 2 and secret not in r.out + r.err, (args, r.err)
        assert "symbolic link to a file outside the repository" in r.err, (args, r.err)


def test_a_monthly_increase_limit_without_a_baseline_counts_every_resource_in_full(tmp_path: Path) -> None:
    """Before: limits.max_monthly_increase_usd did nothing without --baseline (or a plan's prior state), and said nothing:
    a change that asks for $4.1M a month passed a $10,000 limit."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: prod}\nspec:\n  replicas: 8\n  template:\n    spec:\n"
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    )
    base = tmp_path / "base.yaml"
    base.write_text("limits:\n  max_monthly_increase_usd: 10000\n")
    r = run_cli("check", str(tmp_path / "d.yaml"), "--policy", str(base), "--format", "json")
    out = json.loads(r.out)
    assert r.code == 1 and "policy-monthly-increase" in {f["rule"] for x in out["results"] for f in x["findings"]}
    assert out["diff"]["baseline"] == "none"
    base.write_text("limits:\n  max_monthly_increase_usd: 100000000\n")
    assert run_cli("check", str(tmp_path / "d.yaml"), "--policy", str(base), "--format", "json").code == 0


def test_github_annotations_carry_no_control_characters_of_the_input(tmp_path: Path) -> None:
    """Before: a name with ESC (terminal colours), NUL, DEL or a vertical tab reached --format github's lines raw (the
    workload-not-linked hint quotes the resource's address)."""
    (tmp_path / "d.yaml").write_text(
        'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "a\\e[31mred\\x7f\\vz", namespace: ml}\nspec:\n  replicas: 1\n'
        "  template:\n    spec:\n      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
        "      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    r = run_cli("check", "--no-config", "--format", "github", "--fail-on", "never", str(tmp_path / "d.yaml"))
    assert r.code == 0, r.err
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", r.out.replace("\n", "")), repr(r.out)


def test_github_skipped_lines_carry_no_workflow_command(tmp_path: Path) -> None:
    """Before: a file named ``x##[add-mask]advisor.yaml`` or ``notes::error forged/c.yaml`` was printed unchanged in
    --format github's 'advisor check: skipped ...' lines, where a runner reads the legacy '##[command]' form anywhere in
    a line. Now neither '##[' nor '::' of a name or reason reaches a plain log line."""
    (tmp_path / "x##[add-mask]advisor.yaml").write_text("a: 1\n")
    (tmp_path / "notes##[error]forged").mkdir()
    (tmp_path / "notes##[error]forged" / "c.yaml").write_text("b: 2\n")
    r = run_cli("check", "--no-config", "--format", "github", "--fail-on", "never", str(tmp_path))
    skipped = [ln for ln in r.out.splitlines() if ln.startswith("advisor check: skipped")]
    assert len(skipped) == 2, r.out
    assert not any("##[" in ln for ln in skipped), skipped
