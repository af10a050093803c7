# pykai's image: one `pykai` entry point for every component of the Helm chart (`pykai run`,
# `pykai webhook`). Only what they need is installed (no plotting, no test tools), in a venv
# copied from a build stage, run as the unprivileged uid 65532.
#   buildah bud -t pykai .        (or: docker build -t pykai .)
# BASE: any image with python3 >= 3.11 and its venv module (the default is Python's own slim
# Debian image; the tests build on a Debian bookworm root made with mmdebstrap).
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
COPY pyproject.toml README.md /src/
COPY src /src/src
RUN python3 -m venv /opt/pykai \
 && /opt/pykai/bin/pip install --no-cache-dir --disable-pip-version-check /src \
 && /opt/pykai/bin/pip uninstall --yes --quiet pip setuptools

FROM ${BASE}
COPY --from=build /opt/pykai /opt/pykai
ENV PATH=/opt/pykai/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["pykai"]
CMD ["--help"]
