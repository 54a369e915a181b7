"""Every judge survives any reply (SPEC S-ROB-1..3).

A hostile or broken model reply — a NUL, a lone surrogate, control characters, a 10 MB string,
JSON nested 10,000 deep, NaN, wrong types anywhere — ends as a logged refusal with a bounded,
sanitised excerpt; the sleep and the encoder go on; the store stays sound and re-audits clean.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core import limits
from nocturne_desktop.core.chat.encoder import CURSOR_KEY, Encoder
from nocturne_desktop.core.checks import audit, gatecases
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.mutations import DecidedBy
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEvent, gates, run_sleep
from nocturne_desktop.core.store import MAX_TEXT_CHARS, Store
from nocturne_desktop.core.types import Fact, FactDraft, Mutation
from nocturne_desktop.llm.jsonextract import extract_json_object, salvage_object, strip_think
from tests.core.fakemodel import FakeCall, FakeModel, Truncated
from tests.core.sleepkit import NOW, SEED, seed

POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=120)
FACTS = gatecases.fixture_facts()


def verdicts(pass_name: str, proposal: Any) -> gates.GateResult:
    return gates.check(pass_name, FACTS, proposal, POLICY, now=NOW)


def only(result: gates.GateResult) -> Mutation:
    (m,) = result.in_order
    return m


def storable_in_a_real_store(muts: tuple[Mutation, ...]) -> None:
    """What the gate returns can be written to the audit log as it is."""
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "log.db") as store:
        store.record_mutations(muts, seq=None, sleep_id=None)
        assert store.integrity_check() == "ok"


# --- the gate: total over any JSON value (S-ROB-2), store limits checked (S-ROB-3) -------------


@pytest.mark.parametrize("into", [["m_4"], {"id": "m_4"}, [], {}])
def test_an_into_id_that_is_a_list_or_an_object_is_a_verdict_not_a_type_error(into: Any) -> None:
    """Raised TypeError (unhashable type) before."""
    m = only(verdicts("merge", {"merge": [{"intoId": into, "fromIds": ["m_4", "m_5"],
                                           "mergedText": "The user keeps a bearded dragon.",
                                           "reason": "same pet"}]}))
    assert not m.accepted and m.rejection_reason == "intoId is missing or not a string"


SOURCES = ("The user keeps a bearded dragon called Saffron.", "The user keeps a bearded dragon.")


def _merge_store() -> list[Fact]:
    """Two related facts in one block (the gate fixture's dragons live in two blocks)."""
    return [Fact(f"m_{i}", "scratch", text, "context", i, NOW, NOW) for i, text in enumerate(SOURCES, 1)]


@pytest.mark.parametrize(("merged", "needle"), [
    (SOURCES[0] + "\x00", "contains a NUL byte"),
    (SOURCES[0] + " \ud800", "not valid Unicode (a lone surrogate at position 48)"),
    (" ".join([SOURCES[0]] * 100), f"the limit is {MAX_TEXT_CHARS}"),
])
def test_a_merged_text_the_store_would_refuse_is_refused_by_the_gate(merged: str, needle: str) -> None:
    """Each was accepted before (every content word is in the sources) and then refused by the
    store's write, which aborted the sleep."""
    facts = _merge_store()
    proposal = {"merge": [{"intoId": "m_1", "fromIds": ["m_2"], "mergedText": merged, "reason": "one pet"}]}
    m = only(gates.check("merge", facts, proposal, POLICY, now=NOW))
    assert not m.accepted
    why = m.rejection_reason or ""
    assert needle in why and "the store could not write it" in why
    storable_in_a_real_store((m,))
    # the same text, made storable, is still judged by the ordinary rules and accepted
    fine = {"merge": [{"intoId": "m_1", "fromIds": ["m_2"], "mergedText": SOURCES[0], "reason": "one pet"}]}
    assert gates.check("merge", facts, fine, POLICY, now=NOW).accepted


@pytest.mark.parametrize("reason", ["\u200b", "\x00", " \u2060\ufeff ", "\u200b\x00\u200b"])
def test_a_reason_needs_a_visible_character(reason: str) -> None:
    """A zero-width space or a NUL counted as a reason before."""
    m = only(verdicts("dedupe", {"drop": [{"itemId": "m_2", "duplicateOf": "m_1", "reason": reason}]}))
    assert not m.accepted and m.rejection_reason == "reason is empty: every proposal must say why"
    storable_in_a_real_store((m,))


@pytest.mark.parametrize(("reason", "needle"), [
    ("same " * 1000, "a reason has at most 1000"),
    ("same\x00fact", "control character (U+0000)"),
    ("same \ud83d fact", "lone surrogate"),
])
def test_a_reason_is_bounded_and_storable(reason: str, needle: str) -> None:
    m = only(verdicts("dedupe", {"drop": [{"itemId": "m_2", "duplicateOf": "m_1", "reason": reason}]}))
    assert not m.accepted and needle in (m.rejection_reason or "")
    assert len(m.reason) <= limits.MAX_REASON_CHARS + 40
    storable_in_a_real_store((m,))


def test_a_one_megabyte_id_is_not_echoed_into_a_one_megabyte_refusal() -> None:
    huge = "m_" + "7" * 1_000_000
    for pass_name, entry in [
        ("dedupe", {"itemId": huge, "duplicateOf": "m_1", "reason": "copy"}),
        ("dedupe", {"itemId": "m_2", "duplicateOf": huge, "reason": "copy"}),
        ("merge", {"intoId": huge, "fromIds": ["m_1"], "mergedText": "x", "reason": "r"}),
        ("merge", {"intoId": "m_1", "fromIds": [huge], "mergedText": "x", "reason": "r"}),
        ("promote", {"itemId": huge, "toBlock": "human", "reason": "r"}),
        ("promote", {"itemId": "m_2", "toBlock": huge, "reason": "r"}),
        ("forget", {"itemId": huge, "reason": "r"}),
    ]:
        m = only(verdicts(pass_name, {gates.LIST_KEY[pass_name]: [entry]}))
        assert not m.accepted
        assert len(m.rejection_reason or "") < 300 and len(m.item_id) < 120, (pass_name, entry.keys())
        assert len(json.dumps(m.refs)) < 3 * limits.EXCERPT_CHARS
    m = only(verdicts("dedupe", {"drop": [{"itemId": huge, "duplicateOf": "m_1", "reason": "copy"}]}))
    assert m.rejection_reason == "itemId is 1,000,002 characters long; an id has at most 64"


def test_a_reply_with_a_million_entries_is_one_refusal() -> None:
    m = only(verdicts("forget", {"forget": [0] * 1_000_000}))
    assert not m.accepted and "1,000,000 entries" in (m.rejection_reason or "")
    storable_in_a_real_store((m,))


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_VALUES: list[Any] = [
    None, True, 0, -1, 10**400, 1.5, float("nan"), float("inf"), float("-inf"), "", " ", "\x00",
    "\ud800", "\u200b", "m_1\x00", "\u202egnp.exe", "x" * 10_000_000, [], {}, ["m_1"], {"m_1": 1},
    _deep(10_000), [float("nan")] * 3, {"\ud800": "\x00"},
]


@pytest.mark.parametrize("pass_name", ["dedupe", "merge", "promote", "forget"])
def test_check_is_total_and_every_verdict_is_storable(pass_name: str) -> None:
    """Any value, in any field or in place of the whole reply: verdicts out, each one writable."""
    key = gates.LIST_KEY[pass_name]
    fields = {"dedupe": ["itemId", "duplicateOf", "reason"],
              "merge": ["intoId", "fromIds", "mergedText", "reason"],
              "promote": ["itemId", "toBlock", "reason"], "forget": ["itemId", "reason", "policy"]}
    good = {"dedupe": {"itemId": "m_2", "duplicateOf": "m_1", "reason": "same"},
            "merge": {"intoId": "m_4", "fromIds": ["m_5"], "mergedText": SOURCES[0], "reason": "r"},
            "promote": {"itemId": "m_7", "toBlock": "episodes", "reason": "r"},
            "forget": {"itemId": "m_10", "reason": "old", "policy": "stale"}}[pass_name]
    proposals: list[Any] = [*HOSTILE_VALUES, *({key: v} for v in HOSTILE_VALUES)]
    proposals += [{key: [v]} for v in HOSTILE_VALUES]
    proposals += [{key: [{**good, f: v}]} for f in fields[pass_name] for v in HOSTILE_VALUES]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "log.db") as store:
        for proposal in proposals:
            result = gates.check(pass_name, FACTS, proposal, POLICY, now=NOW)
            for m in result.rejected:
                assert m.rejection_reason and len(m.rejection_reason) < 400, m.rejection_reason[:400]
            store.record_mutations(result.in_order, seq=None, sleep_id=None)
        assert store.integrity_check() == "ok"
    assert time.perf_counter() - t0 < 30


