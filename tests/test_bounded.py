"""Bounded work: a plan is read in linear time (a 20,000-resource plan in seconds, not minutes),
memory stays well under 1 GiB for a 32 MiB plan, and past the caps (resources per plan, requests
per run, match: patterns x resources, HCL instances) the answer is a clear error, fast."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

PROBE = (
    "import sys\nfrom advisor.cli import main\ntry:\n    main(['check', '--no-config', '--fail-on', 'never', '-f', 'json', '-o', "
    "sys.argv[2], sys.argv[1]])\n"
    "except SystemExit as e:\n    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n    print(e.code, "
    "hwm[0] if hwm else 0)\n"
)


def big_plan(n: int, rtype: str = "aws_instance", after: dict | None = None) -> str:
    changes = [
        {
            "address": f"{rtype}.r[{i}]",
            "mode": "managed",
            "type": rtype,
            "name": "r",
            "index": i,
            "change": {
                "actions": ["create"],
                "before": None,
                "after": after or {"instance_type": "g5.xlarge", "tags": {"n": str(i)}},
                "after_unknown": {},
            },
        }
        for i in range(n)
    ]
    return json.dumps({"format_version": "1.2", "resource_changes": changes}, indent=1)


def probe(tmp_path: Path, plan: Path) -> tuple[str, float, float]:
    start = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", PROBE, str(plan), str(tmp_path / "out.json")], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    took = time.perf_counter() - start
    code, kib = p.stdout.split()
    return code, took, int(kib) / 1024


def test_20000_resource_plan_in_seconds(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(big_plan(20_000))
    code, took, peak = probe(tmp_path, plan)
    assert code == "0" and took < 20, took
    out = json.loads((tmp_path / "out.json").read_text())
    assert len(out["results"]) == 20_000 and out["results"][-1]["source"]["line"] > 1
    assert peak < 600, peak


@pytest.mark.slow  # a fault provocation that needs seconds (a 32 MiB plan under a memory cap)
def test_32_mib_plan_memory_and_the_resource_cap(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    text = big_plan(80_000)
    assert len(text) > 24 * 2**20
    plan.write_text(text)
    code, took, peak = probe(tmp_path, plan)
    assert code == "2" and took < 20 and peak < 512, (code, took, peak)
    r = run_cli("check", "--no-config", str(plan))
    assert "more than 25,000 compute resources in one plan" in r.err
    # 32 MiB of resources advisor does not read: parsed, nothing to check, bounded memory
    other = tmp_path / "storage.json"
    other.write_text(big_plan(54_000, "google_storage_bucket", {"name": "b" * 300}))
    assert other.stat().st_size < 32 * 2**20
    code, took, peak = probe(tmp_path, other)
    assert code == "0" and took < 20 and peak < 700, (code, took, peak)


def test_match_patterns_times_resources_is_capped(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(big_plan(600))
    base = (ROOT / "profiles" / "proposals" / "ok-v6e-chatbot.yaml").read_text()
    patterns = "\n".join(f"  - aws_instance.nomatch{i}*" for i in range(200))
    for i in range(200):
        (tmp_path / f"p{i}.yaml").write_text(base.replace("name: ", f"name: p{i}-", 1) + f"match:\n{patterns}\n")
    start = time.perf_counter()
    r = run_cli("check", "--no-config", str(tmp_path))
    assert r.code == 2 and "match: patterns against 600 resources" in r.err, r.err[-500:]
    assert time.perf_counter() - start < 20


def test_hcl_instances_are_capped(tmp_path: Path) -> None:
    f = tmp_path / "main.tf"
    f.write_text('resource "aws_instance" "x" {\n  count         = 100000000\n  instance_type = "g5.xlarge"\n}\n')
    start = time.perf_counter()
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2 and f"{f}:1:1: error: more than 10000 resource instances" in r.err, r.err
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("kind", ["large", "deep", "garbage"])
def test_hostile_hcl_is_bounded(tmp_path: Path, kind: str) -> None:
    f = tmp_path / "main.tf"
    if kind == "large":
        f.write_text("".join(f'resource "aws_instance" "r{i}" {{\n  instance_type = "g5.xlarge"\n}}\n' for i in range(8000)))
    elif kind == "deep":
        f.write_text("locals {\n  x = " + "[" * 5000 + "]" * 5000 + "\n}\n")
    else:
        f.write_text('resource "aws_instance" "x" {\n  instance_type = "g5.xlarge"\n' + "}{" * 20000)
    start = time.perf_counter()
    r = run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path))
    assert time.perf_counter() - start < 20
    assert r.code == 0 and "Traceback" not in r.err
    data = json.loads(r.out)
    if kind == "deep":  # names no accelerator: skipped with the parser's reason
        reason = data["skipped_files"][0]["reason"]
        assert "cannot parse" in reason or "without" in reason
        return
    # a file the reader does not parse but whose resources name an accelerator is not skipped in silence: each is a
    # request whose count is not read, at most MAX_UNREAD of them
    from advisor.check.infra.hcl import MAX_UNREAD

    results = data["results"]
    assert 1 <= len(results) <= MAX_UNREAD and (len(results) == MAX_UNREAD if kind == "large" else len(results) == 1)
    assert all("request-unresolved" in {f["rule"] for f in x["findings"]} for x in results)
