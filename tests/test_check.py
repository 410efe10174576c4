from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

PROPOSALS = ROOT / "profiles" / "proposals"
PROFILE_PROPOSALS = str(PROPOSALS / "*.yaml")  # the profile proposals; infra/ holds infrastructure examples

SERVE = """\
name: bot
task: inference
domain: llm
model: {params_b: 8, layers: 32, hidden_size: 4096, kv_heads: 8, hf_id: meta-llama/Llama-3.1-8B-Instruct}
inference: {peak_qps: 10, input_tokens: 512, output_tokens: 256, latency_p99_ms: 5000, hours_per_day: 24}
software: {framework: pytorch, serving_stack: vllm}
deployment: {clouds: [gcp]}
goal: {budget_usd: 100000}
"""

TRAIN = """\
name: ft
task: fine-tuning
domain: llm
model: {params_b: 8, layers: 32, hidden_size: 4096, kv_heads: 8}
training: {tokens_b: 0.5, seq_len: 2048, method: lora, deadline_hours: 48}
deployment: {clouds: [gcp]}
goal: {budget_usd: 100000}
"""


def write(tmp: Path, name: str, text: str) -> Path:
    f = tmp / name
    f.write_text(text)
    return f


def check_json(*args: str) -> tuple[int, dict]:
    r = run_cli("check", "--no-config", "--format", "json", *args)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def rules_of(data: dict, i: int = 0) -> set[str]:
    return {f["rule"] for f in data["results"][i]["findings"] if not f["waived"]}


# (finding rule, profile text + proposal that fires it, one that does not)
CASES = [
    (
        "proposal-device-excluded",
        SERVE.replace("[gcp]", "[aws]") + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n",
        SERVE.replace("[gcp]", "[aws]") + "proposal: {accelerator: h100, count: 8, hours: 720}\n",
    ),
    (
        "proposal-does-not-fit-memory",
        SERVE.replace("params_b: 8,", "params_b: 70,").replace("layers: 32, hidden_size: 4096", "layers: 80, hidden_size: 8192")
        + "proposal: {accelerator: l4, count: 1, hours: 720}\n",
        SERVE + "proposal: {accelerator: l4, count: 2, hours: 720}\n",
    ),
    (
        "proposal-misses-deadline",
        TRAIN.replace("deadline_hours: 48", "deadline_hours: 1") + "proposal: {accelerator: t4, count: 1, hours: 1}\n",
        TRAIN + "proposal: {accelerator: h100, count: 8, hours: 2}\n",
    ),
    (
        "proposal-misses-latency",
        SERVE.replace("latency_p99_ms: 5000", "latency_p99_ms: 500") + "proposal: {accelerator: l4, count: 1, hours: 720}\n",
        SERVE + "proposal: {accelerator: h100, count: 1, hours: 720}\n",
    ),
    (
        "proposal-insufficient-capacity",
        SERVE.replace("peak_qps: 10", "peak_qps: 500") + "proposal: {accelerator: h100, count: 1, hours: 720}\n",
        SERVE + "proposal: {accelerator: h100, count: 1, hours: 720}\n",
    ),
    (
        "proposal-over-budget",
        SERVE.replace("budget_usd: 100000", "budget_usd: 100") + "proposal: {accelerator: h100, count: 8, hours: 720}\n",
        SERVE + "proposal: {accelerator: h100, count: 8, hours: 720}\n",
    ),
    (
        "proposal-unpriced",
        SERVE + "proposal: {accelerator: tpu-v7, count: 4, hours: 720}\n",
        SERVE + "proposal: {accelerator: tpu-v6e, count: 4, hours: 720}\n",
    ),
    (
        "proposal-costs-more-than-best",
        SERVE + "proposal: {accelerator: h200, count: 8, hours: 720}\n",
        SERVE + "proposal: {accelerator: tpu-v5e, count: 4, hours: 720}\n",
    ),
    (
        "proposal-oversized",
        TRAIN + "proposal: {accelerator: h100, count: 64, hours: 2}\n",
        TRAIN + "proposal: {accelerator: h100, count: 1, hours: 12}\n",
    ),
    (
        "proposal-hours-excessive",
        TRAIN + "proposal: {accelerator: h100, count: 8, hours: 300}\n",
        TRAIN + "proposal: {accelerator: h100, count: 8, hours: 2}\n",
    ),
    (
        "proposal-not-a-real-shape",
        SERVE + "proposal: {accelerator: tpu-v6e, count: 6, hours: 720}\n",
        SERVE + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n",
    ),
    (
        "cheaper-other-family",  # the GPU family's best (A100 x 2) is cheaper than TPU's and no slower
        SERVE + "proposal: {accelerator: tpu-v5e, count: 8, hours: 720}\n",
        SERVE + "proposal: {accelerator: a100-40gb, count: 2, hours: 720}\n",
    ),
]


