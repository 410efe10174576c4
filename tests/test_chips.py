"""The data-centre chips added for issue 15: each is a candidate where it is sold, priced where a
price was sourced (and unpriced, never $0, where not), sized in the shapes clouds sell, and its
instance names resolve in the infrastructure name index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.catalog import load_catalog
from advisor.check.infra.names import name_index
from advisor.estimate.price import offered_on

from .conftest import run_cli
from .test_pricing import SERVE

CAT = load_catalog()


# chip -> (a cloud that sells it, its sourced on-demand $/GPU-h there or None when unpriced, real shapes)
NEW = {
    "h100-nvl": ("azure", 6.98, [1, 2]),
    "h100-pcie": ("on-prem", None, [1, 2, 4, 8]),
    "gb200": ("gcp", None, [4, 8]),
    "b300": ("aws", 17.802, [8, 16]),
    "mi325x": ("on-prem", None, [8, 16]),
    "mi355x": ("oci", None, [8, 16]),
}


def _recommend(tmp: Path, acc: str, cloud: str) -> dict:  # type: ignore[type-arg]
    f = tmp / "p.yaml"
    f.write_text(SERVE + f"deployment: {{clouds: [{cloud}], accelerators: [{acc}]}}\n")
    r = run_cli("recommend", str(f), "--format", "json", "--no-flip")
    assert r.code == 0, r.err
    return json.loads(r.out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("acc_id", sorted(NEW))
def test_new_chip_is_a_candidate_where_sold_and_priced_only_where_sourced(tmp_path: Path, acc_id: str) -> None:
    cloud, usd, _ = NEW[acc_id]
    acc = CAT.get(acc_id)
    assert cloud in acc.clouds and offered_on(acc, [cloud])
    d = _recommend(tmp_path, acc_id, cloud)
    assert d["verdict"]["accelerator"] == acc_id and d["verdict"]["count"] in acc.real_shapes()
    if usd is None:
        assert d["estimate"]["cost_usd"] is None and any(acc_id in w and "unpriced" in w for w in d["warnings"])
    else:
        assert d["estimate"]["usd_per_chip_hour"] == pytest.approx(usd)
        assert d["estimate"]["price"] == {"cloud": cloud, "kind": "on-demand"}


@pytest.mark.parametrize("acc_id", sorted(NEW))
def test_new_chip_specs_are_dense_sourced_and_in_the_shapes_sold(acc_id: str) -> None:
    acc = CAT.get(acc_id)
    tf = acc.specs.peak_tflops
    assert tf["fp8"] == pytest.approx(2 * tf["bf16"], rel=0.01)  # dense 8-bit = 2 x dense 16-bit on these parts
    assert acc.specs.tdp_w and acc.specs.memory_gib >= 80 and acc.specs.memory_bandwidth_gbps >= 2000
    for sid in acc.specs.source + acc.shapes.source:
        assert sid in CAT.sources and (CAT.sources[sid].url or CAT.sources[sid].repo)
    assert acc.real_shapes()[: len(NEW[acc_id][2])] == NEW[acc_id][2]


def test_gb200_is_sized_in_four_gpu_trays_up_to_one_nvl72_rack() -> None:
    gb = CAT.get("gb200")
    assert gb.real_shapes()[0] == 4 and gb.max_chips() == 72 and not gb.is_shape(8 + 1)
    assert gb.shape_name(4) == "a4x-highgpu-4g" and gb.specs.peak_tflops["fp4"] == 10000


def test_h100_nvl_two_gpu_vm_is_priced_per_gpu_like_the_one_gpu_vm() -> None:
    nvl = CAT.get("h100-nvl")
    one, two = nvl.price(["azure"], "on-demand", None, 1), nvl.price(["azure"], "on-demand", None, 2)
    assert one is not None and two is not None and one.usd_per_chip_hour == two.usd_per_chip_hour == 6.98
    assert nvl.price(["azure"], "on-demand", None, 4) is not None  # two 2-GPU VMs
    # the SXM H100 is not priced on Azure below its 8-GPU VM: the NVL part is a different chip
    assert CAT.get("h100").price(["azure"], "on-demand", None, 1) is None


@pytest.mark.parametrize(("name", "acc", "chips"), [
    ("Standard_NC40ads_H100_v5", "h100-nvl", 1), ("Standard_NC80adis_H100_v5", "h100-nvl", 2),
    ("a4x-highgpu-4g", "gb200", 4), ("Standard_ND128isr_NDR_GB200_v6", "gb200", 4),
    ("amd-mi355x", "mi355x", None), ("p6-b300.48xlarge", "b300", 8), ("h100-pcie", "h100-pcie", None), ("mi325x", "mi325x", None),
])
def test_new_instance_names_resolve_to_the_chip(name: str, acc: str, chips: int | None) -> None:
    hw = name_index(CAT).lookup(name)
    assert (hw.accelerator, hw.chips) == (acc, chips)


def test_b300_int8_is_its_small_sourced_rate_not_the_fp8_rate() -> None:
    b300 = CAT.get("b300")
    assert b300.peak_flops("int8") == pytest.approx(150e12) and b300.peak_flops("fp8") == pytest.approx(4500e12)
    assert b300.price(["aws"], "on-demand", None, 4) is None  # only the 8-GPU p6-b300.48xlarge is sold


def test_a_check_of_an_azure_nvl_proposal_is_priced(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(SERVE + "deployment: {clouds: [azure]}\nproposal: {accelerator: h100-nvl, count: 2, hours: 720}\n")
    r = run_cli("check", "--no-config", "--format", "json", str(f))
    rules = {x["rule"] for x in json.loads(r.out)["results"][0]["findings"]}
    assert "proposal-unpriced" not in rules and "unknown-accelerator" not in rules


def test_every_chip_states_its_fabric_with_a_source() -> None:
    """Every entry has a scale-up domain and a scale-out bandwidth per chip, each sourced (a missing
    figure used to fall back to a silent 25 Gbit/s): GB200's NVLink domain is the 72-GPU rack, not
    its 4-GPU tray; AMD's Infinity Fabric joins 8; TPUs their pod."""
    for acc in CAT.accelerators.values():
        assert acc.specs.scale_up_chips >= 1 and acc.specs.fabric_source, acc.id
        assert all(s in CAT.sources for s in acc.specs.fabric_source), acc.id
        if acc.max_chips() > acc.node_chips:
            assert acc.specs.scale_out_gbit_per_chip > 0, acc.id
    assert CAT.get("gb200").scale_up == 72 and CAT.get("gb200").node_chips == 4
    assert CAT.get("mi300x").specs.scale_out_gbit_per_chip == 400 and CAT.get("mi325x").scale_up == 8
    assert CAT.get("tpu-v6e").specs.scale_out_gbit_per_chip == 100


