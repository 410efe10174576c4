"""A Helm chart read without ``helm``: its templates rendered with its own ``values.yaml`` by a small
interpreter of the Go-template subset charts use, then read as the Kubernetes manifests they are.

When ``helm`` is on PATH the chart is rendered by ``helm template`` instead (``check.batch``). This
reader exists so that a chart is never passed unseen on a runner without helm: before it, a chart
asking for 128 H100 was "skipped" and the gate passed.

What is evaluated: actions and pipelines over ``.Values`` / ``.Release`` / ``.Chart`` and variables;
``if`` / ``else if`` / ``else``, ``with``, ``range`` (lists and maps), ``define`` / ``include`` /
``template``; the functions charts use to place values (``default``, ``quote``, ``toYaml``,
``nindent``, ``int``, ``printf``, comparisons, ``and`` / ``or`` / ``not``, ``dict`` / ``list`` /
``index`` / ``hasKey``, string helpers) and subcharts under ``charts/`` with their values.
Anything else (``.Files``, ``tpl``, ``env``, an unknown function, a helper no template defines)
evaluates to *unknown*: printed as a ``${...}`` placeholder, which the manifest reader reports as
an unresolved field, never guessed; a condition that is unknown takes its first branch and the
request is flagged. As under ``helm template``, a missing ``.Values`` key is nil and ``lookup``
finds nothing. Nothing is executed, no file outside the chart is read, and the work
is bounded (output size, steps, include depth).

Positions are the template's: each rendered line maps back to the template line it came from.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from advisor.check.infra.asks import asks_for_chips
from advisor.check.infra.model import Parsed, label_variant
from advisor.errors import InputError, Problem

MAX_OUTPUT = 8 * 1024 * 1024  # rendered characters per template (a CRD a chart ships can be megabytes)
MAX_STEPS = 1_000_000  # nodes evaluated per template (an include counts as INCLUDE_STEPS)
INCLUDE_STEPS = 20
MAX_INCLUDE_DEPTH = 40
MAX_FILES = 500  # template files per chart (subcharts included)
MAX_TEMPLATE_BYTES = 8 * 1024 * 1024  # as for any YAML file the gate reads
MAX_CHART_BYTES = 64 * 1024 * 1024  # template files read per chart, subcharts included
MAX_SUBCHART_DEPTH = 3
MAX_NESTING = 100  # blocks inside blocks, parentheses inside parentheses
RELEASE_NAME = "release-name"  # the name `helm template` gives when none is passed
KUBE_VERSION = "v1.30.0"
# `helm template` without --api-versions answers .Capabilities.APIVersions.Has from the built-in
# Kubernetes API groups only (no custom resources): these, with or without a version or kind.
BUILTIN_API_GROUPS = frozenset({
    "v1", "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io",
    "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io",
    "node.k8s.io", "certificates.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io",
})


_PLACEHOLDER_LINE = re.compile(r"[ \t]*((?:\$\{[^}\n]*\}[ \t]*)+)")  # a rendered line that is only placeholders
_CHIP_TEXT = re.compile(r"nvidia\.com/gpu|amd\.com/gpu|google\.com/tpu|gke-accelerator|gke-tpu-accelerator")


class Unknown:
    """A value the interpreter does not evaluate; ``text`` is what to show in its place."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def render(self) -> str:
        return "${" + (re.sub(r"[^A-Za-z0-9_.$-]+", " ", self.text).strip()[:60] or "helm") + "}"


class _Limit(Exception):
    pass


# ----------------------------------------------------------------------------------------- lexing


@dataclass
class _Text:
    text: str
    line: int


@dataclass
class _Act:
    expr: str
    line: int


@dataclass
class _Block:
    kind: str  # if | with | range | define
    expr: str
    line: int
    body: list[Any] = field(default_factory=list)
    branches: list[tuple[str | None, list[Any]]] = field(default_factory=list)  # else-if / else arms


@dataclass(frozen=True)
class _Action:
    """One action of a template: where it starts and ends in the source, its left trim (``{{- ``), its body (or its
    ``/* */`` comment), its right trim (`` -}}``)."""

    start: int
    end: int
    left: bool
    body: str
    right: bool


_WS = " \t\r\n"


def _actions(src: str) -> Iterator[_Action]:
    """The actions of ``src`` (``{{``, an optional ``- `` trim, a body or a ``/* */`` comment, an optional `` -`` trim,
    ``}}``), found in linear time: an action ends at the first ``}}`` after its ``{{`` (a
    ``/* */`` comment closed right before its ``}}`` may hold one), and where none follows, no later ``{{`` starts one
    (the regular expression rescanned to the end from each unclosed ``{{``: 20,000 of them took 37 s, review 29)."""
    pos = 0
    while (i := src.find("{{", pos)) >= 0:
        j = i + 2
        left = src[j : j + 1] == "-" and src[j + 1 : j + 2] != "" and src[j + 1] in _WS
        if left:
            j += 2
        if src.startswith("/*", j) and (k := src.find("*/", j + 2)) >= 0:
            after = k + 2
            right = src[after : after + 1] in tuple(_WS) and src.startswith("-}}", after + 1)
            if right or src.startswith("}}", after):
                end = after + (4 if right else 2)
                yield _Action(i, end, left, src[j:after], right)
                pos = end
                continue
        e = src.find("}}", j)
        if e < 0:
            return
        body = src[j:e]
        right = len(body) >= 2 and body[-1] == "-" and body[-2] in _WS
        yield _Action(i, e + 2, left, body[:-2] if right else body, right)
        pos = e + 2


def _lex(src: str) -> list[_Text | _Act]:
    """Text and actions, whitespace trimmed where ``{{-`` / ``-}}`` say (as Go's lexer does)."""
    out: list[_Text | _Act] = []
    pos, line, trim_next = 0, 1, False
    for m in _actions(src):
        text = src[pos : m.start]
        start = line
        if trim_next:
            stripped = text.lstrip(" \t\r\n")
            start += text[: len(text) - len(stripped)].count("\n")
            text = stripped
        if m.left:
            text = text.rstrip(" \t\r\n")
        if text:
            out.append(_Text(text, start))
        line += src.count("\n", pos, m.start)
        body = m.body.strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(_Act(body, line))
        line += src.count("\n", m.start, m.end)
        pos, trim_next = m.end, m.right
    text = src[pos:]
    if trim_next:
        stripped = text.lstrip(" \t\r\n")
        line += text[: len(text) - len(stripped)].count("\n")
        text = stripped
    if text:
        out.append(_Text(text, line))
    return out


_KEYWORD = re.compile(r"^(if|else if|else with|else|with|range|define|block|end|template|break|continue)\b\s*(.*)$", re.S)


def _parse(tokens: list[_Text | _Act], path: str) -> list[Any]:
    root: list[Any] = []
    stack: list[tuple[_Block, list[Any]]] = []
    cur = root
    for tok in tokens:
        if isinstance(tok, _Text):
            cur.append(tok)
            continue
        m = _KEYWORD.match(tok.expr)
        if not m:
            cur.append(tok)
            continue
        word, rest = m.group(1), m.group(2).strip()
        if word in ("if", "with", "range", "define", "block"):
            if len(stack) >= MAX_NESTING:
                raise InputError.single(path, tok.line, 1, f"template: blocks nested more than {MAX_NESTING} deep")
            blk = _Block(word, rest, tok.line)
            cur.append(blk)
            stack.append((blk, cur))
            cur = blk.body
        elif word in ("else", "else if", "else with"):
            if not stack:
                raise InputError.single(path, tok.line, 1, f"template: {{{{{word}}}}} outside a block")
            blk = stack[-1][0]
            arm: list[Any] = []
            blk.branches.append((rest if word != "else" else None, arm))
            cur = arm
        elif word == "end":
            if not stack:
                raise InputError.single(path, tok.line, 1, "template: {{end}} without a block")
            _blk, cur = stack.pop()
        elif word == "template":
            cur.append(_Act("include " + rest, tok.line))
        else:  # break / continue: not evaluated
            cur.append(_Act("__unknown__ " + word, tok.line))
    if stack:
        raise InputError.single(path, stack[-1][0].line, 1, f"template: {{{{{stack[-1][0].kind}}}}} is never closed with {{{{end}}}}")
    return root


