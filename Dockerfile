# The controller's image: the project installed into a slim Python, run as a non-root user.
#   docker build -t addon-status:0.2.0 .
# The build stage installs the distribution (with its pinned dependencies) into /install, and
# Debian's tini; the runtime stage copies only those, so no compiler, build cache, package index
# or source tree ships.
FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY statemachines ./statemachines
COPY controller ./controller
COPY kubesim ./kubesim
RUN pip install --prefix=/install .

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="addon-status" \
      org.opencontainers.image.description="Addon status controller: reports, state machines, conditions on the spoke and the hub" \
      org.opencontainers.image.licenses="Apache-2.0"
# The root filesystem is read-only in the cluster: no .pyc written at run time (pip compiled
# them at install), logs unbuffered so a crash loses no line.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
COPY --from=build /usr/bin/tini /usr/bin/tini
# A numeric user, so that the kubelet can verify runAsNonRoot without an /etc/passwd entry.
USER 65532:65532
# reports (--report-address), metrics (--metrics-address), probes (--probe-address)
EXPOSE 8090 8080 8081
# PID 1 must reap the orphans of an exec credential plugin and pass SIGTERM on; Python does
# neither, tini does both (it is what `docker run --init` runs).
ENTRYPOINT ["/usr/bin/tini", "--", "addon-status"]
CMD ["run"]
