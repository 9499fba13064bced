"""What ``coxswain controller`` is made of: the Kubernetes API client, informers, leader election,
the cluster view, status writing, provisioning and the cluster's discovery CA (the process
itself is :mod:`coxswain.shell.controller`)."""
