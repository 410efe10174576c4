"""The candidate search: every configuration worth estimating for a profile, across the catalog, and
the best of them under an objective (with the verdict-only pruning the what-ifs and check use)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from advisor import capacity
from advisor.catalog import Accelerator, Catalog
from advisor.constants import Constants
from advisor.estimate.inference import estimate_inference
from advisor.estimate.price import hosts_for, offered_on, price_for
from advisor.estimate.replica import (
    multi_host_ok,
)
from advisor.estimate.result import Estimate
from advisor.estimate.training import (
    estimate_training,
    training_candidates,
    training_cost_floor,
    training_target_hours,
)
from advisor.memo import IdentityMemo
from advisor.models import Profile


def estimate(
    profile: Profile, acc: Accelerator, count: int, c: Constants, *, batch: int | None = None, owned_chips: int | None = None,
    ranges: bool = True,
) -> Estimate:
    """One configuration; ``owned_chips``: the team owns that many of ``acc`` (no price, sized within
    them); ``ranges=False``: without the cost ranges only the confidence and the tables read (serving)."""
    if profile.is_training:
        return estimate_training(profile, acc, count, c, owned_chips=owned_chips)
    return estimate_inference(profile, acc, count, c, batch=batch, owned_chips=owned_chips, ranges=ranges)


NOT_ESTIMATED: set[str] = {"name", "proposal", "match"}
_WORKLOAD_KEY: list[Any] = [None, ""]  # (profile, key): a profile's key is asked for once per candidate


def workload_key(profile: Profile) -> str:
    """The profile without what the estimator never reads (its name, its proposal, the
    infrastructure it matches): equal keys, equal estimates."""
    if _WORKLOAD_KEY[0] is not profile:
        _WORKLOAD_KEY[0], _WORKLOAD_KEY[1] = profile, profile.model_dump_json(exclude=NOT_ESTIMATED)
    return str(_WORKLOAD_KEY[1])


# The training counts of one workload on one catalog entry (a proposal's checks ask for them again).
_TRAINING_COUNTS: IdentityMemo[list[int]] = IdentityMemo(4096)


def candidate_counts(profile: Profile, acc: Accelerator, c: Constants) -> list[int]:
    """Real shapes worth estimating for this workload."""
    if profile.is_training:
        return list(_TRAINING_COUNTS.get((acc, c), workload_key(profile), lambda: [e.count for e in training_candidates(profile, acc, c)]))
    # Serving: single-host replicas first; multi-host ones (up to max_hosts_per_replica) where
    # the stack serves across hosts, else only when nothing single-host holds the weights.
    counts, single, multi = _serving_counts(acc, int(c.estimator.inference.multi_host_serving.max_hosts_per_replica))
    if multi_host_ok(profile, acc, c):
        return (single + multi) or counts[:1]
    return single or counts[:1]


_COUNTS: IdentityMemo[tuple[list[int], list[int], list[int]]] = IdentityMemo(4096)


def _serving_counts(acc: Accelerator, limit: int) -> tuple[list[int], list[int], list[int]]:
    """(the ladder, its single-host counts, its counts over 2..``limit`` hosts): a function of the
    catalog entry alone, computed once per entry."""
    def ladder() -> tuple[list[int], list[int], list[int]]:
        counts = acc.counts()
        return counts, [n for n in counts if hosts_for(acc, n) <= 1], [n for n in counts if 1 < hosts_for(acc, n) <= limit]

    counts, single, multi = _COUNTS.get((acc,), limit, ladder)
    return list(counts), list(single), list(multi)


def all_candidates(
    profile: Profile, catalog: Catalog, c: Constants, *, keep: Mapping[tuple[str, bool], list[Estimate]] | None = None,
    verdict_only: bool = False,
    ranges: bool = True,
) -> list[Estimate]:
    """Every configuration worth estimating: the owned accelerators' (within what is owned), then
    each catalog accelerator's. ``keep``: (accelerator id, owned?) -> its candidates, already
    estimated for a profile that differs from this one in nothing they depend on (re-used as they are).

    ``verdict_only`` (callers that read the verdict, its configuration, its feasibility and its
    confidence, never every candidate: the what-ifs and check) skips what cannot change them: cloud
    accelerators not offered on the profile's clouds in a family and vendor that has one that is
    (never feasible; a family's closest configuration is an offered one, recommend.closest; a
    software block is the vendor's), entries another searched entry dominates (the same hardware,
    never cheaper: Catalog.dominated) and, for training, entries whose cost floor is above their
    family's best (_VerdictBar). ``ranges=False`` (the what-ifs): estimate without cost ranges."""
    keep = keep or {}
    out: list[Estimate] = []
    allowed = {catalog.resolve(a) or a for a in profile.deployment.accelerators or []}
    local = profile.deployment.local
    clouds: list[str] = list(profile.deployment.clouds)
    # (family, vendor) pairs with an entry offered on the profile's clouds: a software block is a
    # function of the pair, so skipping the others leaves every family's blocks as they were
    served = {
        (acc.device, acc.vendor) for acc in catalog.accelerators.values()
        if verdict_only and not acc.local and (not allowed or acc.id in allowed) and offered_on(acc, clouds)
    }
    for own in profile.deployment.owned or []:
        acc = catalog.get(own.accelerator)
        kept = keep.get((acc.id, True))
        if kept is not None:
            out.extend(kept)
        elif profile.is_training:
            out.extend(training_candidates(profile, acc, c, owned_chips=own.count))
        else:
            counts = [n for n in candidate_counts(profile, acc, c) if n <= own.count] or [own.count]
            out.extend(estimate(profile, acc, n, c, owned_chips=own.count, ranges=ranges) for n in counts)
    dominated = catalog.dominated() if verdict_only else {}
    searched: list[Accelerator] = []
    for acc in catalog.accelerators.values():
        if allowed and acc.id not in allowed:
            continue
        if acc.local != local:  # local machines for local profiles, cloud and cluster hardware otherwise
            continue
        if not local and (acc.device, acc.vendor) in served and not offered_on(acc, clouds):
            continue
        if any(not allowed or a in allowed for a in dominated.get(acc.id, ())):
            continue  # never the verdict's: an entry that dominates it is searched (Catalog.dominated)
        searched.append(acc)
    # the verdict search of a training workload prunes by cost floor (goal cost or balanced)
    bounded = verdict_only and not local and not profile.deployment.owned and profile.is_training and profile.goal.optimize != "time"
    floors = {a.id: training_cost_floor(profile, a, c) for a in searched} if bounded else {}
    order = sorted(searched, key=lambda a: (floors[a.id] is None, floors[a.id] or 0.0, a.id)) if bounded else searched
    bar = _VerdictBar(profile, c) if bounded else None
    by_acc: dict[str, list[Estimate]] = {}
    for acc in order:
        kept = keep.get((acc.id, local))
        if kept is not None:
            by_acc[acc.id] = kept
        elif bar is not None and bar.beyond(acc, floors[acc.id]):
            continue
        elif local:  # the user's own machine: no price, compared in chip-hours
            mine = acc.max_chips()
            if profile.is_training:
                by_acc[acc.id] = training_candidates(profile, acc, c, owned_chips=mine)
            else:
                by_acc[acc.id] = [
                    estimate(profile, acc, n, c, owned_chips=mine, ranges=ranges)
                    for n in candidate_counts(profile, acc, c) if n <= mine
                ]
        else:
            by_acc[acc.id] = _cloud_candidates(profile, acc, c, ranges)
        if bar is not None:
            bar.add(acc, by_acc[acc.id])
    for acc in searched:  # in catalog order, whatever order they were estimated in
        out.extend(by_acc.get(acc.id, ()))
    return out


