"""A kustomization built the way ``kubectl kustomize`` builds it, for what the gate counts: an
overlay that raises a base's replicas, patches in GPUs or a node selector, or renames the
workload is judged as it will be deployed, not only as its base files read.

Evaluated: ``resources`` (files and directories, bases nested to any depth within the
repository), ``components``, ``patches`` (strategic-merge and JSON 6902, from a file or inline,
by the patch's own kind and name or by ``target`` kind / name / namespace),
``patchesStrategicMerge``, ``patchesJson6902``, ``replicas``, ``namespace``, ``namePrefix`` /
``nameSuffix`` (autoscalers' targets renamed with them), ``commonAnnotations`` and ``commonLabels`` (on every
resource and the pod templates it holds). Strategic merge follows Kubernetes'
merge keys for the lists a pod spec holds (containers by name, volume mounts by mount path, ...)
and the ``$patch: delete / replace`` directives.

``helmCharts`` of a chart in the repository (under ``helmGlobals.chartHome``) are inflated as
``kustomize build --enable-helm`` inflates them, with ``valuesFile`` and ``valuesInline``.

Not evaluated, and said so on every request of the build (``request-unresolved``): remote
resources (URLs; a strategic-merge patch of a resource they hold is read as that resource, the
part known here, a lower bound), ``helmCharts`` pulled from a repository (where their inline values
ask for accelerators, a request whose chips are not read), a patch target chosen by label or annotation selector, and a
``replacements`` entry whose target is a field the gate counts (replicas, resources, node
selectors, affinity). ``configMapGenerator`` ConfigMaps are built (literals, env files, files) so that a replacement
sourced from one applies; other generators, images, labels and the like change nothing counted and are ignored.
Only files inside the repository are read; a cycle or a path out of the repository is an input error at its entry;
a file the kustomization names that is not in the repository (generated at deploy time) is left out of the build and
said, as unresolved.

A kustomization is built when it transforms something (patches, replicas, components, a name or
namespace change, or a resource that is a directory) or lists a resource file not named *.yaml / *.yml / *.json (kustomize
reads any file as YAML; the gate reads only those on their own); its resources are addressed
``Kind/namespace/name [kustomize DIR]`` and placed at the entry of its kustomization.yaml that
last touched them (the ``replicas`` entry, a patch, or the ``resources`` entry). The files of a
base are also read on their own, as everywhere.
"""

from __future__ import annotations

import copy
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import InputError, Problem
from advisor.yamlsrc import Document, KeyPath

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MAX_DEPTH = 20  # kustomizations nested through resources / components
MAX_RESOURCES = 20_000
MAX_LOADS = 1_000  # kustomizations read in one build (a base reached through many paths is read once per path)
MAX_BYTES = 8 * 1024 * 1024
OWN_FILES = (".yaml", ".yml", ".json")  # resource files the gate reads on their own, beside the build
TRANSFORMS = ("patches", "patchesStrategicMerge", "patchesJson6902", "replicas", "components", "namePrefix", "nameSuffix", "namespace",
              "transformers", "helmCharts", "replacements", "commonAnnotations", "commonLabels")
# Kubernetes strategic-merge keys of the lists a workload's pod spec holds (k8s.io/api struct tags
# patchMergeKey); any other list is replaced whole, as strategic merge does without a key.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "replicatedJobs": "name",  # JobSet
    "workerGroupSpecs": "groupName",  # RayCluster
}
CLUSTER_SCOPED = {
    "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "StorageClass",
    "PersistentVolume", "ComputeClass", "ClusterQueue", "ResourceFlavor", "RuntimeClass", "IngressClass",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService",
}
REPLICA_KINDS = {"Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"}
_COUNTED = re.compile(r"replicas|resources|nodeSelector|affinity|parallelism|completions|numOfHosts|size|topology", re.I)
_DELETE = object()


def find(directory: str) -> str | None:
    for n in NAMES:
        p = os.path.join(directory, n)
        if os.path.isfile(p):
            return p
    return None


@dataclass
class _Res:
    data: dict[str, Any]
    pos: tuple[int, int]  # in the kustomization being built: the entry that last touched it
    names: set[str] = field(default_factory=set)  # every name it had (patches may use the original)


@dataclass
class _Build:
    boundary: str
    top: str  # the kustomization file being built (positions are in it)
    unresolved: list[tuple[str, str, tuple[int, int]]] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)
    loads: int = 0  # kustomizations read so far
    remote: bool = False  # a resource could not be fetched (a URL): patches may target what it holds
    applied: set[str] = field(default_factory=set)  # patch files that changed a resource of the build
    members: set[str] = field(default_factory=set)  # the resource files it read (real paths): deployed through the build
    # helmCharts of a chart not in the repository whose values ask for accelerators: (chart, what they ask, position)
    remote_asks: list[tuple[str, str, tuple[int, int]]] = field(default_factory=list)


def transforms(path: str) -> bool:
    """Whether the kustomization at ``path`` (a file) changes what its resources ask for or are named."""
    try:
        k = _load_kustomization(path).data
    except InputError:
        return True  # built, so that its error is reported
    if not isinstance(k, dict):
        return True
    if any(k.get(t) for t in TRANSFORMS):
        return True
    base = os.path.dirname(path)
    listed = [r for key in ("resources", "bases") if isinstance(k.get(key), list) for r in k[key]]
    # a directory, or a file the gate does not read on its own: kustomize reads a resource as YAML whatever its name
    # (``resources: [gpu.txt]``), so only the build sees it
    return any(isinstance(r, str) and (os.path.isdir(os.path.join(base, r)) or (not _remote(r) and not r.endswith(OWN_FILES)))
               for r in listed)


def _load_kustomization(path: str) -> Document:
    from advisor.yamlsrc import load_documents, read_text

    docs = [d for d in load_documents(read_text(path, max_bytes=MAX_BYTES), path) if d.data is not None]
    if not docs:
        return Document(path, 0, {}, (1, 1))
    if not isinstance(docs[0].data, dict):
        raise InputError.single(path, 1, 1, "kustomization: expected a mapping")
    return docs[0]


