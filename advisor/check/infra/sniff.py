"""Which kind of file is this? Decided from content, cheaply (no parser imported here)."""

from __future__ import annotations

from typing import Any

PROFILE_KEYS = {"name", "task", "model", "training", "inference", "proposal", "match", "domain", "software", "goal", "team", "deployment"}
SKY_KEYS = {"resources", "run", "setup", "num_nodes", "service", "file_mounts", "workdir", "envs", "secrets", "config", "volumes"}


def doc_kind(data: Any) -> str:
    """profile | kubernetes | skypilot | other (a mapping of none of these) | invalid-profile (anything else:
    judged as a profile so that its errors are reported as today)."""
    if not isinstance(data, dict):
        return "invalid-profile"
    keys = {k for k in data if isinstance(k, str)}
    if isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str):
        return "kubernetes"
    if keys & (PROFILE_KEYS - {"name"}):
        return "profile"
    if keys & SKY_KEYS:
        return "skypilot"
    if "name" in keys or not keys:
        return "profile"
    return "other"
