"""Extension points are registries: adding an entry reaches every place that should know it.

The cloud test copies the package and its rules into a temporary tree, adds one entry to
rules/clouds.yaml (nothing else in the code), and drives the real command line there: the profile
contract accepts the cloud, `catalog import` prices it, `recommend` chooses and prices it, `check`
prices a SkyPilot task that names it on it, and `scaffold` writes it into the SkyPilot task.
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