# ------------------------------------------------------------------------------------ expressions

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<chr>'(?:[^'\\]|\\.)')
      | (?P<num>-?\d+(?:\.\d+)?(?![\w.]))
      | (?P<pipe>\|)
      | (?P<open>\()
      | (?P<close>\)(?:\.[A-Za-z_]\w*)*)
      | (?P<assign>:?=)
      | (?P<comma>,)
      | (?P<var>\$[A-Za-z_0-9]*(?:\.[A-Za-z_]\w*)*)
      | (?P<field>(?:\.[A-Za-z_]\w*)+|\.)
      | (?P<ident>[A-Za-z_]\w*)
    )""",
    re.X,
)


@lru_cache(maxsize=8192)
def _tokens(expr: str) -> tuple[tuple[str, str], ...]:
    return tuple(_tokenize(expr))


def _tokenize(expr: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {expr[pos:pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return out


def truth(v: Any) -> bool | None:
    """Go template truth; None when unknown."""
    if isinstance(v, Unknown):
        return None
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict, tuple)):
        return len(v) > 0
    return True


def _string(v: Any) -> str:
    if isinstance(v, Unknown):
        return v.render()
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return _to_yaml(v).replace("\n", " ")
    return str(v)


MAX_PRINTED_NODES = 100_000  # values a toYaml / toJson / printed structure holds, at most (shared ones counted each time)


def _to_json(v: Any) -> str:
    import json

    if not _printable(v):
        raise _Limit(f"prints a structure of more than {MAX_PRINTED_NODES:,} values")
    return json.dumps(v, sort_keys=True)


def _printable(v: Any) -> bool:
    """Whether a structure prints within MAX_PRINTED_NODES values: one built of itself (`$x = list $x $x` 60 times) holds
    2^60 once printed (review 34's fromYaml alias chain filled 23 GB): counted as it would print, stopping at the bound."""
    stack, seen = [v], 0
    while stack:
        x = stack.pop()
        seen += 1
        if seen > MAX_PRINTED_NODES:
            return False
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return True


def _to_yaml(v: Any) -> str:
    import yaml

    if not _printable(v):
        raise _Limit(f"prints a structure of more than {MAX_PRINTED_NODES:,} values")

    def plain(x: Any) -> Any:
        if isinstance(x, Unknown):
            return x.render()
        if isinstance(x, dict):
            return {str(k): plain(y) for k, y in x.items()}
        if isinstance(x, list):
            return [plain(y) for y in x]
        return x

    if v is None:
        return "null"
    text = str(yaml.safe_dump(plain(v), default_flow_style=False, sort_keys=True, allow_unicode=True, width=10_000))
    return text.rstrip("\n").removesuffix("\n...")


def _indent(n: Any, s: Any) -> Any:
    """Indented text; an unknown value keeps its place in the layout as its placeholder, so the
    manifest around it still reads (and the field it fills reads as unresolved)."""
    if isinstance(n, (Unknown, bool)) or not isinstance(n, int):
        return Unknown("indent")
    pad = " " * max(0, min(n, 200))
    return "\n".join(pad + ln for ln in _string(s).split("\n"))


def _int64(v: int) -> int:
    """An integer Helm's int64 arithmetic holds; beyond it the caller's value is unknown (review 34: `mul $x $x` 34 times
    over computed Python big integers for minutes)."""
    if not -(2**63) <= v < 2**63:
        raise ValueError("beyond int64")
    return v


def _num(v: Any) -> Any:
    if isinstance(v, Unknown):
        return v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", v):
        return int(float(v))
    if v is None:
        return 0
    return Unknown("int")


def _cmp(op: Callable[[Any, Any], bool]) -> Callable[..., Any]:
    def f(a: Any, b: Any, *rest: Any) -> Any:
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return Unknown("compare")
        try:
            return op(a, b)
        except TypeError:
            return Unknown("compare")

    return f


def _eq(a: Any, *bs: Any) -> Any:
    if isinstance(a, Unknown) or any(isinstance(b, Unknown) for b in bs):
        return Unknown("eq")
    return any(a == b for b in bs)


def _default(d: Any, *v: Any) -> Any:
    if not v:
        return d
    x = v[-1]
    if isinstance(x, Unknown):
        return x
    return x if truth(x) else d


_VERB = re.compile(r"%[-+ #0]*\d*(?:\.(\d+))?([A-Za-z%])")


def _verb(verb: str, v: Any, precision: str | None = None) -> str:
    """One Go fmt verb of a value: the ones charts use; any other is not rendered here (ValueError)."""
    if verb in "sv":
        return _string(v)
    if verb == "q":
        return json.dumps(_string(v))
    if verb == "t" and isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(verb)
    if verb == "d" and isinstance(v, int):
        return str(v)
    if verb == "c" and isinstance(v, int) and 0 <= v <= 0x10FFFF:
        return chr(v)
    if verb in "xXob" and isinstance(v, int):
        return format(v, {"x": "x", "X": "X", "o": "o", "b": "b"}[verb])
    if verb in "fFeE":
        return format(float(v), f".{precision or 6}{verb.lower() if verb == 'F' else verb}")
    if verb in "gG":  # Go's %g: the shortest representation
        return repr(float(v)) if precision is None else format(float(v), f".{precision}{verb}")
    raise ValueError(verb)


def _printf(fmt: Any, *args: Any) -> Any:
    """Go's fmt.Sprintf for the verbs charts use (%s %v %q %d %c %x %X %o %b %t %f %e %g, flags and widths read, not
    applied); any other verb, too few arguments or an unknown argument is unknown, never text with the verb left in."""
    if isinstance(fmt, Unknown) or any(isinstance(a, Unknown) for a in args):
        return Unknown("printf")
    parts = iter(args)
    try:
        return _VERB.sub(lambda m: "%" if m.group(2) == "%" else _verb(m.group(2), next(parts), m.group(1)), str(fmt))
    except (StopIteration, ValueError):
        return Unknown("printf")


def _str_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function of known values: an unknown argument passes through (it names what is missing, such as
    ``.Values.model.tp_size``); a failure is unknown, named after the function by the caller."""
    def f(*args: Any) -> Any:
        for a in args:
            if isinstance(a, Unknown):
                return a
        try:
            return fn(*args)
        except (TypeError, ValueError, AttributeError, IndexError, OverflowError, ZeroDivisionError):
            return Unknown("")

    return f


def _index(v: Any, *keys: Any) -> Any:
    for k in keys:
        if isinstance(v, Unknown) or isinstance(k, Unknown):
            return Unknown("index")
        if isinstance(v, dict):
            if k not in v:
                return None
            v = v[k]
        elif isinstance(v, list) and isinstance(k, int) and 0 <= k < len(v):
            v = v[k]
        else:
            return None
    return v


def _dict(*kv: Any) -> Any:
    out: dict[str, Any] = {}
    for i in range(0, len(kv) - 1, 2):
        out[_string(kv[i])] = kv[i + 1]
    return out


def _from_yaml(s: Any) -> Any:
    import yaml

    if isinstance(s, Unknown) or not isinstance(s, str):
        return Unknown("fromYaml")
    if len(s) > 1024 * 1024:
        return Unknown("fromYaml")
    from advisor.errors import InputError
    from advisor.yamlsrc import load_documents

    # the bounded reader (aliases weighed as what they expand to; review 34: a 2 KB chain of 40 aliases expanded by
    # toJson filled 23 GB); a document it refuses is unknown, one that is no YAML the error Helm's fromYaml returns
    try:
        docs = load_documents(s, "fromYaml", max_nodes=100_000)
    except InputError as exc:
        limit = any(w in str(exc) for w in ("nodes", "deeper", "alias"))
        return Unknown("fromYaml") if limit else {"Error": "fromYaml"}
    except yaml.YAMLError:
        return {"Error": "fromYaml"}
    v = docs[0].data if docs else None
    return v if v is not None else {}


def _concat(*lists: Any) -> Any:
    out: list[Any] = []
    for x in lists:
        if isinstance(x, Unknown):
            return x
        if isinstance(x, list):
            out += x
        elif x is not None:
            return Unknown("concat")
    return out


def _deep_copy(v: Any) -> Any:
    import copy

    return copy.deepcopy(v)


def _merge_deep(dst: Any, src: Any, overwrite: bool) -> Any:
    if isinstance(dst, dict) and isinstance(src, dict):
        for k, v in src.items():
            if k in dst and isinstance(dst[k], dict) and isinstance(v, dict):
                _merge_deep(dst[k], v, overwrite)
            elif overwrite or k not in dst or dst[k] is None:
                dst[k] = v
    return dst


def _merge_fn(overwrite: bool) -> Callable[..., Any]:
    def f(dst: Any, *srcs: Any) -> Any:
        if not isinstance(dst, dict) or any(isinstance(x, Unknown) for x in srcs):
            return Unknown("merge")
        for x in srcs:
            if not (_printable(x) and _printable(dst)):  # a structure built of itself is walked as what it prints to
                raise _Limit(f"merges a structure of more than {MAX_PRINTED_NODES:,} values")
            _merge_deep(dst, x, overwrite)
        return dst

    return f


def _set(d: Any, k: Any, v: Any) -> Any:
    if not isinstance(d, dict) or isinstance(k, Unknown):
        return Unknown("set")
    d[_string(k)] = v
    return d


def _version(text: str) -> tuple[int, ...] | None:
    m = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", text.strip())
    return tuple(int(x or 0) for x in m.groups()) if m else None


def _semver_compare(constraint: Any, version: Any) -> Any:
    """The plain comparisons charts use on the Kubernetes version (``>=1.19-0``); else unknown."""
    if not isinstance(constraint, str) or not isinstance(version, str):
        return Unknown("semverCompare")
    m = re.fullmatch(r"\s*(>=|<=|>|<|=|!=)?\s*(v?\d+(?:\.\d+){0,2})(?:-0)?\s*", constraint)
    have = _version(version)
    if not m or have is None:
        return Unknown("semverCompare")
    want = _version(m.group(2))
    assert want is not None
    op = m.group(1) or "="
    return {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want, "=": have == want, "!=": have != want}[op]


def _ternary(a: Any, b: Any, c: Any) -> Any:
    t = truth(c)
    return Unknown("ternary") if t is None else (a if t else b)


def _required(_msg: Any, v: Any = None) -> Any:
    return v if v is not None else Unknown("required")


FUNCS: dict[str, Callable[..., Any]] = {
    "default": _default,
    "quote": lambda *a: a[-1] if isinstance(a[-1], Unknown) else '"' + _string(a[-1]).replace('"', '\\"') + '"',
    "squote": lambda *a: a[-1] if isinstance(a[-1], Unknown) else "'" + _string(a[-1]) + "'",
    "toYaml": lambda v: Unknown("toYaml") if isinstance(v, Unknown) else _to_yaml(v),
    "toJson": _str_fn(lambda v: _to_json(v)),
    "nindent": lambda n, s: v if isinstance(v := _indent(n, s), Unknown) else "\n" + v,
    "indent": _indent,
    "int": _num,
    "int64": _num,
    "atoi": _num,
    "float64": _num,
    "toString": lambda v: v if isinstance(v, Unknown) else _string(v),
    "trim": _str_fn(lambda s: _string(s).strip()),
    "trimSuffix": _str_fn(lambda suf, s: _string(s).removesuffix(_string(suf))),
    "trimPrefix": _str_fn(lambda pre, s: _string(s).removeprefix(_string(pre))),
    "trunc": _str_fn(lambda n, s: _string(s)[: int(n)] if int(n) >= 0 else _string(s)[int(n):]),
    "lower": _str_fn(lambda s: _string(s).lower()),
    "upper": _str_fn(lambda s: _string(s).upper()),
    "title": _str_fn(lambda s: _string(s).title()),
    "replace": _str_fn(lambda old, new, s: _string(s).replace(_string(old), _string(new))),
    "contains": _str_fn(lambda sub, s: _string(sub) in _string(s)),
    "hasPrefix": _str_fn(lambda pre, s: _string(s).startswith(_string(pre))),
    "hasSuffix": _str_fn(lambda suf, s: _string(s).endswith(_string(suf))),
    "printf": _printf,
    "print": _str_fn(lambda *a: "".join(_string(x) for x in a)),
    "not": lambda v: Unknown("not") if truth(v) is None else not truth(v),
    "eq": _eq,
    "ne": lambda a, b: Unknown("ne") if isinstance(x := _eq(a, b), Unknown) else not x,
    "lt": _cmp(lambda a, b: a < b),
    "le": _cmp(lambda a, b: a <= b),
    "gt": _cmp(lambda a, b: a > b),
    "ge": _cmp(lambda a, b: a >= b),
    "empty": lambda v: Unknown("empty") if truth(v) is None else not truth(v),
    "hasKey": _str_fn(lambda d, k: k in d if isinstance(d, dict) else False),
    "index": _index,
    "get": _str_fn(lambda d, k: d.get(k, "") if isinstance(d, dict) else ""),
    # Go's len of a string counts its UTF-8 bytes ("é" is 2), of a list or map its items
    "len": _str_fn(lambda v: len(v.encode("utf-8", "surrogatepass")) if isinstance(v, str) else (len(v) if v is not None else 0)),
    "list": lambda *a: list(a),
    "dict": _dict,
    "merge": _merge_fn(False),
    "mergeOverwrite": _merge_fn(True),
    "deepCopy": _str_fn(_deep_copy),
    "set": _set,
    "unset": _str_fn(lambda d, k: (d.pop(_string(k), None), d)[1] if isinstance(d, dict) else Unknown("unset")),
    "pick": _str_fn(lambda d, *ks: {k: d[k] for k in map(_string, ks) if k in d}),
    "omit": _str_fn(lambda d, *ks: {k: v for k, v in d.items() if k not in set(map(_string, ks))}),
    "semverCompare": _semver_compare,
    "cat": _str_fn(lambda *a: " ".join(_string(x) for x in a if x is not None)),
    "typeIs": _str_fn(lambda t, v: {"string": isinstance(v, str), "bool": isinstance(v, bool), "int": type(v) is int,
                                    "float64": isinstance(v, float), "map[string]interface {}": isinstance(v, dict),
                                    "[]interface {}": isinstance(v, list)}.get(_string(t), False)),
    "until": _str_fn(lambda n: list(range(max(0, min(int(n), 10_000))))),
    "add": _str_fn(lambda *a: _int64(sum(int(_num(x)) for x in a))),
    "add1": _str_fn(lambda a: _int64(int(_num(a)) + 1)),
    "sub": _str_fn(lambda a, b: _int64(int(_num(a)) - int(_num(b)))),
    "mul": _str_fn(lambda *a: _int64(__import__("math").prod(int(_num(x)) for x in a))),
    "div": _str_fn(lambda a, b: _int64(int(_num(a)) // int(_num(b)))),
    "max": _str_fn(lambda *a: max(int(_num(x)) for x in a)),
    "min": _str_fn(lambda *a: min(int(_num(x)) for x in a)),
    "ternary": _ternary,
    "required": _required,
    "kindIs": _str_fn(
        lambda k, v: {"map": isinstance(v, dict), "slice": isinstance(v, list), "string": isinstance(v, str),
                      "bool": isinstance(v, bool), "int": isinstance(v, int) and not isinstance(v, bool),
                      "float64": isinstance(v, float)}.get(str(k), False)
    ),
    "fail": lambda *a: Unknown("fail"),
    "fromYaml": _from_yaml,
    "concat": _concat,
    "append": _str_fn(lambda lst, v: [*(lst or []), v]),
    "lookup": lambda *a: {},  # as under `helm template`: no cluster to look in
    "b64enc": _str_fn(lambda s: __import__("base64").b64encode(_string(s).encode()).decode()),
    "sha256sum": _str_fn(lambda s: __import__("hashlib").sha256(_string(s).encode()).hexdigest()),
    "join": _str_fn(lambda sep, lst: _string(sep).join(_string(x) for x in lst)),
    "splitList": _str_fn(lambda sep, s: _string(s).split(_string(sep))),
    "first": _str_fn(lambda lst: lst[0] if lst else None),
    "last": _str_fn(lambda lst: lst[-1] if lst else None),
    "keys": _str_fn(lambda d: sorted(d) if isinstance(d, dict) else Unknown("keys")),
    "has": _str_fn(lambda v, lst: v in lst if isinstance(lst, list) else False),
    "coalesce": lambda *a: next((x for x in a if truth(x) is not False), None),
    "toStrings": _str_fn(lambda lst: [_string(x) for x in lst]),
}


class _Scope:
    """Dot and the variables in scope: ``$x := v`` declares in this scope, ``$x = v`` assigns where
    ``$x`` was declared (a ``range`` body updates a variable declared before the loop, as in Go)."""

    def __init__(self, dot: Any, own: dict[str, Any], parent: _Scope | None = None) -> None:
        self.dot, self.own, self.parent = dot, own, parent

    def child(self, dot: Any, own: dict[str, Any] | None = None) -> _Scope:
        return _Scope(dot, own or {}, self)

    def lookup(self, name: str) -> tuple[bool, Any]:
        s: _Scope | None = self
        while s is not None:
            if name in s.own:
                return True, s.own[name]
            s = s.parent
        return False, None

    def assign(self, name: str, value: Any, declare: bool) -> None:
        s: _Scope | None = self
        while not declare and s is not None:
            if name in s.own:
                s.own[name] = value
                return
            s = s.parent
        self.own[name] = value


class _Renderer:
    def __init__(self, path: str, root: dict[str, Any], defines: dict[str, list[Any]]) -> None:
        self.path, self.root, self.defines = path, root, defines
        self.out: list[tuple[str, int, bool]] = []  # (text, source line, from template text)
        self.size = 0
        self.steps = 0
        self.depth = 0
        self.guessed: list[tuple[str, int]] = []  # conditions that were unknown (first branch taken)
        # print a value the chart leaves empty (`image: {repository: , tag: }`, given at install with --set) as unknown,
        # not as nothing: the second reading of a template whose first does not parse (render_chart nil_unknown)
        self.nil_unknown = False

    # -- output
    def emit(self, text: str, line: int, literal: bool) -> None:
        self.size += len(text)
        if self.size > MAX_OUTPUT:
            raise _Limit(f"renders more than {MAX_OUTPUT // (1024 * 1024)} MiB")
        self.out.append((text, line, literal))

    # -- evaluation
    def field(self, base: Any, names: list[str], expr: str) -> Any:
        v = base
        for i, n in enumerate(names):
            if isinstance(v, Unknown):
                return v
            if isinstance(v, dict):
                if n not in v:
                    # a missing key is nil, as in Go templates (``default`` then applies); a field of that nil
                    # stops helm template ('nil pointer evaluating interface {}.x'): the chart needs values it
                    # does not have (given at install), so it is not evaluated, never read as empty
                    return None if i == len(names) - 1 else Unknown(expr)
                v = v[n]
            else:
                return Unknown(expr)
        return v

    def operand(self, tok: tuple[str, str], scope: _Scope, expr: str) -> Any:
        kind, text = tok
        if kind == "str":
            import json

            try:
                return json.loads(text)
            except ValueError:
                return text[1:-1]
        if kind == "raw":
            return text[1:-1]
        if kind == "chr":
            return ord(text[1:-1][-1])
        if kind == "num":
            return float(text) if "." in text else int(text)
        if kind == "field":
            if text == ".":
                return scope.dot
            return self.field(scope.dot, text[1:].split("."), text)
        if kind == "var":
            name, *rest = text.split(".")
            if name == "$":
                base = self.root
            elif scope.lookup(name)[0]:
                base = scope.lookup(name)[1]
            else:
                return Unknown(text)
            return self.field(base, rest, text)
        if kind == "ident":
            if text in ("true", "false"):
                return text == "true"
            if text == "nil":
                return None
            if text in FUNCS:  # a function named as an argument is called without arguments (`default list`)
                try:
                    return FUNCS[text]()
                except TypeError:
                    return Unknown(text)
        return Unknown(text)

    def command(self, toks: Sequence[tuple[str, str]], scope: _Scope, piped: list[Any], expr: str) -> Any:
        """One command of a pipeline: a function call or a single operand."""
        args: list[Any] = []
        i = 0
        fn: str | None = None
        if toks and toks[0][0] == "ident" and toks[0][1] not in ("true", "false", "nil"):
            fn = toks[0][1]
            i = 1
        while i < len(toks):
            if toks[i][0] == "open":
                depth, j = 1, i + 1
                while j < len(toks) and depth:
                    depth += toks[j][0] == "open"
                    depth -= toks[j][0] == "close"
                    j += 1
                if depth:
                    return Unknown(expr)
                v = self.pipeline(toks[i + 1 : j - 1], scope, expr)
                close = toks[j - 1][1]
                if len(close) > 1:
                    v = self.field(v, close[2:].split("."), expr)
                args.append(v)
                i = j
                continue
            args.append(self.operand(toks[i], scope, expr))
            i += 1
        args += piped
        if fn is None:
            if args and callable(args[0]) and not isinstance(args[0], Unknown):  # a method: .Capabilities.APIVersions.Has "x"
                try:
                    return args[0](*args[1:])
                except (TypeError, ValueError):
                    return Unknown(expr)
            return args[0] if len(args) == 1 else Unknown(expr)
        if fn == "include":
            return self.include(args, expr)
        if fn in ("and", "or"):
            return _and_or(fn, args)
        f = FUNCS.get(fn)
        if f is None:
            return Unknown(fn)
        try:
            v = f(*args)
        except (TypeError, ValueError, ZeroDivisionError, RecursionError, OverflowError):
            return Unknown(fn)
        if isinstance(v, Unknown) and not v.text:
            return Unknown(fn)
        if isinstance(v, str) and len(v) > MAX_OUTPUT:
            raise _Limit(f"builds a string of more than {MAX_OUTPUT // (1024 * 1024)} MiB")
        return v

    def pipeline(self, toks: Sequence[tuple[str, str]], scope: _Scope, expr: str) -> Any:
        cmds: list[list[tuple[str, str]]] = [[]]
        depth = 0
        for t in toks:
            depth += t[0] == "open"
            depth -= t[0] == "close"
            if depth > MAX_NESTING:
                return Unknown(expr)
            if t[0] == "pipe" and depth == 0:
                cmds.append([])
            else:
                cmds[-1].append(t)
        piped: list[Any] = []
        v: Any = None
        for c in cmds:
            if not c:
                return Unknown(expr)
            v = self.command(c, scope, piped, expr)
            piped = [v]
        return v

    def evaluate(self, expr: str, scope: _Scope, line: int) -> Any:
        self.step()
        if expr.startswith("__unknown__"):
            return Unknown(expr.split(" ", 1)[1])
        try:
            toks = _tokens(expr)
        except ValueError:
            return Unknown(expr)
        if len(toks) >= 2 and toks[0][0] == "var" and toks[1][0] == "assign":
            name = toks[0][1]
            value = self.pipeline(toks[2:], scope, expr)
            scope.assign(name, value, declare=toks[1][1] == ":=")
            return ""
        return self.pipeline(toks, scope, expr)

    def include(self, args: list[Any], expr: str) -> Any:
        if not args or not isinstance(args[0], str) or args[0] not in self.defines:
            return Unknown(expr)
        if self.depth >= MAX_INCLUDE_DEPTH:  # a recursive helper whose stop condition is unknown here
            return Unknown(expr)
        self.steps += INCLUDE_STEPS
        sub = _Renderer(self.path, self.root, self.defines)
        sub.depth, sub.steps = self.depth + 1, self.steps
        sub.run(self.defines[args[0]], _Scope(args[1] if len(args) > 1 else None, {"$": self.root}))
        self.steps = sub.steps
        self.guessed += sub.guessed
        text = "".join(t for t, _l, _x in sub.out)
        return text

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Limit(f"takes more than {MAX_STEPS:,} steps to render")

    # -- nodes
    def run(self, nodes: list[Any], scope: _Scope) -> None:
        for node in nodes:
            self.step()
            if isinstance(node, _Text):
                self.emit(node.text, node.line, True)
            elif isinstance(node, _Act):
                v = self.evaluate(node.expr, scope, node.line)
                if v is None and self.nil_unknown and ".Values." in str(node.expr):
                    v = Unknown(f"{str(node.expr).strip()[:80]} (empty in the chart's values)")
                self.emit(_string(v), node.line, False)
            elif isinstance(node, _Block):
                self.block(node, scope)

    def block(self, b: _Block, scope: _Scope) -> None:
        if b.kind == "define":
            return
        if b.kind == "block":
            self.run(b.body, scope)
            return
        if b.kind == "if":
            arms = [(b.expr, b.body), *b.branches]
            for cond, body in arms:
                t = True if cond is None else truth(self.evaluate(cond, scope, b.line))
                if t is None or (cond is not None and _CLUSTER_STATE.search(cond) and _counts_in(arms)):
                    # unknown; or decided here by the cluster advisor assumes (its Kubernetes version, the API groups
                    # it serves), which the cluster a chart is installed on decides: a guessed branch, said
                    self.guessed.append((str(cond)[:80], b.line))
                if t is None or t:
                    self.run(body, scope.child(scope.dot))
                    return
            return
        if b.kind == "with":
            v = self.evaluate(b.expr, scope, b.line)
            t = truth(v)
            if t is None:
                self.guessed.append((b.expr[:80], b.line))
            if t is None or t:
                self.run(b.body, scope.child(v))
            elif b.branches:
                self.run(b.branches[-1][1], scope)
            return
        # range
        names: list[str] = []
        expr = b.expr
        m = re.match(r"^(\$\w*)\s*(?:,\s*(\$\w*)\s*)?:?=\s*(.*)$", expr, re.S)
        if m:
            names = [n for n in (m.group(1), m.group(2)) if n]
            expr = m.group(3)
        v = self.evaluate(expr, scope, b.line)
        if isinstance(v, Unknown):
            self.guessed.append((b.expr[:80], b.line))
            self.run(b.body, scope.child(v, {n: v for n in names}))
            return
        if isinstance(v, int) and not isinstance(v, bool):
            items: list[tuple[Any, Any]] = [(i, i) for i in range(max(0, min(v, 10_000)))]
        elif isinstance(v, dict):
            items = sorted(((k, x) for k, x in v.items()), key=lambda kv: str(kv[0]))
        elif isinstance(v, list):
            items = list(enumerate(v))
        else:
            items = []
        if not items:
            if b.branches:
                self.run(b.branches[-1][1], scope)
            return
        for k, x in items:
            self.step()  # an iteration is a step, its body empty or not (three nested ranges of 1,000: 4 minutes, review 29)
            bound: dict[str, Any] = {}
            if len(names) == 1:
                bound[names[0]] = x
            elif len(names) == 2:
                bound[names[0]], bound[names[1]] = k, x
            self.run(b.body, scope.child(x, bound))


def _and_or(fn: str, args: list[Any]) -> Any:
    if not args:
        return Unknown(fn)
    for a in args:
        t = truth(a)
        if t is None:
            return Unknown(fn)
        if (fn == "and" and not t) or (fn == "or" and t):
            return a
    return args[-1]


# ---------------------------------------------------------------------------------- whole charts


@dataclass
class Rendered:
    """One template rendered: its text, the template line of each rendered line, and what was not evaluated."""

    path: str
    text: str
    lines: list[int]
    guessed: list[tuple[str, int]]


def _lines(out: list[tuple[str, int, bool]]) -> tuple[str, list[int]]:
    """The rendered text and, for each of its lines, the template line it starts on: a line of template
    text keeps its own line; the lines an action prints (``toYaml | nindent``) map to the action."""
    lines: list[int] = [out[0][1]] if out else []
    for text, line, literal in out:
        for i in range(text.count("\n")):
            lines.append(line + i + 1 if literal else line)
    return "".join(t for t, _l, _x in out), lines


def _read(path: str, limit: int) -> str:
    from advisor.yamlsrc import read_text

    return read_text(path, max_bytes=limit)


def _values(chart: str) -> dict[str, Any]:
    """The chart's values.yaml (positions kept out: the manifests carry them), a mapping or nothing. Helm loads that
    name only (pkg/chart/loader: ``values.yaml``); a values.yml beside it is a values file a pipeline may pass with -f,
    rendered as a variant of its own (overlays)."""
    path = os.path.join(chart, "values.yaml")
    if not os.path.isfile(path):
        return {}
    return _values_file(path)


def _chart_meta(chart: str) -> dict[str, Any]:
    from advisor.yamlsrc import load_documents

    path = os.path.join(chart, "Chart.yaml")
    docs = load_documents(_read(path, 256 * 1024), path)
    data = docs[0].data if docs else None
    return data if isinstance(data, dict) else {}


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _deep_merge(base.get(k), v) if k in base else v
        return out
    return over


_KIND_LINE = re.compile(r"^kind:[ \t]*['\"]?([A-Za-z0-9]+)", re.M)


def _only_crds(text: str) -> bool:
    """Whether a file is CustomResourceDefinitions only (every top-level kind), the usual content of crds/ and of a
    chart's static templates: nothing in it asks for an accelerator."""
    kinds = _KIND_LINE.findall(text)
    return bool(kinds) and all(k == "CustomResourceDefinition" for k in kinds)


def _chart_files(chart: str, folder: str, keep: Callable[[str], bool]) -> list[str]:
    """The files under one folder of a chart whose name ``keep`` takes, in a stable order. Links are followed as Helm's
    loader follows them (a template that links to a file elsewhere in the repository is rendered), those that resolve
    outside the repository never (the batch refuses such a chart), each directory once."""
    from advisor.check.files import boundary, escapes

    root = os.path.realpath(boundary(chart))
    out: list[str] = []
    seen: set[str] = set()
    for d, dirs, names in os.walk(os.path.join(chart, folder), followlinks=True):
        real = os.path.realpath(d)
        if real in seen or (os.path.islink(d) and escapes(real, root)):
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        out += [p for n in sorted(names) if keep(n) and os.path.isfile(p := os.path.join(d, n))
                and not (os.path.islink(p) and escapes(os.path.realpath(p), root))]
        if len(out) > MAX_FILES * 4:
            break
    return out


def _crd_files(chart: str) -> list[str]:
    """The YAML files of a chart's crds/ directory (Helm installs them before the templates, as written)."""
    # a link is followed as Helm's loader follows it; _chart_files never leaves the repository
    return _chart_files(chart, "crds", lambda n: n.endswith((".yaml", ".yml", ".json")))[:MAX_FILES]


def _template_files(chart: str) -> list[str]:
    # Helm loads every file under templates/ and renders each as a manifest but the partials (a name that starts with _)
    # and NOTES.txt (pkg/releaseutil/manifest_sorter.go, pkg/action): deploy.tpl is a manifest
    return _chart_files(chart, "templates", lambda n: n != "NOTES.txt" and not n.startswith("."))


# what the cluster a chart is installed on decides (.Capabilities: its Kubernetes version, the API groups it serves)
_CLUSTER_STATE = re.compile(r"\.Capabilities\.|\bsemverCompare\b")
# what a branch must hold to change what a workload asks for (its replicas, resources, chips, nodes)
_COUNTS = re.compile(r"replica|resources|limits|nvidia\.com|google\.com/tpu|amd\.com|gpu|tpu|accelerator|instance-type|"
                     r"parallelism|completions|nodeSelector|affinity|Replicas|include|template", re.I)


def _counts_in(arms: list[tuple[str | None, list[Any]]], depth: int = 0) -> bool:
    """Whether any arm of a branch holds text or an action that may decide what a workload asks for (an include or a
    nested template may: it is counted)."""
    for _cond, body in arms:
        for n in body:
            if isinstance(n, _Text) and (_COUNTS.search(n.text) or n.text.strip().isdigit()):  # a number: a count, likely
                return True
            if isinstance(n, _Act) and _COUNTS.search(n.expr):
                return True
            if isinstance(n, _Block) and depth < 16 and (_COUNTS.search(n.expr) or _counts_in([(n.expr, n.body), *n.branches], depth + 1)):
                return True
    return False


# what differs between the install ``helm template`` renders and each later ``helm upgrade`` of the release
RELEASE_STATE = re.compile(r"\.Release\.(?:IsInstall|IsUpgrade|Revision)\b")
UPGRADE_LABEL = " [helm upgrade]"
UPGRADE_NOTE = ("rendered as an upgrade of the release (.Release.IsUpgrade true, IsInstall false, Revision 2, as helm template "
                "--is-upgrade): the chart's templates branch on the release's state, and every upgrade after the install deploys this")


# the release a chart is rendered for (a release naming it: Argo CD, Flux, helmfile, Terraform helm_release), else
# helm template's defaults: its name and namespace are what templates read of .Release (review 33: a namespace-scoped
# policy was passed by a chart released into its namespace, read as "default")
RELEASE: ContextVar[tuple[str, str]] = ContextVar("RELEASE", default=(RELEASE_NAME, "default"))


def release_root(values: dict[str, Any], meta: dict[str, Any], chart: str, upgrade: bool = False) -> dict[str, Any]:
    """What a template sees besides .Values, as ``helm template`` gives it with no flags (an install), or with
    ``--is-upgrade``; the release's name and namespace where one names the chart (RELEASE)."""
    name, namespace = RELEASE.get()
    return {
        "Values": values,
        "Release": {"Name": name, "Namespace": namespace, "Service": "Helm", "IsInstall": not upgrade, "IsUpgrade": upgrade,
                    "Revision": 2 if upgrade else 1},
        "Chart": {
            "Name": meta.get("name", os.path.basename(os.path.abspath(chart))),
            "Version": meta.get("version", ""),
            "AppVersion": meta.get("appVersion", ""),
        },
        "Capabilities": {
            "KubeVersion": {"Version": KUBE_VERSION, "GitVersion": KUBE_VERSION, "Major": "1", "Minor": "30"},
            "APIVersions": {"Has": lambda v: isinstance(v, str) and v.split("/")[0] in BUILTIN_API_GROUPS},
        },
        "Template": {"BasePath": os.path.join(str(meta.get("name", "")), "templates")},
    }


def _tree_defines(chart: str) -> dict[str, list[Any]]:
    """The named templates of every template file of ``chart`` and its unpacked subcharts, as Helm compiles them into one
    set ("template names are global": a library chart's helpers serve its parent), in Helm's parse order (_helm_order:
    the deepest first, so that a chart's own definition of a name wins over its subcharts', and at one depth the
    alphabetically first file's)."""
    files = [f for _, f in sorted(_tree_files(chart), key=lambda x: (x[0], x[1].count(os.sep), x[1]), reverse=True)]
    # a chart is rendered once per values overlay and release state: its tree is parsed for names once, while its files
    # stay as they were
    key = tuple((f, *_stamp(f)) for f in files)
    hit = _TREE_DEFINES.get(key)
    if hit is not None:
        return hit
    out: dict[str, list[Any]] = {}
    for f in files:
        try:
            text = _read(f, MAX_TEMPLATE_BYTES)
            if "define" not in text and "block" not in text:
                continue
            nodes = _parse(_lex(text), f)
        except (InputError, ValueError):
            continue  # said where the file is rendered
        _add_defines(nodes, out)
    if len(_TREE_DEFINES) >= 64:
        _TREE_DEFINES.clear()
    _TREE_DEFINES[key] = out
    return out


_TREE_DEFINES: dict[tuple[tuple[str, int, int], ...], dict[str, list[Any]]] = {}


def _stamp(path: str) -> tuple[int, int]:
    """(mtime in ns, size) of a file, (0, -1) where it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return 0, -1
    return st.st_mtime_ns, st.st_size


def _helm_order(files: list[str]) -> list[str]:
    """Template files in the order Helm parses them into one template set (pkg/engine sortTemplates:
    sort.Reverse(byPathLen), the deepest path first and, at one depth, the names in descending order): a name defined
    twice keeps the definition parsed last, the alphabetically first file's at one depth."""
    return sorted(files, key=lambda f: (f.count(os.sep), f), reverse=True)


def _add_defines(nodes: list[Any], into: dict[str, list[Any]], override: bool = True) -> None:
    """The named templates (``define`` / ``block`` "NAME") of a parsed template file, into ``into`` by name: a later
    definition replaces an earlier one unless its body is empty (only whitespace and comments: text/template's
    IsEmptyTree rule), or ``override`` is False (the names already there stand)."""
    for n in nodes:
        if isinstance(n, _Block) and n.kind in ("define", "block"):
            try:
                toks = _tokens(n.expr)
            except ValueError:
                continue
            if toks and toks[0][0] in ("str", "raw"):
                name = toks[0][1][1:-1]
                empty = all(isinstance(x, _Text) and not x.text.strip() for x in n.body)
                if name in into and (not override or empty):
                    continue
                into[name] = n.body


def render_chart(
    chart: str, values: dict[str, Any] | None = None, depth: int = 0, count: list[int] | None = None, upgrade: bool = False,
    shared: dict[str, list[Any]] | None = None, nil_unknown: bool = False,
) -> list[Rendered]:
    """Every template of ``chart`` (and of its unpacked subcharts) rendered with its values (as an upgrade: ``upgrade``);
    the named templates of the whole chart tree are one set (``shared``), as Helm compiles them."""
    count = count if count is not None else [0, 0]  # template files, template bytes
    shared = shared if shared is not None else _tree_defines(chart)
    meta = _chart_meta(chart)
    vals = _deep_merge(_values(chart), values or {})
    root = release_root(vals, meta, chart, upgrade)
    files = _template_files(chart)
    count[0] += len(files)
    if count[0] > MAX_FILES:
        raise InputError.single(chart, 1, 1, f"Helm chart: more than {MAX_FILES} template files (subcharts included)")
    parsed: dict[str, list[Any]] = {}
    defines: dict[str, list[Any]] = dict(shared)
    for f in files:
        text = _read(f, MAX_TEMPLATE_BYTES)
        count[1] += len(text)
        if count[1] > MAX_CHART_BYTES:
            raise InputError.single(f, 1, 1, f"Helm chart: more than {MAX_CHART_BYTES >> 20} MiB of templates (subcharts included)")
        if "{{" not in text and not _CHIP_TEXT.search(text) and _only_crds(text):
            continue  # static CustomResourceDefinitions asking for no accelerator: nothing to render or judge
        nodes = _parse(_lex(text), f)
        parsed[f] = nodes
    for f in _helm_order(list(parsed)):  # the tree's set (shared) stands; a name it lacks is added in Helm's order
        _add_defines(parsed[f], defines, override=False)
    out: list[Rendered] = []
    for f in files:
        if os.path.basename(f).startswith("_") or f not in parsed:
            continue
        root["Template"]["Name"] = f
        r = _Renderer(f, root, defines)
        r.nil_unknown = nil_unknown
        try:
            r.run(parsed[f], _Scope(root, {"$": root}))
        except _Limit as exc:
            raise InputError.single(f, 1, 1, f"Helm template read without helm: {exc}") from None
        text, lines = _split_documents(*_lines(r.out))
        out.append(Rendered(f, text, lines, r.guessed))
    for f in _crd_files(chart):  # crds/: applied by helm install as written, never templated
        text = _read(f, MAX_TEMPLATE_BYTES)
        count[1] += len(text)
        if count[1] > MAX_CHART_BYTES:
            raise InputError.single(f, 1, 1, f"Helm chart: more than {MAX_CHART_BYTES >> 20} MiB of templates (subcharts included)")
        if not (_only_crds(text) and not _CHIP_TEXT.search(text)):
            out.append(Rendered(f, text, list(range(1, text.count("\n") + 2)), []))
    if depth < MAX_SUBCHART_DEPTH and not nil_unknown:
        out += _subcharts(chart, meta, vals, depth, count, upgrade, shared)
    return out


def _subcharts(
    chart: str, meta: dict[str, Any], vals: dict[str, Any], depth: int, count: list[int], upgrade: bool,
    shared: dict[str, list[Any]] | None = None,
) -> list[Rendered]:
    folders = _subchart_dirs(chart, meta)
    if not folders:
        return []
    conditions: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}  # a dependency's chart name -> the names its instances take values under
    deps = meta.get("dependencies")
    for dep in deps if isinstance(deps, list) else []:
        if isinstance(dep, dict) and isinstance(dep.get("name"), str):
            key = str(dep.get("alias") or dep["name"])
            if isinstance(dep.get("condition"), str):
                conditions[key] = dep["condition"]
            if dep.get("alias"):
                aliases.setdefault(dep["name"], []).append(key)
    out: list[Rendered] = []
    for path in folders:
        # Helm scopes a subchart's values by its Chart.yaml name (or each alias it is installed under), not its folder
        cname = str(_chart_meta(path).get("name") or os.path.basename(path))
        for name in aliases.get(cname) or [cname]:
            cond = conditions.get(name)
            if cond:
                v: Any = vals
                for part in cond.split(",")[0].strip().split("."):
                    v = v.get(part) if isinstance(v, dict) else None
                if v is False:
                    continue
            mine = vals.get(name)
            sub_vals: dict[str, Any] = dict(mine) if isinstance(mine, dict) else {}
            if isinstance(vals.get("global"), dict):
                sub_vals = {**sub_vals, "global": vals["global"]}
            out += render_chart(path, sub_vals, depth + 1, count, upgrade, shared)
    return out


