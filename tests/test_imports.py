"""Import hygiene: each command imports only what it uses (start-up time), checked in a fresh interpreter."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

PROBE = """
import io, json, sys, contextlib
from advisor.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""

HEAVY_FOR_OTHERS = {
    "jinja2": "report only",
    "advisor.report": "report only",
    "advisor.check.batch": "check only",
    "advisor.renderers.checkfmt": "check only (SARIF/JUnit/markdown writers)",
    "advisor.policy": "check only",
    "xml.sax.saxutils": "JUnit only",
    "multiprocessing": "large check batches only",
    "advisor.scaffold": "scaffold only",
    "tomllib": "check policy discovery only",
    "advisor.check.judge": "check only",
}
# The infrastructure readers (Terraform plans and HCL, Kubernetes manifests, SkyPilot tasks): only
# when check reads such a file, never for a profile.
INFRA_READERS = (
    "advisor.check.infra.read",
    "advisor.check.infra.tfplan",
    "advisor.check.infra.k8s",
    "advisor.check.infra.k8s_pod",
    "advisor.check.infra.k8s_workloads",
    "advisor.check.infra.skypilot",
    "advisor.check.infra.judge",
)
HEAVY_FOR_OTHERS.update({m: "check of infrastructure files only" for m in INFRA_READERS})


def modules(*args: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_recommend_imports_nothing_it_does_not_use(fmt: str) -> None:
    loaded = modules("recommend", "profiles/llm-chatbot.yaml", "--format", fmt)
    assert "advisor.recommend" in loaded
    unexpected = {m: why for m, why in HEAVY_FOR_OTHERS.items() if m in loaded}
    assert not unexpected, unexpected


def test_version_imports_no_model_code() -> None:
    loaded = modules("--version")
    assert not {"advisor.api", "advisor.estimator", "advisor.catalog", "pydantic.main"} & loaded


def test_report_does_import_jinja2() -> None:
    assert "jinja2" in modules("report", "profiles/llm-chatbot.yaml", "-o", "-")


def test_recommend_json_renders_without_rich() -> None:
    loaded = modules("recommend", "profiles/llm-chatbot.yaml", "--format", "json")
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}


def test_check_of_profiles_reads_no_infrastructure() -> None:
    loaded = modules("check", "profiles/proposals/ok-v6e-chatbot.yaml", "--no-config", "--format", "json")
    assert "advisor.check.judge" in loaded
    assert not set(INFRA_READERS) & loaded


def test_check_of_a_plan_loads_its_reader() -> None:
    plans = sorted((ROOT / "profiles" / "proposals" / "infra").rglob("*.json"))
    assert plans
    loaded = modules("check", str(plans[0]), "--no-config", "--format", "json")
    assert {"advisor.check.infra.read", "advisor.check.infra.tfplan"} <= loaded


@pytest.mark.parametrize(
    "args", [("recommend", "profiles/llm-chatbot.yaml", "--format", "json"), ("check", "profiles/proposals", "--no-config")]
)
def test_the_command_line_never_scans_for_pydantic_plugins(args: tuple[str, ...]) -> None:
    """Typer and the models build pydantic validators; the command line stands in for pydantic's
    plugin loader, so importlib.metadata (a scan of every installed distribution) is never loaded."""
    loaded = modules(*args)
    assert "pydantic.main" in loaded
    assert "importlib.metadata" not in loaded


def test_the_plugin_loader_stand_in_hands_over_to_the_real_one() -> None:
    """Anything but get_plugins asked of the stand-in loads pydantic's real loader in its place; the
    library API alone (no command line) leaves pydantic as it is."""
    probe = (
        "import sys\nfrom advisor import cli\ncli._without_pydantic_plugins()\n"
        "m = sys.modules['pydantic.plugin._loader']\nassert list(m.get_plugins()) == []\n"
        "assert m.PYDANTIC_ENTRY_POINT_GROUP == 'pydantic'\n"
        "assert sys.modules['pydantic.plugin._loader'] is not m and 'importlib.metadata' in sys.modules\n"
        "from advisor.api import Context\nprint('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
    lib = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nimport advisor.api\nassert 'pydantic.plugin._loader' not in sys.modules or "
            "sys.modules['pydantic.plugin._loader'].__file__\nprint('ok')",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert lib.returncode == 0 and lib.stdout.strip() == "ok", lib.stderr


def _pinned(dist: str) -> str:
    """The version range pyproject.toml pins ``dist`` to."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if re.match(rf"{dist}\b", d))
    return spec[len(dist):]


def test_the_pinned_pydantic_is_the_one_the_stand_in_was_written_for() -> None:
    """advisor/cli.py stands in for a private module, pydantic.plugin._loader. This fails when the
    installed pydantic is outside the range pyproject.toml pins, or when a pydantic in that range
    no longer asks that module for get_plugins (then the stand-in does nothing, or worse): change
    the stand-in and the range together."""
    import importlib
    import importlib.metadata
    import inspect

    from packaging.specifiers import SpecifierSet

    installed = importlib.metadata.version("pydantic")
    assert installed in SpecifierSet(_pinned("pydantic")), (installed, _pinned("pydantic"))
    validator = importlib.import_module("pydantic.plugin._schema_validator")
    assert "from ._loader import get_plugins" in inspect.getsource(validator)
    loader = importlib.import_module("pydantic.plugin._loader")
    required = [p for p in inspect.signature(loader.get_plugins).parameters.values() if p.default is p.empty]
    assert required == [] and loader.PYDANTIC_ENTRY_POINT_GROUP == "pydantic"


@pytest.mark.parametrize("dist", ["typer", "rich"])
def test_the_installed_libraries_are_in_the_pinned_range(dist: str) -> None:
    """The tests read typer's help labels (changed in 0.29) and rich's private table measures:
    they say something only for the versions pyproject.toml pins."""
    import importlib.metadata

    from packaging.specifiers import SpecifierSet

    installed = importlib.metadata.version(dist)
    assert installed in SpecifierSet(_pinned(dist)), (dist, installed, _pinned(dist))