def test_a_chip_without_fabric_figures_is_a_positioned_load_error(tmp_path: Path) -> None:
    from advisor.errors import InputError

    f = tmp_path / "c.yaml"
    f.write_text(
        'schema_version: 1\nsources: {X: {url: "https://example.com", retrieved: "2026-12-01"}}\naccelerators:\n'
        "  - id: my-gpu\n    device: gpu\n    name: My GPU\n    vendor: me\n"
        '    specs: {peak_tflops: {bf16: 100}, memory_gib: 10, memory_bandwidth_gbps: 100, source: [X], as_of: "2026-01-01"}\n'
        '    shapes: {gpus_per_node: 8, partial_node_counts: [1, 8], max_nodes: 4, source: [X], as_of: "2026-01-01"}\n'
    )
    with pytest.raises(InputError) as exc:
        load_catalog([str(f)])
    text = str(exc.value)
    assert "specs.scale_out_gbit_per_chip: required field is missing" in text
    assert "specs.scale_up_chips: required field is missing" in text and "c.yaml:8:" in text


def test_gb200_trains_inside_its_nvl72_domain() -> None:
    """64 GB200 GPUs are 16 trays of one NVL72 rack: data-parallel traffic stays on NVLink."""
    from advisor.api import Context
    from advisor.estimate.search import estimate

    from .conftest import make_profile

    ctx = Context.load()
    p = make_profile({"name": "t", "task": "training", "model": {"params_b": 70}}, {"training": {"tokens_b": 100, "seq_len": 4096}})
    e = estimate(p, CAT.get("gb200"), 64, ctx.constants)
    assert e.parallelism is not None and e.parallelism["data_parallel_fabric"].startswith("NVLink")


def test_every_source_is_read_at_its_publisher_not_a_mirror_or_proxy() -> None:
    """Review 26: catalog sources included a proxy copy of wccftech (wccftech-com.nproxy.org), a mirror of Wikipedia
    (artikel.siakadpt.com), a copy of an Apple page on a free host (nakenako.serv00.net/https-www.apple.com/...) and an
    unrelated article. A source is cited at its publisher: no host that embeds another domain (x-com.proxy), no path
    that does (/https-www.), none of the known mirror hosts."""
    import re
    from urllib.parse import urlparse

    import yaml

    from .conftest import ROOT

    mirror_host = re.compile(r"(?:^|\.)[a-z0-9-]+-(?:com|net|org|io)\.[a-z0-9.-]+$|nproxy|serv00|siakadpt|ferreiradozezere")
    bad = []
    for f in sorted((ROOT / "rules").glob("*.yaml")):
        data = yaml.safe_load(f.read_text())
        for sid, src in ((data or {}).get("sources") or {}).items() if isinstance(data, dict) else ():
            url = src.get("url") if isinstance(src, dict) else None
            if not url:
                continue
            u = urlparse(url)
            if mirror_host.search(u.hostname or "") or re.search(r"/https?-www\.", u.path):
                bad.append(f"{f.name}: {sid} {url}")
    assert not bad, bad
    cat = load_catalog()
    assert all(not mirror_host.search(urlparse(s.url or "").hostname or "") for s in cat.sources.values() if s.url)
