"""The result type of one configuration (a candidate): time, cost, memory, throughput, latency,
its feasibility, and how a budget change re-reads it."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from advisor.fmt import GENERATED_TOKENS

GIB = 1024**3
HOURS_PER_MONTH = 730.0  # 365 x 24 / 12


@dataclass(slots=True)
class Estimate:
    """Time, cost, memory and throughput of one configuration (a candidate)."""

    accelerator: str
    device: str
    count: int
    shape: str
    mode: str  # training | inference
    hours: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None
    cost_usd: float | None = None
    cost_low: float | None = None
    cost_high: float | None = None
    usd_per_chip_hour: float | None = None
    price_cloud: str | None = None
    price_kind: str | None = None
    tokens_per_second: float | None = None
    memory_per_chip_gb: float = 0.0
    memory_capacity_gb: float = 0.0
    fits_memory: bool = True
    meets_deadline: bool | None = None
    meets_latency: bool | None = None
    within_budget: bool | None = None
    batch: int | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None  # None where a request generates no tokens (throughput_unit is not GENERATED_TOKENS)
    latency_ms: float | None = None
    replicas: int | None = None
    usd_per_million_tokens: float | None = None
    parallelism: dict[str, Any] | None = None
    at_concurrency_1: dict[str, Any] | None = None
    hosts_per_replica: int = 1
    capacity_rps: float | None = None  # requests/s one replica serves within the latency target
    unit_cost: dict[str, Any] | None = None
    past_knee: bool = False
    # the units a training run scales out over, each a machine of its own to provision and join over the data-centre
    # network: GPU nodes (VMs, servers), TPU slices (a slice's hosts share its ICI)
    machines: int = 1
    owned_chips: int | None = None  # the team owns this many of the accelerator
    procurement: str | None = None  # how the chips are obtained (rules/capacity.yaml kind)
    procurable: bool = True  # False: no procurement kind of any allowed cloud delivers the chips
    capacity: dict[str, Any] | None = None  # that kind's reach, term and sources
    region: str | None = None  # where it runs (the price's cloud's region)
    purchase: dict[str, Any] | None = None  # bought hardware: outlay, lead time, break-even vs renting
    p99: dict[str, Any] | None = None  # serving: p99 TTFT, TPOT and latency (estimate/tail.py)
    # serving: what tokens_per_second counts, GENERATED_TOKENS or a request's own unit (requests/s, images/s, videos/s)
    throughput_unit: str | None = None
    zone: str | None = None
    feasible: bool = True
    why_not: str | None = None
    warnings: list[str] = field(default_factory=list)
    assumptions: dict[str, Any] = field(default_factory=dict)
    # (low, high) of every time, throughput and latency, from the spread of each constant's level
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def prefill_budget(self) -> int:
        """The prompt tokens per server step a p99 target set below the stack's default (p99.prefill_budget), or 0:
        the setup then writes it (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size)."""
        chosen = (self.p99 or {}).get("prefill_budget") or {}
        return int(chosen.get("tokens") or 0)

    @property
    def priced(self) -> bool:
        return self.cost_usd is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "accelerator": self.accelerator,
            "device": self.device,
            "count": self.count,
            "shape": self.shape,
            "mode": self.mode,
            "hours": rounded(self.hours),
            "hours_range": [rounded(self.hours_low), rounded(self.hours_high)],
            "cost_usd": rounded(self.cost_usd, 2),
            "cost_range_usd": [rounded(self.cost_low, 2), rounded(self.cost_high, 2)],
            "usd_per_chip_hour": rounded(self.usd_per_chip_hour, 5),
            "price": {"cloud": self.price_cloud, "kind": self.price_kind} if self.price_cloud else None,
            # generated tokens only (DESIGN.md): null for a serving workload whose requests generate none (its rate: throughput)
            "tokens_per_second": rounded(self.tokens_per_second, 1) if self.throughput_unit in (None, GENERATED_TOKENS) else None,
            "memory_per_chip_gb": rounded(self.memory_per_chip_gb, 2),
            "memory_capacity_gb": rounded(self.memory_capacity_gb, 2),
            "fits_memory": self.fits_memory,
            "meets_deadline": self.meets_deadline,
            "meets_latency": self.meets_latency,
            "within_budget": self.within_budget,
        }
        if self.mode == "inference":
            out.update(
                batch=self.batch,
                ttft_ms=rounded(self.ttft_ms, 1),
                tpot_ms=rounded(self.tpot_ms, 2),
                latency_ms=rounded(self.latency_ms, 1),
                replicas=self.replicas,
                usd_per_million_tokens=rounded(self.usd_per_million_tokens, 4),
                at_concurrency_1=self.at_concurrency_1,
                unit_cost=self.unit_cost,
                hosts_per_replica=self.hosts_per_replica,
                capacity_requests_per_second=rounded(self.capacity_rps, 3),
                throughput={"per_second": rounded(self.tokens_per_second, 3), "unit": self.throughput_unit},
                p99=self.p99,
                percentiles={
                    "ttft_ms": "typical request at the operating point", "tpot_ms": "typical request at the operating point",
                    "latency_ms": "typical request at the operating point",
                    "p99": "99th percentile over requests (estimate/tail.py): tpot_ms is a request's own average per output "
                           "token, as benchmarks measure TPOT; itl_ms the slowest single step (inter-token latency)",
                },
            )
        if self.parallelism is not None:
            out["parallelism"] = self.parallelism
        if self.owned_chips is not None:
            out["owned_chips"] = self.owned_chips
        out["procurement"] = self.procurement
        out["capacity"] = self.capacity
        out["region"] = self.region
        out["zone"] = self.zone
        if self.purchase is not None:
            out["purchase"] = self.purchase
        if self.ranges:
            out["ranges"] = {k: [rounded(lo, 3), rounded(hi, 3)] for k, (lo, hi) in sorted(self.ranges.items())}
        out.update(feasible=self.feasible, why_not=self.why_not, warnings=list(self.warnings))
        out["assumptions"] = self.assumptions
        return out


def rounded(value: float | None, digits: int = 3) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value):
        return None
    return float(round(value, digits)) if abs(value) >= 1 else float(f"{value:.{digits + 3}g}")


def over_budget(cost: float, budget: float) -> str:
    return f"costs ${cost:,.0f}, budget ${budget:,.0f}"


BUDGET_SLACK = "budget $"


def budget_slack(e: Estimate, budget: float | None) -> str | None:
    """The warning for a budget the expected cost meets and the range's dear end does not, else None."""
    if budget is None or e.cost_usd is None or e.cost_usd > budget or e.cost_high is None or e.cost_high <= budget:
        return None
    return f"{BUDGET_SLACK}{budget:,.0f} covers the expected ${e.cost_usd:,.0f}, not the range's dear end ${e.cost_high:,.0f}"


