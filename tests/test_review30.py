"""Review 30: an attack on the gate's and the setup's changes of review 29 (tests/test_hostile_review29.py), and the
false errors they brought to ordinary repositories and profiles."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli
from .test_hostile_review29 import _check, _repo

_TF = """variable bare {
  sensitive = !!true
  default = 1
}

locals {
  a = "OPEN"
}

resource "google_container_node_pool" "gpu" {
  name       = "gpu"
  cluster    = "c"
  node_count = 4
  node_config {
    machine_type = "a4-highgpu-8g"
    guest_accelerator {
      type  = "nvidia-b200"
      count = 8
    }
  }
}

locals {
  b = "CLOSE"
}
"""


def test_a_comment_marker_inside_an_interpolated_string_hides_nothing(tmp_path: Path) -> None:
    """A file python-hcl2 cannot parse (!!true) is scanned for resources without parsing: "${"/*"}" before the pool
    and "${"*/"}" after it were read as one comment around it (the string ended at the quote inside ${ }), and the
    gate passed 32 B200 (exit 0)."""
    for name, (a, b) in {"interpolated": ('${"/*"}', '${"*/"}'), "directive": ('%{ if true }/*%{ endif }', '*/')}.items():
        repo = _repo(tmp_path / name, {"main.tf": _TF.replace("OPEN", a).replace("CLOSE", b)})
        code, out = _check(tmp_path / name, repo)
        assert code == 1 and "policy-" in out, (name, out)


def test_real_region_ids_and_on_prem_sites_are_no_input_error(tmp_path: Path) -> None:
    """OCI's UK Government regions, Azure's eastus2euap, AWS's European Sovereign Cloud and an on-prem site's name
    were refused with exit 2 ('a region of no cloud'). They are said in the verdict's warnings now; only a pin that
    no allowed cloud has stays an input error."""
    cases = {"uk-gov-london-1": "[oci]", "eastus2euap": "[azure]", "eusc-de-east-1": "[aws]", "berlin-dc-2": "[on-prem]"}
    for region, clouds in cases.items():
        f = tmp_path / f"{region}.yaml"
        f.write_text(f"name: r\ntask: training\nmodel: {{params_b: 1}}\ntraining: {{tokens_b: 1}}\n"
                     f"deployment: {{clouds: {clouds}, regions: [{region}]}}\n")
        r = run_cli("recommend", str(f), "--format", "json")
        assert r.code == 0, (region, r.err)
        assert any(f"{region} is not a region the advisor knows" in w for w in json.loads(r.out)["warnings"]), region


def test_ordinary_monitoring_jsonnet_is_skipped_not_refused(tmp_path: Path) -> None:
    """kube-prometheus computes limits from requests (limits: self.requests + { cpu: '250m' }): review 29's Jsonnet
    check refused it (exit 2); a computed field name in limits still stops the run."""
    app = ("{ apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: { spec: { containers: [{ name: 'c', image: 'x',"
           " resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: self.requests + { cpu: '250m' } } }] } } } }\n")
    repo = _repo(tmp_path, {"main.jsonnet": app})
    code, out = _check(tmp_path, repo)
    assert code == 0 and "names no accelerator" in " ".join(out.split()), out
