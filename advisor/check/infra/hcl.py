"""Terraform HCL source (``*.tf``)."""

from __future__ import annotations

from advisor.check.infra.model import Parsed
from advisor.check.infra.names import NameIndex


def parse(path: str, text: str, index: NameIndex) -> Parsed:
    return Parsed("terraform-hcl", notes=["Terraform HCL source: recognised, not read (variables, modules and "
                                         "expressions resolve only at plan time); give the plan JSON: "
                                         "terraform plan -out plan.out && terraform show -json plan.out > plan.json"])
