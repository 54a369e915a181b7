"""verify's "policy changes the outcome" expectation is judged on what reaches Forget."""

from __future__ import annotations

from nocturne_desktop.core.checks.verify import cap_must_forget


def figures(forget_input: int) -> dict[str, object]:
    return {"passes": [{"pass_name": "dedupe", "input": 14}, {"pass_name": "forget",
                                                             "input": forget_input}]}


def test_duplicates_that_leave_only_protected_facts_expect_no_difference() -> None:
    # seen with the built-in model: 14 active, 7 protected; Dedupe and Merge left 7 for Forget
    assert cap_must_forget(figures(7), protected=7, stale=0, cap=6) is False


def test_unprotected_fresh_facts_over_the_cap_must_be_forgotten() -> None:
    assert cap_must_forget(figures(10), protected=7, stale=0, cap=6) is True
    assert cap_must_forget(figures(11), protected=7, stale=3, cap=6) is True   # 8 left after stale
    assert cap_must_forget(figures(10), protected=7, stale=3, cap=6) is False  # all 7 protected
    assert cap_must_forget(figures(9), protected=7, stale=3, cap=6) is False   # 6 left: at the cap
    assert cap_must_forget({"passes": []}, protected=0, stale=0, cap=6) is False
