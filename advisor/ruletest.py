"""Run every rule's own examples (``examples.fires`` / ``examples.not_fires``).

Used by ``advisor rules test`` and by the test suite, for the built-in rules
and for a user's rule directory alike (the Semgrep/conftest ``verify`` idea).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from advisor.conditions import evaluate
from advisor.facts import FieldReader
from advisor.knowledge import Rule
from advisor.models import Profile

BASE: dict[str, Any] = {"name": "example", "task": "inference", "domain": "other", "model": {"params_b": 1}}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def example_profile(example: dict[str, Any]) -> Profile:
    """The example deep-merged over the base profile, with the block its task needs."""
    data = merge(BASE, example)
    if data.get("task") in ("training", "fine-tuning"):
        data.setdefault("training", {"tokens_b": 1})
    elif data.get("task") == "inference":
        data.setdefault("inference", {"peak_qps": 1})
    return Profile.model_validate(data)


@dataclass(frozen=True)
class CaseResult:
    rule: str
    kind: str  # fires | not_fires
    index: int
    ok: bool
    detail: str = ""


def run_rule(rule: Rule) -> list[CaseResult]:
    out: list[CaseResult] = []
    for kind, examples, expected in (("fires", rule.fires, True), ("not_fires", rule.not_fires, False)):
        for i, example in enumerate(examples):
            try:
                profile = example_profile(example)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                loc = ".".join(str(p) for p in first["loc"])
                out.append(CaseResult(rule.id, kind, i, False, f"example is not a valid profile: {loc}: {first['msg']}"))
                continue
            got = evaluate(rule.when, FieldReader(profile))
            detail = (
                ""
                if got == expected
                else f"expected the rule {'to fire' if expected else 'not to fire'}, it {'fired' if got else 'did not fire'}"
            )
            out.append(CaseResult(rule.id, kind, i, got == expected, detail))
    return out