def _local_dependencies(chart: str, meta: dict[str, Any]) -> dict[str, str]:
    """The dependencies of ``chart`` that Helm takes from a directory of the same repository (``repository:
    file://PATH``, PATH from the chart's directory, as ``helm dependency update`` copies it): name -> the directory,
    where it holds a Chart.yaml inside the repository (a path out of it is never followed)."""
    from advisor.check.files import boundary, escapes, escaping_link

    deps = meta.get("dependencies")
    root = os.path.realpath(boundary(chart))
    out: dict[str, str] = {}
    for dep in (deps if isinstance(deps, list) else [])[:100]:
        if not isinstance(dep, dict) or not isinstance(dep.get("name"), str) or not isinstance(dep.get("repository"), str):
            continue
        repo = dep["repository"].strip()
        if not repo.startswith("file://"):
            continue
        path = os.path.normpath(os.path.join(chart, repo.removeprefix("file://")))
        if escapes(os.path.realpath(path), root) or not os.path.isfile(os.path.join(path, "Chart.yaml")):
            continue
        if os.path.realpath(path) == os.path.realpath(chart) or escaping_link(path, root) is not None:
            continue  # the chart itself, or a directory holding a link out of the repository: never read through it
        out[dep["name"]] = path
    return out


def _subchart_dirs(chart: str, meta: dict[str, Any] | None = None) -> list[str]:
    """The unpacked subcharts Helm renders with ``chart``: every directory of its charts/ holding a Chart.yaml, and the
    dependencies it takes from a directory of the repository (file://) that charts/ does not hold."""
    out: list[str] = []
    sub_dir = os.path.join(chart, "charts")
    held: set[str] = set()
    if os.path.isdir(sub_dir) and _in_repository(sub_dir, chart):
        for folder in sorted(os.listdir(sub_dir)):
            path = os.path.join(sub_dir, folder)
            if _in_repository(path, chart) and os.path.isfile(os.path.join(path, "Chart.yaml")):
                out.append(path)
                held.add(folder)
    if meta is None:
        try:
            meta = _chart_meta(chart)
        except InputError:
            meta = {}
    local = _local_dependencies(chart, meta)
    out += [path for name, path in sorted(local.items()) if name not in held and path not in out]
    return out


