"""The device-family registry (rules/families.yaml, advisor/families.py): one home for what
differs between TPUs, GPUs, CPUs and edge devices, and scoring that works for N families."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from advisor import families
from advisor.api import Context, recommend_profile
from tests.conftest import ROOT, make_profile, run_cli

ADVISOR = ROOT / "advisor"


def test_every_catalog_entry_belongs_to_a_sized_family() -> None:
    ctx = Context.load()
    sized = set(families.sized())
    assert sized == {"tpu", "gpu", "cpu"}
    for acc in ctx.catalog.accelerators.values():
        fam = families.family(acc.device)
        assert acc.device in sized and fam.scaling is not None
        # the registry's shape logic is what the catalog answers with
        assert acc.node_chips == fam.shapes.node_chips(acc.shapes)
        assert acc.real_shapes() == sorted(fam.shapes.real_shapes(acc.shapes))
        assert acc.hosts(acc.counts()[0]) >= 1


def test_family_facts_are_data() -> None:
    tpu, gpu, cpu, edge = (families.family(d) for d in ("tpu", "gpu", "cpu", "edge"))
    assert tpu.sold_on(["aws"]) is False and tpu.sold_on(["gcp", "aws"]) is True
    assert gpu.sold_on(["aws"]) is None  # the catalog decides
    assert tpu.stack("pytorch") == "pytorch-xla" and tpu.stack("jax") == "jax"
    assert gpu.stack("pytorch", ["deepspeed"]) == "megatron" and gpu.stack("pytorch") == "pytorch"
    assert tpu.compiles and not gpu.compiles
    assert (tpu.rival, gpu.rival, cpu.rival) == ("gpu", "tpu", None)
    assert not edge.sized and edge.role == "advice"
    assert families.name("tpu") == "TPU" and families.name("unknown") == "UNKNOWN"


# Family names may appear in data and in the registry, never as branches in the engine.
_BRANCH = re.compile(r"""(device|dev|rec\.device|family)\s*(==|!=|in)\s*\(?["'](tpu|gpu|cpu|edge)["']""")
_TABLE = re.compile(r"""\{\s*["'](tpu|gpu|cpu)["']\s*:""")


# Modules being rewritten onto the registry (once clean, the test fails until the entry is removed).
_PENDING = {
}


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in ADVISOR.rglob("*.py")))
def test_no_branch_on_a_family_name_outside_the_registry(path: str) -> None:
    if path == "advisor/families.py":
        return
    text = (ROOT / path).read_text(encoding="utf-8")
    hits = [m.group(0) for m in _BRANCH.finditer(text)] + [m.group(0) for m in _TABLE.finditer(text)]
    if path in _PENDING:
        assert hits, f"{path} no longer branches on family names: remove it from _PENDING"
        pytest.xfail(_PENDING[path])
    assert not hits, f"{path}: branches on a device family's name ({hits[:3]}); ask advisor.families instead"


def test_unknown_family_in_a_catalog_override_is_a_clear_error(tmp_path: Path) -> None:
    cat = tmp_path / "npu.yaml"
    cat.write_text(_NPU.replace("DEVICE", "npu"))
    prof = ROOT / "profiles" / "llm-chatbot.yaml"
    r = run_cli("recommend", str(prof), "--catalog", str(cat), "--format", "json")
    assert r.code == 2
    assert "npu" in r.err and "rules/families.yaml" in r.err and "Traceback" not in r.err


_NPU = (
    'schema_version: 1\nas_of: "2026-12-01"\n'
    'sources: {X: {url: "https://example.com/npu", retrieved: "2026-12-01"}}\n'
    "accelerators:\n"
    "  - id: npu-1\n    device: DEVICE\n    name: Test NPU\n    vendor: test\n    clouds: [gcp]\n"
    '    specs: {peak_tflops: {bf16: 900}, memory_gib: 96, memory_bandwidth_gbps: 4000, scale_up_chips: 8,'
    ' scale_out_gbit_per_chip: 400, fabric_source: [X], source: [X], as_of: "2026-12-01"}\n'
    '    shapes: {gpus_per_node: 8, partial_node_counts: [1, 8], max_nodes: 16, source: [X], as_of: "2026-12-01"}\n'
    '    prices: [{cloud: gcp, kind: on-demand, usd_per_chip_hour: 0.2, source: [X], as_of: "2026-12-01"}]\n'
)


def test_a_third_accelerator_family_competes_on_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new family is one registry entry: its catalog entries are candidates, it has a score,
    it is compared with the others on cost, and it can win."""
    reg = dict(families._registry())
    reg["npu"] = dataclasses.replace(reg["gpu"], id="npu", name="NPU", colour="blue", preference=4, rival=None)
    monkeypatch.setattr(families, "_registry", lambda: reg)
    cat = tmp_path / "npu.yaml"
    cat.write_text(_NPU.replace("DEVICE", "npu"))
    ctx = Context.load(catalogs=[str(cat)])
    profile = make_profile(
        {"name": "npu chat", "task": "inference", "model": {"params_b": 8}},
        {"inference": {"mode": "online", "peak_qps": 5, "input_tokens": 512, "output_tokens": 256}},
    )
    rec = recommend_profile(profile, ctx, with_flip=False)
    doc = rec.to_json()
    assert "npu" in doc["scores"]
    assert any(c["accelerator"] == "npu-1" for c in doc["candidates"])
    ratio = [c for c in doc["contributions"] if c["rule"].startswith("estimate-cost")]
    assert ratio and ratio[0]["device"] == "npu", ratio  # cheapest by far: it wins the comparison
    assert "NPU" in ratio[0]["title"]
    assert doc["verdict"]["device"] == "npu" and doc["verdict"]["accelerator"] == "npu-1"
    json.dumps(doc)  # serialisable
