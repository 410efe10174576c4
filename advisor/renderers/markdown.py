"""The markdown report as an output format (``report``, ``recommend --format markdown``)."""

from __future__ import annotations

from typing import Any


def report(recs: list[Any], opts: Any) -> str:
    from advisor.report import render

    return render(recs, opts.context, template=opts.template, timestamp=opts.timestamp)