# Helm splits rendered manifests where '---' follows a line break or the start, whatever comes after it on the line
# (pkg/releaseutil/manifest.go: (?:^|\s*\n)---\s*): '{{- $x := . -}}' after '---' leaves '---apiVersion: v1', one
# document break to Helm and a plain scalar to a YAML reader
_GLUED_BREAK = re.compile(r"^---(?=[^\s-])")


def _split_documents(text: str, lines: list[int]) -> tuple[str, list[int]]:
    """The rendered text with a document break glued to the line after it put on a line of its own (each rendered line's
    template line kept)."""
    if "---" not in text:
        return text, lines
    out_text: list[str] = []
    out_lines: list[int] = []
    for i, line in enumerate(text.split("\n")):
        at = lines[i] if i < len(lines) else (lines[-1] if lines else 1)
        if _GLUED_BREAK.match(line):
            out_text += ["---", line[3:]]
            out_lines += [at, at]
        else:
            out_text.append(line)
            out_lines.append(at)
    return "\n".join(out_text), out_lines


def remap(problems: list[Problem], rendered: Rendered) -> list[Problem]:
    return [Problem(rendered.path, source_line(rendered, p.line), p.col, p.message) for p in problems]


def source_line(rendered: Rendered, line: int) -> int:
    if 1 <= line <= len(rendered.lines):
        return rendered.lines[line - 1]
    return rendered.lines[-1] if rendered.lines else 1




