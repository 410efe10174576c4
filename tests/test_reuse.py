"""What the what-ifs and the CI gate re-use instead of estimating again gives what estimating
again gives: a budget change re-judges the same estimates, a pricing change re-estimates only the
accelerators whose prices change, and a batch estimates each distinct workload once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.estimate.result import Estimate, rebudgeted
from advisor.estimate.search import all_candidates, repriced_keep
from advisor.loading import load_profiles
from advisor.models import Profile
from advisor.recommend import Decision, decide

from .conftest import PROFILES, PROPOSALS, sampled

ALL = [*PROFILES, *PROPOSALS]


def _profile(path: Path) -> Profile:
    return load_profiles([str(path)])[0].profile


def _with(p: Profile, block: str, **changes: Any) -> Profile:
    return p.model_copy(update={block: getattr(p, block).model_copy(update=changes)})


def _verdict(d: Decision) -> tuple[Any, ...]:
    """Everything a decision says, down to the configurations it names."""
    def conf(e: Estimate | None) -> tuple[Any, ...] | None:
        return None if e is None else (e.accelerator, e.count, e.cost_usd, e.hours, e.feasible, e.why_not)

    return (
        d.device, d.feasible, d.scores, d.margin, d.confidence, d.sensitivity, d.scenarios, conf(d.chosen),
        {k: conf(v) for k, v in d.best_by_device.items()},
        [(c.rule, c.device, c.points, c.reason) for c in d.contributions],
        [(x.device, x.rule) for x in d.excluded],
    )


@pytest.mark.parametrize("path", sampled(ALL, offset=1, ids=lambda p: p.stem))
def test_a_budget_change_rejudges_the_same_estimates(path: Path, ctx: Any) -> None:
    p = _profile(path)
    cands = all_candidates(p, ctx.catalog, ctx.constants)
    costs = sorted(x.cost_usd for x in cands if x.cost_usd is not None)
    budgets: list[float | None] = [None, 1.0, 1e12]
    if costs:  # budgets that split the candidates, and one exactly at a cost
        budgets += [costs[len(costs) // 4], costs[len(costs) // 2] * 1.01, costs[-1] * 0.99]
    for budget in budgets:
        q = _with(p, "goal", budget_usd=budget)
        moved = [rebudgeted(x, p.goal.budget_usd, budget) for x in cands]
        assert all(x is not None for x in moved)
        fresh = all_candidates(q, ctx.catalog, ctx.constants)
        assert [x.to_json() for x in moved if x is not None] == [x.to_json() for x in fresh], budget


@pytest.mark.parametrize("path", sampled(ALL, offset=2, ids=lambda p: p.stem))
def test_a_pricing_change_re_estimates_only_what_it_re_prices(path: Path, ctx: Any) -> None:
    p = _profile(path)
    cands = all_candidates(p, ctx.catalog, ctx.constants)
    for kind in ("on-demand", "spot", "committed-1y", "committed-3y"):
        if kind == p.deployment.pricing:
            continue
        q = _with(p, "deployment", pricing=kind)
        keep = repriced_keep(p, q, cands, ctx.catalog)
        reused = all_candidates(q, ctx.catalog, ctx.constants, keep=keep)
        fresh = all_candidates(q, ctx.catalog, ctx.constants)
        label = ("price", "warnings")  # a kept configuration keeps its price's label and warning
        assert [{k: v for k, v in x.to_json().items() if k not in label} for x in reused] == [
            {k: v for k, v in x.to_json().items() if k not in label} for x in fresh
        ], kind
        kb, cat, c = ctx.kb, ctx.catalog, ctx.constants
        assert _verdict(decide(q, kb, cat, c, reused)[0]) == _verdict(decide(q, kb, cat, c, fresh)[0]), kind


def test_keep_reuses_whole_accelerators_only(ctx: Any) -> None:
    """A pricing change that re-prices some accelerators keeps the others' estimates as they are."""
    p = _profile(next(x for x in PROFILES if x.stem == "llm-chatbot"))
    cands = all_candidates(p, ctx.catalog, ctx.constants)
    q = _with(p, "deployment", pricing="spot")
    keep = repriced_keep(p, q, cands, ctx.catalog)
    assert keep and len(keep) < len({x.accelerator for x in cands})  # some kept, some re-estimated
    kept = {id(x) for group in keep.values() for x in group}
    reused = all_candidates(q, ctx.catalog, ctx.constants, keep=keep)
    assert sum(id(x) in kept for x in reused) == len(kept)


