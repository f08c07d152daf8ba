"""The README and docs/ stay true: links resolve, documented flags exist, examples run.

Documentation drifts silently when a flag is renamed or a page moves; these checks make
the drift a test failure. Command lines are read from fenced code blocks of README.md and
docs/*.md; flags are checked against each subcommand's ``--help`` built in-process from
``coop_tui.cli.build_parser`` (fast, no subprocess). The README's runnable commands are
run verbatim through the installed ``coop-tui`` in a temporary directory with its own
database, so a newcomer who copies them gets what the README promises.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from coop_tui.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
DOCUMENTS = [README, *PAGES]

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
SHELL_BREAKS = {"|", ">", ">>", "2>", "&&", "||", ";", "<"}
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
"""Fences whose lines are commands; other fences (screen captures, TOML) are not read."""


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def command_lines(text: str) -> list[str]:
    """The ``coop-tui ...`` lines of shell fences, continuation lines joined."""
    lines = []
    for language, body in fenced_blocks(text):
        if language not in SHELL_LANGUAGES:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            stripped = line.strip().removeprefix("$ ")
            first = stripped.split(" ", 1)[0]
            if first == "coop-tui" or first.endswith("/coop-tui"):
                lines.append(stripped)
    return lines


def command_tokens(line: str) -> list[str]:
    """The words of the coop-tui command itself: comments, pipes and redirects cut off."""
    tokens = shlex.split(line, comments=True)
    for i, token in enumerate(tokens):
        if token in SHELL_BREAKS:
            return tokens[:i]
    return tokens


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def split_command(
    tokens: list[str], parser: argparse.ArgumentParser
) -> tuple[str | None, list[str]]:
    """(subcommand or None for the top level, the tokens naming flags)."""
    commands = subparsers(parser)
    takes_value = {
        option
        for action in parser._actions
        if action.option_strings and action.nargs != 0
        for option in action.option_strings
    }
    i = 1
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-"):
            i += 2 if token.split("=", 1)[0] in takes_value and "=" not in token else 1
            continue
        if token in commands:
            return token, tokens[i + 1:]
        i += 1
    return None, tokens[1:]


def documented_commands() -> list[tuple[Path, str]]:
    return [(doc, line) for doc in DOCUMENTS for line in command_lines(doc.read_text())]


def test_commands_sit_in_shell_fences() -> None:
    """A command in an unlabelled fence would escape the checks below: label it bash."""
    commands = "|".join(subparsers(build_parser()))
    looks_like_command = re.compile(rf"^\s*(\$ )?coop-tui (-|({commands})\b)", re.MULTILINE)
    unlabelled = [
        f"{doc.relative_to(ROOT)}: {body.splitlines()[0]}"
        for doc in DOCUMENTS
        for language, body in fenced_blocks(doc.read_text())
        if language not in SHELL_LANGUAGES and looks_like_command.search(body)
    ]
    assert not unlabelled, "label these fences ```bash:\n" + "\n".join(unlabelled)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {github_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", text, re.MULTILINE)}


def test_readme_stays_short() -> None:
    lines = README.read_text().count("\n")
    assert lines < 250, f"README.md has {lines} lines; move detail into a docs/ page"


# --- no docs page longer than a reader reads through (issue #42) ---

MAX_WORDS = 4000
LONG_PAGES = {
    "development.md": "the threat tables live there by the project's standard "
                      "(tests/test_threat_tables.py reads them); without them the page is "
                      "under the limit",
}
"""The docs/ pages allowed over MAX_WORDS, each with its reason. A new long page fails the
test until it is split or listed here, so a long page is a decision, not a drift."""


def word_count(text: str) -> int:
    """Words as ``wc -w`` counts them: runs of characters between whitespace."""
    return len(text.split())


def page_words() -> dict[str, int]:
    """Each docs/ page's words; docs/history/ keeps old figures and is left out."""
    return {page.name: word_count(page.read_text(encoding="utf-8"))
            for page in sorted((ROOT / "docs").glob("*.md"))}


def test_no_page_is_over_4000_words_without_a_reason() -> None:
    counts = page_words()
    assert len(counts) >= 20, f"only {len(counts)} docs pages found: is the glob broken?"
    over = {name: words for name, words in counts.items()
            if words > MAX_WORDS and name not in LONG_PAGES}
    assert not over, (
        f"over {MAX_WORDS} words: {over}; move a whole topic section to a sibling page "
        "(a one-line pointer where it was), or list the page in LONG_PAGES with the reason")
    assert all(reason.strip() for reason in LONG_PAGES.values()), "every long page needs a reason"
    stale = sorted(name for name in LONG_PAGES if counts.get(name, 0) <= MAX_WORDS)
    assert not stale, f"listed in LONG_PAGES but no longer over {MAX_WORDS} words: {stale}"


