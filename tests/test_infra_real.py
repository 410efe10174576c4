"""Every real infrastructure file in tests/data/infra-real/ (origins in MANIFEST.json: repository,
path, commit) is read as the manifest says: per resource the accelerator, chips per replica,
replicas min..max and total chips; a file of no accelerator is skipped with its reason; a file
that cannot be read is an input error with its message."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "infra-real"
MANIFEST = json.loads((DATA / "MANIFEST.json").read_text())["files"]
FIELDS = ("accelerator", "hardware", "count", "replicas_min", "replicas_max", "total_chips")


@pytest.fixture(scope="module")
def report() -> dict:
    cwd = os.getcwd()
    os.chdir(DATA)
    try:
        r = run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", ".")
    finally:
        os.chdir(cwd)
    assert r.code == 2, r.err  # two real files are input errors (see the manifest); the rest is reported
    return json.loads(r.out)


def test_manifest_records_origins() -> None:
    assert len(MANIFEST) >= 60
    on_disk = {str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.suffix in (".yaml", ".yml", ".tf")}
    assert on_disk == {e["file"] for e in MANIFEST}
    for e in MANIFEST:
        assert e["repo"].count("/") == 1 and e["path"] and len(e["commit"]) == 40
        assert sum(k in e for k in ("expect", "skip", "error")) == 1


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_real_file(report: dict, entry: dict) -> None:
    path = entry["file"]
    got = {r["source"]["address"]: r for r in report["results"] if os.path.normpath(r["source"]["path"]) == path}
    skipped = {os.path.normpath(s["path"]): s["reason"] for s in report["skipped_files"]}
    invalid = {os.path.normpath(b["path"]): b["errors"] for b in report["invalid"]}
    if "error" in entry:
        assert path in invalid and entry["error"] in invalid[path][0]["message"]
        return
    if "skip" in entry:
        assert not got and skipped.get(path) == entry["skip"]
        return
    assert path not in invalid and path not in skipped
    assert set(got) == {x["address"] for x in entry["expect"]}
    for x in entry["expect"]:
        q = got[x["address"]]["request"]
        assert {f: q[f] for f in FIELDS} == {f: x[f] for f in FIELDS}, x["address"]


def test_table_by_kind(report: dict, capsys: pytest.CaptureFixture[str]) -> None:
    """The summary the report quotes: resources read right / total, by kind."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    by_addr = {(os.path.normpath(r["source"]["path"]), r["source"]["address"]): r["request"] for r in report["results"]}
    for e in MANIFEST:
        for x in e.get("expect", []):
            total[x["kind"]] += 1
            q = by_addr.get((e["file"], x["address"]))
            right[x["kind"]] += q is not None and all(q[f] == x[f] for f in FIELDS)
        if "skip" in e or "error" in e:
            total["skip/error"] += 1
            right["skip/error"] += 1
    with capsys.disabled():
        print("\n" + "\n".join(f"  {k}: {right[k]}/{total[k]}" for k in sorted(total)))
    assert right == total


def test_real_files_under_a_second_each() -> None:
    import time

    t = time.perf_counter()
    run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", str(DATA))
    assert time.perf_counter() - t < max(20.0, len(MANIFEST) * 1.0)


def test_one_changed_line_against_a_real_baseline(tmp_path: Path) -> None:
    """The real files as the baseline and one changed line (T4 -> L4): exactly one change, saying
    what changed, no phantom new / fixed findings or costs from the other 74 files."""
    import shutil

    old = tmp_path / "old"
    new = tmp_path / "new"
    shutil.copytree(DATA, old)
    shutil.copytree(DATA, new)
    f = new / "kuberay__ray-operator_config_samples_ray-job.batch-inference.yaml"
    f.write_text(f.read_text().replace("nvidia-tesla-t4", "nvidia-l4"))
    r = run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", "--baseline", str(old), str(new))
    d = json.loads(r.out)["diff"]
    assert [c["key"] for c in d["changes"]] == [f"{f.name}::RayJob/default/rayjob-sample/head"]
    c = d["changes"][0]
    assert c["what"] == ["accelerator t4 -> l4"] and not c["added"] and c["chips_before"] == c["chips_after"] == 4
    assert d["new_findings"] == 0 and d["fixed_findings"] == 0 and d["removed_profiles"] == []
    assert d["cost_delta_usd"] == c["cost_delta_usd"] and d["cost_delta_usd"] != 0
    # the same baseline as an earlier --format json result of the old directory
    base = tmp_path / "base.json"
    assert run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", "-o", str(base), str(old)).code == 2
    d2 = json.loads(run_cli("check", "--no-config", "--fail-on", "never", "--format", "json", "--baseline", str(base), str(new)).out)[
        "diff"
    ]
    assert d2["changes"] == d["changes"]
    md = run_cli("check", "--no-config", "--fail-on", "never", "--format", "markdown", "--baseline", str(old), str(new)).out
    assert "accelerator t4 → l4" in md