class _VerdictBar:
    """The verdict search's pruning of a training workload (goal cost or balanced). Entries come in
    order of their cost floor (training_cost_floor); one is skipped when its floor is above what its
    family's best will cost: the cheapest priced, feasible candidate so far that finishes by the
    target (balanced: with its margin), a subset of the pool ``best`` chooses from, so the best costs
    no more. The first entry of each family and vendor is never skipped (a software block is the
    pair's), nor is any entry of a family with nothing feasible yet."""

    def __init__(self, profile: Profile, c: Constants) -> None:
        target, _stated = training_target_hours(profile, c)
        if profile.goal.optimize == "balanced":
            target *= 1.0 - c.scoring.balanced_deadline_margin.value
        self.target = target
        self.bar: dict[str, float] = {}
        self.pairs: set[tuple[str, str]] = set()

    def beyond(self, acc: Accelerator, floor: float | None) -> bool:
        bar = self.bar.get(acc.device)
        # cents: a candidate's cost is rounded to them
        return (acc.device, acc.vendor) in self.pairs and floor is not None and bar is not None and floor - 0.01 > bar

    def add(self, acc: Accelerator, cands: list[Estimate]) -> None:
        self.pairs.add((acc.device, acc.vendor))
        for x in cands:
            if x.feasible and x.priced and x.cost_usd is not None and (x.hours or math.inf) <= self.target:
                self.bar[acc.device] = min(self.bar.get(acc.device, math.inf), x.cost_usd)


def _cloud_candidates(profile: Profile, acc: Accelerator, c: Constants, ranges: bool = True) -> list[Estimate]:
    if profile.is_training:
        return training_candidates(profile, acc, c)
    counts = candidate_counts(profile, acc, c)
    ests = [estimate(profile, acc, n, c, ranges=ranges) for n in counts]
    if profile.task == "inference" and not any(x.fits_memory for x in ests):
        bigger = [n for n in acc.counts() if n not in counts][:4]
        ests += [estimate(profile, acc, n, c, ranges=ranges) for n in bigger]
    return ests


