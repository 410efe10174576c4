"""What a configuration costs: the catalog's cloud prices (kind, region, count) or the on-prem rate,
where an accelerator is offered, and the feasibility reasons of a priced estimate."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from advisor import capacity, clouds, regions
from advisor.catalog import Accelerator
from advisor.catalog import Price as Quote
from advisor.estimate import onprem
from advisor.estimate.result import HOURS_PER_MONTH, Estimate, budget_slack, over_budget
from advisor.families import family
from advisor.memo import IdentityMemo
from advisor.models import Profile


class Price:
    def __init__(
        self, usd: float | None, cloud: str | None, kind: str | None, warning: str | None, unavailable: str | None = None
    ) -> None:
        self.usd, self.cloud, self.kind, self.warning, self.unavailable = usd, cloud, kind, warning, unavailable


_PRICES: IdentityMemo[Price] = IdentityMemo(4096)


def price_for(profile: Profile, acc: Accelerator, count: int = 0) -> Price:
    dep = profile.deployment
    # Only counts below a price's min_count can change the answer.
    floor = max((max(p.min_count or 0, (p.max_count or 0) + 1) for p in acc.prices), default=0)
    key = (tuple(dep.clouds), capacity.pricing_of(dep), dep.region, min(count, floor), dep.onprem)
    return _PRICES.get((acc,), key, lambda: _price_for(profile, acc, count or None))


def service_use(profile: Profile) -> float | None:
    """The share of a bought chip's hours a service runs it (its hours a day over 24: a chip bought for a service around
    the clock is used all its hours, not the catalog's assumed utilisation; review 32: a 24/7 service's monthly cost was
    the fixed part over 0.8, 23% high); None for a training run (the chips serve other work besides)."""
    inf = profile.inference
    if profile.task != "inference" or inf is None:
        return None
    return min(1.0, max(inf.run_hours_per_day / 24.0, 1e-3))


def _price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> Price:
    """The cheapest of the clouds' price and, where on-prem is allowed, the amortised cost of owning it."""
    dep = profile.deployment
    cloud = _cloud_price_for(profile, acc, count)
    own = onprem.rate(acc, dep.onprem, in_use=service_use(profile)) if onprem.purchasing(dep) else None
    if own is not None and (cloud.usd is None or own.usd_per_chip_hour < cloud.usd):
        return Price(own.usd_per_chip_hour, "on-prem", own.kind, None)
    if (
        cloud.usd is None
        and "on-prem" in dep.clouds
        and ("on-prem" in acc.clouds or acc.purchase is not None)
        and not (set(dep.clouds) - {"on-prem"} & set(acc.clouds))
    ):
        # on-prem allowed but nothing to price it at: neither owned nor bought
        buying = onprem.purchasing(dep)
        return Price(None, None, None, None, unavailable=(
            f"on-prem: none owned (deployment.owned) and no purchase price for {acc.id} in the catalog (add one with --catalog)"
            if buying else "on-prem: none owned (deployment.owned) and no purchase (deployment.onprem.purchase: true)"))
    return cloud


def _cloud_price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> Price:
    clouds: list[str] = list(profile.deployment.clouds)
    kind = capacity.pricing_of(profile.deployment)
    region = profile.deployment.region
    p = acc.price(clouds, kind, region, count)
    if p is not None:
        return Price(p.usd_per_chip_hour, p.cloud, p.kind, None)
    whole = acc.price(clouds, kind, region)
    if whole is not None and count is not None:
        # Offered at this kind only in other shapes (GCP on-demand H100: whole 8-GPU VMs; AWS g5: 1, 4 or 8 GPUs).
        sizes = sorted({(q.min_count or 1, q.max_count) for q in acc.prices if q.cloud in clouds and q.kind == kind})
        told = " or ".join(f"{lo}" if hi == lo else (f"{lo}-{hi}" if hi else f"from {lo}") for lo, hi in sizes)
        return Price(None, None, None, None, unavailable=f"{kind} on {whole.cloud} only {told} chips")
    if kind != "on-demand":
        p = acc.price(clouds, "on-demand", region, count)
        if p is not None:
            return Price(
                p.usd_per_chip_hour, p.cloud, p.kind,
                f"{acc.id}: no {kind} price in the catalog; priced at on-demand",
            )
    return Price(None, None, None, f"{acc.id}: unpriced on {', '.join(clouds)} (no catalog price; add one with --catalog)")


