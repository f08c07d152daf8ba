"""Command line entry point.

Only the standard library is imported at module level: ``coop-tui --help`` must stay
fast, and litellm (seconds to import) is loaded only when a provider is used.
Bad input exits with code 2 and one line naming the field and the fix.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path

from coop_tui import __version__
from coop_tui.errors import EXIT_USAGE, SpecError, database_message, fail

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# NumPy's OpenBLAS starts a thread per core when NumPy is imported, and the threads spin
# while they wait: every matrix coop-tui multiplies is a game's or a population's (a few
# rows), so they only cost start-up. One thread unless the user says otherwise (a strategy
# tournament of 102,400 decisions: 0.19 s less CPU, 0.08 s less wall on two cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__all__ = ["EXIT_USAGE", "build_parser", "fail", "main"]

GC_THRESHOLDS = (5000, 10, 10)
"""The cycle collector's thresholds in a command's process (Python's are 700, 10, 10). A
sweep allocates small containers by the hundred thousand (rows, moves, events), hardly any
in a cycle: at 700 the collector ran about 660 times in a strategy tournament of 102,400
decisions (imports included), 0.075 s of its 2.2 s; at 5000, 21 times and 0.02 s
(``benchmarks/bench_command.py`` measures the command)."""


def _db_arg(p: argparse.ArgumentParser, top: bool = False) -> None:
    p.add_argument(
        "--db",
        metavar="PATH",
        default=None if top else argparse.SUPPRESS,
        help="SQLite database file (default: $COOP_TUI_DB or the user data directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coop-tui",
        description="Run, watch and analyse LLM agents in cooperation games. "
        "With no command, opens the TUI on a ready preset that uses the embedded model.",
    )
    _db_arg(parser, top=True)
    _add_batch_options(parser)
    parser.add_argument("--version", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_command in COMMAND_PARSERS:  # in this order in --help
        _db_arg(add_command(sub))
    return parser


def _add_batch_options(parser: argparse.ArgumentParser) -> None:
    """The options of a headless sweep (``--batch FILE``), given without a command."""
    parser.add_argument("--batch", metavar="FILE", help="run a sweep file headless (TOML or YAML); "
                        "a shipped one also by name: `coop-tui list studies`")
    parser.add_argument("--resume", action="store_true", help="with --batch: continue the latest run of this sweep")
    parser.add_argument("--concurrency", type=int, metavar="N", help="with --batch: at most N requests at once")
    parser.add_argument("--yes", "-y", action="store_true", help="with --batch: skip the cost confirmation")
    parser.add_argument("--dry-run", action="store_true", help="with --batch: validate and estimate, run nothing")
    parser.add_argument("--shard", metavar="K/N", help="with --batch: play only the K-th of N disjoint "
                        "slices of the sweep (a cluster array job: one database per slice, "
                        "joined by `coop-tui merge`)")
    parser.add_argument("--source", action="append", metavar="NAME=PATH", default=None,
                        dest="paper_sources",
                        help="with --batch: the clone of a paper's code read where an experiment "
                        'sets wording = "source" (overrides the sweep\'s [sources]; repeatable; '
                        "see docs/wording.md)")


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``report [RUN]``: a run's analysis as text, JSON, LaTeX or CSV."""
    rep = sub.add_parser("report", help="print the analysis of a run (default: the latest)")
    rep.add_argument("run", nargs="?", help="run id, id prefix or name")
    rep.add_argument("--json", action="store_true", help="print JSON instead of tables")
    rep.add_argument(
        "--format", dest="report_format", choices=["text", "json", "latex", "csv"], default=None,
        help="text (default) or json for the whole report; latex or csv for the paper-style "
        "population tables (Mean / Fitness / DevRank, mean ± SE over replicates) and the "
        "per-wording section only",
    )
    rep.add_argument(
        "--sections", metavar="KEY,...",
        help="with text or json: only these report sections (comma-separated keys; an empty "
        "value for none); the counts, experiments and mechanisms are always there",
    )
    rep.add_argument(
        "--devrank", choices=["every_optimum", "vertex", "coopeval", "published"], default=None,
        help="how DevRank's deviation ratings are obtained: every_optimum (ours, the same for "
        "every solver; default), vertex (CoopEval's freezing rule on our LP), coopeval "
        "(CoopEval's LP, with Gurobi when gurobipy is installed, else HiGHS), published (an import's own deviation_ratings.json, else coopeval); "
        "default: the study file's devrank",
    )
    return rep


def _add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``compare RUN_A RUN_B`` (or ``RUN --by KEY``): are the runs, or the values, different?"""
    cmp = sub.add_parser("compare", help="are two runs different (or, with --by, the values of one "
                         "condition key within a run)? cooperation and payoffs per shared "
                         "condition, with intervals and Holm-corrected p-values")
    cmp.add_argument("run_a", metavar="RUN_A", help="run id, id prefix or name (the baseline)")
    cmp.add_argument("run_b", metavar="RUN_B", nargs="?", default=None,
                     help="run id, id prefix or name (compared with A); not with --by")
    cmp.add_argument("--by", metavar="KEY", default=None,
                     help="compare the values of this condition key within RUN_A (similarity, "
                     "framing, wording, ...), the other keys held fixed: every pair of values")
    cmp.add_argument("--base", metavar="VALUE", default=None,
                     help="with --by: each value against this one instead of every pair")
    cmp.add_argument("--db-b", metavar="PATH", default=None,
                     help="the database RUN_B is in (default: the same as RUN_A's, --db)")
    cmp.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    cmp.add_argument("--format", dest="compare_format", choices=["text", "json", "latex"],
                     default=None, help="text (default), json, or latex (booktabs tables)")
    return cmp


def _add_figures(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``figures [RUN]``: the papers' figures, or forest plots against ``--compare RUN_B``."""
    fig = sub.add_parser("figures", help="draw the papers' figures from a run's report (needs matplotlib)")
    fig.add_argument("run", nargs="?", help="run id, id prefix or name (default: the latest)")
    fig.add_argument("--out", default="figures", metavar="DIR",
                     help="output directory (default: ./figures)")
    fig.add_argument("--format", dest="figure_format", choices=["png", "svg", "pdf"], default="png",
                     help="file format (default: png)")
    fig.add_argument("--devrank", choices=["every_optimum", "vertex", "coopeval", "published"],
                     default=None, help="how the report's DevRank ratings are obtained, as for report")
    fig.add_argument("--compare", metavar="RUN_B", default=None,
                     help="instead of the papers' figures: RUN (A) against RUN_B as forest plots "
                     "of B − A with 95%% intervals, as `coop-tui compare` computes them")
    fig.add_argument("--db-b", metavar="PATH", default=None,
                     help="with --compare: the database RUN_B is in (default: --db)")
    return fig


def _add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``import FORMAT DIR``: another tool's results into the database."""
    imp = sub.add_parser("import", help="import results from another tool")
    imp.add_argument("source", choices=["coopeval", "strategic-personalities"],
                     help="format of the input")
    imp.add_argument(
        "directory",
        help="a CoopEval tournament directory, a run directory of tournaments, or a study "
        "directory of runs (data/main_study: run*/<mechanism>_<game>/); for "
        "strategic-personalities, the strategic personalities paper's trial table (strategic_personalities.csv.gz)",
    )
    return imp


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``export [RUN] --out DIR``: a run's tables as files."""
    exp = sub.add_parser("export", help="export a run's tables as CSV or Parquet")
    exp.add_argument("run", nargs="?", help="run id, id prefix or name (default: latest)")
    exp.add_argument("--format", choices=["csv", "parquet"], default="csv")
    exp.add_argument("--out", required=True, metavar="DIR", help="output directory")
    return exp


def _add_play(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``play``: a person against an agent, in the TUI."""
    play = sub.add_parser("play", help="play a game yourself against an agent")
    play.add_argument("--game", default="prisoners", help="game key or game file")
    play.add_argument("--opponent", default="tit_for_tat", help="a strategy name, a model string or an agent class "
                      "(package.module:Class, or a plugin agent's name)")
    play.add_argument("--rounds", type=int, default=1, help="rounds to play")
    play.add_argument("--mechanism", default=None, help="mechanism (default: repetition if rounds > 1)")
    play.add_argument("--talk", choices=["none", "public", "private"], default="none",
                      help="type a message to the other players before each move (docs/talk.md)")
    return play


def _add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``judge [RUN]``: a judge agent classifies a run's stored reasoning."""
    jdg = sub.add_parser(
        "judge", help="classify a run's stored reasoning texts with a judge agent and a rubric"
    )
    jdg.add_argument("run", nargs="?", help="run id, id prefix or name (default: the latest "
                     "run that is not itself a judge pass)")
    jdg.add_argument("--judge", required=True, metavar="AGENT",
                     help="a model string (local/smollm2, openai/gpt-4o-mini, ...) or the name "
                     "of an [agents.NAME] table of --agents FILE")
    jdg.add_argument("--rubric", required=True, metavar="NAME|FILE",
                     help="justifications, similarity-reasoning, or a rubric .toml file")
    jdg.add_argument("--agents", metavar="FILE", help="a sweep (or agents-only) file whose "
                     "[agents.NAME] tables --judge may name")
    jdg.add_argument("--protocol", choices=["coopeval", "per-category"], default=None,
                     help="coopeval: CoopEval's judge (one overall confidence and a list of "
                     "types, temperature 0, only chain-of-thought answers of 80+ characters); "
                     "per-category: a confidence per category for every decision with text "
                     "(default: the rubric's; justifications uses coopeval)")
    jdg.add_argument("--selection", choices=["logged", "all"], default=None,
                     help="logged: only decisions whose prompt is stored (CoopEval's script reads "
                     "its game logs, so it skips tournaments imported without one); all: every "
                     "decision with text (default: logged under the coopeval protocol, else all)")
    jdg.add_argument("--phase", default=None,
                     help="which decisions to judge (default: the rubric's phase, else play)")
    jdg.add_argument("--limit", type=int, metavar="N", help="judge at most N decisions this time")
    jdg.add_argument("--resume", action="store_true",
                     help="continue an earlier judge pass (refused when there is none)")
    jdg.add_argument("--concurrency", type=int, metavar="N", help="judge requests at once (4)")
    jdg.add_argument("--budget", type=float, metavar="USD", help="stop once this much is spent")
    jdg.add_argument("--dry-run", action="store_true", help="estimate, ask nothing")
    jdg.add_argument("--yes", "-y", action="store_true", help="skip the cost confirmation")
    return jdg


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``serve``: the TUI in a web browser."""
    srv = sub.add_parser("serve", help="serve the TUI to a web browser (needs textual-serve)")
    srv.add_argument("--port", type=int, default=8000, metavar="N", help="TCP port (default: 8000)")
    srv.add_argument("--host", default="127.0.0.1", metavar="H",
                     help="address to listen on (default: 127.0.0.1; any other address "
                     "lets others use the TUI and its API keys, and prints a warning)")
    srv.add_argument("--token", metavar="T",
                     help="the secret a browser must bring (default: a random one, printed in "
                     "the URL to open; a token given here shows in the process list)")
    return srv


def _add_merge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``merge DB...``: the slices of a sharded sweep back into one run."""
    mrg = sub.add_parser("merge", help="merge the databases of a sweep's slices (--shard K/N) "
                         "into one run per sweep")
    mrg.add_argument("sources", nargs="+", metavar="DB",
                     help="databases the slices were played into; runs of the same sweep file "
                     "become one run, runs of other sweeps stay runs of their own")
    return mrg


def _add_watch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``watch [RUN]``: a running headless sweep, live."""
    wat = sub.add_parser("watch", help="attach to a running headless sweep: its dashboard and "
                         "the reasoning of its matches, live")
    wat.add_argument("run", nargs="?", metavar="RUN", default=None,
                     help="run id, id prefix or name (default: the latest running run)")
    wat.add_argument("--plain", action="store_true",
                     help="one line per event on stdout instead of the screen (the default "
                     "when stdout is not a terminal)")
    return wat


def _add_list(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``list WHAT``: what is installed, stored or shipped."""
    lst = sub.add_parser("list", help="list games, strategies, mechanisms, plugin agents, "
                         "installed plugins, runs or the shipped sweep and study files")
    lst.add_argument("what", choices=["games", "strategies", "mechanisms", "agents", "plugins",
                                      "runs", "studies"])
    lst.add_argument("--json", action="store_true",
                     help="print a JSON list of objects (piped text output is tab-separated "
                     "with every value in full)")
    return lst


COMMAND_PARSERS = (
    _add_report, _add_compare, _add_figures, _add_import, _add_export, _add_play, _add_judge,
    _add_serve, _add_merge, _add_watch, _add_list,
)
"""Each command's parser, in the order ``--help`` lists them (each gets ``--db``)."""


def _db_path(args: argparse.Namespace) -> Path:
    from coop_tui.store import default_db_path

    return Path(args.db).expanduser() if getattr(args, "db", None) else default_db_path()


def _compare_by(args: argparse.Namespace, fmt: str) -> int:
    """``compare RUN --by KEY [--base VALUE]``: one run, so no RUN_B and no --db-b."""
    from coop_tui.analysis.compare_by import compare_by_command
    from coop_tui.report import print_in_full

    if args.by is None:
        return fail("--base: only with --by KEY; add --by or drop --base")
    if args.run_b is not None:
        return fail(f"RUN_B: --by compares values within one run; drop {args.run_b!r} or drop --by")
    if args.db_b is not None:
        return fail("--db-b: --by compares values within one run; drop --db-b")
    return compare_by_command(_db_path(args), args.run_a, args.by, base=args.base, fmt=fmt,
                              print_text=print_in_full)


def _load_dotenv() -> None:
    """API keys may sit in a ``.env`` file in the working directory; the environment wins."""
    env_file = Path(".env")
    if not env_file.is_file():
        return
    from dotenv import load_dotenv

    from coop_tui.inputs import read_regular

    where = str(env_file.resolve())
    try:
        text = read_regular(env_file, limit=1 << 20).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(where, f"is not UTF-8 text (byte {exc.start:,}); save it as UTF-8 or "
                               "move it out of this folder") from None
    except (OSError, ValueError) as exc:  # a FIFO swapped in, a file past 1 MiB
        raise SpecError(where, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    load_dotenv(stream=io.StringIO(text), override=False)


def main(argv: list[str] | None = None) -> int:
    """Run a command; every failure ends as one message on stderr, never a traceback."""
    gc.set_threshold(*GC_THRESHOLDS)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # a closed pipe must fail here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # `coop-tui report --json | head`: the reader left; stop quietly like other tools
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        return _explain_failure(exc, args)


def _explain_failure(exc: Exception, args: argparse.Namespace) -> int:
    import sqlite3

    if isinstance(exc, SpecError):
        return fail(str(exc))
    if isinstance(exc, sqlite3.Error):
        return fail(database_message(exc, _db_path(args)))
    if isinstance(exc, RecursionError):
        return fail("the input is nested too deeply to process; flatten it")
    if isinstance(exc, OSError):
        return fail(f"{exc.strerror or exc} ({exc.filename})" if exc.filename else str(exc))
    if os.environ.get("COOP_TUI_DEBUG"):
        raise exc
    fail(f"unexpected {type(exc).__name__}: {exc} (set COOP_TUI_DEBUG=1 to see the traceback)")
    return 1


def _dispatch(args: argparse.Namespace) -> int:
    _load_dotenv()
    if args.version:
        print(__version__)
        return 0
    problem = _check_batch_options(args)
    if problem:
        return fail(problem)
    if args.batch:
        return _run_batch(args)
    if args.command is None:  # no command: the TUI
        from coop_tui.app import run_app

        return run_app(db=_db_path(args))
    return COMMAND_RUNNERS[args.command](args)


def _check_batch_options(args: argparse.Namespace) -> str | None:
    """What is wrong with the top-level options, checked before any command runs."""
    if args.concurrency is not None and args.concurrency < 1:
        return f"--concurrency: {args.concurrency} is not a positive number of requests; give 1 or more"
    if args.paper_sources and not args.batch:
        return "--source: names a paper's clone for a sweep; give the sweep with --batch FILE"
    if args.shard is not None and not args.batch:
        return "--shard: slices a sweep; give the sweep with --batch FILE"
    return None


def _run_batch(args: argparse.Namespace) -> int:
    """``--batch FILE``: a sweep file (or a shipped one, by name), played headless."""
    from coop_tui.runner import run_batch
    from coop_tui.shards import parse_shard
    from coop_tui.shipped import resolve_sweep_file

    shard = parse_shard(args.shard) if args.shard is not None else None
    sources: dict[str, str] = {}
    for item in args.paper_sources or []:
        name, eq, where = item.partition("=")
        if not eq or not name.strip() or not where.strip():
            return fail(f"--source: {item!r} is not NAME=PATH; write e.g. "
                        "--source coopeval=~/src/CoopEval")
        sources[name.strip()] = where.strip()

    sweep_file, shipped = resolve_sweep_file(args.batch)
    if shipped:
        print(f"{args.batch}: the shipped file {sweep_file}", file=sys.stderr)
    return run_batch(
        sweep_file, _db_path(args), resume=args.resume,
        concurrency=args.concurrency, assume_yes=args.yes, dry_run=args.dry_run, shard=shard,
        sources=sources,
    )


def _run_report(args: argparse.Namespace) -> int:
    from coop_tui.report import report_command

    return report_command(
        _db_path(args), args.run, as_json=args.json, fmt=args.report_format,
        sections=args.sections,
        devrank=args.devrank,
    )


def _run_compare(args: argparse.Namespace) -> int:
    from coop_tui.analysis.compare import compare_command
    from coop_tui.report import print_in_full

    if args.json and args.compare_format not in (None, "json"):
        return fail(f"--json asks for JSON and --format for {args.compare_format}; give one of them")
    fmt = "json" if args.json else (args.compare_format or "text")
    if args.by is not None or args.base is not None:
        return _compare_by(args, fmt)
    if args.run_b is None:
        return fail("RUN_B: compare needs a second run, or --by KEY to compare the values "
                    "of one condition key within RUN_A")
    db_b = Path(args.db_b).expanduser() if args.db_b else None
    return compare_command(_db_path(args), args.run_a, args.run_b, db_b=db_b, fmt=fmt,
                           print_text=print_in_full)


def _run_figures(args: argparse.Namespace) -> int:
    if args.compare is not None:
        from coop_tui.figures.comparison import comparison_command

        if args.devrank is not None:
            return fail("--devrank: --compare draws no DevRank; drop one of them")
        db_b = Path(args.db_b).expanduser() if args.db_b else None
        return comparison_command(_db_path(args), args.run, args.compare, db_b=db_b,
                                  out=Path(args.out), fmt=args.figure_format)
    if args.db_b is not None:
        return fail("--db-b: only with --compare RUN_B; add --compare or drop --db-b")
    from coop_tui.figures import figures_command

    return figures_command(_db_path(args), args.run, out=Path(args.out),
                           fmt=args.figure_format, devrank=args.devrank)


def _run_export(args: argparse.Namespace) -> int:
    from coop_tui.export import export_command

    return export_command(_db_path(args), args.run, fmt=args.format, out=Path(args.out))


def _run_import(args: argparse.Namespace) -> int:
    if args.source == "strategic-personalities":
        from coop_tui.importers.strategic_personalities import import_command as import_sp

        return import_sp(Path(args.directory), _db_path(args))
    from coop_tui.importers.coopeval import import_command

    return import_command(Path(args.directory), _db_path(args))


def _run_judge(args: argparse.Namespace) -> int:
    from coop_tui.judging.run import judge_command

    return judge_command(
        _db_path(args), args.run, judge=args.judge, rubric_ref=args.rubric,
        agents_file=args.agents, phase=args.phase, limit=args.limit, resume=args.resume,
        concurrency=args.concurrency, budget_usd=args.budget, dry_run=args.dry_run,
        assume_yes=args.yes, protocol=args.protocol, selection=args.selection,
    )


def _run_serve(args: argparse.Namespace) -> int:
    from coop_tui.serve import serve_command

    return serve_command(_db_path(args), host=args.host, port=args.port, token=args.token)


def _run_merge(args: argparse.Namespace) -> int:
    from coop_tui.merge import merge_command

    return merge_command([Path(p).expanduser() for p in args.sources], _db_path(args))


def _run_watch(args: argparse.Namespace) -> int:
    from coop_tui.app import run_watch

    return run_watch(_db_path(args), args.run, plain=args.plain)


def _run_list(args: argparse.Namespace) -> int:
    from coop_tui.listing import list_command

    return list_command(args.what, _db_path(args), as_json=args.json)


def _run_play(args: argparse.Namespace) -> int:
    from coop_tui.app import run_play

    problem = _check_play(args)
    if problem:
        return fail(problem)
    return run_play(
        db=_db_path(args), game=args.game, opponent=args.opponent,
        rounds=args.rounds, mechanism=args.mechanism, talk=args.talk,
    )


COMMAND_RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "report": _run_report, "compare": _run_compare, "figures": _run_figures,
    "import": _run_import, "export": _run_export, "play": _run_play, "judge": _run_judge,
    "serve": _run_serve, "merge": _run_merge, "watch": _run_watch, "list": _run_list,
}
"""What each command runs; each imports its module only when called (``--help`` stays fast)."""


def _check_play(args: argparse.Namespace) -> str | None:
    """``play`` arguments checked before the app opens (its errors would need a screen)."""
    if args.mechanism is not None:
        from coop_tui.mechanisms import MechanismError, mechanism_class

        try:
            mechanism_class(args.mechanism)
        except MechanismError as exc:
            return f"--mechanism: {exc}"
    return None


if __name__ == "__main__":
    sys.exit(main())
