"""Command-line entry point: ``nocturne`` launches the window; sub-commands run headless.

    nocturne [--data-dir DIR]                  the desktop window
    nocturne verify --base-url URL --model M   the whole memory loop with integrity checks
    nocturne sleep [--base-url URL --model M | --rules-only] [--dry-run]
    nocturne export [--data-dir DIR] FILE [--markdown]   the whole memory as JSON (or Markdown)
    nocturne import FILE --data-dir NEW_DIR    an export (JSON or Markdown) into a new data folder
    nocturne import FILE --data-dir DIR --into-scratch   its facts into a memory's scratch block
    nocturne lineage m_12 [--data-dir DIR] [--json]   why memory holds a fact
    nocturne letta link|sync|status|agents|unlink …   the memory's live state in a Letta agent
    nocturne verify … --letta URL              the same loop with the live state in Letta
    nocturne --self-test [--self-test-report FILE]   offscreen smoke test of this build

Everything the commands print passes :class:`EscapedOutput`: a control character in a fact, a
turn or a file name (an escape sequence that would drive the terminal) is shown escaped. The
API key comes from ``--api-key-file FILE`` or ``$NOCTURNE_API_KEY``; ``--api-key KEY`` still
works but is visible to every local user in the process list, and says so.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nocturne_desktop import __version__, paths
from nocturne_desktop.core import files, logfile
from nocturne_desktop.letta import cli as letta_cli

if TYPE_CHECKING:
    from nocturne_desktop.core.policy import RetentionPolicy

_UNSAFE_OUTPUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with every control character (line breaks and tabs aside) and every
    bidirectional override written as an escape (``\\x1b``), so it shows, never acts."""
    return _UNSAFE_OUTPUT.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class EscapedOutput(io.TextIOBase):
    """A text stream that writes to ``stream`` what :func:`escape_controls` makes of it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escape_controls(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")

    def isatty(self) -> bool:
        return self._stream.isatty()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nocturne", description="Nocturne: memory you can see, audit and undo.")
    p.add_argument("--version", action="version", version=f"Nocturne {__version__}")
    p.add_argument("--data-dir", help="folder holding the memory database (default: user data folder)")
    p.add_argument("--demo", action="store_true",
                   help="open the demo memory (its own folder, created on first use)")
    p.add_argument("--self-test", action="store_true", help="open the window offscreen on demo data in a "
                   "temporary folder, sleep (rules only), undo, check, quit; exit 0 if all passed")
    p.add_argument("--self-test-report", metavar="FILE", help="write the self-test report as JSON here")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def model_args(sp: argparse.ArgumentParser, required: bool) -> None:
        sp.add_argument("--base-url", required=required, help="OpenAI-compatible base URL, e.g. "
                        "http://localhost:1234/v1")
        sp.add_argument("--model", default="", help="model name as the server lists it")
        sp.add_argument("--api-key-file", default=None, metavar="FILE",
                        help="read the API key from FILE (default: $NOCTURNE_API_KEY)")
        sp.add_argument("--api-key", default=None,
                        help="the API key itself (visible to other users in the process list: "
                             "prefer --api-key-file or $NOCTURNE_API_KEY)")
        sp.add_argument("--first-token-timeout", type=float, default=600.0)
        sp.add_argument("--idle-timeout", type=float, default=120.0)
        sp.add_argument("--deadline", type=float, default=1200.0,
                        help="overall seconds one model request may take (default 1200)")

    v = sub.add_parser("verify", help="run the scripted conversation, sleep, quiz and every check")
    model_args(v, required=True)
    v.add_argument("--data-dir", dest="verify_dir", help="where to write the verify database "
                   "(a new file in it; default: a temporary folder)")
    v.add_argument("--json", help="also write the full report as JSON to this file")
    v.add_argument("--small-cap", type=int, default=6, help="the second cap of the policy comparison")
    letta_cli.add_verify_args(v)

    s = sub.add_parser("sleep", help="consolidate the memory headless")
    model_args(s, required=False)
    s.add_argument("--data-dir", dest="sleep_dir", default=None,
                   help="folder holding the memory database (same as the global --data-dir)")
    s.add_argument("--rules-only", action="store_true", help="no model: the deterministic rules only")
    s.add_argument("--engine-only", dest="rules_only", action="store_true",
                   help=argparse.SUPPRESS)  # its former name, kept for scripts
    s.add_argument("--dry-run", action="store_true", help="run the passes, write nothing")
    s.add_argument("--max-active", type=int, default=None, help="override the cap for this run")
    s.add_argument("--stale-days", type=float, default=None, help="override stale-after for this run")
    s.add_argument("--forget-below", type=float, default=None,
                   help="override the salience floor for this run (0: only the cap)")
    s.add_argument("--budget-tokens", type=int, default=1500,
                   help="payload tokens per request; larger passes are split (default 1500)")

    e = sub.add_parser("export", help="write the whole memory to a file (JSON, or --markdown)")
    e.add_argument("file", metavar="FILE", help="the file to write (replaced if it exists)")
    e.add_argument("--data-dir", dest="export_dir", default=None,
                   help="folder holding the memory database (same as the global --data-dir)")
    e.add_argument("--markdown", action="store_true",
                   help="a readable Markdown file by block, with dates, pins and the policy "
                        "(imports back its facts, not their history)")

    i = sub.add_parser("import", help="read an export (JSON or Markdown) into a new, empty "
                                      "data folder")
    i.add_argument("file", metavar="FILE",
                   help="a JSON or Markdown (.md) file written by 'nocturne export'")
    i.add_argument("--data-dir", dest="import_dir", default=None, required=True,
                   help="the new data folder (refused if it already holds a memory, "
                        "unless --into-scratch)")
    i.add_argument("--into-scratch", action="store_true",
                   help="add the export's active facts to the scratch block of the memory in "
                        "--data-dir, as your own edits in one version (duplicates skipped)")
    li = sub.add_parser("lineage", help="why memory holds a fact: its ancestry and what became of it")
    li.add_argument("item_id", help="a fact id such as m_12")
    li.add_argument("--data-dir", dest="lineage_dir", default=None,
                    help="folder holding the memory database (same as the global --data-dir)")
    li.add_argument("--json", action="store_true", help="print the lineage as JSON")

    k = sub.add_parser("still-know", help='"How much would I still know?": a benchmark file\'s '
                       "questions put to the memory's prompt assembly (no model)")
    k.add_argument("bench_file", help="a nocturne-memory-bench/1 or LoCoMo JSON file")
    k.add_argument("--data-dir", dest="know_dir", default=None,
                   help="folder holding the memory database (same as the global --data-dir)")
    k.add_argument("--budget", type=int, default=6000, help="memory prompt budget (chars)")
    k.add_argument("--missed", action="store_true", help="list the questions not known")
    letta_cli.add_parser(sub)
    return p


def _settings_policy() -> tuple[RetentionPolicy, str]:
    """The retention policy of the person's settings (what a window on a memory without its
    own uses), and whose it is in words; the defaults when the settings cannot be read."""
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.settings import SettingsError, SettingsFiles

    try:
        return SettingsFiles().load().retention, "your settings'"
    except SettingsError as exc:
        return RetentionPolicy(), f"the default, as your settings cannot be read: {exc}"


def cmd_export(args: argparse.Namespace) -> int:
    from nocturne_desktop import demo
    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.store import Store, exchange
    from nocturne_desktop.core.store.memorypolicy import memory_policy, policy_words

    db = paths.db_path(args.export_dir or args.data_dir)
    if not db.exists():
        print(f"nocturne export: there is no memory in {db.parent} (no {db.name})", file=sys.stderr)
        return 1
    target = Path(args.file)
    try:
        with Store(db) as store:
            own = memory_policy(store)
            if own is None and store.get_meta(demo.DEMO_META_KEY) == "1":
                own, whose = demo.demo_policy(), "the demo's, as its window runs under"
            else:
                whose = "its own"
            policy, whose = (own, whose) if own is not None else _settings_policy()
            size = exchange.write_export(store, target, markdown=args.markdown, policy=policy)
            facts = len(store.all_facts())
    except NocturneError as exc:
        print(f"nocturne export: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"nocturne export: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    kind = "Markdown" if args.markdown else "JSON"
    print(f"exported {facts} {'fact' if facts == 1 else 'facts'} to {target} ({kind}, "
          f"{size:,} bytes), with the retention policy it runs under ({whose}): "
          f"{policy_words(policy)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.store import exchange

    db = paths.db_path(args.import_dir)
    if args.into_scratch:
        return _import_into_scratch(Path(args.file), db)
    try:
        done = exchange.import_file(Path(args.file), db)
    except NocturneError as exc:
        print(f"nocturne import: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"nocturne import: cannot write {db}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"imported {done.contents()} into {db}; {done.policy_message()}")
    return 0


def _import_into_scratch(file: Path, db: Path) -> int:
    """``nocturne import FILE --data-dir DIR --into-scratch``: the file is checked before the
    memory is opened (a refused file writes nothing), then its facts go to scratch."""
    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.store import Store, exchange

    if not db.exists():
        print(f"nocturne import: there is no memory in {db.parent} (no {db.name}); import "
              "without --into-scratch to make a new one", file=sys.stderr)
        return 1
    try:
        export = exchange.read_export(file)
        with Store(db) as store, letta_cli.following(store):
            done = exchange.import_into_scratch(store, export, name=file.name)
    except NocturneError as exc:
        print(f"nocturne import: {exc}", file=sys.stderr)
        return 1
    print(done.message().replace("Ctrl+Z undoes it", "undo in the window takes it back"))
    for line in done.skipped_lines():
        print(f"  already in memory: {line}")
    return 0


def cmd_lineage(args: argparse.Namespace) -> int:
    import dataclasses

    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.lineage import lineage, render
    from nocturne_desktop.core.store import Store

    db = paths.db_path(args.lineage_dir or args.data_dir)
    if not db.exists():
        print(f"nocturne lineage: no memory database at {db}", file=sys.stderr)
        return 1
    try:
        with Store(db) as store:
            lin = lineage(store, args.item_id)
    except NocturneError as exc:
        print(f"nocturne lineage: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(dataclasses.asdict(lin), indent=2, ensure_ascii=False, default=str))
    else:
        print(render(lin))
    return 0


def cmd_still_know(args: argparse.Namespace) -> int:
    from nocturne_desktop.core.checks.recall import load_questions, still_know
    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.store import Store

    db = paths.db_path(args.know_dir or args.data_dir)
    if not db.exists():
        print(f"nocturne still-know: there is no memory at {db}", file=sys.stderr)
        return 1
    try:
        questions = load_questions(Path(args.bench_file))
        with Store(db) as store:
            report = still_know(store, questions, budget_chars=args.budget)
    except NocturneError as exc:
        print(f"nocturne still-know: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    if args.missed:
        for item in report.items:
            if not item.known:
                print(f"- {item.question} (answer: {item.answer}; missing: "
                      f"{', '.join(item.missing) or '-'})")
    return 0


def api_key(args: argparse.Namespace) -> str | None:
    """The key for the model server: ``--api-key-file``, else ``--api-key`` (with a warning:
    the process list shows it), else ``$NOCTURNE_API_KEY``. A key file that cannot be read
    raises :class:`~nocturne_desktop.core.files.FileRefused` (one sentence)."""
    if getattr(args, "api_key_file", None):
        raw = files.read_regular(args.api_key_file, 64 * 1024, what=f"the key file {args.api_key_file}")
        try:
            key = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise files.FileRefused(f"the key file {args.api_key_file} is not UTF-8 text") from None
        logfile.add_secret(key)
        return key or None
    if getattr(args, "api_key", None):
        logfile.add_secret(args.api_key)
        print("nocturne: warning: --api-key is visible to every local user in the process list "
              "(ps); use --api-key-file FILE or $NOCTURNE_API_KEY instead", file=sys.stderr)
        return str(args.api_key)
    env = os.environ.get("NOCTURNE_API_KEY")
    if env:
        logfile.add_secret(env)
    return env or None


def _client(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from nocturne_desktop.llm.client import OpenAIClient, Timeouts

    return OpenAIClient(
        args.base_url, args.model, api_key=api_key(args),
        timeouts=Timeouts(first_token=args.first_token_timeout, idle=args.idle_timeout,
                          total=args.deadline),
    )


def cmd_verify(args: argparse.Namespace) -> int:
    from nocturne_desktop.core.checks.verify import run_verify

    try:
        folder = (Path(args.verify_dir) if args.verify_dir
                  else Path(tempfile.mkdtemp(prefix="nocturne-verify-")))
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from nocturne_desktop.core.store.sqlerrors import folder_state

        where = Path(args.verify_dir) if args.verify_dir else Path(tempfile.gettempdir())
        print(f"verify stopped: cannot use {where}: {folder_state(where, exc)}", file=sys.stderr)
        return 1
    db = folder / time.strftime("verify-%Y%m%d-%H%M%S.db")
    print(f"nocturne verify: {args.base_url} model={args.model or '(server default)'} db={db}")
    client = _client(args)
    mirror, letta = letta_cli.verify_mirror(args) if args.letta else (None, None)
    try:
        report = run_verify(client, db, small_cap=args.small_cap, say=lambda s: print(s, flush=True),
                            mirror=mirror)
    except Exception as exc:  # a model error before any check: say it plainly, exit 1
        from nocturne_desktop.core.errors import NocturneError

        if not isinstance(exc, NocturneError):
            raise
        print(f"verify stopped: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
        if letta is not None:
            letta.close()
    if mirror is not None:
        print(letta_cli.mirror_line(report.figures.get("mirror", {})))
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2, default=str))
    return 0 if report.integrity_ok else 1


def cmd_sleep(args: argparse.Namespace) -> int:
    from nocturne_desktop.core.errors import NocturneError
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.core.store.memorypolicy import memory_policy, policy_words

    if not args.rules_only and not args.base_url:
        print("nocturne sleep: give --base-url (and --model), or --rules-only", file=sys.stderr)
        return 2
    update = {}
    if args.max_active is not None:
        update["max_active_facts"] = args.max_active
    if args.stale_days is not None:
        update["stale_after_days"] = args.stale_days
    if args.forget_below is not None:
        update["forget_below"] = args.forget_below
    client = None if args.rules_only else _client(args)
    status = 1
    try:
        with (Store(paths.db_path(args.sleep_dir or args.data_dir)) as store,
              letta_cli.following(store)):
            own = memory_policy(store)  # an imported memory's own: it sleeps under it here too
            if own is not None:
                print(f"under the memory's own retention policy: {policy_words(own)}", flush=True)
            base = {} if own is None else own.model_dump()
            policy = RetentionPolicy(**{**base, **update})
            for ev in run_sleep(store, client, policy, dry_run=args.dry_run,
                                budget_tokens=args.budget_tokens):
                f = ev.figures
                if f is not None and ev.kind is not SleepEventKind.PASS_STARTED:
                    print(f"{ev.kind:<11} {f.pass_name:<7} in={f.input} proposed={f.proposed} "
                          f"accepted={f.accepted} rejected={f.rejected} enforced={f.enforced} "
                          f"activeAfter={f.active_after} {ev.message}".rstrip(), flush=True)
                elif ev.kind is not SleepEventKind.PASS_STARTED:
                    print(f"{ev.kind}: {ev.message}", flush=True)
                if ev.kind is SleepEventKind.DONE:
                    status = 0
    except NocturneError as exc:  # a known store error (locked, full, read-only, damaged, ...)
        print(f"nocturne sleep: {exc}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    return status


def _platform_problem() -> int | None:
    """On Linux, before Qt can abort: say what the window lacks (libraries, a display) and how
    to get it, then exit with platformcheck.EXIT_CODE. ``NOCTURNE_SKIP_PLATFORM_CHECK=1`` skips
    the check (Qt then reports for itself)."""
    import os

    if os.environ.get("NOCTURNE_SKIP_PLATFORM_CHECK") == "1":
        return None
    from nocturne_desktop.boot import platformcheck

    found = platformcheck.check()
    if found is None:
        return None
    platformcheck.report(found)
    return platformcheck.EXIT_CODE


HEADLESS = ("verify", "sleep", "export", "import", "lineage", "still-know", "letta")
_FOLDER_OF = {"sleep": "sleep_dir", "export": "export_dir", "lineage": "lineage_dir",
              "still-know": "know_dir", "letta": "letta_dir"}
"""Each headless command's own ``--data-dir`` (where ``--demo`` points it)."""