def build(kfile: str, boundary: str) -> tuple[list[Document], _Build]:
    """The manifests the kustomization at ``kfile`` builds to, as documents of ``kfile`` (each placed
    at the entry that last touched it), and the build's record: what was not evaluated, which patch
    files it applied."""
    b = _Build(os.path.realpath(boundary), kfile)
    res = _build_dir(os.path.dirname(kfile), b, None, kfile)
    docs = [Document(kfile, i, r.data, _known(r.pos)) for i, r in enumerate(res)]
    b.unresolved = list(dict.fromkeys(b.unresolved))
    return docs, b


def _build_dir(directory: str, b: _Build, inherited: list[_Res] | None, kfile: str | None = None) -> list[_Res]:
    kfile = kfile or find(directory)
    if kfile is None:
        raise InputError.single(directory, 1, 1, "kustomize: no kustomization.yaml in this directory")
    real = os.path.realpath(kfile)
    if real in b.chain:
        raise InputError.single(kfile, 1, 1, "kustomize: this kustomization includes itself (a cycle through resources / components)")
    if len(b.chain) >= MAX_DEPTH:
        raise InputError.single(kfile, 1, 1, f"kustomize: kustomizations nested more than {MAX_DEPTH} deep")
    b.loads += 1
    if b.loads > MAX_LOADS:
        raise InputError.single(
            b.top, 1, 1, f"kustomize: more than {MAX_LOADS:,} kustomizations read in one build (bases reached through many paths)"
        )
    b.chain.append(real)
    try:
        return _build_one(kfile, b, inherited)
    finally:
        b.chain.pop()


def _top(b: _Build, doc: Document, loc: KeyPath) -> tuple[int, int]:
    """A position in the kustomization being built: the entry itself when ``doc`` is that file, else
    (0, 0): the entry of the top file that brought this one in is kept by the caller."""
    return doc.where(loc) if os.path.realpath(doc.path) == os.path.realpath(b.top) else (0, 0)


def _inside(path: str, b: _Build, doc: Document, loc: KeyPath) -> str:
    from advisor.check.files import escapes

    if escapes(path, b.boundary):
        raise InputError([doc.problem(loc, f"kustomize: {path!r} is outside the repository (or in its version-control "
                                       "metadata); not read")])
    return path


def _known(pos: tuple[int, int]) -> tuple[int, int]:
    """A position in the top kustomization, or its first line for what a nested one holds."""
    return (1, 1) if pos == (0, 0) else pos


def _remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("github.com/", "git@", "gitlab.com/", "bitbucket.org/")) or "?ref=" in ref


_PARSED: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
MAX_PARSED = 512  # resource files kept parsed in one run (cleared when full)


def _resources_of(path: str) -> list[dict[str, Any]]:
    """The manifests of a resource file, parsed once per run however many kustomizations name it (kserve's
    config/ names its ~100k-node CRDs from 13 overlays: 1,273 parses and 19 s before, 5.9 s after). Read as the gate reads any
    manifest; the caller copies what it changes."""
    from advisor.check.infra.read import MAX_MANIFEST_NODES
    from advisor.yamlsrc import load_documents, read_text

    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    hit = _PARSED.get(key)
    if hit is None:
        docs = load_documents(read_text(path, max_bytes=MAX_BYTES), path, max_nodes=MAX_MANIFEST_NODES)
        hit = [d.data for d in docs if isinstance(d.data, dict) and isinstance(d.data.get("kind"), str)]
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.clear()
        _PARSED[key] = hit
    return hit


def _copy(v: Any) -> Any:
    """A copy of plain data (dict / list / scalars), several times faster than copy.deepcopy."""
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _build_one(kfile: str, b: _Build, inherited: list[_Res] | None, doc: Document | None = None) -> list[_Res]:
    """One kustomization's resources, transformed (``doc``: a kustomization given as a document, not read from ``kfile``;
    its relative paths are from ``kfile``'s directory)."""
    doc = doc or _load_kustomization(kfile)
    k: dict[str, Any] = doc.data
    here = os.path.dirname(kfile)
    res: list[_Res] = list(inherited or [])

    def at(loc: KeyPath) -> tuple[int, int]:
        return _top(b, doc, loc)

    def entries(key: str) -> list[Any]:
        v = k.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise InputError([doc.problem((key,), f"{key}: expected a list")])
        return v

    for key in ("resources", "bases"):
        for i, ref in enumerate(entries(key)):
            if not isinstance(ref, str):
                raise InputError([doc.problem((key, i), f"{key}[{i}]: expected a path")])
            if _remote(ref):
                b.remote = True
                b.unresolved.append(("kustomize", f"remote resource {ref[:120]}", _known(at((key, i)))))
                continue
            path = _inside(os.path.normpath(os.path.join(here, ref)), b, doc, (key, i))
            pos = at((key, i))
            if os.path.isdir(path):
                for r in _build_dir(path, b, None):
                    res.append(_Res(r.data, pos if pos != (0, 0) else r.pos, r.names))
            elif os.path.isfile(path):
                b.members.add(os.path.realpath(path))
                for data in _resources_of(path):
                    res.append(_Res(_copy(data), pos, {_name(data)}))
            else:  # generated at deploy time (kubectl kustomize would stop here): built without it, and said
                b.unresolved.append(("kustomize", f"{ref[:120]} (not in the repository)", _known(at((key, i)))))
            if len(res) > MAX_RESOURCES:
                raise InputError([doc.problem((key, i), f"kustomize: more than {MAX_RESOURCES:,} resources")])
    for i, ref in enumerate(entries("components")):
        if not isinstance(ref, str) or _remote(ref):
            b.unresolved.append(("kustomize", f"component {str(ref)[:120]}", _known(at(("components", i)))))
            continue
        path = _inside(os.path.normpath(os.path.join(here, ref)), b, doc, ("components", i))
        res = _build_dir(path, b, res)
        for r in res:
            if r.pos == (0, 0):
                r.pos = at(("components", i))
    res += _helm_charts(k, doc, here, b, at)
    _config_maps(k, doc, here, b, res, at)
    # kustomize's order (api/internal/target/kusttarget_configplugin.go): strategic-merge patches and patches, the
    # namespace and name prefix / suffix, JSON 6902 patches, replicas, replacements, and the kustomization's own
    # transformers after every builtin one
    _patches(k, doc, kfile, b, res, at, ("patchesStrategicMerge", "patches"))
    _names(k, doc, res, at)
    _common_metadata(k, doc, res)
    _patches(k, doc, kfile, b, res, at, ("patchesJson6902",))
    if k.get("configurations"):  # field specs of the builtin transformers (replicas of a CRD, parallelism): not applied
        b.unresolved.append(("kustomize", "configurations (field specs of the builtin transformers, not applied here)",
                             _known(at(("configurations",)))))
    for i, e in enumerate(entries("replicas")):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            raise InputError([doc.problem(("replicas", i), "replicas: each entry needs a name and a count")])
        count = e.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 1_000_000:
            raise InputError([doc.problem(("replicas", i, "count"), f"replicas[{i}].count: expected a whole number, got {count!r}"[:200])])
        _set_replicas(res, e["name"], count, at(("replicas", i)))
    for i, rep in enumerate(entries("replacements")):
        _replacement(rep, res, b, at(("replacements", i)))
    _transformers(entries("transformers"), doc, kfile, b, res, at)
    return res