def offered_on(acc: Accelerator, clouds: list[str]) -> bool:
    """Where the family and the catalog say it is offered (else where it is priced)."""
    if acc.local:
        return True  # the user's own machine
    sold = family(acc.device).sold_on(clouds)
    if sold is not None:
        return sold
    if "on-prem" in clouds:
        return True
    if acc.clouds:
        return bool(set(acc.clouds) & set(clouds))
    priced = {p.cloud for p in acc.prices}
    return not priced or bool(priced & set(clouds)) or "on-prem" in clouds


def hosts_for(acc: Accelerator, count: int) -> int:
    """Hosts (VMs or servers) one configuration of ``count`` chips spans."""
    return acc.hosts(count)


def shape_name(acc: Accelerator, count: int) -> str:
    return acc.shape_name(count)


def apply_price(
    e: Estimate,
    profile: Profile,
    acc: Accelerator,
    chip_hours: float,
    chip_hours_range: tuple[float, float] | None = None,
    restart_hours: float = 0.0,
) -> None:
    """Price the configuration ``e`` (``chip_hours`` of it; a serving range in ``chip_hours_range``): where its chips
    are obtained and under which procurement kind, what that bills. A run on reclaimable capacity (spot) also takes
    longer by its interruptions, each costing half a checkpoint period and ``restart_hours`` (its start-up) again."""
    if e.owned_chips is not None:
        e.shape = f"{e.count} x {acc.id} (owned)"
        # Already paid for: only its running cost (power, hosting); chip-hours where that is unknown.
        own = onprem.rate(acc, profile.deployment.onprem, owned=True)
        p = Price(own.usd_per_chip_hour, "on-prem", own.kind, None) if own else Price(None, None, None, None)
    else:
        p = price_for(profile, acc, e.count)
    if p.warning:
        e.warnings.append(p.warning)
    if p.unavailable:
        e.why_not = p.unavailable if p.unavailable.startswith("on-prem:") else f"{e.count} chips not offered: {p.unavailable}"
    named_on = acc.shapes.machine_types_cloud
    if e.owned_chips is None and named_on is not None and named_on != (p.cloud or clouds.preferred(profile.deployment.clouds)):
        # one cloud's machine types do not name another cloud's instances or your own servers (an
        # unpriced configuration is named as on the cloud its setup would use)
        e.shape = acc.generic_shape_name(e.count)
    if p.usd is None:
        if e.owned_chips is None and not acc.local:
            _unpriced_placement(e, profile, acc)
        return
    # a kind with a minimum term, or sold in whole days, bills it, used or not (training runs): hours -> hours billed
    bill: Callable[[float], float] | None = None
    if e.owned_chips is None and p.cloud not in (None, "on-prem") and not acc.local:
        p, bill = _procure(e, profile, acc, p, restart_hours)
        if p.warning and p.warning not in e.warnings:
            e.warnings.append(p.warning)
        if named_on is not None and p.cloud is not None and named_on != p.cloud:  # procured on another cloud
            e.shape = acc.generic_shape_name(e.count)
        if p.usd is None:
            return
    usd = p.usd
    assert usd is not None
    e.usd_per_chip_hour, e.price_cloud, e.price_kind = usd, p.cloud, p.kind
    if p.kind == onprem.ONPREM_KIND:  # a purchase: its outlay, lead time and break-even against renting
        dep = profile.deployment
        rent = acc.price([c for c in dep.clouds if c != "on-prem"], "on-demand", dep.region)
        # the chips the team owns of this accelerator are not bought again: the outlay is for the rest
        need = e.count * (e.replicas or 1)
        owned = min(need, sum(o.count for o in dep.owned or () if o.accelerator == acc.id))
        e.purchase = onprem.purchase_terms(
            acc, need - owned, dep.onprem, rent.usd_per_chip_hour if rent else None, rent.cloud if rent else None,
            service_use(profile),
        ) if need > owned else None  # within what the team owns nothing is bought
        if e.purchase is not None:
            e.purchase["chips_bought"], e.purchase["chips_owned_used"] = need - owned, owned
        if e.purchase is not None and e.mode == "training" and e.hours:
            life = float(e.purchase["amortisation_years"]) * 8760.0 * float(e.purchase["utilisation_assumed"])
            besides = f" besides the {owned} owned" if owned else ""
            e.warnings.append(
                f"buying {need - owned} {acc.id}{besides}: ${e.purchase['capex_usd']:,.0f} up front, "
                f"{e.purchase['lead_time_weeks']:g} weeks' lead time before the run can start; "
                f"the amortised rate assumes {e.purchase['amortisation_years']:g} years at {e.purchase['utilisation_assumed']:.0%} use, "
                f"this run is {e.hours / life:.1%} of that"
            )
        elif e.purchase is not None:  # a service: what it buys, before its first request (review 32: said in JSON only)
            besides = f" besides the {owned} owned" if owned else ""
            lead = e.purchase.get("lead_time_weeks")
            e.warnings.append(
                f"buying {need - owned} {acc.id}{besides}: ${e.purchase['capex_usd']:,.0f} up front"
                + (f", {lead:g} weeks' lead time before it can serve" if lead is not None else "")
                + f"; the monthly cost amortises it over {e.purchase['amortisation_years']:g} years at "
                f"{e.purchase['utilisation_assumed']:.0%} use"
            )
    if e.mode == "training" and e.hours and _interruptions(e, acc, restart_hours) != 1.0:
        chip_hours = e.hours * e.count  # the run's hours as interruptions lengthen them (the start-up paid once)
    if bill is not None and e.mode == "training" and e.hours:
        chip_hours = max(chip_hours, bill(e.hours) * e.count)
    whole = e.count * (e.replicas or 1) * HOURS_PER_MONTH
    if e.mode != "training" and e.capacity is not None and e.capacity["min_hours"] and chip_hours < whole:
        # a reservation (or a calendar block) is billed round the clock, used or not: a job that runs a
        # few hours a day on it pays for the month
        e.warnings.append(
            f"{e.capacity['title']}: billed {HOURS_PER_MONTH:g} h a month, used or not, for a job that runs {e.hours or 0:g} h of them"
        )
        chip_hours = whole
        if chip_hours_range is not None:
            chip_hours_range = (whole, whole)
    used = e.count * (e.replicas or 1)
    idle = _idle_hosting(e, profile, acc, used)

    def cost(hours_of_chips: float) -> float:
        # the chips used at their running cost, and the owned chips left idle hosted for as long
        return hours_of_chips * usd + hours_of_chips / max(used, 1) * idle

    # whole cents at the source, so that every renderer rounds the same figure (JSON keeps cents)
    e.cost_usd = round(cost(chip_hours), 2)
    if chip_hours_range is not None:
        e.cost_low, e.cost_high = round(cost(chip_hours_range[0]), 2), round(cost(chip_hours_range[1]), 2)
    elif e.hours_low is not None and e.hours_high is not None:
        lo, hi = (bill(e.hours_low), bill(e.hours_high)) if bill is not None and e.mode == "training" else (e.hours_low, e.hours_high)
        e.cost_low, e.cost_high = round(cost(lo * e.count), 2), round(cost(hi * e.count), 2)


