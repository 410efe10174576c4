"""Rules and conditions as text and JSON (``advisor rules show``, the rules reference): YAML flow
values, numbers, condition trees, a rule's file, and what each operator means."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:

    from advisor.conditions import Condition
    from advisor.knowledge import Rule


OP_TEXT: dict[str, str] = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "lte": "<=",
    "gt": ">",
    "gte": ">=",
    "in": "in",
    "not_in": "not in",
    "contains": "contains",
    "contains_any": "contains any of",
}

OP_DOCS: dict[str, str] = {
    "eq": "equals the value",
    "ne": "differs from the value",
    "lt": "number below the value (false when the field is unset)",
    "lte": "number at most the value (false when unset)",
    "gt": "number above the value (false when unset)",
    "gte": "number at least the value (false when unset)",
    "in": "one of the listed values",
    "not_in": "none of the listed values",
    "contains": "the list field holds the value",
    "contains_any": "the list field shares an element with the listed values",
    "is_set": "value true: the optional field has a value (a list: is non-empty); false: it has none",
}



# --------------------------------------------------------------------------- helpers


def flow(value: Any) -> str:
    """A value as it is written in YAML (flow style)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def number(value: float) -> str:
    """A number without exponent notation, so that YAML reads it back as a number."""
    if not math.isfinite(value):
        return str(value)  # nan / inf: not a YAML number, so validation names the field
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def leaf_text(field: str, op: str, value: Any) -> str:
    if op == "is_set":
        return f"{field} {'is set' if value else 'is not set'}"
    return f"{field} {OP_TEXT.get(op, op)} {flow(value)}"


def condition_lines(cond: Condition, depth: int = 0) -> list[str]:
    """A condition tree as indented lines: ``all of:`` / ``any of:`` / ``not:`` over leaves."""
    from advisor.conditions import All, AnyOf, Leaf

    pad = "  " * depth
    if isinstance(cond, Leaf):
        return [pad + leaf_text(cond.field, cond.op, cond.value)]
    if isinstance(cond, (All, AnyOf)):
        head = "all of:" if isinstance(cond, All) else "any of:"
        return [pad + head] + [line for c in cond.items for line in condition_lines(c, depth + 1)]
    return [pad + "not:", *condition_lines(cond.item, depth + 1)]


def condition_json(cond: Condition) -> Any:
    """A condition tree back in its YAML/JSON form."""
    from advisor.conditions import All, AnyOf, Leaf

    if isinstance(cond, Leaf):
        value = list(cond.value) if isinstance(cond.value, tuple) else cond.value
        return {"field": cond.field, "op": cond.op, "value": value}
    if isinstance(cond, All):
        return {"all": [condition_json(c) for c in cond.items]}
    if isinstance(cond, AnyOf):
        return {"any": [condition_json(c) for c in cond.items]}
    return {"not": condition_json(cond.item)}


def rule_json(rule: Rule) -> dict[str, Any]:
    effect: dict[str, Any] = (
        {"exclude": list(rule.exclude)} if rule.exclude else {"device": rule.device, "points": rule.points}
    )
    return {
        "id": rule.id,
        "title": rule.title,
        "category": rule.category,
        "effect": effect,
        "effect_text": rule.effect_text,
        "sources": list(rule.sources),
    }


def rule_file(rule: Rule) -> str:
    """The rule's file relative to its rule directory's parent (``rules/heuristics/x.yaml``)."""
    from advisor.knowledge import builtin_rules_dir

    path = Path(rule.path).resolve()
    try:
        return "rules/" + path.relative_to(builtin_rules_dir().resolve()).as_posix()
    except ValueError:
        return rule.path


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
