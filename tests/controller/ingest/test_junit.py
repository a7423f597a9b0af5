from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from defusedxml import DTDForbidden

from controller.ingest.junit import MAX_DEPTH, MAX_TAG_BYTES, JUnitCase, JUnitError, parse_junit

FIXTURES = Path(__file__).parents[2] / "fixtures" / "junit"
ATTACKS = FIXTURES / "attacks"


def parse_fixture(name: str) -> list[JUnitCase]:
    return parse_junit((FIXTURES / name).read_bytes())


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        (
            "pytest_xunit2.xml",
            [
                ("tests.test_io::test_read[param-1]", "passed"),
                ("tests.test_io::test_read[param-2]", "failed"),
                ("tests.test_io::test_ünïcode[π-日本]", "passed"),
                ("tests.test_io.TestWriter::test_flush", "error"),
                ("tests.test_io.TestWriter::test_close", "passed"),
                ("tests.test_io::test_windows_paths", "skipped"),
                ("tests.test_io::test_known_bug", "skipped"),
                ("tests.test_broken", "error"),
            ],
        ),
        (
            "pytest_xunit1.xml",
            [
                ("tests/test_io.py::TestReader::test_read[utf-8]", "passed"),
                ("tests/test_io.py::TestReader::test_read[latin-1]", "failed"),
                ("tests/test_io.py::test_module_level", "passed"),
                ("tests/unit/test_cli.py::TestOuter::TestInner::test_help", "passed"),
                ("tests/base.py::tests.test_io.TestWriter::test_inherited", "passed"),
            ],
        ),
        (
            "jest_junit.xml",
            [
                ("addition positive numbers should add up", "passed"),
                ("addition negative numbers should add up", "failed"),
                ("addition floats should round", "skipped"),
                ("addition handles ½ and ¼", "passed"),
                ("Test suite failed to run::src/__tests__/broken.test.js", "error"),
                # U+203A is jest-junit's ancestorSeparator, meant here rather than ">".
                ("subtraction › positive numbers should subtract", "passed"),
            ],
        ),
        (
            "TEST-com.example.FooTest.xml",
            [
                ("com.example.FooTest::testParsesHeader", "passed"),
                ("com.example.FooTest::testRoundTrip", "failed"),
                ("com.example.FooTest::testNullInput", "error"),
                ("com.example.FooTest::testOnWindows", "skipped"),
                ("com.example.FooTest::testNetworkTimeout", "passed"),
                ("com.example.FooTest::testCacheWarmup", "passed"),
                ("com.example.FooTest::testDiskFull", "failed"),
            ],
        ),
        (
            "gradle_single_testsuite.xml",
            [
                ("com.example.BarTest::parsesEmptyFile", "passed"),
                ("com.example.BarTest::parsesHugeFile", "failed"),
                ("com.example.BarTest::parsesHeader()", "passed"),
                ("com.example.BarTest::parsesOnJava8", "skipped"),
            ],
        ),
        ("empty_testsuites.xml", []),
        ("pytest_no_tests.xml", []),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_ids_and_outcomes(fixture: str, expected: list[tuple[str, str]]) -> None:
    assert [(case.test_id, case.outcome) for case in parse_fixture(fixture)] == expected


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("pytest_xunit2.xml", [0.004, 0.012, 0.001, 0.3, 12.047, 0.0, 0.021, 0.0]),
        ("pytest_xunit1.xml", [0.003, 0.25, 0.001, None, 0.002]),  # time="n/a"
        ("jest_junit.xml", [0.004, 0.011, 0.0, 0.002, 0.0, 0.003]),
        ("TEST-com.example.FooTest.xml", [0.01, 0.002, 0.001, 0.0, 2.5, 0.3, 1002.5]),  # "1,002.5"
        ("gradle_single_testsuite.xml", [0.012, 0.5, 0.003, 0.0]),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_durations(fixture: str, expected: list[float | None]) -> None:
    assert [case.duration_s for case in parse_fixture(fixture)] == expected


