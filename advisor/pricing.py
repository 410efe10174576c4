"""Price refresh without a release: a SkyPilot catalog CSV -> a ``--catalog`` override file.

Reads the ``vms.csv`` schema of skypilot-org/skypilot-catalog (``catalogs/v8/<cloud>/vms.csv``:
InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice,
Region, AvailabilityZone; column order differs between clouds, so columns are found by name)
and writes prices only, for accelerators the catalog knows by id, alias or SkyPilot name.
Unknown accelerator names are reported and never priced as the nearest chip.

The file's quirks are handled, not trusted:
- sentinel prices (700.0 in the GCP file, 0 or negative) are dropped and counted;
- GPU rows without an InstanceType (GCP) are the accelerator only: the host VM the catalog
  names for that GPU count (``shapes.machine_types``) is added from the same file and region,
  and without it the row is dropped (a GPU-only price is not an all-in price);
- TPU names count slices (``tpu-v5p-8``): the slice's chips come from the catalog's slices;
- a GPU count that is not one of the chip's real shapes (Azure lists its 8-GPU
  ND96isr_H100_v5 as 12 H100) is dropped rather than divided by;
- GCP lists some GPUs at a second, much lower price level in some regions (the v8 file prices the
  H100 GPU in us-central1 at $4.20076/h, in us-east4 at $9.79655/h, with the same $9.46006/h
  a3-highgpu-8g host in both): its GPU-to-host price ratio is far below the same GPU's ratio in
  the file's other regions (GCP scales GPU and VM prices by the same regional factor), so those
  on-demand rows are dropped (``OFF_LEVEL``) rather than imported as an on-demand price at half;
- an instance type the name index knows (``instance_chips``: p5.48xlarge, Standard_ND96isr_H100_v5)
  is priced as that accelerator and chip count, not as the file's AcceleratorName and count, and
  one it lists as hardware the catalog lacks (Standard_NC24ads_A100_v4: A100 80GB PCIe) is unknown;
- AWS Local Zone rows (``use1-atl2-az1``) are not the region's price and are dropped;
- a SpotPrice equal to Price is no spot price (no discount: the file copies on-demand) and is dropped;
- one price per (chip, kind, region, instance size): the cheapest zone.

Every price written is compared with the catalog's price for the same accelerator, cloud, kind,
count range and (where both have one) region: a gap beyond ``DRIFT_TOLERANCE`` is a drift, one
``path:line:col`` line per price, which the command prints as a warning or, strict, as an error.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import yaml

from advisor.catalog import Accelerator, Catalog, Price
from advisor.errors import InputError, Problem
from advisor.fmt import one_line
from advisor.yamlsrc import read_text

MAX_CSV_BYTES = 32 * 1024 * 1024  # SkyPilot's AWS vms.csv is ~4 MB
MAX_ROWS = 500_000
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
SENTINELS = (700.0,)
# A real list-price change between two catalog releases is rarely this large; a bigger gap more
# often means the wrong row (a GPU-only price, a second price level, a per-VM price not divided).
DRIFT_TOLERANCE = 0.30
# GCP GPU-only rows: a row whose GPU-to-host price ratio is below this share of the same GPU and
# count's highest ratio in the file is at a second price level, not on-demand. In the v8 file the
# H100:a3-highgpu-8g ratio is 8.285 in most regions (10.26 in europe-west4) and 2.77-3.55 in the
# regions at the lower level (us-central1, us-west1, us-west4, asia-northeast1, ...); A100 3.7-3.97
# against 1.8-2.0.
OFF_LEVEL = 0.6
# instance type -> (catalog id, chips per VM); ("", 0): hardware the catalog lacks; None: not known
InstanceChips = Callable[[str], "tuple[str, int] | None"]
REGION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# An AWS Local Zone or Wavelength zone id (use1-atl2-az1: Atlanta, listed under us-east-1): another
# location with its own prices and capacity, not the region's; a region's zone id is use1-az1.
LOCAL_ZONE = re.compile(r"[a-z]+\d+-[a-z]+\d+[a-z]?-az\d+")


@dataclass
class Row:
    line: int
    instance: str
    accelerator: str
    count: float | None
    price: float | None
    spot: float | None
    region: str
    zone: str
    cols: dict[str, int] = field(default_factory=dict)  # column (1-based character) of each field


@dataclass
class ImportResult:
    text: str
    priced: dict[str, int] = field(default_factory=dict)  # catalog id -> price rows written
    unknown: set[str] = field(default_factory=set)
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows
    corrected: dict[str, int] = field(default_factory=dict)  # instance type -> rows whose GPU count the name index fixed
    drift: list[Problem] = field(default_factory=list)  # prices beyond DRIFT_TOLERANCE of the catalog's, at their CSV row


def _number(raw: str, path: str, line: int, col: int, name: str) -> float | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InputError.single(path, line, col, f"{name}: {raw!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError.single(path, line, col, f"{name}: {raw!r} is not a finite number")
    return value


def _row(fields: list[str], index: dict[str, int], raw: str, path: str, line: int) -> Row:
    def get(name: str) -> str:
        i = index.get(name)
        return fields[i] if i is not None else ""

    def col(name: str) -> int:
        value = get(name).split("\n", 1)[0].split("\r", 1)[0]
        at = raw.find(value) if value.strip() else -1
        return at + 1 if at >= 0 else 1

    def num(name: str) -> float | None:
        return _number(get(name), path, line, col(name), name)

    region = get("Region").strip()
    if region and not REGION.fullmatch(region):
        raise InputError.single(
            path, line, col("Region"), f"Region: {one_line(region)[:80]!r} is not a region name (letters, digits, '-', '_', '.')"
        )
    return Row(line, get("InstanceType").strip(), get("AcceleratorName").strip(), num("AcceleratorCount"),
               num("Price"), num("SpotPrice"), region, get("AvailabilityZone").strip(),
               {name: col(name) for name in ("Price", "SpotPrice", "Region", "InstanceType", "AcceleratorName")})


def read_rows(path: str) -> list[Row]:
    """Every row of a SkyPilot ``vms.csv`` with positions; bad input -> ``path:line:col`` errors."""
    text = read_text(path, max_bytes=MAX_CSV_BYTES)
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError.single(path, 1, 1, "empty file: expected a SkyPilot vms.csv header") from None
    except csv.Error as exc:
        raise InputError.single(path, 1, 1, f"not a CSV file: {exc}") from None
    index = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED if c not in index]
    if missing:
        raise InputError.single(
            path, 1, 1, f"missing column(s) {', '.join(missing)}: expected SkyPilot's vms.csv header ({', '.join(REQUIRED)}, ...)"
        )
    rows: list[Row] = []
    problems: list[Problem] = []
    last = reader.line_num
    try:
        for fields in reader:
            # A record starts on the line after the previous one ended (a quoted cell may span lines).
            line, last = last + 1, reader.line_num
            if len(rows) >= MAX_ROWS:
                raise InputError.single(path, line, 1, f"more than {MAX_ROWS} rows")
            if not fields:
                continue
            if len(fields) != len(header):
                problems.append(Problem(path, line, 1, f"{len(fields)} fields, the header has {len(header)}"))
                continue

            try:
                rows.append(_row(fields, index, lines[line - 1] if line - 1 < len(lines) else "", path, line))
            except InputError as exc:
                problems.extend(exc.problems)
            if len(problems) >= 20:
                break
    except csv.Error as exc:
        problems.append(Problem(path, reader.line_num, 1, f"CSV error: {exc}"))
    if problems:
        raise InputError(problems)
    return rows


def _resolve(catalog: Catalog, name: str) -> tuple[Accelerator, int | None] | None:
    """The catalog entry a SkyPilot accelerator name means, and the chips of a TPU slice name."""
    key = name.strip().lower()
    for acc in catalog.accelerators.values():
        for sl in acc.shapes.slices or []:
            if key in (sl.accelerator_type.lower(), f"tpu-{sl.accelerator_type.lower()}"):
                return acc, sl.chips
    hit = catalog.resolve(key)
    if hit is not None:
        return catalog.accelerators[hit], None
    for acc in catalog.accelerators.values():
        sky = acc.deploy.skypilot
        if sky and "{" not in sky and sky.lower() == key:
            return acc, None
    return None


Found = dict[tuple[str, str, str, int], tuple[float, str, Row, str]]  # (id, kind, region, chips) -> (usd/chip-h, note, row, price column)


def _cheapest(found: Found, key: tuple[str, str, str, int], usd: float, how: str, row: Row, column: str) -> None:
    if key not in found or usd < found[key][0]:
        found[key] = (usd, how, row, column)


class Candidate(NamedTuple):
    """A file row as a price of one accelerator and chip count, before the second-level and region filters."""

    row: Row
    acc: Accelerator
    chips: int
    host: tuple[float | None, float | None]  # the host VM's (on-demand, spot) price; (0, 0) when the row is all-in
    where: str
    gpu_only: bool  # a GPU-only row priced with its host VM


def _collect(
    rows: list[Row], catalog: Catalog, result: ImportResult, *, regions: Iterable[str] = (), instance_chips: InstanceChips | None = None
) -> Found:
    """The cheapest all-in price per chip for each (chip, kind, region, chips) of the file. The
    second price level is found over the whole file; ``regions`` then keeps the regions asked for."""
    hosts = _host_prices(rows)
    candidates = [
        c for r in rows if r.accelerator and (c := _candidate(r, catalog, result, hosts, instance_chips)) is not None
    ]
    top = _top_ratios(candidates)
    wanted = set(regions)
    found: Found = {}
    for c in candidates:
        r, acc, chips, host, where, _ = c
        if wanted and r.region not in wanted:
            continue
        for kind, column, usd, extra in (("on-demand", "Price", r.price, host[0]), ("spot", "SpotPrice", r.spot, host[1])):
            total = _all_in(c, kind, usd, extra, top, result)
            if total is not None:
                _cheapest(found, (acc.id, kind, r.region, chips), total / chips,
                          f"{where}: ${total:.6g}/h / {chips} chips", r, column)
    return found


def _real(usd: float | None) -> float | None:
    return usd if usd is not None and usd > 0 and usd not in SENTINELS else None


def _host_prices(rows: list[Row]) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """(instance, region) -> the cheapest host VM's (on-demand, spot) price. A sentinel (GCP's
    a4-highgpu-8g is listed at 0.0) is no price, so its GPU row has no all-in price rather than the GPU's alone."""
    hosts: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for r in rows:
        price = _real(r.price)
        if not r.accelerator and r.instance and price is not None:
            old = hosts.get((r.instance, r.region))
            if old is None or (old[0] or 1e18) > price:
                hosts[(r.instance, r.region)] = (price, _real(r.spot))
    return hosts