def test_the_store_and_the_gate_share_one_definition_of_the_limits() -> None:
    import nocturne_desktop.core.store as store_module

    assert store_module.MAX_TEXT_CHARS is limits.MAX_TEXT_CHARS
    assert store_module.MAX_TURN_CHARS is limits.MAX_TURN_CHARS
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.db") as store:
        for bad in ["\x00", "a\ud800", "x" * (MAX_TEXT_CHARS + 1), "  "]:
            with pytest.raises(InvalidInput) as info:
                store.append("scratch", FactDraft(bad))
            assert str(info.value) == limits.text_problem(bad)


# --- JSON extraction: no RecursionError, no quadratic scan ---------------------------------


@pytest.mark.parametrize("depth", [1_000, 10_000, 100_000])
def test_a_reply_nested_deep_is_no_json_not_a_recursion_error(depth: int) -> None:
    """RecursionError before, at a thousand levels."""
    nested = '{"drop": ' + "[" * depth + "]" * depth + "}"
    assert extract_json_object(nested) is None
    assert salvage_object(nested, "drop").fields == {"drop": []}
    cut = '{"drop": [{"itemId": "m_2"}, ' + '{"a":' * depth
    assert salvage_object(cut, "drop").fields == {"drop": [{"itemId": "m_2"}]}
    assert extract_json_object('{"a": {"b": {"c": [1, [2, [3]]]}}}') == {"a": {"b": {"c": [1, [2, [3]]]}}}


