"""Checks a person can trust: ``nocturne verify`` (:mod:`.verify`), the model-free gate cases
(:mod:`.gatecases`), the independent re-audit (:mod:`.audit`), the Wake quiz (:mod:`.quiz`) and
"How much would I still know?" (:mod:`.recall`)."""