def repriced_keep(a: Profile, b: Profile, cands: list[Estimate], catalog: Catalog) -> dict[tuple[str, bool], list[Estimate]]:
    """For ``all_candidates(b, keep=...)`` where ``b`` differs from ``a`` only in how it is priced
    (deployment.pricing): the candidates of ``a`` (``cands``) of every accelerator that is priced
    alike under both (the same dollars, cloud and availability at each of its counts). Owned and
    local hardware is priced by its running cost whatever the pricing, so it is always kept; the
    rest differs at most in the price's label and its warning, which no verdict reads."""
    groups: dict[tuple[str, bool], list[Estimate]] = {}
    for x in cands:
        groups.setdefault((x.accelerator, x.owned_chips is not None), []).append(x)
    # an accelerator owned twice, or owned and local, has two blocks under one key: estimate it again
    owned_ids = [catalog.get(o.accelerator).id for o in a.deployment.owned or []]
    twice = {i for i in owned_ids if owned_ids.count(i) > 1 or (a.deployment.local and catalog.get(i).local)}
    keep: dict[tuple[str, bool], list[Estimate]] = {}
    for (acc_id, owned), mine in groups.items():
        acc = catalog.accelerators.get(acc_id)
        if acc is None or acc_id in twice:
            continue
        if not owned:
            moved = capacity.PRICING_KIND.get(a.deployment.pricing) != capacity.PRICING_KIND.get(b.deployment.pricing)
            if moved and any(x.capacity is not None or not x.procurable for x in mine):
                continue  # another procurement kind: other reach, other terms (rules/capacity.yaml)
            prices = [(price_for(a, acc, x.count), price_for(b, acc, x.count)) for x in mine]
            if any((p.usd, p.cloud, p.unavailable) != (q.usd, q.cloud, q.unavailable) for p, q in prices):
                continue
        keep[(acc_id, owned)] = mine
    return keep


def basis(x: Estimate) -> float:
    """What a configuration costs: dollars where priced, else chip-hours (never 'free')."""
    if x.cost_usd is not None:
        return x.cost_usd
    return x.count * (x.replicas or 1) * (x.hours or 0.0)


def worth_faster(slow: Estimate, fast: Estimate, c: Constants) -> bool:
    """Whether a faster training configuration is worth its price against a slower one (goal time): a speed-up s is
    worth a price ratio of up to s ** time_price_exponent (rules/scoring.yaml; 1: no dearer per unit of speed). A run
    that is not faster is never worth more."""
    hs, hf = slow.hours or math.inf, fast.hours or math.inf
    if not hf < hs or not math.isfinite(hs):
        return False
    return bool(basis(fast) <= basis(slow) * (hs / hf) ** c.scoring.time_price_exponent.value)


def time_frontier(pool: list[Estimate], c: Constants) -> Estimate:
    """Goal time over configurations not past their own knee (several accelerators, procurement kinds): from the
    cheapest, each faster one taken while it is worth its price against the one taken before (worth_faster). B200 x 512
    on a calendar reservation (1,277 h, $8.5M), not B300 x 512 2% sooner for 1.44x the price, nor TPU v6e x 2,048 on a
    year's term 1.36x sooner for 4x."""
    current = min(pool, key=lambda x: (basis(x), x.hours or math.inf, x.accelerator, x.count))
    for x in sorted(pool, key=lambda x: (-(x.hours or math.inf), basis(x), x.accelerator, x.count)):
        if worth_faster(current, x, c):
            current = x
    return current