@pytest.mark.parametrize(
    ("fixture", "test_id", "message"),
    [
        pytest.param(
            "pytest_xunit2.xml",
            "tests.test_io::test_read[param-2]",
            "AssertionError: assert b'x' == b'y'\n  At index 0 diff: b'x' != b'y'",
            id="pytest-failure-message-attribute",
        ),
        pytest.param(
            "pytest_xunit2.xml",
            "tests.test_io.TestWriter::test_flush",
            'failed on setup with "OSError: [Errno 28] No space left on device"',
            id="pytest-setup-error",
        ),
        pytest.param(
            "pytest_xunit2.xml", "tests.test_io::test_windows_paths", "requires Windows", id="pytest-skip"
        ),
        pytest.param(
            "pytest_xunit2.xml",
            "tests.test_io::test_known_bug",
            "issue #12: mtime resolution",
            id="pytest-xfail",
        ),
        pytest.param("pytest_xunit2.xml", "tests.test_broken", "collection failure", id="pytest-collection"),
        pytest.param("pytest_xunit2.xml", "tests.test_io::test_read[param-1]", None, id="passed-has-none"),
        pytest.param(
            "jest_junit.xml",
            "addition negative numbers should add up",
            "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: -3\nReceived: 3\n"
            "    at Object.toBe (/home/runner/work/app/app/__tests__/addition.test.js:9:20)\n"
            "    at Promise.then.completed "
            "(/home/runner/work/app/app/node_modules/jest-circus/build/utils.js:298:28)",
            id="jest-failure-text",
        ),
        pytest.param(
            "jest_junit.xml",
            "Test suite failed to run::src/__tests__/broken.test.js",
            "● Test suite failed to run\n\n"
            "    Cannot find module './missing' from 'src/__tests__/broken.test.js'",
            id="jest-suite-error-text",
        ),
        pytest.param("jest_junit.xml", "addition floats should round", None, id="jest-empty-skipped"),
        pytest.param(
            "TEST-com.example.FooTest.xml",
            "com.example.FooTest::testRoundTrip",
            "expected: <1> but was: <2>",
            id="surefire-failure",
        ),
        pytest.param(
            "TEST-com.example.FooTest.xml",
            "com.example.FooTest::testNullInput",
            'Cannot invoke "String.length()" because "s" is null',
            id="surefire-error",
        ),
        pytest.param(
            "TEST-com.example.FooTest.xml",
            "com.example.FooTest::testOnWindows",
            "Disabled on Linux",
            id="surefire-skipped",
        ),
        pytest.param(
            "TEST-com.example.FooTest.xml",
            "com.example.FooTest::testNetworkTimeout",
            None,
            id="surefire-flaky-passed",
        ),
        pytest.param(
            "TEST-com.example.FooTest.xml",
            "com.example.FooTest::testDiskFull",
            "No space left on device",
            id="surefire-failure-not-rerun",
        ),
    ],
)
def test_messages(fixture: str, test_id: str, message: str | None) -> None:
    by_id = {case.test_id: case for case in parse_fixture(fixture)}
    assert by_id[test_id].message == message


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        # +01:00 converted to UTC.
        ("pytest_xunit2.xml", datetime(2026, 11, 30, 9, 15, 2, 417533, tzinfo=UTC)),
        # Naive timestamps are read as UTC.
        ("pytest_xunit1.xml", datetime(2026, 11, 30, 9, 15, 2, 417533, tzinfo=UTC)),
        ("gradle_single_testsuite.xml", datetime(2026, 11, 30, 9, 50, 11, tzinfo=UTC)),
        # Surefire writes no timestamp.
        ("TEST-com.example.FooTest.xml", None),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_suite_timestamp(fixture: str, expected: datetime | None) -> None:
    assert {case.time for case in parse_fixture(fixture)} == {expected}


def test_timestamp_per_suite() -> None:
    times = [case.time for case in parse_fixture("jest_junit.xml")]
    assert times == [datetime(2026, 11, 30, 9, 42, 28, tzinfo=UTC)] * 4 + [
        datetime(2026, 11, 30, 9, 42, 29, tzinfo=UTC),
        datetime(2026, 11, 30, 9, 42, 28, tzinfo=UTC),
    ]


def suite(*cases: str, timestamp: str | None = None) -> bytes:
    stamp = f' timestamp="{timestamp}"' if timestamp is not None else ""
    return f'<testsuites><testsuite name="s"{stamp}>{"".join(cases)}</testsuite></testsuites>'.encode()


