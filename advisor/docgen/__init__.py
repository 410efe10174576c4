"""Generated artifacts: the JSON Schemas under ``schemas/`` and the references under ``docs/reference/``.

Everything here is derived from the code and the data (the pydantic models,
``rules/``), so it cannot drift: ``python -m advisor.docgen`` rewrites the
files, ``python -m advisor.docgen --check`` lists the stale ones (exit 1), and
a test fails when a committed file differs from what this module produces.
The output is deterministic: sorted keys, no dates, no absolute paths.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.docgen.reference import (
    check_rules_md,
    families_md,
    profile_fields_md,
    rules_md,
    software_md,
)
from advisor.docgen.schemas import (
    FIELD_DOCS,
    GENERATOR,
    SCHEMA_KINDS,
    allowed_text,
    iter_fields,
    json_schema,
    schema_text,
)
from advisor.docgen.text import (
    condition_json,
    condition_lines,
    flow,
    leaf_text,
    number,
    rule_file,
    rule_json,
)

__all__ = [
    "FIELD_DOCS", "allowed_text", "condition_json", "condition_lines", "flow", "iter_fields", "json_schema", "leaf_text", "main",
    "number", "rule_file", "rule_json", "schema_text", "stale", "write",
]


# --------------------------------------------------------------------------- files


def outputs() -> dict[str, str]:
    """Repository-relative path -> generated text, for every generated file."""
    out = {f"schemas/{kind}.schema.json": schema_text(kind) for kind in SCHEMA_KINDS}
    out["docs/reference/profile-fields.md"] = profile_fields_md()
    out["docs/reference/rules.md"] = rules_md()
    out["docs/reference/software.md"] = software_md()
    out["docs/reference/model-families.md"] = families_md()
    out["docs/reference/check-rules.md"] = check_rules_md()
    return out


def stale(root: Path) -> list[str]:
    """Generated files that are missing or differ from what this module produces."""
    out = []
    for rel, text in outputs().items():
        path = root / rel
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            out.append(rel)
    return out


def write(root: Path) -> list[str]:
    """Write every generated file that changed (atomically); return the paths written."""
    from advisor.output import write_atomic

    written = []
    for rel, text in outputs().items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        written.append(rel)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=GENERATOR, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="list stale generated files and exit 1; write nothing")
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    root: Path = args.root or Path(__file__).resolve().parent.parent.parent
    if args.root is None and not (root / "pyproject.toml").is_file():
        print(f"{GENERATOR}: {root} is not a checkout of advisor (an installed copy?); pass --root", file=sys.stderr)
        return 2
    if args.check:
        old = stale(root)
        for rel in old:
            print(f"{rel}: stale; run `{GENERATOR}`", file=sys.stderr)
        return 1 if old else 0
    for rel in write(root):
        print(f"wrote {rel}")
    return 0
