"""`advisor estimate` takes the names people use (machine types, TPU slices, instance types),
resolved from the catalog's shapes and rules/names.yaml; FILE#N picks one document; the JSON is
one shape for one file or many: {"schema_version", "results": [...]}."""

from __future__ import annotations

import json

import pytest
import yaml

from .conftest import ROOT, run_cli

CHAT = str(ROOT / "profiles" / "llm-chatbot.yaml")
PRETRAIN = str(ROOT / "profiles" / "llm-pretrain-70b.yaml")
MULTI = str(ROOT / "profiles" / "proposals" / "infra" / "workloads.yaml")


def _est(*args: str) -> dict:  # type: ignore[type-arg]
    r = run_cli("estimate", *args, "-f", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)  # type: ignore[no-any-return]


def _catalog() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "rules" / "catalog.yaml").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "acc", "count"), [
    ("a3-highgpu-8g", "h100", 8),
    ("ct6e-standard-8t", "tpu-v6e", 8),
    ("v6e-8", "tpu-v6e", 8),
    ("p5.48xlarge", "h100", 8),
])
def test_names_people_use_resolve_to_the_catalog(name: str, acc: str, count: int) -> None:
    d = _est(CHAT, "-a", name)
    assert (d["results"][0]["accelerator"], d["results"][0]["count"]) == (acc, count)
    # the same estimate as the catalog id with that count
    assert d["results"] == _est(CHAT, "-a", acc, "-n", str(count))["results"]


def test_slice_names_come_from_the_catalog_data() -> None:
    """v5p names count TensorCores: v5p-128 is 64 chips, as the catalog's slices say."""
    v5p = next(a for a in _catalog()["accelerators"] if a["id"] == "tpu-v5p")
    chips = {s["accelerator_type"]: s["chips"] for s in v5p["shapes"]["slices"]}
    assert chips["v5p-128"] == 64
    d = _est(PRETRAIN, "-a", "v5p-128")
    assert (d["results"][0]["accelerator"], d["results"][0]["count"]) == ("tpu-v5p", 64)


def test_every_machine_type_of_the_catalog_resolves() -> None:
    import fnmatch

    import yaml

    # a host that carries no accelerator of its own (N1: T4 is attached to it) names none (rules/names.yaml host_only)
    host_only = [h["pattern"] for h in yaml.safe_load((ROOT / "rules" / "names.yaml").read_text())["host_only"]]
    for a in _catalog()["accelerators"]:
        for n, machine in (a["shapes"].get("machine_types") or {}).items():
            if any(fnmatch.fnmatch(machine, pat) for pat in host_only):
                r = run_cli("estimate", CHAT, "-a", machine, "-f", "json")
                assert r.code == 2 and "unknown accelerator" in r.err, machine
                continue
            r = run_cli("estimate", CHAT, "-a", machine, "-f", "json")
            assert r.code == 0, (machine, r.err)
            got = json.loads(r.out)["results"][0]
            assert (got["accelerator"], got["count"]) == (a["id"], int(n)), machine
            break  # one per entry keeps this quick; the index is built from all of them


def test_a_count_with_a_name() -> None:
    d = _est(CHAT, "-a", "a3-highgpu-8g", "-n", "16")  # two machines
    assert d["results"][0]["count"] == 16
    r = run_cli("estimate", CHAT, "-a", "a3-highgpu-8g", "-n", "12")
    assert r.code == 2 and "multiple of 8" in r.err
    r = run_cli("estimate", CHAT, "-a", "v6e-8", "-n", "4")
    assert r.code == 2 and "is 8 chips" in r.err
    r = run_cli("estimate", CHAT, "-a", "h100")
    assert r.code == 2 and "--count is needed" in r.err
    r = run_cli("estimate", CHAT, "-a", "h1000", "-n", "8")
    assert r.code == 2 and "did you mean 'h100'?" in r.err


def test_file_hash_n_selects_one_document() -> None:
    r = run_cli("estimate", MULTI, "-a", "h100", "-n", "8")
    assert r.code == 2 and "FILE#N" in r.err and f"{MULTI}#2" in r.err
    second = _est(f"{MULTI}#2", "-a", "h100", "-n", "8")["results"][0]
    assert second["profile"] == f"{MULTI}#2"
    first = _est(f"{MULTI}#1", "-a", "h100", "-n", "8")["results"][0]
    assert first["profile"] == MULTI and first != second
    r = run_cli("estimate", f"{MULTI}#9", "-a", "h100", "-n", "8")
    assert r.code == 2 and "no document 9" in r.err


def test_json_is_one_shape_for_one_file_or_many() -> None:
    one = _est(CHAT, "-a", "h100", "-n", "8")
    many = _est(CHAT, PRETRAIN, "-a", "h100", "-n", "8")
    assert one["schema_version"] == many["schema_version"] == 2
    assert [r["profile"] for r in many["results"]] == [CHAT, PRETRAIN]
    assert many["results"][0] == one["results"][0]
    assert set(one) == set(many)  # the same keys at the top level either way
    # version 1's fields stay at the top level (the first result's), as DESIGN.md lists them
    for key in ("accelerator", "count", "hours", "cost_usd", "tokens_per_second", "memory_per_chip_gb", "fits_memory", "assumptions"):
        assert one[key] == one["results"][0][key]


def test_text_names_each_profile_when_there_are_several() -> None:
    r = run_cli("estimate", CHAT, PRETRAIN, "-a", "p5.48xlarge")
    assert r.code == 0, r.err
    assert CHAT in r.out and PRETRAIN in r.out and r.out.count("h100 x 8") == 2
