# cpustudy on a TensorFlow wheel compiled from source for one -march target.
#
# Stage "build" runs builds/build_tensorflow.sh (Bazel via Bazelisk, Clang): it takes hours
# on many cores and needs roughly 2-4 GB of RAM per Bazel job (cap with JOBS). Stage
# "runtime" is a slim Python image holding the compiled wheel and cpustudy, and no stock
# tensorflow wheel.
#
# Build (the context is the repository root):
#   docker build -f docker/cpu-compiled.Dockerfile --build-arg MARCH=x86-64-v4 \
#       -t cpustudy:cpu-compiled-x86-64-v4 .
# Run only on CPUs that have the instructions MARCH enables (else: "Illegal instruction"):
#   docker run --rm --cpuset-cpus 0-7 -v "$PWD/results:/data" \
#       cpustudy:cpu-compiled-x86-64-v4 sweep --vcpus 8
# See docker/README.md.

# TensorFlow release to compile; its toolchain is pinned by the table in build_tensorflow.sh.
ARG TF_VERSION=2.21.0

FROM ubuntu:24.04 AS build

ARG TF_VERSION
# -march target: x86-64-v3 (AVX2+FMA), x86-64-v4 (AVX-512), sapphirerapids, znver4, ...
# "native" means the CPU of the machine running `docker build`.
ARG MARCH=x86-64-v3
# Python ABI of the wheel; Bazel builds against a hermetic Python of this version. It must
# match the runtime stage's Python (3.11).
ARG PYTHON_VERSION=3.11
# Clang major version TensorFlow tested for TF_VERSION: 18 for 2.19-2.21, 17 for 2.16-2.18.
ARG CLANG_MAJOR=18
ARG BAZELISK_VERSION=1.28.1
ARG WHEEL_TOOL_VERSION=0.48.0
# Bazel --jobs; empty means one per CPU. Lower it if the build runs out of memory.
ARG JOBS=""

ENV DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Ubuntu 24.04's own clang-N, lld-N and friends: their versions move only with security
# updates of this release, and the script checks the clang major version TensorFlow tested.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        build-essential ca-certificates git patch unzip zip \
        python3 python3-venv \
        "clang-${CLANG_MAJOR}" "lld-${CLANG_MAJOR}" "llvm-${CLANG_MAJOR}" \
        nodejs npm \
    && rm -rf /var/lib/apt/lists/*

# Bazelisk runs the Bazel version named in the TensorFlow checkout's .bazelversion.
RUN npm install -g "@bazel/bazelisk@${BAZELISK_VERSION}" \
    && npm cache clean --force \
    && python3 -m venv /opt/buildenv \
    && /opt/buildenv/bin/pip install --no-cache-dir "wheel==${WHEEL_TOOL_VERSION}" \
    && groupadd --gid 10001 builder \
    && useradd --create-home --uid 10001 --gid builder builder

USER 10001:10001
WORKDIR /home/builder

# Only the script, so that editing anything else in the repository keeps this layer cached.
COPY --chown=10001:10001 builds/build_tensorflow.sh /home/builder/build_tensorflow.sh

RUN bash /home/builder/build_tensorflow.sh \
        --tf "${TF_VERSION}" \
        --march "${MARCH}" \
        --jobs "${JOBS:-$(nproc)}" \
        --python /opt/buildenv/bin/python \
        --python-version "${PYTHON_VERSION}" \
        --clang "/usr/lib/llvm-${CLANG_MAJOR}/bin/clang" \
        --workdir /home/builder/tensorflow-build \
        --output /home/builder/wheels \
    && rm -rf /home/builder/tensorflow-build


FROM python:3.11.10-slim-bookworm AS runtime

ARG TF_VERSION
ARG MARCH=x86-64-v3
ARG PIP_VERSION=24.3.1
ARG HATCHLING_VERSION=1.27.0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

RUN python -m pip install --no-cache-dir "pip==${PIP_VERSION}" "hatchling==${HATCHLING_VERSION}"

COPY --from=build /home/builder/wheels/ /tmp/wheels/
COPY . /src

# The compiled wheel's distribution is "tensorflow_cpu" (it provides the same `tensorflow`
# import package), while cpustudy declares "tensorflow>=2.16". A plain `pip install /src`
# would therefore pull the stock tensorflow wheel from PyPI and shadow the compiled one. So:
#   1. write cpustudy's dependencies minus tensorflow, read from pyproject.toml;
#   2. install the compiled wheel and those dependencies in one resolver run;
#   3. install cpustudy itself with --no-deps;
#   4. fail the build if a stock "tensorflow" distribution got in anyway.
# TensorFlow is not imported here: the build machine may lack the instructions MARCH enables.
RUN python -c 'import re, tomllib; deps = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]["dependencies"]; keep = [d for d in deps if re.sub(r"[-_.]+", "-", re.match(r"\s*([A-Za-z0-9._-]+)", d).group(1)).lower() != "tensorflow"]; print("\n".join(keep))' \
        > /tmp/cpustudy-deps.txt \
    && python -m pip install --no-cache-dir /tmp/wheels/tensorflow_cpu-*.whl -r /tmp/cpustudy-deps.txt \
    && python -m pip install --no-cache-dir --no-deps --no-build-isolation /src \
    && if python -m pip show tensorflow >/dev/null 2>&1; then \
           echo "error: the stock tensorflow wheel is installed next to the compiled one" >&2; \
           exit 1; \
       fi \
    && python -m pip show tensorflow_cpu \
    && rm -rf /tmp/wheels /tmp/cpustudy-deps.txt /src \
    && cpustudy --help >/dev/null

RUN groupadd --system --gid 10001 cpustudy \
    && useradd --system --uid 10001 --gid cpustudy --create-home --home-dir /home/cpustudy cpustudy \
    && mkdir -p /data /opt/cpustudy \
    && chown cpustudy:cpustudy /data

COPY builds/ /opt/cpustudy/builds/

LABEL org.opencontainers.image.title="cpustudy:cpu-compiled" \
      org.opencontainers.image.description="cpustudy with TensorFlow ${TF_VERSION} compiled for -march=${MARCH}"

ENV CPUSTUDY_DB=/data/cpustudy.sqlite \
    CPUSTUDY_BUILDS_DIR=/opt/cpustudy/builds \
    CPUSTUDY_IMAGE=cpu-compiled \
    CPUSTUDY_MARCH=${MARCH}

VOLUME /data
WORKDIR /data
USER 10001:10001

ENTRYPOINT ["cpustudy"]
CMD ["--help"]
