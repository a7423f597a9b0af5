import hashlib
import os

from scratchspace import Scratch


def test_write_and_read_text(scratch: Scratch) -> None:
    target = scratch / "hello.txt"
    target.write_text("hello from the build\n", encoding="utf-8")
    assert target.read_text(encoding="utf-8") == "hello from the build\n"


def test_append_lines(scratch: Scratch) -> None:
    log = scratch / "log.txt"
    for i in range(50):
        with log.open("a", encoding="utf-8") as f:
            f.write(f"line {i}\n")
    assert len(log.read_text(encoding="utf-8").splitlines()) == 50


def test_atomic_rename(scratch: Scratch) -> None:
    tmp = scratch / "config.json.tmp"
    tmp.write_text('{"ok": true}', encoding="utf-8")
    os.replace(tmp, scratch / "config.json")
    assert not tmp.exists()
    assert (scratch / "config.json").read_text(encoding="utf-8") == '{"ok": true}'


def test_binary_roundtrip(scratch: Scratch) -> None:
    payload = os.urandom(64 * 1024)
    blob = scratch / "blob.bin"
    blob.write_bytes(payload)
    assert hashlib.sha256(blob.read_bytes()).digest() == hashlib.sha256(payload).digest()