def _drop(result: ImportResult, reason: str) -> None:
    result.dropped[reason] = result.dropped.get(reason, 0) + 1


def _candidate(
    r: Row,
    catalog: Catalog,
    result: ImportResult,
    hosts: dict[tuple[str, str], tuple[float | None, float | None]],
    instance_chips: InstanceChips | None,
) -> Candidate | None:
    """An accelerator row as a candidate price; None when it is dropped or names hardware the catalog lacks."""
    if LOCAL_ZONE.fullmatch(r.zone):
        _drop(result, "AWS Local Zone row (another location than the region)")
        return None
    known = instance_chips(r.instance) if instance_chips and r.instance else None
    where = f"{r.instance or r.accelerator} ({r.zone or r.region}, line {r.line})"
    if known is not None and not known[0]:  # e.g. Azure's NC A100 v4 (A100 80GB PCIe), never priced as the SXM part
        result.unknown.add(f"{r.accelerator} ({r.instance})")
        return None
    if known is not None and known[0] in catalog.accelerators:
        # the instance's real accelerator and GPUs (rules/names.yaml, the catalog's machine types),
        # not the file's AcceleratorName and count (Azure lists the 8-GPU ND96isr_H100_v5 as 12)
        acc, chips = catalog.accelerators[known[0]], known[1]
        if r.count != chips:
            where = f"{r.instance} ({r.zone or r.region}, line {r.line}; {chips} GPUs, the file says {r.count:g})"
            result.corrected[r.instance] = result.corrected.get(r.instance, 0) + 1
        return Candidate(r, acc, chips, (0.0, 0.0), where, False)
    hit = _resolve(catalog, r.accelerator)
    if hit is None:
        result.unknown.add(r.accelerator)
        return None
    acc, slice_chips = hit
    chips = slice_chips or (int(r.count) if r.count and r.count >= 1 and r.count == int(r.count) else 0)
    if chips <= 0:
        _drop(result, "no whole AcceleratorCount")
        return None
    if slice_chips is None and not acc.is_shape(chips):
        _drop(result, "AcceleratorCount not a shape the catalog knows for the chip")  # e.g. a GPU count no VM has
        return None
    if r.instance or slice_chips is not None:
        return Candidate(r, acc, chips, (0.0, 0.0), where, False)
    vm = (acc.shapes.machine_types or {}).get(chips)
    got = hosts.get((vm, r.region)) if vm else None
    if got is None:
        _drop(result, "GPU-only price without its host VM in the file")
        return None
    return Candidate(r, acc, chips, got, f"{r.accelerator} x {chips} + host {vm} ({r.zone or r.region}, line {r.line})", True)


