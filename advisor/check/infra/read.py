"""Read one file into workload profiles and infrastructure requests (or say why it is skipped).

Every YAML document and every JSON file is classified on its own (``sniff.doc_kind``): profiles
are validated and judged, Kubernetes manifests and SkyPilot tasks read, anything else named in
the skip reason. A file's proposal is judged whatever else the file holds.
"""

from __future__ import annotations

import os
from typing import Any

from advisor.check.infra.model import Parsed, Request
from advisor.check.infra.names import NameIndex, names_hardware
from advisor.check.infra.sniff import doc_kind
from advisor.errors import InputError
from advisor.loading import LoadedProfile, profiles_from_docs
from advisor.yamlsrc import MAX_BYTES, STDIN, Document, load_documents, read_text

MAX_MANIFEST_NODES = 500_000
MAX_YAML_BYTES = 8 * 1024 * 1024


def read_json(path: str, index: NameIndex) -> tuple[list[LoadedProfile], Parsed]:
    from advisor.check.infra import jsonsrc, tfplan

    text = read_text(path, max_bytes=jsonsrc.MAX_JSON_BYTES)
    try:
        data = jsonsrc.loads(text, path)
    except InputError as exc:
        stream = _json_stream(path, text) or _yaml_in_json(path, text)
        if stream is not None:  # values back to back (JSON Lines; kubectl apply reads each object), or YAML (kubectl
            # decodes a file by its content, not its name): each a document
            kinds = [doc_kind(d.data) for d in stream]
            if all(k.startswith("other") for k in kinds) and not names_hardware(text, index):
                return [], Parsed("other", notes=[f"{len(stream)} JSON or YAML values that name no accelerator: nothing to judge"])
            return _split(path, stream, kinds, index, len(text))
        if path != STDIN and _not_json_syntax(text) and not names_hardware(text, index):
            # a .json file that is no JSON (a log of JSON lines, comments as in tsconfig / devcontainer files)
            # and names no accelerator: not a proposal, and not a reason to stop the gate
            p = exc.problems[0]
            return [], Parsed("other", notes=[f"not JSON ({p.line}:{p.col}: {p.message[:80]}) and names no accelerator: nothing to judge"])
        raise
    if tfplan.is_plan(data):
        return [], tfplan.parse(path, text, data, index)
    if path.endswith((".tf.json", ".tofu.json")) and isinstance(data, dict):
        return [], tf_json(path, text, data, index)
    if isinstance(data, dict) and isinstance(data.get("results"), list) and "advisor_version" in data:
        return [], Parsed("other", notes=["an 'advisor check --format json' result (use it with --baseline)"])
    kind = doc_kind(data)
    if kind.startswith("other"):
        return [], Parsed(
            "other",
            notes=[
                "JSON that is neither a Terraform plan (no format_version / resource_changes), a workload profile, a Kubernetes manifest "
                "nor a SkyPilot task"
            ],
        )
    docs = _json_documents(path, text, data)
    return _split(path, docs, [kind] * len(docs), index, len(text))


MAX_TF_JSON_BLOCKS = 1000


def _json_blocks(v: Any, depth: int = 0) -> list[tuple[Any, Any]]:
    """(label, body) pairs of one level of Terraform's JSON syntax: an object, or an array of objects, which the syntax
    takes at every block level (https://developer.hashicorp.com/terraform/language/syntax/json: review 29's
    {"resource": [{...}]} was read as no resource)."""
    if isinstance(v, dict):
        return list(v.items())
    if isinstance(v, list) and depth < 4:
        return [kv for x in v[:MAX_TF_JSON_BLOCKS + 1] for kv in _json_blocks(x, depth + 1)]
    return []


