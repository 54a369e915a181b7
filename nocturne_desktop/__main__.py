import multiprocessing

# First of all, before the command line is read: in the frozen app a sleep's worker process is
# this same executable, started by multiprocessing (spawn); freeze_support() runs the worker
# there and exits. Outside a frozen app it does nothing.
multiprocessing.freeze_support()

from nocturne_desktop.cli import main  # noqa: E402 - after freeze_support, on purpose

raise SystemExit(main())
