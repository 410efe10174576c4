"""What ``advisor check`` reports: findings, one result per proposal or request, the batch report.

The JSON written from these objects is a contract (docs/ci.md, DESIGN.md): keys and order stay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from advisor import __version__
from advisor.errors import Problem
from advisor.estimate.result import Estimate
from advisor.recommend import Recommendation

SEVERITIES = ("error", "warning", "note")
RANK = {"note": 0, "warning": 1, "error": 2}


@dataclass
class Finding:
    rule: str
    severity: str
    message: str
    line: int
    col: int = 1
    waived: bool = False
    waiver: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "column": self.col,
            "waived": self.waived,
        }
        if self.waiver:
            out["waiver"] = self.waiver
        return out


@dataclass
class ProposalResult:
    label: str
    path: str
    name: str
    status: str  # pass | warning | error | skipped
    findings: list[Finding] = field(default_factory=list)
    proposal: dict[str, Any] | None = None
    proposal_estimate: Estimate | None = None
    proposal_cost: float | None = None
    recommended: Recommendation | None = None
    best: Estimate | None = None
    line: int = 1
    key: str | None = None  # what --baseline matches: the profile label, or kind:address for infrastructure
    source: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    workload: str | None = None  # the linked profile of an infrastructure request
    before: dict[str, Any] | None = None  # plan JSON: the resource before the change
    notes: list[str] = field(default_factory=list)
    cost_kind: str | None = None  # monthly | one-off (a run); None: from the proposal's task
    unlinked: bool = False  # an infrastructure request no workload profile describes
    # a manifest file as written that a kustomization of the run also builds: judged, but its chips and cost are counted
    # in the summary through the build (once), not twice
    in_build: bool = False

    @property
    def chosen(self) -> Estimate | None:
        """The recommendation's own configuration (the verdict)."""
        return self.recommended.estimate if self.recommended is not None else None

    @property
    def kind_of_cost(self) -> str:
        """``monthly`` (always-on, serving: hours per month) or ``one-off`` (a training run)."""
        if self.cost_kind is not None:
            return self.cost_kind
        e = self.proposal_estimate
        return "one-off" if e is not None and e.mode == "training" else "monthly"

    @property
    def assumptions(self) -> list[str]:
        """How the cost was reached, shown beside it (notes on hours, cloud, price kind)."""
        keys = ("priced", "hours from", "cloud not stated", "always-on", "a job", "price")
        return [n for n in self.notes if any(k in n for k in keys)]

    def active(self, severity: str) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity and not f.waived]

    def to_json(self) -> dict[str, Any]:
        rec = self.recommended
        out: dict[str, Any] = {
            "profile": self.label,
            "name": self.name,
            "status": self.status,
            "findings": [f.to_json() for f in self.findings],
            "proposal": None,
            "recommended": None,
            "key": self.key or self.label,
            "source": self.source,
            "request": self.request,
        }
        if self.workload is not None or (self.source or {}).get("kind", "profile") != "profile":
            out["workload"] = self.workload
        if self.before is not None:
            out["before"] = self.before
        if self.notes:
            out["notes"] = self.notes
        if self.proposal is not None:
            out["cost_kind"] = self.kind_of_cost
        if self.proposal is not None:
            est = self.proposal_estimate.to_json() if self.proposal_estimate else {}
            # DESIGN.md: the proposal's estimate; "request" is what the pull request asks for.
            out["proposal"] = {**est, "request": {**self.proposal, "cost_usd": _r(self.proposal_cost)}}
        if rec is not None:
            chosen = rec.estimate
            out["recommended"] = {
                "device": rec.device,
                "accelerator": chosen.accelerator if chosen else None,
                "count": chosen.count if chosen else None,
                "hours": _r(chosen.hours) if chosen else None,
                "cost_usd": _r(chosen.cost_usd) if chosen else None,
                "setup_path": rec.setup.path.id if rec.setup else None,
                "confidence": rec.confidence,
            }
            b = self.best
            out["cheapest_feasible"] = (
                {"accelerator": b.accelerator, "count": b.count, "hours": _r(b.hours), "cost_usd": _r(b.cost_usd)} if b else None
            )
        return out


@dataclass
class InvalidFile:
    """A file of the batch that could not be judged (unreadable, malformed, hostile): its problems."""

    path: str
    problems: list[Problem]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "errors": [{"line": p.line, "column": p.col, "message": p.message} for p in self.problems]}


@dataclass
class CheckReport:
    results: list[ProposalResult]
    fail_on: str
    catalog_as_of: str
    policy_path: str | None = None
    diff: dict[str, Any] | None = None
    invalid: list[InvalidFile] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not a kind advisor reads
    excluded: int = 0  # files left out by --exclude, the policy's exclude or .gitignore

    @property
    def problems(self) -> list[Problem]:
        return [p for bad in self.invalid for p in bad.problems]

    @property
    def summary(self) -> dict[str, Any]:
        checked = [r for r in self.results if r.status != "skipped"]
        counted = [r for r in checked if not r.in_build]
        return {
            "profiles": len(self.results),
            "proposals": len(checked),
            "skipped": len(self.results) - len(checked),
            "invalid": len(self.invalid),
            "skipped_files": len(self.skipped_files),
            "excluded_files": self.excluded,
            "total_chips": sum((r.request or {}).get("total_chips") or 0 for r in counted),
            "counted_in_builds": len(checked) - len(counted),
            "passed": sum(r.status == "pass" for r in checked),
            "warning": sum(r.status == "warning" for r in checked),
            "error": sum(r.status == "error" for r in checked),
            "waived": sum(f.waived for r in checked for f in r.findings),
            "findings": {s: sum(1 for r in checked for f in r.findings if f.severity == s and not f.waived) for s in SEVERITIES},
            "proposed_cost_usd": _r(sum(r.proposal_cost or 0.0 for r in counted)) if len({r.kind_of_cost for r in counted}) <= 1 else None,
            "proposed_monthly_usd": _r(sum(r.proposal_cost or 0.0 for r in counted if r.kind_of_cost == "monthly")),
            "proposed_one_off_usd": _r(sum(r.proposal_cost or 0.0 for r in counted if r.kind_of_cost == "one-off")),
            "unpriced": sum(1 for r in checked if r.proposal_cost is None),
            "unlinked": sum(1 for r in checked if r.unlinked),
            "recommended_cost_usd": _r(sum(r.chosen.cost_usd or 0.0 for r in checked if r.chosen)),
        }

    @property
    def exit_code(self) -> int:
        """2 when a file could not be judged (bad input outranks policy), else 1 when a finding
        is at or above ``fail_on``, else 0."""
        if self.invalid:
            return 2
        if self.fail_on == "never":
            return 0
        threshold = RANK[self.fail_on]
        for r in self.results:
            for f in r.findings:
                if not f.waived and RANK[f.severity] >= threshold:
                    return 1
        return 0

    def needs_changes(self) -> int:
        return sum(1 for r in self.results if r.status in ("error", "warning"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": [r.to_json() for r in self.results if r.status != "skipped"],
            "skipped": [r.label for r in self.results if r.status == "skipped"],
            "invalid": [bad.to_json() for bad in self.invalid],
            "skipped_files": [{"path": p, "reason": why} for p, why in self.skipped_files],
            "summary": self.summary,
            "fail_on": self.fail_on,
            "exit_code": self.exit_code,
            "policy": self.policy_path,
            "catalog_as_of": self.catalog_as_of,
            "advisor_version": __version__,
        }
        if self.diff is not None:
            out["diff"] = self.diff
        return out


def _r(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 2)