def best(
    cands: list[Estimate], objective: str, c: Constants, device: str | None = None
) -> Estimate | None:
    """The best feasible candidate (of ``device``) for ``objective``.

    Priced candidates are compared in dollars; when nothing feasible is priced (on-prem,
    unpriced chips) in chip-hours. Training: ``cost`` is the cheapest that meets the deadline
    (or the stated default), ``time`` the fastest not past the knee, ``balanced`` the fastest not
    past the knee (on no more machines than the cheapest) among those that meet the deadline with
    the balanced margin within balanced_cost_slack of the cheapest in time. Serving: the cheapest,
    or the fastest within the stated cost slack.
    """
    mine = [x for x in cands if device is None or x.device == device]
    feasible = [x for x in mine if x.feasible]
    owned = [x for x in feasible if x.owned_chips is not None]
    pool = owned or [x for x in feasible if x.priced]
    if not pool and not any(x.usd_per_chip_hour is not None for x in mine):
        pool = feasible  # nothing priced on the allowed clouds (on-prem, say): compare chip-hours
    if not pool:
        return None

    def key_cost(x: Estimate) -> tuple[float, float, str, int]:
        return (basis(x), x.hours or 0.0, x.accelerator, x.count)

    def key_time(x: Estimate) -> tuple[float, float, str, int]:
        speed = x.hours if x.mode == "training" else (x.latency_ms or 0.0)
        return (speed or 0.0, basis(x), x.accelerator, x.count)

    if pool[0].mode == "training":
        deadline = pool[0].assumptions.get("target_hours") or math.inf
        in_time = [x for x in pool if (x.hours or math.inf) <= deadline]
        if objective == "time":
            # the fastest before the knee of the time-cost curve; where nothing before it meets the
            # deadline, the cheapest that does (a stated deadline is a constraint, the knee a preference)
            # where every feasible count is past the knee (nothing before it can be obtained, or meets the deadline),
            # the least past it: the cheapest, never the fastest of counts whose every step was not worth its price
            before = [x for x in pool if not x.past_knee]
            fastest = time_frontier(before, c) if before else min(pool, key=key_cost)
            stated = "target_hours_note" not in pool[0].assumptions
            if stated and (fastest.hours or math.inf) > deadline and in_time and math.isfinite(deadline):
                return min(in_time, key=key_cost)
            # no deadline stated: the knee is the answer, never a year's reservation to meet the default target
            return fastest
        if objective == "balanced":
            margin = c.scoring.balanced_deadline_margin.value
            early = [x for x in in_time if (x.hours or math.inf) <= deadline * (1.0 - margin)]
            # the margin is bought only at a price near the cheapest that meets the deadline (balanced_cost_slack): never
            # a 1-year reservation for a few days of schedule slack a calendar block at a tenth of the price would miss
            cap = basis(min(in_time, key=key_cost)) * (1.0 + c.scoring.balanced_cost_slack.value) if in_time else math.inf
            early = [x for x in early if basis(x) <= cap]
            if early:
                # within that slack, the fastest that a doubling was still worth (the knee) on no more machines than the
                # cheapest (GPU nodes, TPU slices: a one-node run is not traded for a cluster's fabric and failures for
                # speed alone): a 4x shorter run for 0.2% more is the balance a team asks for, not the cheapest count that
                # only just leaves the margin. In dollars only: compared in chip-hours (unpriced, owned) more chips always
                # look as cheap, so the smallest count
                cheap = min(early, key=key_cost)
                worth = [x for x in early if not x.past_knee and x.priced and x.owned_chips is None and x.machines <= cheap.machines]
                return min(worth, key=key_time) if worth else cheap
        if in_time:
            cheapest = min(in_time, key=key_cost)
            # within a cost tie (cost_tie_fraction: a relative one) of the cheapest, a count whose slow end still meets the
            # deadline over one that meets it only at the expected time: v6e-32 in 166 h (slow end 296 h) for $2,740, not
            # v6e-16 in 332 h (slow end 557 h) for $2,737 against a 336 h deadline
            if (cheapest.hours_high or 0.0) > deadline:
                dear = basis(cheapest) * (1.0 + c.scoring.cost_tie_fraction.value)
                safe = [x for x in in_time if basis(x) <= dear and (x.hours_high or math.inf) <= deadline]
                if safe:  # the fewest chips that are safe: the next larger count, not every chip the tie allows
                    return min(safe, key=lambda x: (x.count * (x.replicas or 1), key_cost(x)))
            return cheapest
        fastest = min([x for x in pool if not x.past_knee] or pool, key=key_time)
        if objective == "cost" and "target_hours_note" in pool[0].assumptions:  # the target is the default, not stated
            # nothing reaches the default target: the cheapest not far slower than the fastest
            slack = c.scoring.unmet_target_time_slack.value
            return min([x for x in pool if (x.hours or math.inf) <= (fastest.hours or math.inf) * slack], key=key_cost)
        return fastest
    cheapest = min(pool, key=key_cost)
    if objective == "cost":
        return cheapest
    slack = 1.0 + (c.scoring.time_cost_slack.value if objective == "time" else c.scoring.balanced_cost_slack.value)
    near = [x for x in pool if basis(x) <= basis(cheapest) * slack]
    fastest = min(near, key=key_time)
    tie = (fastest.latency_ms or 0.0) * (1.0 + c.scoring.latency_tie_fraction.value)
    # a tie in latency and in cost (cost_tie_fraction): never a dearer replica layout for its hosts alone
    dear = basis(fastest) * (1.0 + c.scoring.cost_tie_fraction.value)
    tied = [x for x in near if (x.latency_ms or 0.0) <= tie and basis(x) <= dear]
    return min(tied, key=lambda x: (x.hosts_per_replica or 1, basis(x), key_time(x)))
