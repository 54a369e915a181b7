"""Sleep with review (S-EDIT-2): the dry run's plan, an approved subset applied as one sleep,
re-gated against the live store; a stale plan is refused; dependencies are named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelUnreachable
from nocturne_desktop.core.sleep import review, run_sleep
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import FakeModel
from tests.core.sleepkit import NOW, cooperative, seed

POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=120)


def scripted(extra: Callable[[str, dict[str, Any], dict[str, Any]], None] | None = None) -> FakeModel:
    """The cooperative model, plus whatever ``extra`` adds to a pass's answer."""
    answers = cooperative()

    def respond(call: Any) -> Any:
        payload = json.loads(call.last_user)
        task = payload["task"]
        out = answers[task](payload)
        if extra is not None:
            extra(task, payload, out)
        return out

    return FakeModel(responder=respond)


def greedy(task: str, payload: dict[str, Any], out: dict[str, Any]) -> None:
    """Also promote the merged fact m_5 (a change that depends on the merge) and m_1, which is
    in human already (a refusal the plan shows)."""
    if task == "promote":
        out["promote"] += [{"itemId": "m_5", "toBlock": "human", "reason": "a stable stack"},
                           {"itemId": "m_1", "toBlock": "human", "reason": "durable"}]


def state(store: Store) -> list[tuple[Any, ...]]:
    return [(f.id, f.block, f.text, f.category, f.active, f.pinned, f.superseded_by)
            for f in store.all_facts()]


def log(store: Store, sleep_id: int) -> list[tuple[Any, ...]]:
    return [(r.mutation.pass_name, r.mutation.kind, r.mutation.item_id, r.mutation.accepted,
             r.mutation.decided_by, r.mutation.reason, r.mutation.rejection_reason)
            for r in store.mutations(sleep_id=sleep_id)]


def twins(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    seed(a)
    seed(b)
    return a, b


def find(p: review.Plan, kind: str, item_id: str) -> review.PlanItem:
    (it,) = [i for i in p.items if i.mutation.kind == kind and i.mutation.item_id == item_id]
    return it


@pytest.mark.parametrize("with_model", [True, False], ids=["model", "rules-only"])
def test_plan_then_apply_all_is_a_normal_sleep(tmp_path: Path, with_model: bool) -> None:
    a, b = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        events = list(run_sleep(store, scripted(greedy) if with_model else None, POLICY, now=NOW))
        normal_id = events[0].sleep_id
        assert normal_id is not None
        normal_state, normal_log = state(store), log(store, normal_id)
        normal_labels = [v.label for v in store.versions()]
    with Store(b, clock=lambda: NOW) as store:
        before = store.dump()
        p = review.plan(store, scripted(greedy) if with_model else None, POLICY, now=NOW)
        assert store.dump() == before  # a plan writes nothing
        assert p.passes == ("dedupe", "merge", "reconcile", "promote", "forget")
        assert p.active_after == sum(1 for s in normal_state if s[4])
        result = review.apply_plan(store, p, p.tickable)
        assert state(store) == normal_state
        assert log(store, result.sleep_id) == normal_log
        assert [v.label for v in store.versions()] == normal_labels
        assert result.refused == {} and result.unticked == ()
        assert store.sleeps()[-1].status == "done" and not store.sleeps()[-1].dry_run


def test_refused_proposals_are_in_the_plan_but_not_tickable(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(greedy), POLICY, now=NOW)
        no = find(p, "promote", "m_1")
        assert not no.tickable and no.n not in p.tickable and no.verdict == "refused"
        assert no.why == "itemId m_1 was not among the facts given to this pass"
        with pytest.raises(InvalidInput, match=f"change {no.n} was refused by its gate"):
            review.apply_plan(store, p, [no.n])
        merge = find(p, "merge", "m_5")
        assert merge.after[0].text == ("The user's stack is Airflow and Postgres. "
                                       "The user's stack runs Airflow jobs nightly.")
        assert [f.id for f in merge.before] == ["m_5", "m_6"]


def test_untick_one_applies_exactly_the_rest(tmp_path: Path) -> None:
    a, b = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(), POLICY, now=NOW)
        skip = find(p, "forget", "m_9")
        rest = [n for n in p.tickable if n != skip.n]
        result = review.apply_plan(store, p, rest)
        assert result.applied == tuple(rest) and result.unticked == (skip.n,)
        assert result.refused == {}
        got = {f.id: f for f in store.all_facts()}
        assert got["m_9"].active  # the unticked forgetting did not happen
        rows = [r.mutation for r in store.mutations(sleep_id=result.sleep_id, item_id="m_9")]
        assert [(m.kind, m.accepted, m.decided_by, m.rejection_reason) for m in rows] == [
            ("forget", False, "you", review.UNTICKED)]
        mine = state(store)
    with Store(b, clock=lambda: NOW) as store:  # the rest is exactly what a full sleep did
        list(run_sleep(store, scripted(), POLICY, now=NOW))
        full = state(store)
    assert [s for s in mine if s[0] != "m_9"] == [s for s in full if s[0] != "m_9"]


