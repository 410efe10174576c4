"""Kubernetes objects a Terraform configuration applies: ``kubectl_manifest`` (``yaml_body``, YAML text or a heredoc),
``kubernetes_manifest`` (``manifest``, the object as an HCL object) and the Kubernetes provider's own workload resources
(``kubernetes_deployment``, ``kubernetes_stateful_set``, ``kubernetes_job``, ... and their ``_v1`` names, whose blocks are
the object's fields in snake_case); a manifest in a file of the repository (``file(...)``, ``templatefile(...)``, with or
without ``yamldecode``) is read from it, the template's settled vars filled in. Each object is read by the Kubernetes
reader, its requests at the resource's line, addressed ``RESOURCE/KIND/NAMESPACE/NAME``. A manifest the source does not
settle (a variable, a file outside the repository) that names an accelerator resource is a request of unknown hardware,
request-unresolved, never passed over."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from advisor.check.infra.model import Parsed, Request
from advisor.check.infra.names import NameIndex
from advisor.errors import InputError

MANIFESTS = {"kubectl_manifest": "yaml_body", "kubernetes_manifest": "manifest"}
NATIVE = {  # the Kubernetes provider's resource -> (apiVersion, kind)
    f"kubernetes_{name}{v}": kind
    for name, kind in (
        ("deployment", ("apps/v1", "Deployment")), ("stateful_set", ("apps/v1", "StatefulSet")),
        ("daemonset", ("apps/v1", "DaemonSet")), ("daemon_set", ("apps/v1", "DaemonSet")), ("job", ("batch/v1", "Job")),
        ("cron_job", ("batch/v1", "CronJob")), ("pod", ("v1", "Pod")), ("replication_controller", ("v1", "ReplicationController")),
    )
    for v in ("", "_v1")
}
TYPES = set(MANIFESTS) | set(NATIVE)
MAX_TEXT = 1024 * 1024  # a manifest's YAML text, as for a values file
# blocks that are lists in the object (the provider writes one block per item, singular); every other block is one object
_PLURAL = {
    "container": "containers", "init_container": "initContainers", "toleration": "tolerations", "volume": "volumes",
    "node_selector_term": "nodeSelectorTerms", "match_expressions": "matchExpressions", "port": "ports", "env": "env",
    "volume_mount": "volumeMounts", "env_from": "envFrom", "image_pull_secrets": "imagePullSecrets",
    "preferred_during_scheduling_ignored_during_execution": "preferredDuringSchedulingIgnoredDuringExecution",
    "topology_spread_constraint": "topologySpreadConstraints", "host_aliases": "hostAliases",
}
_MAPS = {"labels", "annotations", "node_selector", "limits", "requests", "match_labels"}  # keys kept as written
_HUMP = re.compile(r"_([a-z0-9])")
_ACCELERATOR = re.compile(r"nvidia\.com/gpu|amd\.com/gpu|google\.com/tpu|aws\.amazon\.com/neuron|gke-accelerator|gke-tpu")


# the fields that decide what an object asks for (its count, its chips, where they run); a label or a dependency does not
_SIZING = re.compile(r"(?:^|\.)(?:count|for_each|yaml_body|manifest|replicas|parallelism|completions|node_selector|affinity|"
                     r"resources|limits|requests|container|containers)(?:\.|$)")


def sizes(field: str) -> bool:
    """Whether a field the source does not settle can change what the object asks for."""
    return bool(_SIZING.search(field)) and not field.split(".")[-1].endswith("labels")


def _camel(key: str) -> str:
    return _HUMP.sub(lambda m: m.group(1).upper(), key)


def _object(v: Any, depth: int = 0) -> Any:
    """A provider block tree as the Kubernetes object: keys in camelCase, one-item blocks as objects, plural blocks as
    lists under their plural name, maps (labels, limits, node_selector) as written."""
    if depth > 64:
        return None
    if isinstance(v, list):
        return [_object(x, depth + 1) for x in v]
    if not isinstance(v, dict):
        return v
    out: dict[str, Any] = {}
    for k, x in v.items():
        if k in _MAPS:
            out[_camel(k)] = x[0] if isinstance(x, list) and len(x) == 1 and isinstance(x[0], dict) else x
        elif k in _PLURAL:
            out[_PLURAL[k]] = _object(x if isinstance(x, list) else [x], depth + 1)
        elif isinstance(x, list) and len(x) == 1 and isinstance(x[0], dict):
            out[_camel(k)] = _object(x[0], depth + 1)
        else:
            out[_camel(k)] = _object(x, depth + 1)
    return out


_CALL = re.compile(r"(templatefile|file)\((.*)\)", re.S)
_TEMPLATE_REF = re.compile(r"\$\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}")


def _call(value: Any, load: Callable[[str], Any]) -> tuple[str, list[Any]] | bool:
    """``value`` as ``file(PATH)`` / ``templatefile(PATH, {vars})`` (inside ``yamldecode(...)`` or not): (the function,
    its arguments); True where it is such a call whose arguments the HCL reader does not read; False where it is none."""
    call = value.strip() if isinstance(value, str) else ""
    if not (call.startswith("${") and call.endswith("}")):
        return False
    call = call[2:-1].strip()
    if call.startswith("yamldecode(") and call.endswith(")"):
        call = call[len("yamldecode("):-1].strip()
    m = _CALL.fullmatch(call)
    if m is None:
        return False
    try:
        args = load("x = [" + m.group(2) + "]").get("x")
    except Exception:  # the HCL reader's own errors: not settled here
        return True
    return (m.group(1), args) if isinstance(args, list) and args else True


def _template(value: str, path: str, load: Callable[[str], Any], resolve: Callable[[Any], Any]) -> str | None:
    """The text of ``file(PATH)`` / ``templatefile(PATH, {vars})`` (inside ``yamldecode(...)`` or not) where PATH
    evaluates (``${path.module}/...``, a local) to a file of the repository: each ``${name}`` of a var the source settles
    replaced by its value, the others left as placeholders (read as unresolved where they count). None otherwise."""
    from advisor.check.files import boundary, escapes

    parsed = _call(value, load)
    if not isinstance(parsed, tuple):
        return None
    func, args = parsed
    where = resolve(args[0])
    if not isinstance(where, str) or "${" in where:
        return None
    where = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), where))
    if escapes(where, os.path.realpath(boundary(path))) or not os.path.isfile(where):
        return None
    try:
        with open(where, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_TEXT + 1)
    except OSError:
        return None
    if len(text) > MAX_TEXT:
        return None
    given = resolve(args[1]) if func == "templatefile" and len(args) > 1 else {}
    settled = {k: v for k, v in given.items() if isinstance(v, (str, int, float, bool))} if isinstance(given, dict) else {}

    def fill(ref: re.Match[str]) -> str:
        v = settled.get(ref.group(1))
        return ref.group(0) if v is None else (str(v).lower() if isinstance(v, bool) else str(v))

    return _TEMPLATE_REF.sub(fill, text) if func == "templatefile" else text


_TEMPLATE_SUFFIXES = (".tftpl", ".tpl", ".yaml", ".yml", ".json", ".tmpl")
MAX_TEMPLATE_FILES = 200  # files of a module's directory looked at for an unsettled template path


def template_path_unsettled(value: Any, load: Callable[[str], Any], resolve: Callable[[Any], Any]) -> bool:
    """Whether ``value`` applies ``file(PATH)`` / ``templatefile(PATH, ...)`` (inside ``yamldecode`` or not) with a PATH
    the source does not settle to a string (a path it settles, in the repository or not, is read or refused as such)."""
    parsed = _call(value, load)
    if not isinstance(parsed, tuple):
        return parsed
    where = resolve(parsed[1][0])
    return not isinstance(where, str) or "${" in where


def unsettled_templates(path: str) -> list[str]:
    """Files of the module's directory (and its subdirectories, within the repository) that name an accelerator
    resource, where the source applies ``templatefile(PATH)`` / ``file(PATH)`` with a PATH it does not settle (a
    conditional local, ``each.value`` of a ``fileset``): any of them may be the manifest, so its accelerators are never
    passed over (review 21, F2: ai-on-gke's inference servers ask nvidia.com/gpu through such templates)."""
    from advisor.check.files import boundary, escapes

    top = os.path.dirname(os.path.abspath(path))
    limit = os.path.realpath(boundary(path))
    found: list[str] = []
    seen = 0
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not escapes(os.path.join(root, d), limit))
        if root.count(os.sep) - top.count(os.sep) >= 3:
            dirs[:] = []
        for name in sorted(files):
            if not name.endswith(_TEMPLATE_SUFFIXES):
                continue
            seen += 1
            if seen > MAX_TEMPLATE_FILES:  # not all read: never taken for none (200 decoys before the GPU template)
                return found or [f"(more than {MAX_TEMPLATE_FILES} template files, not all read)"]
            full = os.path.join(root, name)
            if escapes(full, limit) or not os.path.isfile(full):
                continue
            try:
                with open(full, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(MAX_TEXT)
            except OSError:
                continue
            if _ACCELERATOR.search(text):
                found.append(os.path.relpath(full, top))
    return found


def manifest(rtype: str, after: dict[str, Any], raw: Any, load: Callable[[str], Any], path: str, address: str,
             at: tuple[int, int], resolve: Callable[[Any], Any]) -> Any:
    """The Kubernetes object a resource applies: the provider's blocks as the object; an HCL object; YAML text (a heredoc
    or a plain string, read and refused as a manifest file is, its errors at the resource's line); ``yamlencode({...})`` /
    ``jsonencode({...})`` of an object literal (in ``raw``, the source, for it is no literal). None where the source does
    not settle it (a variable, several documents); the text of a template it does not settle (directives, YAML only once
    rendered), searched by the caller for an accelerator resource."""
    if rtype in NATIVE:
        api, kind = NATIVE[rtype]
        body = _object({k: v for k, v in after.items() if k in ("metadata", "spec")})
        return {"apiVersion": api, "kind": kind, **body} if isinstance(body, dict) else None
    field = MANIFESTS[rtype]
    value = after.get(field)
    if value is None and isinstance(raw, dict) and isinstance(raw.get(field), str):
        value = raw[field]
    if isinstance(value, dict) or not isinstance(value, str) or len(value) > MAX_TEXT:
        return value if isinstance(value, dict) else None
    from advisor.check.infra.releases import tf_text, tf_values
    from advisor.yamlsrc import load_documents

    text = tf_text(value)
    if text is None:  # file(...) / templatefile(...) of a file of the repository: the text Terraform renders, not
        # the author's YAML, so a template it does not settle (directives, an expression breaking the YAML) is unsettled
        templated = _template(value, path, load, resolve)
        if templated is None:
            return tf_values(value, load)
        if "%{" in templated:
            return templated
        try:
            docs = load_documents(templated, path)
        except InputError:
            return templated
        return docs[0].data if len(docs) == 1 else templated
    try:
        docs = load_documents(text, path)
    except InputError as exc:
        raise InputError.single(path, *at, f"{address}: {field}: {exc.problems[0].message}") from None
    return docs[0].data if len(docs) == 1 else None


def requests(
    path: str, rtype: str, address: str, after: dict[str, Any], raw: Any, at: tuple[int, int], index: NameIndex,
    load: Callable[[str], Any], resolve: Callable[[Any], Any],
) -> Parsed:
    """The requests (and autoscalers) of the object one resource instance applies, at ``at``. ``raw``: the resource's
    source, searched for an accelerator resource where the object is not settled."""
    from advisor.check.infra import k8s
    from advisor.yamlsrc import load_documents

    out = Parsed("terraform-hcl")
    obj = manifest(rtype, after, raw, load, path, address, at, resolve)
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        field = MANIFESTS.get(rtype, "spec")
        value = after.get(field) if isinstance(after.get(field), str) else raw.get(field) if isinstance(raw, dict) else None
        candidates = unsettled_templates(path) if obj is None and template_path_unsettled(value, load, resolve) else []
        if _ACCELERATOR.search(str(raw)) or (isinstance(obj, str) and _ACCELERATOR.search(obj)) or candidates:
            req = Request(path, "terraform-hcl", address, *at)
            req.hardware, req.count = None, None
            req.unknown = f"the Kubernetes object {field} applies is not settled in the source ({str(raw.get(field))[:60]})" \
                if isinstance(raw, dict) else "the Kubernetes object is not settled in the source"
            if candidates:
                req.notes.append(f"its template path is not settled; {', '.join(candidates[:4])} of the module's files "
                                 "name an accelerator resource")
            req.unresolved.append((field, str(raw.get(field) if isinstance(raw, dict) else raw)[:80], at))
            out.requests.append(req)
        return out
    try:
        docs = load_documents(json.dumps(obj, default=str), path)
        got = k8s.parse(docs, index)
    except InputError as exc:  # a position inside the generated object means nothing to the reader: the resource's
        raise InputError.single(path, *at, f"{address}: {exc.problems[0].message}") from None
    for req in got.requests:
        req.address = f"{address}/{req.address}"
        req.line, req.col, req.where = at[0], at[1], {}
        req.unresolved = [(f, v, at) for f, v, _ in req.unresolved]
        req.notes.append(f"a Kubernetes {obj['kind']} applied by Terraform's {rtype}")
    for scaler in got.autoscalers:
        scaler.pos = at
    out.requests, out.autoscalers = got.requests, got.autoscalers
    return out
