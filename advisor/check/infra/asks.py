"""What in a chart's values asks for accelerators, where the chart itself is not rendered (a dependency not in
``charts/``, a release of a chart from a Helm repository): a key about GPUs / TPUs / accelerators, or a chip resource or
selector key, with a count or a name."""

from __future__ import annotations

import re
from typing import Any

_ASKS_KEY = re.compile(r"(?i)gpu|tpu|accelerator")
_KEY_CHIP = re.compile(r"(?i)nvidia\.com/|amd\.com/gpu|google\.com/tpu|gke-accelerator|gke-tpu|aws\.amazon\.com/neuron")
# node labels that only say a node has (or runs the software for) an accelerator: a device plugin's or exporter's
# DaemonSet selects them to run on every such node (nvidia.com/gpu.present, aws.amazon.com/neuron.present, the GPU
# Operator's nvidia.com/gpu.deploy.*): placement, not a request for chips
_PRESENCE_LABEL = re.compile(r"(?i)\.present$|/gpu\.deploy\.")


def _asks(x: Any) -> bool:
    """A value that turns on or counts something: true, a positive number, a name (not "0" / "false" / "none")."""
    if isinstance(x, (dict, list)) or x is None:
        return False
    if isinstance(x, bool):
        return x
    if isinstance(x, (int, float)):
        return x > 0
    return isinstance(x, str) and x.strip().lower() not in ("0", "false", "none", "")


def asks_for_chips(v: Any, where: str = "", depth: int = 0) -> str | None:
    """The first place in a dependency's values that asks for accelerators: a key about GPUs / TPUs / accelerators
    with a positive count or a name (requestGPU: 8, gpu.enabled: true, nvidia.com/gpu: 1, gke-accelerator: nvidia-l4).
    A chip resource named as a value is not a request (a toleration's key: nvidia.com/gpu)."""
    if depth > 32:
        return None
    if isinstance(v, dict):
        for k, x in list(v.items())[:10_000]:
            here = f"{where}.{k}" if where else str(k)
            if isinstance(k, str) and (_ASKS_KEY.search(k) or _KEY_CHIP.search(k)) and not _PRESENCE_LABEL.search(k):
                if _asks(x):
                    return here
                if isinstance(x, dict) and x.get("enabled") is not False:  # gpu: {enabled: true, number: 2}
                    on = next((f"{here}.{k2}" for k2, x2 in x.items() if isinstance(x2, (bool, int, float)) and _asks(x2)), None)
                    if on:
                        return on
            got = asks_for_chips(x, here, depth + 1)
            if got:
                return got
    elif isinstance(v, list):
        for i, x in enumerate(v[:10_000]):
            got = asks_for_chips(x, f"{where}[{i}]", depth + 1)
            if got:
                return got
    return None