def _idle_hosting(e: Estimate, profile: Profile, acc: Accelerator, used: int) -> float:
    """Dollars an hour the owned chips a configuration leaves idle cost while it runs: their hosting (rack, network,
    support: catalog onprem hosting_usd_per_chip_month) is paid whether they run or not, their power only when they do.
    Without it, 40 of 64 owned A100 looked $2 cheaper than 64 while taking 60% longer. 0 for chips not owned."""
    if e.owned_chips is None or e.owned_chips <= used:
        return 0.0
    run = onprem.running_cost(acc, profile.deployment.onprem)
    if run is None:
        return 0.0
    idle = e.owned_chips - used
    hourly = idle * float(run["hosting_usd_per_hour"])
    e.warnings.append(f"{idle} of the {e.owned_chips} owned {acc.id} idle while this runs: their hosting (${hourly:,.2f}/h) "
                      "is paid whether they run or not, and is in the cost")
    return hourly


def _reclaimed(acc: Accelerator, count: int, kind: capacity.Kind, restart_hours: float) -> tuple[int, float]:
    """(the VMs a run of ``count`` x ``acc`` is reclaimed by, the hours each interruption costs it: half a checkpoint
    period of lost work and the start-up again)."""
    layout = family(acc.device).shapes.host_layout(acc, count)
    vms = max(1, int(layout.get("hosts") or 1)) * max(1, int(layout.get("slices") or 1))
    return vms, kind.checkpoint_hours / 2.0 + restart_hours