_PATH_PART = re.compile(r"\[[^\]]*\]|(?:\\.|[^.\\\[])+")
# what a replacement the build cannot apply may change so that the chips read are not those deployed: a count, the
# hardware, or which workload an autoscaler or a patch finds (a name, a kind, a namespace, a selector)
_REPLACED = re.compile(r"replicas|resources|nodeSelector|affinity|parallelism|completions|numOfHosts|size|topology|kind|"
                       r"namespace|scaleTargetRef|selector|labels|tolerations|accelerator", re.I)


def _counted(path: str) -> bool:
    """Whether a replacement's target field path may change what is counted: a key of it (bracketed list selectors
    left out: the volume picked by ``[name=...]`` is not a name changed) names a count, the hardware or what selects
    (_REPLACED), or is a resource's or a scale target's own name (metadata.name, scaleTargetRef.name; not a bucket's
    bucketName, nor a service account's)."""
    parts = [q for q in _PATH_PART.findall(path) if not q.startswith("[")]
    return any(_REPLACED.search(q) or (q == "name" and i > 0 and parts[i - 1] in ("metadata", "scaleTargetRef"))
               for i, q in enumerate(parts))


def _field_path(path: str) -> list[str] | None:
    """A replacement's fieldPath as its parts, as kustomize (kyaml) reads it: ``a.b\\.c`` -> a, b.c; a bracketed key
    kept whole, ``limits.[nvidia.com/gpu]`` -> limits, nvidia.com/gpu; a list selector ``[name=c]`` kept as written;
    None where it uses a form not read here (a wildcard)."""
    if not path or len(path) > 500 or "*" in path:
        return None
    parts = []
    for part in _PATH_PART.findall(path):
        if part.startswith("[") and part.endswith("]") and "=" not in part:
            parts.append(part[1:-1])
        else:
            parts.append(part.replace("\\.", "."))
    return parts


def _walk(node: Any, parts: list[str], create: bool = False) -> tuple[Any, str | int] | None:
    """The container and key of ``parts`` in ``node`` (list entries by index or ``[key=value]``), None where absent."""
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        m = re.fullmatch(r"\[([^=\]]+)=([^\]]*)\]", part)
        if isinstance(node, list):
            if m:
                idx = next((j for j, e in enumerate(node) if isinstance(e, dict) and str(e.get(m.group(1))) == m.group(2)), None)
            elif re.fullmatch(r"[0-9]{1,9}", part):
                idx = int(part) if int(part) < len(node) else None
            else:
                return None
            if idx is None:
                return None
            if last:
                return node, idx
            node = node[idx]
        elif isinstance(node, dict) and not m:
            if last:
                return node, part
            if part not in node:
                if not create:
                    return None
                node[part] = {}
            node = node[part]
        else:
            return None
    return None


def _replacement(rep: Any, res: list[_Res], b: _Build, pos: tuple[int, int]) -> None:
    """A ``replacements`` entry as kustomize applies it: the source resource's field (kind / name / namespace,
    fieldPath, metadata.name by default) copied to each target's fieldPaths. A form not read here (a source file,
    delimiter / index options, a wildcard path, a source that is not in the build, a target by label) leaves the
    targets it may touch unresolved where it names a field that counts chips or says which."""
    src = rep.get("source") if isinstance(rep, dict) else None
    targets = rep.get("targets") if isinstance(rep, dict) else None
    targets = [t for t in targets if isinstance(t, dict)] if isinstance(targets, list) else []
    paths = [str(p) for t in targets for p in (t["fieldPaths"] if isinstance(t.get("fieldPaths"), list) else []) if isinstance(p, str)]
    touched = [p for p in paths if _counted(p)]

    def unread(why: str) -> None:
        if touched:
            b.unresolved.append(("kustomize", f"replacements to {', '.join(touched)[:120]} ({why})", _known(pos)))

    if not isinstance(src, dict) or not isinstance(src.get("kind"), str) or src.get("options"):
        return unread("a source not read here")
    found = _select(res, None, {k: src[k] for k in ("kind", "name", "namespace", "group", "version") if src.get(k)}, b, pos)
    parts = _field_path(str(src.get("fieldPath") or "metadata.name"))
    got = _walk(found[0].data, parts) if len(found) == 1 and parts else None
    if got is None:
        return unread("its source is not in the build")
    if isinstance(got[0], dict) and got[1] not in got[0]:  # the source is built, the field it names is not there
        return unread(f"its source has no {str(src.get('fieldPath'))[:60]}")
    container, key = got
    value = container[key]
    for t in targets:
        sel = t.get("select")
        options = t.get("options")
        if not isinstance(sel, dict) or (options is not None and (not isinstance(options, dict) or set(options) - {"create"})):
            return unread("a target form not read here")
        create = bool((options or {}).get("create"))
        rejects = t.get("reject") if isinstance(t.get("reject"), list) else []
        chosen = [r for r in _select(res, None, sel, b, pos)
                  if not any(r in _select(res, None, rj, b, pos) for rj in rejects if isinstance(rj, dict))]
        for fp in (t.get("fieldPaths") if isinstance(t.get("fieldPaths"), list) else []):
            tparts = _field_path(str(fp))
            if tparts is None:
                return unread("a target form not read here")
            for r in chosen:
                at_t = _walk(r.data, tparts, create)
                if at_t is None:  # kustomize stops on a target field that is missing: what would apply is not known
                    return unread(f"target field {str(fp)[:60]} not found")
                at_t[0][at_t[1]] = copy.deepcopy(value)
                r.pos = pos if pos != (0, 0) else r.pos
    return None


