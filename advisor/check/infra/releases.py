"""Releases of a chart kept in the repository, named elsewhere with their own values: an Argo CD
``Application`` (``spec.source`` / ``spec.sources``: ``path`` and ``helm.valueFiles`` /
``values`` / ``valuesObject`` / ``parameters``), a Flux ``HelmRelease`` (``spec.chart.spec.chart``
a path, ``spec.values``), a ``helmfile.yaml`` release (``chart`` a path, ``values`` files or
mappings, ``set``) and a Terraform ``helm_release`` (``chart`` a path, ``values`` ``file(...)`` or
YAML text, ``set`` blocks). A platform repository keeps the chart once and the production sizes in these
files: a pull request that raises a GPU count there changes nothing in the chart.

Only charts in the checkout are rendered (a path that holds a Chart.yaml inside the repository); a
chart from a Helm repository or OCI registry cannot be rendered here and is left to the plan or
the rendered manifests. What a reference names that is not read (Argo CD ``$values`` files, Flux
``valuesFrom``, helmfile ``.gotmpl`` values) is said on every request of the release.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from advisor.check.files import escapes
from advisor.check.infra.model import Pos, ReleaseRef, value_at
from advisor.errors import InputError
from advisor.yamlsrc import Document, KeyPath

MAX_REFS = 500  # release references in one file


def _set_path(values: dict[str, Any], dotted: str, value: Any) -> None:
    """``--set a.b=v`` / Argo CD parameters: a dotted name (``\\.`` a literal dot) sets a nested value."""
    parts = [p.replace("\0", ".") for p in dotted.replace("\\.", "\0").split(".")]
    node = values
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = node[p] = {}
        node = nxt
    node[parts[-1]] = _scalar(value)


def _sets(ref: ReleaseRef, entries: Any, pos: Pos, interpolated: bool = False) -> None:
    """``{name, value}`` entries (Argo CD parameters, helmfile and Terraform ``set``) as one values
    layer; with ``interpolated`` (Terraform) a value holding ``${...}`` is not a literal: said, not set."""
    layer: dict[str, Any] = {}
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        if interpolated and isinstance(e.get("value"), str) and "${" in e["value"]:
            ref.unread.append(("set", f"{e['name'][:60]} = {e['value'][:60]}", pos))
        else:
            _set_path(layer, e["name"], e.get("value"))
    if layer:
        ref.layers.append(layer)


def _scalar(value: Any) -> Any:
    """A --set value as helm reads it: whole numbers and booleans typed, the rest a string."""
    if isinstance(value, str):
        if re.fullmatch(r"-?\d{1,12}", value):
            return int(value)
        if value in ("true", "false"):
            return value == "true"
    return value


def _inline(text: Any) -> dict[str, Any] | None:
    from advisor.yamlsrc import load_documents

    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or len(text) > 1024 * 1024:
        return None
    try:
        docs = load_documents(text, "<values>")
    except InputError:  # reported as a values source not read, not as the file's error
        return None
    data = docs[0].data if docs else {}
    return data if isinstance(data, dict) else None


def _chart_dir(base: str, ref: str, repo_root: str) -> str | None:
    """The chart directory ``ref`` names from ``base``, when it is a chart inside the repository."""
    path = os.path.normpath(os.path.join(base, ref))
    if escapes(path, os.path.realpath(repo_root)):
        return None
    return path if os.path.isfile(os.path.join(path, "Chart.yaml")) else None


def from_manifest(doc: Document, repo_root: str) -> list[ReleaseRef]:
    """An Argo CD Application's or a Flux HelmRelease's local charts."""
    data = doc.data
    kind, api = data.get("kind"), str(data.get("apiVersion") or "")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = str(meta.get("name") or "?")
    out: list[ReleaseRef] = []
    if kind in ("Application", "ApplicationSet") and api.startswith("argoproj.io/"):
        base, spec = _app_spec(data)
        sources: list[tuple[KeyPath, Any]] = []
        if isinstance(spec.get("source"), dict):
            sources.append(((*base, "source"), spec["source"]))
        for i, s in enumerate(spec.get("sources") or [] if isinstance(spec.get("sources"), list) else []):
            if isinstance(s, dict):
                sources.append(((*base, "sources", i), s))
        for loc, src in sources:
            if not isinstance(src.get("path"), str):
                continue
            chart = _chart_dir(repo_root, src["path"], repo_root)
            if chart is None:
                continue
            label = f" [argocd {name}]" if kind == "Application" else f" [argocd applicationset {name}]"
            ref = ReleaseRef(doc.path, doc.where((*loc, "path")), label, chart)
            dest_v, helm_v = spec.get("destination"), src.get("helm")
            dest: dict[str, Any] = dest_v if isinstance(dest_v, dict) else {}
            helm_opts: dict[str, Any] = helm_v if isinstance(helm_v, dict) else {}
            ref.release = _text(helm_opts.get("releaseName")) or _text(meta.get("name"))  # Argo CD: the app's name
            ref.namespace = _text(dest.get("namespace"))
            if kind == "ApplicationSet":
                ref.unread.append(("generators", "an ApplicationSet makes one Application per generator element: how many "
                                   "is not read (each renders this chart)", doc.where(("spec",))))
            helm = src.get("helm") if isinstance(src.get("helm"), dict) else {}
            for j, f in enumerate(helm.get("valueFiles") or [] if isinstance(helm.get("valueFiles"), list) else []):
                _value_file(ref, chart, f, doc.where((*loc, "helm", "valueFiles", j)), repo_root)
            for key in ("values", "valuesObject"):
                if helm.get(key) is not None:
                    got = _inline(helm[key])
                    if got is None:
                        ref.unread.append((f"helm.{key}", "not a YAML mapping", doc.where((*loc, "helm", key))))
                    else:
                        ref.layers.append(got)
            _sets(ref, helm.get("parameters"), doc.where((*loc, "helm", "parameters")))
            out.append(ref)
    elif kind == "HelmRelease" and api.startswith("helm.toolkit.fluxcd.io/"):
        spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
        cs = spec.get("chart", {}).get("spec") if isinstance(spec.get("chart"), dict) else None
        if isinstance(cs, dict) and isinstance(cs.get("chart"), str):
            chart = _chart_dir(repo_root, cs["chart"], repo_root)
            if chart is not None:
                ref = ReleaseRef(doc.path, doc.where(("spec", "chart", "spec", "chart")), f" [flux {name}]", chart)
                target = _text(spec.get("targetNamespace"))
                # Flux: spec.releaseName, else [targetNamespace-]name; into targetNamespace, else the object's namespace
                ref.release = _text(spec.get("releaseName")) or (f"{target}-{name}" if target else name)
                ref.namespace = target or _text(meta.get("namespace"))
                for j, f in enumerate(cs.get("valuesFiles") or [] if isinstance(cs.get("valuesFiles"), list) else []):
                    _value_file(ref, repo_root, f, doc.where(("spec", "chart", "spec", "valuesFiles", j)), repo_root)
                if isinstance(spec.get("values"), dict):
                    ref.layers.append(spec["values"])
                if spec.get("valuesFrom"):
                    ref.unread.append(("valuesFrom", "ConfigMap / Secret values", doc.where(("spec", "valuesFrom"))))
                out.append(ref)
    return out[:MAX_REFS]


# What an Argo CD Application's source.kustomize and a Flux Kustomization's spec may change of the build at their path,
# as the kustomization keys they are (Argo CD: argo-cd docs user-guide/kustomize; Flux: kustomize.toolkit.fluxcd.io
# Kustomization spec); postBuild (Flux's variable substitution) is said, not evaluated
OVERRIDE_KEYS = {"patches": "patches", "replicas": "replicas", "components": "components", "namePrefix": "namePrefix",
                 "nameSuffix": "nameSuffix", "namespace": "namespace", "targetNamespace": "namespace", "images": "images"}
# the overrides that may change what the build asks for or which autoscaler scales it (a name prefix, a namespace):
# only these make the owner's build worth reading apart
_CHANGES_CHIPS = {"patches", "replicas", "components", "namePrefix", "nameSuffix", "namespace", "targetNamespace"}


def kustomize_overrides(data: dict[str, Any]) -> list[tuple[KeyPath, str, dict[str, Any]]]:
    """(where, the path built, the overrides) of each source of an Argo CD Application (or ApplicationSet template:
    ``spec.source`` and every ``spec.sources`` entry) that builds a path with kustomize overrides, or of a Flux
    Kustomization that patches, scales, renames or moves the path it builds; empty for anything else."""
    kind, api = data.get("kind"), str(data.get("apiVersion") or "")
    out: list[tuple[KeyPath, str, dict[str, Any]]] = []
    if kind in ("Application", "ApplicationSet") and api.startswith("argoproj.io/"):
        base, spec = _app_spec(data)
        sources: list[tuple[KeyPath, Any]] = [((*base, "source"), spec.get("source"))]
        many = spec.get("sources")
        sources += [((*base, "sources", i), s) for i, s in enumerate(many[:MAX_REFS] if isinstance(many, list) else [])]
        for loc, src in sources:
            if isinstance(src, dict) and isinstance(src.get("kustomize"), dict) and isinstance(src.get("path"), str):
                over = {k: v for k, v in src["kustomize"].items() if k in OVERRIDE_KEYS}
                if set(over) & _CHANGES_CHIPS:
                    out.append(((*loc, "kustomize"), src["path"], over))
    elif kind == "Kustomization" and api.startswith("kustomize.toolkit.fluxcd.io/"):
        flux = data.get("spec")
        if isinstance(flux, dict) and isinstance(flux.get("path"), str):
            over = {k: v for k, v in flux.items() if k in OVERRIDE_KEYS or k == "postBuild"}
            if set(over) & _CHANGES_CHIPS:
                out.append((("spec",), flux["path"], over))
    return out


def _app_spec(data: dict[str, Any]) -> tuple[KeyPath, dict[str, Any]]:
    """(where, what) of an Argo CD Application's spec; an ApplicationSet's is its template's (its generators make one
    Application per element from it: how many is not read)."""
    base: KeyPath = ("spec",) if data.get("kind") == "Application" else ("spec", "template", "spec")
    spec = value_at(data, base)
    return base, spec if isinstance(spec, dict) else {}


def _value_file(ref: ReleaseRef, base: str, f: Any, pos: Pos, repo_root: str) -> None:
    if not isinstance(f, str) or f.startswith("$") or "://" in f:
        ref.unread.append(("values file", str(f)[:120], pos))  # another source's file ($values/...) or a URL
        return
    path = os.path.normpath(os.path.join(base, f))
    if escapes(path, os.path.realpath(repo_root)) or not os.path.isfile(path):
        ref.unread.append(("values file", f"{f[:120]} (not in the repository)", pos))
        return
    ref.files.append(path)


def is_helmfile(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("releases"), list) and all(
        isinstance(r, dict) and "chart" in r for r in data["releases"]
    )


def from_helmfile(doc: Document, repo_root: str) -> list[ReleaseRef]:
    """helmfile.yaml releases whose chart is a local path (relative to the helmfile)."""
    here = os.path.dirname(doc.path) or "."
    out: list[ReleaseRef] = []
    for i, r in enumerate(doc.data["releases"][:MAX_REFS]):
        if not isinstance(r.get("chart"), str):
            continue
        local = r["chart"].startswith((".", "/")) or os.path.isdir(os.path.join(here, r["chart"]))
        chart = _chart_dir(here, r["chart"], repo_root) if local else None
        if chart is None:
            continue
        ref = ReleaseRef(doc.path, doc.where(("releases", i, "chart")), f" [helmfile {r.get('name') or i}]", chart)
        ref.release, ref.namespace = _text(r.get("name")), _text(r.get("namespace"))
        for j, v in enumerate(r.get("values") or [] if isinstance(r.get("values"), list) else []):
            if isinstance(v, dict):
                ref.layers.append(v)
            elif isinstance(v, str) and v.endswith(".gotmpl"):
                ref.unread.append(("values file", f"{v[:120]} (a helmfile template)", doc.where(("releases", i, "values", j))))
            else:
                _value_file(ref, here, v, doc.where(("releases", i, "values", j)), repo_root)
        _sets(ref, r.get("set"), doc.where(("releases", i, "set")))
        out.append(ref)
    return out


_TF_FILE = re.compile(r'^\$\{file\("([^"$]*(?:\$\{path\.module\}[^"$]*)?)"\)\}$')


def _module_relative(ref: str) -> str:
    """A Terraform path relative to the module's directory (``${path.module}/x`` is ``x``; a plain
    relative path is read from the module's directory too, where a root module runs)."""
    return ref.removeprefix("${path.module}/").removeprefix("${path.module}")


