"""Parse untrusted JUnit XML reports (pytest, jest-junit, Maven Surefire, Gradle…) into test cases.

The document is streamed through defusedxml's expat parser into a small state machine, so no tree is
built: besides the cases returned, memory holds the open elements' roles and one test case, whatever
the upload contains. Elements nested deeper than MAX_DEPTH and start tags longer than MAX_TAG_BYTES
(a huge attribute, or very many) are refused.
DTDs, and with them every entity, are refused before expat reads a declaration.

Structure: the root is ``<testsuites>`` or ``<testsuite>``; ``<testsuite>`` may nest to any depth and
``<testcase>`` counts only directly inside one of them. A case's ``time`` is the ``timestamp`` of its
nearest enclosing ``<testsuite>`` that has a valid one (naive timestamps are taken as UTC).

Outcome, from the direct children of ``<testcase>``: ``<error>`` (or Surefire ``<rerunError>``) →
``error``; else ``<failure>`` (or ``<rerunFailure>``) → ``failed``; else ``<skipped>`` → ``skipped``
(pytest reports xfail this way); else ``passed``. Surefire's ``<flakyFailure>``/``<flakyError>`` mean
the test passed on a rerun and are ignored.

Test id, as close to a pytest node id as the attributes allow:

* ``file`` present (pytest ``xunit1``): the file path with ``\\`` turned into ``/``, then ``::`` and the
  classname's parts after the module (``tests.test_io.TestX`` with ``tests/test_io.py`` →
  ``tests/test_io.py::TestX::test_read``), then ``::name``. When the classname does not start with the
  file's module (an inherited test, a ``--junit-prefix``, a JavaScript file), the whole classname is
  kept instead: ``{file}::{classname}::{name}``, or ``{file}::{name}`` when it is empty or equals name.
* otherwise ``{classname}::{name}``, or just ``{name}`` when the classname is empty or equals the name
  (jest-junit's default).

Names are kept exactly, parametrize brackets and non-ASCII included.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser, ParseError

from common.results import MAX_MESSAGE_CHARS, Outcome

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_CASES = 200_000
# Real reports nest suites a handful of levels deep and keep a start tag to a test name and a message;
# past these a document is hostile or broken, and saying so beats storing what it happens to contain.
MAX_DEPTH = 256
MAX_TAG_BYTES = 1024 * 1024
# A start tag (not a comment, CDATA or declaration) running on for MAX_TAG_BYTES. "<" and ">" cannot
# occur inside a well-formed tag, and no byte is in two runs between them, so the scan is linear.
_LONG_START_TAG = re.compile(rb"<[^!?/<>][^<>]{%d}" % MAX_TAG_BYTES)

_SUITE_TAGS = frozenset({"testsuites", "testsuite"})
# Most severe first: a case carrying several of these reports the first present.
_OUTCOME_TAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (Outcome.error.value, ("error", "rerunError")),
    (Outcome.failed.value, ("failure", "rerunFailure")),
    (Outcome.skipped.value, ("skipped",)),
)
_RESULT_TAGS = frozenset(tag for _, tags in _OUTCOME_TAGS for tag in tags)
# Surefire's SUREFIRE_TIME type allows "1,234.5"; a lone comma ("0,5") is a locale decimal, not this.
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d*)?")


class JUnitError(ValueError):
    """The upload is not a JUnit report we accept; the message says why, for the HTTP 400 body."""


@dataclass(frozen=True)
class JUnitCase:
    """One ``<testcase>``.

    ``message`` is the deciding element's ``message`` attribute, else its text, stripped and clipped to
    4000 characters (None for passed); ``time`` is the suite's timestamp in UTC, None when absent.
    """

    test_id: str
    outcome: str  # "passed" | "failed" | "error" | "skipped"
    duration_s: float | None  # None when missing, unreadable, negative or not finite
    message: str | None
    time: datetime | None


def parse_junit(
    data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_cases: int = DEFAULT_MAX_CASES
) -> list[JUnitCase]:
    """Return the test cases of a JUnit XML document, in document order; raise JUnitError if refused."""
    if len(data) > max_bytes:
        raise JUnitError(f"document exceeds {max_bytes} bytes")
    if not data.strip():
        raise JUnitError("document is empty")
    _refuse_long_start_tags(data)
    collector = _Collector(max_cases)
    parser = DefusedXMLParser(target=collector, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    expat = parser.parser
    collector.line = lambda: int(expat.CurrentLineNumber)
    try:
        parser.feed(data)
        parser.close()
    except (DTDForbidden, EntitiesForbidden) as err:
        raise JUnitError("XML entities are not allowed (DTD or ENTITY declaration found)") from err
    except ExternalReferenceForbidden as err:
        raise JUnitError("XML external entities are not allowed (external reference found)") from err
    except ParseError as err:
        line, column = err.position
        reason = str(err).rsplit(": line ", 1)[0]
        # expat counts columns from 0; editors and humans count from 1.
        raise JUnitError(f"XML is not well-formed: line {line}, column {column + 1}: {reason}") from err
    except JUnitError:
        raise
    except (LookupError, ValueError) as err:
        # expat cannot decode what the declaration names (UTF-7, UTF-32, Shift-JIS) or does not know it:
        # LookupError "unknown encoding", ValueError "multi-byte encodings are not supported".
        raise JUnitError(f"the XML declaration's encoding cannot be read ({err}): send UTF-8") from err
    return collector.cases


def _refuse_long_start_tags(data: bytes) -> None:
    """expat hands over a start tag's attributes all at once, as a dict ElementTree builds: one 4 MiB
    tag of empty attributes costs some 100 MiB. So an overlong tag is refused before parsing."""
    found = _LONG_START_TAG.search(data)
    if found is None:
        return
    name = re.match(rb"<([^\s/>]{1,100})", data[found.start() : found.start() + 102])
    element = name.group(1).decode("utf-8", "replace") if name else "?"
    line = data.count(b"\n", 0, found.start()) + 1
    raise JUnitError(
        f"the start tag of <{element}> on line {line} is longer than {MAX_TAG_BYTES} bytes "
        "(a huge attribute, or too many)"
    )


@dataclass
class _OpenCase:
    attrib: dict[str, str]
    # Per result tag present, the first non-empty message among its elements, else None.
    results: dict[str, str | None] = field(default_factory=dict)


@dataclass
class _OpenResult:
    tag: str
    message: str | None
    text: list[str] = field(default_factory=list)
    text_len: int = 0


# Role of each open element. Only <testsuite>s also push onto the timestamp stack.
_SUITE, _CASE, _RESULT, _OTHER = "suite", "case", "result", "other"


class _Collector:
    """An ElementTree parser target: receives start/data/end events and keeps only what it needs."""

    def __init__(self, max_cases: int) -> None:
        self.cases: list[JUnitCase] = []
        self.line: Callable[[], int] = lambda: 0
        self._max_cases = max_cases
        self._roles: list[str] = []
        self._times: list[datetime | None] = []
        self._case: _OpenCase | None = None
        self._result: _OpenResult | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        roles = self._roles
        if len(roles) >= MAX_DEPTH:
            raise JUnitError(f"elements nest deeper than {MAX_DEPTH} levels (line {self.line()})")
        parent = roles[-1] if roles else None
        if parent == _OTHER:
            # Output, properties and anything unknown: nothing below them matters.
            roles.append(_OTHER)
            return
        name = _local(tag)
        if parent is None:
            if name not in _SUITE_TAGS:
                raise JUnitError(
                    f"not a JUnit report: root element is <{name}>, expected <testsuites> or <testsuite>"
                )
            roles.append(_SUITE)
            self._times.append(_parse_timestamp(attrib.get("timestamp")))
        elif parent == _SUITE and name == "testsuite":
            roles.append(_SUITE)
            self._times.append(_parse_timestamp(attrib.get("timestamp")) or self._times[-1])
        elif parent == _SUITE and name == "testcase":
            if len(self.cases) >= self._max_cases:
                raise JUnitError(f"document has more than {self._max_cases} test cases")
            if not attrib.get("name"):
                raise JUnitError(f"<testcase> on line {self.line()} has no name attribute")
            roles.append(_CASE)
            self._case = _OpenCase(attrib)
        elif parent == _CASE and name in _RESULT_TAGS:
            roles.append(_RESULT)
            self._result = _OpenResult(name, _clip(attrib.get("message")))
        else:
            roles.append(_OTHER)

    def data(self, text: str) -> None:
        result = self._result
        if result is None or self._roles[-1] != _RESULT or result.text_len >= MAX_MESSAGE_CHARS:
            return
        if not result.text:
            # Skip leading whitespace here so that indentation cannot use up the message budget.
            text = text.lstrip()
            if not text:
                return
        result.text.append(text)
        result.text_len += len(text)

    def end(self, tag: str) -> None:
        role = self._roles.pop()
        if role == _SUITE:
            self._times.pop()
        elif role == _RESULT and self._result is not None and self._case is not None:
            result, self._result = self._result, None
            message = result.message or _clip("".join(result.text))
            if self._case.results.get(result.tag) is None:
                self._case.results[result.tag] = message
        elif role == _CASE and self._case is not None:
            case, self._case = self._case, None
            self.cases.append(_build_case(case, self._times[-1]))

    def close(self) -> None:
        return None


def _build_case(case: _OpenCase, time: datetime | None) -> JUnitCase:
    attrib = case.attrib
    outcome, message = Outcome.passed.value, None
    for candidate, tags in _OUTCOME_TAGS:
        present = [tag for tag in tags if tag in case.results]
        if present:
            outcome = candidate
            message = next((m for m in (case.results[tag] for tag in present) if m), None)
            break
    return JUnitCase(
        test_id=_test_id(attrib["name"], attrib.get("classname", ""), attrib.get("file")),
        outcome=outcome,
        duration_s=_parse_duration(attrib.get("time")),
        message=message,
        time=time,
    )


def _test_id(name: str, classname: str, file: str | None) -> str:
    if not file:
        return name if classname in ("", name) else f"{classname}::{name}"
    path = file.replace("\\", "/")
    # pytest builds classname from the node id: path with "/" → "." and ".py" dropped, then the classes.
    module = re.sub(r"\.py$", "", path.replace("/", "."))
    if classname == module:
        return f"{path}::{name}"
    if classname.startswith(module + "."):
        classes = classname[len(module) + 1 :].replace(".", "::")
        return f"{path}::{classes}::{name}"
    return f"{path}::{name}" if classname in ("", name) else f"{path}::{classname}::{name}"


def _parse_duration(raw: str | None) -> float | None:
    if raw is None:
        return None
    text = raw.strip()
    if _GROUPED_NUMBER.fullmatch(text):
        text = text.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _parse_timestamp(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # Year 1 with a positive offset is year 0 in UTC: returned as written, for the record's time
        # bounds (common.timeutil.EventTime) to refuse with the field named.
        return value


def _clip(text: str | None) -> str | None:
    text = text.strip() if text else None
    return text[:MAX_MESSAGE_CHARS] if text else None


def _local(tag: str) -> str:
    # A default namespace arrives as "{uri}testsuite"; JUnit has no namespace, so drop any.
    return tag.rpartition("}")[2]