def test_development_page_is_long_only_because_of_its_threat_tables() -> None:
    """LONG_PAGES' reason for development.md holds: the page without its threat tables
    is within the limit."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index("\n## Threat tables")
    end = text.find("\n## ", start + 1)
    rest = text[:start] + (text[end:] if end > 0 else "")
    assert word_count(rest) <= MAX_WORDS, (
        f"docs/development.md has {word_count(rest)} words besides its threat tables; "
        "move a section (Lint, Packaging, ...) to another page")


def test_every_relative_link_resolves() -> None:
    broken = []
    checked = 0
    for doc in DOCUMENTS:
        text = INLINE_CODE.sub("", FENCE.sub("", doc.read_text()))
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            checked += 1
            path, _, anchor = target.partition("#")
            page = (doc.parent / path).resolve() if path else doc
            if not page.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and page.suffix == ".md" and anchor not in anchors(page):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert checked >= 20, f"only {checked} relative links found: is the link pattern broken?"
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_documented_flag_exists() -> None:
    parser = build_parser()
    helps = {None: parser.format_help()}
    helps.update({name: sub.format_help() for name, sub in subparsers(parser).items()})
    commands = documented_commands()
    assert len(commands) >= 30, f"only {len(commands)} coop-tui command lines found"
    unknown = []
    for doc, line in commands:
        command, rest = split_command(command_tokens(line), parser)
        for flag in (f for token in rest for f in FLAG.findall(token)):
            if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[command]):
                unknown.append(f"{doc.relative_to(ROOT)}: `{line}`: {flag} is not an option of "
                               f"coop-tui {command or ''}".rstrip())
    assert not unknown, "\n".join(unknown)


def test_cli_reference_covers_every_flag() -> None:
    """docs/cli.md names every subcommand and every option the parser has."""
    page = (ROOT / "docs" / "cli.md").read_text()
    parser = build_parser()
    missing = []
    for name, sub in [(None, parser), *subparsers(parser).items()]:
        if name and f"coop-tui {name}" not in page:
            missing.append(f"subcommand {name}")
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help" and f"`{option}" not in page:
                    missing.append(f"{name or 'coop-tui'} {option}")
    assert not missing, "docs/cli.md does not document: " + ", ".join(missing)


# The README's command lines that are not run here, each with the reason. Every other
# README command runs verbatim; a new README command fails the test until it is run or
# listed here.
NOT_RUN = {
    "coop-tui --batch data/sweeps/quickstart.toml":
        "the embedded model: minutes of llama.cpp on two cores; tests/test_local_sweep.py "
        "runs the embedded model in a sweep",
    "coop-tui --batch data/sweeps/quickstart.toml --resume":
        "resumes the embedded-model sweep above; tests/test_sweep_robustness.py covers --resume",
    "coop-tui play --game prisoners --opponent tit_for_tat --rounds 3":
        "opens the TUI (play mode reads keys, not stdin); tests/test_tui_core.py plays it "
        "through Textual's pilot",
    "coop-tui --batch data/studies/coopeval-offline.toml":
        "the embedded model: minutes of llama.cpp on two cores; tests/test_coopeval_study.py "
        "runs a cut-down copy of this study",
    "coop-tui serve":
        "serves until stopped; tests/test_serve.py starts it on a free port and opens it "
        "in headless Chromium",
}


def readme_commands() -> list[str]:
    return [" ".join(command_tokens(line)) for line in command_lines(README.read_text())]


def test_readme_commands_are_all_run_or_skipped_with_reason() -> None:
    commands = readme_commands()
    assert len(commands) >= 6
    stale = set(NOT_RUN) - set(commands)
    assert not stale, f"NOT_RUN lists commands the README no longer has: {stale}"


def fresh_clone_view(tmp_path: Path) -> Path:
    """A working directory where the repository's relative paths resolve, so the commands'
    outputs (report.json, exported/) land in the temporary directory, not the repository."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("data", "tests"):
        (work / name).symlink_to(ROOT / name)
    return work


