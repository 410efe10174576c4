"""From a recommendation to files a team can run: ``advisor scaffold``.

``scaffold(rec, ctx)`` turns the verdict's setup path (or one named with
``path_id``) into a dict of relative file name -> text, deterministic (no
timestamps, no version stamps); ``write_scaffold`` writes it atomically.

One generator per artefact, registered in ``GENERATORS`` (in the order they run;
later ones read what earlier ones produced). A setup path declares the artefacts
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

from collections.abc import Callable
from dataclasses import dataclass, field

from advisor.context import Context
from advisor.recommend import Recommendation
from advisor.scaffold import kubernetes, readme, setup_script, shell, skeleton, skypilot
from advisor.scaffold.fill import fill_command
from advisor.scaffold.shell import Step
from advisor.scaffold.skypilot import SkyEntry
from advisor.scaffold.spec import Spec, resolve
from advisor.scaffold.write import write_scaffold

__all__ = ["GENERATORS", "Build", "Generator", "fill_command", "scaffold", "write_scaffold"]


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


Generator = Callable[[Build], None]
# artefact id (rules/setup ``artefacts``) -> generator, in the order they run.
GENERATORS: dict[str, Generator] = {
    "skeleton": _skeleton,
    "kubernetes": _kubernetes,
    "dockerfile": _dockerfile,
    "shell": _shell,
    "skypilot": _skypilot,
    "readme": _readme,
}


def scaffold(rec: Recommendation, ctx: Context, path_id: str | None = None) -> dict[str, str]:
    """Relative file name -> content for the verdict's configuration (or the named setup path)."""
    build = Build(resolve(rec, ctx, path_id), ctx)
    for artefact, generate in GENERATORS.items():
        if build.spec.produces(artefact):
            generate(build)
    return dict(sorted(build.files.items()))