def _point_at_demo(args: argparse.Namespace) -> int | None:
    """``nocturne --demo <command>``: the command works on the demo memory (``demo`` inside
    the data folder, as the window opens it), or is refused in one sentence; never silently on
    the person's own memory."""
    from nocturne_desktop import demo

    cmd = args.command
    if cmd == "verify":
        print("nocturne verify: --demo does not apply: verify writes a memory of its own "
              "(choose where with verify's --data-dir)", file=sys.stderr)
        return 2
    if cmd == "import":
        print("nocturne import: --demo does not apply: import reads into a new folder, named "
              "with import's --data-dir (the demo memory is made by the app)", file=sys.stderr)
        return 2
    attr = _FOLDER_OF[cmd]
    if getattr(args, attr, None):
        print(f"nocturne {cmd}: --demo and --data-dir name two memories; give one",
              file=sys.stderr)
        return 2
    folder = demo.default_demo_dir(Path(args.data_dir) if args.data_dir else None)
    if not paths.db_path(folder).exists():
        print(f"nocturne {cmd}: the demo memory has not been made yet (no {paths.DB_FILENAME} "
              f"in {folder}): open it once with 'nocturne --demo'", file=sys.stderr)
        return 1
    setattr(args, attr, str(folder))
    return None


def private_folders(data_override: str | None = None) -> None:
    """Nocturne's own folders (data, settings, log, cache) readable by their owner only."""
    for folder in (paths.data_dir(data_override), paths.config_dir(), paths.log_dir(),
                   paths.cache_dir()):
        if folder.is_dir():
            files.ensure_private_dir(folder)


