"""AWS CloudFormation templates (YAML with its short-form tags, read as ``{"!Ref": X}``; JSON, a CDK synth output,
SAM): the resources that buy accelerators, each read by the Terraform plan reader of the resource it is (CFN_TYPES), its properties in
snake_case, at its logical id. ``Ref`` to a parameter reads the parameter's ``Default``; a property that needs the
deployment (a parameter without a default, ``Fn::GetAtt``, ``Fn::ImportValue``, a condition) is request-unresolved or,
where it names the hardware, a request of unknown hardware, never guessed."""

from __future__ import annotations

import re
from typing import Any

from advisor.check.infra import tfplan
from advisor.check.infra.model import Parsed, Request
from advisor.check.infra.names import NameIndex
from advisor.yamlsrc import Document

# CloudFormation resource type -> the Terraform resource type whose reader reads its properties
CFN_TYPES: dict[str, str] = {
    "AWS::EC2::Instance": "aws_instance",
    "AWS::EC2::LaunchTemplate": "aws_launch_template",
    "AWS::EC2::CapacityReservation": "aws_ec2_capacity_reservation",
    "AWS::EKS::Nodegroup": "aws_eks_node_group",
    "AWS::AutoScaling::AutoScalingGroup": "aws_autoscaling_group",
    "AWS::SageMaker::EndpointConfig": "aws_sagemaker_endpoint_configuration",
    "AWS::SageMaker::NotebookInstance": "aws_sagemaker_notebook_instance",
}
_HARDWARE = {"instance_type", "instance_types"}
_PASCAL = re.compile(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z][a-z])")
_INT = re.compile(r"[0-9]{1,9}")
MAX_RESOURCES = 5_000


class _Unresolved:
    def __init__(self, expr: str) -> None:
        self.expr = expr


def _long_form(fn: Any) -> Any:
    """A short-form function as YAML's lenient read names it (``!Ref``, ``!Sub``, ``!Condition``) in its long form
    (``Ref``, ``Fn::Sub``, ``Condition``); any other key as it is."""
    if not isinstance(fn, str) or not fn.startswith("!"):
        return fn
    return fn[1:] if fn in ("!Ref", "!Condition") else "Fn::" + fn[1:]


def _snake(key: str) -> str:
    return _PASCAL.sub(lambda m: "_" + (m.group(1) or m.group(2)), key).lower()


