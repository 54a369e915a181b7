"""Sleep end to end against the scripted OpenAI-compatible server (real socket, real client)."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEvent, rules, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES
from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from tests.core.sleepkit import NOW, cooperative, pass_responder, seed, task_of
from tests.fakeserver import FakeLLM, Reply

POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=120)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "nocturne.db"
    seed(path)
    return path


def client_for(server: FakeLLM) -> OpenAIClient:
    return OpenAIClient(server.base_url, "fake-model", timeouts=Timeouts(connect=2, first_token=5, idle=5))


def run(db: Path, model: OpenAIClient | None, **kw: object) -> list[SleepEvent]:
    with Store(db, clock=lambda: NOW) as store:
        return list(run_sleep(store, model, kw.pop("policy", POLICY), now=NOW, **kw))  # type: ignore[arg-type]


def kinds(events: list[SleepEvent]) -> list[str]:
    return [e.kind + (f":{e.pass_name}" if e.pass_name else "") for e in events]


def test_cooperative_sleep_applies_every_pass_and_survives_reaudit(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder(cooperative()))
    events = run(db, client_for(fake_llm))
    assert kinds(events) == ["sleep started"] + [
        f"pass {k}:{p}" for p in PASSES for k in ("started", "done")
    ] + ["sleep done"]
    done = {e.pass_name: e.figures for e in events if e.kind == "pass done"}
    assert done["dedupe"] and done["dedupe"].accepted == 2 and done["dedupe"].enforced == 0
    assert done["forget"] and done["forget"].accepted == 2  # the two 60+ day old events
    with Store(db) as store:
        labels = [v.label for v in store.versions()]
        assert labels == ["consolidation:start"] + [
            f"pass:{p}:{w}" for p in PASSES for w in ("before", "after")]
        sleep_id = events[0].sleep_id
        assert sleep_id is not None
        checked, problems = audit.reaudit(store, sleep_id)
        assert checked == events[-1].totals["accepted"] and problems == []  # type: ignore[index]
        assert store.sleeps()[-1].status == "done"
        active = {f.text for f in store.active_facts()}
        assert "The user keeps a bearded dragon." not in active
        assert "The user went to a conference in Porto." not in active


def test_payloads_hold_only_what_each_pass_may_act_on(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder({}))
    run(db, client_for(fake_llm))
    bodies = {task_of(r)[0]: task_of(r)[1] for r in fake_llm.chat_requests()}
    pair_ids = {i for p in bodies["dedupe"]["candidatePairs"] for i in (p["dropId"], p["keeperId"])}
    assert pair_ids == {"m_1", "m_2", "m_3", "m_4"}
    assert {f["itemId"] for f in bodies["promote"]["scratch"]} <= {f"m_{i}" for i in range(1, 11)}
    assert all(f["itemId"] not in ("m_1", "m_8", "m_9") for f in bodies["promote"]["scratch"])
    assert {f["itemId"] for f in bodies["forget"]["eligible"]} == {"m_8", "m_9"}
    # every request bounds its array and asks for the strongest structured mode first
    for r in fake_llm.chat_requests():
        assert r.body["max_tokens"] > 0


def test_model_refusals_are_logged_and_backstops_enforce(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder({
        "dedupe": {"drop": [{"itemId": "m_3", "duplicateOf": "m_1", "reason": "both about the user"},
                            {"itemId": "m_2", "duplicateOf": "m_99", "reason": "ghost"}]},
        "promote": {"promote": [{"itemId": "m_3", "toBlock": "longterm", "reason": "durable"}]},
    }))
    events = run(db, client_for(fake_llm))
    done = {e.pass_name: e.figures for e in events if e.kind == "pass done"}
    assert done["dedupe"] is not None and done["dedupe"].rejected == 2
    assert done["dedupe"].enforced == 2  # the two real pairs, left unadjudicated
    assert done["promote"] is not None and done["promote"].enforced >= 2
    with Store(db) as store:
        rejected = store.mutations(accepted=False)
        reasons = {m.mutation.rejection_reason for m in rejected}
        assert any("below the threshold" in (r or "") for r in reasons)
        assert any("'m_99' does not exist in the pre-pass store" in (r or "") for r in reasons)
        assert any("'longterm' is not one of" in (r or "") for r in reasons)
        enforced = [m.mutation for m in store.mutations(accepted=True) if m.mutation.enforced]
        assert {m.decided_by for m in enforced} >= {"duplicate-rule", "promotion-rule"}
        checked, problems = audit.reaudit(store, events[0].sleep_id or 0)
        assert checked > 0 and problems == []


def test_figures_count_the_models_accepted_proposals_apart_from_the_rules(
    db: Path, fake_llm: FakeLLM
) -> None:
    """``accepted`` is every change a pass applied; ``accepted_proposals`` only the model's, so
    that with ``rejected`` it says what came of ``proposed`` (fails on the old code: there was
    no such count, and the table showed ``accepted`` beside ``proposed``)."""
    fake_llm.respond_with(pass_responder({
        "dedupe": {"drop": [{"itemId": "m_3", "duplicateOf": "m_1", "reason": "both about the user"},
                            {"itemId": "m_2", "duplicateOf": "m_99", "reason": "ghost"}]},
        "forget": cooperative()["forget"],
    }))
    done = {e.pass_name: e.figures for e in run(db, client_for(fake_llm)) if e.kind == "pass done"}
    dedupe, forget = done["dedupe"], done["forget"]
    assert dedupe is not None and forget is not None
    # two proposals, both refused; the duplicate rule dropped the two real pairs itself
    assert (dedupe.proposed, dedupe.rejected, dedupe.enforced, dedupe.accepted) == (2, 2, 2, 2)
    assert dedupe.accepted_proposals == 0
    # the two stale events proposed and accepted, nothing left for the retention rule
    assert (forget.proposed, forget.accepted_proposals, forget.rejected) == (2, 2, 0)
    for fig in done.values():
        assert fig is not None
        assert fig.accepted_proposals + fig.enforced == fig.accepted
        assert fig.accepted_proposals + fig.rejected <= fig.proposed


def test_unparseable_reply_is_logged_raw_and_the_sleep_continues(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder({"dedupe": "I think m_2 and m_1 are the same, friend!"}))
    events = run(db, client_for(fake_llm))
    assert kinds(events)[-1] == "sleep done"
    err = next(e for e in events if e.kind == "pass error")
    assert err.pass_name == "dedupe" and err.figures is not None and err.figures.enforced == 2
    with Store(db) as store:
        rows = [m.mutation for m in store.mutations(pass_name="dedupe", accepted=False)]
        reply = next(m for m in rows if m.kind == "reply")
        assert "friend" in reply.refs["raw"]
        assert not [m for m in store.mutations(pass_name="dedupe", accepted=True)
                    if m.mutation.decided_by == "model"]


def test_truncated_reply_salvages_complete_entries_only(db: Path, fake_llm: FakeLLM) -> None:
    cut = '{"drop":[{"itemId":"m_2","duplicateOf":"m_1","reason":"same"},{"itemId":"m_4","dup'
    fake_llm.respond_with(pass_responder({"dedupe": Reply.text(cut, finish_reason="length")}))
    events = run(db, client_for(fake_llm))
    fig = next(e.figures for e in events if e.kind == "pass done" and e.pass_name == "dedupe")
    assert fig is not None and fig.salvaged and fig.proposed == 1
    with Store(db) as store:
        model_drops = [m.mutation for m in store.mutations(pass_name="dedupe", accepted=True)
                       if m.mutation.decided_by == "model"]
        assert [m.item_id for m in model_drops] == ["m_2"] and model_drops[0].refs["salvaged"]
        notes = [m.mutation for m in store.mutations(pass_name="dedupe", accepted=False)
                 if m.mutation.kind == "reply"]
        assert notes and "salvaged" in (notes[0].rejection_reason or "")


def test_endpoint_dying_mid_sleep_stops_at_a_pass_boundary(db: Path, fake_llm: FakeLLM) -> None:
    calls = {"n": 0}
    base = pass_responder(cooperative())

    def respond(req):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if task_of(req)[0] == "promote":
            return Reply.fault("reset")
        return base(req)

    fake_llm.respond_with(respond)
    events = run(db, client_for(fake_llm))
    assert events[-1].kind == "sleep failed" and "promote" in events[-1].message
    with Store(db) as store:
        last_after = next(v for v in store.versions() if v.label == "pass:merge:after")
        assert _state(store.state_at(last_after.seq)) == _state(store.all_facts())
        assert store.sleeps()[-1].status == "error"
        assert not store.mutations(pass_name="promote")


def _state(facts: list) -> list:  # type: ignore[type-arg]
    return sorted((f.id, f.block, f.text, f.active) for f in facts)


@pytest.mark.parametrize("stop_after", ["sleep started", "dedupe", "merge", "promote"])
def test_cancel_at_each_pass_boundary(db: Path, fake_llm: FakeLLM, stop_after: str) -> None:
    fake_llm.respond_with(pass_responder(cooperative()))
    token = CancelToken()
    events = []
    with Store(db, clock=lambda: NOW) as store:
        for ev in run_sleep(store, client_for(fake_llm), POLICY, now=NOW, cancel=token):
            events.append(ev)
            if ev.kind == stop_after or (ev.kind == "pass done" and ev.pass_name == stop_after):
                token.cancel()
        assert events[-1].kind == "sleep cancelled"
        versions = store.versions()
        boundary = [v for v in versions if v.label.endswith(":after") or v.label == "consolidation:start"][-1]
        assert _state(store.state_at(boundary.seq)) == _state(store.all_facts())
        completed = {e.pass_name for e in events if e.kind == "pass done"}
        for row in store.mutations():
            assert row.mutation.pass_name in completed
        assert store.sleeps()[-1].status == "cancelled"


def test_cancel_during_a_model_call_returns_promptly(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(lambda req: Reply.fault("hang"))
    token = CancelToken()
    threading.Timer(0.3, token.cancel).start()
    events = run(db, client_for(fake_llm), cancel=token)
    assert events[-1].kind == "sleep cancelled"
    assert fake_llm.wait_for_disconnect(timeout=2.0) is not None
    with Store(db) as store:
        assert store.mutations() == []


def test_dry_run_writes_nothing_and_reports_the_same_plan(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder(cooperative()))
    before = db.read_bytes()
    with Store(db) as store:
        n_versions, n_active = len(store.versions()), store.active_count()
    dry = run(db, client_for(fake_llm), dry_run=True)
    with Store(db) as store:
        assert len(store.versions()) == n_versions and store.active_count() == n_active
        assert store.mutations() == [] and store.sleeps() == []
    assert all(e.sleep_id is None for e in dry)
    real = run(db, client_for(fake_llm))
    figs = lambda evs: [(e.pass_name, e.figures.proposed, e.figures.accepted, e.figures.active_after)  # noqa: E731
                        for e in evs if e.kind == "pass done" and e.figures]
    assert figs(dry) == figs(real)
    assert before  # the seeded file existed


def test_rules_only_sleep(db: Path) -> None:
    events = run(db, None, policy=RetentionPolicy(max_active_facts=6))
    assert events[0].rules_only and events[-1].kind == "sleep done"
    with Store(db) as store:
        rows = [m.mutation for m in store.mutations(accepted=True)]
        assert rows and all(m.decided_by != "model" for m in rows)
        assert {m.decided_by for m in rows} == {"duplicate-rule", "promotion-rule",
                                                "retention-rule"}
        assert store.active_count() <= 6 or all(
            f.category in RetentionPolicy().protected_categories for f in store.active_facts())
        checked, problems = audit.reaudit(store, events[0].sleep_id or 0)
        assert checked == len(rows) and problems == []


def test_undo_after_sleep_restores_the_exact_state(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder(cooperative()))
    run(db, client_for(fake_llm))
    with Store(db) as store:
        start = next(v for v in store.versions() if v.label == "consolidation:start")
        store.restore(start.seq)
        assert _state(store.active_facts()) == _state(
            [f for f in store.state_at(start.seq) if f.active])


def test_reaudit_catches_a_forged_row(db: Path, fake_llm: FakeLLM) -> None:
    """The re-audit must be able to fail: rewrite an accepted merge's result behind its back."""
    fake_llm.respond_with(pass_responder(cooperative()))
    events = run(db, client_for(fake_llm))
    with Store(db) as store:
        merged = store.mutations(pass_name="merge", accepted=True)
        assert merged
        # a later hand edit does not change the recorded version, so forge the version itself
        import sqlite3
        conn = sqlite3.connect(db)
        target = merged[0].mutation.item_id
        for table in ("items", "item_history"):
            conn.execute(f"UPDATE {table} SET text = 'The user invented Kubernetes in Madrid.' "
                         "WHERE num = ? AND from_seq = ?", (int(target.split("_")[1]), merged[0].seq))
        conn.commit()
        conn.close()
        _, problems = audit.reaudit(store, events[0].sleep_id or 0)
        assert problems and any("not traceable" in p.problem or "names" in p.problem for p in problems)
    assert json.dumps([p.problem for p in problems])