@pytest.mark.parametrize(
    ("attributes", "test_id"),
    [
        ('classname="tests.test_io" name="test_x"', "tests.test_io::test_x"),
        ('classname="" name="test_x"', "test_x"),
        ('name="test_x"', "test_x"),
        ('classname="same name" name="same name"', "same name"),
        ('classname="tests.test_io" name="test_x" file="tests/test_io.py"', "tests/test_io.py::test_x"),
        (
            'classname="tests.test_io.TestX" name="test_x[a-b]" file="tests/test_io.py"',
            "tests/test_io.py::TestX::test_x[a-b]",
        ),
        (
            'classname="tests.test_io.TestX" name="test_x" file="tests\\test_io.py"',
            "tests/test_io.py::TestX::test_x",
        ),
        (
            'classname="py311.tests.test_io.TestX" name="test_x" file="tests/test_io.py"',
            "tests/test_io.py::py311.tests.test_io.TestX::test_x",
        ),
        ('classname="" name="test_x" file="tests/test_io.py"', "tests/test_io.py::test_x"),
        (
            'classname="adds up" name="adds up" file="__tests__/addition.test.js"',
            "__tests__/addition.test.js::adds up",
        ),
        ('classname="T" name="ünï &amp; &lt;日本&gt;"', "T::ünï & <日本>"),
    ],
    ids=[
        "classname",
        "empty-classname",
        "no-classname",
        "classname-equals-name",
        "xunit1-module-level",
        "xunit1-class",
        "xunit1-windows-path",
        "xunit1-junit-prefix",
        "xunit1-no-classname",
        "jest-with-file",
        "escapes-and-non-ascii",
    ],
)
def test_test_id_rules(attributes: str, test_id: str) -> None:
    [case] = parse_junit(suite(f"<testcase {attributes}/>"))
    assert case.test_id == test_id


@pytest.mark.parametrize(
    ("children", "outcome", "message"),
    [
        ("", "passed", None),
        ("<system-out>hello</system-out><system-err>warn</system-err>", "passed", None),
        ('<failure message="f"/>', "failed", "f"),
        ('<error message="e"/>', "error", "e"),
        ('<skipped message="s"/>', "skipped", "s"),
        ('<failure message="f"/><error message="e"/>', "error", "e"),
        ('<error message="e"/><failure message="f"/>', "error", "e"),
        ('<skipped message="s"/><failure message="f"/>', "failed", "f"),
        ('<flakyFailure message="x"><stackTrace>t</stackTrace></flakyFailure>', "passed", None),
        ('<flakyError message="x"><stackTrace>t</stackTrace></flakyError>', "passed", None),
        ('<failure message="f"/><rerunFailure message="r"><stackTrace/></rerunFailure>', "failed", "f"),
        ('<rerunFailure message="r"><stackTrace/></rerunFailure>', "failed", "r"),
        ('<error message="e"/><rerunError message="r"><stackTrace/></rerunError>', "error", "e"),
        ("<failure/>", "failed", None),
        ('<failure message="  ">  \n  trace line\n  </failure>', "failed", "trace line"),
        ("<failure><![CDATA[<b>not markup</b>]]></failure>", "failed", "<b>not markup</b>"),
        ("<failure/><failure>second</failure>", "failed", "second"),
        # Only direct children count: a <failure> inside <system-out> is output, not a result.
        ("<system-out><failure>looks like one</failure></system-out>", "passed", None),
    ],
    ids=[
        "none",
        "output-only",
        "failure",
        "error",
        "skipped",
        "failure-then-error",
        "error-then-failure",
        "skipped-and-failure",
        "flaky-failure",
        "flaky-error",
        "rerun-failure-with-failure",
        "rerun-failure-alone",
        "rerun-error-with-error",
        "empty-failure",
        "blank-message-uses-text",
        "cdata",
        "first-non-empty-message",
        "nested-not-direct",
    ],
)
def test_outcome_rules(children: str, outcome: str, message: str | None) -> None:
    [case] = parse_junit(suite(f'<testcase classname="c" name="t">{children}</testcase>'))
    assert (case.outcome, case.message) == (outcome, message)


def test_message_attribute_and_text_are_clipped_to_4000_chars() -> None:
    long = "x" * 5000
    cases = parse_junit(
        suite(
            f'<testcase name="attr"><failure message="{long}"/></testcase>',
            f'<testcase name="text"><failure>{"  " * 3000}{long}</failure></testcase>',
        )
    )
    assert [case.message for case in cases] == ["x" * 4000, "x" * 4000]