# --------------------------------------------------------------------------- re-use (what-ifs)


def rebudgeted(e: Estimate, was: float | None, budget: float | None) -> Estimate | None:
    """``e``, estimated under ``goal.budget_usd`` = ``was``, under ``budget`` instead. The budget is
    read only by the last feasibility test (``within_budget``, the last of the reasons), so the
    rest of the estimate stands. None where the reasons cannot be told apart: estimate it again."""
    if e.cost_usd is None:
        return e  # nothing to compare with a budget
    if e.feasible != (e.why_not is None) or e.purchase is not None:
        return None  # a purchase's outlay is held to the budget too (price.apply_purchase_limits): estimate it again
    why = e.why_not
    if e.within_budget is False:
        if was is None:
            return None
        old = over_budget(e.cost_usd, was)
        if why == old:
            why = None
        elif why is not None and why.endswith("; " + old):
            why = why[: -len(old) - 2]
        else:
            return None
    within = None if budget is None else e.cost_usd <= budget
    if within is False:
        assert budget is not None
        new = over_budget(e.cost_usd, budget)
        if why is not None and new in why:
            return None
        why = f"{why}; {new}" if why else new
    warnings = [w for w in e.warnings if not w.startswith(BUDGET_SLACK)]
    if (said := budget_slack(e, budget)) is not None:
        warnings.append(said)
    return dataclasses.replace(e, within_budget=within, why_not=why, feasible=why is None, warnings=warnings)