@pytest.mark.parametrize("text", [
    "<think>" * 40_000,  # 63 s before: the lazy think pattern retried from every open tag
    "{a}" * 1_000_000,  # a million failed parses before
    "{" * 5_000_000,
    '{"' + "{" * 2_000_000,
    "{[]" * 1_000_000,
])
def test_hostile_text_is_searched_in_linear_time(text: str) -> None:
    t0 = time.perf_counter()
    assert extract_json_object(text) is None
    salvage_object(text, "drop")
    assert time.perf_counter() - t0 < 3.0


def test_think_blocks_are_still_removed_as_before() -> None:
    assert strip_think("<think>a</think>{}<THINK>b</Think>x") == "{}x"
    assert strip_think("<think>a<think>b</think>c</think>d") == "d"  # then the stray close
    assert strip_think("half</think>{}") == "{}"
    assert strip_think("{}<think>never closed") == "{}"


# --- Sleep and encoder against replies read by the real client's parser -------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "nocturne.db"
    seed(path)
    return path


def _task(call: FakeCall) -> str:
    try:
        return str(json.loads(call.last_user).get("task"))
    except ValueError:
        return "encoder"


def sleep_with(db: Path, answers: dict[str, Any]) -> tuple[list[SleepEvent], Store]:
    """Run one sleep whose model answers each pass with ``answers[task]`` (raw text or JSON)."""
    model = FakeModel(responder=lambda call: answers.get(_task(call), {gates.LIST_KEY[_task(call)]: []}),
                      client_parsing=True)
    store = Store(db, clock=lambda: NOW)
    return list(run_sleep(store, model, POLICY, now=NOW)), store