def _helm_charts(k: dict[str, Any], doc: Document, here: str, b: _Build, at: Any) -> list[_Res]:
    """``helmCharts`` inflated as ``kustomize build --enable-helm`` inflates them: a chart of the repository under
    ``helmGlobals.chartHome`` (default charts/) rendered with its values.yaml, ``valuesFile`` and ``valuesInline`` (advisor's
    Helm reader, advisor.check.infra.helmlite), its resources then patched and scaled by the kustomization like any other.
    A chart kustomize would pull from a repository is not rendered here: said, and where its inline values ask for
    accelerators it is a request whose chips are not read (read())."""
    from advisor.check.infra.asks import asks_for_chips
    from advisor.check.infra.helmlite import render_chart
    from advisor.yamlsrc import load_documents

    charts = k.get("helmCharts")
    if not charts:
        return []
    if not isinstance(charts, list):
        raise InputError([doc.problem(("helmCharts",), "helmCharts: expected a list")])
    home = k["helmGlobals"].get("chartHome") if isinstance(k.get("helmGlobals"), dict) else None
    out: list[_Res] = []
    for i, e in enumerate(charts[:MAX_RESOURCES]):
        pos = _known(at(("helmCharts", i)))
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            b.unresolved.append(("kustomize", f"helmCharts[{i}] without a chart name", pos))
            continue
        chart = os.path.normpath(os.path.join(here, str(home or "charts"), e["name"]))
        inline: dict[str, Any] = e["valuesInline"] if isinstance(e.get("valuesInline"), dict) else {}
        if not os.path.isfile(os.path.join(chart, "Chart.yaml")) or _escapes(chart, b):
            b.unresolved.append(("kustomize", f"helmCharts {e['name']} {e.get('version') or ''} from {e.get('repo') or '?'} "
                                 "(pulled at build time, not rendered here)", pos))
            asks = asks_for_chips(inline)
            if asks:
                b.remote_asks.append((f"{e['name']} {e.get('version') or ''}".strip(), asks, pos))
            continue
        values: dict[str, Any] = {}
        if isinstance(e.get("valuesFile"), str):
            vf = os.path.normpath(os.path.join(here, e["valuesFile"]))
            loaded = _resources_of(vf) if os.path.isfile(vf) and not _escapes(vf, b) else []
            values = loaded[0] if loaded and isinstance(loaded[0], dict) else {}
        values = {**values, **inline}
        for r in render_chart(chart, values):
            for cond, _line in r.guessed:
                b.unresolved.append(("helm-condition", cond, pos))
            try:
                docs = load_documents(r.text, r.path, max_nodes=500_000)
            except InputError:
                b.unresolved.append(("kustomize", f"helmCharts {e['name']}: {os.path.basename(r.path)} not read as rendered here", pos))
                continue
            for d in docs:
                if isinstance(d.data, dict):
                    out.append(_Res(d.data, pos, {_name(d.data)}))
    return out


MAX_GENERATED_BYTES = 1024 * 1024  # a configMapGenerator's env or data file read for the ConfigMap it makes


def _config_maps(k: dict[str, Any], doc: Document, here: str, b: _Build, res: list[_Res], at: Any) -> None:
    """The ConfigMaps ``configMapGenerator`` makes (``literals``, ``envs`` / ``env`` files of KEY=VALUE lines, ``files``
    read whole), so that a replacement sourced from one reads its data as kustomize applies it; ``behavior: merge`` /
    ``replace`` changes a ConfigMap the build already has. Their name hash suffix is left out: it changes nothing
    counted. A file that cannot be read leaves the ConfigMap without that data (a replacement from it is then said)."""
    from advisor.yamlsrc import read_text

    gens = k.get("configMapGenerator")
    if not isinstance(gens, list):
        return
    for i, g in enumerate(gens[:1000]):
        if not isinstance(g, dict) or not isinstance(g.get("name"), str):
            continue
        data: dict[str, str] = {}
        literals: list[Any] = g["literals"] if isinstance(g.get("literals"), list) else []
        for lit in literals:
            if isinstance(lit, str) and "=" in lit:
                key, value = lit.split("=", 1)
                data[key.strip()] = value
        refs = [(f, j, r) for f in ("envs", "env") for j, r in enumerate(g[f] if isinstance(g.get(f), list) else [g.get(f)])
                if isinstance(r, str)]
        for f, j, ref in refs:
            path = _inside(os.path.normpath(os.path.join(here, ref)), b, doc, ("configMapGenerator", i, f, j))
            if os.path.isfile(path):
                for line in read_text(path, max_bytes=MAX_GENERATED_BYTES).splitlines():
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        key, value = line.split("=", 1)
                        data[key.strip()] = value
        files: list[Any] = g["files"] if isinstance(g.get("files"), list) else []
        for j, ref in enumerate(files):
            if not isinstance(ref, str):
                continue
            key, _, rel = ref.partition("=") if "=" in ref else (os.path.basename(ref), "", ref)
            path = _inside(os.path.normpath(os.path.join(here, rel)), b, doc, ("configMapGenerator", i, "files", j))
            if os.path.isfile(path):
                data[key] = read_text(path, max_bytes=MAX_GENERATED_BYTES)
        ns = g.get("namespace") if isinstance(g.get("namespace"), str) else None
        same = [r for r in res if r.data.get("kind") == "ConfigMap" and _name(r.data) == g["name"]
                and (ns is None or (r.data.get("metadata") or {}).get("namespace") == ns)]
        if g.get("behavior") in ("merge", "replace") and same:
            for r in same:
                kept: dict[str, Any] = r.data["data"] if g.get("behavior") == "merge" and isinstance(r.data.get("data"), dict) else {}
                r.data["data"] = {**kept, **data}
            continue
        meta: dict[str, Any] = {"name": g["name"], **({"namespace": ns} if ns else {})}
        res.append(_Res({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data},
                        at(("configMapGenerator", i)), {g["name"]}))


