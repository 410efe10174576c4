"""Policy configuration for ``advisor check``: ``.advisor.yaml`` or ``[tool.advisor]``.

Found from the working directory upward (the first of the two in the nearest
directory wins); command-line flags override it. Validated like profiles,
with line-numbered errors.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationError

from advisor.errors import InputError, Problem
from advisor.models import Cloud, Strict
from advisor.validation import problems_from
from advisor.yamlsrc import Document, load_file, read_text

FailOn = Literal["error", "warning", "never"]


class Thresholds(Strict):
    cost_over_best_percent: Annotated[float, Field(ge=0, le=100_000)] = 25.0
    cost_over_best_usd: Annotated[float, Field(ge=0, le=1e12)] = 0.0
    oversize_factor: Annotated[float, Field(ge=1, le=1000)] = 2.0
    hours_over_estimate_factor: Annotated[float, Field(ge=1, le=1000)] = 1.5


class RequireSpot(Strict):
    namespaces: list[Annotated[str, Field(max_length=253)]] = Field(default_factory=list, max_length=200)
    workspaces: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=200)


class Limits(Strict):
    """Spend and placement limits for infrastructure requests."""

    max_monthly_increase_usd: Annotated[float, Field(ge=0, le=1e12)] | None = None
    max_one_off_increase_usd: Annotated[float, Field(ge=0, le=1e12)] | None = None
    max_chips: Annotated[int, Field(ge=0, le=100_000_000)] | None = None
    allowed_accelerators: list[Annotated[str, Field(max_length=64)]] | None = Field(default=None, max_length=100)
    allowed_clouds: list[Cloud] | None = Field(default=None, max_length=8)
    allowed_regions: list[Annotated[str, Field(max_length=64)]] | None = Field(default=None, max_length=200)
    require_spot: RequireSpot = Field(default_factory=RequireSpot)


class Waivers(Strict):
    """What a pull request's own waivers may do (the policy is the workflow's, from the base branch)."""

    # rules (ids, or globs such as policy-*) no waiver in a profile, manifest or Terraform file can
    # waive; unset: the policy's own limits (policy-*) when it comes from the base branch (--policy),
    # nothing otherwise
    unwaivable: list[Annotated[str, Field(max_length=100)]] | None = Field(default=None, max_length=200)
    # a waiver that expires further ahead than this waives nothing ("until 2999-12-31" is no expiry)
    max_days: Annotated[int, Field(ge=1, le=36_500)] | None = None

    def blocks(self, rule: str) -> bool:
        from fnmatch import fnmatchcase

        return any(fnmatchcase(rule, pattern) for pattern in self.unwaivable or ())


class Policy(Strict):
    fail_on: FailOn = "error"
    waivers: Waivers = Field(default_factory=Waivers)
    judge_replicas: Literal["min", "max"] = "max"  # which end of an autoscaling range is judged
    limits: Limits = Field(default_factory=Limits)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    disabled_rules: list[Annotated[str, Field(max_length=100)]] = Field(default_factory=list, max_length=100)
    rules: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=20)
    catalog: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list, max_length=20)
    exclude: list[Annotated[str, Field(min_length=1, max_length=1000)]] = Field(default_factory=list, max_length=1000)


class LoadedPolicy(BaseModel):
    policy: Policy
    path: str | None = None


def find_config(start: Path) -> Path | None:
    """``.advisor.yaml``/``.advisor.yml``, or a ``pyproject.toml`` with ``[tool.advisor]``."""
    for directory in (start, *start.parents):
        for name in (".advisor.yaml", ".advisor.yml"):
            candidate = directory / name
            if candidate.is_file():
                return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(read_text(str(pyproject)))
            except (tomllib.TOMLDecodeError, InputError):
                continue
            if isinstance(data.get("tool"), dict) and "advisor" in data["tool"]:
                return pyproject
    return None


def _relative(base: Path, values: list[str]) -> list[str]:
    return [str((base / v).resolve()) if not Path(v).is_absolute() else v for v in values]


def load_policy(path: Path | None, base: Path | None = None) -> LoadedPolicy:
    """The policy in ``path`` (none: the defaults); its relative ``rules``/``catalog`` paths
    resolve against ``base``, else the file's directory."""
    if path is None:
        return LoadedPolicy(policy=Policy())
    if path.name == "pyproject.toml":
        text = read_text(str(path))
        try:
            tool = tomllib.loads(text).get("tool")
            data = tool.get("advisor") if isinstance(tool, dict) else None
            if data is None:
                raise InputError.single(str(path), 1, 1, "no [tool.advisor] table in this pyproject.toml")
        except tomllib.TOMLDecodeError as exc:
            raise InputError(
                [
                    Problem(
                        str(path),
                        getattr(exc, "lineno", 1) or 1,
                        getattr(exc, "colno", 1) or 1,
                        f"invalid TOML: {getattr(exc, 'msg', exc)}",
                    )
                ]
            ) from None
        line = next((i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip().startswith("[tool.advisor")), 1)
        doc = Document(str(path), 0, data, (line, 1))
    else:
        docs = [d for d in load_file(str(path)) if d.data is not None]
        if not docs:
            return LoadedPolicy(policy=Policy(), path=str(path))
        doc = docs[0]
    if not isinstance(doc.data, dict):
        raise InputError([doc.problem((), "expected a mapping of policy settings")])
    try:
        policy = Policy.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(problems_from(exc, doc, Policy)) from None
    base = base or path.parent
    policy = policy.model_copy(update={"rules": _relative(base, policy.rules), "catalog": _relative(base, policy.catalog)})
    return LoadedPolicy(policy=policy, path=str(path))
