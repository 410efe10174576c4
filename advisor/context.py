"""The loaded knowledge: knowledge base, catalog and constants (``Context``), loaded once per
process, and the catalog check of the accelerators a batch of profiles names.

Engine modules (check, report, scaffold) take a ``Context``; the CLI reaches it through
``advisor.api``, which re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.catalog import Catalog, load_catalog
from advisor.constants import Constants, load_constants
from advisor.errors import InputError, Problem
from advisor.knowledge import KnowledgeBase, load_knowledge
from advisor.loading import LoadedProfile


@dataclass
class Context:
    """Knowledge base, catalog and constants, loaded once per process."""

    kb: KnowledgeBase
    catalog: Catalog
    constants: Constants

    @classmethod
    def load(cls, rules: Iterable[str] = (), catalogs: Iterable[str] = ()) -> Context:
        rules, catalogs = list(rules), list(catalogs)
        if not rules and not catalogs:
            return cls._builtin()
        problems: list[Problem] = []
        kb = catalog = None
        try:
            kb = load_knowledge(list(rules))
        except InputError as exc:
            problems.extend(exc.problems)
        try:
            catalog = load_catalog(list(catalogs))
        except InputError as exc:
            problems.extend(exc.problems)
        if problems:
            raise InputError(problems)
        assert kb is not None and catalog is not None
        return cls(kb, catalog, load_constants())

    @classmethod
    def _builtin(cls) -> Context:
        from advisor import cache
        from advisor.knowledge import builtin_rules_dir
        from advisor.validation import builtin_tables, prime_builtin_tables

        root = builtin_rules_dir()
        sig = cache.signature(root)  # before anything is read: a file edited meanwhile is not cached under its new state
        hit = cache.load(root, sig)
        if isinstance(hit, tuple) and len(hit) == 2 and isinstance(hit[0], cls) and isinstance(hit[1], dict):
            prime_builtin_tables(hit[1])
            return hit[0]
        ctx = cls(load_knowledge([]), load_catalog([]), load_constants())
        ctx.catalog.dominated()  # computed once, kept with the catalog
        _read_builtin_tables()
        cache.store(root, (ctx, builtin_tables()), sig)
        return ctx


def _read_builtin_tables() -> None:
    """Every built-in table a recommendation or a check reads (software support, model families,
    device families, clouds), read now so that the per-user cache holds them with the rest."""
    from advisor import clouds, families, model_families, software

    software.load_software()
    model_families.load_families()
    families.ids()
    clouds.ids()


def check_accelerators(loaded: list[LoadedProfile], catalog: Catalog) -> None:
    """A proposal naming an unknown accelerator is an input error (exit 2); so is a residency pin (deployment.regions)
    of regions of clouds the profile does not allow only (nothing could run)."""
    problems = []
    for lp in loaded:
        problems += _region_problems(lp)
        prop = lp.profile.proposal
        if prop is not None and catalog.resolve(prop.accelerator) is None:
            problems.append(
                lp.doc.problem(("proposal", "accelerator"), "proposal.accelerator: " + catalog.unknown_message(prop.accelerator))
            )
        for i, name in enumerate(lp.profile.deployment.accelerators or []):
            if catalog.resolve(name) is None:
                problems.append(
                    lp.doc.problem(("deployment", "accelerators", i), "deployment.accelerators: " + catalog.unknown_message(name))
                )
        for i, own in enumerate(lp.profile.deployment.owned or []):
            if catalog.resolve(own.accelerator) is None:
                problems.append(
                    lp.doc.problem(
                        ("deployment", "owned", i, "accelerator"), "deployment.owned: " + catalog.unknown_message(own.accelerator)
                    )
                )
    if problems:
        raise InputError(problems)


def _region_problems(lp: LoadedProfile) -> list[Problem]:
    """A residency pin nothing may meet: every region of deployment.regions belongs, by the known lists or its form, to a
    cloud deployment.clouds does not list, and no on-prem site is allowed (a team pinned to europe-west4 on AWS only:
    no estimate should be left to find it). A region id of no cloud's form (a sovereign or new region, an on-prem site)
    is said in the verdict's warnings, never refused."""
    from advisor import regions
    from advisor.validation import did_you_mean

    dep = lp.profile.deployment
    if not dep.regions or "on-prem" in dep.clouds:
        return []
    owners = {r: regions.cloud_of(r) for r in dep.regions}
    if any(c is None for c in owners.values()) or set(owners.values()) & set(dep.clouds):
        return []
    known = regions.known_ids()
    where = ", ".join(f"{r} ({c}{'' if r in known else ', unknown' + did_you_mean(r, known)})" for r, c in owners.items())
    return [lp.doc.problem(("deployment", "regions"), f"deployment.regions: {where}: none is a region of "
                           f"deployment.clouds ({', '.join(dep.clouds)}), so nothing may run")]
