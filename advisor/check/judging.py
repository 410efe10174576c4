"""What a check rule reads: :class:`Judging` (one profile proposal, its estimate, the
recommendation and the policy) and :class:`RequestJudging` (one infrastructure request), each fact
computed once.

A proposal's rules read the estimate of its own configuration (split into replicas of a real
shape when it serves) and the smallest count of its accelerator that would do; both are pure
functions of the workload, the catalog entry and the count, kept in a bounded memo that the
proposals of one workload share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from advisor.catalog import Accelerator
from advisor.check.registry import Where
from advisor.constants import Constants
from advisor.context import Context
from advisor.estimate.result import Estimate
from advisor.estimate.search import candidate_counts, estimate, workload_key
from advisor.loading import LoadedProfile
from advisor.memo import IdentityMemo
from advisor.models import Profile, Proposal
from advisor.policy import Policy
from advisor.recommend import Recommendation

# readers whose file is one workload (a SkyPilot task, a dstack configuration): a profile links it by its path
PATH_LINKED = ("skypilot", "dstack")

if TYPE_CHECKING:
    from advisor.check.infra.model import Request


@dataclass
class Judging:
    """One proposal under judgement: what every proposal rule reads, each fact computed once."""

    lp: LoadedProfile
    ctx: Context
    policy: Policy
    rec: Recommendation

    @property
    def profile(self) -> Profile:
        return self.lp.profile

    @cached_property
    def prop(self) -> Proposal:
        prop = self.lp.profile.proposal
        assert prop is not None
        return prop

    @cached_property
    def acc(self) -> Accelerator:
        return self.ctx.catalog.get(self.prop.accelerator)

    def line_of(self, key: str) -> Where:
        return self.lp.doc.where(("proposal", key))

    @cached_property
    def _sized(self) -> tuple[Estimate, int | None, float | None]:
        return proposal_estimate(self.lp, self.ctx)

    @property
    def est(self) -> Estimate:
        return self._sized[0]

    @property
    def replicas(self) -> int | None:
        return self._sized[1]

    @property
    def capacity(self) -> float | None:
        return self._sized[2]

    @property
    def price(self) -> float | None:
        return self.est.usd_per_chip_hour

    @cached_property
    def cost(self) -> float | None:
        price = self.price
        return self.prop.count * self.prop.hours * price if price is not None else None

    @cached_property
    def excluded(self) -> dict[str, Any]:
        return {x.device: x for x in self.rec.decision.excluded}

    @cached_property
    def best(self) -> Estimate | None:
        """The cheapest feasible configuration of any family the recommender allows."""
        pool = [b for d, b in self.rec.decision.best_by_device.items() if b is not None and d not in self.excluded]
        return min(pool, key=lambda b: (b.cost_usd or math.inf, b.accelerator)) if pool else None

    @cached_property
    def min_feasible_count(self) -> int | None:
        return min_feasible_count(self.lp, self.ctx)


# The estimates a proposal's rules read (its own configuration, the counts that would do) are a pure
# function of the workload, the catalog entry and the count: the proposals of one workload share
# them, as they share its candidates (check_judge). Bounded: cleared when full.
KEPT_PROPOSAL_ESTIMATES = 4096
_ESTIMATES: IdentityMemo[Estimate] = IdentityMemo(KEPT_PROPOSAL_ESTIMATES)


def _estimate(profile: Profile, acc: Accelerator, count: int, c: Constants) -> Estimate:
    return _ESTIMATES.get(
        (acc, c), (workload_key(profile), count), lambda: estimate(profile, acc, count, c), limit=KEPT_PROPOSAL_ESTIMATES,
    )


def proposal_estimate(lp: LoadedProfile, ctx: Context) -> tuple[Estimate, int | None, float | None]:
    """(estimate of the proposed configuration, replicas it allows, its QPS capacity)."""
    profile = lp.profile
    prop = profile.proposal
    assert prop is not None
    acc = ctx.catalog.get(prop.accelerator)
    if profile.is_training:
        return _estimate(profile, acc, prop.count, ctx.constants), None, None
    # Serving: the proposed chips are split into replicas of a real single-host shape.
    best: tuple[float, Estimate, int] | None = None
    for per in sorted(set(candidate_counts(profile, acc, ctx.constants)) | {prop.count}):
        if per > prop.count or prop.count % per:
            continue
        e = _estimate(profile, acc, per, ctx.constants)
        if not e.fits_memory or not e.capacity_rps:
            continue
        replicas = prop.count // per
        capacity = replicas * e.capacity_rps
        # prefer shapes the cloud sells at this price kind, then those that meet the latency target
        key = capacity * (1.0 if "chips not offered" not in (e.why_not or "") else 1e-3) * (1.0 if e.meets_latency is not False else 1e-6)
        if best is None or key > best[0]:
            best = (key, e, replicas)
    if best is None:
        return _estimate(profile, acc, prop.count, ctx.constants), 0, 0.0
    e, replicas = best[1], best[2]
    return e, replicas, replicas * (e.capacity_rps or 0.0)


def min_feasible_count(lp: LoadedProfile, ctx: Context) -> int | None:
    profile = lp.profile
    assert profile.proposal is not None
    acc = ctx.catalog.get(profile.proposal.accelerator)
    for n in candidate_counts(profile, acc, ctx.constants):
        e = _estimate(profile, acc, n, ctx.constants)
        ok = e.fits_memory and e.meets_deadline is not False and e.meets_latency is not False
        if ok and profile.inference is not None and profile.task == "inference":
            needed = (e.replicas or 1) * n
            return needed
        if ok:
            return n
    return None


@dataclass
class RequestJudging:
    """One infrastructure request under judgement (``advisor.check.infra.judge``)."""

    req: Request
    policy: Policy
    end: str  # which end of an autoscaling range is judged: min | max
    acc: Accelerator | None  # the catalog accelerator, None when unknown or unread
    linked: LoadedProfile | None  # the workload profile linked to the request
    broken: str | None  # why a named link cannot be followed
    judged: bool  # judged as a proposal of its linked workload (the proposal rules ran)
    cost: float | None  # monthly cost, None when unpriced
    clouds: str  # the clouds it is priced on, in words

    @property
    def total(self) -> int | None:
        return self.req.total(self.end)

    @property
    def unlinked_shape_price(self) -> bool:
        """Known hardware not judged as a proposal: shape and price are checked here."""
        return not self.req.unknown and self.acc is not None and not self.judged
