"""Full collections deferred while a long job runs (nocturne_desktop.ui.jobs.deferred_gc)."""

from __future__ import annotations

import gc

import pytest

from nocturne_desktop.ui.jobs import deferred_gc
from nocturne_desktop.ui.jobs.deferred_gc import deferred_full_collections


def test_defers_the_full_collection_and_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with deferred_full_collections():
        t0, t1, t2 = gc.get_threshold()
        assert (t0, t1) == before[:2]
        assert t2 == deferred_gc.DEFERRED_THRESHOLD2
    assert gc.get_threshold() == before


def test_nested_uses_restore_only_when_the_last_one_leaves() -> None:
    before = gc.get_threshold()
    outer = deferred_full_collections()
    outer.__enter__()
    with deferred_full_collections():
        pass
    assert gc.get_threshold()[2] == deferred_gc.DEFERRED_THRESHOLD2  # the outer sleep still runs
    outer.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_restores_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), deferred_full_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_the_sleep_job_runs_with_full_collections_deferred(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from nocturne_desktop.core.cancel import CancelToken
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.ui.jobs.bodies import sleep as sleep_bodies

    before = gc.get_threshold()
    with Store(tmp_path / "m.db") as store:
        ctx = SimpleNamespace(store=store, model=None, cancel=CancelToken())
        seen = [gc.get_threshold()[2] for _ev in sleep_bodies.sleep(ctx, RetentionPolicy(),  # type: ignore[arg-type]
                                                                    use_model=False)]
    assert seen and set(seen) == {deferred_gc.DEFERRED_THRESHOLD2}
    assert gc.get_threshold() == before
