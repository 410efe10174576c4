"""What owning hardware costs per chip-hour: purchase amortised plus power and hosting.

The defaults are data (``onprem:`` in rules/catalog.yaml, each with a source or a stated
assumption); a profile's ``deployment.onprem`` overrides them. Two price kinds:

- ``on-prem (amortised)``: (purchase / (amortisation years x 8760 h) + hosting) / utilisation
  + power, for hardware the team would buy (``deployment.clouds`` includes ``on-prem`` and
  ``deployment.onprem.purchase`` is true: never for hardware nobody has bought). The
  fixed part is paid every hour whether the chip works or not, so it is charged per *used*
  hour; power is drawn only when used.
- ``owned (running cost)``: power + hosting only, for hardware already paid for
  (``deployment.owned``, and the user's own machine under ``deployment.local``).

Running cost = TDP (kW) x PUE x $/kWh + hosting per chip-month / hours per month. A chip
without a TDP in the catalog has no running cost, and one without a purchase price no
amortised cost: both stay unpriced rather than free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.catalog import Accelerator, OnPremDefaults
from advisor.models import Deployment, OnPrem

ONPREM_KIND = "on-prem (amortised)"
OWNED_KIND = "owned (running cost)"
HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Rate:
    usd_per_chip_hour: float
    kind: str
    parts: dict[str, float] = field(default_factory=dict)


def _pick(override: float | None, default: float) -> float:
    return default if override is None else override


def running_cost(acc: Accelerator, override: OnPrem | None = None) -> dict[str, float] | None:
    """Power and hosting per chip-hour, with the inputs used; None without a TDP or defaults."""
    d: OnPremDefaults | None = acc.onprem_basis
    if d is None or acc.specs.tdp_w is None:
        return None
    o = override or OnPrem()
    pue = _pick(o.pue, (d.local_pue if acc.local else d.pue).value)
    hosting = _pick(o.hosting_usd_per_chip_month, (d.local_hosting_usd_per_chip_month if acc.local else d.hosting_usd_per_chip_month).value)
    kwh = _pick(o.usd_per_kwh, d.usd_per_kwh.value)
    power = acc.specs.tdp_w / 1000.0 * pue * kwh
    host = hosting / d.hours_per_month.value
    return {"tdp_kw": acc.specs.tdp_w / 1000.0, "pue": pue, "usd_per_kwh": kwh, "power_usd_per_hour": power,
            "hosting_usd_per_chip_month": hosting, "hosting_usd_per_hour": host}


def rate(acc: Accelerator, override: OnPrem | None = None, *, owned: bool = False, in_use: float | None = None) -> Rate | None:
    """The equivalent $/chip-hour of owning ``acc`` (running cost only when ``owned``). ``in_use``: the share of the
    chips' hours the workload itself runs them (a service bought for itself: its hours a day over 24), in place of the
    catalog's assumed utilisation, unless the profile states one (deployment.onprem.utilisation)."""
    run = running_cost(acc, override)
    if run is None:
        return None
    running = run["power_usd_per_hour"] + run["hosting_usd_per_hour"]
    if owned:
        return Rate(running, OWNED_KIND, run)
    d = acc.onprem_basis
    if acc.purchase is None or d is None:
        return None
    o = override or OnPrem()
    years = _pick(o.amortisation_years, d.amortisation_years.value)
    used = _pick(o.utilisation, in_use if in_use is not None else d.utilisation.value if d.utilisation is not None else 1.0)
    capex = acc.purchase.usd_per_chip / (years * HOURS_PER_YEAR)
    fixed = (capex + run["hosting_usd_per_hour"]) / used
    return Rate(fixed + run["power_usd_per_hour"], ONPREM_KIND,
                run | {"purchase_usd_per_chip": acc.purchase.usd_per_chip, "amortisation_years": years,
                       "capex_usd_per_hour": capex, "utilisation": used, "fixed_usd_per_used_hour": fixed})


def purchasing(dep: Deployment) -> bool:
    """Whether a profile prices catalog chips at their amortised purchase: on-prem allowed and an
    explicit purchase (deployment.onprem.purchase); owned hardware is priced apart."""
    return "on-prem" in dep.clouds and dep.onprem is not None and dep.onprem.purchase


def purchase_terms(
    acc: Accelerator, count: int, override: OnPrem | None, cloud_usd: float | None, cloud: str | None,
    in_use: float | None = None,
) -> dict[str, Any] | None:
    """What buying ``count`` x ``acc`` takes: the capital outlay, the lead time, the amortisation
    and the utilisation the amortised rate assumes, and the break-even against renting at
    ``cloud_usd`` per chip-hour (the months of use at that utilisation after which owning is cheaper)."""
    r = rate(acc, override, in_use=in_use)
    run = running_cost(acc, override)
    d = acc.onprem_basis
    if r is None or run is None or acc.purchase is None or d is None:
        return None
    o = override or OnPrem()
    lead = o.lead_time_weeks if o.lead_time_weeks is not None else (d.lead_time_weeks.value if d.lead_time_weeks is not None else None)
    running = run["power_usd_per_hour"] + run["hosting_usd_per_hour"]
    used = r.parts["utilisation"]
    out: dict[str, Any] = {
        "capex_usd": round(acc.purchase.usd_per_chip * count, 2),
        "usd_per_chip": acc.purchase.usd_per_chip,
        "lead_time_weeks": lead,
        "amortisation_years": r.parts["amortisation_years"],
        "utilisation_assumed": used,
        "amortised_usd_per_chip_hour": round(r.usd_per_chip_hour, 5),
        "break_even": None,
    }
    if cloud_usd is not None and cloud_usd > running:
        hours = acc.purchase.usd_per_chip / (cloud_usd - running)
        out["break_even"] = {
            "against": f"{cloud} at ${cloud_usd:g}/chip-hour",
            "used_hours_per_chip": round(hours),
            "months_at_utilisation": round(hours / (d.hours_per_month.value * used), 1),
        }
    return out
