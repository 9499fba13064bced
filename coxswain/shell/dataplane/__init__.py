"""What ``coxswain proxy`` is made of: listeners, client and upstream connections, TLS, mirrors,
access log, metrics, the admin port and the ``--workers N`` supervisor (the process itself is
:mod:`coxswain.shell.proxy`)."""