@pytest.mark.parametrize(("rule", "fires", "quiet"), CASES, ids=[c[0] for c in CASES])
def test_finding_fires_and_does_not(tmp_path: Path, rule: str, fires: str, quiet: str) -> None:
    _, data = check_json(str(write(tmp_path, "fires.yaml", fires)))
    assert rule in rules_of(data), data["results"][0]["findings"]
    finding = next(f for f in data["results"][0]["findings"] if f["rule"] == rule)
    assert finding["line"] >= 8 and finding["message"]
    _, data = check_json(str(write(tmp_path, "quiet.yaml", quiet)))
    assert rule not in rules_of(data), data["results"][0]["findings"]


# the policy's limits on a profile's proposal: (rule, proposal that fires it, one that does not, policy)
POLICY_CASES = [
    ("policy-max-chips", "proposal: {accelerator: tpu-v6e, count: 256, hours: 720}\n",
     "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n", "limits: {max_chips: 128}\n"),
    ("policy-accelerator-not-allowed", "proposal: {accelerator: h100, count: 8, hours: 720}\n",
     "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n", "limits: {allowed_accelerators: [tpu-v6e]}\n"),
    ("policy-cloud-not-allowed", "proposal: {accelerator: h100, count: 8, hours: 720}\n",
     "proposal: {accelerator: h100, count: 8, hours: 720}\n", "limits: {allowed_clouds: [aws]}\n"),
    ("policy-region-not-allowed", "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n",
     "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n", "limits: {allowed_regions: ['europe-*']}\n"),
]