def _ratio(r: Row, host: tuple[float | None, float | None]) -> float | None:
    """A GPU-only row's GPU-to-host price ratio."""
    return r.price / host[0] if r.price and host[0] and r.price > 0 and r.price not in SENTINELS else None


def _top_ratios(candidates: list[Candidate]) -> dict[tuple[str, str, int], float]:
    """The highest GPU-to-host price ratio of GPU-only on-demand rows per (chip, file name, chips)."""
    top: dict[tuple[str, str, int], float] = {}
    for r, acc, chips, host, _, gpu_only in candidates:
        x = _ratio(r, host) if gpu_only else None
        if x is not None:
            key = (acc.id, r.accelerator, chips)
            top[key] = max(top.get(key, 0.0), x)
    return top


def _all_in(
    c: Candidate, kind: str, usd: float | None, extra: float | None, top: dict[tuple[str, str, int], float], result: ImportResult
) -> float | None:
    """The candidate's all-in price of one kind (its own plus its host VM's); None, and counted as dropped where
    the file has one, when it is no usable price."""
    r = c.row
    if usd is None:
        return None
    if usd <= 0 or usd in SENTINELS:
        _drop(result, f"sentinel price {usd:g}")
        return None
    if kind == "spot" and usd == r.price:
        _drop(result, "SpotPrice equal to Price (no spot price)")
        return None
    x = _ratio(r, c.host) if c.gpu_only and kind == "on-demand" else None
    if x is not None and x < OFF_LEVEL * top[(c.acc.id, r.accelerator, c.chips)]:
        _drop(result, "GPU-only on-demand price at a second, lower price level (GPU-to-host ratio below "
                      f"{OFF_LEVEL:g} x the file's highest for that GPU)")
        return None
    if extra is None:
        _drop(result, "host VM without a spot price")
        return None
    return usd + extra


