# cpustudy on TensorFlow with CUDA: the GPU baseline of the study.
#
# tensorflow[and-cuda] brings CUDA and cuDNN as pip wheels (nvidia-*), so the base image
# needs no CUDA toolkit; the host needs an NVIDIA driver and the NVIDIA Container Toolkit.
# The `gpu` extra adds nvidia-ml-py, through which the worker samples GPU utilisation (NVML).
#
# Build (the context is the repository root):
#   docker build -f docker/gpu.Dockerfile -t cpustudy:gpu .
# Run:
#   docker run --rm --gpus all -v "$PWD/results:/data" cpustudy:gpu sweep --device gpu --vcpus 8
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

COPY . /src
RUN python -m pip install --no-cache-dir --no-build-isolation \
        "/src[gpu]" "tensorflow[and-cuda]==${TF_VERSION}" \
    && rm -rf /src \
    && cpustudy --help >/dev/null

RUN groupadd --system --gid 10001 cpustudy \
    && useradd --system --uid 10001 --gid cpustudy --create-home --home-dir /home/cpustudy cpustudy \
    && mkdir -p /data /opt/cpustudy \
    && chown cpustudy:cpustudy /data

COPY builds/ /opt/cpustudy/builds/

LABEL org.opencontainers.image.title="cpustudy:gpu" \
      org.opencontainers.image.description="cpustudy with TensorFlow ${TF_VERSION} and CUDA (tensorflow[and-cuda])"

ENV CPUSTUDY_DB=/data/cpustudy.sqlite \
    CPUSTUDY_BUILDS_DIR=/opt/cpustudy/builds \
    CPUSTUDY_IMAGE=gpu \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

VOLUME /data
WORKDIR /data
USER 10001:10001

ENTRYPOINT ["cpustudy"]
CMD ["--help"]
