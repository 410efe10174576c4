"""Load workload profiles from files: all problems of all files at once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.errors import InputError, Problem
from advisor.model_families import load_families
from advisor.models import Profile
from advisor.validation import did_you_mean, validate_document
from advisor.yamlsrc import MAX_BYTES, OUTSIDE, Document, linked_outside, load_file


@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile and the YAML document it came from (for positions)."""

    profile: Profile
    doc: Document

    @property
    def label(self) -> str:
        return self.doc.label

    @property
    def path(self) -> str:
        return self.doc.path

    def without_positions(self) -> LoadedProfile:
        """The profile, its file and label, without the YAML it was read from: what a batch keeps of
        a profile once it is judged (an infrastructure request links to it by name or ``match:``)."""
        d = self.doc
        return LoadedProfile(self.profile, Document(d.path, d.index, None, d.start))


def load_profiles(paths: Iterable[str], *, max_bytes: int = MAX_BYTES) -> list[LoadedProfile]:
    """Every document of every file, validated; raises one InputError with every problem."""
    loaded: list[LoadedProfile] = []
    problems: list[Problem] = []
    for path in paths:
        if linked_outside(path):  # never opened: a value of ~/.docker/config.json must not come back in a message
            problems.append(Problem(path, 1, 1, OUTSIDE))
            continue
        try:
            docs = load_file(path, max_bytes=max_bytes)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        try:
            loaded.extend(profiles_from_docs(path, docs))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return loaded


def profiles_from_docs(path: str, docs: list[Document]) -> list[LoadedProfile]:
    """The validated profiles of one parsed file; raises one InputError with every problem."""
    if not docs or all(d.data is None for d in docs):
        raise InputError([Problem(path, 1, 1, "empty file: expected a workload profile")])
    loaded: list[LoadedProfile] = []
    problems: list[Problem] = []
    for doc in docs:
        if doc.data is None and len(docs) > 1:
            continue  # a stray '---' at the end of a multi-document file
        try:
            profile = validate_document(doc, Profile, what="a workload profile")
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        family = profile.model.family
        known = [f.id for f in load_families().families]
        if family is not None and family not in known:
            problems.append(doc.problem(
                ("model", "family"),
                f"unknown model.family {family!r}{did_you_mean(family, known)} (known: {', '.join(known)})",
            ))
            continue
        loaded.append(LoadedProfile(profile, doc))
    if problems:
        raise InputError(problems)
    return loaded