@dataclass
class ChartRead:
    requests: list[Any] = field(default_factory=list)  # advisor.check.infra.model.Request
    autoscalers: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: str | None = None  # why the chart holds nothing to judge


NOTE = "read without helm (not on PATH): advisor rendered the chart's templates with its values.yaml itself"


_OVERLAY = re.compile(r"^(?:values[-_.].+|.+[-_.]values)\.ya?ml$")
MAX_OVERLAYS = 20


def overlays(chart: str) -> list[str]:
    """The values files beside a chart's values.yaml (``values-prod.yaml``, ``prod.values.yaml``):
    what a deploy pipeline passes with ``-f``; each is rendered as a variant of its own."""
    try:
        names = sorted(n for n in os.listdir(chart) if (_OVERLAY.match(n) or n == "values.yml") and n != "values.yaml")
    except OSError:
        return []
    return [os.path.join(chart, n) for n in names if os.path.isfile(os.path.join(chart, n)) and not os.path.islink(os.path.join(chart, n))][
        :MAX_OVERLAYS
    ]


def overlay_label(path: str) -> str:
    return f" [-f {os.path.basename(path)}]"


def mark_variant(requests: list[Any], autoscalers: list[Any], overlay: str) -> None:
    """Requests of a chart rendered with an extra values file: their addresses (and the workloads
    autoscalers target) say which file, so a variant's autoscaler never scales another variant."""
    label_variant(requests, autoscalers, overlay_label(overlay), f"rendered with values.yaml and -f {os.path.basename(overlay)}")


