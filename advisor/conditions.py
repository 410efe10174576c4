"""The condition language of rules and setup paths: an all/any/not tree of leaves.

A leaf is ``{field, op, value}``. Fields, operators and values are checked
when the file is loaded, against the profile schema and the derived facts,
so a typo in a rule is a load error with its position, never a rule that
silently never fires. Evaluation is plain Python over a closed set of
operators: nothing in a rule file is ever executed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

from advisor.errors import Problem
from advisor.facts import FieldReader, FieldSpec, field_specs
from advisor.validation import did_you_mean
from advisor.yamlsrc import Document, KeyPath


@dataclass(frozen=True)
class Leaf:
    field: str
    op: str
    value: Any

    def describe(self) -> str:
        return f"{self.field} {self.op} {self.value!r}"


@dataclass(frozen=True)
class All:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class AnyOf:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    item: Condition


Condition = Union[Leaf, All, AnyOf, Not]  # noqa: UP007 - a recursive alias


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _cmp(fn: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def op(actual: Any, expected: Any) -> bool:
        return actual is not None and fn(actual, expected)

    return op


# name -> (field kinds it applies to, value shape, evaluation)
OPERATORS: dict[str, tuple[frozenset[str], str, Callable[[Any, Any], bool]]] = {
    "eq": (frozenset({"number", "bool", "str", "enum"}), "scalar", lambda a, e: a == e),
    "ne": (frozenset({"number", "bool", "str", "enum"}), "scalar", lambda a, e: a != e),
    "lt": (frozenset({"number"}), "number", _cmp(lambda a, e: a < e)),
    "lte": (frozenset({"number"}), "number", _cmp(lambda a, e: a <= e)),
    "gt": (frozenset({"number"}), "number", _cmp(lambda a, e: a > e)),
    "gte": (frozenset({"number"}), "number", _cmp(lambda a, e: a >= e)),
    "in": (frozenset({"number", "str", "enum"}), "list", lambda a, e: a in e),
    "not_in": (frozenset({"number", "str", "enum"}), "list", lambda a, e: a not in e),
    "contains": (frozenset({"list"}), "item", lambda a, e: a is not None and e in a),
    "contains_any": (frozenset({"list"}), "items", lambda a, e: a is not None and bool(set(a) & set(e))),
    "is_set": (frozenset({"number", "bool", "str", "enum", "list"}), "bool", lambda a, e: (a is not None and a != []) == e),
}


def evaluate(cond: Condition, reader: FieldReader) -> bool:
    if isinstance(cond, Leaf):
        return OPERATORS[cond.op][2](reader.get(cond.field), cond.value)
    if isinstance(cond, All):
        return all(evaluate(c, reader) for c in cond.items)
    if isinstance(cond, AnyOf):
        return any(evaluate(c, reader) for c in cond.items)
    return not evaluate(cond.item, reader)


def leaves(cond: Condition) -> list[Leaf]:
    if isinstance(cond, Leaf):
        return [cond]
    if isinstance(cond, (All, AnyOf)):
        return [leaf for c in cond.items for leaf in leaves(c)]
    return leaves(cond.item)


class ConditionParser:
    """Parses a condition from YAML data, collecting every problem with its position."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.specs = field_specs()

    def _err(self, loc: KeyPath, msg: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(loc, msg, key=key))

    def parse(self, data: Any, loc: KeyPath, depth: int = 0) -> Condition | None:
        if depth > 32:
            self._err(loc, "condition nested more than 32 levels")
            return None
        if not isinstance(data, dict):
            self._err(loc, "a condition is a mapping: {all: [...]}, {any: [...]}, {not: ...} or {field, op, value}")
            return None
        keys = set(data)
        if keys & {"all", "any", "not"}:
            if len(keys) != 1:
                self._err(loc, f"a group condition has exactly one key, got {', '.join(sorted(map(str, keys)))}")
                return None
            (key,) = keys
            if key == "not":
                inner = self.parse(data["not"], (*loc, "not"), depth + 1)
                return Not(inner) if inner is not None else None
            items = data[key]
            if not isinstance(items, list) or not items:
                self._err((*loc, key), f"'{key}' takes a non-empty list of conditions")
                return None
            parsed = [self.parse(item, (*loc, key, i), depth + 1) for i, item in enumerate(items)]
            if any(p is None for p in parsed):
                return None
            return (All if key == "all" else AnyOf)(tuple(p for p in parsed if p is not None))
        return self._leaf(data, loc)

    def _leaf(self, data: dict[str, Any], loc: KeyPath) -> Leaf | None:
        ok = True
        for key in data:
            if key not in ("field", "op", "value"):
                hint = did_you_mean(str(key), ["field", "op", "value", "all", "any", "not"])
                self._err((*loc, key), f"unknown condition key {key!r}{hint}", key=True)
                ok = False
        for key in ("field", "op"):
            if key not in data:
                self._err(loc, f"condition is missing '{key}'")
                ok = False
        if not ok:
            return None
        field, op = data["field"], data["op"]
        if not isinstance(field, str) or field not in self.specs:
            self._err((*loc, "field"), f"unknown field {field!r}{did_you_mean(str(field), self.specs)}")
            return None
        if not isinstance(op, str) or op not in OPERATORS:
            self._err((*loc, "op"), f"unknown operator {op!r}{did_you_mean(str(op), OPERATORS)}; operators: {', '.join(OPERATORS)}")
            return None
        spec = self.specs[field]
        kinds, shape, _ = OPERATORS[op]
        if spec.kind not in kinds:
            self._err((*loc, "op"), f"operator {op!r} does not apply to {field} ({spec.kind})")
            return None
        if "value" not in data:
            self._err(loc, "condition is missing 'value'")
            return None
        value = self._value(spec, shape, data["value"], (*loc, "value"))
        if value is _BAD:
            return None
        if op == "is_set" and not spec.optional and spec.kind != "list":
            self._err((*loc, "op"), f"{field} always has a value; 'is_set' applies to optional fields")
            return None
        return Leaf(field, op, value)

    def _value(self, spec: FieldSpec, shape: str, value: Any, loc: KeyPath) -> Any:
        if shape == "bool":
            if not isinstance(value, bool):
                self._err(loc, "value must be true or false")
                return _BAD
            return value
        if shape == "number":
            if not _num(value):
                self._err(loc, f"value must be a finite number, got {value!r}")
                return _BAD
            return value
        if shape in ("list", "items"):
            if not isinstance(value, list) or not value:
                self._err(loc, "value must be a non-empty list")
                return _BAD
            items = [self._item(spec, v, (*loc, i)) for i, v in enumerate(value)]
            return _BAD if any(i is _BAD for i in items) else tuple(items)
        return self._item(spec, value, loc)

    def _item(self, spec: FieldSpec, value: Any, loc: KeyPath) -> Any:
        if spec.kind in ("enum", "list") and spec.choices:
            if value not in spec.choices:
                self._err(
                    loc,
                    f"{value!r} is not a value of {spec.path} ({', '.join(spec.choices)}){did_you_mean(str(value), spec.choices)}",
                )
                return _BAD
            return value
        if spec.kind == "number":
            if not _num(value):
                self._err(loc, f"value must be a finite number, got {value!r}")
                return _BAD
            return value
        if spec.kind == "bool":
            if not isinstance(value, bool):
                self._err(loc, "value must be true or false")
                return _BAD
            return value
        if not isinstance(value, str):
            self._err(loc, f"value must be a string, got {value!r}")
            return _BAD
        return value


_BAD = object()
