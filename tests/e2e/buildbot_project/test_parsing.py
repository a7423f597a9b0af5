import json
import zlib


def test_json_roundtrip() -> None:
    doc = {"runner": "w1", "tests": list(range(10)), "nested": {"ok": True}}
    assert json.loads(json.dumps(doc)) == doc


def test_compress_roundtrip() -> None:
    data = b"runnerctl " * 1000
    packed = zlib.compress(data)
    assert len(packed) < len(data) // 10
    assert zlib.decompress(packed) == data