@pytest.mark.parametrize(("rule", "fires", "quiet", "policy"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_the_policys_limits_fire_on_a_proposal_and_do_not(tmp_path: Path, rule: str, fires: str, quiet: str, policy: str) -> None:
    pol = write(tmp_path, "policy.yaml", policy)
    if rule == "policy-cloud-not-allowed":  # the same proposal, priced on an allowed cloud or not
        fires_text, quiet_text = SERVE.replace("[gcp]", "[gcp]") + fires, SERVE.replace("[gcp]", "[aws]") + quiet
    elif rule == "policy-region-not-allowed":
        fires_text, quiet_text = SERVE + fires, SERVE.replace("[gcp]", "[gcp], region: europe-west4") + quiet
    else:
        fires_text, quiet_text = SERVE + fires, SERVE + quiet
    r = run_cli("check", "--policy", str(pol), "--format", "json", str(write(tmp_path, "fires.yaml", fires_text)))
    assert rule in rules_of(json.loads(r.out)), r.out
    r = run_cli("check", "--policy", str(pol), "--format", "json", str(write(tmp_path, "quiet.yaml", quiet_text)))
    assert rule not in rules_of(json.loads(r.out)), r.out


def test_every_check_rule_has_a_case() -> None:
    from advisor.check.batch import CHECK_RULES

    from .test_infra import INFRA_RULES

    covered = {c[0] for c in CASES} | {"waiver-invalid", "waiver-unknown-rule"} | INFRA_RULES
    assert covered == set(CHECK_RULES)


def test_bundled_proposals_and_exit_codes() -> None:
    code, data = check_json(PROFILE_PROPOSALS)
    status = {Path(r["profile"]).name: r["status"] for r in data["results"]}
    assert status["ok-v6e-chatbot.yaml"] == "pass"
    assert status["tpu-for-aws-team.yaml"] == "error"
    assert status["oversized-h100-finetune.yaml"] == "error"
    assert status["over-budget-pretrain.yaml"] == "error"
    assert code == 1 and data["exit_code"] == 1
    assert run_cli("check", "--no-config", PROFILE_PROPOSALS, "--fail-on", "never").code == 0
    assert run_cli("check", "--no-config", str(PROPOSALS / "ok-v6e-chatbot.yaml")).code == 0
    # the B200 proposal is what the advisor recommends itself: it passes even at --fail-on warning
    assert status["b200-serving.yaml"] == "pass"
    assert run_cli("check", "--no-config", str(PROPOSALS / "b200-serving.yaml"), "--fail-on", "warning").code == 0


def test_warning_level_policy_failure(tmp_path: Path) -> None:
    """Twice the B200s the load needs, within budget: warnings only, so exit 0 unless --fail-on warning."""
    text = (
        (PROPOSALS / "b200-serving.yaml")
        .read_text()
        .replace("  count: 8\n", "  count: 32\n")
        .replace("budget_usd: 90000", "budget_usd: 400000")
    )
    prof = tmp_path / "b200-x32.yaml"
    prof.write_text(text)
    code, data = check_json(str(prof))
    (res,) = data["results"]
    assert res["status"] == "warning" and {f["severity"] for f in res["findings"]} == {"warning"}
    assert code == 0
    assert run_cli("check", "--no-config", str(prof), "--fail-on", "warning").code == 1


def test_json_contract_and_skipped() -> None:
    _, data = check_json(str(PROPOSALS / "ok-v6e-chatbot.yaml"), str(ROOT / "profiles" / "llm-chatbot.yaml"))
    (ok,) = data["results"]
    assert set(ok) >= {"profile", "status", "findings", "proposal", "recommended"}
    assert ok["status"] in ("pass", "warning", "error")
    assert set(ok["proposal"]) >= {"accelerator", "count", "hours", "cost_usd", "tokens_per_second", "fits_memory", "request"}
    assert set(ok["proposal"]["request"]) == {"accelerator", "count", "hours", "cost_usd"}
    assert ok["source"]["kind"] == "profile" and ok["source"]["line"] > 1
    assert ok["request"] == {"accelerator": "tpu-v6e", "count": 8, "replicas": 1, "replicas_min": 1, "replicas_max": 1, "total_chips": 8}
    assert data["skipped"] == [str(ROOT / "profiles" / "llm-chatbot.yaml")] and data["summary"]["skipped"] == 1


def test_inputs_dirs_and_globs(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    write(sub, "p.yml", SERVE + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n")
    write(tmp_path, "q.yaml", SERVE + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n")
    _, data = check_json(str(tmp_path))
    assert len(data["results"]) == 2
    _, data = check_json(str(tmp_path / "*.yaml"))
    assert len(data["results"]) == 1
    r = run_cli("check", "--no-config", str(tmp_path / "*.nothing"))
    assert r.code == 2 and "pattern matches no file" in r.err
    odd = write(tmp_path, "p[1].yaml", SERVE + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n")
    _, data = check_json(str(odd))  # an existing file name with glob characters is a file
    assert len(data["results"]) == 1



def test_sarif_is_valid(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    r = run_cli("check", "--no-config", PROFILE_PROPOSALS, "--format", "sarif")
    doc = json.loads(r.out)
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    assert all(rule["help"]["text"] for rule in run["tool"]["driver"]["rules"])
    loc = run["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith(".yaml") and loc["region"]["startLine"] > 1


def test_junit_has_a_testcase_per_proposal() -> None:
    r = run_cli("check", "--no-config", PROFILE_PROPOSALS, str(ROOT / "profiles" / "llm-chatbot.yaml"), "--format", "junit")
    root = ET.fromstring(r.out)
    cases = root.findall(".//testcase")
    assert len(cases) == 6
    assert len(root.findall(".//testcase/failure")) == 3
    assert len(root.findall(".//testcase/skipped")) == 1


def test_github_annotations() -> None:
    r = run_cli("check", "--no-config", str(PROPOSALS / "tpu-for-aws-team.yaml"), "--format", "github")
    first = r.out.splitlines()[0]
    assert first.startswith("::error file=") and ",line=" in first and "title=advisor proposal-device-excluded::" in first


def test_markdown_comment() -> None:
    r = run_cli("check", "--no-config", PROFILE_PROPOSALS, "--format", "markdown")
    assert r.out.startswith("### advisor: 3 of 5 proposals fail the gate")
    assert "<details>" in r.out and "catalog as of" in r.out
    ok = run_cli("check", "--no-config", str(PROPOSALS / "ok-v6e-chatbot.yaml"), "--format", "markdown")
    assert ok.out.startswith("### advisor: the proposal passes") and "<details>" not in ok.out


def test_a_markdown_comment_with_warnings_only_says_nothing_fails(tmp_path: Path) -> None:
    # review 27: '18 of 27 proposals need changes' headed a run with no error and exit 0, and 'recommended $0.00' one
    # in which no proposal had a workload linked (so none had a recommendation)
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: srv\nspec:\n  template:\n    spec:\n      nodeSelector:\n"
        "        cloud.google.com/gke-accelerator: nvidia-l4\n      containers:\n      - name: s\n        image: x\n"
        "        resources:\n          limits:\n            nvidia.com/gpu: \"${N}\"\n"
    )
    r = run_cli("check", "--no-config", str(tmp_path / "deploy.yaml"), "--format", "markdown")
    assert r.code == 0, r.out
    assert r.out.startswith("### advisor: no proposal fails the gate; 1 of 1 has warnings to read"), r.out.splitlines()[0]
    assert "recommended $0.00" not in r.out and "no recommendation (no workload linked)" in r.out


WAIVED = TRAIN + """\
proposal:
  accelerator: h100
  count: 8
  hours: 300
  waivers:
    - {rule: proposal-hours-excessive, reason: "buffer for two reruns", owner: ml-platform, expires: 2999-01-01}
"""


def test_waivers(tmp_path: Path) -> None:
    _code, data = check_json(str(write(tmp_path, "w.yaml", WAIVED)))
    f = next(x for x in data["results"][0]["findings"] if x["rule"] == "proposal-hours-excessive")
    assert f["waived"] and f["waiver"]["owner"] == "ml-platform"
    assert data["summary"]["waived"] == 1 and data["results"][0]["status"] != "error"
    expired = WAIVED.replace("2999-01-01", "2001-01-01")
    _, data = check_json(str(write(tmp_path, "e.yaml", expired)))
    assert "waiver-invalid" in rules_of(data) and "proposal-hours-excessive" in rules_of(data)
    undated = WAIVED.replace(", expires: 2999-01-01", "")
    _, data = check_json(str(write(tmp_path, "d.yaml", undated)))
    assert "waiver-invalid" in rules_of(data) and "proposal-hours-excessive" in rules_of(data)
    no_reason = WAIVED.replace('reason: "buffer for two reruns", ', "")
    _, data = check_json(str(write(tmp_path, "n.yaml", no_reason)))
    assert "waiver-invalid" in rules_of(data) and data["results"][0]["status"] == "error"
    unknown = WAIVED.replace("rule: proposal-hours-excessive", "rule: proposal-hours-excesive")
    _, data = check_json(str(write(tmp_path, "u.yaml", unknown)))
    msg = next(x for x in data["results"][0]["findings"] if x["rule"] == "waiver-unknown-rule")["message"]
    assert "did you mean 'proposal-hours-excessive'?" in msg


def test_config_discovery_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "repo"
    (proj / "deep" / "er").mkdir(parents=True)
    f = write(proj, "p.yaml", SERVE + "proposal: {accelerator: h200, count: 8, hours: 720}\n")
    monkeypatch.chdir(proj / "deep" / "er")
    assert run_cli("check", str(f)).code == 0  # only warnings
    (proj / ".advisor.yaml").write_text("fail_on: warning\n")
    assert run_cli("check", str(f)).code == 1
    assert run_cli("check", str(f), "--fail-on", "error").code == 0  # flag overrides config
    (proj / ".advisor.yaml").write_text("fail_on: warning\ndisabled_rules: [proposal-costs-more-than-best, proposal-oversized]\n")
    assert run_cli("check", str(f)).code == 0
    (proj / ".advisor.yaml").unlink()
    (proj / "pyproject.toml").write_text("[project]\nname='x'\n\n[tool.advisor]\nfail_on = 'warning'\n")
    assert run_cli("check", str(f)).code == 1
    (proj / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    r = run_cli("check", str(f), "--config", str(proj / "pyproject.toml"))
    assert r.code == 2 and "no [tool.advisor] table" in r.err
    (proj / "pyproject.toml").write_text("[tool.advisor]\nfail_on = 'sometimes'\n")
    r = run_cli("check", str(f))
    assert r.code == 2 and "pyproject.toml:1:1: error: fail_on: 'sometimes' is not one of error, warning, never" in r.err
    (proj / "pyproject.toml").unlink()
    (proj / ".advisor.yaml").write_text("thresholds:\n  oversize_factr: 3\n")
    r = run_cli("check", str(f))
    assert r.code == 2 and ".advisor.yaml:2:3: error: thresholds.oversize_factr: unknown field; did you mean 'oversize_factor'?" in r.err


def test_baseline_diff(tmp_path: Path) -> None:
    f = write(tmp_path, "p.yaml", TRAIN + "proposal: {accelerator: h100, count: 8, hours: 2}\n")
    r = run_cli("check", "--no-config", str(f), "--format", "json")
    base = write(tmp_path, "base.json", r.out)
    f.write_text(TRAIN + "proposal: {accelerator: h100, count: 8, hours: 300}\n")
    _, data = check_json(str(f), "--baseline", str(base))
    diff = data["diff"]
    assert (
        diff["new_findings"] >= 1 and diff["one_off_delta_usd"] > 0 and diff["cost_delta_usd"] == 0
    )  # a training run: one-off, not monthly
    assert {"rule": "proposal-hours-excessive", "severity": "warning"} in diff["changes"][0]["new"]
    assert diff["changes"][0]["what"] == ["hours 2.0 -> 300.0"] and diff["changes"][0]["cost_kind"] == "one-off"
    r = run_cli("check", "--no-config", str(f), "--baseline", str(write(tmp_path, "bad.json", "{nope")))
    assert r.code == 2 and "bad.json:1:2: error: invalid JSON" in r.err
    odd = {"results": [{"profile": ["x"]}, {"profile": str(f), "findings": 5, "proposal": {"request": {"cost_usd": "abc"}}},
                       {"profile": str(f), "findings": [{"rule": ["a"], "severity": "error"}]}]}
    odd_file = write(tmp_path, "odd.json", json.dumps(odd))
    r = run_cli("check", "--no-config", str(f), "--baseline", str(odd_file))  # a baseline is validated, never half-trusted
    assert r.code == 2 and f"{odd_file}:1:1: error: baseline results[0]: needs a 'key' or 'profile' string" in r.err, r.err
    assert "results[1].proposal.request.cost_usd: 'abc' is not a finite, non-negative cost" in r.err


def test_output_file_is_atomic(tmp_path: Path) -> None:
    out = tmp_path / "out.sarif"
    out.write_text("previous")
    bad = write(tmp_path, "bad.yaml", "name: x\ntask: trianing\n")
    r = run_cli("check", "--no-config", str(bad), "--format", "sarif", "--output", str(out))
    assert r.code == 2 and not out.exists()  # no half-written file, and no stale one taken for this run's
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    r = run_cli("check", "--no-config", str(PROPOSALS / "ok-v6e-chatbot.yaml"), "--format", "sarif", "--output", str(out))
    assert r.code == 0 and json.loads(out.read_text())["version"] == "2.1.0"


def test_unknown_accelerator_in_proposal_is_exit_2(tmp_path: Path) -> None:
    f = write(tmp_path, "p.yaml", SERVE + "proposal: {accelerator: h1000, count: 8, hours: 720}\n")
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2 and f"{f}:9:25: error: proposal.accelerator: unknown accelerator 'h1000'; did you mean 'h100'?" in r.err


def test_bad_jobs_setting_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.check.batch

    monkeypatch.setenv("ADVISOR_JOBS", "abc")
    monkeypatch.setattr(advisor.check.batch, "PARALLEL_THRESHOLD", 2)
    for i in range(3):
        write(tmp_path, f"p{i}.yaml", SERVE + "proposal: {accelerator: tpu-v6e, count: 8, hours: 720}\n")
    _code, data = check_json(str(tmp_path))
    assert len(data["results"]) == 3


@pytest.mark.parametrize(("rule", "fires", "quiet"), CASES[:4] + CASES[-4:], ids=[c[0] for c in CASES[:4] + CASES[-4:]])
def test_disabled_rule_is_not_run(tmp_path: Path, rule: str, fires: str, quiet: str) -> None:
    """judge() runs every registered proposal rule except the disabled ones."""
    _, data = check_json(str(write(tmp_path, "fires.yaml", fires)), "--disable", rule)
    assert rule not in rules_of(data)


def test_registry_units_and_reference_page() -> None:
    """Each rule is a unit (id, severity, title, docs; a proposal rule has its check), and the
    generated reference page lists every one."""
    from advisor.check.results import RANK
    from advisor.check.rules import CHECK_RULES, SCOPES, proposal_rules

    assert {r.id for r in proposal_rules()} == {c[0] for c in CASES} | {c[0] for c in POLICY_CASES}
    page = (ROOT / "docs" / "reference" / "check-rules.md").read_text()
    for rule in CHECK_RULES.values():
        assert rule.severity in RANK and rule.scope in SCOPES and rule.title and len(rule.help) > 20
        assert f"### {rule.id}\n" in page and rule.help in page
    assert "reference/check-rules.md" in (ROOT / "docs" / "ci.md").read_text()


# --------------------------------------------------------------------------- request rules


def _task(acc: str, extra: str = "") -> str:
    return f"name: t\nnum_nodes: 1\nresources:\n  accelerators: {acc}\n{extra}run: echo\n"


GCP_H100 = _task("H100:8", "  cloud: gcp\n  region: us-central1\n")
K8S_L4 = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: serving, annotations: {advisor.dev/workload: LINK}}
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
        - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
"""
WORKLOAD = "name: bot\ntask: inference\ndomain: llm\nmodel: {params_b: 8}\ninference: {peak_qps: 5}\n"
POLICY_FIRES = ("limits:\n  max_chips: 4\n  allowed_accelerators: [l4]\n  allowed_clouds: [aws]\n  allowed_regions: [europe-*]\n"
                "  require_spot: {workspaces: ['*']}\n  max_monthly_increase_usd: 1\n")
POLICY_QUIET = ("limits:\n  max_chips: 8\n  allowed_accelerators: [h100]\n  allowed_clouds: [gcp]\n  allowed_regions: [us-*]\n"
                "  require_spot: {workspaces: [elsewhere/*]}\n  max_monthly_increase_usd: 1000000\n")
RUN_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: ft, annotations: {advisor.dev/workload: ft}}
spec:
  activeDeadlineSeconds: 36000
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
        - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
"""
RUN_WORKLOAD = ("name: ft\ntask: fine-tuning\ndomain: llm\nmodel: {params_b: 1}\ntraining: {tokens_b: 0.01, method: lora}\n"
                "deployment: {clouds: [gcp]}\n")
WITH_POLICY = ("--config", "policy.yaml", "--baseline", "base.json", "task.yaml")

# (rule, files that fire it, files that do not, the check arguments); every file is written into
# the test's directory, which is the working directory of the check.
REQUEST_CASES = [
    ("request-unknown-accelerator", {"task.yaml": _task("V100:8")}, {"task.yaml": GCP_H100}, ("--no-config", "task.yaml")),
    (
        "request-unresolved",
        {"task.yaml": GCP_H100.replace("num_nodes: 1", "num_nodes: ${N}")},
        {"task.yaml": GCP_H100},
        ("--no-config", "task.yaml"),
    ),
    ("request-unpriced", {"task.yaml": _task("tpu-v6e-8", "  cloud: aws\n")}, {"task.yaml": GCP_H100}, ("--no-config", "task.yaml")),
    ("proposal-not-a-real-shape", {"task.yaml": _task("H100:3", "  cloud: gcp\n")}, {"task.yaml": GCP_H100}, ("--no-config", "task.yaml")),
    (
        "workload-not-linked",
        {"task.yaml": GCP_H100, "w.yaml": WORKLOAD},
        {"task.yaml": GCP_H100, "w.yaml": WORKLOAD + "match: [task.yaml]\n"},
        ("--no-config", "task.yaml", "w.yaml"),
    ),
    (
        "workload-link-broken",
        {"k.yaml": K8S_L4.replace("LINK", "nope"), "w.yaml": WORKLOAD},
        {"k.yaml": K8S_L4.replace("LINK", "bot"), "w.yaml": WORKLOAD},
        ("--no-config", "k.yaml", "w.yaml"),
    ),
    *[
        (
            rule,
            {"task.yaml": GCP_H100, "policy.yaml": POLICY_FIRES, "base.json": '{"results": []}'},
            {"task.yaml": GCP_H100, "policy.yaml": POLICY_QUIET, "base.json": '{"results": []}'},
            WITH_POLICY,
        )
        for rule in (
            "policy-max-chips",
            "policy-accelerator-not-allowed",
            "policy-cloud-not-allowed",
            "policy-region-not-allowed",
            "policy-spot-required",
            "policy-monthly-increase",
        )
    ],
    (
        # a Job linked to a training profile, stopped by its deadline, is a run: one-off spend
        "policy-one-off-increase",
        {"job.yaml": RUN_JOB, "w.yaml": RUN_WORKLOAD, "policy.yaml": "limits:\n  max_one_off_increase_usd: 1\n",
         "base.json": '{"results": []}'},
        {"job.yaml": RUN_JOB, "w.yaml": RUN_WORKLOAD, "policy.yaml": "limits:\n  max_one_off_increase_usd: 1000000\n",
         "base.json": '{"results": []}'},
        ("--config", "policy.yaml", "--baseline", "base.json", "job.yaml", "w.yaml"),
    ),
]


def _request_rules(tmp: Path, files: dict[str, str], args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    tmp.mkdir()
    for name, text in files.items():
        (tmp / name).write_text(text)
    monkeypatch.chdir(tmp)
    r = run_cli("check", "--format", "json", *args)
    assert r.code in (0, 1), r.err
    data = json.loads(r.out)
    return {f["rule"] for res in data["results"] if res["source"]["kind"] != "profile" for f in res["findings"] if not f["waived"]}


@pytest.mark.parametrize(("rule", "fires", "quiet", "args"), REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
def test_request_rule_fires_and_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str, fires: dict[str, str], quiet: dict[str, str], args: tuple[str, ...]
) -> None:
    assert rule in _request_rules(tmp_path / "fires", fires, args, monkeypatch)
    assert rule not in _request_rules(tmp_path / "quiet", quiet, args, monkeypatch)


def test_every_request_rule_has_a_case() -> None:
    from advisor.check.rules import CHECK_RULES, request_rules

    covered = {c[0] for c in REQUEST_CASES}
    assert {r.id for r in request_rules()} | {"policy-monthly-increase", "policy-one-off-increase"} == covered
    assert covered | {c[0] for c in CASES} | {"waiver-invalid", "waiver-unknown-rule"} == set(CHECK_RULES)