def main(argv: Sequence[str] | None = None) -> int:
    files.private_umask()  # every file and folder made from here on is the person's alone
    parser = build_parser()
    args = parser.parse_args(argv)
    private_folders(args.data_dir)
    if args.command in HEADLESS:
        out, err = sys.stdout, sys.stderr
        sys.stdout = EscapedOutput(out)
        sys.stderr = EscapedOutput(err)
        try:
            return _main(args)
        except files.FileRefused as exc:
            print(f"nocturne {args.command}: {exc}", file=sys.stderr)
            return 1
        finally:
            sys.stdout, sys.stderr = out, err
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    if args.self_test:
        from nocturne_desktop.boot.selftest import run_self_test

        return run_self_test(Path(args.self_test_report) if args.self_test_report else None)
    if args.command in HEADLESS:
        # headless: a bug is logged with its traceback on stderr; known errors are one sentence
        console = logging.StreamHandler()
        console.setLevel(logging.WARNING)  # the file below takes INFO too; stderr stays quiet
        console.setFormatter(logging.Formatter("nocturne: %(levelname)s: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[console])
    # ...and in the log file, for the window and every sub-command (the API key never is)
    if logfile.install(paths.log_dir()) is not None:
        logging.getLogger("nocturne").info("Nocturne %s, %s", __version__,
                                           args.command or "window")
    if args.demo and args.command in HEADLESS:
        refused = _point_at_demo(args)
        if refused is not None:
            return refused
    if args.command == "verify":
        return cmd_verify(args)
    if args.command == "sleep":
        return cmd_sleep(args)
    if args.command == "export":
        return cmd_export(args)
    if args.command == "import":
        return cmd_import(args)
    if args.command == "lineage":
        return cmd_lineage(args)
    if args.command == "still-know":
        return cmd_still_know(args)
    if args.command == "letta":
        return letta_cli.run(args)
    problem = _platform_problem()
    if problem is not None:
        return problem
    from nocturne_desktop.ui import app as ui_app  # Qt is loaded only when the window opens

    return int(ui_app.run(args))