@pytest.mark.parametrize(
    ("raw", "duration"),
    [
        ("0.5", 0.5),
        ("12", 12.0),
        (" 1.25 ", 1.25),
        ("1,234.5", 1234.5),
        ("1,234,567", 1234567.0),
        ("0,5", None),  # a decimal comma, not a thousands separator
        ("1,23", None),
        ("", None),
        ("n/a", None),
        ("-1", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_duration_parsing(raw: str, duration: float | None) -> None:
    [case] = parse_junit(suite(f'<testcase name="t" time="{raw}"/>'))
    assert case.duration_s == duration


def test_missing_time_is_none() -> None:
    [case] = parse_junit(suite('<testcase name="t"/>'))
    assert case.duration_s is None


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2026-11-30T09:42:28", datetime(2026, 11, 30, 9, 42, 28, tzinfo=UTC)),
        ("2026-11-30T09:42:28Z", datetime(2026, 11, 30, 9, 42, 28, tzinfo=UTC)),
        ("2026-11-30T10:42:28.5+01:00", datetime(2026, 11, 30, 9, 42, 28, 500000, tzinfo=UTC)),
        ("yesterday", None),
        ("", None),
    ],
)
def test_timestamp_parsing(timestamp: str, expected: datetime | None) -> None:
    [case] = parse_junit(suite('<testcase name="t"/>', timestamp=timestamp))
    assert case.time == expected


def test_nested_suites_inherit_the_nearest_timestamp() -> None:
    data = (
        b'<testsuites><testsuite name="outer" timestamp="2026-01-01T00:00:00">'
        b'<testcase name="a"/>'
        b'<testsuite name="inner"><testcase name="b"/>'
        b'<testsuite name="innermost" timestamp="2026-02-01T00:00:00"><testcase name="c"/></testsuite>'
        b"</testsuite></testsuite></testsuites>"
    )
    cases = parse_junit(data)
    assert [(case.test_id, case.time) for case in cases] == [
        ("a", datetime(2026, 1, 1, tzinfo=UTC)),
        ("b", datetime(2026, 1, 1, tzinfo=UTC)),
        ("c", datetime(2026, 2, 1, tzinfo=UTC)),
    ]


def test_testcases_outside_suites_are_ignored() -> None:
    data = suite('<properties><testcase name="not-a-test"/></properties><testcase name="real"/>')
    assert [case.test_id for case in parse_junit(data)] == ["real"]


def test_default_namespace_is_tolerated() -> None:
    data = b'<testsuite xmlns="urn:example:junit" name="s"><testcase classname="c" name="t"/></testsuite>'
    assert [case.test_id for case in parse_junit(data)] == ["c::t"]


def test_utf16_document() -> None:
    data = '<?xml version="1.0" encoding="UTF-16"?><testsuite><testcase name="日本"/></testsuite>'
    assert [case.test_id for case in parse_junit(data.encode("utf-16"))] == ["日本"]


# --- refused documents -------------------------------------------------------------------------

ENTITIES_REFUSED = "XML entities are not allowed (DTD or ENTITY declaration found)"


def refusal(data: bytes, **limits: int) -> str:
    with pytest.raises(JUnitError) as excinfo:
        parse_junit(data, **limits)
    return str(excinfo.value)


@pytest.mark.parametrize(
    "fixture",
    [
        "billion_laughs.xml",
        "quadratic_blowup.xml",
        "external_entity_file.xml",
        "external_entity_http.xml",
        "external_parameter_entity.xml",
        "dtd.xml",
    ],
)
def test_dtd_and_entity_attacks_are_refused_before_expansion(fixture: str) -> None:
    with pytest.raises(JUnitError) as excinfo:
        parse_junit((ATTACKS / fixture).read_bytes())
    assert str(excinfo.value) == ENTITIES_REFUSED
    # Refused at the DOCTYPE itself: no entity was declared, let alone expanded or fetched.
    assert isinstance(excinfo.value.__cause__, DTDForbidden)


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("mismatched_tag.xml", "XML is not well-formed: line 3, column 58: mismatched tag"),
        ("truncated.xml", "XML is not well-formed: line 35, column 5: unclosed token"),
        (
            "html_error_page.xml",
            "not a JUnit report: root element is <html>, expected <testsuites> or <testsuite>",
        ),
    ],
)
def test_malformed_and_foreign_documents(fixture: str, message: str) -> None:
    assert refusal((ATTACKS / fixture).read_bytes()) == message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "document is empty"),
        (b"  \n\t", "document is empty"),
        (b"\x89PNG\r\n\x1a\n", "XML is not well-formed: line 1, column 1: not well-formed (invalid token)"),
        (b"<testsuites>&xxe;</testsuites>", "XML is not well-formed: line 1, column 13: undefined entity"),
        (
            b"<testsuite/><testsuite/>",
            "XML is not well-formed: line 1, column 13: junk after document element",
        ),
        (b'{"test_id": "t"}', "XML is not well-formed: line 1, column 1: not well-formed (invalid token)"),
        (
            b"<testcase name='t'/>",
            "not a JUnit report: root element is <testcase>, expected <testsuites> or <testsuite>",
        ),
        (b"<testsuite><testcase classname='c'/></testsuite>", "<testcase> on line 1 has no name attribute"),
    ],
    ids=["empty", "blank", "binary", "undefined-entity", "two-roots", "json", "testcase-root", "no-name"],
)
def test_refused_inline(data: bytes, message: str) -> None:
    assert refusal(data) == message


