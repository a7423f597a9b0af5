"""kubectl-style label selectors over runner fields and labels: `pool=linux,health!=healthy,gpu`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.api import RunnerView

_TERM = re.compile(r"^\s*([A-Za-z0-9_.\-/]+)\s*(==|=|!=)?\s*([^,]*?)\s*$")
_FIELDS = ("id", "name", "machine", "pool", "image", "shard", "provider")
# What parse_selector accepts, for the OpenAPI description: each comma-separated term, once stripped,
# is empty or starts with a key character; and no NUL, which the API refuses in any URL.
SELECTOR_PATTERN = r"^(\s*([A-Za-z0-9_.\-/][^,\u0000]*)?)(,\s*([A-Za-z0-9_.\-/][^,\u0000]*)?)*$"


@dataclass(frozen=True)
class Term:
    key: str
    op: str  # "=", "!=" or "exists"
    value: str


@dataclass(frozen=True)
class Selector:
    terms: tuple[Term, ...] = ()

    def matches(self, runner: RunnerView) -> bool:
        return all(_match(term, runner) for term in self.terms)


def parse_selector(text: str) -> Selector:
    terms = []
    for raw in filter(None, (part.strip() for part in text.split(","))):
        found = _TERM.match(raw)
        if not found:
            raise ValueError(f"cannot read '{raw}': use key=value, key!=value or key")
        key, op, value = found.groups()
        terms.append(Term(key, "exists" if op is None else ("!=" if op == "!=" else "="), value))
    return Selector(tuple(terms))


def _values(key: str, runner: RunnerView) -> set[str]:
    ident = runner.identity
    if key in _FIELDS:
        value = getattr(ident, key)
        return set() if value is None else {str(value)}
    if key == "health":
        return {runner.health.health}
    if key == "ephemeral":
        return {str(ident.ephemeral).lower()}
    found = set()
    for label in ident.labels:
        name, sep, value = label.partition("=")
        if name == key:
            found.add(value if sep else "")
    return found


def _match(term: Term, runner: RunnerView) -> bool:
    values = _values(term.key, runner)
    if term.op == "exists":
        return bool(values) or term.key in runner.identity.labels
    if term.op == "=":
        return term.value in values or (term.value == "" and term.key in runner.identity.labels)
    return term.value not in values


# The fields a selector may name on each listed resource other than runners (which have free-form labels).
RecordFields = dict[str, Callable[[dict[str, Any]], Any]]


def field_of(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda record: record.get(key)


def record_selector_pattern(fields: RecordFields) -> str:
    """What select_records accepts over these fields, for the OpenAPI description: each term, once
    stripped, is empty or a known key ended by a character that cannot continue a key; no NUL."""
    keys = "|".join(re.escape(key) for key in sorted(fields))
    term = rf"\s*(({keys})([^A-Za-z0-9_.\-/,\u0000][^,\u0000]*)?)?"
    return rf"^{term}(,{term})*$"


def select_records(
    text: str | None, items: list[dict[str, Any]], fields: RecordFields
) -> list[dict[str, Any]]:
    """Filter records by a selector over named fields; a list-valued field matches any of its values.

    Unlike runner labels these fields are fixed, so an unknown key is a typo: say so instead of
    silently matching nothing.
    """
    selector = parse_selector(text or "")
    unknown = sorted({term.key for term in selector.terms} - set(fields))
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)}; use one of: {', '.join(sorted(fields))}")
    return [
        item for item in items if all(_match_record(term, fields[term.key](item)) for term in selector.terms)
    ]


def _match_record(term: Term, value: Any) -> bool:
    values = {str(v) for v in value} if isinstance(value, list | tuple | set) else set()
    if not isinstance(value, list | tuple | set) and value not in (None, ""):
        values = {str(value)}
    if term.op == "exists":
        return bool(values)
    if term.op == "=":
        return term.value in values
    return term.value not in values
