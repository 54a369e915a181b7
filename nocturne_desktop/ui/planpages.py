"""A review's plan in pages, at its former path: :mod:`nocturne_desktop.ui.models.planpages`."""

from nocturne_desktop.ui.models.planpages import KEEP, PAGE, PlanPages, paged, whole

__all__ = ["KEEP", "PAGE", "PlanPages", "paged", "whole"]