def tf_json(path: str, text: str, data: dict[str, Any], index: NameIndex) -> Parsed:
    """Terraform's JSON syntax (``*.tf.json``, loaded by ``terraform plan`` like ``*.tf``): not evaluated here, so it fails
    closed: each resource of a type the gate reads, and each one (or module call) whose attributes name a machine with
    accelerators, is a request whose count is not read (request-unresolved), the hardware where a machine name says it."""
    from advisor.check.infra import tfplan

    out = Parsed("terraform-hcl")
    blocks: list[tuple[str, str, Any]] = []
    for rtype, named in _json_blocks(data.get("resource")):
        for name, body in _json_blocks(named):
            blocks.append((str(rtype), str(name), body))
    for name, body in _json_blocks(data.get("module")):
        blocks.append(("module", str(name), body))
    if len(blocks) > MAX_TF_JSON_BLOCKS:  # not all read: the file fails closed as a whole
        req = Request(path, "terraform-hcl", f"{len(blocks):,} blocks", 1, 1)
        req.hardware, req.unknown = "Terraform JSON", f"more than {MAX_TF_JSON_BLOCKS:,} blocks: not read"
        req.unresolved.append(("count-unknown", req.unknown, (1, 1)))
        out.requests.append(req)
    for rtype, name, body in blocks[:MAX_TF_JSON_BLOCKS]:
        machine = tfplan.machine_named(index, body)
        if machine is None and rtype not in tfplan.READ:
            continue
        address = f"module.{name}" if rtype == "module" else f"{rtype}.{name}"
        at = text.find(f'"{name}"')
        line = text.count("\n", 0, at) + 1 if at >= 0 else 1
        req = Request(path, "terraform-hcl", address, line, 1)
        why = ("Terraform's JSON syntax (.tf.json) is not evaluated here: how many this asks for is not read; check the plan "
               "JSON (terraform show -json) instead")
        if machine is not None:
            tfplan.unread_request(req, index, machine, why)
        else:
            req.hardware, req.unknown = rtype, "a Terraform JSON resource of a type that buys accelerators: not evaluated here"
            req.unresolved.append(("count-unknown", why, (line, 1)))
        out.requests.append(req)
    if not out.requests:
        out.notes.append("Terraform JSON (.tf.json) without accelerator resources")
    return out


def _json_stream(path: str, text: str) -> list[Document] | None:
    """The documents of a stream of two or more JSON values, None where the text is no such stream."""
    from advisor.check.infra import jsonsrc

    try:
        values = jsonsrc.loads_stream(text, path)
    except InputError:
        return None
    if len(values) < 2:
        return None
    return [Document(path, i, value, (line, col)) for i, (value, line, col) in enumerate(values)]


def _yaml_in_json(path: str, text: str) -> list[Document] | None:
    """The documents of a .json file that is YAML (kubectl reads a manifest by its content: ``kind: Job`` in app.json is
    applied), None where it is not YAML either or holds no mapping."""
    if path == STDIN or text.lstrip("\ufeff \t\r\n")[:1] in ("{", "["):
        return None  # JSON by its first character: kubectl decodes it as JSON, and so its errors are JSON's
    try:
        docs = [d for d in load_documents(text, path, max_nodes=MAX_MANIFEST_NODES) if d.data is not None]
    except InputError:
        return None
    return docs if docs and any(isinstance(d.data, dict) for d in docs) else None


def _json_documents(path: str, text: str, data: Any) -> list[Document]:
    """JSON as documents with positions (JSON is YAML: the YAML reader gives the positions);
    when the YAML reader refuses it (tabs in odd places), the data without positions."""
    try:
        docs = load_documents(text, path, max_nodes=MAX_MANIFEST_NODES)
        if len(docs) == 1 and docs[0].data == data:
            return docs
    except InputError:
        pass
    return [Document(path, 0, data, (1, 1))]


def read_hcl(path: str, index: NameIndex) -> Parsed:
    from advisor.check.infra import hcl

    return hcl.parse(path, read_text(path, max_bytes=MAX_YAML_BYTES), index)


def _not_json_syntax(text: str) -> bool:
    """Whether the text is no JSON by its syntax (a log of JSON lines, comments), not by one of the reader's
    bounds or refusals (depth, NaN, huge integers, duplicate keys: those stay input errors)."""
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return False




def template_hint(text: str, exc: InputError) -> InputError:
    """A YAML error next to an unrendered ``{{ }}`` / ``${ }`` placeholder says so, and what to do."""
    lines = text.splitlines()
    p = exc.problems[0]
    near = "\n".join(lines[max(0, p.line - 2) : p.line + 1])
    if "{{" in near or "${" in near:
        hint = (
            "; an unrendered template placeholder ({{ }} / ${ }) is here: render the file first "
            "(helm template, envsubst, kustomize) or leave it out with --exclude"
        )
        return InputError([type(p)(p.path, p.line, p.col, p.message + hint), *exc.problems[1:]])
    return exc


def split(path: str, docs: list[Document], kinds: list[str], index: NameIndex, size: int) -> tuple[list[LoadedProfile], Parsed]:
    return _split(path, docs, kinds, index, size)


