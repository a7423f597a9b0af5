"""Where the suite writes: the runner's scratch space, as handed over by the CI step."""

from pathlib import Path


class Scratch:
    """A per-test directory on the runner's scratch space, created on first use.

    Creating it lazily makes a broken scratch space fail inside the test body (a JUnit <failure>)
    rather than in fixture setup (an <error>), which is what a user's suite usually shows.
    """

    def __init__(self, path: Path) -> None:
        self._path = path

    def dir(self) -> Path:
        self._path.mkdir(parents=True, exist_ok=True)
        return self._path

    def __truediv__(self, name: str) -> Path:
        return self.dir() / name
