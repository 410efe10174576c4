"""LLM servers the scaffold can run (``advisor/templates/scaffold/serving_stacks.yaml``).

The profile's ``software.serving_stack`` is kept when it runs on the
configuration's device family; otherwise the first server that does is used and
the plan records why (the README and setup.sh say so).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent.parent / "templates" / "scaffold" / "serving_stacks.yaml"


@dataclass(frozen=True)
class Server:
    id: str
    title: str
    devices: tuple[str, ...]
    image: dict[str, str]
    pip: dict[str, str] | None
    command: tuple[str, ...]
    pipeline: tuple[str, ...] | None
    health: str
    metric: str | None
    sources: tuple[str, ...]

    def argv(self, model: str, tp: int, pp: int, context_len: int, port: int) -> list[str]:
        words = list(self.command) + (list(self.pipeline) if pp > 1 and self.pipeline else [])
        vals = {"model": model, "tp": str(tp), "pp": str(pp), "context_len": str(context_len), "port": str(port)}
        return [w.format(**vals) for w in words]


@functools.cache
def servers() -> dict[str, Server]:
    raw: dict[str, Any] = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    return {
        key: Server(
            id=key,
            title=v["title"],
            devices=tuple(v["devices"]),
            image=dict(v["image"]),
            pip=dict(v["pip"]) if v.get("pip") else None,
            command=tuple(v["command"]),
            pipeline=tuple(v["pipeline"]) if v.get("pipeline") else None,
            health=v["health"],
            metric=v.get("metric"),
            sources=tuple(v["source"]),
        )
        for key, v in raw.items()
    }


def choose(wanted: str, device: str, multi_host: bool) -> tuple[Server, str | None]:
    """The server for ``wanted`` on ``device``, and why another one was chosen (or None)."""
    table = servers()
    fallback = next(s for s in table.values() if device in s.devices)
    s = table.get(wanted)
    if s is None:
        if wanted in ("none", ""):
            return fallback, None
        return fallback, f"the scaffold has no manifests for {wanted}, so they use {fallback.title}"
    if device not in s.devices:
        return fallback, f"{s.title} does not run on {device.upper()}s, so the manifests use {fallback.title}"
    if multi_host and s.pipeline is None:
        return fallback, f"{s.title} serves from one machine only and this replica spans hosts, so the manifests use {fallback.title}"
    return s, None
