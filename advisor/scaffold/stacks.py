"""The stacks the scaffold runs, as data: LLM servers (``rules/serving-stacks.yaml``)
and training stacks (``rules/training-stacks.yaml``: pip lines, launchers, images, probes).

The profile's ``software.serving_stack`` is kept when it runs on the
configuration's device family; otherwise the first server that does is used and
the plan records why (the README and setup.sh say so).
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DataAttention:
    """How a server runs a mixture of experts with data-parallel attention on one device family (serving-stacks.yaml
    data_parallel_attention): its tensor-parallel size then (1 per data-parallel rank, or all the replica's chips),
    the flags it adds, and the flags of a replica over several hosts (its own multi-node form) with the workers' own."""

    tensor: str  # "1" or "all"
    flags: tuple[str, ...]
    multi_host: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    # whose cap the server's sequences flag is: each data-parallel rank's (vLLM --max-num-seqs, one engine a rank)
    # or the whole server's, which it splits over its ranks itself (SGLang --max-running-requests)
    seqs: str = "rank"


@dataclass(frozen=True)
class Server:
    id: str
    title: str
    devices: tuple[str, ...]
    image: dict[str, str]
    pip: dict[str, str] | None
    command: dict[str, tuple[str, ...]]  # per device family
    pipeline: tuple[str, ...] | None
    health: str
    metric: str | None
    sources: tuple[str, ...]
    # per device family: flags every pod of a multi-host replica adds (LeaderWorkerSet variables),
    # and the extra ones of the workers; a family missing here is served from one host only
    multi_host: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = dataclasses.field(default_factory=dict)
    prepare: dict[str, str] = dataclasses.field(default_factory=dict)  # shell run before the server
    # profile precision -> the server's flags (dtype, on-the-fly quantization); a precision missing
    # here is a quantized checkpoint the server reads its method from
    precision: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # per device family: the mixture-of-experts layout with data-parallel attention (absent: the server has none)
    data_attention: dict[str, DataAttention] = dataclasses.field(default_factory=dict)
    # the flags that set the prompt tokens one step takes ({budget}); empty: the server's default only
    prefill_budget: tuple[str, ...] = ()

    def argv(
        self, device: str, model: str, tp: int | str, pp: int | str, context_len: int, port: int,
        max_seqs: int = 1, precision: str = "", attention_dp: int = 1, prefill_budget: int = 0,
    ) -> list[str]:
        """The server's command words; ``tp`` and ``pp`` may be shell expressions (sky.yaml).
        ``precision`` (a profile precision) adds the server's flags for it (``precision:``); ``attention_dp`` > 1
        (the estimate's parallelism.attention_data) serves a mixture of experts with data-parallel attention over that
        many chips, in the server's own form (``data_parallel_attention:``); ``prefill_budget`` > 0 (a p99 target's
        prompt tokens per step, the estimate's p99.prefill_budget) sets it (``prefill_budget:``)."""
        words = list(self.command[device]) + (list(self.pipeline) if str(pp) != "1" and self.pipeline else [])
        words += list(self.precision.get(precision, ()))
        words += self.budget_flags(prefill_budget)
        dpa = self.data_attention.get(device) if attention_dp > 1 else None
        if dpa is not None:  # one scheduler per data-parallel rank, each with its share of the sequences
            tp = attention_dp if dpa.tensor == "all" else 1
            words += list(dpa.flags)
            if dpa.seqs == "rank":  # the flag is each rank's: its share; a server-wide flag is split by the server
                max_seqs = -(-max_seqs // attention_dp)
        vals = {"model": model, "tp": str(tp), "pp": str(pp), "context_len": str(context_len), "port": str(port),
                "max_seqs": str(max(1, max_seqs)), "dp": str(attention_dp)}
        return [w.format(**vals) for w in words]

    def budget_flags(self, prefill_budget: int) -> list[str]:
        """The flags that set ``prefill_budget`` prompt tokens per step (``prefill_budget:``); none for 0 (the default)."""
        return [w.replace("{budget}", str(prefill_budget)) for w in self.prefill_budget] if prefill_budget > 0 else []

    def host_flags(self, device: str, attention_dp: int = 1, per_host: int = 1) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(flags every pod of a replica over several hosts adds, the workers' extra flags): the server's multi-host
        form, or its data-parallel attention's own (``per_host``: the data-parallel ranks on one host)."""
        dpa = self.data_attention.get(device) if attention_dp > 1 else None
        if dpa is not None and dpa.multi_host is not None:
            flags, worker = dpa.multi_host
            fill = {"dp": str(attention_dp), "dp_local": str(per_host)}
            return tuple(f.format(**fill) for f in flags), tuple(w.format(**fill) for w in worker)
        return self.multi_host[device]

    def precision_note(self, precision: str) -> str | None:
        """Why the server gets no precision flag (a quantized checkpoint carries its own), or None."""
        if precision in self.precision:
            return None
        return (f"{self.title} takes {precision} weights from a checkpoint quantized to {precision} "
                "(its config names the method): serve such a checkpoint as the model")

    def shell(self, device: str, argv: list[str], extra: tuple[str, ...] = ()) -> str:
        """The server's command line for ``sh -c``: its ``prepare`` step on ``device`` first, if any."""
        prepare = self.prepare.get(device)
        return (f"{prepare} && exec " if prepare else "") + " ".join([shlex.join(argv), *extra])

    def serves_multi_host(self, device: str) -> bool:
        return device in self.multi_host


def _per_device(value: Any, devices: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """A command given once for every device, or per device."""
    if isinstance(value, dict):
        return {d: tuple(v) for d, v in value.items()}
    return {d: tuple(value) for d in devices}


@functools.cache
def _checkpoints() -> dict[str, Any]:
    """rules/checkpoints.yaml, its every source id checked against its ``sources`` (as rules/capacity.yaml's are)."""
    from advisor.knowledge import bundled_data

    data: dict[str, Any] = bundled_data("checkpoints.yaml")
    rows = [*data["native"], *data.get("contexts", [])]
    cited = [*data.get("marker_source", []), *data.get("rule_source", []), *(s for row in rows for s in row["source"])]
    missing = sorted({s for s in cited if s not in data["sources"]})
    if missing or not data.get("marker_source") or any(not row.get("source") for row in rows):
        raise ValueError(f"rules/checkpoints.yaml: sources {missing or '[]'} not in 'sources'")
    return data


@dataclass(frozen=True)
class PublishedContext:
    """The context a checkpoint is published for (rules/checkpoints.yaml ``contexts``)."""

    native: int  # trained on
    config: int  # what its config.json allows
    extended: int  # validated with rope scaling
    method: str
    factor: float
    source: tuple[str, ...]  # the URLs it is read from


@functools.cache
def published_context(model_id: str) -> PublishedContext | None:
    """The context ``model_id`` is published for, where rules/checkpoints.yaml lists it; None for any other."""
    import fnmatch

    name = model_id.strip().lower()
    for row in _checkpoints().get("contexts", []):
        if any(fnmatch.fnmatchcase(name, str(p).lower()) for p in row["patterns"]) and not any(
            fnmatch.fnmatchcase(name, str(p).lower()) for p in row.get("except", [])
        ):
            sources = _checkpoints()["sources"]
            return PublishedContext(
                int(row["native"]), int(row["config"]), int(row["extended"]), str(row["method"]), float(row["factor"]),
                tuple(str(sources[i].get("url") or f"https://github.com/{sources[i]['repo']}/blob/main/{sources[i]['path']}")
                      for i in row["source"]),
            )
    return None


@functools.cache
def checkpoint_method(model_id: str) -> str | None:
    """The quantization a checkpoint is published in, read from its Hugging Face name (rules/checkpoints.yaml): a
    marker word of its repository name (Llama-3.1-405B-Instruct-FP8, Qwen2.5-7B-Instruct-AWQ, ...-quantized.w4a16)
    or a release published quantized (gpt-oss: mxfp4). None for any other name. Such a checkpoint's config names its
    method, and the server reads it from there."""
    import fnmatch
    import re

    data: dict[str, Any] = _checkpoints()
    name = model_id.strip().lower()
    for row in data["native"]:
        if fnmatch.fnmatchcase(name, str(row["pattern"]).lower()):
            return str(row["method"])
    words = set(re.split(r"[-_.]", name.rsplit("/", 1)[-1]))
    found = [m for m in data["markers"] if m in words]
    return found[0] if found else None


@functools.cache
def servers() -> dict[str, Server]:
    from advisor.knowledge import bundled_data

    raw: dict[str, Any] = bundled_data("serving-stacks.yaml")
    out = {}
    for key, v in raw.items():
        devices = tuple(v["devices"])
        out[key] = Server(
            id=key,
            title=v["title"],
            devices=devices,
            image=dict(v["image"]),
            pip=dict(v["pip"]) if v.get("pip") else None,
            command=_per_device(v["command"], devices),
            pipeline=tuple(v["pipeline"]) if v.get("pipeline") else None,
            health=v["health"],
            metric=v.get("metric"),
            sources=tuple(v["source"]),
            multi_host={d: (tuple(m["flags"]), tuple(m.get("worker") or ())) for d, m in (v.get("multi_host") or {}).items()},
            prepare=dict(v.get("prepare") or {}),
            precision={k: tuple(f) for k, f in (v.get("precision") or {}).items()},
            data_attention={
                d: DataAttention(
                    str(a["tensor"]), tuple(a["flags"]),
                    (tuple(a["multi_host"]["flags"]), tuple(a["multi_host"].get("worker") or ())) if a.get("multi_host") else None,
                    str(a.get("seqs") or "rank"),
                )
                for d, a in (v.get("data_parallel_attention") or {}).items()
            },
            prefill_budget=tuple(v.get("prefill_budget") or ()),
        )
    return out


def choose(wanted: str, device: str, multi_host: bool, vendor: str | None = None) -> tuple[Server, str | None]:
    """The server for ``wanted`` on ``device`` (the chip's ``vendor``), and why another one was chosen (or None):
    setuppath.choose_server, the choice recommend's setup steps make too."""
    from advisor.setuppath import choose_server

    chosen, note = choose_server(wanted, device, multi_host, vendor)
    if not chosen:
        from advisor.errors import UsageError

        raise UsageError(
            f"no serving stack in rules/serving-stacks.yaml runs on {device.upper()}s, so there are no serving files to write for "
            f"this configuration; add {device} to the `devices` of the stacks that serve on it"
        )
    return servers()[chosen], note


# --------------------------------------------------------------------------- training stacks


# the training stacks' rows and install lines (rules/training-stacks.yaml) are read in advisor.setuppath, whose
# placeholders fill them into setup paths too