def _escapes(path: str, b: _Build) -> bool:
    from advisor.check.files import escapes

    return escapes(path, os.path.realpath(b.boundary))


def _set_replicas(res: list[_Res], name: str, count: int, pos: tuple[int, int]) -> None:
    """``replicas`` of the workloads named ``name`` set to ``count`` (kustomize's replicas field and its transformer),
    their position moved to where that was written (when it has one)."""
    for r in res:
        if name in r.names and r.data.get("kind") in REPLICA_KINDS:
            spec = r.data.setdefault("spec", {})
            if isinstance(spec, dict):
                spec["replicas"] = count
                r.pos = pos if pos != (0, 0) else r.pos


def _transformers(refs: list[Any], doc: Document, kfile: str, b: _Build, res: list[_Res], at: Any) -> None:
    """``transformers:``, the builtin ones that change counts or selectors, as kustomize applies them: a PatchTransformer
    (``patch`` on a ``target``) as a ``patches`` entry, a ReplicaCountTransformer (``replica: {name, count}``) as a
    ``replicas`` entry; another kind (a plugin, a function) is said, not guessed."""
    here = os.path.dirname(kfile)
    for i, ref in enumerate(refs):
        if isinstance(ref, dict):
            configs = [ref]
        elif isinstance(ref, str) and not _remote(ref):
            path = _inside(os.path.normpath(os.path.join(here, ref)), b, doc, ("transformers", i))
            configs = list(_resources_of(path)) if os.path.isfile(path) else []
            if not configs:
                b.unresolved.append(("kustomize", f"transformer {ref[:120]} (not read)", _known(at(("transformers", i)))))
        else:
            b.unresolved.append(("kustomize", f"transformer {str(ref)[:120]}", _known(at(("transformers", i)))))
            continue
        for t in configs[:100]:
            kind = t.get("kind") if isinstance(t, dict) else None
            where = at(("transformers", i))
            if kind == "PatchTransformer" and t.get("patch") is not None:
                _patches({"patches": [{"patch": t["patch"], "target": t.get("target")}]}, doc, kfile, b, res,
                         lambda _loc, where=where: where)
            elif kind == "ReplicaCountTransformer" and isinstance(t.get("replica"), dict):
                name, count = t["replica"].get("name"), t["replica"].get("count")
                if isinstance(name, str) and isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= 1_000_000:
                    _set_replicas(res, name, count, where)
            else:
                b.unresolved.append(("kustomize", f"transformer {kind or '?'} (not applied here)", _known(where)))


def _name(data: dict[str, Any]) -> str:
    meta = data.get("metadata")
    return str(meta.get("name")) if isinstance(meta, dict) and meta.get("name") is not None else ""


# where kustomize's commonAnnotations / commonLabels go besides every resource's metadata (its default field specs, with
# create: the pod template of the built-in workloads, a CronJob's through its job template): an annotation on the pod
# template can ask for chips (KAI's gpu-fraction) and one on a Cluster API object bounds its autoscaling (review 34)
_POD_TEMPLATE_META: tuple[tuple[str, ...], ...] = (
    ("spec", "template", "metadata"), ("spec", "jobTemplate", "spec", "template", "metadata"))


def _common_metadata(k: dict[str, Any], doc: Document, res: list[_Res]) -> None:
    """commonAnnotations and commonLabels, as kustomize applies them: on every resource's metadata and on the pod
    templates it holds (a value it sets replaces the resource's own)."""
    for key, part in (("commonAnnotations", "annotations"), ("commonLabels", "labels")):
        add = k.get(key)
        if add is None:
            continue
        if not isinstance(add, dict):
            raise InputError([doc.problem((key,), f"{key}: expected a mapping")])
        add = {str(a): "" if v is None else str(v) if not isinstance(v, bool) else str(v).lower() for a, v in add.items()}
        for r in res:
            targets = [r.data.setdefault("metadata", {})]
            for path in _POD_TEMPLATE_META:
                node: Any = r.data
                for step in path[:-1]:
                    node = node.get(step) if isinstance(node, dict) else None
                if isinstance(node, dict):
                    targets.append(node.setdefault("metadata", {}))
            for meta in targets:
                if isinstance(meta, dict):
                    cur = meta.get(part)
                    meta[part] = {**(cur if isinstance(cur, dict) else {}), **add}


def _names(k: dict[str, Any], doc: Document, res: list[_Res], at: Any) -> None:
    ns, prefix, suffix = k.get("namespace"), k.get("namePrefix") or "", k.get("nameSuffix") or ""
    for key, v in (("namespace", ns), ("namePrefix", prefix), ("nameSuffix", suffix)):
        if v is not None and not isinstance(v, str):
            raise InputError([doc.problem((key,), f"{key}: expected a string")])
    renamed: dict[tuple[str, str], str] = {}
    for r in res:
        kind = str(r.data.get("kind"))
        meta = r.data.setdefault("metadata", {})
        if not isinstance(meta, dict):
            continue
        if ns and kind not in CLUSTER_SCOPED:
            meta["namespace"] = ns
        if (prefix or suffix) and kind not in ("Namespace", "CustomResourceDefinition") and isinstance(meta.get("name"), str):
            old = meta["name"]
            meta["name"] = f"{prefix}{old}{suffix}"
            renamed[(kind, old)] = meta["name"]
            r.names.add(meta["name"])
    if not renamed:
        return
    for r in res:  # autoscalers follow the workload they scale (kustomize's name references)
        ref = r.data.get("spec", {}).get("scaleTargetRef") if isinstance(r.data.get("spec"), dict) else None
        if isinstance(ref, dict) and (str(ref.get("kind")), str(ref.get("name"))) in renamed:
            ref["name"] = renamed[(str(ref["kind"]), str(ref["name"]))]


