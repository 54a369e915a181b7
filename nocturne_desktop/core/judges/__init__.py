"""The judges of a fact's text: token measures (:mod:`.textmath`), meaning guards
(:mod:`.meaning`), duplicates (:mod:`.duplicates`), conflicts (:mod:`.conflicts`) and
sensitive data (:mod:`.sensitive`). Pure functions: no store, no model."""
