"""The Terraform expressions the HCL reader evaluates without Terraform: what a count, a for_each or a machine type is
written with in real modules. Literals, references (``var.x``, ``local.y["k"].z``, ``each.value``, ``count.index`` and
the names a ``for`` binds), tuples and objects, ``!`` and unary minus, ``* / %``, ``+ -``, comparisons, ``&& ||``,
``c ? a : b``, ``for`` expressions (``[for x in xs : f(x) if p]``, ``{for k, v in m : k => v}``), indexing and
attributes of any value, and the pure built-in functions modules use to shape node pools (RULES below: ``zipmap``,
``toset``, ``lookup``, ``length``, ``max``, ``merge``, ``coalesce``, ``try``, ...).

Anything else (a data source, a module output, ``terraform.workspace``, a splat, ``...`` grouping, a function outside
RULES, a template string) is Unresolved: the reader reports the field as not read, never a guess. Bounded: at most
MAX_TOKENS tokens, MAX_DEPTH nesting and MAX_ITEMS items out of any ``for``."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Protocol

MAX_TOKENS = 2_000
MAX_DEPTH = 48
MAX_ITEMS = 10_000
MAX_WORK = 100_000  # items all the for expressions and collection functions of one expression produce together

_TOKEN = re.compile(
    r'\s*(?:(?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(?P<str>"(?:[^"\\]|\\.)*")'
    r"|(?P<op>==|!=|&&|\|\||>=|<=|=>|\.\.\.|\[\*\]|[!?:()<>\[\]{},.=*/%+-])|(?P<ident>[A-Za-z_][A-Za-z0-9_-]*))"
)
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
# the roots a plain reference may start from, resolved by the reader's scope
ROOTS = ("var", "local", "each", "count", "path")


class Unresolved:
    """An expression advisor does not evaluate (function calls, data sources, module outputs)."""

    def __init__(self, expr: str) -> None:
        self.expr = expr

    def __repr__(self) -> str:
        return f"Unresolved({self.expr!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unresolved) and other.expr == self.expr

    def __hash__(self) -> int:
        return hash(self.expr)


class Scope(Protocol):
    def value(self, expr: str) -> Any: ...


class _Fail(Exception):
    """Not evaluated here (the whole expression is then Unresolved)."""


def _num(v: Any) -> float | int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            try:
                return _norm(int(v)) if re.fullmatch(r"-?[0-9]{1,40}", v) else float(v)
            except ValueError:
                raise _Fail from None
        raise _Fail
    return v


def _norm(v: float | int) -> float | int:
    # a number beyond 2^63 counts nothing a plan holds: unresolved, never computed further (review 34: 39 locals each the
    # square of the one before computed Python big integers past a 60 s timeout)
    if isinstance(v, int) and abs(v) >= 2**63:
        raise _Fail
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v


def _seq(v: Any) -> list[Any]:
    if isinstance(v, list):
        return v
    raise _Fail


def _tostring(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(_norm(v))
    if isinstance(v, str):
        return v
    raise _Fail


def _toset(v: Any) -> list[Any]:
    items = _seq(v)
    out: list[Any] = []
    for x in items:
        if x not in out:
            out.append(x)
    # Terraform orders a set of strings lexically; other elements keep no order it promises (kept as written)
    return sorted(out) if all(isinstance(x, str) for x in out) else out


def _lookup(args: list[Any]) -> Any:
    if len(args) not in (2, 3) or not isinstance(args[0], dict):
        raise _Fail
    if args[1] in args[0]:
        return args[0][args[1]]
    if len(args) == 3:
        return args[2]
    raise _Fail


def _coalesce(args: list[Any]) -> Any:
    for a in args:
        if a is not None and a != "":
            return a
    raise _Fail


def _merge(args: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in args:
        if a is None:
            continue
        if not isinstance(a, dict):
            raise _Fail
        out.update(a)
    return out


def _flatten(v: Any, depth: int = 0) -> list[Any]:
    out: list[Any] = []
    for x in _seq(v):
        out += _flatten(x, depth + 1) if isinstance(x, list) and depth < MAX_DEPTH else [x]
    return out


def _range(args: list[Any]) -> list[Any]:
    nums = [_num(a) for a in args]
    start, stop, step = (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2 else 1)
    if step == 0 or abs((stop - start) / step) > MAX_ITEMS:
        raise _Fail
    out, x = [], start
    while (step > 0 and x < stop) or (step < 0 and x > stop):
        out.append(_norm(x))
        x += step
    return out


def _one(fn: Callable[[Any], Any]) -> Callable[[list[Any]], Any]:
    def call(args: list[Any]) -> Any:
        if len(args) != 1:
            raise _Fail
        return fn(args[0])

    return call


def _element(args: list[Any]) -> Any:
    items = _seq(args[0]) if len(args) == 2 else []
    if not items:
        raise _Fail
    return items[int(_num(args[1])) % len(items)]


# Terraform's built-in functions evaluated here: pure, on the values a module's inputs hold
RULES: dict[str, Callable[[list[Any]], Any]] = {
    "length": _one(lambda v: len(v) if isinstance(v, (list, dict, str)) else _fail()),
    "min": lambda a: _norm(min(_num(x) for x in (_seq(a[0]) if len(a) == 1 and isinstance(a[0], list) else a))),
    "max": lambda a: _norm(max(_num(x) for x in (_seq(a[0]) if len(a) == 1 and isinstance(a[0], list) else a))),
    "ceil": _one(lambda v: math.ceil(_num(v))),
    "floor": _one(lambda v: math.floor(_num(v))),
    "abs": _one(lambda v: abs(_num(v))),
    "tonumber": _one(lambda v: None if v is None else _num(v)),
    "tostring": _one(lambda v: None if v is None else _tostring(v)),
    "tobool": _one(lambda v: v if isinstance(v, bool) or v is None else (v == "true" if v in ("true", "false") else _fail())),
    "tolist": _one(lambda v: list(_seq(v))),
    "toset": _one(_toset),
    "tomap": _one(lambda v: v if isinstance(v, dict) else _fail()),
    "lookup": _lookup,
    "coalesce": _coalesce,
    "coalescelist": lambda a: next((x for x in a if isinstance(x, list) and x), None) or _fail(),
    "merge": _merge,
    "concat": lambda a: [x for seq in a for x in _seq(seq)],
    "flatten": _one(_flatten),
    "distinct": _one(lambda v: [x for i, x in enumerate(_seq(v)) if x not in _seq(v)[:i]]),
    "compact": _one(lambda v: [x for x in _seq(v) if x not in (None, "")]),
    "keys": _one(lambda v: sorted(v) if isinstance(v, dict) else _fail()),
    "values": _one(lambda v: [v[k] for k in sorted(v)] if isinstance(v, dict) else _fail()),
    "zipmap": lambda a: dict(zip([_tostring(k) for k in _seq(a[0])], _seq(a[1]), strict=True)) if len(a) == 2 else _fail(),
    "contains": lambda a: a[1] in _seq(a[0]) if len(a) == 2 else _fail(),
    "element": _element,
    "range": _range,
    "format": lambda a: _format(a),
    "lower": _one(lambda v: _tostring(v).lower()),
    "upper": _one(lambda v: _tostring(v).upper()),
    "join": lambda a: _tostring(a[0]).join(_tostring(x) for x in _seq(a[1])) if len(a) == 2 else _fail(),
    "split": lambda a: _tostring(a[1]).split(_tostring(a[0])) if len(a) == 2 else _fail(),
    "can": _one(lambda v: not isinstance(v, Unresolved)),
    "one": _one(lambda v: (None if not _seq(v) else _seq(v)[0]) if len(_seq(v)) <= 1 else _fail()),
    "sum": _one(lambda v: _norm(sum(_num(x) for x in _seq(v)))),
    "alltrue": _one(lambda v: all(_truth(x) for x in _seq(v))),
    "anytrue": _one(lambda v: any(_truth(x) for x in _seq(v))),
    "reverse": _one(lambda v: list(reversed(_seq(v)))),
    "trimspace": _one(lambda v: _tostring(v).strip()),
    "startswith": lambda a: _tostring(a[0]).startswith(_tostring(a[1])) if len(a) == 2 else _fail(),
    "endswith": lambda a: _tostring(a[0]).endswith(_tostring(a[1])) if len(a) == 2 else _fail(),
    # a substring replaced; a /regex/ pattern is not evaluated here
    "replace": lambda a: _tostring(a[0]).replace(_tostring(a[1]), _tostring(a[2])) if len(a) == 3 and not _tostring(a[1]).startswith("/")
    else _fail(),
    "slice": lambda a: _seq(a[0])[int(_num(a[1])):int(_num(a[2]))] if len(a) == 3 else _fail(),
}


def _fail() -> Any:
    raise _Fail


def _format(args: list[Any]) -> str:
    if not args:
        raise _Fail
    fmt, rest = _tostring(args[0]), list(args[1:])

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        if not rest:
            raise _Fail
        v = rest.pop(0)
        return str(_norm(_num(v))) if m.group(1) == "d" else _tostring(v)

    return re.sub(r"%%|%([sdv])", sub, fmt)


class _Parser:
    def __init__(self, scope: Scope, text: str) -> None:
        self.scope, self.text = scope, text
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                if text[pos:].strip():
                    raise _Fail
                break
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
            if len(self.toks) > MAX_TOKENS:
                raise _Fail
        self.i = 0
        self.depth = 0
        self.bound: list[dict[str, Any]] = []  # the names for expressions bind, innermost last
        self.work = 0

    # -- tokens
    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j][1] if j < len(self.toks) else ""

    def kind(self) -> str:
        return self.toks[self.i][0] if self.i < len(self.toks) else ""

    def take(self, tok: str | None = None) -> str:
        if self.i >= len(self.toks) or (tok is not None and self.toks[self.i][1] != tok):
            raise _Fail
        self.i += 1
        return self.toks[self.i - 1][1]

    # -- grammar (skipping a branch parses it without evaluating: ``live`` False)
    def expr(self, live: bool = True) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Fail
        try:
            start = self.i
            try:
                c = self.binary(0, live)
                cond = _truth(c) if live and self.peek() == "?" else None
            except _Fail:
                # a condition not evaluated here (a variable without a default): the conditional still has a value
                # where both branches evaluate to the same one ('var.x == "" ? var.pools : var.pools')
                self.i = start
                self.binary(0, False)
                if not live or self.peek() != "?":
                    raise
                self.take()
                a = self.expr(True)
                self.take(":")
                if a != self.expr(True) or isinstance(a, Unresolved):
                    raise _Fail from None
                return a
            if self.peek() == "?":
                self.take()
                a = self.expr(live and cond is True)
                self.take(":")
                b = self.expr(live and cond is False)
                return a if cond else b
            return c
        finally:
            self.depth -= 1

    LEVELS = (("||",), ("&&",), ("==", "!="), (">", "<", ">=", "<="), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int, live: bool) -> Any:
        if level == len(self.LEVELS):
            return self.unary(live)
        v = self.binary(level + 1, live)
        while self.peek() in self.LEVELS[level]:
            op = self.take()
            # && and || short-circuit, as Terraform's do since 1.12: 'x != null && length(x) > 0' with x null is false
            short = live and op in ("&&", "||") and isinstance(v, bool) and v == (op == "||")
            w = self.binary(level + 1, live and not short)
            v = (v if short else _apply(op, v, w)) if live else None
        return v

    def unary(self, live: bool) -> Any:
        if self.peek() == "!":
            self.take()
            v = self.unary(live)
            return (not _truth(v)) if live else None
        if self.peek() == "-":
            self.take()
            v = self.unary(live)
            return _norm(-_num(v)) if live else None
        return self.postfix(self.primary(live), live)

    def postfix(self, v: Any, live: bool) -> Any:
        while True:
            if self.peek() == "." and self.kind() == "op" and self.i + 1 < len(self.toks) and self.toks[self.i + 1][0] in ("ident", "num"):
                self.take()
                name = self.take()
                v = _index(v, int(name) if re.fullmatch(r"[0-9]{1,18}", name) else name) if live else None
            elif self.peek() == "[":
                self.take()
                key = self.expr(live)
                self.take("]")
                v = _index(v, key) if live else None
            elif self.peek() in ("[*]", "..."):
                raise _Fail  # splat, grouping: not evaluated here
            else:
                return v

    def primary(self, live: bool) -> Any:
        kind, tok = (self.toks[self.i] if self.i < len(self.toks) else ("", ""))
        if kind == "num":
            self.take()
            return _norm(float(tok)) if any(c in tok for c in ".eE") else int(tok)
        if kind == "str":
            self.take()
            if "${" in tok or "%{" in tok:
                if not live:
                    return None  # skipped (an element's extent, an untaken branch): its end is the token's
                raise _Fail  # a template string inside an expression
            return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), tok[1:-1])
        if tok == "(":
            self.take()
            v = self.expr(live)
            self.take(")")
            return v
        if tok == "[":
            return self.tuple_or_for(live)
        if tok == "{":
            return self.object_or_for(live)
        if kind == "ident":
            self.take()
            if tok in ("true", "false"):
                return tok == "true"
            if tok == "null":
                return None
            if self.peek() == "(":
                return self.call(tok, live)
            return self.reference(tok, live)
        raise _Fail

    def call(self, name: str, live: bool) -> Any:
        self.take("(")
        # try / can take an argument that fails as its value (Unresolved); any other function fails with it
        args = self._list(")", self.element if name in ("try", "can") else self.expr, live)
        if not live:
            return None
        if name == "try":
            return next((a for a in args if not isinstance(a, Unresolved)), None) if any(
                not isinstance(a, Unresolved) for a in args) else _fail()
        if name == "can":
            return bool(args) and not isinstance(args[0], Unresolved)
        fn = RULES.get(name)
        if fn is None or any(isinstance(a, Unresolved) for a in args):
            raise _Fail
        try:
            got = fn(args)
            self.work += len(got) if isinstance(got, (list, dict, str)) else 1
            if self.work > MAX_WORK:
                raise _Fail
            return got
        except _Fail:
            raise
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError):
            raise _Fail from None

    def reference(self, name: str, live: bool) -> Any:
        for frame in reversed(self.bound):
            if name in frame:
                return frame[name]
        if name not in ROOTS or self.peek() != "." or not live:
            if live:
                raise _Fail
            if self.peek() == ".":
                self.take()
                self.take()
            return None
        self.take(".")
        attr = self.take()
        got = self.scope.value(f"{name}.{attr}")
        if isinstance(got, Unresolved):
            raise _Fail
        return got

    def _for_head(self) -> tuple[str | None, str, Any]:
        self.take("for")
        first = self.take()
        second = None
        if self.peek() == ",":
            self.take()
            second = self.take()
        self.take("in")
        coll = self.expr(True)
        self.take(":")
        key, val = (first, second) if second is not None else (None, first)
        return key, val, coll

    def _items(self, coll: Any) -> list[tuple[Any, Any]]:
        if isinstance(coll, dict):
            items = [(k, coll[k]) for k in sorted(coll)]
        elif isinstance(coll, list):
            items = list(enumerate(coll))
        else:
            raise _Fail
        self.work += len(items)
        if len(items) > MAX_ITEMS or self.work > MAX_WORK:
            raise _Fail
        return items

    def _each(self, key: str | None, val: str, coll: Any, body: Callable[[bool], Any], close: str) -> list[Any]:
        """Run ``body`` once per item (and once unevaluated, when there are none, to find the end)."""
        start = self.i
        out: list[Any] = []
        items = self._items(coll)
        for k, v in items:
            self.i = start
            self.bound.append({val: v, **({key: k} if key else {})})
            try:
                got = body(True)
            finally:
                self.bound.pop()
            if got is not _SKIP:
                out.append(got)
        if not items:
            self.bound.append({val: None, **({key: None} if key else {})})
            try:
                body(False)
            finally:
                self.bound.pop()
        self.take(close)
        return out

    def _cond_tail(self, live: bool) -> bool:
        if self.peek() == "if":
            self.take()
            c = self.expr(live)
            return bool(_truth(c)) if live else False
        return True

    def tuple_or_for(self, live: bool) -> Any:
        self.take("[")
        if self.peek() == "for" and live:
            key, val, coll = self._for_head()

            def body(on: bool) -> Any:
                v = self.expr(on)
                keep = self._cond_tail(on)
                return v if keep else _SKIP

            return self._each(key, val, coll, body, "]")
        if self.peek() == "for":
            while self.peek() != "]":  # skipped: balanced to its end
                self._skip_one()
            self.take("]")
            return None
        return self._list("]", self.element, live)

    def _list(self, close: str, one: Callable[[bool], Any], live: bool) -> list[Any]:
        """Comma-separated items up to ``close`` (taken), each parsed by ``one``."""
        out: list[Any] = []
        while self.peek() != close:
            out.append(one(live))
            if self.peek() == ",":
                self.take()
            elif self.peek() != close:
                raise _Fail
        self.take(close)
        return out

    def object_or_for(self, live: bool) -> Any:
        self.take("{")
        if self.peek() == "for" and live:
            key, val, coll = self._for_head()
            pairs: list[tuple[Any, Any]] = []

            def body(on: bool) -> Any:
                k = self.expr(on)
                self.take("=>")
                v = self.expr(on)
                if self.peek() == "...":
                    raise _Fail
                keep = self._cond_tail(on)
                if on and keep:
                    pairs.append((_tostring(k), v))
                return _SKIP

            self._each(key, val, coll, body, "}")
            made: dict[str, Any] = {}
            for name, item in pairs:
                if name in made:
                    raise _Fail  # a duplicate key is an error in Terraform
                made[name] = item
            return made
        if self.peek() == "for":
            while self.peek() != "}":
                self._skip_one()
            self.take("}")
            return None
        obj: dict[str, Any] = {}
        while self.peek() != "}":
            if self.kind() == "ident" and self.peek(1) in ("=", ":"):
                k: Any = self.take()
            else:
                k = self.expr(live)
            if self.peek() not in ("=", ":"):
                raise _Fail
            self.take()
            v = self.element(live)
            if live:
                obj[_tostring(k)] = v
            if self.peek() == ",":
                self.take()
        self.take("}")
        return obj

    def element(self, live: bool) -> Any:
        """An element of a tuple or an object: where only its value cannot be read (a module output, a data source), it
        is that element that is Unresolved, not the whole collection (a node group's subnet_ids does not hide its
        instance types)."""
        start = self.i
        try:
            return self.expr(live)
        except _Fail:
            if not live:
                raise
            self.i = start
            self.expr(False)  # its extent; a syntax error still fails the whole
            return Unresolved(" ".join(tok for _k, tok in self.toks[start:self.i])[:80])

    def _skip_one(self) -> None:
        tok = self.take()
        pairs = {"(": ")", "[": "]", "{": "}"}
        if tok in pairs:
            while self.peek() != pairs[tok]:
                if not self.peek():
                    raise _Fail
                self._skip_one()
            self.take(pairs[tok])


_SKIP = object()


def _truth(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v in ("true", "false"):
        return v == "true"
    raise _Fail


def _index(v: Any, key: Any) -> Any:
    if isinstance(v, dict):
        k = _tostring(key)
        if k not in v:
            raise _Fail
        return v[k]
    if isinstance(v, list):
        i = int(_num(key))
        if not 0 <= i < len(v):
            raise _Fail
        return v[i]
    raise _Fail


def _apply(op: str, a: Any, b: Any) -> Any:
    if op in ("||", "&&"):
        p, q = _truth(a), _truth(b)
        return (p or q) if op == "||" else (p and q)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    x, y = _num(a), _num(b)
    if op in (">", "<", ">=", "<="):
        return {">": x > y, "<": x < y, ">=": x >= y, "<=": x <= y}[op]
    if op in ("/", "%") and y == 0:
        raise _Fail
    if op == "+":
        return _norm(x + y)
    if op == "-":
        return _norm(x - y)
    if op == "*":
        return _norm(x * y)
    return _norm(x / y if op == "/" else math.fmod(x, y))


class _Literals:
    """A scope with no names: a type constraint's defaults are literals."""

    def value(self, expr: str) -> Any:
        raise _Fail