def test_ci_runs_the_readme_test_command_in_a_fresh_clone() -> None:
    """``.ci/run`` clones the committed tree into an empty temporary folder (nothing beside
    it, as on a user's machine) and ends with the README's test command, verbatim, so
    pytest's exit code is the script's."""
    setup = README.read_text().split("Test (creates", 1)[1]
    command = fenced_blocks(setup)[0][1].strip()
    assert command.endswith("-m pytest")
    script = (ROOT / ".ci" / "run").read_text()
    assert script.rstrip().splitlines()[-1] == command
    assert "set -euo pipefail" in script
    assert re.search(r'scratch="\$\(mktemp -d\)"', script)
    assert re.search(r'git clone --quiet "\$repo" "\$scratch/coop-tui"\ncd "\$scratch/coop-tui"', script)
    done = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_readme_commands_run_verbatim(tmp_path: Path) -> None:
    work = fresh_clone_view(tmp_path)
    env = {**os.environ, "COOP_TUI_DB": str(tmp_path / "readme.db"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for key in [k for k in env if k.endswith("_API_KEY")]:
        del env[key]  # the README's examples need no key
    ran = []
    for line in command_lines(README.read_text()):
        if " ".join(command_tokens(line)) in NOT_RUN:
            continue
        done = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=600)
        assert done.returncode == 0, f"`{line}` exited {done.returncode}:\n{done.stderr}"
        ran.append(line)
        if line.startswith("coop-tui import coopeval"):  # prints what the README says it does
            printed = re.search(r"The import prints `(.*?)`", README.read_text(), re.S)
            assert printed and " ".join(printed.group(1).split()) in done.stdout, done.stdout
    assert any("--batch data/sweeps/strategies-prisoners.toml" in line for line in ran)
    assert any(line.startswith("coop-tui import coopeval") for line in ran)
    compared = [line for line in ran if line.startswith("coop-tui compare")]
    assert compared, ran  # the example compares runs that share conditions (#41)
    report = json.loads((work / "report.json").read_text())
    assert report["run"]["name"] == "strategies-prisoners"
    exported = sorted(p.name for p in (work / "exported").iterdir())
    assert "decisions.csv" in exported, exported


def test_cli_page_imports_files_the_repository_has() -> None:
    """docs/cli.md's import examples run from a fresh clone: each input it names is there."""
    lines = [line for line in command_lines((ROOT / "docs" / "cli.md").read_text())
             if line.startswith("coop-tui import ")]
    assert len(lines) >= 2
    for line in lines:
        assert (ROOT / command_tokens(line)[3]).exists(), line


def test_servers_page_prints_the_embedded_models_gguf() -> None:
    """docs/servers.md's `model.gguf`: the command it gives prints the GGUF file the
    embedded model loads, and the serving line uses the same command."""
    page = (ROOT / "docs" / "servers.md").read_text()
    block = next(body for language, body in fenced_blocks(page) if "smollm2_path" in body)
    printing, serving = block.strip().splitlines()
    command = shlex.split(printing)
    assert command[:2] == ["python", "-c"]
    done = subprocess.run([sys.executable, "-c", command[2]], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    gguf = Path(done.stdout.strip())
    assert gguf.suffix == ".gguf" and gguf.is_file()
    assert serving.startswith("python -m llama_cpp.server --model ") and command[2] in serving


# --- each reproduction page states its full study's size as --dry-run measures it ---

STUDY_PAGES = {
    "coopeval": "reproducing-coopeval.md",
    "strategic-personalities": "reproducing-strategic-personalities.md",
    "similarity": "reproducing-similarity.md",
    "superadditive": "reproducing-superadditive.md",
}
"""Each shipped study and its page (the similarity study is measured, as its page says,
beside stand-in files for the published benchmarks it reads, which are not shipped)."""


def study_to_measure(study: str, folder: Path) -> Path:
    """The study file a page's figure was measured on: shipped as is, or for the similarity
    study a copy beside 150 two-option stand-in items per benchmark (it asks 150 of each)."""
    if study != "similarity":
        return ROOT / "data" / "studies" / f"{study}.toml"
    (folder / "benchmarks").mkdir()
    for name in ("trait", "hle", "moral_choice", "newcomb"):
        items = [json.dumps({"id": f"q{i}", "kind": "options", "prompt": f"Question {i}?",
                             "options": ["Yes", "No"]}) for i in range(150)]
        (folder / "benchmarks" / f"{name}.jsonl").write_text("\n".join(items))
    copy = folder / "similarity.toml"
    copy.write_text((ROOT / "data" / "studies" / "similarity.toml").read_text())
    return copy


@pytest.mark.parametrize("study", sorted(STUDY_PAGES))
def test_reproduction_page_states_the_dry_run_size(study: str, tmp_path: Path) -> None:
    page = (ROOT / "docs" / STUDY_PAGES[study]).read_text()
    stated = re.search(r"\*\*(?:about )?([\d,]+) model calls\*\*", page)
    assert stated, f"{STUDY_PAGES[study]} states no '**N model calls**'"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # needs none
    done = subprocess.run(
        [sys.executable, "-m", "coop_tui.cli", "--db", str(tmp_path / "dry.db"), "--batch",
         str(study_to_measure(study, tmp_path)), "--dry-run"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    measured = re.search(r"~(\d+)\s+model\s+calls", done.stdout)
    assert measured, done.stdout
    assert int(stated.group(1).replace(",", "")) == int(measured.group(1))
    # what a real run would need (the super-additive study's local servers need no key)
    assert re.search(r"^API keys(: none needed$| a real run needs \(\d+ missing\):)", done.stdout, re.M)
    assert not (tmp_path / "dry.db").exists()  # a dry run writes nothing


@pytest.mark.parametrize("page", sorted(STUDY_PAGES.values()))
def test_reproduction_page_ends_with_its_remaining_differences(page: str) -> None:
    """Each reproduction page's last section lists what still differs from the paper."""
    text = (ROOT / "docs" / page).read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    last = sections[-1]
    assert last.startswith("Remaining differences\n"), f"{page} ends with '## {last.splitlines()[0]}'"
    assert len(re.findall(r"^- \*\*|^- ", last, flags=re.M)) >= 5


# --- docs/storage.md: its SQL and pandas examples run against a real database ---


LOOPBACK_SWEEP = """
name = "loopback-similarity"
seed = 5
samples = 1

[agents.model]
model = "openai/loopback"
api_base = "{url}"
api_key_env = "DOCS_LOOPBACK_KEY"
style = "direct"

[[experiments]]
game = "prisoners"
mechanism = "similarity"
matchup = "self"
agents = ["model"]
similarity = [20, 80]
"""


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small database: the strategies sweep (strategies answer from the game state, so
    their decisions carry no prompt) plus a model sweep against the loopback server, whose
    decisions carry prompts, so the examples that join ``texts`` return rows."""
    from coop_tui.cli import main
    from coop_tui.testing.server import LoopbackServer

    folder = tmp_path_factory.mktemp("storage")
    db = folder / "coop-tui.db"
    sweep = str(ROOT / "data" / "sweeps" / "strategies-prisoners.toml")
    assert main(["--db", str(db), "--batch", sweep, "--yes"]) == 0
    answer = 'Weighing it up, I lean towards cooperating.\n{"A0": 70, "A1": 30}'
    with LoopbackServer(latency=0.0, chunks=2, answer=answer) as server, \
            pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCS_LOOPBACK_KEY", "sk-docs-loopback")
        model_sweep = folder / "loopback.toml"
        model_sweep.write_text(LOOPBACK_SWEEP.format(url=server.url))
        assert main(["--db", str(db), "--batch", str(model_sweep), "--yes"]) == 0
    return db


def storage_blocks(language: str) -> list[str]:
    page = (ROOT / "docs" / "storage.md").read_text()
    return [body for lang, body in fenced_blocks(page) if lang == language]


def test_storage_sql_examples_run(sweep_db: Path) -> None:
    blocks = storage_blocks("sql")
    assert len(blocks) >= 3
    con = sqlite3.connect(sweep_db)
    for block in blocks:
        for statement in (s.strip() for s in block.split(";")):
            if statement and not all(line.lstrip().startswith("--")
                                     for line in statement.splitlines()):
                rows = con.execute(statement).fetchall()
                assert rows, f"no rows from:\n{statement}"


def test_storage_pandas_examples_run(sweep_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = storage_blocks("python")
    assert blocks
    monkeypatch.chdir(sweep_db.parent)  # the examples open "coop-tui.db"
    for block in blocks:
        namespace: dict[str, object] = {}
        exec(compile(block, "docs/storage.md", "exec"), namespace)
        frames = [v for v in namespace.values() if type(v).__name__ == "DataFrame"]
        assert frames and all(len(f) for f in frames), f"an empty result from:\n{block}"
