"""The hostile-input matrix (S-DOOR-1..3): every door × every evasion class, every import
attack, the files' modes and the planted symlink, the settings that fail to decode, the CLI's
output — printed as a table (scenario | tried | refused | lost | leaked) at the end.

*refused*: what was stopped (a secret not admitted, an attack refused with one sentence, a file
readable by its owner only); *lost*: something that should have gone through and did not (a
faithful fact refused, a target changed by a refused import); *leaked*: a secret that reached
memory, the audit log or a request body, a traceback instead of a sentence, a file others can
read, a link followed. The targets: leaked 0 and lost 0 everywhere. On the code before this
change, every door but the encoder's admitted the secrets, the files were 0644, the planted
``.NAME.part`` link was followed, a FIFO hung, /dev/zero read until MemoryError, big integers,
NaN and 1e300 times, long reasons and meta, cycles and dangling turns went in or ended in a
traceback, an older schema was migrated, and the CLI printed escapes raw.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import stat
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core import files, mutations
from nocturne_desktop.core.chat import edits
from nocturne_desktop.core.chat.encoder import check_fact
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.judges.sensitive import sensitive_reason
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates
from nocturne_desktop.core.store import Store, exchange, mdexchange
from nocturne_desktop.core.store.exchange import ImportRefused
from nocturne_desktop.core.types import FactDraft
from tests.clock import Clock
from tests.core import matrixprint, secretkit

COLUMNS = ("tried", "refused", "lost", "leaked")
MATRIX: list[dict[str, Any]] = []
PER_CELL = 6
"""Evasions tried per door and class."""
MD_TITLE = "# Nocturne memory — exported 2023-11-14"
FAITHFUL = ["The user lives in Lisbon.", "The user uses a password manager.",
            "The user changed the router password yesterday.", "The user's PIN has four digits."]


def record(scenario: str, *, tried: int = 1, refused: int = 1, lost: int = 0, leaked: int = 0,
           note: str = "") -> None:
    MATRIX.append({"scenario": scenario, "tried": tried, "refused": refused, "lost": lost,
                   "leaked": leaked, "note": note})


@pytest.fixture(scope="module", autouse=True)
def print_matrix(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    matrixprint.print_matrix(
        request, "hostile-input matrix (scenario | tried | refused | lost | leaked)", MATRIX, 46,
        notes=True, columns=COLUMNS)


def _leaks(store: Store, text: str) -> bool:
    """Whether ``text`` (a refused secret) is anywhere in memory or the audit log."""
    return (any(f.text == text or sensitive_reason(f.text) for f in store.all_facts())
            or any(text in json.dumps(m.mutation.refs, ensure_ascii=False)
                   for m in store.mutations()))


# -- every door × every evasion class ----------------------------------------------------------


def _export_with(tmp: Path, text: str) -> Path:
    with Store(tmp / "src.db", clock=Clock()) as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        raw = json.loads(exchange.export_json(s))
    raw["facts"][0]["current"]["text"] = text
    path = tmp / "in.json"
    path.write_text(json.dumps(raw), "utf-8")
    for p in tmp.glob("src.db*"):
        p.unlink()
    return path


def _door_encoder(store: Store, text: str, tmp: Path) -> None:
    why = check_fact(text, [f"user: {text}"])
    if why is not None:
        raise InvalidInput(why)
    store.append("scratch", FactDraft(text), door=Door.ENCODER)


def _door_remember(store: Store, text: str, tmp: Path) -> None:
    proposal = edits.propose(store, f"remember that {text}")
    assert proposal is not None and proposal.kind == "add"
    edits.confirm(store, proposal)


def _door_edit(store: Store, text: str, tmp: Path) -> None:
    fact = store.append("human", FactDraft("The user likes tea.", "preferences"))
    store.edit(fact.id, text=text)


def _import_new(store: Store, source: Path, tmp: Path) -> None:
    """Import ``source`` into a new memory, its facts copied into ``store`` for the leak check."""
    target = tmp / "new" / "n.db"
    try:
        exchange.import_file(source, target)
        with Store(target) as imported:
            for f in imported.all_facts():
                store.append("human", FactDraft(f.text), door=Door.STORE)  # for the leak check
    finally:
        for p in sorted(target.parent.glob("*"), reverse=True) if target.parent.exists() else []:
            p.unlink()


def _import_scratch(store: Store, source: Path) -> None:
    done = exchange.import_file_into_scratch(source, store)
    if done.refused and not done.added:
        raise InvalidInput(done.refused[0][1])


def _door_import(store: Store, text: str, tmp: Path) -> None:
    _import_new(store, _export_with(tmp, text), tmp)


def _door_scratch(store: Store, text: str, tmp: Path) -> None:
    _import_scratch(store, _export_with(tmp, text))


def _markdown_with(tmp: Path, text: str) -> Path:
    """A Markdown export whose one fact is ``text`` (written as the export writes a line)."""
    path = tmp / "in.md"
    path.write_text(f"{MD_TITLE}\n\n## Human\n\n- {mdexchange.escape(text)} — "
                    "*identity · since 2023-11-14*\n", "utf-8")
    return path


def _door_md_import(store: Store, text: str, tmp: Path) -> None:
    _import_new(store, _markdown_with(tmp, text), tmp)


def _door_md_scratch(store: Store, text: str, tmp: Path) -> None:
    _import_scratch(store, _markdown_with(tmp, text))


def _door_merge(store: Store, text: str, tmp: Path) -> None:
    a = store.append("human", FactDraft("The user likes tea.", "preferences"))
    b = store.append("human", FactDraft("The user likes green tea.", "preferences"))
    proposal = {"merge": [{"intoId": a.id, "fromIds": [a.id, b.id], "mergedText": text,
                           "reason": "the same fact"}]}
    result = gates.check("merge", store.active_facts(), proposal, RetentionPolicy())
    store.commit_pass(list(result.in_order or (*result.accepted, *result.rejected)),
                      label="merge", sleep_id=None)
    if not result.accepted:
        raise InvalidInput(result.rejected[0].rejection_reason or "refused")


DOORS: dict[str, Callable[[Store, str, Path], None]] = {
    "encoder": _door_encoder,
    "hand add": lambda s, t, _: s.add_fact("human", t)[0] and None,
    "hand edit": _door_edit,
    "chat remember": _door_remember,
    "full import": _door_import,
    "import into scratch": _door_scratch,
    "full import (Markdown)": _door_md_import,
    "import into scratch (Markdown)": _door_md_scratch,
    "sync (Letta or later)": lambda s, t, _: s.append("human", FactDraft(t), door=Door.SYNC)
    and None,
    "sleep merge": _door_merge,
}


@pytest.mark.parametrize("door", list(DOORS))
def test_every_door_refuses_every_evasion_and_admits_faithful_facts(
        tmp_path: Path, door: str) -> None:
    rng = random.Random(f"{door}-2026")
    for cls in secretkit.CLASSES:
        refused = leaked = 0
        for k in range(PER_CELL):
            text = secretkit.evasion(cls, rng)
            cell = tmp_path / f"{cls}-{k}".replace(" ", "_")
            cell.mkdir()
            with Store(cell / "n.db", clock=Clock()) as store:
                try:
                    DOORS[door](store, text, cell)
                except InvalidInput as exc:
                    refused += "sensitive:" in str(exc)
                leaked += _leaks(store, text)
        record(f"{door} × {cls}", tried=PER_CELL, refused=refused,
               leaked=leaked + (PER_CELL - refused))
        assert refused == PER_CELL and not leaked, (door, cls)
    lost = 0
    faithful = ["The user likes green tea."] if door == "sleep merge" else FAITHFUL
    for k, text in enumerate(faithful):
        cell = tmp_path / f"faithful-{k}"
        cell.mkdir()
        with Store(cell / "n.db", clock=Clock()) as store:
            try:
                DOORS[door](store, text, cell)
            except InvalidInput:
                lost += 1
    record(f"{door} × faithful facts (must pass)", tried=len(faithful), refused=0, lost=lost)
    assert lost == 0, door


# -- import attacks ----------------------------------------------------------------------------


def _exported(tmp: Path) -> dict[str, Any]:
    with Store(tmp / "e.db", clock=Clock()) as s:
        fact = s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        s.snapshot("v1")
        s.add_turn("user", "I live in Lisbon.")
        s.update(fact.id, text="The user lives in Porto.")
        s.snapshot("v2")
        s.add_fact("human", "The user keeps bees.", "preferences")
        raw: dict[str, Any] = json.loads(exchange.export_json(s))
    return raw


def _attack(tmp: Path, name: str, doc: dict[str, Any] | bytes, *, note: str = "") -> None:
    path = tmp / f"{name[:40].replace(' ', '_').replace('/', '_')}.json"
    path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode("utf-8"))
    _try_import(tmp, name, path, note=note)


def _try_import(tmp: Path, name: str, path: Path, *, note: str = "") -> None:
    target = tmp / "t" / name[:30].replace(" ", "_") / "n.db"
    traceback = 0
    refused = 0
    try:
        exchange.import_file(path, target)
    except ImportRefused as exc:
        refused = 1
        assert "\n" not in str(exc) and len(str(exc)) < 600, str(exc)
    except Exception:  # anything else is a traceback the person would see
        traceback = 1
    written = target.exists()
    record(f"import: {name}", refused=refused, lost=int(written), leaked=traceback, note=note)
    assert refused and not traceback and not written, name


def _fact(raw: dict[str, Any]) -> dict[str, Any]:
    current: dict[str, Any] = raw["facts"][0]["current"]
    return current


ATTACKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "a 5,000-digit integer": lambda r: re.sub(r'"nextItem": \d+', '"nextItem": ' + "9" * 5000,
                                              json.dumps(r)).encode(),
    "an id past 2^63": lambda r: {**r, "nextItem": 2**64},
    "a NaN timestamp": lambda r: json.dumps(r).replace('"exportedAt": ', '"exportedAt": NaN, "x": ').encode(),
    "a 1e300 timestamp": lambda r: (_fact(r).update(createdAt=1e300), r)[1],
    "a negative time": lambda r: (_fact(r).update(updatedAt=-5.0), r)[1],
    "a 2 MB reason": lambda r: (r["mutations"][0].update(reason="x" * 2_000_000), r)[1],
    "a 2 MB meta value": lambda r: (r["meta"].update(k="v" * 2_000_000), r)[1],
    "a control character in a fact": lambda r: (_fact(r).update(text="The user \x1b[2J lives."), r)[1],
    "a control character in a label": lambda r: (r["versions"][0].update(label="v\x1b]0;x\x07"), r)[1],
    "a secret in a fact": lambda r: (_fact(r).update(text="The user's p@ssw0rd is hunter2."), r)[1],
    "a secret in an old value": lambda r: (r["facts"][0]["history"][0].update(
        text="The user's PIN is 4821."), r)[1],
    "a supersede cycle": lambda r: _cycle(r),
    "a dangling source turn": lambda r: (_fact(r).update(sourceTurn=99), r)[1],
    "an unknown sleep": lambda r: (r["versions"][0].update(sleepId=7), r)[1],
    "a fact id past 2^63": lambda r: (r["facts"][0].update(id="m_" + "9" * 25), r)[1],
}


def _cycle(raw: dict[str, Any]) -> dict[str, Any]:
    second = json.loads(json.dumps(raw["facts"][0]))
    second["id"] = "m_2"
    second["current"]["text"] = "The user lives in Braga."
    raw["facts"].append(second)
    raw["nextItem"] = 3
    raw["facts"][0]["current"].update(supersededBy="m_2", active=False)
    second["current"].update(supersededBy="m_1", active=False)
    return raw


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_export_is_refused_in_one_sentence(tmp_path: Path, name: str) -> None:
    raw = _exported(tmp_path)
    _attack(tmp_path, name, ATTACKS[name](raw))


def test_not_a_regular_file_is_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    _try_import(tmp_path, "a FIFO (nobody writes to it)", fifo, note="no hang")
    _try_import(tmp_path, "/dev/zero", Path("/dev/zero"), note="nothing read")
    _try_import(tmp_path, "a folder", tmp_path, note="")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:
        fh.truncate(exchange.MAX_IMPORT_BYTES + 1)
    _try_import(tmp_path, "a sparse file past the cap", huge, note="nothing read")


def test_nested_empty_objects_are_refused_within_four_times_the_file(tmp_path: Path) -> None:
    n = 2_000_000
    doc = (b'{"format":"nocturne-memory","exportVersion":1,"storeSchema":1,"facts":['
           + b",".join([b"{}"] * n) + b"]}")
    path = tmp_path / "nested.json"
    path.write_bytes(doc)
    tracemalloc.start()
    try:
        with pytest.raises(ImportRefused):
            exchange.read_export(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ratio = peak / len(doc)
    record("import: nested empty objects (6 MB)", note=f"peak {ratio:.2f}x the file")
    assert ratio <= 4.0


def test_an_older_schema_target_is_untouched_when_refused(tmp_path: Path) -> None:
    target = tmp_path / "old" / "n.db"
    target.parent.mkdir()
    c = sqlite3.connect(target)
    c.executescript("CREATE TABLE items(num INTEGER PRIMARY KEY, text TEXT); "
                    "INSERT INTO items VALUES (1, 'The user lives in Lisbon.'); "
                    "PRAGMA user_version = 1;")
    c.close()
    before = target.read_bytes()
    path = tmp_path / "in.json"
    path.write_text(json.dumps(_exported(tmp_path)), "utf-8")
    refused = 0
    try:
        exchange.import_file(path, target)
    except ImportRefused:
        refused = 1
    changed = target.read_bytes() != before or Path(f"{target}-wal").exists()
    record("import: into an older-schema memory", refused=refused, lost=int(changed),
           note="left as it was")
    assert refused and not changed


# -- Markdown import attacks -------------------------------------------------------------------

MD_FACT = "- The user lives in Lisbon. — *identity · since 2023-11-14*"


def _md(*lines: str, title: str = MD_TITLE) -> bytes:
    return "\n".join([title, "", "## Human", "", *lines, ""]).encode("utf-8")


def _md_policy(*rules: str) -> bytes:
    return _md(MD_FACT, "", "## Retention policy", "", *rules)


POLICY_RULES = ["- duplicates at similarity ≥ 0.9", "- stale after 30 days",
                "- at most 2000 active facts", "- stale facts below salience 10 forgotten",
                "- protected categories: identity"]
MD_ATTACKS: dict[str, bytes] = {
    "a secret in a fact": _md("- The user's p@ssw0rd is hunter2. — *identity · since 2023-11-14*"),
    "an escape sequence in a fact": _md("- The user \x1b[2J lives here. — *identity · since 2023-11-14*"),
    "a NUL byte": _md(MD_FACT.replace("Lisbon", "Lis\x00bon")),
    "not UTF-8": _md(MD_FACT) + b"\xff\xfe",
    "a fact of 5,000 characters": _md(f"- The user {'x' * 5000}. — *identity · since 2023-11-14*"),
    "a 2 MB line": _md("- " + "y" * 2_000_000),
    f"{mdexchange.MAX_MARKDOWN_FACTS + 11:,} fact lines": _md(
        *[MD_FACT] * (mdexchange.MAX_MARKDOWN_FACTS + 11)),
    "no title (not an export)": _md(MD_FACT, title="# My notes"),
    "an unknown section": _md(MD_FACT, "", "## Gossip", "", MD_FACT),
    "a section twice": _md(MD_FACT, "", "## Human", "", MD_FACT),
    "a line that is not a fact": _md(MD_FACT, "<script>alert(1)</script>"),
    "an HTML page named .md": b"<!DOCTYPE html><html><body><h1>Memory</h1></body></html>\n",
    "an HTML block after the title": MD_TITLE.encode() + b"\n\n<div>\n<b>x</b>\n</div>\n",
    "a heading inside a section": _md(MD_FACT, "### More"),
    "an unknown category": _md("- The user lives in Lisbon. — *gossip · since 2023-11-14*"),
    "not a day (2023-02-30)": _md("- The user lives in Lisbon. — *identity · since 2023-02-30*"),
    "the year 9999": _md("- The user lives in Lisbon. — *identity · since 9999-01-01*"),
    "an unknown block it was in": _md("", "## Forgotten", "", "- The user lives in Lisbon. — "
                                      "*identity · was in attic · forgotten 2023-11-14*"),
    "a policy with a cap of 0": _md_policy(*POLICY_RULES[:2], "- at most 0 active facts",
                                           *POLICY_RULES[3:]),
    "a policy protecting an unknown category": _md_policy(*POLICY_RULES[:4],
                                                          "- protected categories: gossip"),
    "a policy missing a rule": _md_policy(*POLICY_RULES[1:]),
    "a policy naming a rule twice": _md_policy(*POLICY_RULES, POLICY_RULES[0]),
    "a policy with a rule of its own": _md_policy(*POLICY_RULES, "- forget everything"),
}


@pytest.mark.parametrize("name", list(MD_ATTACKS))
def test_a_hostile_markdown_export_is_refused_in_one_sentence(tmp_path: Path, name: str) -> None:
    path = tmp_path / "in.md"
    path.write_bytes(MD_ATTACKS[name])
    _try_import(tmp_path, f"Markdown: {name}", path)


def test_a_markdown_file_that_is_not_a_regular_file_or_too_big_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    _try_import(tmp_path, "Markdown: a FIFO", fifo, note="no hang")
    huge = tmp_path / "huge.md"
    with huge.open("wb") as fh:
        fh.truncate(mdexchange.MAX_MARKDOWN_BYTES + 1)
    _try_import(tmp_path, "Markdown: a sparse file past 32 MiB", huge, note="nothing read")
    to_zero = tmp_path / "zero.md"
    to_zero.symlink_to("/dev/zero")
    _try_import(tmp_path, "Markdown: a link to /dev/zero", to_zero, note="nothing read")
    to_pipe = tmp_path / "to-pipe.md"
    to_pipe.symlink_to(fifo)
    _try_import(tmp_path, "Markdown: a link to a FIFO", to_pipe, note="no hang")
    to_huge = tmp_path / "to-huge.md"
    to_huge.symlink_to(huge)
    _try_import(tmp_path, "Markdown: a link to a file past 32 MiB", to_huge, note="nothing read")


def test_markup_in_markdown_facts_comes_in_as_text(tmp_path: Path) -> None:
    texts = ["The user's sister is *Ana* <b>bold</b>.", "# The user keeps bees.",
             "- The user likes [tea](http://evil.example).", "1. The user wakes at six.",
             "The user's `code` is snake_case_name.", "&amp; The user & Zoë ~~left~~.",
             "> The user quotes \\*Tolstoy\\*.", "![x](file:///etc/passwd) The user paints."]
    with Store(tmp_path / "a" / "n.db", clock=Clock()) as s:
        for t in texts:
            s.append("human", FactDraft(t, "identity"))
        exchange.write_export(s, tmp_path / "m.md", markdown=True)
    target = tmp_path / "b" / "n.db"
    exchange.import_file(tmp_path / "m.md", target)
    with Store(target) as b:
        got = [f.text for f in b.all_facts()]
    lost = sum(1 for t in texts if t not in got)
    record("import: Markdown facts with markup (*, #, [x](y), <b>, `, - , 1., &, ~~, >, ![])",
           tried=len(texts), refused=0, lost=lost, note="come in as their text")
    assert lost == 0, got


# -- files -------------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_file_of_a_memory_is_private(tmp_path: Path) -> None:
    """Under the umask of a shared machine (022), as a fresh process starts."""
    env = {**os.environ, "NOCTURNE_DATA_DIR": str(tmp_path / "data"),
           "NOCTURNE_CONFIG_DIR": str(tmp_path / "config"), "NOCTURNE_LOG_DIR": str(tmp_path / "log"),
           "NOCTURNE_CACHE_DIR": str(tmp_path / "cache")}
    script = (
        "import os, sys; os.umask(0o022)\n"
        "from nocturne_desktop import cli, paths\n"
        "from nocturne_desktop.core.store import Store\n"
        "from nocturne_desktop.core.types import FactDraft\n"
        "from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles\n"
        "from nocturne_desktop.core import files\n"
        "files.private_umask()\n"
        "from nocturne_desktop.core import logfile\n"
        "logfile.install(paths.log_dir())\n"
        "import logging; logging.getLogger('nocturne').info('hello')\n"
        "s = Store(paths.db_path()); s.append('human', FactDraft('The user lives in Lisbon.'))\n"
        "s.begin_sleep({})\n"
        "for end in ('-wal', '-shm'):\n"
        "    print(end, oct(os.stat(str(paths.db_path()) + end).st_mode & 0o777))\n"
        "s.close()\n"
        "f = SettingsFiles(); f.save(Settings()); f.save_key(ApiKey('sk-test-key'))\n"
        "sys.exit(cli.main(['export', sys.argv[1]]))\n"
    )
    export = tmp_path / "out" / "memory.json"
    export.parent.mkdir()
    export.write_text("old")
    export.chmod(0o644)
    done = subprocess.run([sys.executable, "-c", script, str(export)], env=env, check=True,
                          capture_output=True, timeout=120, text=True)
    wal_shm = dict(line.split() for line in done.stdout.splitlines() if line.startswith("-"))
    assert wal_shm == {"-wal": "0o600", "-shm": "0o600"}, done.stdout
    checked = [p for root in ("data", "config", "log") for p in (tmp_path / root).rglob("*")]
    checked += [tmp_path / "data", tmp_path / "config", tmp_path / "log", export]
    open_to_others = [f"{p.relative_to(tmp_path)} {_mode(p):o}" for p in checked
                      if _mode(p) & 0o077]
    names = {p.name for p in checked}
    assert {"nocturne.db", "nocturne.log", "settings.json", "api_key", "memory.json"} <= names
    assert any(n.endswith(".sleeplock") or "lock" in n for n in names), names
    record("files: data, config, log folders and files", tried=len(checked) + 2,
           refused=len(checked) + 2 - len(open_to_others), leaked=len(open_to_others),
           note="0700 folders, 0600 files (db, WAL, SHM, lock, log, settings, key, export)")
    assert not open_to_others, open_to_others


def test_an_export_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    target = out / "memory.json"
    (out / ".memory.json.part").symlink_to(victim)
    with Store(tmp_path / "n.db", clock=Clock()) as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        exchange.write_export(s, target)
        long_name = out / ("m" * 250 + ".json")
        exchange.write_export(s, long_name, markdown=True)
    followed = victim.read_text() != "precious"
    record("export: a .NAME.part link planted", refused=int(not followed), leaked=int(followed),
           note="victim untouched, export a private regular file")
    assert not followed and target.is_file() and not target.is_symlink()
    assert _mode(target) == 0o600 and _mode(long_name) == 0o600
    (out / "link.json").symlink_to(victim)
    with Store(tmp_path / "n.db", clock=Clock()) as s:
        exchange.write_export(s, out / "link.json")
    assert victim.read_text() == "precious" and not (out / "link.json").is_symlink()
    record("export: the target itself a link", note="the link is replaced, never followed")
    record("export: a 255-byte file name", note="written (its temporary name is short)")


# -- settings and the command line ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "content"), [
    ("settings not UTF-8", b"\xff\xfe{\"model\": 1}"),
    ("settings with a 5,000-digit number", b'{"temperature": ' + b"9" * 5000 + b"}"),
    ("settings nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000),
    ("settings of the wrong types", b'{"timeouts": "x", "auto_sleep": [1]}'),
    ("settings a FIFO", None),
    ("API key not UTF-8", b"\xff\xfe\x00"),
    ("API key with control characters", b"sk-abc\x1b[2Jdef\nline"),
])
def test_settings_that_fail_to_decode_give_the_defaults(tmp_path: Path, name: str,
                                                         content: bytes | None) -> None:
    from nocturne_desktop.settings import SettingsError, SettingsFiles

    sf = SettingsFiles(tmp_path)
    target = sf.key_path if name.startswith("API key") else sf.settings_path
    if content is None:
        os.mkfifo(target)
    else:
        target.write_bytes(content)
    traceback = refused = 0
    try:
        sf.load_key() if name.startswith("API key") else sf.load()
    except SettingsError as exc:
        refused = 1
        assert "\n" not in str(exc)
    except Exception:
        traceback = 1
    record(f"config: {name}", refused=refused, leaked=traceback, note="the defaults dialog")
    assert refused and not traceback


def test_the_command_line_shows_control_characters_escaped(tmp_path: Path) -> None:
    db = tmp_path / "data" / "nocturne.db"
    with Store(db, clock=Clock()) as s:
        fact = s.append("human", FactDraft("The user lives here.", "identity"))
    c = sqlite3.connect(db)
    with c:  # text an older Nocturne let in
        c.execute("UPDATE items SET text = 'The user \x1b]0;pwned\x07\x1b[2J lives here.'")
    c.close()
    env = {**os.environ, "NOCTURNE_LOG_DIR": str(tmp_path / "log")}
    out = subprocess.run([sys.executable, "-m", "nocturne_desktop", "lineage", fact.id,
                          "--data-dir", str(db.parent)], env=env, capture_output=True,
                         timeout=120, text=True)
    raw = "\x1b" in out.stdout + out.stderr or "\x07" in out.stdout
    record("CLI: escape sequences in a fact", refused=int(not raw), leaked=int(raw),
           note="printed as \\x1b, never sent to the terminal")
    assert not raw and "\\x1b" in out.stdout


def test_an_api_key_on_the_command_line_is_warned_about_and_a_file_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from nocturne_desktop import cli

    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n")
    assert cli.api_key(argparse.Namespace(api_key_file=str(key_file), api_key=None)) == "sk-from-file"
    assert cli.api_key(argparse.Namespace(api_key_file=None, api_key="sk-visible")) == "sk-visible"
    assert "visible to every local user" in capsys.readouterr().err
    with pytest.raises(files.FileRefused):
        cli.api_key(argparse.Namespace(api_key_file="/dev/zero", api_key=None))
    record("CLI: --api-key warns; --api-key-file, $NOCTURNE_API_KEY",
           note="a key file must be a regular file")
    _ = mutations  # the audit rows checked by _leaks
