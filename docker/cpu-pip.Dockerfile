# cpustudy on the stock TensorFlow wheel from PyPI: the baseline every compiled build is
# compared against.
#
# Build (the context is the repository root):
#   docker build -f docker/cpu-pip.Dockerfile -t cpustudy:cpu-pip .
# Run (results land in ./results/cpustudy.sqlite on the host; pin CPUs with --cpuset-cpus):
#   docker run --rm --cpuset-cpus 0-7 -v "$PWD/results:/data" cpustudy:cpu-pip sweep --vcpus 8
# See docker/README.md.

FROM python:3.11.10-slim-bookworm

ARG TF_VERSION=2.21.0
ARG PIP_VERSION=24.3.1
ARG HATCHLING_VERSION=1.27.0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

RUN python -m pip install --no-cache-dir "pip==${PIP_VERSION}" "hatchling==${HATCHLING_VERSION}"

# The dependencies first, from pyproject.toml alone: a layer the engine's cache keeps while only
# the source changes (rebuilt after an edit in seconds, not minutes). TensorFlow is pinned to
# TF_VERSION; cpustudy itself depends on "tensorflow>=2.16", which this satisfies.
COPY pyproject.toml /deps/pyproject.toml
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/deps/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /deps/requirements.txt \
    && python -m pip install --no-cache-dir -r /deps/requirements.txt "tensorflow==${TF_VERSION}" \
    && rm -rf /deps

# The project (pyproject.toml, README.md, cpustudy/, builds/); .dockerignore keeps results,
# virtualenvs and caches out. Its dependencies are all installed above (pip check says so).
COPY . /src
RUN python -m pip install --no-cache-dir --no-build-isolation --no-deps /src \
    && rm -rf /src \
    && python -m pip check \
    && cpustudy --help >/dev/null

RUN groupadd --system --gid 10001 cpustudy \
    && useradd --system --uid 10001 --gid cpustudy --create-home --home-dir /home/cpustudy cpustudy \
    && mkdir -p /data /opt/cpustudy \
    && chown cpustudy:cpustudy /data

# The build recipes, for `cpustudy builds ...` inside the container.
COPY builds/ /opt/cpustudy/builds/

LABEL org.opencontainers.image.title="cpustudy:cpu-pip" \
      org.opencontainers.image.description="cpustudy with the stock TensorFlow ${TF_VERSION} wheel from PyPI"

ENV CPUSTUDY_DB=/data/cpustudy.sqlite \
    CPUSTUDY_BUILDS_DIR=/opt/cpustudy/builds \
    CPUSTUDY_IMAGE=cpu-pip

VOLUME /data
WORKDIR /data
USER 10001:10001

ENTRYPOINT ["cpustudy"]
CMD ["--help"]