def _split(path: str, docs: list[Document], kinds: list[str], index: NameIndex, size: int) -> tuple[list[LoadedProfile], Parsed]:
    profiles = [d for d, k in zip(docs, kinds, strict=True) if k == "profile"]
    parts = {what: [d for d, k in zip(docs, kinds, strict=True) if k == what] for what in READERS}
    others = [k.removeprefix("other: ") for k in kinds if k.startswith("other: ")]
    loaded: list[LoadedProfile] = []
    problems = []
    if profiles:
        if size > MAX_BYTES:
            raise InputError.single(path, 1, 1, f"file is larger than the {MAX_BYTES}-byte limit for workload profiles")
        try:
            loaded = profiles_from_docs(path, profiles)
        except InputError as exc:
            problems += exc.problems
    out = Parsed(next((what for what in READERS if parts[what]), "other"))
    for what, part in parts.items():
        if not part:
            continue
        try:
            got = _parse(what, part, index)
        except InputError as exc:
            problems += exc.problems
            continue
        out.requests += got.requests
        out.autoscalers += got.autoscalers
        out.notes += got.notes
        if not got.requests and not got.autoscalers:
            out.notes.append(f"{READERS[what][0]} without accelerator requests")
    if problems:
        raise InputError(problems)
    out.releases = _releases(path, docs, kinds)
    out.requests += _remote_releases(path, docs, kinds)
    out.builds = _builds(path, docs, kinds)
    out.notes += list(dict.fromkeys(others))
    return loaded, out


_RELEASE_KINDS = ("Application", "ApplicationSet", "HelmRelease")


def _remote_releases(path: str, docs: list[Document], kinds: list[str]) -> list[Any]:
    """Releases of charts from a Helm repository whose values ask for accelerators (releases.remote_requests)."""
    maybe = [d for d, k in zip(docs, kinds, strict=True) if (k == "kubernetes" and d.data.get("kind") in _RELEASE_KINDS)
             or (k.startswith("other") and isinstance(d.data, dict) and "releases" in d.data)]
    if not maybe:
        return []
    from advisor.check.files import boundary
    from advisor.check.infra import releases

    root = boundary(path) if path != "-" else os.getcwd()
    return [r for d in maybe for r in releases.remote_requests(d, root)]


def _builds(path: str, docs: list[Document], kinds: list[str]) -> list[Document]:
    """Argo CD Applications and Flux Kustomizations that build a kustomization of the repository with overrides of their
    own (releases.kustomize_overrides): built after the files (advisor.check.infra.kustomize.read_overrides)."""
    maybe = [d for d, k in zip(docs, kinds, strict=True)
             if k == "kubernetes" and d.data.get("kind") in ("Application", "ApplicationSet", "Kustomization")]
    if not maybe or path == "-":
        return []
    from advisor.check.infra import releases

    return [d for d in maybe if releases.kustomize_overrides(d.data)]


def _releases(path: str, docs: list[Document], kinds: list[str]) -> list[Any]:
    """Argo CD Applications, Flux HelmReleases and helmfile releases of a chart in the repository
    (advisor.check.infra.releases), read only where a document may be one."""
    maybe = [
        d
        for d, k in zip(docs, kinds, strict=True)
        if (k == "kubernetes" and d.data.get("kind") in _RELEASE_KINDS)
        or (k.startswith("other") and isinstance(d.data, dict) and "releases" in d.data)
    ]
    if not maybe or path == "-":
        return []
    from advisor.check.files import boundary
    from advisor.check.infra import releases

    root = boundary(path)
    out: list[Any] = []
    for d in maybe:
        out += releases.from_helmfile(d, root) if releases.is_helmfile(d.data) else releases.from_manifest(d, root)
    return out


# The readers of YAML documents, by the kind advisor.check.infra.sniff.doc_kind gives them: what the kind is called
# in a note, and the module whose parse(docs, index) reads it (imported when a file holds that kind)
READERS: dict[str, tuple[str, str]] = {
    "kubernetes": ("Kubernetes manifest", "advisor.check.infra.k8s"),
    "skypilot": ("SkyPilot task", "advisor.check.infra.skypilot"),
    "dstack": ("dstack configuration", "advisor.check.infra.dstack"),
    "ray": ("Ray cluster config", "advisor.check.infra.raycluster"),
    "blueprint": ("Cluster Toolkit blueprint", "advisor.check.infra.blueprint"),
    "cloudformation": ("CloudFormation template", "advisor.check.infra.cfn"),
}


def _parse(what: str, docs: list[Document], index: NameIndex) -> Parsed:
    import importlib

    parsed: Parsed = importlib.import_module(READERS[what][1]).parse(docs, index)
    return parsed
