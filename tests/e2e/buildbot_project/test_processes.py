import subprocess
import sys
from pathlib import Path

from scratchspace import Scratch


def test_child_writes_file(scratch: Scratch) -> None:
    out = scratch / "child.txt"
    subprocess.run(
        [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('from child')", str(out)],
        check=True,
        timeout=30,
    )
    assert out.read_text() == "from child"


def test_child_in_scratch_cwd(scratch: Scratch) -> None:
    work = scratch.dir()
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getcwd())"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert Path(done.stdout.strip()) == work


def test_child_exit_code() -> None:
    done = subprocess.run([sys.executable, "-c", "raise SystemExit(3)"], timeout=30)
    assert done.returncode == 3
