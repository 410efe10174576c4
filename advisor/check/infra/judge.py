"""Judge infrastructure requests: linked to a workload profile, every check applies; not linked,
shape, price and policy only, and the result says which checks were not possible. The request
rules themselves are registered units in ``advisor.check.rules`` (``@request_rule``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import fnmatch
import os
import re
from typing import TYPE_CHECKING, Any

from advisor import clouds
from advisor.check.infra.k8s_pod import CLASS_NOTE
from advisor.check.infra.model import HOURS_PER_MONTH, Autoscaler, Request
from advisor.check.judge import Waiver, apply_waivers, judge, run_rules
from advisor.check.judging import PATH_LINKED
from advisor.check.results import RANK, ProposalResult
from advisor.check.rules import RequestJudging, request_rules
from advisor.estimate.search import estimate
from advisor.loading import LoadedProfile
from advisor.models import Proposal
from advisor.yamlsrc import Document

if TYPE_CHECKING:
    from advisor.check.infra.names import NameIndex
    from advisor.context import Context
    from advisor.policy import Policy

PRICE_KIND = {"on-demand": "on-demand", "spot": "spot", "reservation": "committed-1y"}
MAX_TOTAL_CHIPS = 1_000_000


def apply_compute_classes(requests: list[Request], autoscalers: list[Autoscaler], index: NameIndex) -> None:
    """A pod that names no accelerator type but selects a GKE ComputeClass (cloud.google.com/compute-class) runs on the
    machines of the class's priorities, GKE trying them in order: of those that can hold what the pod asks for (a GPU
    for nvidia.com/gpu, a TPU for google.com/tpu; not a CPU machine, not the other family; one the index does not know
    may), the first is priced (Spot where it says spot: true) and the others are alternatives held to the policy, as
    node-affinity alternatives are. A ComputeClass of any file of the run (cluster-scoped: by name); one the run does not
    hold leaves the hardware unknown, and the finding says so; two of one name that differ leave it unknown and
    unresolved (which one the cluster holds is not known here: never priced at either), every priority of both held to
    the policy."""
    classes: dict[str, Autoscaler] = {}
    twice: set[str] = set()
    for a in autoscalers:
        if a.machines:
            name = a.target[2].split(" [", 1)[0]
            seen = classes.get(name)
            if seen is not None and seen.machines != a.machines:
                twice.add(name)
            classes[name] = a if seen is None else dataclasses.replace(seen, machines=seen.machines + a.machines)
    for r in requests:
        if r.compute_class is None or r.accelerator is not None:
            continue
        name, at = r.compute_class
        cls = classes.get(name)
        if cls is None:
            if r.unknown:
                r.unknown += f"; it selects compute class {name!r}, which no file checked defines"
            r.notes.append(CLASS_NOTE.format(cls=name))
            continue
        wanted = "tpu" if (r.hardware or "").startswith("google.com/") else "gpu"
        usable = [(m, spot) for m, spot in cls.machines if _holds(index, m, wanted)]
        if name in twice:  # which one the cluster holds is not known here: no price from either, every priority held
            r.unresolved.append(("cloud.google.com/compute-class", f"{name}: two ComputeClasses of this name differ", at))
            r.alternatives = list(dict.fromkeys(m for m, _ in usable))
            r.options = [(index.lookup(m).accelerator, None) for m in r.alternatives]
            continue
        if not usable:
            if r.unknown:
                r.unknown += f"; it selects compute class {name!r}, none of whose priorities is a {wanted.upper()}"
            continue
        (first, spot), others = usable[0], [m for m in dict.fromkeys(m for m, _ in usable[1:]) if m != usable[0][0]]
        r.set_hardware(first, index.lookup(first))
        r.where["accelerator"] = at
        r.cloud = "gcp"
        if spot:
            r.pricing = "spot"
        if others:
            r.alternatives = others
            r.options = [(index.lookup(m).accelerator, None) for m in others]
        r.notes.append(f"compute class {name!r} ({cls.what}): judged on its first priority with a {wanted.upper()}, {first}"
                       f"{' (Spot)' if spot else ''}"
                       + (f"; {', '.join(others[:6])} after it, alternatives held to the policy" if others else ""))


def _holds(index: NameIndex, machine: str, wanted: str) -> bool:
    """Whether a ComputeClass priority's machine may hold a pod that asks for a ``wanted`` (gpu / tpu): an accelerator
    of that family, or a name the index does not know (never ruled out)."""
    hw = index.lookup(machine)
    if hw.accelerator is None:
        return True
    acc = index.catalog.accelerators.get(hw.accelerator)
    return acc is not None and not index.is_cpu(hw.accelerator) and acc.device == wanted


def apply_autoscalers(requests: list[Request], autoscalers: list[Autoscaler]) -> None:
    """Each workload's replicas from the autoscalers that may target it, the largest maximum of them (never the one
    that scales it least): by kind, namespace and name; where the workload or the autoscaler names no namespace (the
    one it is applied to: kubectl -n, an Argo CD destination, a Flux targetNamespace), by kind and name across
    namespaces; and a workload of one rendering or build (``Kind/ns/name [kustomize DIR]``) also by its own name, for
    an autoscaler written outside that rendering (an HPA beside the Argo CD Application that builds the workload)."""
    by_target: dict[tuple[str, str, str], list[Autoscaler]] = {}
    loose: dict[tuple[str, str], list[Autoscaler]] = {}
    for scaler in autoscalers:
        if scaler.machines:  # a ComputeClass (apply_compute_classes)
            continue
        by_target.setdefault(scaler.target, []).append(scaler)
        loose.setdefault((scaler.target[0], scaler.target[2]), []).append(scaler)
    for r in requests:
        if not r.target:
            continue
        kind, ns, name = r.target
        names = dict.fromkeys([name, name.split(" [", 1)[0]])
        found = [a for n in names for a in by_target.get((kind, ns, n), [])]
        found += [a for n in names for a in loose.get((kind, n), []) if not r.namespaced or not a.namespaced]
        if found:
            a = max(found, key=lambda x: (x.maximum, x.minimum))
            if a.raises_only and (r.replicas_max is None or a.maximum <= r.replicas_max):
                continue  # a kind known by its shape only never lowers the replicas, nor settles unknown ones
            low = min(a.minimum, r.replicas_min if r.replicas_min is not None else a.minimum) if a.raises_only else a.minimum
            r.replicas_min, r.replicas_max = low, a.maximum
            r.where["replicas"] = a.pos
            r.notes.append(f"replicas {low}..{a.maximum} from {a.what}")


def _matches(req: Request, lp: LoadedProfile) -> bool:
    patterns = lp.profile.match or []
    base = os.path.dirname(lp.path)
    rel = os.path.relpath(req.path, base) if base else req.path
    for pat in patterns:
        if req.kind in PATH_LINKED and (
            fnmatch.fnmatchcase(req.path, pat)
            or fnmatch.fnmatchcase(rel, pat)
            or fnmatch.fnmatchcase(os.path.normpath(req.path), os.path.normpath(pat))
        ):
            return True
        if fnmatch.fnmatchcase(req.address, pat) or (req.target and fnmatch.fnmatchcase("/".join(req.target), pat)):
            return True
    return False


def find_workload(req: Request, workloads: list[LoadedProfile]) -> tuple[LoadedProfile | None, str | None]:
    """(linked profile, why a named link is broken)."""
    for lp in workloads:
        if lp.profile.match and _matches(req, lp):
            return lp, None
    if not req.link:
        return None, None
    for lp in workloads:
        if lp.profile.name == req.link:
            return lp, None
    candidate = os.path.join(os.path.dirname(req.path), req.link)
    if req.link.endswith((".yaml", ".yml")):
        from advisor.yamlsrc import escapes, read_boundary

        if req.path == "-" or os.path.isabs(req.link) or escapes(candidate, read_boundary(req.path)):
            # a link out of the repository (an absolute path, ../ past its root) is never opened, nor looked for:
            # whether a runner's file exists, and its first line's fault, would reach every output
            return None, f"it names workload {req.link[:80]!r}, a path outside the repository: not read"
    if req.link.endswith((".yaml", ".yml")) and os.path.isfile(candidate):
        from advisor.errors import InputError
        from advisor.loading import load_profiles

        try:
            return load_profiles([candidate])[0], None
        except InputError as exc:
            return None, f"the linked profile {candidate} is invalid: {exc.problems[0]}"
    return None, f"it names workload {req.link!r}, but no profile of that name or path was given"


def _synthetic(req: Request, profile: Any, label: str) -> LoadedProfile:
    at = (req.line, req.col)
    doc = Document(req.path, 0, {}, at)
    doc.value_pos = {
        ("proposal", "accelerator"): req.pos("accelerator"),
        ("proposal", "count"): req.pos("count"),
        ("proposal", "hours"): at,
        ("proposal",): at,
    }
    doc.key_pos = {("proposal",): at}
    return LoadedProfile(profile, doc)


def price_request(req: Request, ctx: Context, end: str) -> tuple[float | None, float, str]:
    """(USD per chip-hour, hours, a word on how) for an unlinked request."""
    hours = HOURS_PER_MONTH
    how = "always-on: 730 h a month" if req.always_on else "a job with no linked workload: priced as a whole month (730 h), an upper bound"
    acc = ctx.catalog.accelerators.get(req.accelerator or "")
    if acc is None:
        return None, hours, how
    allowed = [req.cloud] if req.cloud else clouds.rented()
    p = acc.price(allowed, PRICE_KIND[req.pricing], req.region, req.count)
    if p is None and req.pricing == "reservation":
        p = acc.price(allowed, "on-demand", req.region, req.count)
        how += "; no reservation price in the catalog: priced on-demand"
    if p is not None and not req.cloud:
        how += f"; cloud not stated: priced on {p.cloud}"
    return (p.usd_per_chip_hour if p else None), hours, how


def judge_request(req: Request, workloads: list[LoadedProfile], ctx: Context, policy: Policy, today: dt.date) -> ProposalResult:
    end = policy.judge_replicas
    label = f"{req.path}::{req.address}"
    for side in ("min", "max"):
        n = req.total(side)
        if n is not None and n > MAX_TOTAL_CHIPS:
            from advisor.errors import InputError

            line, col = req.pos("replicas")
            raise InputError.single(
                req.path,
                line,
                col,
                f"{req.address}: {req.count} chips x {req.replicas(side)} replicas = {n} chips, beyond any real cluster (limit "
                f"{MAX_TOTAL_CHIPS:,})",
            )
    if (req.count is not None and req.count < 0) or any((req.replicas(s) or 0) < 0 for s in ("min", "max")):
        from advisor.errors import InputError

        line, col = req.pos("count")
        raise InputError.single(req.path, line, col, f"{req.address}: a negative count of chips or replicas ({req.count})")
    if req.count is None and not req.unresolved:  # chips not read, and no reader said why: never a silent zero
        req.unresolved.append(("count-unknown", "how many accelerators this asks for was not read", req.pos("count")))
    lp, broken = find_workload(req, workloads)
    total = req.total(end)
    acc = ctx.catalog.accelerators.get(req.accelerator or "")
    result: ProposalResult | None = None
    hours_note = ""
    if lp is not None and acc is not None and total and not req.unresolved:
        profile = lp.profile
        hours = HOURS_PER_MONTH
        if not req.always_on and profile.is_training:
            e = estimate(profile, acc, total, ctx.constants)
            run = min(max(e.hours or HOURS_PER_MONTH, 0.01), 1_000_000)
            bound = req.run_bound_hours
            if bound is None:  # the profile (from the same change, perhaps) says how long; nothing makes the run stop
                hours = HOURS_PER_MONTH
                hours_note = (
                    f"priced as a whole month (730 h): the workload's estimate at {acc.id} x {total} is {run:,.1f} h, but "
                    f"nothing in {req.address} stops the run there (a Kubernetes Job: spec.activeDeadlineSeconds)"
                )
            else:  # the most it can run: what the manifest enforces, not what the profile expects
                hours = min(max(bound, 0.01), HOURS_PER_MONTH)
                hours_note = (
                    f"hours from the run's deadline ({bound:,.1f} h, activeDeadlineSeconds), the most it runs; the workload's "
                    f"estimate at {acc.id} x {total} is {run:,.1f} h"
                )
        dep = profile.deployment.model_copy(update={
            "clouds": [req.cloud] if req.cloud else profile.deployment.clouds,
            "pricing": PRICE_KIND[req.pricing] if req.pricing != "reservation" else "committed-1y",
            "region": req.region if req.region else profile.deployment.region,
        })
        prof = profile.model_copy(update={"proposal": Proposal(accelerator=acc.id, count=total, hours=round(hours, 2)), "deployment": dep})
        result = judge(_synthetic(req, prof, label), ctx, policy, today)
        result.workload = lp.label
    if result is None:
        price, hours, hours_note = price_request(req, ctx, end)
        name = acc.id if acc else (req.hardware or "unknown")
        result = ProposalResult(
            label, req.path, req.address, "pass", proposal={"accelerator": name, "count": total, "hours": hours}, line=req.line
        )
        result.proposal_cost = (total * hours * price) if (price is not None and total is not None) else None
        if total == 0:
            result.proposal_cost = 0.0
    result.label, result.name, result.line = label, req.address, req.line
    result.key = f"{req.kind}:{req.address}"
    result.source = {"path": req.path, "kind": req.kind, "address": req.address, "line": req.line}
    if req.config is not None:
        result.source["config"] = {"path": req.config[0], "line": req.config[1]}
    result.request = req.to_json(end)
    if req.before is not None:
        bprice, bhours, _ = price_request(req.before, ctx, end)
        btotal = req.before.total(end)
        result.before = {
            "total_chips": btotal,
            "cost_usd": None if bprice is None or btotal is None else round(btotal * bhours * bprice, 2),
            "request": req.before.to_json(end),
        }
    notes = list(req.notes) + ([hours_note] if hours_note else [])
    result.notes = notes
    rj = RequestJudging(req, policy, end, acc, lp, broken, judged=result.recommended is not None, cost=result.proposal_cost,
                        clouds=req.cloud or ", ".join(clouds.rented()))
    findings = result.findings + run_rules(request_rules(), "request_check", rj, policy)
    apply_waivers(request_waivers(req), findings, today, policy)
    result.findings = sorted(findings, key=lambda f: (-RANK[f.severity], f.line, f.rule))
    result.status = "error" if result.active("error") else "warning" if result.active("warning") else "pass"
    result.cost_kind = (
        "one-off"
        if (lp is not None and not req.always_on and lp.profile.is_training and hours_note.startswith("hours from")
            and (req.run_bound_hours or 0.0) < HOURS_PER_MONTH)
        else "monthly"
    )
    if lp is None:
        result.unlinked = True
    return result


_WAIVER = re.compile(r"^(?P<rule>[A-Za-z0-9_.-]+)(?:\s+until\s+(?P<date>\S+))?\s*(?::\s*(?P<reason>.*))?$")


def request_waivers(req: Request) -> list[Waiver]:
    """Per-resource waivers, one spelling in every carrier: ``RULE until YYYY-MM-DD: reason`` (the
    Kubernetes annotation ``advisor.dev/waive``, a ``# advisor:waive`` comment in or above a
    Terraform block, SkyPilot's ``envs.ADVISOR_WAIVE``; one per line), judged by the same
    conditions as a profile's waivers (``advisor.check.judge.apply_waivers``)."""
    out = []
    for text, where in req.waivers:
        m = _WAIVER.match(text.strip())
        rule = m.group("rule") if m else text.split()[0] if text.split() else "?"
        reason = (m.group("reason") or "").strip() if m else ""
        date = m.group("date") if m else None
        expires: dt.date | None = None
        problem = None
        if date is not None:
            try:
                expires = dt.date.fromisoformat(date)
            except ValueError:
                problem = f"has an unreadable date {date[:20]!r}"
        out.append(Waiver(rule, reason, expires, where, date_problem=problem, syntax=" (RULE until YYYY-MM-DD: reason)"))
    return out