def interruption_factor(kind: capacity.Kind, acc: Accelerator, count: int, restart_hours: float) -> float:
    """The expected factor a reclaimed kind (spot) puts on a run's hours (1 for a kind that is not reclaimed)."""
    if kind.interruptions is None:
        return 1.0
    vms, loss = _reclaimed(acc, count, kind, restart_hours)
    return 1.0 + kind.interruptions[1] * vms * loss


def _interruptions(e: Estimate, acc: Accelerator, restart_hours: float) -> float:
    """A run on capacity that is reclaimed (rules/capacity.yaml: spot's interruptions_per_vm_hour): each of its VMs
    (hosts) is interrupted at a rate per hour, and every interruption stops the whole run for half a checkpoint period
    of lost work plus its start-up again, so its hours after start-up grow by 1 + rate x VMs x that loss (the goodput
    law of rules/estimator.yaml failure_cost_hours). The range takes the low and high rates. Scales the hours, the
    throughput and their ranges, says so in capacity.interruptions and a warning; returns the factor on the hours
    (1 on a kind that is not reclaimed)."""
    kind = capacity.table().kinds.get(e.procurement or "")
    if kind is None or kind.interruptions is None or not e.hours:
        return 1.0
    vms, loss = _reclaimed(acc, e.count, kind, restart_hours)
    low, mid, high = (1.0 + rate * vms * loss for rate in kind.interruptions)

    def grown(hours: float, factor: float) -> float:
        return restart_hours + max(hours - restart_hours, 0.0) * factor

    before = e.hours
    e.hours = grown(e.hours, mid)
    if e.hours_low is not None and e.hours_high is not None:
        e.hours_low, e.hours_high = grown(e.hours_low, low), grown(e.hours_high, high)
        if e.ranges.get("hours") is not None:
            e.ranges["hours"] = (e.hours_low, e.hours_high)
    if e.tokens_per_second:
        e.tokens_per_second /= mid
    tps = e.ranges.get("tokens_per_second")
    if tps is not None:
        e.ranges["tokens_per_second"] = (tps[0] / high, tps[1] / low)
    if e.capacity is not None:
        e.capacity["interruptions"] = {
            "vms": vms, "per_vm_hour": dict(zip(("low", "expected", "high"), kind.interruptions, strict=True)),
            "hours_lost_each": round(loss, 3), "checkpoint_hours": kind.checkpoint_hours,
            "hours_factor": {"low": round(low, 4), "expected": round(mid, 4), "high": round(high, 4)},
        }
    e.warnings.append(
        f"{kind.title}: {vms} VM(s), each reclaimed about {kind.interruptions[1] * HOURS_PER_MONTH:.0%} a month (no cloud "
        f"publishes a rate for accelerator VMs); each interruption costs ~{loss:.2f} h (half the {kind.checkpoint_hours:g} h "
        f"checkpoint period and the start-up): {before:,.0f} h -> {e.hours:,.0f} h expected, "
        f"{grown(before, high):,.0f} h at one interruption per VM-day"
    )
    return mid