_HEREDOC = re.compile(r"\A<<(-?)([A-Za-z_][A-Za-z0-9_]*)\n(.*?)\n[ \t]*\2\s*\Z", re.S)
_ENCODE = re.compile(r"\A\$\{(?:yamlencode|jsonencode)\((.*)\)\}\Z", re.S)


def tf_text(v: str) -> str | None:
    """A Terraform string as the text it is: a heredoc's body (``<<-EOT`` with its indentation removed), a string
    without interpolation as it is; None where an interpolation (``${...}``) leaves it to Terraform."""
    import textwrap

    m = _HEREDOC.match(v.strip())
    if m:
        return textwrap.dedent(m.group(3)) if m.group(1) else m.group(3)
    return None if "${" in v else v


def tf_values(v: Any, load: Callable[[str], Any]) -> dict[str, Any] | None:
    """One element of a Terraform ``helm_release``'s ``values`` as a mapping: YAML text, a heredoc (``<<EOT`` /
    ``<<-EOT``, its indentation removed) or ``yamlencode({...})`` / ``jsonencode({...})`` of an object literal read by
    ``load`` (the HCL reader; a reference inside it stays its ``${...}`` text). None where it is neither (a
    ``file(...)``, ``templatefile(...)``, a variable)."""
    if not isinstance(v, str) or len(v) > 1024 * 1024:
        return None
    if _HEREDOC.match(v.strip()):
        return _inline(tf_text(v))
    m = _ENCODE.match(v.strip())
    if m:
        try:
            got = load("x = " + m.group(1))
        except Exception:  # the HCL reader's own errors: not read, said by the caller
            return None
        x = got.get("x") if isinstance(got, dict) else None
        return x if isinstance(x, dict) else None
    return None if "${" in v else _inline(v)


