"""The cost diff of ``advisor check``: a baseline result against this run, and the policy limits on
the increase in a month's spend (``policy-monthly-increase``) and in one-off runs' (``policy-one-off-increase``)."""

from __future__ import annotations

import math
from typing import Any

from advisor.check.results import CheckReport, Finding, ProposalResult, _r
from advisor.estimate.result import HOURS_PER_MONTH
from advisor.fmt import money
from advisor.policy import Policy

BASELINE_SCHEMA_VERSION = 1
MAX_BASELINE_RESULTS = 100_000


def validate_baseline(data: dict[str, Any], path: str) -> dict[str, Any]:
    """A baseline is untrusted input (a pull request may bring its own): an ``advisor check
    --format json`` result of schema version 1 whose results each have a key, and whose costs are
    finite and non-negative and chip counts non-negative whole numbers. Anything else is an input
    error at ``path``, never silently a zero."""
    from advisor.errors import InputError, Problem

    problems: list[str] = []
    version = data.get("schema_version", BASELINE_SCHEMA_VERSION)
    if version != BASELINE_SCHEMA_VERSION or isinstance(version, bool):
        problems.append(f"schema_version: {version!r} is not a baseline schema this advisor reads (expected {BASELINE_SCHEMA_VERSION})")
    results = data.get("results")
    if not isinstance(results, list):
        problems.append("results: expected a list")
        results = []
    if len(results) > MAX_BASELINE_RESULTS:
        problems.append(f"results: more than {MAX_BASELINE_RESULTS} entries")
        results = []

    def cost(where: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            problems.append(f"{where}: {value!r} is not a finite, non-negative cost")

    for i, e in enumerate(results):
        at = f"results[{i}]"
        if not isinstance(e, dict):
            problems.append(f"{at}: expected an object")
            continue
        if not isinstance(e.get("key"), str) and not isinstance(e.get("profile"), str):
            problems.append(f"{at}: needs a 'key' or 'profile' string")
        prop = e.get("proposal")
        if prop is not None and not isinstance(prop, dict):
            problems.append(f"{at}.proposal: expected an object or null")
        elif isinstance(prop, dict):
            cost(f"{at}.proposal.cost_usd", prop.get("cost_usd"))
            req = prop.get("request")
            if req is not None and not isinstance(req, dict):
                problems.append(f"{at}.proposal.request: expected an object or null")
            elif isinstance(req, dict):
                cost(f"{at}.proposal.request.cost_usd", req.get("cost_usd"))
        req = e.get("request")
        if isinstance(req, dict):
            chips = req.get("total_chips")
            if chips is not None and (isinstance(chips, bool) or not isinstance(chips, int) or chips < 0):
                problems.append(f"{at}.request.total_chips: {chips!r} is not a non-negative whole number")
        found = e.get("findings")
        if found is not None and not (
            isinstance(found, list)
            and all(isinstance(f, dict) and isinstance(f.get("rule"), str) and isinstance(f.get("severity"), str) for f in found)
        ):
            problems.append(f"{at}.findings: expected a list of objects with 'rule' and 'severity' strings")
        if len(problems) >= 20:
            break
    if problems:
        raise InputError([Problem(path, 1, 1, f"baseline {p}") for p in problems])
    return data


def _old_findings(entry: dict[str, Any]) -> set[tuple[str, str]]:
    found = entry.get("findings")
    if not isinstance(found, list):
        return set()
    return {
        (f["rule"], f["severity"])
        for f in found
        if isinstance(f, dict) and isinstance(f.get("rule"), str) and isinstance(f.get("severity"), str) and not f.get("waived")
    }


def _old_cost(entry: dict[str, Any]) -> float | None:
    prop = entry.get("proposal")
    if not isinstance(prop, dict):
        return None
    request = prop.get("request")
    value = request.get("cost_usd") if isinstance(request, dict) else prop.get("cost_usd")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _month_share(kind: str, hours: Any) -> float:
    """A cost's share spent in its costliest month: all of a monthly one, all of a run of up to a month, 730 / hours of a
    longer run."""
    if kind != "one-off" or isinstance(hours, bool) or not isinstance(hours, (int, float)) or not hours > 0:
        return 1.0
    return min(1.0, HOURS_PER_MONTH / float(hours))


def _old_hours(entry: dict[str, Any]) -> Any:
    prop = entry.get("proposal")
    request = prop.get("request") if isinstance(prop, dict) else None
    return request.get("hours") if isinstance(request, dict) else None


def _old_chips(entry: dict[str, Any]) -> int | None:
    req = entry.get("request")
    value = req.get("total_chips") if isinstance(req, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _old_kind(entry: dict[str, Any]) -> str:
    kind = entry.get("cost_kind")
    if kind in ("monthly", "one-off"):
        return str(kind)
    prop = entry.get("proposal")
    return "one-off" if isinstance(prop, dict) and prop.get("mode") == "training" else "monthly"


def _alt_key(entry: dict[str, Any]) -> str | None:
    """The second way to match: an infrastructure resource's kind and address, a profile's name."""
    src = entry.get("source")
    if isinstance(src, dict) and src.get("kind") not in (None, "profile") and isinstance(src.get("address"), str):
        return f"{src.get('kind')}:{src['address']}"
    name = entry.get("name")
    return f"profile:{name}" if isinstance(name, str) else None


_COMPARED = (("accelerator", "accelerator"), ("count", "count"), ("pricing", "price kind"), ("cloud", "cloud"), ("region", "region"))


def _what_changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What a reviewer needs to read: 'accelerator t4 -> l4', 'count 1 -> 2', 'replicas 1..1 -> 2..4'."""
    out = []
    o_req, n_req = old.get("request"), new.get("request")
    infra = (new.get("source") or {}).get("kind", "profile") != "profile"
    if infra and isinstance(o_req, dict) and isinstance(n_req, dict):
        for key, label in _COMPARED:
            a = o_req.get(key) if key != "accelerator" else (o_req.get("accelerator") or o_req.get("hardware"))
            b = n_req.get(key) if key != "accelerator" else (n_req.get("accelerator") or n_req.get("hardware"))
            if a != b:
                out.append(f"{label} {a} -> {b}")
        a_r = (o_req.get("replicas_min"), o_req.get("replicas_max"))
        b_r = (n_req.get("replicas_min"), n_req.get("replicas_max"))
        if a_r != b_r:
            out.append(f"replicas {a_r[0]}..{a_r[1]} -> {b_r[0]}..{b_r[1]}")
        return out
    o_prop = (old.get("proposal") or {}).get("request") if isinstance(old.get("proposal"), dict) else None
    n_prop = (new.get("proposal") or {}).get("request") if isinstance(new.get("proposal"), dict) else None
    if isinstance(o_prop, dict) and isinstance(n_prop, dict):
        for key in ("accelerator", "count", "hours"):
            if o_prop.get(key) != n_prop.get(key):
                out.append(f"{key} {o_prop.get(key)} -> {n_prop.get(key)}")
    return out


def diff_against(report: CheckReport, baseline: dict[str, Any] | None) -> dict[str, Any]:
    """New and fixed findings, what changed, chips and cost before -> after per result and in total,
    monthly and one-off spend kept apart. Results match by ``key`` (the file's path relative to
    the run's root and the resource address, or the profile document), then, for those left, by
    kind and address (or profile name) where that is unique on both sides. A result new against
    the baseline counts its full cost. Without a baseline, a Terraform plan's own prior state
    (``change.before``) is the baseline of its resources.

    The baseline is untrusted input: entries of the wrong shape are ignored, never trusted.
    """
    old = _baseline_entries(baseline)
    current = [r for r in report.results if r.status != "skipped"]
    pairs, used = _match_by_key(current, old)
    _match_by_alt_key(current, old, pairs, used)
    changes: list[dict[str, Any]] = []
    for i, r in enumerate(current):
        before = (old.get(pairs[i]) if i in pairs else None) if baseline is not None else _plan_prior_state(r)
        changes.append(_change(r, before, pairs.get(i), from_file=baseline is not None))
    removed = sorted(k for k in old if k not in used)
    return {
        "baseline": "file" if baseline is not None else "plan-prior-state",
        "new_findings": sum(len(c["new"]) for c in changes),
        "fixed_findings": sum(len(c["fixed"]) for c in changes),
        "removed_profiles": removed,
        **_totals(changes, [old[k] for k in removed], "monthly", "cost"),
        "removed_monthly_usd": _r(sum(c for c in (_old_cost(old[k]) for k in removed if _old_kind(old[k]) == "monthly") if c is not None)),
        **_totals(changes, [old[k] for k in removed], "one-off", "one_off"),
        "chips_before": sum(c["chips_before"] or 0 for c in changes) + sum(_old_chips(old[k]) or 0 for k in removed),
        "chips_after": sum(c["chips_after"] or 0 for c in changes),
        "unpriced": sorted(c["key"] for c in changes if c["cost_delta_usd"] is None),
        "changes": [
            c
            for c in changes
            if c["new"] or c["fixed"] or c["added"] or c["what"] or c["cost_delta_usd"] or c["chips_before"] != c["chips_after"]
        ],
    }


def _baseline_entries(baseline: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The baseline's results by key (or, written without keys, by profile); the first of a key wins."""
    entries = [e for e in (baseline["results"] if baseline is not None else []) if isinstance(e, dict)]
    old: dict[str, dict[str, Any]] = {}
    for e in entries:
        k = e.get("key") if isinstance(e.get("key"), str) else e.get("profile")
        if isinstance(k, str):
            old.setdefault(k, e)
    return old


def _match_by_key(current: list[ProposalResult], old: dict[str, dict[str, Any]]) -> tuple[dict[int, str], set[str]]:
    """First pass: each result's baseline key by its own key (or label); and the baseline keys taken."""
    pairs: dict[int, str] = {}
    used: set[str] = set()
    for i, r in enumerate(current):
        for k in (r.key or r.label, r.label):  # the key; a baseline written without keys names the profile
            if k in old and k not in used:
                pairs[i] = k
                used.add(k)
                break
    return pairs, used


def _match_by_alt_key(current: list[ProposalResult], old: dict[str, dict[str, Any]], pairs: dict[int, str], used: set[str]) -> None:
    """Second pass: pairs the results left by kind + address (or profile name), where unique on both sides."""
    left_old: dict[str, list[str]] = {}
    for k, e in old.items():
        if k not in used and (a := _alt_key(e)) is not None:
            left_old.setdefault(a, []).append(k)
    left_new: dict[str, list[int]] = {}
    for i, r in enumerate(current):
        if i not in pairs:
            a = _alt_key(r.to_json())
            if a is not None:
                left_new.setdefault(a, []).append(i)
    for a, idx in left_new.items():
        ks = left_old.get(a, [])
        if len(idx) == 1 and len(ks) == 1:
            pairs[idx[0]] = ks[0]
            used.add(ks[0])


def _plan_prior_state(r: ProposalResult) -> dict[str, Any] | None:
    """A Terraform plan resource's prior state (``change.before``) in the shape of a baseline entry."""
    if r.before is None:
        return None
    return {
        "proposal": {"request": {"cost_usd": r.before.get("cost_usd")}},
        "request": {**(r.before.get("request") or {}), "total_chips": r.before.get("total_chips")},
        "cost_kind": r.kind_of_cost,
    }


def _change(r: ProposalResult, before: dict[str, Any] | None, baseline_key: str | None, *, from_file: bool) -> dict[str, Any]:
    """One result against what it was: findings new and fixed, what changed, chips and cost before -> after."""
    now = {(f.rule, f.severity) for f in r.findings if not f.waived}
    was = _old_findings(before) if before and from_file else (now if not from_file else set())
    old_cost = _old_cost(before) if before else None
    new = sorted(now - was)
    fixed = sorted(was - now)
    added = before is None
    if added:
        old_cost = 0.0
    kind = r.kind_of_cost
    delta = None if (old_cost is None or r.proposal_cost is None) else round(r.proposal_cost - old_cost, 2)
    what = ["new"] if added else _what_changed(before or {}, r.to_json())
    # each side's cost in its costliest month (a run: all of it unless it runs longer than a month), so a run made ten
    # times wider and ten times shorter, or a run turned always-on, moves a month's spend by what it really does
    share = _month_share(kind, (r.proposal or {}).get("hours"))
    old_share = 1.0 if added or before is None else _month_share(_old_kind(before), _old_hours(before))
    month = None if delta is None or old_cost is None else round((r.proposal_cost or 0.0) * share - old_cost * old_share, 2)
    if from_file and not added and before is not None and _old_kind(before) != kind:
        what.append(f"cost {_old_kind(before)} -> {kind}")
    return {
        "profile": r.label,
        "key": r.key or r.label,
        "baseline_key": baseline_key,
        "added": added,
        "what": what,
        "cost_kind": kind,
        "new": [{"rule": a, "severity": b} for a, b in new],
        "fixed": [{"rule": a, "severity": b} for a, b in fixed],
        "chips_before": 0 if added else _old_chips(before or {}),
        "chips_after": (r.request or {}).get("total_chips"),
        "cost_before_usd": old_cost,
        "cost_after_usd": _r(r.proposal_cost),
        "cost_delta_usd": delta,
        "month_share": round(share, 4),
        "month_delta_usd": month,
    }


def _totals(changes: list[dict[str, Any]], removed: list[dict[str, Any]], kind: str, prefix: str) -> dict[str, float | None]:
    """Before, after and delta of one kind of spend (``cost_*``: monthly; ``one_off_*``: runs)."""
    mine = [c for c in changes if c["cost_kind"] == kind]
    gone = sum(c for c in (_old_cost(e) for e in removed if _old_kind(e) == kind) if c is not None)
    return {
        f"{prefix}_before_usd": _r(sum(c["cost_before_usd"] or 0.0 for c in mine) + gone),
        f"{prefix}_after_usd": _r(sum(c["cost_after_usd"] or 0.0 for c in mine)),
        f"{prefix}_delta_usd": _r(sum(c["cost_delta_usd"] or 0.0 for c in mine) - gone),
    }


def _month_delta(d: dict[str, Any]) -> float:
    """What the change adds to spend in a month: each resource's cost in its costliest month against the baseline's in
    its own (a run of up to a month spends all of it in one: whether a job is a run is the pull request's to say, through
    its deadline and its link to a training profile, so a run never escapes a monthly limit), less the always-on spend of
    what it removes."""
    changed = sum(float(c.get("month_delta_usd") or 0.0) for c in d["changes"])
    return changed - float(d.get("removed_monthly_usd") or 0.0)


def apply_increase_limit(report: CheckReport, policy: Policy) -> None:
    """The policy's limits on the increase: ``limits.max_monthly_increase_usd`` (what the change adds to a month's spend:
    always-on resources, and runs in their costliest month) and ``limits.max_one_off_increase_usd`` (the runs' total);
    every result that adds cost of the kind limited carries the finding when the total passes the limit, and a result
    whose cost change is unknown is an error under either, never counted as +$0."""
    d = report.diff
    if d is None:
        return
    limits = policy.limits
    month = _month_delta(d)
    _limit(report, policy, "policy-monthly-increase", limits.max_monthly_increase_usd, ("monthly", "one-off"), month,
           lambda total, limit, c: (
               f"the change raises spend in a month by {money(total)} in total (always-on resources, and runs in their costliest "
               f"month), over the policy's {money(limit)} limit; this resource adds {money(c['month_delta_usd'])} in a month"
               + (" (a run)" if c["cost_kind"] == "one-off" else "") + f" ({c['chips_before']} -> {c['chips_after']} chips)."),
           adds="month_delta_usd")
    _limit(report, policy, "policy-one-off-increase", limits.max_one_off_increase_usd, ("one-off",), d.get("one_off_delta_usd") or 0.0,
           lambda total, limit, c: (
               f"the change adds {money(total)} of one-off runs in total, over the policy's {money(limit)} limit; this run adds "
               f"{money(c['cost_delta_usd'])} ({c['chips_before']} -> {c['chips_after']} chips)."))


def _limit(
    report: CheckReport, policy: Policy, rule: str, limit: float | None, kinds: tuple[str, ...], total: float, say: Any,
    adds: str = "cost_delta_usd",
) -> None:
    d = report.diff
    if limit is None or d is None or rule in policy.disabled_rules:
        return
    # Fail closed: a resource whose change cannot be priced (no price for the request, or none in the baseline) is an
    # error under a limit, never counted as +$0.
    unknown = set(d.get("unpriced") or [])
    for r in report.results:
        if r.status != "skipped" and (r.key or r.label) in unknown and r.kind_of_cost in kinds:
            r.findings.append(
                Finding(
                    rule,
                    "error",
                    "the cost change of this resource is unknown (no price for it, or none in the baseline), and the policy "
                    f"limits the increase to {money(limit)}; "
                    "price it (catalog override) or fix the baseline.",
                    r.line,
                    1,
                )
            )
            r.status = "error"
    if total <= limit:
        return
    by_key = {c["key"]: c for c in d["changes"]}
    for r in report.results:
        c = by_key.get(r.key or r.label)
        if c is None or c["cost_kind"] not in kinds or not (c.get(adds) or 0) > 0:
            continue
        r.findings.append(Finding(rule, "error", say(total, limit, c), r.line, 1))
        r.status = "error"
