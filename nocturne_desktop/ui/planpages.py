"""A review's plan in pages, at its former path: :mod:`nocturne_desktop.ui.models.planpages`."""

import warnings

from nocturne_desktop.ui.models.planpages import KEEP, PAGE, PlanPages, paged, whole

__all__ = ["KEEP", "PAGE", "PlanPages", "paged", "whole"]

warnings.warn(f"{__name__} moved to nocturne_desktop.ui.models.planpages; import it from there",
              DeprecationWarning, stacklevel=2)
