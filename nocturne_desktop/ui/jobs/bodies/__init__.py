"""The bodies of the window's background jobs, each a plain function of a
:class:`~nocturne_desktop.ui.jobs.body.BodyContext` (run it with a
:class:`~nocturne_desktop.ui.jobs.Job`). No Qt: a worker process may import any of them."""