def _values_file(path: str) -> dict[str, Any]:
    """A values file: a mapping, or nothing when it is empty."""
    from advisor.yamlsrc import load_documents

    docs = load_documents(_read(path, MAX_TEMPLATE_BYTES), path, last_wins=True)  # Helm keeps a duplicate key's last value
    data = docs[0].data if docs else None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError.single(path, 1, 1, "values file: expected a mapping")
    return data


def read_chart(chart: str, index: Any) -> ChartRead:
    """A chart's accelerator requests, read without helm, once with its values.yaml and once more
    with each values file beside it; positions are the templates'."""
    out = ChartRead()
    states = release_states(chart)
    for overlay in [None, *overlays(chart)]:
        for upgrade in states:
            got = ChartRead()
            try:
                _read_variant(chart, index, None if overlay is None else _values_file(overlay), got, upgrade)
            except InputError as exc:
                got.problems += exc.problems if not upgrade else []  # said once, by the install's rendering
            if upgrade:
                mark_upgrade(got.requests, got.autoscalers)
            if overlay is not None:
                mark_variant(got.requests, got.autoscalers, overlay)
            out.requests += got.requests
            out.autoscalers += got.autoscalers
            out.problems += got.problems
    missing = _missing_dependencies(chart)
    for dep in missing:
        if dep.asks:  # its GPUs are in a chart the repository does not hold: said, never passed over
            from advisor.check.infra.model import Request

            req = Request(dep.path, "kubernetes", f"helm-dependency/{dep.chart}/{dep.name}", dep.line, dep.col)
            req.hardware, req.unknown = dep.asks, "the accelerators are in a dependency chart the repository does not hold"
            req.count = None
            req.unresolved.append(("helm-dependency", f"{dep.name} {dep.version} from {dep.repository}".strip(), (dep.line, dep.col)))
            req.notes.append(NOTE)
            out.requests.append(req)
    if not out.requests and not out.autoscalers and not out.problems:
        out.skipped = "a Helm chart without accelerator requests (rendered by advisor with its values files; helm is not on PATH)"
        if missing:
            out.skipped += "; not rendered: its dependencies " + ", ".join(f"{d.name} ({d.repository or 'no repository'})" for d in missing)
            out.skipped += ", which advisor does not render without helm (not in charts/, or packaged) and whose values ask for none"
    return out