def _text(v: Any) -> str | None:
    """A literal name (a release's, a namespace's); None for anything else (an interpolation, a number)."""
    return v if isinstance(v, str) and v and "${" not in v and "{{" not in v and len(v) <= 253 else None


def _tf_ref(path: str, name: str, body: dict[str, Any], lines: dict[str, int], repo_root: str, load: Callable[[str], Any],
            chart: str) -> ReleaseRef:
    """One ``helm_release``'s values as layers: ``values`` (``file(...)`` of a file in the repository, YAML text, a
    heredoc, ``yamlencode`` / ``jsonencode`` of an object literal) and ``set`` / ``set_sensitive`` blocks; a values
    expression or a set value that is not a literal is said, not read."""
    module = os.path.dirname(path) or "."
    pos = (lines.get(f"helm_release.{name}", 1), 1)
    ref = ReleaseRef(path, pos, f" [terraform helm_release.{name}]", chart)
    ref.release = _text(body.get("name"))
    ref.namespace = _text(body.get("namespace")) or "default"  # the helm provider's default
    for v in body.get("values") or [] if isinstance(body.get("values"), list) else []:
        m = _TF_FILE.match(v) if isinstance(v, str) else None
        if m:
            _value_file(ref, module, _module_relative(m.group(1)), pos, repo_root)
        elif (got := tf_values(v, load)) is not None:
            ref.layers.append(got)
        else:
            ref.unread.append(("values", str(v)[:80], pos))
    for block in ("set", "set_sensitive"):
        _sets(ref, body.get(block), pos, interpolated=True)
    return ref