def _drift(acc: Accelerator, row: dict[str, object], origin: Row, column: str, path: str) -> Problem | None:
    """The row's gap from the catalog's price for the same cloud, kind, chips and (where both have
    one) region, when it is beyond DRIFT_TOLERANCE; the nearest catalog price is the reference."""
    usd, region = float(str(row["usd_per_chip_hour"])), row.get("region")
    lo, hi = int(str(row.get("min_count", 1))), int(str(row.get("max_count", 10**9)))
    refs = [
        p for p in acc.prices
        if p.cloud == row["cloud"] and p.kind == row["kind"] and (p.region is None or not region or p.region == region)
        and max(lo, p.min_count or 1) <= min(hi, p.max_count or 10**9)
    ]
    same = [p for p in refs if p.region == region]
    refs = same or refs
    if not refs:
        return None
    ref = min(refs, key=lambda p: abs(usd - p.usd_per_chip_hour) / p.usd_per_chip_hour)
    gap = (usd - ref.usd_per_chip_hour) / ref.usd_per_chip_hour
    if abs(gap) <= DRIFT_TOLERANCE:
        return None
    where = region or "any region"
    return Problem(
        path, origin.line, origin.cols.get(column, 1),
        f"price drift: {acc.id} {row['cloud']} {row['kind']} {where}: imported ${usd:.4f}/chip-h, the catalog has "
        f"${ref.usd_per_chip_hour:.4f} ({ref.region or 'any region'}, as of {ref.as_of}): {gap:+.0%}, beyond the "
        f"{DRIFT_TOLERANCE:.0%} tolerance; check this row is the all-in on-demand or spot price per chip",
    )