def test_oversize_is_refused_before_parsing() -> None:
    data = suite('<testcase name="t"/>')
    assert len(parse_junit(data, max_bytes=len(data))) == 1
    assert refusal(data, max_bytes=len(data) - 1) == f"document exceeds {len(data) - 1} bytes"
    # The size check comes first: not even the DOCTYPE of an oversize bomb is looked at.
    bomb = (ATTACKS / "billion_laughs.xml").read_bytes()
    assert refusal(bomb, max_bytes=100) == "document exceeds 100 bytes"


def test_default_size_limit_is_16_mib() -> None:
    data = b"<testsuites>" + b" " * (16 * 1024 * 1024) + b"</testsuites>"
    assert refusal(data) == "document exceeds 16777216 bytes"


def test_too_many_cases() -> None:
    data = suite(*(f'<testcase name="t{i}"/>' for i in range(3)))
    assert len(parse_junit(data, max_cases=3)) == 3
    assert refusal(data, max_cases=2) == "document has more than 2 test cases"


def test_nesting_is_refused_past_the_limit() -> None:
    def nested(depth: int) -> bytes:
        return b"<testsuites>" + b"<x>" * (depth - 1) + b"</x>" * (depth - 1) + b"</testsuites>"

    assert parse_junit(nested(MAX_DEPTH)) == []
    assert refusal(nested(MAX_DEPTH + 1)) == f"elements nest deeper than {MAX_DEPTH} levels (line 1)"
    # Far past it, the parser stops at the limit rather than recursing or growing a stack.
    assert refusal(nested(200_000)) == f"elements nest deeper than {MAX_DEPTH} levels (line 1)"


def test_long_start_tags_are_refused_before_parsing() -> None:
    def case(attributes: str) -> bytes:
        return suite(f'<testcase name="t" {attributes}/>')

    # The tag is '<testcase name="t" ' + attributes + '/>': MAX_TAG_BYTES after its "<" is the most.
    fits = MAX_TAG_BYTES - len('testcase name="t" classname=""/')
    assert parse_junit(case(f'classname="{"c" * fits}"'))[0].test_id.endswith("::t")
    message = f"the start tag of <testcase> on line 1 is longer than {MAX_TAG_BYTES} bytes (a huge attribute, or too many)"
    assert refusal(case(f'classname="{"c" * (fits + 1)}"')) == message
    many = " ".join(f'a{i}=""' for i in range(MAX_TAG_BYTES // 8))
    assert refusal(case(many)) == message
    # Text, CDATA and comments may be long: only tags are measured.
    long_text = suite(
        f'<testcase name="t"><failure><![CDATA[{"x" * MAX_TAG_BYTES}]]></failure></testcase>',
        f"<!-- {'y' * MAX_TAG_BYTES} -->",
        f'<testcase name="u"><system-out>{"z" * MAX_TAG_BYTES}</system-out></testcase>',
    )
    assert [c.outcome for c in parse_junit(long_text)] == ["failed", "passed"]