def _resolve(v: Any, params: dict[str, Any], depth: int = 0) -> Any:
    """Properties with ``Ref`` to a parameter replaced by its Default and names in snake_case; what needs the
    deployment becomes _Unresolved. Whole numbers written as strings (CloudFormation's integers) are numbers."""
    if depth > 64:
        return _Unresolved("(nested too deep)")
    if isinstance(v, dict):
        if len(v) == 1:
            (fn, arg), = v.items()
            fn = _long_form(fn)
            if fn == "Ref":
                p = params.get(arg) if isinstance(arg, str) else None
                if isinstance(p, dict) and "Default" in p:
                    return _resolve(p["Default"], params, depth + 1)
                return _Unresolved(f"!Ref {arg}")
            if isinstance(fn, str) and (fn.startswith("Fn::") or fn == "Condition"):
                return _Unresolved(f"{fn} {str(arg)[:60]}")
        return {(_snake(k) if isinstance(k, str) else k): _resolve(x, params, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [_resolve(x, params, depth + 1) for x in v]
    if isinstance(v, str) and _INT.fullmatch(v):
        return int(v)
    return v


def _plain(v: Any, where: str, found: list[tuple[str, str]]) -> Any:
    """``v`` with every _Unresolved left out (None), each said in ``found`` as (field, expression)."""
    if isinstance(v, _Unresolved):
        found.append((where, v.expr))
        return None
    if isinstance(v, dict):
        return {k: _plain(x, f"{where}.{k}" if where else str(k), found) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, f"{where}[{i}]", found) for i, x in enumerate(v)]
    return v


def _references(node: Any, names: set[str], limit: int = 2_000, named: dict[str, str] | None = None) -> set[str]:
    """The logical ids of ``names`` that ``node`` refers to: ``Ref`` / ``!Ref NAME`` and ``Fn::GetAtt`` / ``!GetAtt
    NAME.Attr`` (a group's ``LaunchTemplateId: !Ref LT``, ``Version: !GetAtt LT.LatestVersionNumber``), and a
    launch template named by its literal ``LaunchTemplateName`` (``named``: that name -> its logical id)."""
    out: set[str] = set()
    for v in tfplan.values_of(node, limit):
        if isinstance(v, str) and named and v in named:
            out.add(named[v])
            continue
        if not isinstance(v, dict) or len(v) != 1:
            continue
        (fn, arg), = v.items()
        fn = _long_form(fn)
        target: Any = None
        if fn == "Ref" and isinstance(arg, str):
            target = arg
        elif fn == "Fn::GetAtt":
            target = arg.split(".")[0] if isinstance(arg, str) else (arg[0] if isinstance(arg, list) and arg else None)
        else:
            continue
        if isinstance(target, str) and target in names:
            out.add(target)
    return out


def parse(docs: list[Document], index: NameIndex) -> Parsed:
    out = Parsed("cloudformation")
    for doc in docs:
        out.requests += _stack(doc, index)
    return out


def _stack(doc: Document, index: NameIndex) -> list[Request]:
    """One template's requests. The resources read are read together, as one plan, so that a group (an Auto Scaling
    group, an EKS node group) takes its hardware from the launch template it refers to (``!Ref LT``) and counts it
    once, at the group's size, where the template alone would be read as one instance."""
    requests: list[Request] = []
    data = doc.data
    params = data.get("Parameters") if isinstance(data.get("Parameters"), dict) else {}
    resources = data.get("Resources") if isinstance(data.get("Resources"), dict) else {}
    by_addr: dict[str, dict[str, Any]] = {}
    pending: dict[str, tuple[list[tuple[str, str]], Any, str]] = {}  # logical id -> (unresolved, condition, rtype)
    refs: dict[str, set[str]] = {}
    names = {str(k) for k in list(resources)[:MAX_RESOURCES]}
    # launch templates by their literal LaunchTemplateName (a group may name one so instead of !Ref)
    named = {str(r["Properties"]["LaunchTemplateName"]): str(k) for k, r in list(resources.items())[:MAX_RESOURCES]
             if isinstance(r, dict) and r.get("Type") == "AWS::EC2::LaunchTemplate" and isinstance(r.get("Properties"), dict)
             and isinstance(r["Properties"].get("LaunchTemplateName"), str)}
    for logical, res in list(resources.items())[:MAX_RESOURCES]:
        rtype = CFN_TYPES.get(str(res.get("Type"))) if isinstance(res, dict) else None
        if rtype is None and isinstance(res, dict):
            # a type not read here (AWS::Batch::ComputeEnvironment, AWS::SageMaker::Cluster, AWS::EC2::EC2Fleet, ...)
            # whose properties name a machine with accelerators, parameter defaults included: failed closed
            raw = res.get("Properties") if isinstance(res.get("Properties"), dict) else {}
            # and the defaults of the parameters it refers to anywhere (inside an !If too)
            machine = tfplan.machine_named(index, [_resolve(raw, params), *_ref_defaults(raw, params)])
            if machine is not None:
                req = Request(doc.path, "cloudformation", str(logical), *doc.where(("Resources", logical)), cloud="aws")
                requests.append(tfplan.unread_request(req, index, machine, f"{res.get('Type')} is a resource type advisor "
                                                      f"does not read: it names {machine}, but how many it provisions is not read"))
            continue
        if rtype is None or not isinstance(res, dict):
            continue
        props: dict[str, Any] = res["Properties"] if isinstance(res.get("Properties"), dict) else {}
        if rtype == "aws_launch_template":
            props = props["LaunchTemplateData"] if isinstance(props.get("LaunchTemplateData"), dict) else {}
        found: list[tuple[str, str]] = []
        got_after = _plain(_resolve(props, params), "", found)
        after: dict[str, Any] = got_after if isinstance(got_after, dict) else {}
        if not isinstance(got_after, dict):  # Properties: !If [...]: which set applies is decided at deployment
            found = [("Properties", found[0][1] if found else "(set at deployment)")]
        if isinstance(after.get("tags"), list):  # [{Key, Value}] as the mapping Terraform has
            after["tags"] = {t.get("key"): t.get("value") for t in after["tags"] if isinstance(t, dict)}
        at = doc.where(("Resources", logical))
        hw = [(f, e) for f, e in found if f == "Properties" or f.split(".")[-1].split("[")[0] in _HARDWARE]
        if hw:  # the machine is chosen at deployment: a request of unknown hardware, never passed over
            req = Request(doc.path, "cloudformation", str(logical), *at)
            req.hardware, req.count = hw[0][1], None
            req.unknown = f"{hw[0][0]} is set when the stack is deployed ({hw[0][1]}), not in the template"
            req.unresolved += [(f, e, at) for f, e in found]
            requests.append(req)
            continue
        address = str(logical)
        by_addr[address] = {"address": address, "type": rtype, "at": at,
                            "change": {"actions": ["create"], "before": None, "after": after, "after_unknown": {}}}
        refs[address] = _references(res.get("Properties"), names - {address}, named=named if rtype != "aws_launch_template" else None)
        pending[address] = (found, res.get("Condition"), rtype)
    if not by_addr:
        return requests
    # a template names no region: a stack's is where it is deployed
    ctx = tfplan.at_position(doc.path, index, doc.start, None)
    ctx.refs = refs
    ctx.config_index = {a: [a] for a in by_addr}
    for req in tfplan.read_resources(ctx, by_addr, Parsed("cloudformation")).requests:
        req.kind = "cloudformation"
        found, condition, rtype = pending.get(req.address, ([], None, ""))
        at = by_addr[req.address]["at"] if req.address in by_addr else doc.start
        req.line, req.col = at
        req.unresolved += [(f, e, at) for f, e in found if _counts(f)]
        if condition:
            req.notes.append(f"created only where condition {condition} holds")
        req.notes.append(f"read as Terraform's {rtype}")
        requests.append(req)
    return requests


def _ref_defaults(node: Any, params: dict[str, Any], limit: int = 2_000) -> list[Any]:
    """The Default of every parameter ``node`` refers to (``{"Ref": NAME}`` or ``!Ref NAME``), wherever it sits."""
    out: list[Any] = []
    for v in tfplan.values_of(node, limit):
        ref = v.get("Ref", v.get("!Ref")) if isinstance(v, dict) else None  # the long form, or !Ref as the lenient reader keeps it
        p = params.get(ref) if isinstance(ref, str) else None
        if isinstance(p, dict) and "Default" in p:
            out.append(p["Default"])
    return out


def _counts(field: str) -> bool:
    """A property that sizes what is bought (a count, a scaling bound), whose unresolved value must be said."""
    return bool(re.search(r"count|size|capacity", field))