def _local_chart(path: str, body: dict[str, Any], repo_root: str) -> str | None:
    """The chart directory in the repository a ``helm_release`` installs: ``chart`` a path to one, with a ``repository``
    or not (Helm's LocateChart takes a path that exists before it consults a repository; review 33: NVIDIA nim-deploy's
    ./helm/ngc-cache beside a repository was read as a remote chart, its GPU Job unrendered)."""
    if not isinstance(body.get("chart"), str):
        return None
    chart_ref = _module_relative(body["chart"])
    return None if "${" in chart_ref else _chart_dir(os.path.dirname(path) or ".", chart_ref, repo_root)


def from_terraform(
    path: str, resources: list[tuple[str, str, dict[str, Any]]], lines: dict[str, int], repo_root: str, load: Callable[[str], Any],
) -> list[ReleaseRef]:
    """Terraform ``helm_release`` resources of a chart in the repository (``chart`` a path, with
    ``${path.module}``), with their values (_tf_ref)."""
    out: list[ReleaseRef] = []
    for typ, name, body in resources:
        chart = _local_chart(path, body, repo_root) if typ == "helm_release" else None
        if chart is not None:
            out.append(_tf_ref(path, name, body, lines, repo_root, load, chart))
    return out[:MAX_REFS]


def remote_terraform(
    path: str, resources: list[tuple[str, str, dict[str, Any]]], lines: dict[str, int], repo_root: str, load: Callable[[str], Any],
) -> list[Any]:
    """Terraform ``helm_release`` resources of a chart from a Helm repository or OCI registry (``repository`` set, or a
    ``chart`` that is no chart directory in the repository): like remote_requests, one request-unresolved request per
    release whose own values or sets ask that chart for accelerators (a count behind a variable asks too)."""
    from advisor.check.infra.asks import asks_for_chips
    from advisor.check.infra.model import Request

    out: list[Any] = []
    for typ, name, body in resources[:MAX_REFS]:
        if typ != "helm_release" or _local_chart(path, body, repo_root) is not None:
            continue
        ref = _tf_ref(path, name, body, lines, repo_root, load, "")
        for block in ("set", "set_sensitive"):  # a set value behind a variable still asks for what its name says
            _sets(ref, body.get(block), ref.pos)
        values: dict[str, Any] = {}
        for layer in ref.layers:
            values = {**values, **layer}
        for f in reversed(ref.files):  # values = [file("...")]: files of the repository, under the inline layers
            values = {**_values_file(f), **values}
        asks = asks_for_chips(values)
        if not asks:
            continue
        chart = " ".join(f"{body.get('chart') or '?'} {body.get('version') or ''} from {body.get('repository') or '?'}".split())
        req = Request(path, "terraform-hcl", f"helm_release.{name}", ref.pos[0], ref.pos[1])
        req.hardware, req.unknown = asks, "the accelerators are in a chart from a Helm repository, not rendered here"
        req.count = None
        req.unresolved.append(("helm-remote", chart, ref.pos))
        out.append(req)
    return out


