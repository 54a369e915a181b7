"""The four Sleep passes, each: payload (only what it may act on) → contract → prompt."""

from nocturne_desktop.core.passes.base import GUARDRAIL, Chunk, PassPlan, PassSpec, estimate_tokens
from nocturne_desktop.core.passes.dedupe import DedupePass
from nocturne_desktop.core.passes.forget import ForgetPass
from nocturne_desktop.core.passes.merge import MergePass
from nocturne_desktop.core.passes.promote import PromotePass

PASS_SPECS: dict[str, PassSpec] = {
    "dedupe": DedupePass(),
    "merge": MergePass(),
    "promote": PromotePass(),
    "forget": ForgetPass(),
}

__all__ = ["GUARDRAIL", "PASS_SPECS", "Chunk", "PassPlan", "PassSpec", "estimate_tokens"]
