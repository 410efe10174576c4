"""What fraction of a chip's peak a stack reaches: training MFU and decode bandwidth utilisation per
family and stack (rows of rules/estimator.yaml), and the software caveats an estimate carries."""

from __future__ import annotations

from advisor import software
from advisor.catalog import Accelerator
from advisor.constants import Constants, Range
from advisor.estimate.result import Estimate
from advisor.families import family
from advisor.models import Profile


def stack_for(profile: Profile, device: str) -> str:
    """The software stack whose utilisation applies on ``device``."""
    return family(device).stack(profile.software.framework, profile.software.cuda_libraries)


def decode_mbu(c: Constants, acc: Accelerator) -> Range:
    """The fraction of HBM bandwidth a memory-bound pass reaches on this family (the registry's row)."""
    return c.estimator.inference.decode_utilisation(family(acc.device).decode_utilisation)


def software_notes(e: Estimate, sw: software.Resolution) -> None:
    """Caveats into the assumptions; a blocked library makes the configuration infeasible, with the fix."""
    if sw.notes:
        e.assumptions["software"] = list(sw.notes)
    if sw.blocked is not None:
        e.assumptions["software_blocked"] = sw.blocked
        why = f"{sw.blocked['reason'].rstrip('.')}; fix: {sw.blocked['fix']}"
        e.why_not = f"{e.why_not}; {why}" if e.why_not else why


def training_mfu(c: Constants, acc: Accelerator, stack: str) -> Range:
    rows = c.estimator.training_mfu
    for row in rows:
        if row.device == acc.device and row.stack == stack and row.applies_to(acc.id):
            return row
    for row in rows:
        if row.device == acc.device and row.stack == stack and row.accelerator is None:
            return row
    for row in rows:  # the family's first row is its default
        if row.device == acc.device and row.accelerator is None:
            return row
    return rows[0]