def assert_sound(store: Store, events: list[SleepEvent]) -> None:
    """The sleep finished (no exception, no `running` record), the file is sound, and the
    independent re-audit of what it applied finds nothing."""
    assert events[-1].kind == "sleep done", events[-1]
    sleep_id = events[0].sleep_id
    assert sleep_id is not None
    assert store.sleeps()[-1].status == "done"
    assert store.integrity_check() == "ok"  # PRAGMA integrity_check
    _, problems = audit.reaudit(store, sleep_id)
    assert problems == []
    for row in store.mutations(sleep_id=sleep_id):
        m = row.mutation
        assert len(m.rejection_reason or "") <= 2 * limits.RAW_EXCERPT_CHARS
        assert len(json.dumps(m.refs, ensure_ascii=False)) <= 3 * limits.RAW_EXCERPT_CHARS


def test_a_merged_text_over_the_limit_no_longer_aborts_the_sleep(db: Path) -> None:
    """Before: the gate accepted it (every word is in the sources), the store refused the write,
    run_sleep raised InvalidInput and the sleep record stayed `running`."""
    def merge(call: FakeCall) -> Any:
        cluster = json.loads(call.last_user)["clusters"][0]["facts"]
        text = " ".join(f["text"] for f in cluster)
        return {"merge": [{"intoId": cluster[0]["itemId"], "fromIds": [f["itemId"] for f in cluster[1:]],
                           "mergedText": " ".join([text] * 200), "reason": "related"}]}

    events, store = sleep_with(db, {"merge": merge})
    with store:
        assert_sound(store, events)
        refused = [r.mutation for r in store.mutations(pass_name="merge", accepted=False)]
        assert refused and all("the store could not write it" in (m.rejection_reason or "") for m in refused)


@pytest.mark.parametrize("poison", ["\x00", "\ud800"])
def test_a_nul_or_a_surrogate_in_a_reply_is_a_refusal_not_a_crash(db: Path, poison: str) -> None:
    """Before: a NUL in mergedText aborted the sleep at the store's write; a lone surrogate in a
    reason made the audit write itself raise (SQLite cannot encode it)."""
    def merge(call: FakeCall) -> Any:
        cluster = json.loads(call.last_user)["clusters"][0]["facts"]
        return {"merge": [{"intoId": cluster[0]["itemId"], "fromIds": [f["itemId"] for f in cluster[1:]],
                           "mergedText": cluster[0]["text"] + poison, "reason": "related"}]}

    answers = {
        "dedupe": json.dumps({"drop": [{"itemId": "m_2", "duplicateOf": "m_1", "reason": f"same{poison}"}]},
                             ensure_ascii=False),
        "merge": merge,
        "promote": '{"promote": [{"itemId": "m_3", "toBlock": "human", "reason": "\\ud800"}]}' + poison,
        "forget": f'<think>{poison}</think>{{"forget": [{{"itemId": "{poison}", "reason": "old"}}]}}',
    }
    events, store = sleep_with(db, answers)
    with store:
        assert_sound(store, events)
        refused = store.mutations(accepted=False)
        assert refused, "the poisoned proposals are logged as refusals"
        for row in refused:
            dumped = json.dumps(row.mutation.refs, ensure_ascii=False) + (row.mutation.reason or "")
            assert "\ud800" not in dumped and "\x00" not in dumped and "\\u0000" not in dumped


