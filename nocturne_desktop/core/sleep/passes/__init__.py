"""The five Sleep passes, each: payload (only what it may act on) → contract → prompt."""

from nocturne_desktop.core.sleep.passes.base import GUARDRAIL, Chunk, PassPlan, PassSpec, estimate_tokens
from nocturne_desktop.core.sleep.passes.dedupe import DedupePass
from nocturne_desktop.core.sleep.passes.forget import ForgetPass
from nocturne_desktop.core.sleep.passes.merge import MergePass
from nocturne_desktop.core.sleep.passes.promote import PromotePass
from nocturne_desktop.core.sleep.passes.reconcile import ReconcilePass

PASS_SPECS: dict[str, PassSpec] = {
    "dedupe": DedupePass(),
    "merge": MergePass(),
    "reconcile": ReconcilePass(),
    "promote": PromotePass(),
    "forget": ForgetPass(),
}

__all__ = ["GUARDRAIL", "PASS_SPECS", "Chunk", "PassPlan", "PassSpec", "estimate_tokens"]
