"""Sleep: the passes (:mod:`.passes`), their gates (:mod:`.gates`), the run that applies them
(:mod:`.run`) and Sleep with review (:mod:`.review`)."""

from nocturne_desktop.core.sleep.run import DEFAULT_BUDGET_TOKENS as DEFAULT_BUDGET_TOKENS
from nocturne_desktop.core.sleep.run import PassFigures as PassFigures
from nocturne_desktop.core.sleep.run import SleepEvent as SleepEvent
from nocturne_desktop.core.sleep.run import SleepEventKind as SleepEventKind
from nocturne_desktop.core.sleep.run import SleepStore as SleepStore
from nocturne_desktop.core.sleep.run import new_totals as new_totals
from nocturne_desktop.core.sleep.run import read_strengths as read_strengths
from nocturne_desktop.core.sleep.run import run_sleep as run_sleep
from nocturne_desktop.core.sleep.run import simulate as simulate