def _kind_price(
    profile: Profile, acc: Accelerator, cloud: str, reach: capacity.Reach, count: int, base: Price, region: str | None,
) -> Price | None:
    """The price of ``count`` x ``acc`` on ``cloud`` in ``region`` under the procurement kind that delivers
    them: the kind's own (rules/capacity.yaml), a reservation's committed-1y price, else the on-demand one; None where
    the catalog sells no machine of that many chips under the kind (a3-highgpu-2g is Spot and flex-start only: two
    H100 on demand are not sold, never priced at the Spot rate the profile's pricing quoted)."""
    kind = reach.kind.id
    if kind == capacity.PRICING_KIND.get(capacity.pricing_of(profile.deployment), "on-demand"):
        return base
    own = reach.limit.prices.get(acc.id) if reach.limit else None
    if own is not None:
        return Price(own, cloud, kind, None)
    if kind == "spot":  # reached past the profile's own kind (on-demand does not deliver the count): spot's own rate
        spot = acc.price([cloud], "spot", region, count)
        if spot is not None:
            return Price(spot.usd_per_chip_hour, cloud, kind, None)
    committed = acc.price([cloud], "committed-1y", region, count) if kind == "reserved" else None
    q = committed or acc.price([cloud], "on-demand", region, count)
    warn = (f"{acc.id}: no committed-use price on {cloud} in the catalog: the reservation is priced at on-demand rates, an "
            "upper bound (a negotiated term is usually cheaper)") if kind == "reserved" and committed is None else None
    if kind == "spot":
        warn = f"{acc.id}: no spot price on {cloud} in the catalog: the spot capacity is priced at on-demand rates, an upper bound"
    return Price(q.usd_per_chip_hour, cloud, kind, warn) if q is not None else None


def _unpriced_placement(e: Estimate, profile: Profile, acc: Accelerator) -> None:
    """Where an unpriced configuration would run: regions pinned by deployment.regions hold for it as for a priced one
    (the regions table, else the catalog's zones, say where each cloud offers the chip); not offered in any of them on
    any allowed cloud, it is infeasible with the reason, as a priced one is (_procure)."""
    dep = profile.deployment
    reasons: list[str] = []
    for cloud in dep.clouds:
        if cloud == "on-prem" or not offered_on(acc, [cloud]):
            continue
        region, no = regions.placement(dep, cloud, acc)
        if no is None:
            e.region, e.zone = region, regions.zone_in(acc, cloud, region)
            return
        reasons.append(no)
    if reasons and dep.regions:
        why = "; ".join(reasons)
        e.why_not = f"{e.why_not}; {why}" if e.why_not else why


def _alternatives(profile: Profile) -> list[frozenset[str]]:
    """The procurement kinds a configuration is priced under besides the first that reaches it from deployment.pricing:
    where the team lists several (deployment.procurement), each one it accepts, so that spot capacity it accepts is
    priced, not only on-demand because on-demand reaches first; none under goal time (a reclaimed run is slower) or
    where the team lists one kind."""
    allowed = capacity.accepted(profile.deployment.procurement)
    if allowed is None or len(allowed) < 2 or profile.goal.optimize == "time":
        return []
    return [frozenset({k}) for k in capacity.table().order if k in allowed]


