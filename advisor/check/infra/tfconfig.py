"""The configuration half of a Terraform plan JSON and the .tf files beside it: where each resource block is
written (file and line, through local module calls), the provider's region, and which resources a resource's
expressions reference (to join a group to its template before the plan knows the template's id)."""

from __future__ import annotations

import re
from typing import Any

INDEX = re.compile(r"\[[^\]]*\]$")
ADDRESS = re.compile(r'"address"\s*:\s*("(?:[^"\\]|\\.)*")')
RESOURCE = re.compile(r'^[ \t]*resource[ \t]+"([^"]+)"[ \t]+"([^"]+)"', re.M)


def tf_blocks(directory: str) -> dict[str, tuple[str, int]]:
    """``type.name`` -> (file, line) of every ``resource`` block in the directory's .tf (and .tofu) files."""
    import os

    from advisor.check.files import TF_SUFFIXES
    from advisor.yamlsrc import linked_outside

    out: dict[str, tuple[str, int]] = {}
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(TF_SUFFIXES))
    except OSError:
        return out
    for n in names[:500]:
        f = os.path.join(directory, n)
        if linked_outside(f):  # never read through a link out of the repository
            continue
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                text = fh.read(4 * 1024 * 1024)
        except OSError:
            continue
        for m in RESOURCE.finditer(text):
            out.setdefault(f"{m.group(1)}.{m.group(2)}", (f, text.count("\n", 0, m.start()) + 1))
    return out


def config_sources(path: str, plan: dict[str, Any]) -> dict[str, tuple[str, int]]:
    import os

    if path == "-":
        return {}
    out: dict[str, tuple[str, int]] = {}
    conf = plan.get("configuration")
    root = os.path.dirname(path) or "."
    stack: list[tuple[Any, str, str]] = [(conf.get("root_module") if isinstance(conf, dict) else None, "", root)]
    seen = 0
    while stack and seen < 200:
        mod, prefix, directory = stack.pop()
        seen += 1
        for addr, where in tf_blocks(directory).items():
            out.setdefault(prefix + addr, where)
        calls = mod.get("module_calls") if isinstance(mod, dict) else None
        if isinstance(calls, dict):
            for name, call in calls.items():
                src = call.get("source") if isinstance(call, dict) else None
                if isinstance(src, str) and src.startswith(("./", "../")):
                    stack.append((call.get("module"), f"{prefix}module.{name}.", os.path.normpath(os.path.join(directory, src))))
    return out


def provider_region(plan: dict[str, Any], name: str) -> str | None:
    conf = plan.get("configuration")
    pc = conf.get("provider_config") if isinstance(conf, dict) else None
    if not isinstance(pc, dict):
        return None
    for key, prov in pc.items():
        if isinstance(key, str) and key.split(".")[0] == name and isinstance(prov, dict):
            expr = prov.get("expressions")
            region = expr.get("region") if isinstance(expr, dict) else None
            if isinstance(region, dict) and isinstance(region.get("constant_value"), str):
                return str(region["constant_value"])
    return None


def config_refs(plan: dict[str, Any]) -> dict[str, set[str]]:
    """Configuration address -> resource addresses its expressions reference (joins a group to
    its template when the plan cannot know the template's id yet)."""
    out: dict[str, set[str]] = {}
    conf = plan.get("configuration")
    stack: list[tuple[Any, str]] = [(conf.get("root_module") if isinstance(conf, dict) else None, "")]
    while stack:
        mod, prefix = stack.pop()
        if not isinstance(mod, dict):
            continue
        resources = mod.get("resources")
        for res in resources if isinstance(resources, list) else []:
            if not isinstance(res, dict) or not isinstance(res.get("address"), str):
                continue
            refs: set[str] = set()
            todo = [res.get("expressions")]
            while todo:
                node = todo.pop()
                if isinstance(node, dict):
                    for k, v in node.items():
                        if k == "references" and isinstance(v, list):
                            for r in v:
                                if isinstance(r, str):
                                    parts = r.split(".")
                                    if len(parts) >= 2 and parts[0] not in ("var", "local", "module", "data", "each", "count"):
                                        refs.add(prefix + INDEX.sub("", parts[0] + "." + parts[1]))
                        else:
                            todo.append(v)
                elif isinstance(node, list):
                    todo.extend(node)
            out[prefix + res["address"]] = refs
        calls = mod.get("module_calls")
        if isinstance(calls, dict):
            for name, call in calls.items():
                if isinstance(call, dict):
                    stack.append((call.get("module"), f"{prefix}module.{name}."))
    return out


def config_address(address: str) -> str:
    parts = re.split(r"(?<=\])\.|\.(?=module\.)", address)
    return ".".join(INDEX.sub("", p) for p in parts)
