"""`advisor catalog import`: a SkyPilot catalog CSV -> a --catalog override (fixtures in tests/data/skypilot)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "skypilot"


def _import(tmp: Path, name: str, cloud: str, *extra: str) -> tuple[Path, str]:
    out = tmp / f"{cloud}.yaml"
    r = run_cli("catalog", "import", str(DATA / name), "--cloud", cloud, "-o", str(out), "--as-of", "2026-12-01", *extra)
    assert r.code == 0, r.err
    return out, r.err


def _prices(override: Path) -> dict[str, list[dict]]:
    r = run_cli("catalog", "--catalog", str(override), "--format", "json")
    assert r.code == 0, r.err
    return {a["id"]: a.get("prices", []) for a in json.loads(r.out)["accelerators"]}


def _imported(rows: list[dict], cloud: str, kind: str) -> list[dict]:
    return [p for p in rows if p["cloud"] == cloud and p["kind"] == kind and p["source"][0].startswith("S_IMPORT")]


def test_aws_rows_round_trip_by_instance_size(tmp_path: Path) -> None:
    out, note = _import(tmp_path, "vms-fixture.csv", "aws")
    got = _prices(out)
    a10g = _imported(got["a10g"], "aws", "on-demand")
    assert {(p["usd_per_chip_hour"], p.get("min_count"), p.get("max_count")) for p in a10g} == {(1.006, None, 1), (1.418, 4, None)}
    assert [p["usd_per_chip_hour"] for p in _imported(got["a10g"], "aws", "spot") if p.get("max_count") == 1] == [0.4246]  # cheapest zone
    h100 = _imported(got["h100"], "aws", "on-demand")
    assert h100[0]["usd_per_chip_hour"] == 6.88 and h100[0]["min_count"] == 8 and h100[0]["as_of"] == "2026-12-01"
    assert not _imported(got["h100"], "aws", "spot")  # an empty SpotPrice is no price
    assert "Inferentia2" in note and all(not _imported(v, "aws", "on-demand") for k, v in got.items() if k not in ("a10g", "h100", "t4"))


def test_gcp_quirks_sentinels_split_host_prices_and_tpu_names(tmp_path: Path) -> None:
    out, note = _import(tmp_path, "gcp-fixture.csv", "gcp")
    got = _prices(out)
    h100 = _imported(got["h100"], "gcp", "on-demand")
    assert h100[0]["usd_per_chip_hour"] == pytest.approx((78.3724 + 9.46006) / 8) and h100[0]["region"] == "us-east4"
    l4 = _imported(got["l4"], "gcp", "on-demand")
    assert l4[0]["usd_per_chip_hour"] == pytest.approx(0.56004 + 0.44038)
    v5p = _imported(got["tpu-v5p"], "gcp", "on-demand")
    assert v5p[0]["usd_per_chip_hour"] == pytest.approx(16.8 / 4)  # tpu-v5p-8 = 4 chips
    assert not _imported(got["b200"], "gcp", "on-demand")  # GPU-only row, no host VM row: not an all-in price
    assert not _imported(got["tpu-v6e"], "gcp", "on-demand")  # 700.0 sentinel
    assert "2 sentinel price 700" in note and "GPU-only price without its host VM" in note and "P100" in note


def test_azure_rows_and_region_filter(tmp_path: Path) -> None:
    out, _ = _import(tmp_path, "azure-fixture.csv", "azure")
    got = _prices(out)
    assert _imported(got["a100-40gb"], "azure", "on-demand")[0]["usd_per_chip_hour"] == pytest.approx(27.197 / 8)
    assert _imported(got["t4"], "azure", "spot")[0]["usd_per_chip_hour"] == 0.0526
    assert {p["region"] for p in _imported(got["h100"], "azure", "on-demand")} == {"eastus"}  # the 12-GPU row is dropped
    out, note = _import(tmp_path, "azure-fixture.csv", "azure", "--region", "westus")
    assert "price rows for none" in note and "accelerators: []" in out.read_text()


def test_imported_prices_change_a_recommendation(tmp_path: Path) -> None:
    out, _ = _import(tmp_path, "vms-fixture.csv", "aws")
    prof = tmp_path / "p.yaml"
    prof.write_text("name: x\ntask: inference\ndomain: llm\nmodel: {params_b: 1}\ninference: {peak_qps: 1}\n"
                    "deployment: {clouds: [aws], accelerators: [t4]}\n")
    d = json.loads(run_cli("recommend", str(prof), "--catalog", str(out), "--format", "json", "--no-flip").out)
    assert d["estimate"]["usd_per_chip_hour"] == 0.526


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("InstanceType,AcceleratorName\nx,y\n", ":1:1:", "missing column(s) AcceleratorCount, Price, SpotPrice, Region"),
        (
            "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\ng5.xlarge,A10G,1,cheap,0.4,us-east-1\n",
            ":2:18:",
            "Price: 'cheap' is not a number",
        ),
        (
            "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\ng5.xlarge,A10G,1,1.0\n",
            ":2:1:",
            "4 fields, the header has 6",
        ),
        ("", ":1:1:", "empty file"),
    ],
)
def test_bad_csv_is_a_positioned_error_and_writes_nothing(tmp_path: Path, text: str, where: str, what: str) -> None:
    src, out = tmp_path / "bad.csv", tmp_path / "out.yaml"
    src.write_text(text)
    r = run_cli("catalog", "import", str(src), "--cloud", "aws", "-o", str(out), "--as-of", "2026-12-01")
    assert r.code == 2 and f"{src}{where} error: {what}" in r.err, r.err
    assert not out.exists()


def test_bad_date_and_missing_file_exit_2(tmp_path: Path) -> None:
    r = run_cli("catalog", "import", str(DATA / "vms-fixture.csv"), "--cloud", "aws", "-o", str(tmp_path / "o.yaml"), "--as-of", "May 5")
    assert r.code == 2 and "--as-of" in r.err
    r = run_cli("catalog", "import", str(tmp_path / "nope.csv"), "--cloud", "aws", "-o", str(tmp_path / "o.yaml"))
    assert r.code == 2 and "nope.csv" in r.err
