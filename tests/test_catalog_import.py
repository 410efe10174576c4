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
    h100 = _imported(got["h100"], "azure", "on-demand")  # the file's 12 GPUs read as the VM's 8 (rules/names.yaml)
    assert {(p["region"], p["usd_per_chip_hour"]) for p in h100} == {("eastus", 12.29), ("eastus2", 12.29)}
    assert not _imported(got["h100"], "azure", "spot")  # SpotPrice equal to Price is no spot price
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
    r = run_cli("catalog", "import", str(tmp_path / "nope.csv"), "--cloud", "aws", "-o", str(tmp_path / "o.yaml"), "--as-of", "2026-12-01")
    assert r.code == 2 and "nope.csv" in r.err


def test_as_of_is_required_never_the_file_date(tmp_path: Path) -> None:
    out = tmp_path / "o.yaml"
    r = run_cli("catalog", "import", str(DATA / "vms-fixture.csv"), "--cloud", "aws", "-o", str(out))
    assert r.code == 2 and "--as-of YYYY-MM-DD is required" in r.err and "no date column" in r.err, r.err
    assert not out.exists()


# Real rows (tests/data/skypilot/real/README.md: repository, path, commit and the rows kept).


def test_real_gcp_h100_is_the_all_in_on_demand_rate_per_gpu(tmp_path: Path) -> None:
    out, note = _import(tmp_path, "real/gcp-vms-excerpt.csv", "gcp")
    got = _prices(out)
    h100 = {p["region"]: p for p in _imported(got["h100"], "gcp", "on-demand")}
    # 8 x GPU SKU + the a3-highgpu-8g host, per GPU: the catalog's own us-east4-derived figure
    assert h100["us-east4"]["usd_per_chip_hour"] == pytest.approx((78.37241 + 9.46006) / 8) == pytest.approx(10.97906, abs=1e-4)
    assert h100["us-east4"]["min_count"] == 8 and h100["europe-west4"]["usd_per_chip_hour"] == pytest.approx((101.88413 + 9.93306) / 8)
    # us-central1 (and the other regions at GCP's second price level, $4.20076 a GPU) are not on-demand prices
    assert not {"us-central1", "us-west1", "us-west4", "asia-northeast1", "asia-southeast1", "australia-southeast1"} & set(h100)
    assert "10 GPU-only on-demand price at a second, lower price level" in note
    assert "5 GPU-only price without its host VM" in note  # asia-northeast3, europe-west2, northamerica-northeast2, B200
    assert not _imported(got["b200"], "gcp", "on-demand")  # its a4-highgpu-8g host is listed at 0.0: no all-in price
    v6e = {(p["kind"], p["region"]): p for p in got["tpu-v6e"] if p["source"][0].startswith("S_IMPORT")}
    assert v6e[("on-demand", "us-central1")]["usd_per_chip_hour"] == 2.7 and v6e[("on-demand", "us-central1")]["min_count"] == 8
    assert ("on-demand", "asia-east1") not in v6e and ("spot", "southamerica-west1") not in v6e  # 700.0 sentinels
    assert v6e[("on-demand", "southamerica-west1")]["usd_per_chip_hour"] == 2.7


def test_real_gcp_region_filter_keeps_the_second_price_level_out(tmp_path: Path) -> None:
    out, _ = _import(tmp_path, "real/gcp-vms-excerpt.csv", "gcp", "--region", "us-central1")
    assert not _imported(_prices(out)["h100"], "gcp", "on-demand")  # the level is found over the whole file


