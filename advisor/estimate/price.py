"""What a configuration costs: the catalog's cloud prices (kind, region, count) or the on-prem rate,
where an accelerator is offered, and the feasibility reasons of a priced estimate."""

from __future__ import annotations

from advisor import clouds
from advisor.catalog import Accelerator
from advisor.estimate import onprem
from advisor.estimate.result import Estimate, over_budget
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
    key = (tuple(dep.clouds), dep.pricing, dep.region, min(count, floor), dep.onprem)
    return _PRICES.get((acc,), key, lambda: _price_for(profile, acc, count or None))


def _price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> Price:
    """The cheapest of the clouds' price and, where on-prem is allowed, the amortised cost of owning it."""
    dep = profile.deployment
    cloud = _cloud_price_for(profile, acc, count)
    own = onprem.rate(acc, dep.onprem) if "on-prem" in dep.clouds else None
    if own is not None and (cloud.usd is None or own.usd_per_chip_hour < cloud.usd):
        return Price(own.usd_per_chip_hour, "on-prem", own.kind, None)
    return cloud


def _cloud_price_for(profile: Profile, acc: Accelerator, count: int | None = None) -> Price:
    clouds: list[str] = list(profile.deployment.clouds)
    kind = profile.deployment.pricing
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
) -> None:
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
        e.why_not = f"{e.count} chips not offered: {p.unavailable}"
    named_on = acc.shapes.machine_types_cloud
    if e.owned_chips is None and named_on is not None and named_on != (p.cloud or clouds.preferred(profile.deployment.clouds)):
        # one cloud's machine types do not name another cloud's instances or your own servers (an
        # unpriced configuration is named as on the cloud its setup would use)
        e.shape = acc.generic_shape_name(e.count)
    if p.usd is None:
        return
    e.usd_per_chip_hour, e.price_cloud, e.price_kind = p.usd, p.cloud, p.kind
    # whole cents at the source, so that every renderer rounds the same figure (JSON keeps cents)
    e.cost_usd = round(chip_hours * p.usd, 2)
    if chip_hours_range is not None:
        e.cost_low, e.cost_high = round(chip_hours_range[0] * p.usd, 2), round(chip_hours_range[1] * p.usd, 2)
    elif e.hours_low is not None and e.hours_high is not None:
        e.cost_low, e.cost_high = round(e.hours_low * e.count * p.usd, 2), round(e.hours_high * e.count * p.usd, 2)


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
    if e.meets_deadline is False:
        assert profile.training is not None and profile.training.deadline_hours is not None
        reasons.append(f"takes {e.hours:.1f} h, deadline {profile.training.deadline_hours:g} h")
    if e.meets_latency is False:
        assert profile.inference is not None
        target = e.assumptions.get("latency_target_ms") or profile.inference.latency_p99_ms or 0.0
        reasons.append(f"latency {e.latency_ms:.0f} ms > {target:g} ms")
    if e.within_budget is False:
        assert e.cost_usd is not None and profile.goal.budget_usd is not None
        reasons.append(over_budget(e.cost_usd, profile.goal.budget_usd))
    e.feasible = not reasons
    e.why_not = "; ".join(dict.fromkeys(reasons)) or None
