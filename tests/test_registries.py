"""Extension points are registries: adding an entry reaches every place that should know it.

The cloud test copies the package and its rules into a temporary tree, adds one entry to
rules/clouds.yaml (nothing else in the code), and drives the real command line there: the profile
contract accepts the cloud, `catalog import` prices it, `recommend` chooses and prices it, `check`
prices a SkyPilot task that names it on it, and `scaffold` writes it into the SkyPilot task. The
family test adds a device family the same way (families, catalog and setup data only) and runs the
schema, recommend, report and scaffold on it; the format test adds a renderer module and its row.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

NEW_CLOUD = (
    '  lambda: {name: Lambda Cloud, region: us-east-1, zone: "{region}", skypilot: lambda, kubernetes: your Lambda cluster,'
    " preference: 0, owned: false, price_catalog: lambda, kubernetes_labels: [], terraform_prefix: null, region_form: null}\n"
)
# The skypilot-catalog vms.csv columns (catalogs/v8/<cloud>/vms.csv); one 8 x H100 instance.
CSV = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
    "gpu_8x_h100_sxm5,H100,8,208,1800,23.92,,us-east-1,us-east-1\n"
)
PROFILE = """\
name: lambda-team
task: inference
domain: llm
model: {params_b: 8}
inference: {peak_qps: 2}
deployment: {clouds: [lambda], accelerators: [h100]}
"""
TASK = """\
name: serve-on-lambda
resources:
  infra: lambda
  accelerators: H100:8
run: python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "advisor", root / "advisor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", root / "rules")
    clouds = root / "rules" / "clouds.yaml"
    clouds.write_text(clouds.read_text(encoding="utf-8").rstrip("\n") + "\n" + NEW_CLOUD, encoding="utf-8")
    (root / "vms.csv").write_text(CSV, encoding="utf-8")
    (root / "p.yaml").write_text(PROFILE, encoding="utf-8")
    (root / "sky-task.yaml").write_text(TASK, encoding="utf-8")
    return root


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "ADVISOR_NO_CACHE": "1", "HOME": str(tree), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "advisor", *args], cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_a_cloud_is_one_registry_entry_end_to_end(tree: Path) -> None:
    imported = _run(tree, "catalog", "import", "vms.csv", "--cloud", "lambda", "-o", "lambda.yaml", "--as-of", "2026-12-01")
    assert imported.returncode == 0, imported.stderr
    assert "price rows for h100" in imported.stderr

    schema = json.loads(_run(tree, "schema", "--kind", "profile").stdout)
    assert "lambda" in json.dumps(schema)  # the contract's enum is the registry's ids

    rec = _run(tree, "recommend", "p.yaml", "--catalog", "lambda.yaml", "--format", "json", "--no-flip")
    assert rec.returncode == 0, rec.stderr
    est = json.loads(rec.stdout)["estimate"]
    assert est["accelerator"] == "h100" and est["price"]["cloud"] == "lambda" and est["usd_per_chip_hour"] == pytest.approx(23.92 / 8)

    chk = _run(tree, "check", "sky-task.yaml", "--catalog", "lambda.yaml", "--format", "json", "--fail-on", "never", "--no-config")
    assert chk.returncode == 0, chk.stderr
    result = json.loads(chk.stdout)["results"][0]
    assert result["request"]["cloud"] == "lambda"
    assert result["proposal"]["request"]["cost_usd"] == pytest.approx(23.92 * 730, rel=1e-3)  # priced on lambda, not another cloud

    out = tree / "setup"
    sc = _run(tree, "scaffold", "p.yaml", "--catalog", "lambda.yaml", "-o", str(out))
    assert sc.returncode == 0, sc.stderr
    sky = (out / "sky.yaml").read_text(encoding="utf-8")
    assert "infra: lambda" in sky