@pytest.mark.parametrize("where", ["before", "after"])
def test_cli_sleep_takes_the_data_dir_on_either_side(db: Path, where: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from nocturne_desktop import cli

    folder = ["--data-dir", str(db.parent)]
    argv = [*folder, "sleep", "--rules-only"] if where == "before" else ["sleep", *folder, "--rules-only"]
    assert cli.main(argv) == 0
    assert "sleep done" in capsys.readouterr().out
    with Store(db) as store:
        assert store.sleeps()[-1].status == "done"


def test_identical_copies_are_dropped_by_rule_without_asking_the_model(
    db: Path, fake_llm: FakeLLM
) -> None:
    from nocturne_desktop.core.types import FactDraft

    with Store(db, clock=lambda: NOW) as store:
        copies = [store.append("scratch", FactDraft("The user had toast for breakfast!", "context", 10,
                                                    NOW - 86400)).id for _ in range(3)]
    fake_llm.respond_with(pass_responder(cooperative()))
    events = run(db, client_for(fake_llm))
    dedupe_bodies = [task_of(r)[1] for r in fake_llm.chat_requests() if task_of(r)[0] == "dedupe"]
    sent = {i for b in dedupe_bodies for p in b["candidatePairs"] for i in (p["dropId"], p["keeperId"])}
    assert not sent & {"m_10", *copies}  # m_10 is the seeded "toast" fact they copy
    with Store(db) as store:
        rule = [m.mutation for m in store.mutations(pass_name="dedupe", accepted=True)
                if m.mutation.refs.get("identical")]
        assert sorted(m.item_id for m in rule) == sorted(copies)
        assert all(m.decided_by == "duplicate-rule" and m.refs["duplicateOf"] == "m_10"
                   for m in rule)
        _, problems = audit.reaudit(store, events[0].sleep_id or 0)
        assert problems == []


def test_a_smaller_budget_splits_a_pass_into_more_requests(db: Path, fake_llm: FakeLLM) -> None:
    fake_llm.respond_with(pass_responder({}))
    run(db, client_for(fake_llm), dry_run=True, budget_tokens=5000)
    wide = [task_of(r)[1] for r in fake_llm.chat_requests() if task_of(r)[0] == "promote"]
    fake_llm.requests.clear()
    run(db, client_for(fake_llm), dry_run=True, budget_tokens=40)
    narrow = [task_of(r)[1] for r in fake_llm.chat_requests() if task_of(r)[0] == "promote"]
    assert len(wide) == 1 and len(narrow) > 1
    offered = sorted(f["itemId"] for b in narrow for f in b["scratch"])
    assert offered == sorted(f["itemId"] for f in wide[0]["scratch"])  # each offered once


def test_cli_still_accepts_the_old_flag_name(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--engine-only`` was the flag's name before the rules were called rules."""
    from nocturne_desktop import cli

    assert cli.main(["--data-dir", str(db.parent), "sleep", "--engine-only", "--dry-run"]) == 0
    assert "sleep done" in capsys.readouterr().out


def test_reaudit_catches_a_stored_fact_its_row_does_not_explain(db: Path, fake_llm: FakeLLM) -> None:
    """A merge whose stored text is traceable but is not the text its row records is caught:
    the version after a pass must be what the recorded change makes of the version before."""
    fake_llm.respond_with(pass_responder(cooperative()))
    events = run(db, client_for(fake_llm))
    with Store(db) as store:
        row = store.mutations(pass_name="merge", accepted=True)[0]
        _, clean = audit.reaudit(store, events[0].sleep_id or 0)
        assert clean == []
        source = next(iter(row.mutation.refs["sources"].values()))  # a source's own words
        import sqlite3
        conn = sqlite3.connect(db)
        num = int(row.mutation.item_id.split("_")[1])
        for table in ("items", "item_history"):
            conn.execute(f"UPDATE {table} SET text = ? WHERE num = ? AND from_seq = ?",
                         (source, num, row.seq))
        conn.commit()
        conn.close()
        _, problems = audit.reaudit(store, events[0].sleep_id or 0)
        # the stored text is also incomplete by the meaning guards; both findings are reported
        assert (f"{row.mutation.item_id} after its pass is not what the recorded merge makes of it"
                in [p.problem for p in problems])


def test_reaudit_follows_a_keeper_the_duplicate_rule_dropped_on_in_the_same_pass(tmp_path: Path) -> None:
    """The duplicate rule may drop a keeper of an earlier round into a larger survivor (m_1 → m_2,
    then m_2 → m_4): the re-audit follows that chain instead of calling it a lost keeper (a 30-minute
    soak found it), and still flags a chain that ends in a fact that did not survive."""
    from nocturne_desktop.core.types import FactDraft

    texts = ["The user likes green tea.", "The user likes green tea in the morning.",
             "The user likes green tea in the morning with honey.",
             "The user likes green tea in the morning with honey and lemon."]
    with Store(tmp_path / "n.db") as store:
        for t in texts:
            store.append("scratch", FactDraft(t, "preferences", None))
        drops = {m.item_id: m.refs["duplicateOf"] for m in rules.duplicate_rule(store, RetentionPolicy())}
        assert drops["m_1"] == "m_2" and drops["m_2"] == "m_4"  # the chain this test is about
        events = list(run_sleep(store, None, RetentionPolicy()))
        sleep_id = events[-1].sleep_id or 0
        checked, problems = audit.reaudit(store, sleep_id)
        assert checked >= 3 and problems == []
        # the same rows read against a pass whose last survivor is gone: still a finding
        row = next(r for r in store.mutations(sleep_id=sleep_id, accepted=True)
                   if r.mutation.item_id == "m_1")
        before = {f.id: f for f in store.state_at((row.seq or 1) - 1)}
        after = {f.id: f for f in store.state_at(row.seq or 1)}
        after["m_4"] = dataclasses.replace(after["m_4"], active=False)
        whys = audit._check_row(mu.from_row(row.mutation), before, after, RetentionPolicy(), 0.0,
                                None, {"m_1": "m_2", "m_2": "m_4"})
        assert "keeper m_2 did not survive the pass (nor did m_4, where it was dropped)" in whys
