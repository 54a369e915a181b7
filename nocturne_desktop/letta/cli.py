"""``nocturne letta …``: link a memory folder to a Letta agent, sync it, say how it stands.

    nocturne letta link --url URL --agent ID [--data-dir DIR] [--pull | --push] [--api-key-file F]
    nocturne letta sync [--data-dir DIR] [--raise-limit BLOCK [--limit N] | --keep-salient BLOCK]
    nocturne letta status [--data-dir DIR]
    nocturne letta agents --url URL [--api-key-file F]
    nocturne letta unlink [--data-dir DIR]

And the hooks the other commands use: :func:`following` keeps a linked folder's agent in step
while ``nocturne sleep`` or an import writes (sync before, and after every commit), and
:func:`verify_mirror` builds ``nocturne verify --letta URL``'s mirror.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import LettaClient, LettaError, read_key_file
from nocturne_desktop.letta.mirror import LettaMirror
from nocturne_desktop.letta.state import load
from nocturne_desktop.letta.sync import LABELS, LettaOverLimit, LettaSync, connect, link_status, unlink


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("letta", help="link this memory to a Letta agent's memory blocks")
    lsub = p.add_subparsers(dest="letta_command", metavar="ACTION", required=True)

    def folder(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", dest="letta_dir", default=None,
                        help="folder holding the memory database (same as the global --data-dir)")

    lk = lsub.add_parser("link", help="link the memory to an agent and sync once")
    lk.add_argument("--url", required=True, help="the Letta server, e.g. http://127.0.0.1:8283")
    lk.add_argument("--agent", required=True, help="the agent's id (agent-…; see `letta agents`)")
    lk.add_argument("--api-key-file", default=None,
                    help="a file holding the server's key (a server started with --secure)")
    side = lk.add_mutually_exclusive_group()
    side.add_argument("--pull", dest="prefer", action="store_const", const="pull",
                      help="the agent's blocks win: what differs becomes a version changed in Letta")
    side.add_argument("--push", dest="prefer", action="store_const", const="push",
                      help="this memory wins: the agent's blocks are overwritten")
    folder(lk)

    sy = lsub.add_parser("sync", help="pull what changed in Letta, then push this memory")
    folder(sy)
    fix = sy.add_mutually_exclusive_group()
    fix.add_argument("--raise-limit", metavar="BLOCK", choices=LABELS,
                     help="raise the block's character limit in Letta to what it needs")
    fix.add_argument("--keep-salient", metavar="BLOCK", choices=LABELS,
                     help="forget the block's least salient facts until it fits (one version)")
    sy.add_argument("--limit", type=int, default=None, help="with --raise-limit: the new limit")

    st = lsub.add_parser("status", help="the link, the last sync, what is pending (no request)")
    folder(st)
    ag = lsub.add_parser("agents", help="list the server's agents")
    ag.add_argument("--url", required=True)
    ag.add_argument("--api-key-file", default=None)
    un = lsub.add_parser("unlink", help="forget the link (nothing is deleted on either side)")
    folder(un)


def _db(args: argparse.Namespace) -> Path:
    return paths.db_path(args.letta_dir or args.data_dir)


def _say_error(exc: NocturneError) -> int:
    print(f"nocturne letta: {exc}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    made: list[Path] = []
    try:
        if args.letta_command == "agents":
            return _agents(args)
        db = _db(args)
        if args.letta_command == "link" and not db.exists():
            made = [db, *(p for p in reversed(db.parents) if not p.exists())]
        if args.letta_command != "link" and not db.exists():
            print(f"nocturne letta: there is no memory in {db.parent} (no {db.name})",
                  file=sys.stderr)
            return 1
        with Store(db) as store:
            if args.letta_command == "link":
                return _link(args, store)
            if args.letta_command == "status":
                return _status(store)
            if args.letta_command == "unlink":
                unlink(store)
                print(f"unlinked {db.parent}; the agent's blocks and this memory stay as they are")
                return 0
            return _sync(args, store)
    except NocturneError as exc:
        _remove_new_memory(made)
        return _say_error(exc)


def _remove_new_memory(made: list[Path]) -> None:
    """A link that failed into a folder it created leaves nothing behind: the empty database
    and the folders made for it."""
    if not made:
        return
    db, *folders = made
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        with contextlib.suppress(OSError):
            path.unlink()
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _agents(args: argparse.Namespace) -> int:
    with LettaClient(args.url, api_key=read_key_file(args.api_key_file)) as client:
        agents = client.list_agents()
    for a in agents:
        labels = ", ".join(f"{b.label} ({len(b.value):,} chars)" for b in a.blocks) or "no blocks"
        print(f"{a.id}  {a.name}  [{labels}]")
    if not agents:
        print("no agents on this server")
    return 0


def _link(args: argparse.Namespace, store: Store) -> int:
    with connect(store, args.url, args.agent, api_key_file=args.api_key_file,
                 prefer=args.prefer) as sync:
        print(f"linked {store.path.parent} to agent {args.agent} on {sync.client.url}")
        try:
            report = sync.sync()
        except LettaError as exc:
            print(f"nocturne letta: the first sync did not go through: {exc} (the link is "
                  "kept; `nocturne letta sync` tries again)", file=sys.stderr)
            return 1
        print(report.summary())
        for line in report.pull.refused:
            print(f"  refused: {line}")
    return 0


def _status(store: Store) -> int:
    status = link_status(store)
    if status is None:
        print(f"{store.path.parent} is not linked to a Letta agent")
        return 1
    print("\n".join(status.lines()))
    return 0 if status.ok else 1


def _sync(args: argparse.Namespace, store: Store) -> int:
    with LettaSync(store) as sync:
        if args.raise_limit:
            limit = sync.raise_limit(args.raise_limit, args.limit)
            print(f"the {args.raise_limit} block's limit in Letta is now {limit:,} characters")
        elif args.keep_salient:
            version = sync.keep_salient(args.keep_salient)
            if version is not None:
                print(f"kept the most salient lines of {args.keep_salient}: {version.id} "
                      f"{version.label} (undo brings the others back)")
        try:
            report = sync.sync()
        except LettaOverLimit as exc:
            print(f"nocturne letta: {exc}", file=sys.stderr)
            return 1
        print(report.summary())
        for line in report.pull.refused:
            print(f"  refused: {line}")
    return 0


# ---------------------------------------------------------------------------- the other commands


@contextlib.contextmanager
def following(store: Store, say: object = print) -> Iterator[LettaSync | None]:
    """While a headless command writes a linked memory: sync before it, after every commit, and
    say how it ended. A folder that is not linked yields None and costs nothing; a server that
    does not answer is said once and the commands go on (the next sync writes what is pending)."""
    if load(store) is None:
        yield None
        return
    out = say if callable(say) else print
    with LettaSync(store) as sync:
        first = sync.sync_quietly()
        out(f"letta: {first if isinstance(first, LettaError) else first.summary()}")
        detach = sync.attach()
        try:
            yield sync
        finally:
            detach()
            status = link_status(store)
            if status is not None and not status.ok:
                out("letta: " + (status.last_error or "; ".join(status.over_limit.values())
                                 or f"pending: {', '.join(status.pending)}"))


def verify_mirror(args: argparse.Namespace) -> tuple[LettaMirror, LettaClient]:
    """The mirror of ``nocturne verify --letta URL``: a new agent for the run (deleted at the
    end unless ``--letta-keep``), or ``--letta-agent``'s, which must then hold nothing."""
    client = LettaClient(args.letta, api_key=read_key_file(args.letta_api_key_file))
    mirror = LettaMirror(client, agent_id=args.letta_agent, base_url=args.base_url,
                         model=args.model, keep=args.letta_keep)
    return mirror, client


def mirror_line(figures: dict[str, Any]) -> str:
    """The verify report's line about the agent: commits synced, their sync's latency."""
    failures = figures.get("failures") or []
    return (f"letta: {figures.get('commitsSynced', 0)} commits synced to agent "
            f"{figures.get('agent')}, sync median {figures.get('syncMsMedian')} ms, max "
            f"{figures.get('syncMsMax')} ms; {len(failures)} failure(s)")


def add_verify_args(v: argparse.ArgumentParser) -> None:
    v.add_argument("--letta", metavar="URL", default=None,
                   help="keep the live state in a Letta agent on this server (a new agent for "
                        "the run) and check it holds memory after the sleep and at the end")
    v.add_argument("--letta-agent", default=None, help="use this agent instead of a new one")
    v.add_argument("--letta-api-key-file", default=None, help="the Letta server's key file")
    v.add_argument("--letta-keep", action="store_true", help="keep the new agent afterwards")