def test_a_batch_estimates_each_distinct_workload_once(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two proposals for one workload (different names and counts) are judged as each alone is."""
    import json

    from advisor.check import judge as check_judge

    src = next(x for x in PROPOSALS if x.stem == "oversized-h100-finetune").read_text()
    (tmp_path / "a.yaml").write_text(src)
    (tmp_path / "b.yaml").write_text(src.replace("name: ", "name: other-", 1).replace("count: 64", "count: 8"))
    calls: list[str] = []
    real = check_judge.all_candidates
    monkeypatch.setattr(check_judge, "all_candidates", lambda p, *a, **kw: calls.append(p.name) or real(p, *a, **kw))
    check_judge._CANDIDATES.clear()
    both = json.loads(cli("check", str(tmp_path), "--format", "json", "--no-config", "--fail-on", "never").out)
    assert len(calls) == 1
    for name in ("a", "b"):
        check_judge._CANDIDATES.clear()
        alone = json.loads(cli("check", str(tmp_path / f"{name}.yaml"), "--format", "json", "--no-config", "--fail-on", "never").out)
        (res,) = alone["results"]
        (same,) = [r for r in both["results"] if r["profile"].endswith(f"{name}.yaml")]
        assert same == res


def test_the_batch_keeps_a_bounded_number_of_workloads(ctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The most recent workloads stay (a repeat is not estimated again); the oldest go first."""
    from advisor.check import judge as check_judge

    p = _profile(next(x for x in PROPOSALS if x.stem == "ok-v6e-chatbot"))
    sizes = [_with(p, "model", params_b=b) for b in (7.0, 8.0, 9.0)]
    monkeypatch.setattr(check_judge, "KEPT_WORKLOADS", 2)
    check_judge._CANDIDATES.clear()
    first = check_judge.candidates(sizes[0], ctx)
    assert check_judge.candidates(sizes[0].model_copy(update={"name": "another"}), ctx)[0] is first[0]
    check_judge.candidates(sizes[1], ctx)
    check_judge.candidates(sizes[2], ctx)
    assert len(check_judge._CANDIDATES) == 2
    assert check_judge.candidates(sizes[0], ctx)[0] is not first[0]  # evicted, estimated again
    monkeypatch.setattr(check_judge, "KEPT_ESTIMATES", 1)
    check_judge.candidates(sizes[1], ctx)
    assert len(check_judge._CANDIDATES) == 1  # the latest stays, however large


@pytest.mark.parametrize("path", sampled(ALL, offset=3, ids=lambda p: p.stem))
def test_what_ifs_without_unoffered_accelerators_reach_the_same_verdict(ctx: Any, path: Path) -> None:
    """The what-ifs estimate only the accelerators offered on the profile's clouds (where the family
    has one): the verdict, its configuration and its feasibility are those of the full search, for
    the profile and for the profile with its clouds widened (the what-if that adds GCP)."""
    p = _profile(path)
    variants = [p, _with(p, "deployment", clouds=[*p.deployment.clouds, "gcp"]) if "gcp" not in p.deployment.clouds else p]
    for q in variants:
        full = decide(q, ctx.kb, ctx.catalog, ctx.constants, all_candidates(q, ctx.catalog, ctx.constants))[0]
        pruned = decide(
            q, ctx.kb, ctx.catalog, ctx.constants, all_candidates(q, ctx.catalog, ctx.constants, verdict_only=True, ranges=False)
        )[0]
        assert (pruned.device, pruned.feasible) == (full.device, full.feasible)
        assert (
            (pruned.chosen.accelerator, pruned.chosen.count) == (full.chosen.accelerator, full.chosen.count)
            if full.chosen
            else pruned.chosen is None
        )
        assert pruned.scores == full.scores


def test_a_batch_decides_each_workload_once_unless_a_rule_reads_the_name(ctx: Any) -> None:
    """Proposals of one workload share its decision (the built-in rules read nothing outside the
    workload); a rule that tests the name makes the name part of what is decided."""
    import dataclasses

    from advisor.check import judge as check_judge
    from advisor.conditions import Leaf

    p = _profile(next(x for x in PROPOSALS if x.stem == "ok-v6e-chatbot"))
    renamed = p.model_copy(update={"name": "special"})
    check_judge._CANDIDATES.clear()
    assert check_judge._outside_workload(ctx.kb) == ()
    first = check_judge.decided(p, ctx)[0]
    assert check_judge.decided(renamed, ctx)[0] is first
    assert _verdict(first) == _verdict(decide(renamed, ctx.kb, ctx.catalog, ctx.constants)[0])

    base = next(r for r in ctx.kb.rules if r.device is not None and not r.exclude)
    reads = dataclasses.replace(base, id="reads-the-name", when=Leaf("name", "eq", "special"), points=50.0, device="gpu")
    other = dataclasses.replace(ctx, kb=dataclasses.replace(ctx.kb, rules=[*ctx.kb.rules, reads]))
    assert check_judge._outside_workload(other.kb) == ("name",)
    plain, named = check_judge.decided(p, other)[0], check_judge.decided(renamed, other)[0]
    assert plain is not named
    assert "reads-the-name" in [c.rule for c in named.contributions]
    assert "reads-the-name" not in [c.rule for c in plain.contributions]
    assert check_judge.decided(p, other)[0] is plain


def test_proposals_of_one_workload_share_the_estimates_their_rules_read(ctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proposal's own configuration and the smallest count that would do are estimated once per
    workload, entry and count, and are what estimating them again gives; the memo is bounded."""
    from advisor.check import judging as check_judging

    p = _profile(next(x for x in PROPOSALS if x.stem == "oversized-h100-finetune"))
    acc = ctx.catalog.get("h100-80gb")
    check_judging._ESTIMATES.clear()
    a = check_judging._estimate(p, acc, 8, ctx.constants)
    assert check_judging._estimate(p.model_copy(update={"name": "other"}), acc, 8, ctx.constants) is a
    assert a.to_json() == check_judging.estimate(p, acc, 8, ctx.constants).to_json()
    assert check_judging._estimate(_with(p, "model", params_b=p.model.params_b * 2), acc, 8, ctx.constants) is not a
    monkeypatch.setattr(check_judging, "KEPT_PROPOSAL_ESTIMATES", 2)
    check_judging._estimate(p, acc, 16, ctx.constants)
    assert len(check_judging._ESTIMATES) <= 2


def _grown(ctx: Any) -> Any:
    """The built-in catalog plus, for every entry: a copy 10% dearer (dominated), an exact duplicate
    under an id that sorts after it (dominated: ties go to the smaller id), and a copy 5% cheaper
    under an id that sorts after it (not dominated, and its original is not either)."""
    import dataclasses

    accs = dict(ctx.catalog.accelerators)
    for acc in list(accs.values()):
        for suffix, factor in (("-dearer", 1.1), ("-same", 1.0), ("-cheaper", 0.95)):
            prices = [p.model_copy(update={"usd_per_chip_hour": round(p.usd_per_chip_hour * factor, 4)}) for p in acc.prices]
            accs[acc.id + suffix] = acc.model_copy(update={"id": acc.id + suffix, "aliases": [], "prices": prices})
    return dataclasses.replace(ctx.catalog, accelerators=accs)


def test_dominated_entries_are_the_same_hardware_never_cheaper(ctx: Any) -> None:
    cat = _grown(ctx)
    dom = cat.dominated()
    acc = ctx.catalog.get("h100-80gb")
    # the original and the cheaper copy (its id sorts first) dominate the dearer copy and the duplicate
    assert dom[acc.id + "-dearer"] == (acc.id, acc.id + "-cheaper")
    assert dom[acc.id + "-same"] == (acc.id, acc.id + "-cheaper")  # equal to the original: the smaller id wins every tie
    assert acc.id + "-cheaper" not in dom and acc.id not in dom
    assert not ctx.catalog.dominated()  # the built-in catalog has no two entries alike
    # more memory is other hardware; one more offer is not offered alike
    bigger = acc.model_copy(update={"id": "zz-bigger", "specs": acc.specs.model_copy(update={"memory_gib": acc.specs.memory_gib * 2})})
    extra = acc.model_copy(update={"id": "zz-extra", "prices": [*acc.prices, acc.prices[0].model_copy(update={"region": "elsewhere"})]})
    import dataclasses

    other = dataclasses.replace(ctx.catalog, accelerators={**ctx.catalog.accelerators, "zz-bigger": bigger, "zz-extra": extra})
    assert other.dominated() == {}
    # a copy of a catalog with other entries computes its own (the memo is the entries')
    assert dataclasses.replace(cat, accelerators=ctx.catalog.accelerators).dominated() == {}
    assert cat.dominated() is dom


@pytest.mark.parametrize("path", sampled(ALL, offset=4, ids=lambda p: p.stem))
def test_the_verdict_search_without_dominated_entries_reaches_the_same_verdict(ctx: Any, path: Path) -> None:
    """On a catalog with dominated copies of every entry, the search for the verdict alone (the
    what-ifs: dominated entries skipped, no cost ranges) gives the full search's verdict."""
    cat = _grown(ctx)
    p = _profile(path)
    full = decide(p, ctx.kb, cat, ctx.constants, all_candidates(p, cat, ctx.constants))[0]
    pruned_cands = all_candidates(p, cat, ctx.constants, verdict_only=True, ranges=False)
    pruned = decide(p, ctx.kb, cat, ctx.constants, pruned_cands)[0]
    assert not any(x.accelerator.endswith(("-dearer", "-same")) for x in pruned_cands if x.owned_chips is None)
    assert (pruned.device, pruned.feasible) == (full.device, full.feasible)
    assert (
        (pruned.chosen.accelerator, pruned.chosen.count) == (full.chosen.accelerator, full.chosen.count)
        if full.chosen
        else pruned.chosen is None
    )
    assert pruned.scores == full.scores


@pytest.mark.parametrize("path", sampled(ALL, offset=5, ids=lambda p: p.stem))
def test_the_verdict_search_keeps_every_family_and_vendor(ctx: Any, path: Path) -> None:
    """A software block is a function of the family and the vendor: the verdict search keeps at least
    one entry of every (family, vendor) the full search estimates, on the profile's clouds and on one
    cloud alone, so that a family is blocked in both or in neither."""
    p = _profile(path)
    for clouds in ([*p.deployment.clouds], ["aws"], ["gcp"], ["azure"]):
        q = _with(p, "deployment", clouds=clouds)
        full = {(x.device, ctx.catalog.accelerators[x.accelerator].vendor) for x in all_candidates(q, ctx.catalog, ctx.constants)}
        pruned = {
            (x.device, ctx.catalog.accelerators[x.accelerator].vendor)
            for x in all_candidates(q, ctx.catalog, ctx.constants, verdict_only=True)
        }
        assert pruned == full, clouds


@pytest.mark.parametrize("path", sampled(ALL, offset=6, ids=lambda p: p.stem))
def test_check_decides_on_the_verdict_search_as_on_the_full_one(ctx: Any, path: Path) -> None:
    """check estimates a workload with the verdict search (cost ranges kept): its decision says
    everything the full search's does, its confidence and each family's best included, on the
    profile's clouds and on one cloud alone."""
    from advisor.check import judge as check_judge

    p = _profile(path)
    for clouds in ([*p.deployment.clouds], ["aws"], ["gcp"]):
        q = _with(p, "deployment", clouds=clouds)
        check_judge._CANDIDATES.clear()
        assert _verdict(check_judge.decided(q, ctx)[0]) == _verdict(decide(q, ctx.kb, ctx.catalog, ctx.constants)[0]), clouds


TRAINING = [p for p in ALL if _profile(p).is_training]


@pytest.mark.parametrize("path", sampled(TRAINING, offset=7, ids=lambda p: p.stem))
def test_the_pruned_training_search_decides_as_the_full_one(ctx: Any, path: Path) -> None:
    """The verdict search of a training workload skips entries whose cost floor is above their
    family's best so far: under every objective, deadlines from tight to loose, budgets that
    split the candidates, on each cloud, its decision (verdict, scores, confidence, each family's
    best) is the full search's, and it estimates fewer entries where the floors allow."""
    p = _profile(path)
    full_n = pruned_n = 0
    for optimize in ("cost", "balanced", "time"):
        for deadline in (None, 0.25, 1.0, 4.0):
            for clouds in ([*p.deployment.clouds], ["gcp", "aws"]):
                q = _with(_with(p, "goal", optimize=optimize), "deployment", clouds=clouds)
                if deadline is not None and q.training is not None:
                    base = q.training.deadline_hours or 720.0
                    q = _with(q, "training", deadline_hours=base * deadline)
                full = all_candidates(q, ctx.catalog, ctx.constants)
                pruned = all_candidates(q, ctx.catalog, ctx.constants, verdict_only=True)
                full_n += len({x.accelerator for x in full})
                pruned_n += len({x.accelerator for x in pruned})
                want = decide(q, ctx.kb, ctx.catalog, ctx.constants, full)[0]
                got = decide(q, ctx.kb, ctx.catalog, ctx.constants, pruned)[0]
                assert _verdict(got) == _verdict(want), (optimize, deadline, clouds)
    assert pruned_n <= full_n


def test_the_cost_floor_is_below_every_configuration(ctx: Any) -> None:
    """No configuration of an entry costs less than its floor (every bundled training profile, every
    priced candidate)."""
    from advisor.estimate.training import training_cost_floor

    for path in TRAINING:
        p = _profile(path)
        for x in all_candidates(p, ctx.catalog, ctx.constants):
            if x.cost_usd is None or x.owned_chips is not None:
                continue
            floor = training_cost_floor(p, ctx.catalog.accelerators[x.accelerator], ctx.constants)
            assert floor is not None and floor <= x.cost_usd + 0.01, (path.stem, x.accelerator, x.count, floor, x.cost_usd)
