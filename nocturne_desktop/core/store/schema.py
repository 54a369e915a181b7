"""The store's schema: the migrations, in order, and the FTS5 index definitions.

Opening a store (:class:`~nocturne_desktop.core.store.Store`) runs the migrations its file has
not had yet, in one transaction; the statements live here so that what the file holds can be
read in one place.
"""

from __future__ import annotations

import re
import sqlite3

_FTS_DEFINITION = (
    "CREATE VIRTUAL TABLE items_fts USING fts5(stems, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
_PAST_FTS_DEFINITION = (
    "CREATE VIRTUAL TABLE past_fts USING fts5(stems, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
"""The inactive facts' index (forgotten and superseded), folded as ``items_fts``: what
:meth:`Store.search_all` finds beyond the active facts. A fact is in exactly one of the two."""


# Each migration is a list of single statements (never executescript: it would COMMIT the
# surrounding transaction). Migration i brings user_version from i to i + 1.
_MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE blocks(
            name TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE
        )""",
        """CREATE TABLE items(
            num INTEGER PRIMARY KEY,
            block TEXT NOT NULL REFERENCES blocks(name),
            text TEXT NOT NULL,
            category TEXT NOT NULL,
            source_turn INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            active INTEGER NOT NULL CHECK (active IN (0, 1)),
            from_seq INTEGER NOT NULL
        )""",
        "CREATE INDEX items_block ON items(block, num)",
        "CREATE INDEX items_from ON items(from_seq, active)",
        "CREATE INDEX items_active ON items(num) WHERE active = 1",
        """CREATE TABLE item_history(
            id INTEGER PRIMARY KEY,
            num INTEGER NOT NULL REFERENCES items(num),
            from_seq INTEGER NOT NULL,
            to_seq INTEGER NOT NULL,
            block TEXT NOT NULL,
            text TEXT NOT NULL,
            category TEXT NOT NULL,
            source_turn INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            active INTEGER NOT NULL,
            UNIQUE (num, from_seq),
            CHECK (from_seq < to_seq)
        )""",
        "CREATE INDEX item_history_to ON item_history(to_seq, from_seq, active)",
        "CREATE INDEX item_history_from ON item_history(from_seq, to_seq)",
        """CREATE TABLE sleeps(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at REAL NOT NULL,
            finished_at REAL,
            dry_run INTEGER NOT NULL,
            status TEXT NOT NULL,
            policy TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE snapshots(
            seq INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            created_at REAL NOT NULL,
            active_count INTEGER NOT NULL,
            sleep_id INTEGER REFERENCES sleeps(id)
        )""",
        """CREATE TABLE mutations(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            seq INTEGER,
            sleep_id INTEGER REFERENCES sleeps(id),
            pass_name TEXT NOT NULL,
            kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            accepted INTEGER NOT NULL,
            reason TEXT NOT NULL,
            rejection_reason TEXT,
            policy TEXT,
            decided_by TEXT NOT NULL,
            refs TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX mutations_seq ON mutations(seq)",
        "CREATE INDEX mutations_item ON mutations(item_id)",
        "CREATE INDEX mutations_sleep ON mutations(sleep_id)",
        """CREATE TABLE turns(
            n INTEGER PRIMARY KEY,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO counters(name, value) VALUES ('next_item', 1)",
        "INSERT INTO counters(name, value) VALUES ('fts_synced', 0)",
    ],
    # 2: the FTS index holds stemmed words (_sync_fts rebuilds it on open); newest-first reads.
    [
        "UPDATE counters SET value = 0 WHERE name = 'fts_synced'",
        "CREATE INDEX items_recent ON items(updated_at, num) WHERE active = 1",
    ],
    # 3: validity intervals (S-REC-2): a superseded fact keeps when it stopped being true and
    # which fact replaced it, in its live row and in every history row.
    [
        "ALTER TABLE items ADD COLUMN valid_until REAL",
        "ALTER TABLE items ADD COLUMN superseded_by INTEGER",
        "ALTER TABLE item_history ADD COLUMN valid_until REAL",
        "ALTER TABLE item_history ADD COLUMN superseded_by INTEGER",
        "CREATE INDEX IF NOT EXISTS items_superseded ON items(valid_until, num) "
        "WHERE superseded_by IS NOT NULL",
    ],
    # 4: hand edits: pins (a versioned column of a fact's value) and conversations (turns belong
    # to one; turn numbers stay global, so source_turn and the encoder cursor span conversations).
    # Each statement is a no-op on a store whose version number was set back by hand.
    [
        "ALTER TABLE items ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1))",
        "ALTER TABLE item_history ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
        """CREATE TABLE IF NOT EXISTS conversations(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at REAL NOT NULL
        )""",
        "ALTER TABLE turns ADD COLUMN conversation INTEGER REFERENCES conversations(id)",
        "INSERT OR IGNORE INTO conversations(id, created_at) SELECT 1, min(created_at) FROM turns "
        "WHERE conversation IS NULL HAVING count(*) > 0",
        "UPDATE turns SET conversation = 1 WHERE conversation IS NULL",
        "CREATE INDEX IF NOT EXISTS turns_conversation ON turns(conversation, n)",
    ],
    # 5: what salience knows beyond the fact's value - the encoder's importance and the fact's
    # recalls (S-RET-2). Not versioned: a recall is not an edit, undo does not take it back.
    [
        """CREATE TABLE strengths(
            num INTEGER PRIMARY KEY REFERENCES items(num),
            importance INTEGER CHECK (importance IS NULL OR importance BETWEEN 1 AND 5),
            uses INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0),
            strength REAL NOT NULL DEFAULT 0 CHECK (strength >= 0),
            last_used_at REAL
        )""",
    ],
    # 6: meaning vectors for the ranking (core.store.vectors): one row per fact whose text the
    # embedder named in vector_model has read (vec NULL: its text changed and was not read
    # again yet). rev orders the writes, so a connection's in-memory matrix reads only what
    # changed since it last looked. Not versioned, not exported: made again from the text.
    [
        """CREATE TABLE IF NOT EXISTS vectors(
            num INTEGER PRIMARY KEY REFERENCES items(num),
            rev INTEGER NOT NULL,
            vec BLOB
        )""",
        "CREATE INDEX IF NOT EXISTS vectors_rev ON vectors(rev)",
        """CREATE TABLE IF NOT EXISTS vector_model(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            name TEXT NOT NULL,
            dim INTEGER NOT NULL CHECK (dim > 0)
        )""",
        "INSERT OR IGNORE INTO counters(name, value) VALUES ('vectors_rev', 0)",
        "INSERT OR IGNORE INTO counters(name, value) "
        "SELECT 'vectors_complete', NOT EXISTS (SELECT 1 FROM items)",
    ],
    # 7: a link's bookkeeping (a Letta agent's blocks as last written or read): what the other
    # home of the live state held at the last sync. Not facts: not exported, not versioned.
    [
        """CREATE TABLE IF NOT EXISTS link_state(
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
    ],
]

SCHEMA_VERSION = len(_MIGRATIONS)
"""The ``PRAGMA user_version`` this code writes."""

_ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def _has_column(c: sqlite3.Connection, statement: str) -> bool:
    """Whether ``statement`` adds a column the table already has (a store whose version number
    was set back by hand: its migration is then a no-op, never an error)."""
    m = _ADD_COLUMN.match(statement)
    if m is None:
        return False
    table, column = m.groups()
    return any(row[1] == column for row in c.execute(f"PRAGMA table_info({table})"))


def fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite build has the FTS5 module."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.nocturne_fts_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.nocturne_fts_probe")
    except sqlite3.OperationalError:
        return False
    return True
