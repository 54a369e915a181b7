"""The window's item models, one module a model, and the plain data and text under them.

- :mod:`.text`: how a fact, a time, a label or a decider is written in a cell (no Qt);
- :mod:`.pagers`: where the block tree reads its rows, a page by key (no Qt);
- :mod:`.paging`: which rows of each block are loaded, as events (no Qt);
- :mod:`.tree`: the block tree and its text filter; :mod:`.timeline`: versions by sleep;
  :mod:`.tables`: the flat tables; :mod:`.plan` with :mod:`.planpages` (no Qt): a review's plan;
- :mod:`.roles` and :mod:`.release`: the roles the models share, and freeing big results in
  slices.

The names below load their module on first use, so this package imports no Qt by itself: a
worker process imports :mod:`.planpages`, and the paging's tests run without Qt.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nocturne_desktop.ui.models.pagers import FactPager as FactPager
    from nocturne_desktop.ui.models.pagers import FirstPages as FirstPages
    from nocturne_desktop.ui.models.pagers import MatchPager as MatchPager
    from nocturne_desktop.ui.models.pagers import StatePager as StatePager
    from nocturne_desktop.ui.models.pagers import StorePager as StorePager
    from nocturne_desktop.ui.models.pagers import read_first_pages as read_first_pages
    from nocturne_desktop.ui.models.paging import BlockPaging as BlockPaging
    from nocturne_desktop.ui.models.paging import Loaded as Loaded
    from nocturne_desktop.ui.models.paging import PagingEvents as PagingEvents
    from nocturne_desktop.ui.models.plan import PASS_TITLES as PASS_TITLES
    from nocturne_desktop.ui.models.plan import PlanIndex as PlanIndex
    from nocturne_desktop.ui.models.plan import PlanModel as PlanModel
    from nocturne_desktop.ui.models.plan import before_after as before_after
    from nocturne_desktop.ui.models.plan import short_verdict as short_verdict
    from nocturne_desktop.ui.models.plan import status_of as status_of
    from nocturne_desktop.ui.models.planpages import PlanPages as PlanPages
    from nocturne_desktop.ui.models.planpages import paged as paged
    from nocturne_desktop.ui.models.planpages import whole as whole
    from nocturne_desktop.ui.models.release import RELEASE_SLICE as RELEASE_SLICE
    from nocturne_desktop.ui.models.release import release_later as release_later
    from nocturne_desktop.ui.models.release import release_some as release_some
    from nocturne_desktop.ui.models.roles import ROLE_OBJECT as ROLE_OBJECT
    from nocturne_desktop.ui.models.tables import DiffTableModel as DiffTableModel
    from nocturne_desktop.ui.models.tables import PassRow as PassRow
    from nocturne_desktop.ui.models.tables import PassTableModel as PassTableModel
    from nocturne_desktop.ui.models.tables import QuizTableModel as QuizTableModel
    from nocturne_desktop.ui.models.tables import RejectedTableModel as RejectedTableModel
    from nocturne_desktop.ui.models.tables import RowsModel as RowsModel
    from nocturne_desktop.ui.models.text import PIN_MARK as PIN_MARK
    from nocturne_desktop.ui.models.text import age_text as age_text
    from nocturne_desktop.ui.models.text import clock_text as clock_text
    from nocturne_desktop.ui.models.text import decided_text as decided_text
    from nocturne_desktop.ui.models.text import fit_columns as fit_columns
    from nocturne_desktop.ui.models.text import is_enforced as is_enforced
    from nocturne_desktop.ui.models.text import one_line as one_line
    from nocturne_desktop.ui.models.text import plain_tooltip as plain_tooltip
    from nocturne_desktop.ui.models.text import superseded_note as superseded_note
    from nocturne_desktop.ui.models.text import version_label as version_label
    from nocturne_desktop.ui.models.timeline import TimelineModel as TimelineModel
    from nocturne_desktop.ui.models.timeline import UndoneSleeps as UndoneSleeps
    from nocturne_desktop.ui.models.timeline import undone_sleeps as undone_sleeps
    from nocturne_desktop.ui.models.tree import BlockTreeModel as BlockTreeModel
    from nocturne_desktop.ui.models.tree import FactFilterProxy as FactFilterProxy

_WHERE = {
    "PIN_MARK": "text", "age_text": "text", "clock_text": "text", "decided_text": "text",
    "fit_columns": "text", "is_enforced": "text", "one_line": "text", "plain_tooltip": "text",
    "superseded_note": "text", "version_label": "text",
    "ROLE_OBJECT": "roles",
    "RELEASE_SLICE": "release", "release_later": "release", "release_some": "release",
    "FactPager": "pagers", "FirstPages": "pagers", "MatchPager": "pagers", "StatePager": "pagers",
    "StorePager": "pagers", "read_first_pages": "pagers",
    "BlockPaging": "paging", "Loaded": "paging", "PagingEvents": "paging",
    "BlockTreeModel": "tree", "FactFilterProxy": "tree",
    "TimelineModel": "timeline", "UndoneSleeps": "timeline", "undone_sleeps": "timeline",
    "DiffTableModel": "tables", "PassRow": "tables", "PassTableModel": "tables",
    "QuizTableModel": "tables", "RejectedTableModel": "tables", "RowsModel": "tables",
    "PASS_TITLES": "plan", "PlanIndex": "plan", "PlanModel": "plan", "before_after": "plan",
    "short_verdict": "plan", "status_of": "plan",
    "PlanPages": "planpages", "paged": "planpages", "whole": "planpages",
}
"""Each name this package gives, and the module that holds it."""

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