@dataclass
class _Dependency:
    chart: str  # the chart's name
    name: str  # the dependency's name (its alias where it has one)
    repository: str
    version: str
    path: str  # Chart.yaml
    line: int
    col: int
    asks: str | None  # what in its values asks for accelerators


def _missing_dependencies(chart: str) -> list[_Dependency]:
    """The dependencies of Chart.yaml that advisor does not render without helm: not in charts/, or there only as a
    packaged .tgz; with the first place where the chart's values ask accelerators of them. A dependency its
    condition turns off is left out."""
    from advisor.yamlsrc import load_documents

    path = os.path.join(chart, "Chart.yaml")
    try:
        docs = load_documents(_read(path, 256 * 1024), path)
    except InputError:
        return []
    data = docs[0].data if docs else None
    if not isinstance(data, dict):
        return []
    deps = data["dependencies"] if isinstance(data.get("dependencies"), list) else []
    vals = _values(chart)
    sub = os.path.join(chart, "charts")
    held = set(os.listdir(sub)) if os.path.isdir(sub) and _in_repository(sub, chart) else set()
    out: list[_Dependency] = []
    local = _local_dependencies(chart, data)
    for i, dep in enumerate(deps[:100]):
        if not isinstance(dep, dict) or not isinstance(dep.get("name"), str):
            continue
        name = dep["name"]
        if name in held or name in local:
            continue  # vendored as a directory, or a directory of the repository (file://): rendered as a subchart
        packaged = next((h for h in sorted(held) if h.startswith(f"{name}-") and h.endswith(".tgz")), None)
        key = str(dep.get("alias") or name)
        cond = dep.get("condition")
        if isinstance(cond, str):
            v: Any = vals
            for part in cond.split(",")[0].strip().split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if v is False:
                continue
        line, col = docs[0].where(("dependencies", i))
        asks = asks_for_chips(vals.get(key), key) or (_packaged_asks(os.path.join(sub, packaged)) if packaged else None)
        # a packaged subchart (charts/NAME-VERSION.tgz, what helm dependency build writes) is rendered by helm only
        where = f"charts/{packaged} (packaged: rendered by helm only)" if packaged else str(dep.get("repository") or "")
        out.append(_Dependency(str(data.get("name", "")), key, where, str(dep.get("version") or ""), path, line, col, asks))
    listed = {str(d["name"]) for d in deps[:100] if isinstance(d, dict) and isinstance(d.get("name"), str)}
    for h in sorted(held):  # Helm 3 renders every chart in charts/, listed or not
        if h.endswith(".tgz") and not any(h.startswith(f"{n}-") for n in listed) and (asks := _packaged_asks(os.path.join(sub, h))):
            out.append(_Dependency(str(data.get("name", "")), h.removesuffix(".tgz"), f"charts/{h} (packaged: rendered by helm only)",
                                   "", path, 1, 1, asks))
    return out


def _in_repository(path: str, chart: str) -> bool:
    """Whether ``path`` of a chart is read: a directory of its own, or a link that resolves inside the repository (Helm's
    loader follows links; one out of the repository is never followed)."""
    if not os.path.islink(path):
        return True
    from advisor.check.files import boundary, escapes

    return not escapes(os.path.realpath(path), os.path.realpath(boundary(chart)))


# what a packaged subchart's templates hold when they ask for accelerators
_CHIP_IN_TEMPLATE = re.compile(
    r"nvidia\.com/(?:gpu|mig)|amd\.com/gpu|google\.com/tpu|aws\.amazon\.com/neuron|habana\.ai/|gke-accelerator|gke-tpu")
MAX_PACKAGED_BYTES = 64 * 1024 * 1024  # a packaged subchart read uncompressed, at most (a gzip bomb stops here)


def _packaged_asks(path: str) -> str | None:
    """What in a packaged subchart (charts/NAME-VERSION.tgz, not rendered without helm) asks for accelerators: the first
    chip resource or accelerator selector its templates or values files name; one that cannot be read (corrupt, larger than
    MAX_PACKAGED_BYTES uncompressed) is said too: never passed as asking for nothing."""
    import io
    import tarfile
    import zlib

    name = os.path.basename(path)
    try:
        if os.path.getsize(path) > MAX_PACKAGED_BYTES:
            return f"charts/{name}: larger than {MAX_PACKAGED_BYTES // 2**20} MiB, not read"
        with open(path, "rb") as f:
            raw = f.read()
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = inflate.decompress(raw, MAX_PACKAGED_BYTES)
        if inflate.unconsumed_tail:
            return f"charts/{name}: more than {MAX_PACKAGED_BYTES // 2**20} MiB uncompressed, not read"
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for i, member in enumerate(tar):
                if i > 10_000:
                    return f"charts/{name}: more than 10,000 files, not read"
                # its templates, and its values files: a template that inserts a values subtree (toYaml .Values.resources)
                # asks for what the subchart's own values.yaml names (review 34: 16 x 8 H100 passed as asking for nothing)
                base = os.path.basename(member.name)
                values = base.startswith("values") and base.endswith((".yaml", ".yml"))
                if not member.isfile() or ("/templates/" not in f"/{member.name}" and not values):
                    continue
                handle = tar.extractfile(member)
                text = handle.read().decode("utf-8", "replace") if handle is not None else ""
                hit = _CHIP_IN_TEMPLATE.search(text)
                if hit:
                    return f"charts/{name}: {member.name[:120]} names {hit.group(0)}"
    except (OSError, tarfile.TarError, zlib.error, EOFError) as exc:
        return f"charts/{name}: not readable ({str(exc)[:80]})"
    return None


def read_values(files: list[str], layers: list[dict[str, Any]]) -> dict[str, Any]:
    """Values files then inline values, each merged over the ones before (as helm -f and --set do)."""
    out: dict[str, Any] = {}
    for f in files:
        out = _deep_merge(out, _values_file(f))
    for layer in layers:
        out = _deep_merge(out, layer)
    return out


def read_variant(chart: str, index: Any, values: dict[str, Any]) -> ChartRead:
    """The chart rendered once with ``values`` over its values.yaml (and once more as an upgrade, where its templates
    branch on the release's state)."""
    out = ChartRead()
    for upgrade in release_states(chart):
        got = ChartRead()
        _read_variant(chart, index, values, got, upgrade)
        if upgrade:
            mark_upgrade(got.requests, got.autoscalers)
        out.requests += got.requests
        out.autoscalers += got.autoscalers
    return out