def _procure(
    e: Estimate, profile: Profile, acc: Accelerator, p: Price, restart_hours: float = 0.0,
) -> tuple[Price, Callable[[float], float] | None]:
    """Where the configuration's chips (all replicas) can be obtained for its duration: of the
    profile's clouds that price ``acc``, the one that bills least under the first procurement kind
    that reaches them (rules/capacity.yaml), or under any other kind the team lists (_alternatives). Sets
    ``procurement`` and ``capacity``; beyond every kind's reach, the configuration is infeasible and says what each
    cloud delivers. Returns the
    price and, for a run, what a run of so many hours is billed (a minimum term, whole days); None for serving
    (billed by the month) and where no kind delivers."""
    chips = e.count * (e.replicas or 1)
    hours = (e.hours or 0.0) if e.mode == "training" else math.inf
    dep = profile.deployment
    pricing = capacity.pricing_of(dep)
    best: tuple[float, Price, capacity.Reach, str | None, str | None] | None = None
    beyond: list[str] = []
    elsewhere: list[str] = []
    unsold: list[str] = []
    for cloud in dict.fromkeys([p.cloud or "", *dep.clouds]):
        if cloud in ("", "on-prem") or not offered_on(acc, [cloud]):
            continue  # a cloud that never offers the chip (a TPU on AWS) has no region to rule out (review 26)
        region, no = regions.placement(dep, cloud, acc)
        if no is not None:
            elsewhere.append(no)
            continue
        def quote(where: str | None, cloud: str = cloud) -> Quote | None:
            return acc.price([cloud], pricing, where, e.count) or acc.price([cloud], "on-demand", where, e.count)

        q = quote(region)
        if q is None:
            continue
        if regions.preferred(dep, cloud) is None and q.region and regions.may_run(cloud, acc, q.region):
            region = q.region  # no region of the profile's: where the price is from
        pinned = region if regions.pinned(dep, cloud) else None
        missed: list[str] | None = None  # what the profile's own ladder reaches, where it does not deliver the count
        reached = False
        for i, allowed in enumerate([capacity.accepted(dep.procurement), *_alternatives(profile)]):
            # the largest published shape bounds one replica; replicas are machines of their own
            r, tried = capacity.reach(cloud, acc.device, acc.id, chips, hours, pricing, acc.max_chips() * (e.replicas or 1),
                                      allowed, pinned=pinned, hosts=acc.hosts(e.count) * (e.replicas or 1))
            if r is None:
                missed = tried if i == 0 else missed
                continue
            reached = True
            where, quoted = region, q
            if r.limit is not None and not r.limit.sold_in(where):
                # a kind sold only in some zones (calendar mode for TPU v6e): the run is placed in the first of them, at its price
                where = regions.region_of(r.limit.zones[0])
                quoted = quote(where) or q
            base = Price(quoted.usd_per_chip_hour, quoted.cloud, quoted.kind, None)
            priced = _kind_price(profile, acc, cloud, r, e.count, base, where)
            if priced is None:  # the kind sells no machine of this shape: it does not deliver it
                unsold.append(f"{r.kind.id} sells no {e.count} x {acc.id} machine on {cloud}")
                continue
            billed = r.billed_hours if math.isfinite(hours) else 1.0
            # a reclaimed run (spot) takes longer by its interruptions: compared at the hours it bills then
            slower = interruption_factor(r.kind, acc, e.count, restart_hours) if math.isfinite(hours) else 1.0
            total = (priced.usd or 0.0) * (billed * slower if math.isfinite(hours) else 1.0)
            if best is None or total < best[0]:
                best = (total, priced, r, where, quoted.region)
        if not reached and missed is not None:
            beyond.append(f"{cloud} {', '.join(missed)}")
    if best is None:
        reasons = ([f"{chips:,} {acc.id} beyond what can be obtained ({'; '.join(beyond)} chips)"] if beyond else []) + elsewhere
        reasons += list(dict.fromkeys(unsold)) if not beyond else []
        if reasons:
            why = "; ".join(reasons)
            e.why_not = f"{e.why_not}; {why}" if e.why_not else why
            e.procurable = False
        return p, None
    _total, priced, r, region, rate_region = best
    e.region, e.zone = region, regions.zone_in(acc, priced.cloud or "", region)
    if r.limit is not None and r.limit.zones:  # the kind's own zone of the region
        e.zone = next((z for z in r.limit.zones if regions.region_of(z) == region), e.zone)
    pref = regions.preferred(dep, priced.cloud or "")
    zoned = r.limit is not None and bool(r.limit.zones) and not r.limit.sold_in(pref)
    other_rate = region is not None and rate_region is not None and rate_region != region  # the catalog prices another region
    if zoned and r.limit is not None:  # a kind sold in a few zones took the run there (at its price, where known)
        rate = f", at {rate_region} rates (none listed for {region})" if other_rate else ""
        e.warnings.append(f"{r.kind.id} capacity for {acc.id} is sold in {', '.join(r.limit.zones)} only: placed in {e.zone}, "
                          f"not {pref}{rate}")
    else:
        if other_rate:
            e.warnings.append(
                f"{acc.id} on {priced.cloud} is priced at {rate_region} rates: the catalog has no {region} price (prices differ "
                "by region: check the cloud's price for it)"
            )
        if pref is not None and region is not None and region != pref:  # deployment.region is a preference: say where it went
            e.warnings.append(
                f"{acc.id} is not offered in {pref} on {priced.cloud}: placed in {region} (pin deployment.regions to rule that out)"
            )
    e.procurement = r.kind.id
    e.capacity = r.to_json(capacity.table().sources)
    # the hours billed beyond the run's: said where they matter (a minimum term, a whole day on a short run); a few
    # hours of a last day on a month's run stay in the cost and in capacity.billed_hours
    if math.isfinite(hours) and r.billed_hours > hours * 1.05:
        lim = r.limit
        step = capacity.step_of(lim, r.billed_hours) if lim is not None else None
        why = ("its minimum term" if lim is None or step is None or r.billed_hours <= lim.min_hours + 1e-9 else
               f"bought in whole steps of {step:g} h")
        e.warnings.append(f"{r.title}: billed {r.billed_hours:,.0f} h for a {hours:,.1f} h run ({why})")
    elif not math.isfinite(hours) and r.limit is not None and r.limit.min_hours > 0 and pricing == "on-demand":
        # a service beyond on-demand reach, priced at a term it commits to: what it commits and what autoscaling saves
        chips, usd = e.count * (e.replicas or 1), priced.usd or 0.0
        accepts = capacity.accepted(dep.procurement)
        # beyond on-demand reach only where on-demand was tried: a team that accepts reservations only has its kind by
        # choice (review 32: 24 L4, well within on-demand reach, were said to be beyond it)
        why = (f"{chips:,} {acc.id} are beyond on-demand reach on {priced.cloud}" if accepts is None or "on-demand" in accepts
               else f"{chips:,} {acc.id} on {priced.cloud}, under the kinds deployment.procurement accepts")
        e.warnings.append(
            f"{why}: priced as {r.title} "
            f"(${usd:,.2f}/chip-hour, a term of {r.limit.min_hours:,.0f} h: ${chips * usd * r.limit.min_hours:,.0f} "
            "committed, billed whether used or not, so autoscaling the reserved capacity down saves nothing)"
        )
    return priced, (r.bill if math.isfinite(hours) else None)