@pytest.mark.parametrize("depth", [1_000, 10_000])
def test_a_deeply_nested_reply_is_logged_and_the_sleep_goes_on(db: Path, depth: int) -> None:
    """Before: RecursionError out of the JSON extraction, through run_sleep."""
    nested = '{"drop": [' + "[" * depth + "]" * depth + "]}"
    events, store = sleep_with(db, {"dedupe": nested, "merge": nested})
    with store:
        assert_sound(store, events)
        replies = [r.mutation for r in store.mutations(accepted=False) if r.mutation.kind == "reply"]
        assert {m.pass_name for m in replies} == {"dedupe", "merge"}
        assert all(len(m.refs["raw"]) <= limits.RAW_EXCERPT_CHARS + 40 for m in replies)
        # the engine's duplicate rule still ran
        assert any(r.mutation.decided_by == DecidedBy.DUPLICATE_RULE
                   for r in store.mutations(pass_name="dedupe", accepted=True))


@pytest.fixture
def enc_store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "enc.db") as store:
        store.add_turn("user", "I keep a bearded dragon called Saffron and I live in Lisbon.")
        store.add_turn("assistant", "Nice! What does Saffron eat?")
        store.add_turn("user", "Mostly crickets.")
        yield store


@pytest.mark.parametrize("reply", [
    '{"facts": [{"text": "The user keeps a bearded dragon\\ud800", "category": "identity", "turn": 1}]}',
    '{"facts": [{"text": "The user keeps a bearded dragon.", "category": "\\ud800' + "x" * 100_000
    + '", "turn": 1}]}',
    '{"facts": [' + "[" * 5000 + "]" * 5000 + "]}",
    '{"facts": [{"text": "The user lives in Lisbon.", "category": "identity", "turn": NaN}]}',
    "\ud800 no JSON at all \x00",
])
def test_the_encoder_logs_any_reply_and_moves_on(enc_store: Store, reply: str) -> None:
    """Before: a lone surrogate in a proposal or in the raw reply made the audit write raise,
    and the nested reply raised RecursionError."""
    model = FakeModel([reply], client_parsing=True)
    result = Encoder(enc_store, model).encode_new_turns()
    assert enc_store.get_meta(CURSOR_KEY) == "3"
    assert result.accepted == [] and enc_store.active_count() == 0
    rows = enc_store.mutations(pass_name="encoder")
    assert rows and not any(r.mutation.accepted for r in rows)
    for r in rows:
        dumped = json.dumps(r.mutation.refs, ensure_ascii=False) + (r.mutation.rejection_reason or "")
        assert "\ud800" not in dumped and len(dumped) < 2 * limits.RAW_EXCERPT_CHARS
    assert enc_store.integrity_check() == "ok"


# --- the sleep record is never left `running` --------------------------------------------


class _FailingStore(Store):
    fail_on = ""

    def commit_pass(self, mutations: Any, *, label: str, sleep_id: int | None) -> Any:
        if label == self.fail_on:
            raise OSError("disk I/O error while committing")
        return super().commit_pass(mutations, label=label, sleep_id=sleep_id)


def test_an_unexpected_failure_is_recorded_and_raised_never_left_running(db: Path) -> None:
    """A store failure (not a reply) is raised for its caller to report; the record says
    error, and the store stays at the last pass boundary."""
    store = _FailingStore(db, clock=lambda: NOW)
    store.fail_on = "pass:merge:after"
    with store:
        with pytest.raises(OSError, match="disk I/O error"):
            list(run_sleep(store, None, POLICY, now=NOW))
        record = store.sleeps()[-1]
        assert record.status == "error" and "OSError: disk I/O error" in record.summary["error"]
        assert [v.label for v in store.versions()][-1] == "pass:merge:before"  # at a pass boundary


def test_a_sleep_abandoned_by_its_reader_is_recorded_as_cancelled(db: Path) -> None:
    with Store(db, clock=lambda: NOW) as store:
        gen = run_sleep(store, None, POLICY, now=NOW)
        assert next(gen).kind == "sleep started"
        assert next(gen).kind == "pass started"
        gen.close()
        record = store.sleeps()[-1]
        assert record.status == "cancelled" and record.finished_at is not None