def _patch_docs(e: Any, here: str, b: _Build, doc: Document, loc: KeyPath, inline: bool | None = None) -> tuple[str | None, list[Any]]:
    """A patch's documents: from the file ``e`` names, or ``e`` itself (``inline``; None: a
    patchesStrategicMerge entry, inline when it holds a line break or a flow collection)."""
    from advisor.yamlsrc import load_documents, read_text

    if inline is None:
        inline = not isinstance(e, str) or "\n" in e or e.lstrip().startswith(("{", "["))
    if isinstance(e, str) and not inline:
        path = _inside(os.path.normpath(os.path.join(here, e)), b, doc, loc)
        if not os.path.isfile(path):
            b.unresolved.append(("kustomize", f"patch {e[:120]} (not in the repository)", _known(_top(b, doc, loc))))
            return None, []
        return os.path.realpath(path), [d.data for d in load_documents(read_text(path, max_bytes=MAX_BYTES), path) if d.data is not None]
    if isinstance(e, str):
        return None, [d.data for d in load_documents(e, doc.path) if d.data is not None]
    raise InputError([doc.problem(loc, "kustomize: a patch is a path or a YAML document")])


def _patches(
    k: dict[str, Any], doc: Document, kfile: str, b: _Build, res: list[_Res], at: Any,
    keys: tuple[str, ...] = ("patchesStrategicMerge", "patches", "patchesJson6902"),
) -> None:
    here = os.path.dirname(kfile)
    work: list[tuple[KeyPath, Any, dict[str, Any] | None, str | None]] = []  # (entry, patch data, target, its file)
    for key in keys:
        if k.get(key) is not None and not isinstance(k.get(key), list):
            raise InputError([doc.problem((key,), f"{key}: expected a list")])
    for i, e in enumerate(k.get("patchesStrategicMerge") or [] if "patchesStrategicMerge" in keys else []):
        src_file, docs = _patch_docs(e, here, b, doc, ("patchesStrategicMerge", i))
        work += [(("patchesStrategicMerge", i), p, None, src_file) for p in docs]
    for key in [x for x in ("patches", "patchesJson6902") if x in keys]:
        for i, e in enumerate(k.get(key) or []):
            if not isinstance(e, dict):
                raise InputError([doc.problem((key, i), f"{key}[{i}]: expected a mapping with path or patch")])
            src = e.get("path") if e.get("path") is not None else e.get("patch")
            if src is None:
                raise InputError([doc.problem((key, i), f"{key}[{i}]: needs path or patch")])
            target = e.get("target")
            if target is not None and not isinstance(target, dict):
                raise InputError([doc.problem((key, i, "target"), "target: expected a mapping")])
            inline = e.get("path") is None
            loc = (key, i, "patch" if inline else "path")
            src_file, docs = _patch_docs(src, here, b, doc, loc, inline)
            work += [((key, i), p, target, src_file) for p in docs]
    for loc, patch, target, src_file in work:
        chosen = _select(res, patch, target, b, at(loc))
        if not chosen and b.remote and isinstance(patch, dict):
            made = _from_patch(patch, target)
            if made is not None:  # the patched resource is in a remote base: the patch is the part of it known here
                res.append(_Res(made, at(loc), {_name(made)}))
                b.unresolved.append(("kustomize", f"patch of {made['kind']}/{_name(made)} in a remote base (only the patch is read)",
                                     _known(at(loc))))
                chosen = [res[-1]]
                patch = {}
        if chosen and src_file:
            b.applied.add(src_file)
        for r in chosen:
            if isinstance(patch, list):
                try:
                    _json6902(r.data, patch, doc, loc)
                except InputError:
                    if not b.remote:
                        raise
                    # the resource is partly in a remote base: the path may be there, not here
                    b.unresolved.append(("kustomize", f"a JSON patch of {r.data.get('kind')}/{_name(r.data)} held in a remote base",
                                         _known(at(loc))))
            elif isinstance(patch, dict):
                merged = _smp(r.data, _untargeted(patch) if target else patch)
                if merged is _DELETE:
                    res.remove(r)
                    continue
                r.data = merged
            pos = at(loc)
            if pos != (0, 0):
                r.pos = pos


def _from_patch(patch: dict[str, Any], target: dict[str, Any] | None) -> dict[str, Any] | None:
    """A strategic-merge patch read as the resource it patches (its target's kind and name)."""
    out = _strip(_copy(patch))
    t = target or {}
    kind = t.get("kind") or out.get("kind")
    name = t["name"] if isinstance(t.get("name"), str) and re.fullmatch(r"[\w.-]+", t["name"]) else None
    if not isinstance(kind, str):
        return None
    out["kind"] = kind
    out.setdefault("apiVersion", "apps/v1" if kind in REPLICA_KINDS else "v1")
    meta = out.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return None
    if name:
        meta["name"] = name
    return out if isinstance(meta.get("name"), str) else None


def _untargeted(patch: dict[str, Any]) -> dict[str, Any]:
    """A patch applied to its ``target``: its own kind, name and namespace are not applied."""
    out = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k not in ("name", "namespace")}
    return out


