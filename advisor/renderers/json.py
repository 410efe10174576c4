"""JSON output: stable key order, no timestamps, one trailing newline."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.catalog import Catalog


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def catalog_json(cat: Catalog) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "as_of": cat.as_of.isoformat(),
        "files": cat.files,
        "onprem": cat.onprem.model_dump(mode="json") if cat.onprem else None,
        "accelerators": [
            {
                **acc.model_dump(mode="json", exclude_none=True),
                "counts": acc.counts(),
            }
            for acc in cat.accelerators.values()
        ],
        "sources": {k: v.model_dump(mode="json", exclude_none=True) for k, v in sorted(cat.sources.items())},
    }