def _price_rows(
    found: Found, acc: Accelerator, cloud: str, source: str, as_of: str, path: str, problems: list[Problem], drift: list[Problem]
) -> list[dict[str, object]]:
    """The override's price rows for ``acc``, each validated as a catalog price: a bad one is a
    problem at the CSV row and column it came from."""
    from pydantic import ValidationError

    out: list[dict[str, object]] = []
    groups: dict[tuple[str, str], dict[int, tuple[float, str, Row, str]]] = {}
    for (aid, kind, region, chips), value in found.items():
        if aid == acc.id:
            groups.setdefault((kind, region), {})[chips] = value
    for (kind, region), sizes in sorted(groups.items()):
        counts = sorted(sizes)
        prices = [sizes[n][0] for n in counts]
        if acc.shapes.slices or max(prices) <= min(prices) * 1.005:
            # one rate for every size the file lists (TPU slices, or GPUs priced per GPU alike)
            n = counts[0]
            spans: list[tuple[int, int | None]] = [(n, None)]
            picked = {n: sizes[counts[prices.index(min(prices))]]}
        else:
            spans = [(n, None if n == counts[-1] else n) for n in counts]
            picked = sizes
        for lo, hi in spans:
            usd, note, origin, column = picked[lo]
            row: dict[str, object] = {"cloud": cloud, "kind": kind, "usd_per_chip_hour": round(usd, 6), "region": region}
            if lo > 1:
                row["min_count"] = lo
            if hi is not None:
                row["max_count"] = hi
            row |= {"source": [source], "as_of": as_of, "note": one_line(f"imported: {note}")}
            try:
                Price.model_validate(row)
            except ValidationError as exc:
                for err in exc.errors():
                    field_name = str(err["loc"][0]) if err["loc"] else ""
                    csv_col = {"usd_per_chip_hour": column, "region": "Region", "note": "InstanceType"}.get(field_name, column)
                    problems.append(
                        Problem(
                            path,
                            origin.line,
                            origin.cols.get(csv_col, 1),
                            f"{csv_col}: {err['msg']} (as the catalog's {field_name} for {acc.id})",
                        )
                    )
                continue
            out.append(row)
            gap = _drift(acc, row, origin, column, path)
            if gap is not None:
                drift.append(gap)
    return out


def build_override(
    path: str, catalog: Catalog, cloud: str, as_of: dt.date, *, regions: Iterable[str] = (), source_url: str | None = None,
    instance_chips: InstanceChips | None = None,
) -> ImportResult:
    """The override file's text for ``path``: prices only, for accelerators the catalog knows;
    ``result.drift`` lists the prices beyond DRIFT_TOLERANCE of the catalog's."""
    rows = read_rows(path)
    result = ImportResult("")
    found = _collect(rows, catalog, result, regions=regions, instance_chips=instance_chips)
    stamp = as_of.isoformat()
    source = f"S_IMPORT_{cloud.upper().replace('-', '_')}_{stamp.replace('-', '')}"
    ref: dict[str, object] = {"url": source_url} if source_url else {"path": path}
    ref |= {
        "retrieved": stamp,
        "note": one_line(f"SkyPilot catalog CSV {path} for {cloud}, imported by `advisor catalog import`; prices as of {stamp}"),
    }
    accelerators: list[dict[str, object]] = []
    problems: list[Problem] = []
    for acc in catalog.accelerators.values():
        rows_out = _price_rows(found, acc, cloud, source, stamp, path, problems, result.drift)
        if not rows_out:
            continue
        result.priced[acc.id] = len(rows_out)
        accelerators.append({"id": acc.id, "prices": rows_out})
    if problems:
        raise InputError(problems[:20])
    header = [
        f"Generated by `advisor catalog import` from {path} ({cloud}, as of {stamp}); prices only.",
        f"Use with --catalog. Unknown accelerator names skipped: {', '.join(sorted(result.unknown)) or 'none'}.",
    ]
    doc = {"schema_version": 1, "as_of": stamp, "sources": {source: ref}, "accelerators": accelerators}
    # The YAML library writes every value (a CSV cell may hold quotes, colons, newlines); the
    # comment lines are one line each, without control characters.
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096)
    result.text = "".join(f"# {one_line(h)}\n" for h in header) + body
    return result
