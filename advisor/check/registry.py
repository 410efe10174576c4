"""The registry of check rules: what a rule is (:class:`CheckRule`: id, severity, title, docs and
its checks), :data:`CHECK_RULES` and the decorators that fill it.

``@proposal_rule`` registers the check of a rule on a profile proposal, ``@request_rule`` the check
of a rule on an infrastructure request (or, with only an id, the request check of a proposal rule
registered before), ``declared_rule`` a rule checked where its input is read (waivers, the
baseline diff). The rules themselves are in ``advisor.check.rules``, which registers them in the
order of its source when imported: import :data:`CHECK_RULES` from there, never from here, so
the table is full when it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from advisor.check.results import RANK

if TYPE_CHECKING:
    from advisor.check.judging import Judging, RequestJudging

# What a rule reads, in the order of the reference page.
SCOPES = {
    "proposal": "a profile's `proposal:` (and an infrastructure request linked to a workload profile)",
    "waiver": "the proposal's `waivers:`",
    "request": "an infrastructure request (Terraform plan, Kubernetes manifest, SkyPilot task)",
    "policy": "an infrastructure request against the policy's `limits:`",
}

Where = tuple[int, int]
Hit = tuple[str, Where]  # (message, (line, column))


@dataclass(frozen=True)
class CheckRule:
    """A check rule: its id, severity, title and docs, and its checks: of a profile proposal
    (``check``), of an infrastructure request (``request_check``), or neither when the rule is
    checked where its input is read (``checked_in``: waivers)."""

    id: str
    severity: str
    title: str
    help: str
    scope: str = "proposal"
    check: Callable[[Judging], Iterator[Hit]] | None = field(default=None, compare=False, repr=False)
    checked_in: str = "advisor/check/rules.py"
    request_check: Callable[[RequestJudging], Iterator[Hit]] | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        """Where the check is: the rule's functions, or the module that checks it."""
        fns = [f"{fn.__name__}()" for fn in (self.check, self.request_check) if fn is not None]
        return f"{self.checked_in}: {', '.join(fns)}" if fns else self.checked_in

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "scope": self.scope,
            "title": self.title,
            "help": self.help,
            "checked_in": self.where,
        }


CHECK_RULES: dict[str, CheckRule] = {}


def _register(rule: CheckRule) -> None:
    assert rule.id not in CHECK_RULES, rule.id
    assert rule.severity in RANK and rule.scope in SCOPES, rule
    CHECK_RULES[rule.id] = rule


def proposal_rule(
    id: str, severity: str, title: str, help: str
) -> Callable[[Callable[[Judging], Iterator[Hit]]], Callable[[Judging], Iterator[Hit]]]:
    """Register the decorated function as the check of a proposal rule."""

    def wrap(fn: Callable[[Judging], Iterator[Hit]]) -> Callable[[Judging], Iterator[Hit]]:
        _register(CheckRule(id, severity, title, help, "proposal", fn))
        return fn

    return wrap


def proposal_check(id: str) -> Callable[[Callable[[Judging], Iterator[Hit]]], Callable[[Judging], Iterator[Hit]]]:
    """Register the decorated function as the proposal check of a rule registered before (the
    policy's limits, first written for infrastructure requests)."""

    def wrap(fn: Callable[[Judging], Iterator[Hit]]) -> Callable[[Judging], Iterator[Hit]]:
        CHECK_RULES[id] = replace(CHECK_RULES[id], check=fn)
        return fn

    return wrap


def declared_rule(id: str, severity: str, title: str, help: str, scope: str, checked_in: str) -> None:
    """Register a rule whose check runs where its input is read (waivers, infrastructure)."""
    _register(CheckRule(id, severity, title, help, scope, None, checked_in))


def request_rule(
    id: str, severity: str = "", title: str = "", help: str = "", scope: str = "request"
) -> Callable[[Callable[[RequestJudging], Iterator[Hit]]], Callable[[RequestJudging], Iterator[Hit]]]:
    """Register the decorated function as the check of a rule on infrastructure requests; with
    only an id, as the request check of a proposal rule registered before."""

    def wrap(fn: Callable[[RequestJudging], Iterator[Hit]]) -> Callable[[RequestJudging], Iterator[Hit]]:
        if not severity:
            CHECK_RULES[id] = replace(CHECK_RULES[id], request_check=fn)
        else:
            _register(CheckRule(id, severity, title, help, scope, None, request_check=fn))
        return fn

    return wrap


def proposal_rules() -> list[CheckRule]:
    return [r for r in CHECK_RULES.values() if r.check is not None]


def request_rules() -> list[CheckRule]:
    return [r for r in CHECK_RULES.values() if r.request_check is not None]
