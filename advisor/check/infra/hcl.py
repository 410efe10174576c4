"""Terraform HCL source (``*.tf``), read without a plan: with ``python-hcl2`` (imported lazily; an
optional dependency), variable defaults, locals and the expressions over them (``hclexpr``: operators,
``for`` expressions, the pure built-in functions), ``count`` and ``for_each`` evaluated; each resource
instance then goes through the plan JSON readers (``tfplan``), so a GKE node pool, a TPU VM, an EC2
instance or an Azure VM reads the same from either source. Modules kept in the repository are read at
their calls, with the calls' inputs. What cannot be evaluated without a plan (data sources, module
outputs, resource attributes) is reported as unresolved, never read as zero. The plan JSON stays the authority.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from advisor.check.files import OUTSIDE, TF_SUFFIXES
from advisor.check.infra import hclexpr, tfconfig, tfk8s, tfplan
from advisor.check.infra.hclexpr import Unresolved
from advisor.check.infra.model import Parsed, Request, tf_waivers
from advisor.check.infra.names import NameIndex, names_hardware
from advisor.yamlsrc import linked_outside

PLAN_HINT = "terraform plan -out plan.out && terraform show -json plan.out > plan.json"
MAX_INSTANCES = 10_000
_REF = re.compile(r"^\$\{([^{}]*)\}$")
_PART = re.compile(r'\.([A-Za-z_][A-Za-z0-9_-]*)|\[\s*("(?:[^"\\]|\\.)*"|[0-9]+)\s*\]')
_PLAIN_REF = re.compile(r'[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\s*(?:"(?:[^"\\]|\\.)*"|[0-9]+)\s*\])*')
_INTERP = re.compile(r"\$\{([^{}]*)\}")
_RESOURCE_REF = re.compile(r"\b((?:google|aws|azurerm)_[a-z0-9_]+)\.([A-Za-z_][A-Za-z0-9_-]*)")


MAX_STRING = 64 * 1024  # characters of a string interpolation builds (names and counts are short; doubling strings are not)
MAX_HCL_BYTES = 256 * 1024  # python-hcl2 reads ~100 KB a second: a bound on the time one file takes
_TREES: dict[str, Any] = {}


def _load(text: str) -> Any:
    import hcl2
    from hcl2.utils import SerializationOptions

    key = str(hash(text))
    if key in _TREES:
        return _TREES[key]
    options = SerializationOptions(strip_string_quotes=True)
    try:
        tree = hcl2.loads(text, serialization_options=options)
    except Exception:
        joined = _joined_interpolations(text)
        if joined == text:
            raise
        tree = hcl2.loads(joined, serialization_options=options)  # a `${ }` over several lines: Terraform takes it
    if len(_TREES) > 32:
        _TREES.clear()
    _TREES[key] = tree
    return tree


class _Scope:
    def __init__(self, variables: dict[str, Any], locals_: dict[str, Any], module_dir: str | None = None) -> None:
        self.variables, self.locals = variables, locals_
        self.module_dir = module_dir  # path.module (and path.root: a root module's own directory)
        self.each: tuple[Any, Any] | None = None
        self.count: int | None = None
        self._busy: set[str] = set()
        # each variable's and local's value, evaluated once: locals that refer to one another twice each
        # ("${local.a}${local.a}") would otherwise be evaluated 2^depth times
        self._known: dict[tuple[str, str, int], Any] = {}

    def value(self, expr: str) -> Any:
        """The value of a reference such as ``var.x``, ``local.y["k"].z``, ``each.value.m``."""
        expr = expr.strip()
        if self.count is not None:
            expr = re.sub(r"\[\s*count\.index\s*\]", f"[{self.count}]", expr)
        if self.each is not None and isinstance(self.each[0], (str, int)):
            expr = re.sub(r"\[\s*each\.key\s*\]", "[" + json.dumps(self.each[0]) + "]", expr)
        if not _PLAIN_REF.fullmatch(expr):
            return hclexpr.evaluate(self, expr)
        if expr == "count.index" and self.count is not None:
            return self.count
        if expr in ("path.module", "path.root") and self.module_dir is not None:
            return self.module_dir
        head, _, rest = expr.partition(".")
        name_m = re.match(r"[A-Za-z_][A-Za-z0-9_-]*", rest)
        if head == "each" and self.each is not None:
            node: Any = {"key": self.each[0], "value": self.each[1]}
            tail = "." + rest
        elif head in ("var", "local") and name_m:
            name = name_m.group(0)
            table = self.variables if head == "var" else self.locals
            if name not in table or f"{head}.{name}" in self._busy:
                return Unresolved(expr)
            memo = (head, name, id(table[name]))
            if memo in self._known:
                node = self._known[memo]
            else:
                self._busy.add(f"{head}.{name}")
                try:
                    node = self._known[memo] = self.literal(table[name])
                finally:
                    self._busy.discard(f"{head}.{name}")
            tail = rest[len(name):]
        elif head in ("each", "count", "var", "local"):
            # each.* without a resolved for_each, count.* without a count: unknown here (evaluating it as an
            # expression would come straight back to this reference)
            return Unresolved(expr)
        else:
            return Unresolved(expr)  # module outputs, data sources, resource attributes: known after apply
        pos = 0
        while pos < len(tail):
            m = _PART.match(tail, pos)
            if m is None:
                return Unresolved(expr)
            pos = m.end()
            key: Any = m.group(1) if m.group(1) is not None else (m.group(2)[1:-1] if m.group(2).startswith('"') else int(m.group(2)))
            if (isinstance(node, dict) and key in node) or (isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)):
                node = node[key]
            else:
                return Unresolved(expr)
        return node

    def literal(self, v: Any, depth: int = 0) -> Any:
        if depth > 32:
            return Unresolved("(nested too deeply)")
        if isinstance(v, str):
            m = _REF.match(v)
            if m:
                return self.value(m.group(1))
            inner = _whole(v)
            if inner is not None:  # one interpolation with braces of its own: an object or a for expression
                return hclexpr.evaluate(self, inner)
            if "${" in v:
                pieces = list(_INTERP.finditer(v))
                if len(pieces) != v.count("${"):
                    # an expression with braces of its own (a for expression, an object): not evaluated here
                    return Unresolved(v)
                parts = []
                for piece in pieces:
                    got = self.value(piece.group(1))
                    if isinstance(got, (Unresolved, dict, list)):
                        return Unresolved(v)
                    parts.append((piece.span(), str(got).lower() if isinstance(got, bool) else str(got)))
                if sum(len(text) for _span, text in parts) + len(v) > MAX_STRING:
                    return Unresolved(f"(a string longer than {MAX_STRING // 1024} KiB)")
                out, last = [], 0
                for (a, b), text in parts:
                    out += [v[last:a], text]
                    last = b
                return "".join([*out, v[last:]])
            return v
        if isinstance(v, list):
            return [self.literal(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return {k: self.literal(x, depth + 1) for k, x in v.items() if not (isinstance(k, str) and k.startswith("__"))}
        return v


def _whole(v: str) -> str | None:
    """The inside of ``v`` where ``v`` is one ``${ ... }`` from end to end (braces and strings inside balanced)."""
    if not (v.startswith("${") and v.endswith("}")):
        return None
    depth, i, quoted = 0, 1, False
    while i < len(v):
        c = v[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return v[2:-1] if i == len(v) - 1 else None
        i += 1
    return None


ModuleScope = tuple[dict[str, Any], dict[str, Any], str | None, list[str]]  # variables, locals, AWS region, the tfvars files read


def _sibling(directory: str, name: str) -> Any:
    """A file of the module's directory parsed (JSON for ``*.json``, else HCL); None where it is larger than
    MAX_HCL_BYTES or this reader cannot parse it (its values then stay what they were: defaults, or unresolved). A
    link out of the repository (a terraform.tfvars pointing at the runner's ~/.terraformrc) is never opened: an input
    error at its path, so no value of it reaches a finding, an annotation or a comment."""
    path = os.path.join(directory or ".", name)
    if linked_outside(path):
        from advisor.errors import InputError

        raise InputError.single(path, 1, 1, OUTSIDE)
    try:
        st = os.stat(path)
    except OSError:
        return None
    # parsed once per run however many files of the directory ask (every override file reads all the others); a copy,
    # which its reader may change
    return copy.deepcopy(_parsed_sibling(path, st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=1024)
def _parsed_sibling(path: str, _mtime: int, _size: int) -> Any:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_HCL_BYTES + 1)
        if len(text) > MAX_HCL_BYTES:
            return None
        return json.loads(text) if path.endswith(".json") else _load(text)
    except Exception:
        return None


MAX_TFVARS = 200  # value files read per module directory; with more, the variables are not known (fail closed)


def _tfvars(directory: str, names: list[str], declared: set[str]) -> tuple[dict[str, Any], list[str]]:
    """The values Terraform itself loads for a root module, in its order, each over the one before: terraform.tfvars,
    terraform.tfvars.json, then *.auto.tfvars / *.auto.tfvars.json by name
    (https://developer.hashicorp.com/terraform/language/values/variables#variable-definition-precedence). Only declared
    variables; a file this reader cannot parse leaves every declared variable unknown from there on, as does a file past
    MAX_TFVARS (review 29: a tfvars over the size limit, or with a Unicode identifier, was dropped and the defaults
    judged)."""
    from advisor.check.files import AUTO_TFVARS, TFVARS

    order: list[str] = [n for n in TFVARS if n in names]
    order += sorted(n for n in names if n.endswith(AUTO_TFVARS))
    values: dict[str, Any] = {}
    used: list[str] = []
    for n in order[:MAX_TFVARS]:
        data = _sibling(directory, n)
        if isinstance(data, dict):
            got = {k: v for k, v in data.items() if k in declared}
            values.update(got)
            used += [n] if got else []
        else:  # Terraform loads it, this reader cannot (too large, syntax it does not take): any variable may be set there
            values.update({k: Unresolved(f"var.{k} (a value file not read: {n})") for k in declared})
            used.append(n)
    if len(order) > MAX_TFVARS:  # more files than are read: the last ones win, and are not known
        values.update({k: Unresolved(f"var.{k} (more than {MAX_TFVARS} value files)") for k in declared})
        used.append(order[MAX_TFVARS])
    return values, used


def _raw(v: Any) -> Any:
    """An evaluated value in the form _load gives a literal: python-hcl2 read with strip_string_quotes, so a string as it
    is (review 33: quoted again, an optional(string, "europe-west4") default read as the region '"europe-west4"' and an
    empty default '""' as a value that is not empty)."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return [_raw(x) for x in v]
    if isinstance(v, dict):
        return {k: _raw(x) for k, x in v.items()}
    return v


def _with_defaults(value: Any, shape: Any, depth: int = 0) -> Any:
    """``value`` (as python-hcl2 read it) with the optional attributes its type constraint's objects leave out set to
    their defaults (hclexpr.type_shape), as Terraform converts a variable's value to its type."""
    if shape is None or depth > 32:
        return value
    kind, inner = shape
    if kind in ("list", "set") and isinstance(value, list):
        return [_with_defaults(x, inner, depth + 1) for x in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _with_defaults(x, inner, depth + 1) for k, x in value.items()}
    if kind == "tuple" and isinstance(value, list):
        return [_with_defaults(x, inner[i] if i < len(inner) else None, depth + 1) for i, x in enumerate(value)]
    if kind == "object" and isinstance(value, dict):
        out = dict(value)
        for name, (sub, has, default) in inner.items():
            if name in out:
                out[name] = _with_defaults(out[name], sub, depth + 1)
            elif has and not isinstance(default, Unresolved):  # the default converted too: its own optional attributes
                out[name] = _with_defaults(_raw(default), sub, depth + 1)
            else:  # an optional attribute without a default is null
                out[name] = None
        return out
    return value


def _module_scope(directory: str, cache: dict[Any, ModuleScope]) -> ModuleScope:
    """Variable values (defaults, then the tfvars files Terraform loads), locals and the AWS provider region of every .tf
    file in the directory; cached by the directory and its files' sizes and modification times (a long-lived process sees
    an edit)."""
    try:
        listed = sorted(n for n in os.listdir(directory or ".") if n.endswith(TF_SUFFIXES) or ".tfvars" in n)
    except OSError:
        listed = []
    stamp = []
    for n in listed[:400]:
        try:
            st = os.stat(os.path.join(directory or ".", n))
            stamp.append((n, st.st_mtime_ns, st.st_size))
        except OSError:
            continue
    key = (directory, tuple(stamp))
    if key in cache:
        return cache[key]
    variables: dict[str, Any] = {}
    declared: set[str] = set()
    types: dict[str, str] = {}
    locals_: dict[str, Any] = {}
    region: str | None = None
    names = [n for n in listed if n.endswith(TF_SUFFIXES)]
    for n in names[:200]:
        data = _sibling(directory, n)
        for block in data.get("variable", []) if isinstance(data, dict) else []:
            for name, body in block.items():
                declared.add(name)
                if isinstance(body, dict) and "default" in body:
                    variables[name] = body["default"]
                if isinstance(body, dict) and isinstance(body.get("type"), str) and "optional(" in body["type"]:
                    types[name] = body["type"]
        for block in data.get("locals", []) if isinstance(data, dict) else []:
            locals_.update({k: v for k, v in block.items() if not k.startswith("__")})
        for block in data.get("provider", []) if isinstance(data, dict) else []:
            aws = block.get("aws") if isinstance(block, dict) else None
            if isinstance(aws, dict) and isinstance(aws.get("region"), str) and "${" not in aws["region"]:
                region = region or aws["region"]
    given, used = _tfvars(directory, [n for n in listed if ".tfvars" in n], declared)
    variables.update(given)
    for name, text in types.items():  # optional(type, default) attributes a value leaves out take their defaults
        shape = hclexpr.type_shape(text.strip().removeprefix("${").removesuffix("}"))
        if name in variables and shape is not None:
            variables[name] = _with_defaults(variables[name], shape)
    cache[key] = (variables, locals_, region, used)
    return cache[key]


class _HclCtx(tfplan._Ctx):
    def __init__(
        self, path: str, text: str, index: NameIndex, blocks: dict[str, int], refs: dict[str, set[str]], region: str | None
    ) -> None:
        super().__init__(path, text, {}, index)
        self.blocks, self.refs, self.aws_region = blocks, refs, region
        # module instances read so far under one file's calls, shared by the nested calls (MAX_MODULE_INSTANCES)
        self.module_instances = [0]

    def pos(self, address: str) -> tuple[int, int]:
        return self.blocks.get(tfconfig.config_address(address), 1), 1

    def source(self, address: str) -> tuple[str, int] | None:
        return None


def _unresolved_paths(v: Any, prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(v, Unresolved):
        return [(prefix, v.expr)]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _unresolved_paths(x, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(v, list):
        for x in v:
            out += _unresolved_paths(x, prefix)
    return out


NUMERIC = {
    "count",
    "node_count",
    "initial_node_count",
    "min_node_count",
    "max_node_count",
    "total_min_node_count",
    "total_max_node_count",
    "target_size",
    "min_size",
    "max_size",
    "desired_size",
    "desired_capacity",
    "instances",
    "min_count",
    "max_count",
    "node_count_per_zone",
}
_INT = re.compile(r"[0-9]{1,9}")


def _plain(v: Any, key: str = "") -> Any:
    """Unresolved values dropped (the readers see them as absent; they are reported separately);
    a number written as a string where Terraform converts it (``min_node_count = "1"``) a number."""
    if isinstance(v, Unresolved):
        return None
    if isinstance(v, dict):
        return {k: _plain(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, key) for x in v]
    if key in NUMERIC and isinstance(v, str) and _INT.fullmatch(v):
        return int(v)
    return v


HARDWARE_FIELDS = ("machine_type", "guest_accelerator", "accelerator_type", "accelerator_config", "instance_type", "instance_types",
                   "vm_size", "size", "sku", "node_config", "count", "for_each", "node_count", "autoscaling", "target_size",
                   "desired_capacity", "min_size", "max_size", "scaling_config", "instances", "min_count", "max_count")


# attributes inside a hardware block (node_config) that decide neither the accelerator, the count, the price nor the
# location: a reference there (service_account = google_service_account.x.email) leaves the request read, where any
# other attribute not evaluated still leaves it unresolved (an attribute this list does not name fails closed)
IDENTITY_FIELDS = frozenset({
    "service_account", "oauth_scopes", "labels", "resource_labels", "tags", "metadata", "image_type", "boot_disk_kms_key",
    "disk_size_gb", "disk_type", "taint", "effective_taints", "workload_metadata_config", "shielded_instance_config",
    "kubelet_config", "linux_node_config", "logging_variant", "gcfs_config", "gvnic", "advanced_machine_features",
    "confidential_nodes", "sandbox_config", "resource_manager_tags", "storage_pools", "secondary_boot_disks",
    "containerd_config", "fast_socket", "local_nvme_ssd_block_config", "ephemeral_storage_local_ssd_config",
    "boot_disk", "enable_confidential_storage", "windows_node_config",
})


def _decides(field: str) -> bool:
    """Whether a field path not evaluated can change what a request asks for or costs: not an identity, disk or label
    attribute of a hardware block (IDENTITY_FIELDS, at any depth below the block)."""
    parts = field.split(".")
    return not (len(parts) > 1 and any(p in IDENTITY_FIELDS for p in parts[1:]))


# where a resource's location decides how many nodes it runs (a GKE node pool's counts are per zone of its location:
# a region is three zones), so a location not read leaves its count not read
ZONE_FIELDS = {"google_container_node_pool": ("location", "node_locations")}

_SCOPES: dict[Any, ModuleScope] = {}


def parse(path: str, text: str, index: NameIndex) -> Parsed:
    data = _read_tree(text)
    if isinstance(data, Parsed):
        data.requests += _unread_requests(path, text, data.notes[0] if data.notes else "", index)
        return data
    if len(_SCOPES) > 64:
        _SCOPES.clear()
    variables, locals_, region, tfvars = _module_scope(os.path.abspath(os.path.dirname(path)) if path != "-" else "", _SCOPES)
    blocks = {f"{m.group(1)}.{m.group(2)}": text.count("\n", 0, m.start()) + 1 for m in tfconfig.RESOURCE.finditer(text)}
    resources, merged = _overridden(path, _resource_blocks(data))
    ctx = _HclCtx(path, text, index, blocks, _resource_refs(resources), region)
    out = Parsed("terraform-hcl")
    scope = _Scope(variables, locals_, os.path.dirname(os.path.abspath(path)) if path != "-" else None)
    by_addr, unresolved = _evaluate(ctx, scope, resources)
    _module_calls(ctx, scope, data, text, by_addr, unresolved)
    objects = Parsed("terraform-hcl")  # the Kubernetes objects the modules of the repository it calls apply
    modules = _local_modules(ctx, scope, data, by_addr, unresolved, objects=objects) if path != "-" else []
    opaque = _opaque_modules(path, text, data, index, scope)
    tfplan.read_resources(ctx, by_addr, out)
    _report_unresolved(ctx, out, unresolved, scope)
    if any(typ in tfk8s.TYPES for typ, _n, _b in resources):  # Kubernetes objects Terraform applies
        _kubernetes_objects(ctx, scope, resources, out)
    out.requests += objects.requests
    out.autoscalers += objects.autoscalers
    if path != "-" and any(typ == "helm_release" for typ, _n, _b in resources):  # a chart released by Terraform
        from advisor.check.files import boundary
        from advisor.check.infra.releases import from_terraform, remote_terraform

        root = boundary(path)
        released = [(t, n, _values_files_settled(scope, b) if t == "helm_release" else b) for t, n, b in resources]
        out.releases = from_terraform(path, released, blocks, root, _load)
        out.requests += remote_terraform(path, released, blocks, root, _load)
    for req in out.requests:
        req.waivers += tf_waivers(text, req.line)
        req.kind = "terraform-hcl"
        req.notes.append("read from HCL source (literals, variable defaults, locals); the plan JSON is the authority")
        if tfvars:
            req.notes.append(f"variable values from {', '.join(tfvars)} (loaded as terraform plan loads them in this directory)")
    for req in out.requests if merged else []:
        over = merged.get(req.address.split("[")[0])
        if over is not None:
            req.notes.append(f"with {over} merged in (a Terraform override file)")
    out.modules = modules
    out.requests += opaque
    if not out.requests and not out.notes and not out.releases:
        out.notes.append("Terraform HCL without accelerator resources" if not _is_override(path) else
                         "a Terraform override file: its blocks are merged into the resources they override in this directory's files")
    return out


_FILE_OF = re.compile(r"\A\$\{file\(([^()\"]{1,200})\)\}\Z")


def _values_files_settled(scope: _Scope, body: dict[str, Any]) -> dict[str, Any]:
    """A helm_release's ``values = [file(var.x)]`` with the path the source settles (the variable's default, a local)
    written in, as ``file("PATH")``, for the release readers; a path it does not settle stays as written (not read)."""
    values = body.get("values")
    if not isinstance(values, list) or not any(isinstance(v, str) and _FILE_OF.match(v) for v in values):
        return body
    out = []
    for v in values:
        m = _FILE_OF.match(v) if isinstance(v, str) else None
        got = scope.literal("${" + m.group(1).strip() + "}") if m else None
        out.append(f'${{file("{got}")}}' if isinstance(got, str) and '"' not in got and "$" not in got else v)
    return {**body, "values": out}


def _is_override(path: str) -> bool:
    name = os.path.basename(path)
    return name in ("override.tf", "override.tf.json") or name.endswith(("_override.tf", "_override.tf.json"))


def _overridden(
    path: str, resources: list[tuple[str, str, dict[str, Any]]]
) -> tuple[list[tuple[str, str, dict[str, Any]]], dict[str, str]]:
    """Terraform merges override files (override.tf, *_override.tf) into the directory's other files: an argument of an
    overriding resource block replaces the original's, a nested block replaces the original's blocks of that type
    (https://developer.hashicorp.com/terraform/language/files/override). A file's resources with their overrides merged
    in (and which file each came from); an override file's own blocks that override another file's are left to that file."""
    if path == "-":
        return resources, {}
    directory = os.path.dirname(os.path.abspath(path))
    try:
        # every file of the directory: an override past a cap was never merged (review 29: 202 files before it)
        names = sorted(n for n in os.listdir(directory) if n.endswith(TF_SUFFIXES) and n != os.path.basename(path))
    except OSError:
        return resources, {}
    if _is_override(path):  # blocks with an original elsewhere are read there, merged
        originals = {f"{t}.{n}" for name in names if not _is_override(name)
                     for t, n, _b in _resource_blocks(_sibling(directory, name) or {})}
        return [r for r in resources if f"{r[0]}.{r[1]}" not in originals], {}
    overrides: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name in names:
        if _is_override(name):
            for t, n, b in _resource_blocks(_sibling(directory, name) or {}):
                overrides.setdefault(f"{t}.{n}", []).append((name, b))
    if not overrides:
        return resources, {}
    out, merged = [], {}
    for t, n, body in resources:
        for name, over in overrides.get(f"{t}.{n}", []):
            body = {**body, **{k: v for k, v in over.items() if not k.startswith("__")}}
            merged[f"{t}.{n}"] = name
        out.append((t, n, body))
    return out, merged


# a block head of the file's text, read without parsing it: resource "TYPE" "NAME" { / module "NAME" {
# (labels quoted or bare identifiers, which HCL's grammar takes as well: resource google_container_node_pool pool {)
# (its words may stand on lines of their own: a /* ... */ comment between them is whitespace to Terraform, and blanked here
# it keeps its line breaks, review 34)
_BLOCK_HEAD = re.compile(
    r'^[ \t]*(resource|module)\s+"?([A-Za-z0-9_-]{1,200})"?(?:\s+"?([A-Za-z0-9_.-]{1,200})"?)?\s*\{', re.M)
# where a top-level block of any kind starts: a block's text ends there
_TOP_BLOCK = re.compile(r'^(?:resource|module|data|locals|variable|output|provider|terraform|moved|import|check|removed)\b', re.M)
# what names an accelerator in Terraform text: the words, and machine / instance / VM size names of accelerator families
_ACCELERATOR_WORD = re.compile(
    r"accelerator|gpu|tpu|nvidia|\b(?:p[2-6][a-z]*|g[4-6][a-z]*|trn[0-9][a-z]*|inf[0-9])\.[0-9]*x?large|\ba[0-4][a-z]?-[a-z]+gpu"
    r"|\bg[2-4]-standard|\bct[4-7][a-z]*-|\btpu7x|standard_n[cdv]", re.I)
_READ_TYPES = tfplan.READ | tfk8s.TYPES  # the resource types the HCL reader reads
# a machine or accelerator field set from a reference (machine_type = local.machine): what it names is in another file
_MACHINE_BY_REFERENCE = re.compile(
    r"\b(?:machine_type|instance_types?|vm_size|node_type|accelerator_type|type|sku)\s*=\s*\[?\s*"
    r"(?P<ref>(?:var|local|module|each|data)\.[A-Za-z0-9_.\-\[\]\"]{1,80})")
# a body that reads variables, locals or module inputs: evaluated before a type no reader takes is passed over
_REFERENCES = re.compile(r"\b(?:var|local|module|each)\.")
MAX_UNREAD_TEXT = 200_000
_QUOTED = re.compile(r'"([^"\n\\$]{1,100})"')
MAX_UNREAD = 1000
_LOCAL_CALL = re.compile(r'^[ \t]*source[ \t]*=[ \t]*"\.{1,2}/', re.M)  # a module of the repository


def _unread_requests(path: str, text: str, why: str, index: NameIndex) -> list[Request]:
    """Fail closed on a file the reader cannot parse (or too large to): each resource of a type that buys accelerators,
    and each module call (a local module's inputs are lost with the file that passes them), whose text (up to the
    next top-level block) names an accelerator is a request of unknown hardware whose count is not read
    (request-unresolved), never a file skipped in silence: a pull request could otherwise hide an accelerator behind
    syntax this reader does not take. Where the name is one the index knows (p4d.24xlarge), that is the hardware asked
    for; its count is still not read. A file whose text names none stays skipped with the reason. Comments are not read."""
    text = _without_comments(text)
    override = _is_override(path)  # its arguments replace another file's (a node_count alone, say): any of them may count
    if not _ACCELERATOR_WORD.search(text) and not _MACHINE_BY_REFERENCE.search(text) and not override:
        return []
    heads = list(_BLOCK_HEAD.finditer(text))[:MAX_UNREAD]
    out: list[Request] = []
    for m in heads:
        kind, first, second = m.groups()
        if kind == "resource" and (second is None or first not in _READ_TYPES):
            continue
        end = _block_end(text, m.end())
        word = _ACCELERATOR_WORD.search(text, m.end(), end)
        if word is None and kind == "resource" and (ref := _MACHINE_BY_REFERENCE.search(text, m.end(), end)) is not None:
            # the machine comes from a variable, local or module output the lost file's module settles elsewhere
            # (locals.tf): which one is not known once this file cannot be read, so it may be an accelerator
            word = ref
        if word is None and not (override and kind == "resource"):
            continue
        # a quoted machine / instance name the index knows ("a3-highgpu-8g") says the hardware; a bare word (gpu) does not
        named = (f"an override of {first}.{second}" if word is None
                 else word.group("ref") if "ref" in word.re.groupindex else word.group(0))
        hint = next((q for q in _quoted(text, m.end(), end) if _ACCELERATOR_WORD.search(q) and index.lookup(q).known), named)
        if kind == "module" and _LOCAL_CALL.search(text, m.end(), end) and not index.lookup(hint).known:
            continue  # a local module passed only variables (var.machine_type): its own files say what it asks for
        address = f"{first}.{second}" if kind == "resource" else f"module.{first}"
        line = text.count("\n", 0, m.start()) + 1
        req = Request(path, "terraform-hcl", address, line, 1)
        named = index.lookup(hint)
        if named.known:
            req.set_hardware(hint, named)
        else:
            req.hardware = hint[:60]
            req.unknown = f"{address} is in a file this reader cannot read ({why.split(';')[0]}), so what it asks for is not known"
        req.unresolved.append(("count-unknown", f"{address} is not read (the file cannot be parsed here) but names "
                               f"{hint[:60]!r}: give the plan JSON ({PLAN_HINT})", (line, 1)))
        out.append(req)
    return out


def _joined_interpolations(text: str) -> str:
    """``text`` with each ``${ ... }`` interpolation inside a quoted string that spans lines joined onto one line, the
    newlines it held put back after the end of that line (every later line keeps its number): Terraform takes such an
    interpolation, python-hcl2 raises on it."""
    out: list[str] = []
    i, n, quoted, depth, held = 0, len(text), False, 0, 0
    while i < n:
        c = text[i]
        if c == "\\" and quoted:
            out.append(text[i:i + 2])
            i += 2
            continue
        if depth:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "\n":
                out.append(" ")
                held += 1
                i += 1
                continue
            out.append(c)
        elif quoted and text.startswith("${", i):
            depth = 1
            out.append("${")
            i += 2
            continue
        else:
            if c == '"':
                quoted = not quoted
            elif c == "\n":
                quoted = False
                out.append("\n" * held)
                held = 0
            out.append(c)
        i += 1
    return "".join(out) + "\n" * held


# what the comment scan steps over: a quoted string, a heredoc's opening (<<EOF, <<-EOF), a comment's opening
_LEXEME = re.compile(r'"|<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\n|#|//|/\*')
# inside a quoted string: an escape, an interpolation or directive opening, the closing quote, a line end
_IN_STRING = re.compile(r'\\.|[$%]\{|"|\n', re.S)
# inside an interpolation: a nested string, a brace
_IN_TEMPLATE = re.compile(r'["{}]')


def _string_end(text: str, i: int, depth: int = 0) -> int:
    """Where the quoted string opening at ``i`` ends (after its closing quote; at a line end or the end of the text where
    it is unclosed): ``${ ... }`` and ``%{ ... }`` inside it are skipped whole, with the strings they hold (review 30:
    "${"/*"}" before a resource and "${"*/"}" after it read as a comment around it). Nesting beyond 16 ends the scan."""
    pos = i + 1
    while (m := _IN_STRING.search(text, pos)) is not None:
        tok = m.group(0)
        if tok == '"':
            return m.end()
        if tok == "\n":
            return m.start()
        pos = m.end()
        if tok in ("${", "%{"):
            if depth >= 16:
                return len(text)
            braces = 1
            while braces and (t := _IN_TEMPLATE.search(text, pos)) is not None:
                if t.group(0) == '"':
                    pos = _string_end(text, t.start(), depth + 1)
                    continue
                braces += 1 if t.group(0) == "{" else -1
                pos = t.end()
            if braces:
                return len(text)
    return len(text)


def _without_comments(text: str) -> str:
    """HCL text with its comments blanked (quoted strings and heredocs kept, line numbers kept): a comment asks for
    nothing. In one pass: a /* or # inside a heredoc is the heredoc's text (review 29: a heredoc holding /* before a
    resource and one holding */ after it hid the resource from the fail-closed scan); an unclosed string ends at its line
    (_string_end), an unclosed heredoc or /* comment at the end of the text."""
    out: list[str] = []
    pos = 0
    while (m := _LEXEME.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        tok = m.group(0)
        if tok == '"':
            stop = _string_end(text, m.start())
            out.append(text[m.start() : stop])
        elif m.group(1) is not None:  # a heredoc: to the line holding only its delimiter
            close = re.compile(rf"^[ \t]*{re.escape(m.group(1))}[ \t]*$", re.M).search(text, m.end())
            stop = close.end() if close is not None else len(text)
            out.append(text[m.start() : stop])
        else:
            stop = text.find("*/", m.end()) if tok == "/*" else text.find("\n", m.end())
            stop = len(text) if stop < 0 else stop + (2 if tok == "/*" else 0)
            out.append(re.sub(r"[^\n]", " ", text[m.start() : stop]))
        pos = stop
    out.append(text[pos:])
    return "".join(out)


def _read_tree(text: str) -> dict[str, Any] | Parsed:
    """The parsed HCL; or, when it is not read (no python-hcl2, too large, not HCL, no blocks), the note saying why."""
    try:
        import hcl2  # noqa: F401
    except ImportError:
        return Parsed(
            "terraform-hcl",
            notes=[
                "Terraform HCL source: python-hcl2 is not installed (pip install python-hcl2), so it is not read; "
                f"give the plan JSON: {PLAN_HINT}"
            ],
        )
    if len(text.encode("utf-8", "surrogatepass")) > MAX_HCL_BYTES:
        return Parsed(
            "terraform-hcl",
            notes=[
                f"Terraform HCL larger than {MAX_HCL_BYTES // 1024} KiB, more than the HCL reader reads in good time; give the plan "
                f"JSON: {PLAN_HINT}"
            ],
        )
    try:
        data = _load(text)
    except Exception as exc:  # the HCL reader's own errors: skipped with the reason, the plan is the authority
        # where, never what: the parser's message quotes the offending text, which is the file's own
        # content (and a file's content is not the reader's to repeat into a report)
        line, col = getattr(exc, "line", None), getattr(exc, "column", None)
        where = type(exc).__name__
        if isinstance(line, int) and isinstance(col, int):
            where += f" at line {line}, column {col}"
        return Parsed("terraform-hcl", notes=[f"Terraform HCL that python-hcl2 cannot parse ({where}); give the plan JSON: {PLAN_HINT}"])
    if not isinstance(data, dict):
        return Parsed("terraform-hcl", notes=["Terraform HCL without resources"])
    return data


def _resource_blocks(data: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(type, name, body) of every ``resource`` block."""
    resources: list[tuple[str, str, dict[str, Any]]] = []
    for block in data.get("resource", []):
        if not isinstance(block, dict):
            continue
        for rtype, named in block.items():
            if not isinstance(named, dict):
                continue
            for name, body in named.items():
                if isinstance(body, dict):
                    resources.append((rtype, name, body))
    return resources


def _resource_refs(resources: list[tuple[str, str, dict[str, Any]]]) -> dict[str, set[str]]:
    """The other resources each resource's body names (``google_tpu_v2_vm.x``, ...)."""
    refs: dict[str, set[str]] = {}
    for rtype, name, body in resources:
        found = {f"{m.group(1)}.{m.group(2)}" for m in _RESOURCE_REF.finditer(str(body))}
        refs[f"{rtype}.{name}"] = found - {f"{rtype}.{name}"}
    return refs


def _evaluate(
    ctx: _HclCtx, scope: _Scope, resources: list[tuple[str, str, dict[str, Any]]]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[tuple[str, str]]]]:
    """Every instance of the resources the plan readers read, as a plan ``resource_changes`` entry by
    address; and per address the hardware fields that cannot be evaluated. At most MAX_INSTANCES."""
    by_addr: dict[str, dict[str, Any]] = {}
    unresolved: dict[str, list[tuple[str, str]]] = {}
    total = 0
    for rtype, name, body in resources:
        if rtype in tfk8s.TYPES:
            continue  # the Kubernetes objects Terraform applies are read as manifests (tfk8s), not as resources
        if rtype not in tfplan.READ and not tfplan.machine_named(ctx.index, body) and not (
            _REFERENCES.search(json.dumps(body, default=str)[:MAX_UNREAD_TEXT])
            and tfplan.machine_named(ctx.index, scope.literal(body))
        ):
            continue  # a type no reader takes whose attributes, evaluated (var.itype, local.groups), name no accelerator
        base = f"{rtype}.{name}"
        for key, each, count_index, problem in _instances(scope, body):
            address = base + key
            if problem is not None:
                unresolved[address] = [problem]
            scope.each, scope.count = each, count_index
            after = scope.literal(body)
            scope.each, scope.count = None, None
            if not isinstance(after, dict):
                continue
            after.pop("count", None)
            after.pop("for_each", None)
            if rtype not in tfplan.READ:
                # a type no reader takes whose accelerator field the source does not settle (var.gpu_type without a
                # default): the field as written, so that it fails closed as unknown hardware
                found = tfplan.machine_named(ctx.index, after)
                hint = found or tfplan.machine_named(ctx.index, body) if found is None or found.startswith("${") else None
                if hint is not None:
                    after["accelerator_type"] = Unresolved(hint.removeprefix("${").removesuffix("}"))
            unresolved.setdefault(address, [])
            fields = HARDWARE_FIELDS + ZONE_FIELDS.get(rtype, ())
            unresolved[address] += [(f, e) for f, e in _unresolved_paths(after) if f.split(".")[0] in fields and _decides(f)]
            unknown = {k: True for k, v in after.items() if isinstance(v, Unresolved)}
            by_addr[address] = {
                "address": address,
                "type": rtype,
                "change": {"actions": ["create"], "before": None, "after": _plain(after), "after_unknown": unknown},
            }
            ctx.config_index.setdefault(base, []).append(address)
            total += 1
            if total > MAX_INSTANCES:
                from advisor.errors import InputError

                raise InputError.single(
                    ctx.path, ctx.blocks.get(base, 1), 1, f"more than {MAX_INSTANCES} resource instances (count / for_each)"
                )
    return by_addr, unresolved


# a field that names the accelerator itself (guest_accelerator.type, accelerator_type, accelerator_config, gpu_*, tpu_*)
_ACCELERATOR_FIELD = re.compile(r"(?:^|[._])(?:guest_accelerator|accelerators?|gpus?|tpus?)(?:[._]|$)")
# a field that names the machine (its accelerators come with it)
_MACHINE_FIELD = re.compile(r"(?:^|[._])(?:machine_type|instance_types?|vm_size|node_type)(?:[._]|$)")


def _first_line(text: str, address: str) -> int | None:
    """The line of the module block a module's resource address starts with (module.NAME[...]), None where none."""
    m = re.match(r'module\.([A-Za-z0-9_-]+)', address)
    if m is None:
        return None
    head = re.search(rf'^[ \t]*module\s+"?{re.escape(m.group(1))}"?\s*\{{', text, re.M)
    return None if head is None else text.count("\n", 0, head.start()) + 1


def _kubernetes_objects(ctx: _HclCtx, scope: _Scope, resources: list[tuple[str, str, dict[str, Any]]], out: Parsed) -> None:
    """Each instance of a resource that applies a Kubernetes object (tfk8s.TYPES), read by the Kubernetes reader at the
    resource's line; what the source does not settle in it is said on its requests."""
    for rtype, name, body in resources:
        if rtype not in tfk8s.TYPES:
            continue
        base = f"{rtype}.{name}"
        at = (ctx.blocks.get(base, 1), 1)
        for key, each, count_index, problem in _instances(scope, body):
            scope.each, scope.count = each, count_index
            after = scope.literal(body)
            scope.each, scope.count = None, None
            if not isinstance(after, dict):
                continue
            got = tfk8s.requests(ctx.path, rtype, base + key, _plain(after), body, at, ctx.index, _load, scope.literal)
            # the manifest's own field, when not a literal, tfk8s reads (yamlencode) or says itself
            said = [(f, e) for f, e in ([problem] if problem else []) + _unresolved_paths(after)
                    if tfk8s.sizes(f) and f != tfk8s.MANIFESTS.get(rtype)]
            for req in got.requests:
                req.unresolved += [(f, e[:80], at) for f, e in said]
            out.requests += got.requests
            out.autoscalers += got.autoscalers


def _report_unresolved(ctx: _HclCtx, out: Parsed, unresolved: dict[str, list[tuple[str, str]]], scope: _Scope | None = None) -> None:
    """What could not be evaluated: on the request read from that resource; a resource whose accelerator itself cannot be
    evaluated (``guest_accelerator { type = var.gpu }``, ``accelerator_type = var.tpu``) is a request of unknown hardware,
    never passed over; any other resource read no request from (a machine type from a variable) is a note naming it."""
    seen = {r.address for r in out.requests}
    for req in out.requests:
        for field, expr in unresolved.get(req.address, []):
            req.unresolved.append((field, expr[:80], (req.line, req.col)))
    hints: list[str | None] = []  # the accelerator machine type the file or its module's values name, looked up once

    def module_machine() -> str | None:
        if not hints:
            given = _quoted(ctx.text, 0, len(ctx.text)) + (
                _strings([scope.variables, scope.locals], [], [100_000]) if scope is not None else [])
            hints.append(next((q for q in given if ctx.index.instance_accelerator(q) is not None), None))
        return hints[0]

    for address, items in unresolved.items():
        if address in seen or not items:
            continue
        fields = ", ".join(sorted({f for f, _ in items}))
        named = [(f, e) for f, e in items if _ACCELERATOR_FIELD.search(f)]
        block = ctx.blocks.get(tfconfig.config_address(address))
        machine = [(f, e) for f, e in items if _MACHINE_FIELD.search(f)]
        if not named and machine and not seen:  # beside requests read, the file is not passed over: not guessed
            # a machine type that cannot be evaluated (a module's for_each over another module's output) where the file
            # gives accelerator machine types (a variable's default, a map of pools): a request of those, count unknown,
            # never a note only (review 33: equinor/radix's two H100 NVL pools per cluster passed, exit 0)
            hint = module_machine()
            if hint is not None:
                named = [(machine[0][0], hint)]
                block = block if block is not None else _first_line(ctx.text, address)
        if named and block is not None:
            req = Request(ctx.path, "terraform-hcl", address, block, 1)
            req.hardware, req.count = named[0][1][:80], None
            req.unknown = f"{named[0][0]} cannot be evaluated from the source ({named[0][1][:60]}); give the plan JSON: {PLAN_HINT}"
            req.unresolved += [(f, e[:80], (block, 1)) for f, e in items]
            out.requests.append(req)
            continue
        out.notes.append(f"{address}: {fields} cannot be evaluated from the source ({items[0][1][:60]}); give the plan JSON: {PLAN_HINT}")


# terraform-google-modules/kubernetes-engine (the registry module and its submodules, by registry or GitHub source):
# node_pools is a list of maps, each a google_container_node_pool the module creates as pools["NAME"]
_GKE_MODULE = re.compile(r"terraform-google-modules/(?:terraform-google-)?kubernetes-engine(?:/google)?(?://|$)")
_POOL_HARDWARE = {"machine_type", "accelerator_type", "accelerator_count", "autoscaling", "min_count", "max_count", "total_min_count",
                  "total_max_count", "node_count", "initial_node_count", "node_locations", "spot", "preemptible", "tpu_topology"}
_MODULE_BLOCK = re.compile(r'^[ \t]*module[ \t]+"([^"]+)"', re.M)  # [ \t]: \s would start at a blank line above


def _module_blocks(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, body, source) of every ``module`` block that names a source."""
    for block in data.get("module", []):
        for name, body in block.items() if isinstance(block, dict) else []:
            if isinstance(body, dict) and isinstance(body.get("source"), str):
                yield name, body, body["source"]


def _module_lines(text: str) -> dict[str, int]:
    """The line of each ``module "NAME" {`` block head of the file."""
    return {m.group(1): text.count("\n", 0, m.start()) + 1 for m in _MODULE_BLOCK.finditer(text)}


def _block_end(text: str, start: int) -> int:
    """Where the top-level block whose head ends at ``start`` ends: at the next top-level block, else the file's end."""
    after = _TOP_BLOCK.search(text, start)
    return after.start() if after else len(text)


def _quoted(text: str, start: int, end: int) -> list[str]:
    """The quoted strings of ``text[start:end]`` (at most 200): the machine and instance names a block may give."""
    return [q.group(1) for _, q in zip(range(200), _QUOTED.finditer(text, start, end), strict=False)]


Changes = dict[str, dict[str, Any]]  # plan resource_changes entries by address
Unknowns = dict[str, list[tuple[str, str]]]  # per address, the hardware fields that cannot be evaluated


def _module_calls(ctx: _HclCtx, scope: _Scope, data: dict[str, Any], text: str, by_addr: Changes, unresolved: Unknowns) -> None:
    """The resources a call of a registry module that creates accelerator nodes declares through its inputs
    (MODULE_READERS: its source -> the reader of its inputs), as the plan would list them, at the module block."""
    lines = _module_lines(text)
    for name, body, source in _module_blocks(data):
        for pattern, reader in MODULE_READERS:
            if pattern.search(source):
                reader(ctx, scope, name, body, lines.get(name, 1), by_addr, unresolved)
                break


# a call of a module kept in the repository (Terraform's "local paths" source: ./ or ../)
_LOCAL_MODULE = re.compile(r"\.{1,2}/")
# what a module block holds besides the module's inputs (Terraform's meta-arguments)
_MODULE_META = {"source", "version", "count", "for_each", "providers", "depends_on"}
MAX_MODULE_DEPTH = 8  # local modules calling local modules, as deep as this
# module instances one file's calls read, nested calls multiplied in (30 x 30 x 30 x 30 would be 810,000 reads, minutes):
# beyond it the file is an input error that says to check the plan JSON, never minutes of work
MAX_MODULE_INSTANCES = 2_000


def _local_modules(
    ctx: _HclCtx, scope: _Scope, data: dict[str, Any], by_addr: Changes, unresolved: Unknowns,
    line: int | None = None, seen: tuple[str, ...] = (), objects: Parsed | None = None,
) -> list[str]:
    """The resources of each call of a module kept in the repository (``source = "./modules/pool"``), read from the
    module's own .tf files with the call's inputs over the module's variable defaults (``nodes = 64``, not its default 1),
    once per instance of the call (``count`` / ``for_each``), as the plan lists them: ``module.NAME[KEY].TYPE.NAME``, at
    the module block's line (of the outermost call: the line a reviewer of this file reads). The Kubernetes objects the
    module applies (tfk8s.TYPES: kubectl_manifest, kubernetes_deployment_v1, ...) are read the same way, into
    ``objects``. Modules those modules call in turn are read the same way. Returns the directories read, so that their
    files are not also judged on their own at their defaults (run_check). A source outside the repository (a link,
    ``../`` past its root) is not read."""
    from advisor.yamlsrc import escapes, read_boundary

    root = read_boundary(ctx.path)
    lines = _module_lines(ctx.text) if line is None else {}
    read: list[str] = []
    for name, body, source in _module_blocks(data):
        if not _LOCAL_MODULE.match(source) or scope.module_dir is None:
            continue
        directory = os.path.normpath(os.path.join(scope.module_dir, source))
        if directory in seen or len(seen) >= MAX_MODULE_DEPTH or not os.path.isdir(directory) or escapes(directory, root):
            continue
        at = line if line is not None else lines.get(name, 1)
        module = _module_files(directory)
        resources = _resource_blocks(module)
        defaults, locals_, _region, _tfvars = _module_scope(directory, _SCOPES)
        inputs = {k: v for k, v in body.items() if k not in _MODULE_META and not k.startswith("__")}
        for key, each, count_index, problem in _instances(scope, body):
            ctx.module_instances[0] += 1
            if ctx.module_instances[0] > MAX_MODULE_INSTANCES:
                from advisor.errors import InputError

                raise InputError.single(ctx.path, at, 1, f"module.{name}: the modules this file calls, nested calls multiplied in, "
                                        f"make more than {MAX_MODULE_INSTANCES:,} instances: check the plan JSON instead")
            scope.each, scope.count = each, count_index
            given = {k: scope.literal(v) for k, v in inputs.items()}
            scope.each, scope.count = None, None
            inner = _Scope({**defaults, **given}, locals_, directory)
            child = _HclCtx(ctx.path, ctx.text, ctx.index, {}, _resource_refs(resources), ctx.aws_region)
            child.module_instances = ctx.module_instances
            found, unknown = _evaluate(child, inner, resources)
            # the registry modules it calls in turn (a wrapper of the GKE module: node_pools from its own inputs)
            _module_calls(child, inner, module, "", found, unknown)
            inside = Parsed("terraform-hcl")
            if objects is not None and any(typ in tfk8s.TYPES for typ, _n, _b in resources):
                _kubernetes_objects(child, inner, resources, inside)
            read += _local_modules(child, inner, module, found, unknown, at, (*seen, directory), inside if objects is not None else None)
            prefix = f"module.{name}{key}."
            for req in inside.requests:  # at the call, as the plan lists them (module.NAME[KEY]. before the address)
                req.address = prefix + req.address
                req.line, req.col, req.where = at, 1, {}
                req.unresolved = [(f, v, (at, 1)) for f, v, _ in req.unresolved] + ([(problem[0], problem[1][:80], (at, 1))]
                                                                                    if problem else [])
                req.notes.append(f"applied by the module {source} this file calls (module.{name}{key})")
            for scaler in inside.autoscalers:
                scaler.pos = (at, 1)
            if objects is not None:
                objects.requests += inside.requests
                objects.autoscalers += inside.autoscalers
            for address, change in found.items():
                by_addr[prefix + address] = dict(change, address=prefix + address)
                unresolved[prefix + address] = unknown.get(address, []) + ([problem] if problem else [])
            for base, addresses in child.config_index.items():
                config = tfconfig.config_address(prefix + base)
                ctx.config_index.setdefault(config, []).extend(prefix + a for a in addresses)
                ctx.blocks[config] = at
            for base, refs in child.refs.items():
                ctx.refs[tfconfig.config_address(prefix + base)] = {tfconfig.config_address(prefix + r) for r in refs}
        read.append(directory)
    return read


# what asks for chips in text a module passes on (Helm values, Kubernetes YAML, Karpenter pools as strings): a chip
# resource of a device plugin given a number (`nvidia.com/gpu: 4`, `"nvidia.com/gpu" = 4`); a word such as `gpu` in an
# input's name, or a toleration's key = "nvidia.com/gpu", does not
_CHIP_KEY = re.compile(
    r"((?:nvidia\.com|amd\.com)/gpu|google\.com/tpu|aws\.amazon\.com/neuron(?:core)?|habana\.ai/gaudi)[\"']?[ \t]*[:=][ \t]*[\"']?[0-9]"
)


def _strings(v: Any, out: list[str], budget: list[int]) -> list[str]:
    """The strings in an evaluated value (at most budget[0] nodes visited)."""
    budget[0] -= 1
    if budget[0] < 0:
        return out
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            _strings(x, out, budget)
    elif isinstance(v, list):
        for x in v:
            _strings(x, out, budget)
    return out


def _opaque_modules(path: str, text: str, data: dict[str, Any], index: NameIndex, scope: _Scope | None = None) -> list[Request]:
    """Fail closed on a call of a module this reader does not read (from a registry or Git, without a reader of its
    inputs: MODULE_READERS) whose inputs ask for chips: a chip resource of a device plugin in the values it passes on
    (``nvidia.com/gpu: 4`` in a Helm values heredoc) or a machine / instance type of an accelerator family the index
    knows (``"p5.48xlarge"``). Each is a request at the module block whose count is not read (request-unresolved):
    aws-ia/eks-data-addons installing a chart with 4 GPUs per pod was 'Terraform HCL without accelerator resources'."""
    out: list[Request] = []
    heads = {m.group(1): m for m in _MODULE_BLOCK.finditer(text)}
    for name, _body, source in _module_blocks(data):
        head = heads.get(name)
        if head is None or _LOCAL_MODULE.match(source) or any(p.search(source) for p, _r in MODULE_READERS):
            continue
        end = _block_end(text, head.end())
        chip = _CHIP_KEY.search(text, head.end(), end)
        machine = next((q for q in _quoted(text, head.end(), end) if index.instance_accelerator(q) is not None), None)
        if machine is None and scope is not None:
            # an input given by a variable, a local or a tfvars value (machine_type = var.mt, default "g2-standard-16"):
            # the value the module gets, not only the text of the block (review 33: only a literal was seen)
            try:
                given = _strings(scope.literal({k: v for k, v in _body.items() if k not in ("source", "version")}), [], [100_000])
            except (RecursionError, ValueError, TypeError):
                given = []
            machine = next((q for q in given if index.instance_accelerator(q) is not None), None)
        if chip is None and machine is None:
            continue
        line = text.count("\n", 0, head.start()) + 1
        req = Request(path, "terraform-hcl", f"module.{name}", line, 1)
        what = machine or (chip.group(1) if chip else "")
        if machine is not None:
            req.set_hardware(machine, index.lookup(machine))
        else:
            req.hardware = what
            req.unknown = f"module.{name} ({source[:80]}) asks for {what} in the inputs it passes on; which accelerator is not read here"
        req.count = None
        req.unresolved.append(("count-unknown", f"module.{name} ({source[:80]}) is not read here, but its inputs name {what!r}: "
                               f"give the plan JSON ({PLAN_HINT})", (line, 1)))
        out.append(req)
    return out


def _module_files(directory: str) -> dict[str, Any]:
    """The ``resource`` and ``module`` blocks of every .tf file of a module's directory (as many as _module_scope reads)."""
    merged: dict[str, list[Any]] = {"resource": [], "module": []}
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(TF_SUFFIXES))
    except OSError:
        return merged
    for n in names[:200]:
        data = _sibling(directory, n)
        for kind in merged:
            got = data.get(kind) if isinstance(data, dict) else None
            merged[kind] += got if isinstance(got, list) else []
    return merged


# bytes of a directory's Terraform files _directory_names_hardware reads at most: beyond, it answers yes (fail closed)
MAX_NAMES_SCAN_BYTES = 1024 * 1024
_NAMES_SCAN: dict[str, bool] = {}


def _directory_names_hardware(ctx: _HclCtx) -> bool:
    """Whether the file or the Terraform files of its directory (.tf, .tfvars, their JSON forms) name an accelerator
    anywhere (names.names_hardware): a chip word, or a machine or accelerator type the name index knows. Answered once
    per file (a file of many module calls asks once), reading at most MAX_NAMES_SCAN_BYTES: a directory larger than
    that is taken to name one, so an unevaluated pool is never passed over for it."""
    path = os.path.abspath(ctx.path) if ctx.path != "-" else ""
    directory = os.path.dirname(path) if path else ""
    try:
        names = sorted(os.listdir(directory)) if directory else []
    except OSError:
        names = []
    # the module's .tf files and the variable files Terraform loads by itself (terraform.tfvars, *.auto.tfvars)
    names = [n for n in names if n.endswith((*TF_SUFFIXES, ".auto.tfvars", ".auto.tfvars.json"))
             or n in ("terraform.tfvars", "terraform.tfvars.json")][:200]
    stamp = []
    for n in names:  # the files as they are now (a long-lived process sees an edit), as _module_scope keys its cache
        try:
            st = os.stat(os.path.join(directory, n))
            stamp.append(f"{n}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            continue
    key = "\0".join([path, str(hash(ctx.text)), *stamp])
    if key in _NAMES_SCAN:
        return _NAMES_SCAN[key]
    texts, total = [ctx.text], len(ctx.text)
    found: bool | None = None
    for n in names:
        if os.path.join(directory, n) == path or linked_outside(os.path.join(directory, n)):
            continue
        try:
            with open(os.path.join(directory, n), encoding="utf-8", errors="replace") as fh:
                text = fh.read(MAX_NAMES_SCAN_BYTES - total + 1)
        except OSError:
            continue
        total += len(text)
        if total > MAX_NAMES_SCAN_BYTES:
            found = True
            break
        texts.append(text)
    if found is None:
        found = names_hardware("\n".join(texts), ctx.index)
    if len(_NAMES_SCAN) > 256:
        _NAMES_SCAN.clear()
    _NAMES_SCAN[key] = found
    return found


def _gke_module_pools(
    ctx: _HclCtx, scope: _Scope, name: str, body: dict[str, Any], line: int, by_addr: Changes, unresolved: Unknowns
) -> None:
    """Each node pool a call of the GKE module declares (``node_pools = [{name, machine_type, accelerator_type,
    accelerator_count, min_count, max_count, ...}]``), read as the google_container_node_pool it creates, with the
    module's defaults (autoscaling on, min_count 1, max_count 100 per zone, e2-medium)."""
    base = f"module.{name}.google_container_node_pool.pools"
    ctx.blocks[tfconfig.config_address(base)] = line
    pools = scope.literal(body.get("node_pools", []))
    if isinstance(pools, Unresolved) or not isinstance(pools, list):
        # pools this reader cannot evaluate, in a module whose files name accelerators (a pool's accelerator_type in
        # terraform.auto.tfvars, a variable's default): a request of unknown hardware, never passed over
        field = "node_pools.accelerator_type" if _directory_names_hardware(ctx) else "node_pools"
        unresolved[f'{base}["?"]'] = [(field, str(body.get("node_pools"))[:80])]
        return
    region = scope.literal(body.get("region"))
    zones = scope.literal(body.get("zones"))
    regional = scope.literal(body.get("regional", True))
    for i, pool in enumerate(pools[:MAX_INSTANCES]):
        if not isinstance(pool, dict):
            continue
        key = pool.get("name") if isinstance(pool.get("name"), str) else str(i)
        address = f'{base}["{key}"]'
        unresolved[address] = [(f"node_pools.{f}", v.expr) for f, v in pool.items()
                               if isinstance(v, Unresolved) and f in _POOL_HARDWARE]
        p = _plain(pool)
        auto = p.get("autoscaling", True) is not False
        count = p.get("accelerator_count", 0)
        count = int(count) if isinstance(count, str) and _INT.fullmatch(count) else count
        locs = p.get("node_locations")
        node_locations = ([z.strip() for z in locs.split(",") if z.strip()] if isinstance(locs, str) and locs
                          else (zones if isinstance(zones, list) and zones and all(isinstance(z, str) for z in zones) else None))
        after: dict[str, Any] = {
            "name": key,
            "location": region if regional is not False and isinstance(region, str)
            else (node_locations[0] if node_locations else None),
            "node_locations": node_locations,
            "node_config": [{
                "machine_type": p.get("machine_type", "e2-medium"),
                "guest_accelerator": [{"type": p.get("accelerator_type"), "count": count}]
                if isinstance(count, int) and count > 0 else [],
                "spot": p.get("spot", False), "preemptible": p.get("preemptible", False),
            }],
        }
        if auto:
            if p.get("total_max_count") is not None:
                after["autoscaling"] = [{"total_min_node_count": p.get("total_min_count", 0),
                                         "total_max_node_count": p["total_max_count"]}]
            else:
                after["autoscaling"] = [{"min_node_count": p.get("min_count", 1), "max_node_count": p.get("max_count", 100)}]
        else:
            after["node_count"] = p.get("node_count", 1)
        if p.get("tpu_topology"):
            after["placement_policy"] = [{"tpu_topology": p["tpu_topology"]}]
        if p.get("queued_provisioning") is True:
            after["queued_provisioning"] = [{"enabled": True}]
        by_addr[address] = {"address": address, "type": "google_container_node_pool",
                            "change": {"actions": ["create"], "before": None, "after": after, "after_unknown": {}}}
        ctx.config_index.setdefault(base, []).append(address)


# terraform-aws-modules/eks (registry or GitHub source): eks_managed_node_groups is a map of node groups, each an
# aws_eks_node_group the module creates, over eks_managed_node_group_defaults
_EKS_MODULE = re.compile(r"terraform-aws-modules/(?:terraform-aws-)?eks(?:/aws)?(?://|\.git|\?|$)")
_GROUP_HARDWARE = {"instance_types", "min_size", "max_size", "desired_size", "capacity_type", "ami_type"}


def _eks_module_groups(
    ctx: _HclCtx, scope: _Scope, name: str, body: dict[str, Any], line: int, by_addr: Changes, unresolved: Unknowns
) -> None:
    """Each managed node group a call of the EKS module declares (``eks_managed_node_groups = {gpu = {instance_types,
    min_size, max_size, desired_size, capacity_type}}``), read as the aws_eks_node_group it creates, with the module's
    defaults (min 1, max 3, desired 1) and eks_managed_node_group_defaults under each group."""
    _eks_groups(ctx, scope, name, body, line, by_addr, unresolved, "eks_managed")
    if "self_managed_node_groups" in body:  # self-managed groups (an autoscaling group each), where the call declares them
        _eks_groups(ctx, scope, name, body, line, by_addr, unresolved, "self_managed")


def _eks_groups(
    ctx: _HclCtx, scope: _Scope, name: str, body: dict[str, Any], line: int, by_addr: Changes, unresolved: Unknowns, kind: str,
) -> None:
    base = f"module.{name}.module.{kind}_node_group"
    groups = scope.literal(body.get(f"{kind}_node_groups", {}))
    defaults = scope.literal(body.get(f"{kind}_node_group_defaults", {}))
    defaults = defaults if isinstance(defaults, dict) else {}
    if isinstance(groups, Unresolved) or not isinstance(groups, dict):
        address = f'{base}["?"].aws_eks_node_group.this[0]'
        ctx.blocks[tfconfig.config_address(address)] = line
        unresolved[address] = [(f"{kind}_node_groups", str(body.get(f"{kind}_node_groups"))[:80])]
        return
    for key, group in list(groups.items())[:MAX_INSTANCES]:
        if not isinstance(group, dict):
            continue
        merged = {**defaults, **group}
        address = f'{base}["{key}"].aws_eks_node_group.this[0]'
        ctx.blocks[tfconfig.config_address(address)] = line
        unresolved[address] = [(f"{kind}_node_groups.{key}.{f}", v.expr) for f, v in merged.items()
                               if isinstance(v, Unresolved) and f in _GROUP_HARDWARE | {"instance_type"}]
        g = _plain(merged)
        single = [g["instance_type"]] if isinstance(g.get("instance_type"), str) else None  # a self-managed group's one type
        after = {
            "instance_types": g.get("instance_types") or single or ["t3.medium" if kind == "eks_managed" else "m6i.large"],
            "scaling_config": [{"min_size": g.get("min_size", 1), "max_size": g.get("max_size", 3),
                                "desired_size": g.get("desired_size", 1)}],
            "capacity_type": g.get("capacity_type", "ON_DEMAND"),
            "labels": g.get("labels"), "tags": g.get("tags"),
        }
        by_addr[address] = {"address": address, "type": "aws_eks_node_group",
                            "change": {"actions": ["create"], "before": None, "after": after, "after_unknown": {}}}


# Azure/aks/azurerm (registry or GitHub source): the cluster's default pool from agents_* and a node_pools map, each an
# azurerm_kubernetes_cluster_node_pool the module creates
_AKS_MODULE = re.compile(r"(?i)(?:^|/)Azure/aks/azurerm(?://|\?|$)|terraform-azurerm-aks(?://|\.git|\?|$)")
_AKS_HARDWARE = {"vm_size", "node_count", "min_count", "max_count", "enable_auto_scaling", "auto_scaling_enabled", "priority"}


def _aks_module_pools(
    ctx: _HclCtx, scope: _Scope, name: str, body: dict[str, Any], line: int, by_addr: Changes, unresolved: Unknowns
) -> None:
    """A call of the AKS module: its default pool (``agents_size``, ``agents_count``, ``agents_min_count`` /
    ``agents_max_count`` with ``enable_auto_scaling`` / ``auto_scaling_enabled``; the module's defaults
    Standard_D2s_v3 x 2) as the cluster's default_node_pool, and each ``node_pools`` entry as the
    azurerm_kubernetes_cluster_node_pool it creates (``node_pool_create_before_destroy["KEY"]``)."""
    location = scope.literal(body.get("location"))
    location = location if isinstance(location, str) else None
    agents = {k: body[k] for k in ("agents_size", "agents_count", "agents_min_count", "agents_max_count", "enable_auto_scaling",
                                   "auto_scaling_enabled") if k in body}
    cluster = f"module.{name}.azurerm_kubernetes_cluster.main"
    ctx.blocks[tfconfig.config_address(cluster)] = line
    got = {k: scope.literal(v) for k, v in agents.items()}
    unresolved[cluster] = [(k, v.expr) for k, v in got.items() if isinstance(v, Unresolved)]
    a = _plain(got)
    pool = {"vm_size": a.get("agents_size", "Standard_D2s_v3"), "node_count": a.get("agents_count", 2),
            "min_count": a.get("agents_min_count"), "max_count": a.get("agents_max_count"),
            "auto_scaling_enabled": a.get("auto_scaling_enabled", a.get("enable_auto_scaling", False))}
    by_addr[cluster] = {"address": cluster, "type": "azurerm_kubernetes_cluster", "change": {
        "actions": ["create"], "before": None, "after": {"location": location, "default_node_pool": [pool]}, "after_unknown": {}}}
    pools = scope.literal(body.get("node_pools", {}))
    base = f"module.{name}.azurerm_kubernetes_cluster_node_pool.node_pool_create_before_destroy"
    ctx.blocks[tfconfig.config_address(base)] = line
    if isinstance(pools, Unresolved) or not isinstance(pools, dict):
        unresolved[f'{base}["?"]'] = [("node_pools", str(body.get("node_pools"))[:80])]
        return
    for key, p in list(pools.items())[:MAX_INSTANCES]:
        if not isinstance(p, dict):
            continue
        address = f'{base}["{key}"]'
        unresolved[address] = [(f"node_pools.{key}.{f}", v.expr) for f, v in p.items() if isinstance(v, Unresolved) and f in _AKS_HARDWARE]
        q = _plain(p)
        after = {"vm_size": q.get("vm_size"), "node_count": q.get("node_count"), "min_count": q.get("min_count"),
                 "max_count": q.get("max_count"), "priority": q.get("priority"), "location": location,
                 "auto_scaling_enabled": q.get("auto_scaling_enabled", q.get("enable_auto_scaling", False)),
                 "node_labels": q.get("node_labels"), "tags": q.get("tags")}
        by_addr[address] = {"address": address, "type": "azurerm_kubernetes_cluster_node_pool",
                            "change": {"actions": ["create"], "before": None, "after": after, "after_unknown": {}}}


# The registry modules whose inputs declare accelerator nodes: the source that names one, and its reader
MODULE_READERS: list[tuple[re.Pattern[str], Callable[[_HclCtx, _Scope, str, dict[str, Any], int, Changes, Unknowns], None]]] = [
    (_GKE_MODULE, _gke_module_pools),
    (_EKS_MODULE, _eks_module_groups),
    (_AKS_MODULE, _aks_module_pools),
]

def _instances(scope: _Scope, body: dict[str, Any]) -> list[tuple[str, tuple[Any, Any] | None, int | None, tuple[str, str] | None]]:
    """(address suffix, each (key, value), count.index, a problem) of every instance."""
    if "count" in body:
        n = scope.literal(body["count"])
        if isinstance(n, bool) or not isinstance(n, int):
            return [("[0]", None, 0, ("count", str(body["count"])[:80]))]
        n = max(0, min(n, MAX_INSTANCES + 1))
        return [(f"[{i}]", None, i, None) for i in range(n)]
    if "for_each" in body:
        items = scope.literal(body["for_each"])
        if isinstance(items, dict):
            return [(f'["{k}"]', (k, v), None, None) for k, v in list(items.items())[: MAX_INSTANCES + 1]]
        if isinstance(items, list) and all(isinstance(x, (str, int)) for x in items):
            return [(f'["{k}"]', (k, k), None, None) for k in list(dict.fromkeys(items))[: MAX_INSTANCES + 1]]
        return [('["?"]', None, None, ("for_each", str(body["for_each"])[:80]))]
    return [("", None, None, None)]
