"""Number formatting shared by every renderer (one place, so every output agrees)."""

from __future__ import annotations


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
