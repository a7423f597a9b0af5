"""The `Examples:` epilog every command's --help ends with."""

from __future__ import annotations


def examples(*lines: str) -> str:
    # \b stops click from re-flowing the block into one paragraph.
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
