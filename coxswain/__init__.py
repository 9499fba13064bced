"""Coxswain: a Kubernetes Ingress and Gateway API controller with its own data plane."""

__version__ = "0.1.0"