def _values_file(path: str) -> dict[str, Any]:
    """A values file a release names: a mapping, or nothing (empty, or not one: Helm would refuse it)."""
    from advisor.yamlsrc import load_documents, read_text

    docs = load_documents(read_text(path, max_bytes=MAX_VALUES_BYTES), path, last_wins=True)  # as Helm reads it
    data = docs[0].data if docs else None
    return data if isinstance(data, dict) else {}


MAX_VALUES_BYTES = 8 * 1024 * 1024


def _layers(values: list[Any], sets: Any) -> dict[str, Any]:
    """A release's inline values (mappings or YAML text) and its ``{name, value}`` sets, as one mapping."""
    out: dict[str, Any] = {}
    for v in values:
        got = _inline(v)
        if got:
            out = {**out, **got}
    ref = ReleaseRef("", (1, 1), "", "")
    _sets(ref, sets, (1, 1))
    for layer in ref.layers:
        out = {**out, **layer}
    return out


def remote_requests(doc: Document, repo_root: str) -> list[Any]:
    """Releases of a chart from a Helm repository or OCI registry (Argo CD ``chart`` + ``repoURL``, a Flux
    HelmRelease of a chart not in the checkout, a helmfile release ``repo/chart``) cannot be rendered here. Where
    the release's own values ask that chart for accelerators (``requestGPU: 8``, ``nvidia.com/gpu: 1``,
    ``gpu.enabled: true``), it is one request at the chart's name, unknown and request-unresolved, never passed
    over; where they ask for none, nothing is read from it."""
    from advisor.check.infra.asks import asks_for_chips
    from advisor.check.infra.model import Request

    data: dict[str, Any] = doc.data
    kind, api = data.get("kind"), str(data.get("apiVersion") or "")
    meta: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    name = str(meta.get("name") or "?")
    found: list[tuple[str, str, KeyPath, dict[str, Any]]] = []  # (label, chart from where, position, values)
    spec: dict[str, Any] = data["spec"] if isinstance(data.get("spec"), dict) else {}
    if kind in ("Application", "ApplicationSet") and api.startswith("argoproj.io/"):
        base, spec = _app_spec(data)
        many = spec["sources"] if isinstance(spec.get("sources"), list) else []
        sources: list[tuple[KeyPath, Any]] = [((*base, "source"), spec.get("source"))]
        sources += [((*base, "sources", i), s) for i, s in enumerate(many)]
        for loc, src in sources:
            if isinstance(src, dict) and isinstance(src.get("chart"), str) and not isinstance(src.get("path"), str):
                helm: dict[str, Any] = src["helm"] if isinstance(src.get("helm"), dict) else {}
                chart = f"{src['chart']} {src.get('targetRevision') or ''} from {src.get('repoURL') or '?'}"
                found.append((f"argocd {name}", chart, (*loc, "chart"), _layers([helm.get("values"), helm.get("valuesObject")],
                                                                                helm.get("parameters"))))
    elif kind == "HelmRelease" and api.startswith("helm.toolkit.fluxcd.io/"):
        cs = spec["chart"].get("spec") if isinstance(spec.get("chart"), dict) else None
        if isinstance(cs, dict) and isinstance(cs.get("chart"), str) and _chart_dir(repo_root, cs["chart"], repo_root) is None:
            ref_: dict[str, Any] = cs["sourceRef"] if isinstance(cs.get("sourceRef"), dict) else {}
            chart = f"{cs['chart']} {cs.get('version') or ''} from {ref_.get('kind', '?')}/{ref_.get('name', '?')}"
            found.append((f"flux {name}", chart, ("spec", "chart", "spec", "chart"), _layers([spec.get("values")], None)))
    elif is_helmfile(data):
        here = os.path.dirname(doc.path) or "."
        for i, r in enumerate(data["releases"][:MAX_REFS]):
            ref = r.get("chart")
            if not isinstance(ref, str) or ref.startswith((".", "/")) or os.path.isdir(os.path.join(here, ref)):
                continue
            inline = [v for v in (r["values"] if isinstance(r.get("values"), list) else []) if isinstance(v, dict)]
            found.append((f"helmfile {r.get('name') or i}", f"{ref} {r.get('version') or ''}", ("releases", i, "chart"),
                          _layers(inline, r.get("set"))))
    out: list[Any] = []
    for label, chart, loc, values in found[:MAX_REFS]:
        asks = asks_for_chips(values)
        if not asks:
            continue
        line, col = doc.where(loc)
        req = Request(doc.path, "kubernetes", f"helm-release/{label}", line, col)
        req.hardware, req.unknown = asks, "the accelerators are in a chart from a Helm repository, not rendered here"
        req.count = None
        req.unresolved.append(("helm-remote", " ".join(chart.split()), (line, col)))
        out.append(req)
    return out
