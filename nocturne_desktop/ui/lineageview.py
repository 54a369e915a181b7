""""Why do you remember this?": a fact's lineage (S-LIN-1) drawn as a tree beside the memory.

The lineage is computed by :func:`nocturne_desktop.core.lineage.lineage` in a background job with
its own store connection (it reads the audit log), and shown as plain text in a tree, tooltips
too (:mod:`~nocturne_desktop.ui.plaintext`): the fact, the turn it came from, every step
(version · pass · decided by · reason), the facts that flowed into it (merges, dropped
duplicates, facts it superseded), each with its own ancestry, and then what it became.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.lineage import Lineage, LineageNode, LineageStep, lineage
from nocturne_desktop.ui.jobs import BodyContext, Job, describe_error
from nocturne_desktop.ui.models.text import one_line
from nocturne_desktop.ui.plaintext import plain_label, set_tip


def _step_text(s: LineageStep) -> str:
    reason = f" — {one_line(s.reason, 160)}" if s.reason else ""
    return f"{s.version or 'no version'} · {s.pass_name} · {s.what} · decided by {s.decided_by}{reason}"


class LineageDialog(QDialog):
    """The lineage of ``item_id``. ``ready`` is emitted once it is drawn (or failed)."""

    ready = Signal()

    def __init__(self, db_path: Path, item_id: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.item_id = item_id
        self.setWindowTitle(f"Why do you remember {item_id}?")
        self.resize(760, 480)
        self.status = plain_label(f"Reading the audit log for {item_id}…", self, wrap=True)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderHidden(True)
        self.tree.setWordWrap(False)
        self.tree.setUniformRowHeights(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.status)
        lay.addWidget(self.tree, 1)
        lay.addWidget(buttons)
        self.lineage: Lineage | None = None
        self.error: str | None = None
        def read(ctx: BodyContext) -> Lineage:
            return lineage(ctx.store, item_id)

        # its own store on the job's thread; closing the dialog cancels it, so a late result
        # never reaches a dialog that is gone
        self.job = Job(read, name="lineage", db_path=db_path).success(self._show).failure(self._failed)
        self.finished.connect(self.job.cancel)
        self.job.start()

    def _node(self, n: LineageNode, parent: QTreeWidget | QTreeWidgetItem) -> QTreeWidgetItem:
        head = f"{n.via}: " if n.via else ""
        item = QTreeWidgetItem(parent, [f"{head}{n.fact_id} [{n.status}] {one_line(n.text, 200)}"])
        set_tip(item, n.text)
        if n.turn is not None:
            t = QTreeWidgetItem(item, [f"turn {n.turn.n} ({n.turn.role}): {one_line(n.turn.text, 200)}"])
            set_tip(t, n.turn.text)
        for s in n.steps:
            set_tip(QTreeWidgetItem(item, [_step_text(s)]), s.reason)
        for p in n.parents:
            self._node(p, item)
        return item

    def _show(self, lin: object) -> None:
        assert isinstance(lin, Lineage)
        self.lineage = lin
        root = self._node(lin.root, self.tree)
        if lin.descendants:
            became = QTreeWidgetItem(self.tree, ["What became of it"])
            for d in lin.descendants:
                set_tip(QTreeWidgetItem(
                    became, [f"{d.via} → {d.fact_id} [{d.status}] {one_line(d.text, 200)}"]), d.text)
        self.tree.expandAll()
        self.tree.setCurrentItem(root)
        depth = lin.root.depth()
        self.status.setText(
            f"{self.item_id}: {sum(1 for _ in lin.root.walk())} fact(s) in its ancestry "
            f"(depth {depth}), {len(lin.descendants)} after it"
            + (" — cut at the first 2,000 ancestors" if lin.truncated else ""))
        self.ready.emit()

    def _failed(self, exc: BaseException) -> None:
        message = describe_error(exc)
        self.error = message
        self.status.setText(f"Could not read the lineage of {self.item_id}: {message}")
        self.ready.emit()
