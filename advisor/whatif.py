"""What would change the verdict: numeric break-evens first, then precision, method and pricing
alternatives, and facts about the code only when nothing else flips it (docs/user-guide.md).

Break-evens are searched, not sampled: for each continuous field the profile sets (peak QPS,
tokens, parameters, output length, deadline, budget, latency target; a training deadline also
when only the default applies) and the rival family's prices, the verdict is re-decided at x1/10
and x10; where the device changes, a bisection on the log scale finds the smallest change that
does it. Results are ranked by how small a change they need.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.models import Profile

# (profile, what of the base estimates it may re-use) -> Decision. ``reuse``: all of them (the
# change is not read by the estimator); ``budget``: all, re-judged against the new budget;
# ``prices``: all where every candidate is priced as before; ``none``: estimate again.
Decide = Callable[["Profile", str], Any]

PROBE = 10.0  # a change within 10x either way
STEPS = 6
# a categorical alternative ranks like a change of this many doublings
ALTERNATIVE_SIZE = 1.0
# the default training target when no deadline is stated (set from the constants by the caller)
DEFAULT_DEADLINE_HOURS = [720.0]


def _sub(p: Profile, block: str, **changes: Any) -> Profile:
    inner = getattr(p, block)
    return p.model_copy(update={block: inner.model_copy(update=changes)})


def _numeric_fields(p: Profile) -> list[tuple[str, float, Callable[[float], Profile], bool]]:
    """(field, current value, profile with a new value, integer?) for each field the profile sets."""
    out: list[tuple[str, float, Callable[[float], Profile], bool]] = []
    m = p.model

    def params(v: float) -> Profile:
        f = v / m.params_b
        active = m.active_params_b * f if m.active_params_b else None
        return p.model_copy(
            update={"model": m.model_copy(update={"params_b": v, "active_params_b": active, "layers": None, "hidden_size": None})}
        )

    # the model scaled, not the one field: its active parameters with it, its layers and width re-derived
    scaled = m.active_params_b or m.layers or m.hidden_size
    out.append(("model.params_b" + (" (the model scaled, its shape with it)"
                                    if scaled else ""), m.params_b, params, False))
    if p.training is not None:
        t = p.training
        out.append(("training.tokens_b", t.tokens_b, lambda v: _sub(p, "training", tokens_b=v), False))
        # the stated deadline, else the default the run is sized to (rules/estimator.yaml)
        out.append(
            (
                "training.deadline_hours",
                t.deadline_hours or DEFAULT_DEADLINE_HOURS[0],
                lambda v: _sub(p, "training", deadline_hours=v),
                False,
            )
        )
    if p.inference is not None:
        i = p.inference
        out.append(("inference.peak_qps", i.peak_qps, lambda v: _sub(p, "inference", peak_qps=v), False))
        if i.output_tokens >= 2:
            out.append(
                ("inference.output_tokens", float(i.output_tokens), lambda v: _sub(p, "inference", output_tokens=max(1, round(v))), True)
            )
        if i.latency_p99_ms is not None:
            out.append(("inference.latency_p99_ms", i.latency_p99_ms, lambda v: _sub(p, "inference", latency_p99_ms=v), False))
    if p.goal.budget_usd is not None:
        out.append(("goal.budget_usd", p.goal.budget_usd, lambda v: _sub(p, "goal", budget_usd=v), False))
    return out


def _alternatives(p: Profile) -> list[tuple[str, Profile]]:
    """Precision, method and pricing choices a team can make without changing the workload."""
    out: list[tuple[str, Profile]] = []
    if p.model.precision in ("bf16", "fp16", "fp32"):
        for prec in ("fp8", "int8"):
            out.append((f"model.precision: {p.model.precision} -> {prec}", _sub(p, "model", precision=prec)))
    if p.training is not None and p.task == "fine-tuning" and p.training.method == "full":
        for method in ("lora", "qlora"):
            out.append((f"training.method: full -> {method}", _sub(p, "training", method=method)))
    for kind in ("spot", "committed-1y", "committed-3y"):
        if kind != p.deployment.pricing:
            out.append((f"deployment.pricing: {p.deployment.pricing} -> {kind}", _sub(p, "deployment", pricing=kind)))
    return out


def _clouds_that_sell_more(allowed: list[str]) -> list[str]:
    """For each family sold only on some clouds, none of them allowed: the first of its clouds
    (rules/families.yaml ``clouds``: TPUs only on Google Cloud) — the cloud to allow to have it."""
    from advisor.families import all_families

    more = [f.clouds[0] for f in all_families() if f.clouds and not f.sold_on(allowed)]
    return list(dict.fromkeys(more))


def _facts(p: Profile) -> list[tuple[str, Profile]]:
    """Facts about the code and the team: tried only when nothing else changes the verdict."""
    out: list[tuple[str, Profile]] = []
    sw, dep = p.software, p.deployment
    for flag in ("custom_cuda_kernels", "dynamic_shapes", "fp64"):
        val = getattr(sw, flag)
        out.append((f"software.{flag}: {str(val).lower()} -> {str(not val).lower()}", _sub(p, "software", **{flag: not val})))
    if sw.cuda_libraries:
        out.append((f"software.cuda_libraries: {list(sw.cuda_libraries)} -> []", _sub(p, "software", cuda_libraries=[])))
    for more in _clouds_that_sell_more(dep.clouds):
        out.append((f"deployment.clouds: {list(dep.clouds)} -> {[*dep.clouds, more]}", _sub(p, "deployment", clouds=[*dep.clouds, more])))
    for fw in ("jax", "pytorch"):
        if fw != sw.framework:
            out.append((f"software.framework: {sw.framework} -> {fw}", _sub(p, "software", framework=fw)))
    for lvl in ("some", "expert"):
        if lvl != p.team.tpu_experience:
            out.append((f"team.tpu_experience: {p.team.tpu_experience} -> {lvl}", _sub(p, "team", tpu_experience=lvl)))
    return out


# Fields the estimator does not read: changing them re-scores, but reuses the estimates.
NOT_ESTIMATED = ("software.custom_cuda_kernels", "software.dynamic_shapes", "software.fp64", "team.")
# Fields the estimator reads in one place only (see Decide): what a change to them re-uses.
REUSE = {"goal.budget_usd": "budget", "deployment.pricing": "prices"}


def _fmt(v: float, integer: bool) -> str:
    if integer or abs(v) >= 1000:
        return f"{round(v):,}"
    return f"{v:.3g}"


def what_ifs(
    profile: Profile, base_device: str, decide: Decide, verdict_text: Callable[[Any], str], limit: int = 5,
    priced: Callable[[float], Any] | None = None, rival: str | None = None,
) -> list[str]:
    """``priced(f)``: the decision with the rival family's (``rival``) prices times ``f``."""
    found: list[tuple[float, str]] = []

    def changed(d: Any) -> bool:
        """A different device that is feasible (a flip into 'nothing is feasible' helps no one, from a verdict that is
        feasible or not: review 32's 'tokens_b below 1,796 makes it TPU' left the TPU plan at 559 h against 48) with a
        configuration to run (a flip to a family of which nothing can be sized, a TPU-only team's 'GPU', is no verdict a
        team can carry out)."""
        return bool(d.device != base_device and d.feasible and getattr(d, "chosen", None) is not None)

    for name, value, with_value, integer in _numeric_fields(profile):
        if value <= 0:
            continue
        for direction in (-1.0, 1.0):
            far = value * PROBE**direction
            reuse = REUSE.get(name, "none")
            d_far = decide(with_value(far), reuse)
            if not changed(d_far):
                continue
            lo, hi = 0.0, math.log(PROBE)  # log-distance from the current value
            flipped = d_far
            for _ in range(STEPS):
                mid = (lo + hi) / 2
                d = decide(with_value(value * math.exp(direction * mid)), reuse)
                if changed(d):
                    hi, flipped = mid, d
                else:
                    lo = mid
            new = value * math.exp(direction * hi)
            shown = _fmt(new, integer)
            # the value shown (rounded) flips it, and so do the values past it probed to x10: 'below N' is then true
            # of what a user tries next; a verdict that flips back and forth on the way (whole chips and replicas)
            # is said of the value itself ('at N'), never 'below 113' where 112 keeps it
            at = float(shown.replace(",", ""))
            if at <= 0 or not changed(decide(with_value(at), reuse)):
                shown, at = f"{new:.4g}", new  # the rounded value does not flip it: the value found, as found
            # just past it (1% and 4%: a count of whole chips steps there; x10 flipped it already)
            past = [at * (1.0 + direction * f) for f in (0.01, 0.04)]
            if all(changed(decide(with_value(v), reuse)) for v in past):
                text = f"{name}: {_fmt(value, integer)} -> {'below' if direction < 0 else 'above'} {shown} makes it {verdict_text(flipped)}"
            else:
                text = (f"{name}: {_fmt(value, integer)} -> {shown} makes it {verdict_text(flipped)} (not every value "
                        f"{'below' if direction < 0 else 'above'} it does: whole chips and replicas)")
            found.append((hi / math.log(2), text))

    if priced is not None and rival is not None:
        d_far = priced(1.0 / PROBE)
        if changed(d_far):
            lo, hi, flipped = 0.0, math.log(PROBE), d_far
            for _ in range(STEPS):
                mid = (lo + hi) / 2
                d = priced(math.exp(-mid))
                if changed(d):
                    hi, flipped = mid, d
                else:
                    lo = mid
            f = math.exp(-hi)
            found.append(
                (
                    hi / math.log(2),
                    f"prices: {rival} at {f:.0%} of today's catalog prices (a {1 - f:.0%} discount) makes it {verdict_text(flipped)}",
                )
            )

    for text, mutated in _alternatives(profile):
        d = decide(mutated, REUSE.get(text.split(":", 1)[0], "none"))
        if changed(d):
            found.append((ALTERNATIVE_SIZE, f"{text} makes it {verdict_text(d)}"))

    if not found:
        for text, mutated in _facts(profile):
            d = decide(mutated, "reuse" if text.startswith(NOT_ESTIMATED) else "none")
            if changed(d):
                found.append((2 * ALTERNATIVE_SIZE, f"{text} makes it {verdict_text(d)}"))

    found.sort(key=lambda x: (x[0], x[1]))
    return [text for _, text in found[:limit]]
