"""The review's plan as a model, at its former path: :mod:`nocturne_desktop.ui.models.plan`."""

import warnings

from nocturne_desktop.ui.models.plan import (
    COLUMNS,
    PASS_TITLES,
    SLICE,
    PlanIndex,
    PlanModel,
    before_after,
    short_verdict,
    status_of,
)

__all__ = ["COLUMNS", "PASS_TITLES", "SLICE", "PlanIndex", "PlanModel", "before_after",
           "short_verdict", "status_of"]

warnings.warn(f"{__name__} moved to nocturne_desktop.ui.models.plan; import it from there",
              DeprecationWarning, stacklevel=2)
