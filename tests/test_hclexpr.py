"""Terraform expressions the HCL reader evaluates (advisor.check.infra.hclexpr): what real modules write counts,
for_each and machine types with, evaluated as Terraform evaluates them; anything else unresolved, never guessed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from advisor.check.infra.hcl import _Scope
from advisor.check.infra.hclexpr import Unresolved, evaluate

from .conftest import run_cli

POOLS = [{"name": "gpu", "machine_type": "a2-highgpu-8g", "max_count": 4}, {"name": "cpu", "machine_type": "n2-standard-8"}]
SCOPE = _Scope({"pools": POOLS, "size": 8, "on": True, "missing_ok": None, "zones": ["us-central1-a", "us-central1-b"],
                "m": {"a": 1, "b": 2}},
               {"names": "${[for p in var.pools : p.name]}"})


@pytest.mark.parametrize("expr,value", [
    ("var.size * 2 + 1", 17),
    ("var.size / 4", 2),
    ("var.size % 3", 2),
    ("-var.size + 10", 2),
    ("max(1, var.size, 3)", 8),
    ("min([4, 2, 9])", 2),
    ("length(var.pools)", 2),
    ("var.on && var.size > 4 ? \"big\" : \"small\"", "big"),
    ("!var.on || var.size == 8", True),
    ("[for p in var.pools : p.name]", ["gpu", "cpu"]),
    ("[for p in var.pools : p.name if lookup(p, \"max_count\", 0) > 0]", ["gpu"]),
    ("{for p in var.pools : p.name => p.machine_type}", {"gpu": "a2-highgpu-8g", "cpu": "n2-standard-8"}),
    ("{for k, v in var.m : k => v * 10}", {"a": 10, "b": 20}),
    ("[for i, z in var.zones : \"${i}\"]", Unresolved),  # a template string inside an expression
    # an element whose value is a template string is that element unresolved, not the whole (review 17, F1: an ARN
    # built from a data source beside a node group's instance type)
    ("[for p in var.pools : {t = p.machine_type, arn = \"arn:${data.x.y}\"}][0].t", "a2-highgpu-8g"),
    # && and || short-circuit (Terraform 1.12): the right side of a false && is not evaluated
    ("var.missing_ok != null && length(var.missing_ok) > 0", False),
    ("var.on || length(data.x.y) > 0", True),
    ("zipmap(local.names, tolist(toset(var.pools)))[\"gpu\"].machine_type", "a2-highgpu-8g"),
    ("toset([\"b\", \"a\", \"b\"])", ["a", "b"]),
    ("lookup(var.m, \"c\", 7)", 7),
    ("coalesce(\"\", null, \"x\")", "x"),
    ("try(data.x.y.z, var.size)", 8),
    ("can(data.x.y)", False),
    ("merge(var.m, {c = 3})", {"a": 1, "b": 2, "c": 3}),
    ("concat(var.zones, [\"us-east1-b\"])[2]", "us-east1-b"),
    ("keys(var.m)", ["a", "b"]),
    ("format(\"%s-%d\", \"pool\", var.size)", "pool-8"),
    ("element(var.zones, 3)", "us-central1-b"),
    ("range(3)", [0, 1, 2]),
    ("ceil(var.size / 3)", 3),
    ("var.zones[1]", "us-central1-b"),
    ("{ a = 1, \"b\" : [1, 2] }.b[1]", 2),
    # an element whose value is known only after apply is unresolved, not its collection
    ("{ a = 1, b = module.x.y }.a", 1),
    ("merge({g = {t = \"p5\"}}, {s = module.v.x})[\"g\"].t", "p5"),
    ("length([module.a.id, 2])", 2),
    # what is known only after apply, or not evaluated here: unresolved
    ("module.gke.name", Unresolved),
    ("data.google_compute_zones.available.names[0]", Unresolved),
    ("terraform.workspace == \"prod\" ? 64 : 1", Unresolved),
    ("var.pools[*].name", Unresolved),
    ("var.missing + 1", Unresolved),
    ("lookup(var.m, \"c\")", Unresolved),
    ("sha256(\"x\")", Unresolved),
    ("var.size / 0", Unresolved),
    ("{for p in var.pools : \"same\" => p}", Unresolved),  # duplicate keys: an error in Terraform
])
def test_expressions(expr: str, value: Any) -> None:
    got = evaluate(SCOPE, expr)
    if value is Unresolved:
        assert isinstance(got, Unresolved), got
    else:
        assert got == value


def test_bounded() -> None:
    """Hostile expressions end fast as unresolved: a huge range, deep nesting, too many tokens, a for over too much."""
    start = time.perf_counter()
    for expr in ("range(100000000)", "(" * 5000 + "1" + ")" * 5000, " + ".join(["1"] * 5000),
                 "[for i in range(20000) : i]", "[for a in range(9000) : [for b in range(9000) : b]]"):
        assert isinstance(evaluate(SCOPE, expr), Unresolved), expr[:40]
    assert time.perf_counter() - start < 5


def test_a_vendored_gke_module_reads_its_node_pools(tmp_path: Path) -> None:
    """The node pools of a local copy of terraform-google-kubernetes-engine (kubernetes-engine-samples vendors it):
    ``node_pools = zipmap(local.node_pool_names, tolist(toset(var.node_pools)))`` and ``for_each = local.node_pools``.
    Before: one request per module of unknown hardware (``pools["?"]``, for_each not read). Now each pool the caller
    passes, with its machine type and autoscaling; the CPU pool (n2-standard-8, a machine the catalog prices for CPU
    serving) is no accelerator request (before, any node pool of it was one)."""
    (tmp_path / ".git").mkdir()
    mod = tmp_path / "modules" / "gke"
    mod.mkdir(parents=True)
    (mod / "main.tf").write_text(
        'variable "node_pools" { default = [] }\n'
        "locals {\n  node_pool_names = [for np in toset(var.node_pools) : np.name]\n"
        "  node_pools = zipmap(local.node_pool_names, tolist(toset(var.node_pools)))\n}\n"
        'resource "google_container_node_pool" "pools" {\n  for_each = local.node_pools\n  name = each.key\n'
        '  location = "us-central1-a"\n  autoscaling {\n    min_node_count = lookup(each.value, "min_count", 1)\n'
        '    max_node_count = lookup(each.value, "max_count", 100)\n  }\n'
        '  node_config {\n    machine_type = lookup(each.value, "machine_type", "e2-medium")\n  }\n}\n'
    )
    (tmp_path / "main.tf").write_text(
        'module "gke" {\n  source = "./modules/gke"\n  node_pools = [\n'
        '    { name = "gpu", machine_type = "a2-highgpu-8g", min_count = 0, max_count = 4 },\n'
        '    { name = "cpu", machine_type = "n2-standard-8" },\n  ]\n}\n'
    )
    out = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(tmp_path)).out)
    got = {r["source"]["address"]: r["request"] for r in out["results"]}
    assert list(got) == ['module.gke.google_container_node_pool.pools["gpu"]']
    gpu = got['module.gke.google_container_node_pool.pools["gpu"]']
    assert (gpu["accelerator"], gpu["count"], gpu["replicas_min"], gpu["replicas_max"]) == ("a100-40gb", 8, 0, 4)


def test_a_node_pool_location_decided_by_an_expression(tmp_path: Path) -> None:
    """NVIDIA/nvidia-terraform-modules gke/main.tf: ``location = length(var.node_zones) == 1 ? one(var.node_zones) :
    var.region``. Before: one() was not evaluated and the pool silently read as regional (3 zones: 6..15 nodes); now it is
    zonal (2..5), and a location that cannot be read is said (its count is per zone) rather than taken as a region."""
    f = tmp_path / "main.tf"
    body = ('resource "google_container_node_pool" "gpu" {{\n  location = {loc}\n  node_count = 2\n'
            '  autoscaling {{\n    min_node_count = 2\n    max_node_count = 5\n  }}\n'
            '  node_config {{\n    machine_type = "n1-standard-4"\n    guest_accelerator {{\n      type = "nvidia-tesla-t4"\n'
            '      count = 1\n    }}\n  }}\n}}\n')
    f.write_text('variable "region" { default = "us-west1" }\nvariable "node_zones" { default = ["us-west1-b"] }\n'
                 + body.format(loc="length(var.node_zones) == 1 ? one(var.node_zones) : var.region"))
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]
    assert (res["request"]["replicas_min"], res["request"]["replicas_max"]) == (2, 5)
    f.write_text(body.format(loc="data.google_compute_zones.z.names[0]"))
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]
    assert any("location" in x["message"] for x in res["findings"] if x["rule"] == "request-unresolved")


def test_one_attribute_not_read_does_not_drop_the_node_groups(tmp_path: Path) -> None:
    """aws-samples/aws-do-eks eks-p6-b200: eks_managed_node_groups = merge({sys = {..., subnet_ids = [module output]}},
    cond ? {gpu = {p6-b200.48xlarge, 0..128, CAPACITY_BLOCK}} : {}). Before: the one module output made the whole map
    unresolved and the run said only 'cannot be evaluated' (up to 1,024 B200, exit 0). Now that attribute alone is."""
    f = tmp_path / "main.tf"
    f.write_text(
        'variable "kind" { default = "managed" }\nlocals {\n  subnet = module.vpc.private_subnets[0]\n}\n'
        'module "eks" {\n  source = "terraform-aws-modules/eks/aws"\n  eks_managed_node_groups = merge({\n'
        '    sys = { instance_types = ["m5.large"], min_size = 1, max_size = 2, desired_size = 1, subnet_ids = [local.subnet] }\n'
        '  }, var.kind == "managed" ? {\n    gpu = { instance_types = ["p6-b200.48xlarge"], capacity_type = "CAPACITY_BLOCK",\n'
        '            min_size = 0, max_size = 128, desired_size = 2 }\n  } : {})\n}\n'
    )
    [res] = json.loads(run_cli("check", "--no-config", "--format", "json", "--fail-on", "never", str(f)).out)["results"]
    req = res["request"]
    got = (req["accelerator"], req["count"], req["replicas_min"], req["replicas_max"], req["pricing"])
    assert got == ("b200", 8, 0, 128, "reservation")