def test_a_cloud_missing_a_field_is_a_positioned_error(tmp_path: Path) -> None:
    from advisor.clouds import CloudTable
    from advisor.errors import InputError
    from advisor.validation import load_table

    bad = tmp_path / "clouds.yaml"
    bad.write_text("schema_version: 1\nclouds:\n  lambda: {name: Lambda, region: null, zone: null, skypilot: lambda,"
                   " kubernetes: k, preference: 0, owned: false, kubernetes_labels: [], terraform_prefix: null}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_table(bad, CloudTable)
    text = str(exc.value)
    assert f"{bad}:3:" in text and "price_catalog" in text


CSV_RENDERER = '''"""A test format: check results as CSV rows."""


def csv(report, opts):
    return "".join(f"{r.status},{r.label}\\n" for r in report.results)
'''


def test_an_output_format_is_a_renderer_and_one_registry_row(tree: Path) -> None:
    (tree / "advisor" / "renderers" / "check_csv.py").write_text(CSV_RENDERER, encoding="utf-8")
    reg = tree / "advisor" / "renderers" / "formats.py"
    text = reg.read_text(encoding="utf-8")
    row = '    Format("check", "csv", "advisor.renderers.check_csv:csv", "one line per result"),\n'
    reg.write_text(text.replace("FORMATS: tuple[Format, ...] = (\n", "FORMATS: tuple[Format, ...] = (\n" + row), encoding="utf-8")
    shutil.copytree(ROOT / "profiles" / "proposals", tree / "proposals", dirs_exist_ok=True)
    helped = _run(tree, "check", "--help")
    assert "csv" in helped.stdout  # the CLI's choices are the registry's
    out = _run(tree, "check", "proposals/ok-v6e-chatbot.yaml", "--format", "csv", "--fail-on", "never", "--no-config")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "pass,proposals/ok-v6e-chatbot.yaml\n"  # dispatched to the new renderer, not the text table


def test_every_registered_format_renders() -> None:
    """Each row's renderer exists and takes (result, options)."""
    import inspect

    from advisor.renderers.formats import FORMATS

    assert len({(f.command, f.name) for f in FORMATS}) == len(FORMATS)
    for f in FORMATS:
        params = list(inspect.signature(f.renderer()).parameters)
        assert len(params) == 2, f


def _add_family(root: Path) -> None:
    """A fixture family ``npu`` (a copy of the GPU entry: node scaling, its own name) with one chip,
    ``npu-x`` (a copy of the H100 entry, prices included), and a setup path for it."""
    import re

    fam = root / "rules" / "families.yaml"
    text = fam.read_text(encoding="utf-8")
    gpu = text[text.index("  gpu:\n") : text.index("  cpu:\n")]
    npu = gpu.replace("  gpu:\n", "  npu:\n").replace("name: GPU", "name: NPU").replace("preference: 3", "preference: 4")
    fam.write_text(text.rstrip("\n") + "\n" + npu.replace("rival: tpu", "rival: gpu"), encoding="utf-8")
    cat = root / "rules" / "catalog.yaml"
    text = cat.read_text(encoding="utf-8")
    start, end = text.index("  - id: h100\n"), text.index("  - id: h200\n")
    chip = text[start:end].replace("  - id: h100\n", "  - id: npu-x\n").replace("device: gpu", "device: npu", 1)
    chip = re.sub(r"aliases: \[.*\]", "aliases: []", re.sub(r"name: .*", "name: Fixture NPU", chip, count=1), count=1)
    cat.write_text(text[:end] + chip + text[end:], encoding="utf-8")
    path = (root / "rules" / "setup" / "gpu-any-cloud.yaml").read_text(encoding="utf-8")
    (root / "rules" / "setup" / "npu-any-cloud.yaml").write_text(
        path.replace("id: gpu-any-cloud", "id: npu-any-cloud").replace("\ndevice: gpu\n", "\ndevice: npu\n"), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def family_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("family")
    shutil.copytree(ROOT / "advisor", root / "advisor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", root / "rules")
    _add_family(root)
    (root / "p.yaml").write_text(PROFILE.replace("name: lambda-team", "name: npu-team").replace(
        "deployment: {clouds: [lambda], accelerators: [h100]}", "deployment: {accelerators: [npu-x]}"), encoding="utf-8")
    return root


def test_a_family_is_one_data_entry_end_to_end(family_tree: Path) -> None:
    """The families file, a catalog chip and a setup path (data only) reach the rule contract,
    the verdict and its scores, the report and the setup files."""
    schema = json.loads(_run(family_tree, "schema", "--kind", "rules").stdout)
    assert '"npu"' in json.dumps(schema["$defs"]["Effect"]["properties"]["device"])
    rec = _run(family_tree, "recommend", "p.yaml", "--format", "json", "--no-flip")
    assert rec.returncode == 0, rec.stderr
    out = json.loads(rec.stdout)
    assert out["verdict"]["device"] == "npu" and out["verdict"]["accelerator"] == "npu-x" and "npu" in out["scores"]
    text = _run(family_tree, "recommend", "p.yaml", "--no-flip").stdout
    assert "NPU: npu-x x 8" in text
    rep = _run(family_tree, "report", "p.yaml", "-o", "r.md")
    assert rep.returncode == 0, rep.stderr
    assert "NPU" in (family_tree / "r.md").read_text(encoding="utf-8")

    # serving files need a serving stack that runs on the family: a clear error, not a crash
    sc = _run(family_tree, "scaffold", "p.yaml", "-o", "no-stack")
    assert sc.returncode == 2 and "no serving stack in rules/serving-stacks.yaml runs on NPUs" in sc.stderr, sc.stderr
    assert not (family_tree / "no-stack").exists()
    stacks = family_tree / "rules" / "serving-stacks.yaml"
    stacks.write_text(stacks.read_text(encoding="utf-8").replace(
        '  devices: [gpu, tpu]\n  image: {gpu: "vllm/vllm-openai:latest", tpu: "vllm/vllm-tpu:latest"}\n'
        '  pip: {gpu: "pip install vllm", tpu: "pip install vllm-tpu"}',
        '  devices: [gpu, tpu, npu]\n  image: {gpu: "vllm/vllm-openai:latest", tpu: "vllm/vllm-tpu:latest", npu: "example/vllm-npu:1"}\n'
        '  pip: {gpu: "pip install vllm", tpu: "pip install vllm-tpu", npu: "pip install vllm-npu"}', 1), encoding="utf-8")
    sc = _run(family_tree, "scaffold", "p.yaml", "-o", "setup")
    assert sc.returncode == 0, sc.stderr
    readme = (family_tree / "setup" / "README.md").read_text(encoding="utf-8")
    assert "Verdict: **NPU**" in readme and "(`npu-any-cloud`)" in readme


def test_a_check_rule_is_one_registered_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule registered with its check reaches the findings (JSON, SARIF's rule table), the rule
    list, the generated reference, ``--disable`` and waivers, with nothing else to edit."""
    from advisor.check.rules import CHECK_RULES, CheckRule
    from advisor.docgen.reference import check_rules_md

    from .conftest import run_cli

    def fires(j):  # type: ignore[no-untyped-def]
        yield f"fixture rule saw {j.prop.count} chips", j.line_of("count")

    monkeypatch.setitem(CHECK_RULES, "fixture-rule", CheckRule("fixture-rule", "warning", "A fixture rule", "Fires on every proposal.",
                                                                "proposal", fires, "tests/test_registries.py"))
    prop = ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml"
    out = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(prop))
    assert out.code == 0, out.err
    found = {f["rule"]: f for f in json.loads(out.out)["results"][0]["findings"]}
    assert found["fixture-rule"]["message"] == "fixture rule saw 8 chips" and found["fixture-rule"]["severity"] == "warning"
    sarif = json.loads(run_cli("check", "--no-config", "--format", "sarif", "--fail-on", "never", str(prop)).out)
    assert "fixture-rule" in {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    listed = json.loads(run_cli("rules", "list", "--kind", "check", "--format", "json").out)
    assert "fixture-rule" in {r["id"] for r in listed}
    assert "fixture-rule" in check_rules_md()

    disabled = run_cli("check", "--no-config", "--disable", "fixture-rule", "--format", "json", "--fail-on", "never", str(prop))
    assert disabled.code == 0, disabled.err
    assert "fixture-rule" not in {f["rule"] for f in json.loads(disabled.out)["results"][0]["findings"]}

    waived = tmp_path / "p.yaml"
    waived.write_text(prop.read_text(encoding="utf-8") + "  waivers:\n    - {rule: fixture-rule, reason: known, expires: 2099-01-01}\n",
                      encoding="utf-8")
    result = json.loads(run_cli("check", "--no-config", "--format", "json", str(waived)).out)["results"][0]
    found = {f["rule"]: f for f in result["findings"]}
    assert found["fixture-rule"]["waived"] and "waiver-unknown-rule" not in found