def _select(res: list[_Res], patch: Any, target: dict[str, Any] | None, b: _Build, pos: tuple[int, int]) -> list[_Res]:
    if target is None:
        if not isinstance(patch, dict):
            return []
        kind, name = patch.get("kind"), _name(patch)
        return [r for r in res if r.data.get("kind") == kind and name in r.names]
    if target.get("labelSelector") or target.get("annotationSelector"):
        b.unresolved.append(("kustomize", "a patch target by label / annotation selector", _known(pos)))
        return []
    out = []
    for r in res:
        if target.get("kind") and r.data.get("kind") != target["kind"]:
            continue
        api = r.data.get("apiVersion")
        group, _, version = (api if isinstance(api, str) else "").rpartition("/")
        if (target.get("group") and target["group"] != group) or (target.get("version") and target["version"] != version):
            continue  # kustomize matches a target's group and version too (kserve's v1beta1 CRD patch is not for v1)
        m = r.data.get("metadata")
        meta: dict[str, Any] = m if isinstance(m, dict) else {}
        if target.get("namespace") and meta.get("namespace") != target["namespace"]:
            continue
        if target.get("name"):
            rx = _name_pattern(str(target["name"]))
            if rx is None:
                b.unresolved.append(("kustomize", f"a patch target name pattern {str(target['name'])[:60]!r}", _known(pos)))
                return []
            if not any(rx.match(n[:253]) for n in r.names):
                continue
        out.append(r)
    return out


_NESTED_QUANTIFIER = re.compile(r"[)\]][*+?{]|\{[\d,]")


def _name_pattern(pattern: str) -> re.Pattern[str] | None:
    """A target name as kustomize reads it (a regular expression, anchored), when it is one that
    runs in polynomial time on a Kubernetes name: at most three * / + / ? (a?a?...aaa... backtracks 2^n times) and no
    quantified group or class (a pull request writes both the pattern and the names it is matched against)."""
    # a{2,} and a{,30} quantify as * does (Python reads {,n}: review 29's ten a{,30} took minutes on one name)
    quantifiers = sum(pattern.count(c) for c in "*+{") + pattern.count("?") - pattern.count("(?")
    if len(pattern) > 253 or _NESTED_QUANTIFIER.search(pattern) or quantifiers > 3:
        return None
    try:
        with warnings.catch_warnings():  # a pattern of the pull request's ([[) warns of a future meaning on stderr
            warnings.simplefilter("ignore")
            return re.compile(f"^(?:{pattern})$")
    except re.error:
        return re.compile(re.escape(pattern))


def _smp(base: Any, patch: Any, key: str = "") -> Any:
    """Strategic merge of ``patch`` into ``base`` (a copy)."""
    if isinstance(patch, dict):
        directive = patch.get("$patch")
        if directive == "delete":
            return _DELETE
        clean = {k: v for k, v in patch.items() if not (isinstance(k, str) and k.startswith("$"))}
        if directive == "replace" or not isinstance(base, dict):
            return _strip(clean)
        out = dict(base)
        for k, v in clean.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                merged = _smp(out[k], v, k)
                if merged is _DELETE:
                    out.pop(k, None)
                else:
                    out[k] = merged
            else:
                out[k] = _strip(v)
        return out
    if isinstance(patch, list) and isinstance(base, list) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        out_list = list(base)
        for item in patch:
            if not isinstance(item, dict) or mk not in item:
                out_list.append(_strip(item))
                continue
            idx = next((j for j, x in enumerate(out_list) if isinstance(x, dict) and x.get(mk) == item[mk]), None)
            if idx is None:
                if item.get("$patch") != "delete":
                    out_list.append(_strip(item))
                continue
            merged = _smp(out_list[idx], item, "")
            if merged is _DELETE:
                out_list.pop(idx)
            else:
                out_list[idx] = merged
        return out_list
    return _strip(patch)


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if not (isinstance(k, str) and k.startswith("$"))}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"JSON pointer {path[:60]!r} does not start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _json6902(data: dict[str, Any], ops: list[Any], doc: Document, loc: KeyPath) -> None:
    """JSON patch operations add / replace / remove / copy / move on ``data`` in place; ``test`` is ignored."""
    for j, op in enumerate(ops):
        try:
            if not isinstance(op, dict) or not isinstance(op.get("path"), str):
                raise ValueError("each operation needs op and path")
            kind = op.get("op")
            parts = _pointer(op["path"])
            if kind in ("add", "replace"):
                _put(data, parts, _copy(op.get("value")), kind == "add")
            elif kind == "remove":
                _take(data, parts)
            elif kind in ("copy", "move"):
                src = _pointer(str(op.get("from", "")))
                v = _get(data, src)
                if kind == "move":
                    _take(data, src)
                _put(data, parts, _copy(v), True)
            elif kind != "test":
                raise ValueError(f"unknown op {str(kind)[:20]!r}")
        except (KeyError, IndexError, TypeError):
            what = f"{data.get('kind')}/{_name(data)}"
            message = f"kustomize: JSON patch operation {j}: {str(op.get('path'))[:120]} does not exist in {what[:120]}"
            raise InputError([Problem(doc.path, *doc.where(loc), message + " (kustomize build stops here)")]) from None
        except ValueError as exc:
            raise InputError([Problem(doc.path, *doc.where(loc), f"kustomize: JSON patch operation {j}: {exc}"[:300])]) from None


def _parent(data: Any, parts: list[str]) -> tuple[Any, str]:
    if not parts:
        raise ValueError("the whole document cannot be patched")
    node = data
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    return node, parts[-1]


def _get(data: Any, parts: list[str]) -> Any:
    node = data
    for p in parts:
        node = node[int(p)] if isinstance(node, list) else node[p]
    return node


def _put(data: Any, parts: list[str], value: Any, insert: bool) -> None:
    node, last = _parent(data, parts)
    if isinstance(node, list):
        if last == "-":
            node.append(value)
        elif insert:
            node.insert(int(last), value)
        else:
            node[int(last)] = value
    elif isinstance(node, dict):
        # `replace` of a missing member adds it, as kustomize build does (kubernetes-sigs/kustomize issue
        # 4380, open since v4.4.1; ray-project/kuberay apiserver/deploy/local overlays rely on it)
        node[last] = value
    else:
        raise TypeError("path goes through a scalar")