def _tree_files(chart: str, depth: int = 0) -> list[tuple[int, str]]:
    """(nesting level, file) of the template files of ``chart`` and of its subcharts: Helm orders a chart's templates by
    their path in the chart tree (a subchart's under its parent's charts/), whatever directory a file:// dependency
    sits in on disk."""
    out = [(depth, f) for f in _template_files(chart)]
    if depth < MAX_SUBCHART_DEPTH:
        for path in _subchart_dirs(chart):
            out += _tree_files(path, depth + 1)
    return out[:MAX_FILES]


def _all_template_files(chart: str, depth: int = 0) -> list[str]:
    """The template files of ``chart`` and of the subcharts unpacked under its charts/ (as deep as render_chart goes)."""
    out = _template_files(chart)
    if depth < MAX_SUBCHART_DEPTH:
        for path in _subchart_dirs(chart):
            out += _all_template_files(path, depth + 1)
    return out[:MAX_FILES]


def release_states(chart: str) -> tuple[bool, ...]:
    """How the chart is rendered, as ``upgrade`` flags: as installed (False), and once more as an upgrade (True) where a
    template of the chart (or of its unpacked subcharts) reads .Release.IsInstall / IsUpgrade / Revision, so that an
    upgrade may render what the install does not."""
    branches = any(RELEASE_STATE.search(_read(path, MAX_TEMPLATE_BYTES)) for path in _all_template_files(chart))
    return (False, True) if branches else (False,)


def mark_upgrade(requests: list[Any], autoscalers: list[Any]) -> None:
    """Requests of the upgrade rendering: their addresses say so (`` [helm upgrade]``), as a values file's variant's do."""
    label_variant(requests, autoscalers, UPGRADE_LABEL, UPGRADE_NOTE)


# an action that inserts a subtree of the values as YAML (toYaml / tpl of a pod spec or its resources given at install,
# or a helper given values to render: bitnami common's include "common.tplvalues.render" (dict "value" .Values.x ...))
_INSERTING = re.compile(r"\b(?:toYaml|toJson|toPrettyJson|toRawJson|tpl|include)\b")
_VALUES_PATH = re.compile(r"\.Values((?:\.[A-Za-z0-9_]+)*)")
_RENDERS_VALUE = re.compile(r"\b(?:toYaml|tpl)\b")


def _inserts_chips(template: str, values: dict[str, Any]) -> bool:
    """Whether ``template`` inserts a subtree of ``values`` that asks for accelerators (the paths of .Values its
    inserting actions name, looked up in the values it is rendered with: a resources block asking for nvidia.com/gpu,
    not tolerations that only name it); a toYaml / tpl of no .Values path (a variable that may hold any of them) counts
    where the values ask for one; a helper given the context only (include "common.labels.standard" .) inserts none."""
    for m in _actions(template):  # linear: no rescan from an unclosed {{ (review 29)
        action = template[m.start : m.end]
        if "}" in action[2:-2] or not _INSERTING.search(action):
            continue
        helper_only = "include" in action and not _RENDERS_VALUE.search(action)
        paths = _VALUES_PATH.findall(action) or ([] if helper_only else [""])
        for path in paths:
            node: Any = values
            for key in [k for k in path.split(".") if k]:
                node = node.get(key) if isinstance(node, dict) else None
            if node is not None and (asks_for_chips(node) if isinstance(node, (dict, list)) else _CHIP_TEXT.search(str(node))):
                return True  # a subtree that asks for chips (a resources block), not one that only names them (a toleration)
    return False


EMPTY_VALUES_NOTE = ("values the chart declares empty (given at install: --set) printed where YAML needed a value: read as "
                     "unknown, not as nothing")


def _with_empty_values_unknown(chart: str, values: dict[str, Any] | None, upgrade: bool, r: Rendered) -> Rendered | None:
    """``r``'s template rendered again with the values the chart leaves empty printed as unknown, where that reads as
    YAML; None otherwise (the template is broken for another reason)."""
    from advisor.yamlsrc import load_documents

    try:
        again = next((x for x in render_chart(chart, values, upgrade=upgrade, nil_unknown=True) if x.path == r.path), None)
        if again is None or again.text == r.text:
            return None
        load_documents(again.text, again.path, max_nodes=500_000)
    except InputError:
        return None
    return again


def _read_variant(chart: str, index: Any, values: dict[str, Any] | None, out: ChartRead, upgrade: bool = False) -> None:
    from advisor.check.infra.read import split
    from advisor.check.infra.sniff import doc_kind
    from advisor.yamlsrc import load_documents

    def load(r: Rendered) -> Parsed:
        docs = [d for d in load_documents(r.text, r.path, max_nodes=500_000) if d.data is not None]
        return split(r.path, docs, [doc_kind(d.data) for d in docs], index, len(r.text))[1]

    from advisor.check.infra.names import names_hardware

    def hardware(text: str) -> bool:
        # a chip resource, or any word the name index resolves (a machine or instance type: p5.48xlarge, a3-highgpu-8g):
        # a template advisor cannot read that names one is an input error, never skipped (review 34: a Cluster API
        # MachineDeployment of 64 p5.48xlarge behind a merge key passed as "a Helm chart without accelerator requests")
        return bool(_CHIP_TEXT.search(text)) or names_hardware(text, index)

    chips_in_values = hardware(repr(values) + repr(_values(chart)))
    rendered_with = {**_values(chart), **(values or {})}  # what a template's .Values paths are looked up in
    for r in render_chart(chart, values, upgrade=upgrade):
        if not r.text.strip():
            continue
        left_out: list[tuple[str, int]] = []
        try:
            try:
                parsed = load(r)
            except InputError as first:
                # a line that rendered only as placeholders (`{{ toYaml .Values.envs | nindent 8 }}` with values
                # given at install) breaks the block around it: read the template without such lines, and say so
                # on every request read from it. Where no request is left and what was left out may have been
                # one (its template line or the chart's values name accelerators: `tpl` of a pod spec in the
                # values), it stays an input error
                lines = r.text.split("\n")
                left_out = [(m.group(1).strip(), source_line(r, i + 1))
                            for i, ln in enumerate(lines) if (m := _PLACEHOLDER_LINE.fullmatch(ln))]
                again = _with_empty_values_unknown(chart, values, upgrade, r)
                if again is not None:  # values the chart declares empty, given at install (review 33: gpu-recipes'
                    r = again  # `image: {{ .Values.job.image.repository }}:{{ ...tag }}` with both empty)
                    left_out = []
                    parsed = load(r)
                    parsed.notes.append(EMPTY_VALUES_NOTE)
                    for req in parsed.requests:
                        req.notes.append(EMPTY_VALUES_NOTE)
                elif not left_out:
                    raise
                else:
                    kept = "\n".join("" if _PLACEHOLDER_LINE.fullmatch(ln) else ln for ln in lines)
                    parsed = load(replace(r, text=kept))
                    if not parsed.requests:
                        source = _read(r.path, MAX_TEMPLATE_BYTES).split("\n")
                        at = "\n".join(source[line - 1] for _, line in left_out if 0 < line <= len(source))
                        if hardware(at) or chips_in_values:
                            raise first from None
        except InputError as exc:
            found = remap(exc.problems, r)
            template = _read(r.path, MAX_TEMPLATE_BYTES)
            if not hardware(r.text) and not hardware(template) and (
                not chips_in_values or not _inserts_chips(template, rendered_with)
            ):
                # a template advisor cannot render that names no accelerator, and no values can bring one in: the values
                # name none, or the template inserts no values subtree (toYaml / tpl of a pod spec or resources). A
                # Service labelled by a library chart's helper that is not vendored (bitnami common's
                # include "common.labels.standard") is nothing to judge, whatever a sample application's values ask for
                continue
            out.problems += [
                Problem(
                    p.path,
                    p.line,
                    p.col,
                    p.message + " (in the template as advisor renders it without helm, which is not on PATH: "
                    "install helm on the runner, or check the output of 'helm template CHART')",
                )
                for p in found
            ]
            continue
        for req in parsed.requests:
            _remap_request(req, r)
            req.notes.append(NOTE)
            for cond, line in dict.fromkeys(r.guessed):
                req.unresolved.append(("helm-condition", cond, (line, 1)))
            for expr, line in dict.fromkeys(left_out):
                req.unresolved.append(("helm-left-out", expr, (line, 1)))
        for a in parsed.autoscalers:
            a.pos = (source_line(r, a.pos[0]), a.pos[1])
        out.requests += parsed.requests
        out.autoscalers += parsed.autoscalers


def _remap_request(req: Any, r: Rendered) -> None:
    req.line = source_line(r, req.line)
    req.where = {k: (source_line(r, ln), col) for k, (ln, col) in req.where.items()}
    req.unresolved = [(f, v, (source_line(r, p[0]), p[1])) for f, v, p in req.unresolved]
    req.waivers = [(w, (source_line(r, p[0]), p[1])) for w, p in req.waivers]
