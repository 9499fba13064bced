# syntax=docker/dockerfile:1
#
# The Coxswain image: one image for every role.
#   coxswain controller ...        the controller (Helm chart: controller Deployment)
#   coxswain proxy --shared ...    the shared proxy pool (Helm chart: proxy Deployment)
#   coxswain proxy --gateway ...   dedicated proxies (provisioned by the controller)
#   coxswain compile|route ...     the offline tools
#
# Build: docker build -t coxswain:0.1.0 .
# It runs as the unprivileged user 65532 (the chart's runAsUser) with a read-only root file
# system: byte code is compiled at build time, and only /tmp needs to be writable.
# The HTTP/1.1 codec is compiled to C with mypyc (COXSWAIN_MYPYC=1, setup.py says why); the
# build stage has the C compiler for it, the runtime stage only the result.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: install the package and its dependencies into a self-contained virtualenv ---------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/coxswain
WORKDIR /src
# Dependencies first, so that a code change does not reinstall them: pyproject.toml alone
# describes them (README.md is its `readme`; setup.py and build_backend/ the build).
COPY pyproject.toml README.md setup.py MANIFEST.in ./
COPY build_backend ./build_backend
RUN mkdir coxswain && touch coxswain/__init__.py \
 && /opt/coxswain/bin/pip install . \
 && /opt/coxswain/bin/pip uninstall --yes coxswain
COPY coxswain ./coxswain
RUN COXSWAIN_MYPYC=1 /opt/coxswain/bin/pip install --no-deps . \
 && /opt/coxswain/bin/python -m compileall -q -j 0 /opt/coxswain \
 && /opt/coxswain/bin/coxswain --version | grep -F "codec compiled"

# --- runtime: the virtualenv on a clean base, nothing else ------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="coxswain" \
      org.opencontainers.image.description="Kubernetes Ingress and Gateway API controller with its own data plane" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 65532 coxswain \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin coxswain
COPY --from=build /opt/coxswain /opt/coxswain
ENV PATH=/opt/coxswain/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# Numeric, so that Kubernetes can verify runAsNonRoot without resolving the name.
USER 65532:65532
WORKDIR /tmp
# Proxy: Ingress HTTP/HTTPS (unprivileged), admin. Controller: discovery, health.
EXPOSE 8080 8443 9901 18000 9902
ENTRYPOINT ["coxswain"]
CMD ["--help"]