def test_a_change_that_relies_on_an_unticked_one_is_refused_with_the_reason(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(greedy), POLICY, now=NOW)
        merge, promote = find(p, "merge", "m_5"), find(p, "promote", "m_5")
        assert promote.depends_on == (merge.n,)
        assert p.dependents(merge.n) == {promote.n} and p.requirements(promote.n) == {merge.n}
        result = review.apply_plan(store, p, [n for n in p.tickable if n != merge.n])
        why = (f"re-gated at apply: it relies on change {merge.n}, merge m_5 (merge pass), which "
               "you left unticked: without it m_5 is not what the plan showed")
        assert result.refused == {promote.n: why}
        (row,) = [r.mutation for r in store.mutations(sleep_id=result.sleep_id, item_id="m_5")
                  if r.mutation.kind == "promote"]
        assert not row.accepted and row.rejection_reason == why
        m5 = store.get("m_5")
        assert m5 is not None and m5.block == "scratch"
        assert m5.text == "The user's stack is Airflow and Postgres."


def test_a_stale_plan_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(), POLICY, now=NOW)
        assert review.stale_reason(store, p) is None
        store.pin("m_8")  # the person pins a fact the plan forgets
        before = store.dump()
        with pytest.raises(review.PlanStale, match="memory changed since the plan was made") as exc:
            review.apply_plan(store, p, p.tickable)
        assert "m_8" in str(exc.value) and "re-plan" in str(exc.value)
        assert store.dump() == before


def test_applied_to_a_stale_plan_each_change_is_regated_against_live_memory(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(), POLICY, now=NOW)
        store.pin("m_8")
        forget = find(p, "forget", "m_8")
        result = review.apply_plan(store, p, p.tickable, allow_stale=True)
        assert result.refused == {forget.n: (
            "re-gated at apply: m_8 is pinned by you: a pinned fact is never forgotten by a "
            "rule or the model")}
        m8 = store.get("m_8")
        assert m8 is not None and m8.active and m8.pinned
        assert forget.n not in result.applied and len(result.applied) == len(p.tickable) - 1


def test_the_applied_review_is_one_sleep_that_one_undo_takes_back(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        start = state(store)
        p = review.plan(store, None, POLICY, now=NOW)
        result = review.apply_plan(store, p, p.tickable[1:])
        assert state(store) != start
        assert {v.sleep_id for v in store.versions()} == {result.sleep_id}
        store.undo()
        assert state(store) == start


def test_unknown_change_numbers_are_refused(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, None, POLICY, now=NOW)
        with pytest.raises(InvalidInput, match="the plan has no change 99"):
            review.apply_plan(store, p, [99])
        assert store.sleeps() == []


def test_a_reviewed_sleep_passes_the_reaudit(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, scripted(greedy), POLICY, now=NOW)
        merge = find(p, "merge", "m_5")
        result = review.apply_plan(store, p, [n for n in p.tickable if n != merge.n])
        checked, problems = audit.reaudit(store, result.sleep_id)
        assert checked == len(result.applied) and problems == []


def test_a_plan_cut_short_by_the_model_applies_only_the_passes_it_holds(tmp_path: Path) -> None:
    a, _ = twins(tmp_path)
    answers = cooperative()

    def respond(call: Any) -> Any:
        payload = json.loads(call.last_user)
        if payload["task"] == "promote":
            return ModelUnreachable("the server went away")
        return answers[payload["task"]](payload)

    with Store(a, clock=lambda: NOW) as store:
        p = review.plan(store, FakeModel(responder=respond), POLICY, now=NOW)
        assert p.passes == ("dedupe", "merge", "reconcile") and p.ended == "sleep failed"
        assert "the server went away" in p.message
        result = review.apply_plan(store, p, p.tickable)
        labels = [v.label for v in store.versions()]
        assert labels[-1] == "pass:reconcile:after" and "pass:promote:before" not in labels
        assert len(result.applied) == len(p.tickable)