# the reasons set_feasibility gives for a broken constraint (a deadline, the budget, a latency target), which a change
# of that constraint mends (recommend.feasibility_changes tells them from the others: memory, capacity, region)
CONSTRAINT_REASON = re.compile(r"^takes [0-9.,]+ h, deadline|budget|^latency [0-9.,]+ ms >|p99|TTFT|TPOT|time to first|per output token")


def budget_slack_warning(e: Estimate, profile: Profile) -> None:
    """The expected cost is within goal.budget_usd but the range's dear end is not: said, as a deadline met only at the
    expected time is, so a team with a hard budget plans for it (review 16: $14,355 expected against $20,000, up to
    $22,474)."""
    said = budget_slack(e, profile.goal.budget_usd) if e.within_budget is True else None
    if said is not None:
        e.warnings.append(said)


def purchase_lead_hours(e: Estimate) -> float:
    """Hours before a configuration of chips to be bought can start: its purchase's lead time (0 for any other)."""
    weeks = (e.purchase or {}).get("lead_time_weeks")
    return float(weeks) * 168.0 if isinstance(weeks, (int, float)) else 0.0


def apply_purchase_limits(e: Estimate, profile: Profile) -> None:
    """A training run on chips to be bought starts when they arrive (the purchase's lead time before its hours) and
    spends their price up front: the deadline is met only by lead time + run, the budget only by the outlay as well as
    the amortised cost. Before, buying 80 H100 with 12 weeks' lead time was 'deadline 1,080 h: met' and '$1.5M budget:
    within' for a $2.7M purchase."""
    t = profile.training
    if e.purchase is None or t is None:
        return
    if t.deadline_hours is not None and e.hours is not None:
        e.meets_deadline = purchase_lead_hours(e) + e.hours <= t.deadline_hours
    budget = profile.goal.budget_usd
    if budget is not None and float(e.purchase.get("capex_usd") or 0.0) > budget:
        e.within_budget = False


