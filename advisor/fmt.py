"""Number formatting shared by every renderer (one place, so every output agrees)."""

from __future__ import annotations

import re
from typing import Any


def money(x: float | None) -> str:
    """``$1,234`` from $100 up, ``$12.34`` below; ``unpriced`` for a missing price (never $0)."""
    if x is None:
        return "unpriced"
    return f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def hours(x: float | None) -> str:
    """``45 min`` below an hour, ``6.5 h``, ``1,234 h`` from a thousand up; ``–`` when absent."""
    if x is None:
        return "–"
    if x < 1:
        return f"{x * 60:,.0f} min"
    return f"{x:,.1f} h" if x < 1000 else f"{x:,.0f} h"


def cell(text: object) -> str:
    """Text safe inside a markdown table cell (no pipes, no line breaks)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def safe_name(text: str, limit: int = 30) -> str:
    """A resource name valid for GCE, GKE, Kubernetes (DNS-1035) and buckets: lower-case letters,
    digits and hyphens, starting with a letter, at most ``limit`` characters."""
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", text.lower())).strip("-")
    if not slug or not slug[0].isalpha():
        slug = "w-" + slug
    return slug[:limit].rstrip("-") or "workload"


def unit_usd(usd: float | None, digits: int = 3, missing: str = "-") -> str:
    """A per-unit cost: fixed decimals from $0.1, three significant digits below (never '$0.000')."""
    if usd is None:
        return missing
    return f"${usd:,.{digits}f}" if usd >= 0.1 or usd == 0 else f"${usd:.{digits}g}"


def unit_label(unit_cost: dict[str, Any] | None, long: bool = False) -> str:
    """The unit a serving cost is quoted in: tokens for text generation, else the workload's own
    (per audio hour, per 1,000 images, per million requests)."""
    unit = str((unit_cost or {}).get("unit") or "per million output tokens")
    if long:
        return unit.replace("per million output tokens", "per M output tokens")
    if unit == "per million output tokens":
        return "$/M tok"
    return "$ " + unit.replace("per ", "/").replace("million", "M")


def per_unit(unit_cost: dict[str, Any] | None, digits: int = 3) -> str:
    """'$0.544 per M output tokens', '$0.00134 per audio hour'; 'unpriced' without a price."""
    usd = (unit_cost or {}).get("usd")
    if usd is None:
        return "unpriced"
    return f"{unit_usd(usd, digits)} {unit_label(unit_cost, long=True)}"