def test_when_the_store_refuses_a_pass_the_engine_rules_still_apply(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: a gate that let through a text the store refuses costs the model's
    proposals of that pass (logged as refusals saying why), not the sleep."""
    real = gates.check

    def lax(pass_name: str, *args: Any, **kw: Any) -> gates.GateResult:
        result = real(pass_name, *args, **kw)
        if pass_name != "dedupe":
            return result
        bad = Mutation("dedupe", "merge", "m_3", True, reason="one pet", decided_by="model",
                       refs={"fromIds": ["m_4"], "mergedText": "The user keeps a bearded dragon.\x00"})
        return gates.GateResult(pass_name, 1, (bad,), (), (bad,))

    monkeypatch.setattr(gates, "check", lax)
    events, store = sleep_with(db, {"dedupe": {"drop": []}})
    with store:
        assert events[-1].kind == "sleep done" and store.sleeps()[-1].status == "done"
        dedupe = next(e for e in events if e.pass_name == "dedupe" and e.kind == "pass error")
        assert "the store refused this pass's writes" in dedupe.message
        rows = [r.mutation for r in store.mutations(pass_name="dedupe")]
        assert any(m.item_id == "m_3" and m.kind == "merge" and not m.accepted for m in rows)
        assert "\x00" not in store.get("m_3").text  # type: ignore[union-attr]
        assert any(m.accepted and m.decided_by == DecidedBy.DUPLICATE_RULE for m in rows)
        assert audit.reaudit(store, events[0].sleep_id or 0)[1] == []


# --- the property: no reply string makes run_sleep or the encoder raise --------------------

ANY_CHAR = st.characters(exclude_categories=())  # surrogates, NUL and controls included
ids = st.sampled_from([f"m_{i}" for i in range(1, len(SEED) + 2)])
texts = st.sampled_from([t for _, _, t, _ in SEED])


@st.composite
def hostile_strings(draw: st.DrawFn) -> str:
    base = draw(st.one_of(texts, st.text(ANY_CHAR, max_size=40), ids))
    kind = draw(st.sampled_from(["as is", "poison", "huge", "repeat"]))
    if kind == "poison":
        return base + draw(st.sampled_from(["\x00", "\ud800", "\udfff", "\u200b", "\x1b[2J", "\u202e"]))
    if kind == "huge":
        return base + "x" * draw(st.sampled_from([5_000, 100_000]))
    if kind == "repeat":
        return " ".join([base] * draw(st.integers(50, 120)))  # traceable, over the store's limit
    return base


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | hostile_strings(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(ANY_CHAR, max_size=6), inner,
                                                               max_size=4),
    max_leaves=12,
)
field_value = st.one_of(ids, hostile_strings(), json_values)


def shaped(list_key: str, fields: list[str]) -> st.SearchStrategy[Any]:
    entry = st.fixed_dictionaries({}, optional=dict.fromkeys(fields, field_value))
    return st.fixed_dictionaries({list_key: st.lists(entry | json_values, max_size=4)})


SHAPES: dict[str, st.SearchStrategy[Any]] = {
    "dedupe": shaped("drop", ["itemId", "duplicateOf", "reason"]),
    "merge": shaped("merge", ["intoId", "fromIds", "mergedText", "reason"])
    | st.builds(lambda into, frm, text, why: {"merge": [{"intoId": into, "fromIds": frm,
                                                           "mergedText": text, "reason": why}]},
                ids, st.lists(ids, max_size=3), hostile_strings(), hostile_strings()),
    "reconcile": shaped("supersede", ["oldId", "newId", "reason"]),
    "promote": shaped("promote", ["itemId", "toBlock", "reason"]),
    "forget": shaped("forget", ["itemId", "reason", "policy"]),
    "encoder": shaped("facts", ["text", "category", "turn"]),
}


def render(value: Any, draw: st.DrawFn) -> str:
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), allow_nan=True)
    wrap = draw(st.sampled_from(["", "fence", "think", "prose", "cut"]))
    if wrap == "fence":
        return f"```json\n{text}\n```"
    if wrap == "think":
        return f"<think>{draw(st.text(ANY_CHAR, max_size=20))}</think>{text}"
    if wrap == "prose":
        return f"Sure {{here}} it is: {text} hope it helps {{"
    if wrap == "cut":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    return text


class Raw(str):
    """A reply text whose repr stays short when hypothesis reports it (some are 10 MB)."""

    def __repr__(self) -> str:
        head = str.__repr__(str(self[:60]))
        return f"Raw({head}{'…' if len(self) > 60 else ''}, {len(self):,} characters)"


@st.composite
def replies(draw: st.DrawFn, task: str) -> Any:
    """One raw reply for ``task``: free text, a reply of the right shape with hostile values,
    random JSON of the wrong shape, deep nesting or a huge run of one character; sometimes
    marked as cut off at max_tokens (so the client's salvage path reads it)."""
    kind = draw(st.sampled_from(["text", "shaped", "wrong shape", "deep", "huge"]))
    if kind == "text":
        raw = draw(st.text(ANY_CHAR, max_size=200))
    elif kind == "shaped":
        raw = render(draw(SHAPES[task]), draw)
    elif kind == "wrong shape":
        raw = render(draw(json_values), draw)
    elif kind == "deep":
        depth = draw(st.sampled_from([900, 1_000, 5_000, 10_000]))
        opener = draw(st.sampled_from(["[", '{"a":', '{"drop":[', '{"facts":[']))
        raw = opener * depth + draw(st.sampled_from(["", "1" + "]" * depth]))
    else:
        raw = draw(st.sampled_from(["{", "[", "<think>", '"', "\\", "\x00", "\ud800", "{a}"])) * draw(
            st.sampled_from([10_000, 1_000_000]))
    return Truncated(Raw(raw)) if draw(st.booleans()) and kind != "huge" else Raw(raw)


TEN_MB = Raw("{" * 10_000_000)
DEEP_10K = Raw('{"merge": [' + "[" * 10_000 + "]" * 10_000 + "]}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(data=st.data())
@example(data=None)
def test_no_reply_makes_run_sleep_raise_and_the_store_stays_sound(data: st.DataObject | None) -> None:
    if data is None:  # the pinned worst cases: 10 MB, 10,000 deep, NaN, surrogate, NUL
        answers: dict[str, Any] = {
            "dedupe": TEN_MB, "merge": DEEP_10K,
            "promote": '{"promote": [{"itemId": "m_3", "toBlock": NaN, "reason": "\\ud800"}]}',
            "forget": '{"forget": [{"itemId": "m_9\\u0000", "reason": Infinity}]}',
        }
    else:
        answers = {task: data.draw(replies(task), label=task) for task in gates.LIST_KEY}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nocturne.db"
        seed(path)
        events, store = sleep_with(path, answers)
        with store:
            assert_sound(store, events)
            assert not any("the store refused" in e.message for e in events), "the gate missed it"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(reply=replies("encoder"))
@example(reply=TEN_MB)
@example(reply=Raw('{"facts": [' + "[" * 10_000 + "]" * 10_000 + "]}"))
@example(reply='{"facts": [{"text": "The user lives in Lisbon\\u0000", "category": NaN, "turn": 1e999}]}')
def test_no_reply_makes_the_encoder_raise_and_the_store_stays_sound(reply: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "enc.db") as store:
        for role, text in [("user", SEED[2][2].replace("The user", "I")), ("assistant", "What is its name?"),
                           ("user", "Saffron. I live in Lisbon and work best in the morning.")]:
            store.add_turn(role, text)
        result = Encoder(store, FakeModel([reply], client_parsing=True)).encode_new_turns()
        assert store.get_meta(CURSOR_KEY) == "3", result.error
        assert store.integrity_check() == "ok"
        assert "the store refused" not in (result.error or ""), "the gate missed it"
        trace = audit.traceability(store.active_facts(), [t.text for t in store.turns()])
        assert trace.problems == ()
        for row in store.mutations(pass_name="encoder"):
            assert len(json.dumps(row.mutation.refs, ensure_ascii=False)) <= 3 * limits.RAW_EXCERPT_CHARS