def set_feasibility(e: Estimate, profile: Profile, acc: Accelerator) -> None:
    reasons: list[str] = []
    if e.why_not:
        reasons.append(e.why_not)
    if e.owned_chips is not None:
        need = e.count * (e.replicas or 1)
        if need > e.owned_chips:
            reasons.append(f"needs {need} {acc.id}, {e.owned_chips} owned")
    elif not offered_on(acc, list(profile.deployment.clouds)):
        reasons.append(f"not offered on {', '.join(profile.deployment.clouds)}")
    if not e.fits_memory:
        reasons.append(f"needs {e.memory_per_chip_gb:.1f} GB per chip, has {e.memory_capacity_gb:.1f} GB")
    lead = purchase_lead_hours(e)
    if e.meets_deadline is False:
        assert profile.training is not None and profile.training.deadline_hours is not None
        after = f" after {lead:g} h of lead time to buy the chips" if lead else ""
        reasons.append(f"takes {e.hours:.1f} h{after}, deadline {profile.training.deadline_hours:g} h")
    if e.meets_latency is False:
        assert profile.inference is not None
        target = e.assumptions.get("latency_target_ms") or profile.inference.latency_p99_ms or 0.0
        if e.p99 and e.p99.get("misses") and (e.latency_ms or 0.0) <= target:
            reasons.extend(e.p99["misses"])  # the typical request meets it, the p99 does not
        else:
            reasons.append(f"latency {e.latency_ms:.0f} ms > {target:g} ms")
    if e.within_budget is False:
        assert e.cost_usd is not None and profile.goal.budget_usd is not None
        capex = float((e.purchase or {}).get("capex_usd") or 0.0)
        if capex > profile.goal.budget_usd:
            reasons.append(f"buying the chips costs ${capex:,.0f} up front, budget ${profile.goal.budget_usd:,.0f}")
        else:
            reasons.append(over_budget(e.cost_usd, profile.goal.budget_usd))
    e.feasible = not reasons
    e.why_not = "; ".join(dict.fromkeys(reasons)) or None
    budget_slack_warning(e, profile)  # last, as a what-if re-judging the budget adds it (result.rebudgeted)