def type_shape(text: str) -> Any:
    """What a variable's type constraint says of the attributes its objects may leave out (``optional(type, default)``),
    as a tree: ("object", {name: (shape, has_default, default)}), ("list" | "set" | "map", shape), ("tuple", [shape]),
    None for a primitive or ``any``; None where ``text`` is not a type constraint read here. Terraform fills an
    absent optional attribute with its default (null without one) when it converts the value to the type."""
    try:
        p = _Parser(_Literals(), text)
        shape = _type(p, 0)
        return shape if p.i == len(p.toks) else None
    except (_Fail, RecursionError):
        return None


def _type(p: _Parser, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _Fail
    name = p.take()
    if name in ("list", "set", "map") and p.peek() == "(":
        p.take("(")
        inner = _type(p, depth + 1)
        p.take(")")
        return (name, inner)
    if name == "object" and p.peek() == "(":
        p.take("(")
        p.take("{")
        attrs: dict[str, tuple[Any, bool, Any]] = {}
        while p.peek() != "}":
            key = p.take()
            key = key[1:-1] if key.startswith('"') else key
            p.take("=")
            if p.peek() == "optional" and p.peek(1) == "(":
                p.take()
                p.take("(")
                sub = _type(p, depth + 1)
                has, default = False, None
                if p.peek() == ",":
                    p.take(",")
                    has, default = True, p.expr(True)
                p.take(")")
                attrs[key] = (sub, has, default)
            else:
                attrs[key] = (_type(p, depth + 1), False, None)
            if p.peek() == ",":
                p.take(",")
        p.take("}")
        p.take(")")
        return ("object", attrs)
    if name == "tuple" and p.peek() == "(":
        p.take("(")
        p.take("[")
        items = []
        while p.peek() != "]":
            items.append(_type(p, depth + 1))
            if p.peek() == ",":
                p.take(",")
        p.take("]")
        p.take(")")
        return ("tuple", items)
    if name in ("string", "number", "bool", "any"):
        return None
    raise _Fail


def evaluate(scope: Scope, text: str) -> Any:
    """The value of the Terraform expression ``text`` (the inside of ``${ }``), or Unresolved."""
    try:
        p = _Parser(scope, text)
        if not p.toks:
            return Unresolved(text)
        v = p.expr(True)
        if p.i != len(p.toks):
            return Unresolved(text)
        return v
    except (_Fail, RecursionError):
        return Unresolved(text)
