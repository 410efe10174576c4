"""Read one infrastructure file of a recognised kind into requests (or say why it is skipped)."""

from __future__ import annotations

from advisor.check.infra.model import Parsed
from advisor.check.infra.names import NameIndex
from advisor.errors import InputError
from advisor.yamlsrc import Document

MAX_MANIFEST_NODES = 500_000


def read_json(path: str, index: NameIndex) -> Parsed:
    from advisor.check.infra import jsonsrc, tfplan

    data, text = jsonsrc.load_json_file(path)
    if tfplan.is_plan(data):
        return tfplan.parse(path, text, data, index)
    if isinstance(data, dict) and isinstance(data.get("results"), list) and "advisor_version" in data:
        return Parsed("other", notes=["an 'advisor check --format json' result (use it with --baseline)"])
    return Parsed("other", notes=["JSON that is not a Terraform plan (no format_version / resource_changes)"])


def read_hcl(path: str, index: NameIndex) -> Parsed:
    from advisor.yamlsrc import read_text

    read_text(path)  # unreadable or binary files are still input errors
    return Parsed("terraform-hcl", notes=["Terraform HCL source: recognised, not read (variables, modules and "
                                         "expressions resolve only at plan time); give the plan JSON: "
                                         "terraform plan -out plan.out && terraform show -json plan.out > plan.json"])


def read_yaml(docs: list[Document], kinds: list[str], index: NameIndex) -> Parsed:
    if "kubernetes" in kinds:
        from advisor.check.infra import k8s

        parsed = k8s.parse(docs, index)
    elif "skypilot" in kinds:
        from advisor.check.infra import skypilot

        parsed = skypilot.parse(docs, index)
    else:  # pragma: no cover - the caller decides
        raise InputError.single(docs[0].path, 1, 1, "not an infrastructure file")
    if not parsed.requests and not parsed.autoscalers:
        what = "Kubernetes manifest" if parsed.kind == "kubernetes" else "SkyPilot task"
        parsed.notes.append(f"{what} without accelerator requests")
    return parsed
