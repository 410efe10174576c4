"""From a recommendation to files a team can run: ``advisor scaffold``.

``scaffold(rec, ctx)`` turns the verdict's setup path (or one named with
``path_id``) into a dict of relative file name -> text, deterministic (no
timestamps, no version stamps); ``write_scaffold`` writes it atomically.

One generator per artefact, registered in ``GENERATORS`` with what it reads (it runs
after those; the README after every other artefact). A setup path declares the artefacts
it produces (``artefacts:`` in ``rules/setup/*.yaml``); a declared generator
still writes nothing when the configuration has nothing for it (no training
skeleton for a serving profile, no SkyPilot task without an accelerator).

| artefact | module | files |
|---|---|---|
| skeleton | ``skeleton`` | ``train.py`` for training and fine-tuning, in the team's stack |
| kubernetes | ``kubernetes`` | ``k8s/``: vLLM Deployment, Service, HPA and PodMonitoring |
| dockerfile | ``skeleton`` | ``Dockerfile`` for paths that build a container (Vertex AI) |
| shell | ``shell``, ``setup_script`` | ``setup.sh``: the path's steps (``shell``) as bash functions (``setup_script``) |
| skypilot | ``skypilot`` | ``sky.yaml`` with ordered fallbacks |
| readme | ``readme`` | ``README.md``: steps, cost and time, assumptions |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from advisor.context import Context
from advisor.recommend import Recommendation
from advisor.scaffold import kubernetes, readme, setup_script, shell, skeleton, skypilot
from advisor.scaffold.fill import fill_command
from advisor.scaffold.shell import Step
from advisor.scaffold.skypilot import SkyEntry
from advisor.scaffold.spec import Spec, resolve
from advisor.scaffold.write import write_scaffold

__all__ = ["GENERATORS", "Build", "Generator", "fill_command", "run_order", "scaffold", "write_scaffold"]


@dataclass
class Build:
    """What the generators share while a scaffold is made."""

    spec: Spec
    ctx: Context
    files: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    fallbacks: list[SkyEntry] = field(default_factory=list)


def _skeleton(b: Build) -> None:
    if b.spec.training and b.spec.stack:
        b.files["train.py"] = skeleton.train_py(b.spec)


def _kubernetes(b: Build) -> None:
    if b.spec.serving:
        b.files.update(kubernetes.manifests(b.spec))


def _dockerfile(b: Build) -> None:
    if b.spec.acc is not None and "train.py" in b.files:  # the container runs train.py
        b.files["Dockerfile"] = skeleton.dockerfile(b.spec)


def _shell(b: Build) -> None:
    b.steps = shell.build_steps(b.spec, b.files)
    b.files["setup.sh"] = setup_script.setup_sh(b.spec, b.steps)


def _skypilot(b: Build) -> None:
    if b.spec.est is not None and b.spec.acc is not None:
        b.files["sky.yaml"], b.fallbacks = skypilot.sky_yaml(b.spec, b.ctx)


def _readme(b: Build) -> None:
    b.files["README.md"] = readme.readme(b.spec, b.steps, b.files, b.fallbacks)


@dataclass(frozen=True)
class Generator:
    """One artefact's generator and what it reads: ``after`` names the artefacts whose files or
    steps it uses (they run first); ``reads_all`` runs it after every other artefact (the README,
    which lists every file written), wherever it was registered."""

    generate: Callable[[Build], None]
    after: tuple[str, ...] = ()
    reads_all: bool = False


# artefact id (rules/setup ``artefacts``, knowledge.Artefact) -> its generator; the order they
# run is ``run_order``: what each declares it reads first, otherwise the order registered here.
GENERATORS: dict[str, Generator] = {
    "skeleton": Generator(_skeleton),
    "kubernetes": Generator(_kubernetes),
    "dockerfile": Generator(_dockerfile, after=("skeleton",)),
    "shell": Generator(_shell, after=("skeleton", "kubernetes", "dockerfile")),
    "skypilot": Generator(_skypilot),
    "readme": Generator(_readme, reads_all=True),
}


def run_order(generators: Mapping[str, Generator]) -> list[str]:
    """The artefacts in an order where each runs after what it reads: registration order, moved
    only as far as a declared dependency needs; the ``reads_all`` ones last. A dependency on an
    unregistered or a ``reads_all`` artefact, or a cycle, is a programming error (ValueError)."""
    last = [a for a, g in generators.items() if g.reads_all]
    for a, g in generators.items():
        bad = [d for d in g.after if d not in generators or d in last]
        if bad:
            raise ValueError(f"setup artefact {a!r} reads {bad}: not registered, or written after every other artefact")
    out: list[str] = []
    pending = [a for a in generators if a not in last]
    while pending:
        ready = next((a for a in pending if all(d in out for d in generators[a].after)), None)
        if ready is None:
            raise ValueError(f"setup artefacts {pending} read each other in a cycle")
        out.append(ready)
        pending.remove(ready)
    return out + last


def scaffold(rec: Recommendation, ctx: Context, path_id: str | None = None) -> dict[str, str]:
    """Relative file name -> content for the verdict's configuration (or the named setup path)."""
    build = Build(resolve(rec, ctx, path_id), ctx)
    for artefact in run_order(GENERATORS):
        if build.spec.produces(artefact):
            GENERATORS[artefact].generate(build)
    return dict(sorted(build.files.items()))
