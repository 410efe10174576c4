"""No value crashes the gate: ASCII-only numbers, finiteness before int(), bounded totals, lone
surrogates refused with a position, non-UTF-8 output encodings, one member's failure confined
to that member."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

SKY = "name: t\nresources:\n  accelerators: {value}\nrun: x\n"
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  nodeSelector: {{cloud.google.com/gke-accelerator: nvidia-l4, "
       "cloud.google.com/gke-tpu-topology: {topo}}}\n  containers:\n  - name: c\n    resources:\n      limits: {{nvidia.com/gpu: {n}}}\n")

CASES = {
    "sky-superscript": SKY.format(value='"H100:²"'),
    "sky-4x-superscript": SKY.format(value='"H100:4x²"'),
    "sky-nan": SKY.format(value='"H100:nan"'),
    "sky-inf": SKY.format(value='"H100:inf"'),
    "sky-minus-inf": SKY.format(value='"H100:-inf"'),
    "sky-arabic-digits": SKY.format(value='"H100:٨"'),
    "sky-underscore": SKY.format(value='"H100:1_0"'),
    "sky-exp": SKY.format(value='"H100:1e308"'),
    "sky-set-nan": "name: t\nresources:\n  accelerators: {H100: .nan}\nrun: x\n",
    "sky-nodes-inf": "name: t\nnum_nodes: .inf\nresources:\n  accelerators: H100:1\nrun: x\n",
    "pod-superscript": POD.format(topo="2x2", n='"²"'),
    "pod-fullwidth": POD.format(topo="2x2", n='"８"'),
    "pod-topology-superscript": POD.format(topo='"²x²"', n="4"),
    "pod-float": POD.format(topo="2x2", n="1.5"),
    "pod-nan": POD.format(topo="2x2", n=".nan"),
    "pod-huge": POD.format(topo="2x2", n="99999999999999999999999"),
    "deploy-total": ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 9000000\n  template:\n    spec:\n"
                     "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n      containers:\n      - name: c\n"
                     "        resources:\n          limits: {nvidia.com/gpu: 8}\n"),
    "yaml-surrogate": 'name: "a \\ud800 b"\nresources:\n  accelerators: H100:1\nrun: x\n',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_values_are_input_errors(tmp_path: Path, name: str) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(CASES[name], encoding="utf-8")
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2, (r.code, r.out, r.err)
    assert r.err.startswith(f"{f}:") and ": error: " in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(("text", "where"), [
    ('{"format_version": "1.2", "resource_changes": [], "x": "\\ud800"}', (1, 57)),
    ('{"format_version": "1.2",\n "resource_changes": [], "x": "ok \\udfff"}', (2, 35)),
    ('{"format_version": "1.2", "resource_changes": [], "x": "\\ud83d\\ud83d"}', (1, 57)),
])
def test_lone_surrogates_in_json_are_refused_with_a_position(tmp_path: Path, text: str, where: tuple[int, int]) -> None:
    f = tmp_path / "plan.json"
    f.write_text(text)
    r = run_cli("check", "--no-config", str(f))
    assert r.code == 2 and f"{f}:{where[0]}:{where[1]}: error: a lone UTF-16 surrogate" in r.err, r.err


def test_surrogate_pairs_and_escaped_backslashes_are_fine(tmp_path: Path) -> None:
    from advisor.check.infra.jsonsrc import loads

    assert loads('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}', "p") == {"a": "\U0001f600", "b": "\\ud800"}


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_non_utf8_output_with_non_ascii_names(tmp_path: Path, encoding: str) -> None:
    f = tmp_path / "日本.yaml"
    f.write_text(POD.format(topo="2x2", n="1").replace("name: p", "name: 日本語-é"), encoding="utf-8")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": encoding, "NO_COLOR": "1"}
    for fmt in ("text", "json", "markdown", "sarif", "junit", "github"):
        done = subprocess.run(
            [sys.executable, "-m", "advisor", "check", "--no-config", "-f", fmt, str(f)],
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (fmt, done.stderr[-500:])
        assert b"Traceback" not in done.stderr


def test_one_members_failure_marks_that_member_and_the_batch_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.check import batch

    good = tmp_path / "good.yaml"
    good.write_text(SKY.format(value="L4:1"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(SKY.format(value="L4:2").replace("name: t", "name: boom"))
    real = batch._read_one

    def flaky(path: str, ctx, text=None):  # type: ignore[no-untyped-def]
        if path.endswith("bad.yaml"):
            raise ZeroDivisionError("a bug")
        return real(path, ctx, text)

    monkeypatch.setattr(batch, "_read_one", flaky)
    r = run_cli("check", "--no-config", "--format", "json", str(tmp_path))
    data = json.loads(r.out)
    assert r.code == 2
    assert [x["path"] for x in data["invalid"]] == [str(bad)]
    assert "internal error" in data["invalid"][0]["errors"][0]["message"]
    assert len(data["results"]) == 1 and data["results"][0]["source"]["path"] == str(good)