def test_real_aws_p5_and_azure_nd_h100_v5_per_gpu(tmp_path: Path) -> None:
    out, note = _import(tmp_path, "real/aws-vms-excerpt.csv", "aws")
    aws = {p["region"]: p["usd_per_chip_hour"] for p in _imported(_prices(out)["h100"], "aws", "on-demand")}
    assert aws == {"us-east-1": 6.88, "us-east-2": 6.88, "us-west-2": 6.88, "us-west-1": 8.6}  # p5.48xlarge $55.04/h / 8
    assert "0 price(s) beyond the drift tolerance" in note and "1 AWS Local Zone row" in note
    spot = {p["region"]: p["usd_per_chip_hour"] for p in _imported(_prices(out)["h100"], "aws", "spot")}
    assert spot["us-east-1"] == pytest.approx(17.6289 / 8)  # cheapest us-east-1 zone; not the Atlanta Local Zone's 10.2397
    out, note = _import(tmp_path, "real/azure-vms-excerpt.csv", "azure")
    got = _prices(out)
    nd = {p["region"]: p for p in _imported(got["h100"], "azure", "on-demand")}
    assert nd["eastus"]["usd_per_chip_hour"] == 12.29 and nd["eastus"]["min_count"] == 8 and nd["westus"]["usd_per_chip_hour"] == 15.977
    assert "GPU count from the name index for Standard_ND96isr_H100_v5 (3 rows)" in note
    # NC H100 v5 carries H100 NVL: priced as that entry, never as the SXM part
    assert {p["region"] for p in _imported(got["h100-nvl"], "azure", "on-demand")} >= {"eastus"}
    # NC A100 v4 is A100 80GB PCIe (rules/names.yaml: not in the catalog): unknown, not the SXM a100-80gb's price
    assert "A100-80GB (Standard_NC24ads_A100_v4)" in note
    assert {p["usd_per_chip_hour"] for p in _imported(got["a100-80gb"], "azure", "on-demand")} == {32.77 / 8, 39.324 / 8}
    assert _imported(got["a100-40gb"], "azure", "on-demand")[0]["usd_per_chip_hour"] == pytest.approx(27.197 / 8)


def _us_central1_only(tmp: Path) -> Path:
    """The real header, host and H100 rows of us-central1 alone: the file's half-price GPU row with
    nothing to tell it from an on-demand price but the catalog."""
    lines = (DATA / "real" / "gcp-vms-excerpt.csv").read_text().splitlines()
    src = tmp / "us-central1.csv"
    src.write_text("\n".join([lines[0], *(x for x in lines[1:] if ",us-central1," in x and "tpu" not in x)]) + "\n")
    return src


def test_drifted_prices_draw_one_warning_each_at_their_row(tmp_path: Path) -> None:
    out, note = _import(tmp_path, "real/gcp-vms-excerpt.csv", "gcp")
    src = DATA / "real" / "gcp-vms-excerpt.csv"
    assert f"{src}:47:95: warning: price drift: h100 gcp spot us-central1: imported $3.3538/chip-h, the catalog has $6.5710" in note
    assert note.count("warning: price drift") == 1 and "1 price(s) beyond the drift tolerance" in note
    src = _us_central1_only(tmp_path)
    out = tmp_path / "c1.yaml"
    r = run_cli("catalog", "import", str(src), "--cloud", "gcp", "-o", str(out), "--as-of", "2026-12-01")
    assert r.code == 0 and out.exists()
    drift = [x for x in r.err.splitlines() if "warning: price drift: h100 gcp on-demand us-central1" in x]
    assert len(drift) == 1 and "imported $5.3833/chip-h, the catalog has $10.9791" in drift[0] and "-51%" in drift[0], r.err


def test_strict_drift_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    src, out = _us_central1_only(tmp_path), tmp_path / "o.yaml"
    r = run_cli("catalog", "import", str(src), "--cloud", "gcp", "-o", str(out), "--as-of", "2026-12-01", "--strict-drift")
    assert r.code == 2 and not out.exists()
    assert f"{src}:" in r.err and ": error: price drift: h100 gcp on-demand us-central1" in r.err, r.err


def test_help_states_the_tolerance_the_code_uses() -> None:
    from advisor.pricing import DRIFT_TOLERANCE

    r = run_cli("catalog", "import", "--help")
    assert r.code == 0 and f"{DRIFT_TOLERANCE:.0%}" in " ".join(r.out.split()) and "--strict-drift" in r.out
