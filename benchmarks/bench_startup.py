"""Start-up cost: ``coop-tui --help`` against a bare ``import litellm``, in one run.

The CLI must not import litellm (or Textual) to print its help; the ratio shows it.
Each command runs several times in fresh interpreters and the median is kept.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from _table import report

RUNS = 5


def timed(cmd: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True,
                       env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    py = sys.executable
    bare = timed([py, "-c", "pass"])
    help_ = timed([py, "-m", "coop_tui.cli", "--help"])
    litellm = timed([py, "-c", "import litellm"])
    textual = timed([py, "-c", "import textual.app"])
    rows = [
        ("python -c pass", bare, bare / litellm),
        ("coop-tui --help", help_, help_ / litellm),
        ("import textual.app", textual, textual / litellm),
        ("import litellm", litellm, 1.0),
    ]
    report("startup", f"start-up time (median of {RUNS} runs)",
           ["command", "seconds", "ratio to import litellm"], rows,
           {"help_over_litellm": help_ / litellm})


if __name__ == "__main__":
    main()
