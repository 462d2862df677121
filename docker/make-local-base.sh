#!/usr/bin/env bash
# Make the base image of docker/cpu-pip.Dockerfile locally, from Debian packages, for machines that
# reach Debian's mirror and PyPI but no container registry. The image is Debian bookworm (minbase)
# with Debian's Python 3.11 (python3, python3-venv, python3-pip, python-is-python3) and
# ca-certificates, made with mmdebstrap and imported into podman under the Dockerfile's own FROM
# name, so `podman build -f docker/cpu-pip.Dockerfile .` finds it and pulls nothing.
#
# It is a stand-in, not the official image: Debian's Python (3.11.2 in bookworm) in /usr/bin, not
# python.org's 3.11.10 in /usr/local/bin. cpustudy and TensorFlow install and run the same on both.
#
# Where this machine trusts extra CA certificates (/usr/local/share/ca-certificates, e.g. a
# TLS-intercepting proxy in front of PyPI), they are copied into the image and pip is pointed at the
# system bundle, so that the build's pip reaches PyPI the way the host does. They stay in this local
# image only: nothing is written into the repository.
#
# Usage (as root; needs mmdebstrap and podman: apt-get install mmdebstrap podman runc uidmap):
#   CONTAINERS_CONF=docker/containers.conf docker/make-local-base.sh [--force] [--tag NAME]
# Without --tag the name is the FROM line of docker/cpu-pip.Dockerfile. An existing image of that
# name is kept unless --force. MMDEBSTRAP_MIRROR overrides Debian's mirror.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dockerfile="$here/cpu-pip.Dockerfile"
tag=""
force=0

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --tag) [ $# -ge 2 ] || { echo "make-local-base.sh: --tag needs a value" >&2; exit 2; }
               tag="$2"; shift 2 ;;
        --force) force=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "make-local-base.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

for tool in mmdebstrap podman; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "make-local-base.sh: $tool is not installed (apt-get install -y --no-install-recommends podman runc mmdebstrap uidmap)" >&2
        exit 2
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "make-local-base.sh: run as root (mmdebstrap's root mode and the image store podman builds from)" >&2
    exit 2
fi

if [ -z "$tag" ]; then
    tag="$(awk 'toupper($1) == "FROM" { print $2; exit }' "$dockerfile")"
    [ -n "$tag" ] || { echo "make-local-base.sh: no FROM line in $dockerfile" >&2; exit 2; }
fi
# What `FROM python:...` means to Docker and to podman's short-name lookup.
case "$tag" in
    */*) full="$tag" ;;
    *) full="docker.io/library/$tag" ;;
esac

if [ "$force" -eq 0 ] && podman image exists "$full"; then
    echo "$full exists already (--force makes it again)"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The hooks are run by mmdebstrap's shell, with the new root as "$1": single quotes on purpose.
# shellcheck disable=SC2016
hooks=(--customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED')
extra_cas=()
if [ -d /usr/local/share/ca-certificates ]; then
    while IFS= read -r -d '' crt; do extra_cas+=("$crt"); done \
        < <(find /usr/local/share/ca-certificates -maxdepth 1 -type f -name '*.crt' -print0)
fi
if [ "${#extra_cas[@]}" -gt 0 ]; then
    mkdir -p "$work/ca"
    cp "${extra_cas[@]}" "$work/ca/"
    echo "copying ${#extra_cas[@]} extra CA certificate(s) this host trusts into the image"
    # shellcheck disable=SC2016
    hooks+=(
        --customize-hook="copy-in $work/ca/. /usr/local/share/ca-certificates/"
        --customize-hook='chroot "$1" update-ca-certificates'
        # pip upgraded from PyPI trusts its own certifi bundle, not the system's: point it there.
        --customize-hook='printf "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" > "$1"/etc/pip.conf'
    )
fi

mirror=()
[ -n "${MMDEBSTRAP_MIRROR:-}" ] && mirror=("$MMDEBSTRAP_MIRROR")

echo "mmdebstrap: Debian bookworm minbase with Python 3 -> $work/rootfs.tar"
mmdebstrap --variant=minbase --quiet \
    --include=python3,python3-venv,python3-pip,python-is-python3,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "${hooks[@]}" \
    bookworm "$work/rootfs.tar" "${mirror[@]}"

podman import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    --message "cpustudy local base: Debian bookworm minbase + python3 (docker/make-local-base.sh)" \
    "$work/rootfs.tar" "$full" >/dev/null
echo "made $full ($(podman image inspect --format '{{.Size}}' "$full") bytes)"