def _take(data: Any, parts: list[str]) -> None:
    node, last = _parent(data, parts)
    if isinstance(node, list):
        node.pop(int(last))
    else:
        del node[last]


@dataclass
class KustomizeRead:
    requests: list[Any] = field(default_factory=list)  # advisor.check.infra.model.Request
    autoscalers: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    patches: set[str] = field(default_factory=set)  # patch files the build applied (judged in it, not on their own)
    members: set[str] = field(default_factory=set)  # resource files the build read (deployed through it)


def read_overrides(owner: Document, boundary: str, index: Any) -> KustomizeRead:
    """The requests of the kustomization at each path an Argo CD Application or a Flux Kustomization builds, as that
    tool builds it, with the owner's overrides (releases.kustomize_overrides): a kustomization over the path's own,
    placed in the owner's file. The path's own build is judged on its own too; this is what the owner deploys."""
    from advisor.check.infra.releases import kustomize_overrides

    out = KustomizeRead()
    for loc, rel, over in kustomize_overrides(owner.data) if isinstance(owner.data, dict) else []:
        got = _override_build(owner, loc, rel, over, boundary, index)
        out.requests += got.requests
        out.autoscalers += got.autoscalers
        out.problems += got.problems
    return out


def _flux_resources(app: str) -> list[str]:
    """What Flux's generated kustomization of a directory without one lists: every manifest under it, and a
    subdirectory that has a kustomization of its own as that one build (its files are not listed apart)."""
    out: list[str] = []
    for d, dirs, files in os.walk(app):
        dirs.sort()
        if d != app and find(d) is not None:
            out.append(os.path.relpath(d, app))
            dirs[:] = []
            continue
        out += [os.path.relpath(os.path.join(d, f), app) for f in sorted(files)
                if f.endswith((".yaml", ".yml", ".json")) and f not in NAMES]
        if len(out) > MAX_RESOURCES:
            break
    return out[:MAX_RESOURCES]


def _override_build(owner: Document, loc: KeyPath, rel: str, over: dict[str, Any], boundary: str, index: Any) -> KustomizeRead:
    from advisor.check.infra.releases import OVERRIDE_KEYS

    out = KustomizeRead()
    app = os.path.normpath(os.path.join(boundary, rel))
    from advisor.check.files import escapes

    if not os.path.isdir(app) or escapes(app, os.path.realpath(boundary)):
        return out  # not in the repository: nothing to build here
    if find(app) is not None:
        resources = ["."]
    elif owner.data.get("kind") == "Kustomization":  # Flux generates one of every manifest under the path
        resources = _flux_resources(app)
    else:
        return out  # Argo CD applies kustomize overrides to a kustomization only
    data: dict[str, Any] = {"resources": resources}
    for key, value in over.items():
        if key == "postBuild":
            continue
        if key == "replicas" and isinstance(value, list):  # Argo CD takes a count as a string too
            value = [dict(e, count=int(e["count"])) if isinstance(e, dict) and isinstance(e.get("count"), str)
                     and re.fullmatch(r"[0-9]{1,9}", e["count"]) else e for e in value]
        data[OVERRIDE_KEYS[key]] = value
    n = len(loc)
    doc = Document(owner.path, owner.index, data, owner.where(loc),
                   value_pos={(OVERRIDE_KEYS.get(k[n], k[n]), *k[n + 1:]): v for k, v in owner.value_pos.items()
                              if k[:n] == loc and len(k) > n and isinstance(k[n], str)},
                   key_pos={(OVERRIDE_KEYS.get(k[n], k[n]), *k[n + 1:]): v for k, v in owner.key_pos.items()
                            if k[:n] == loc and len(k) > n and isinstance(k[n], str)})
    from advisor.check.infra import k8s
    from advisor.check.infra.model import label_variant

    b = _Build(os.path.realpath(boundary), owner.path)
    try:
        res = _build_one(os.path.join(app, "kustomization.yaml"), b, None, doc)
        parsed = k8s.parse([Document(owner.path, i, r.data, _known(r.pos)) for i, r in enumerate(res)], index)
    except InputError as exc:
        out.problems += exc.problems
        return out
    if "postBuild" in over:
        b.unresolved.append(("kustomize", "Flux postBuild variable substitution", _known(owner.where((*loc, "postBuild")))))
    meta = owner.data.get("metadata") if isinstance(owner.data.get("metadata"), dict) else {}
    label = f" [{'flux' if owner.data.get('kind') == 'Kustomization' else 'argocd'} {str(meta.get('name') or '?')[:60]}]"
    note = f"as {owner.data.get('kind')} {rel[:80]} builds it, with its kustomize overrides"
    label_variant(parsed.requests, parsed.autoscalers, label, note)
    for req in parsed.requests:
        req.unresolved += list(dict.fromkeys(b.unresolved))
    out.requests, out.autoscalers = parsed.requests, parsed.autoscalers
    return out


def read(kfile: str, boundary: str, index: Any, label: str) -> KustomizeRead:
    """The accelerator requests of the kustomization at ``kfile``, built; ``label`` names the build."""
    from advisor.check.infra import k8s
    from advisor.check.infra.model import label_variant

    out = KustomizeRead()
    try:
        docs, record = build(kfile, boundary)
        parsed = k8s.parse(docs, index)
    except InputError as exc:
        out.problems += exc.problems
        return out
    from advisor.check.infra.model import Request

    for chart, asks, (line, col) in record.remote_asks:  # a chart not rendered here whose values ask for accelerators
        req = Request(kfile, "kubernetes", f"helm-chart/{chart}", line, col)
        req.hardware, req.count = asks, None
        req.unknown = "the accelerators are in a chart kustomize pulls at build time, not rendered here"
        req.unresolved.append(("helm-remote", chart, (line, col)))
        parsed.requests.append(req)
    label_variant(parsed.requests, parsed.autoscalers, label, f"as built by {kfile} (kustomize)")
    for req in parsed.requests:
        req.unresolved += record.unresolved
    out.patches = record.applied
    out.members = record.members
    out.requests, out.autoscalers = parsed.requests, parsed.autoscalers
    return out
