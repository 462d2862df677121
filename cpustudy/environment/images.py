"""Container images and -march targets for running the study on a chosen TensorFlow build.

Pure library: standard library only, no TensorFlow import. It knows

* the three images under ``docker/`` (``IMAGES``) and the exact ``docker build`` argv for each
  (``docker_build_command``), which ``build_image`` prints and, where a Docker engine answers,
  runs; with ``engine="podman"`` the same build through podman (``podman build --format docker``:
  the OCI format podman defaults to drops ``SHELL``, which the Dockerfiles use for ``pipefail``);
* the one rule for a safe ``-march`` value (``validate_march``), the same pattern that
  ``builds/build_tensorflow.sh`` enforces.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from cpustudy.errors import UserError

#: Image name -> Dockerfile, relative to the repository root (the build context).
IMAGES: Mapping[str, str] = {
    "cpu-pip": "docker/cpu-pip.Dockerfile",
    "cpu-compiled": "docker/cpu-compiled.Dockerfile",
    "gpu": "docker/gpu.Dockerfile",
}

#: The image that takes ``--march`` (a ``MARCH`` build-arg).
COMPILED_IMAGE = "cpu-compiled"
#: ``ARG MARCH`` default in docker/cpu-compiled.Dockerfile: AVX2 + FMA, any x86 CPU since 2013.
DEFAULT_MARCH = "x86-64-v3"
#: ``ARG TF_VERSION`` default in every Dockerfile, and build_tensorflow.sh's default ``--tf``.
DEFAULT_TF_VERSION = "2.21.0"
#: Repository part of the default image tags.
DEFAULT_REPOSITORY = "cpustudy"
#: Container engines ``build_image`` drives: the Docker client (a Docker engine, or podman's
#: Docker-compatible API through DOCKER_HOST), or podman itself.
ENGINES = ("docker", "podman")

# --- validation ---------------------------------------------------------------------------------

# Alphanumeric runs joined by single '-', '_' or '.', at most 64 characters: every real -march
# value fits, nothing a shell or a Docker tag would read specially does. build_tensorflow.sh
# uses the same pattern (MARCH_RE).
_MARCH_RE = re.compile(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*")
_MARCH_MAX = 64
_TF_VERSION_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:rc[0-9]+)?")


def validate_march(march: str) -> str:
    """Return MARCH if it is a safe ``-march`` value, else raise UserError naming the fix."""
    if not march:
        raise UserError(
            "--march is empty: pass a -march value such as x86-64-v3, x86-64-v4, native "
            "or a CPU name like sapphirerapids"
        )
    if len(march) > _MARCH_MAX or not _MARCH_RE.fullmatch(march):
        raise UserError(
            f"--march {march!r} is not a valid -march value: use letters and digits joined by "
            "single '-', '_' or '.' (e.g. x86-64-v4, sapphirerapids, native)"
        )
    return march


def validate_tf_version(tf_version: str) -> str:
    """Return TF_VERSION if it looks like a TensorFlow release (2.21.0, 2.21.0rc1)."""
    if not _TF_VERSION_RE.fullmatch(tf_version):
        raise UserError(
            f"--tf {tf_version!r} is not a TensorFlow release: pass one such as "
            f"{DEFAULT_TF_VERSION}"
        )
    return tf_version


# --- docker build -------------------------------------------------------------------------------


def repo_root() -> Path:
    """The directory holding ``docker/``: the package's parent directory in a checkout."""
    root = Path(__file__).resolve().parents[2]
    if (root / IMAGES["cpu-pip"]).is_file():
        return root
    raise UserError(
        f"no docker/ directory next to the cpustudy package (looked in {root}); "
        "building images needs a checkout of the cpustudy repository"
    )


def default_tag(image: str, *, march: str | None = None, tf_version: str | None = None) -> str:
    """``cpustudy:IMAGE[-MARCH][-tfVERSION]``, e.g. ``cpustudy:cpu-compiled-x86-64-v4``."""
    tag = f"{DEFAULT_REPOSITORY}:{image}"
    if march is not None:
        tag += f"-{march}"
    if tf_version is not None:
        tag += f"-tf{tf_version}"
    return tag


def docker_build_command(
    image: str,
    *,
    march: str | None = None,
    tag: str | None = None,
    tf_version: str | None = None,
    context: Path | None = None,
    engine: str = "docker",
) -> list[str]:
    """The exact ``docker build`` argv for IMAGE (``podman build --format docker`` with
    ``engine="podman"``).

    ``-f`` is CONTEXT/docker/IMAGE.Dockerfile (docker resolves ``-f`` against the current
    directory, not the context), so the command works from anywhere; with ``context=Path(".")``
    it reads ``docker build -f docker/IMAGE.Dockerfile ... .``. ``--march`` is for the
    cpu-compiled image only, which always gets an explicit ``MARCH`` (default x86-64-v3);
    ``TF_VERSION`` is passed when given, else the Dockerfile's pinned default applies.
    """
    if image not in IMAGES:
        raise UserError(f"unknown image {image!r}: choose one of {', '.join(IMAGES)}")
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if march is not None and image != COMPILED_IMAGE:
        raise UserError(
            f"--march applies only to the {COMPILED_IMAGE} image; {image} uses a stock "
            f"TensorFlow wheel (drop --march, or build {COMPILED_IMAGE})"
        )
    if image == COMPILED_IMAGE:
        march = validate_march(march if march is not None else DEFAULT_MARCH)
    if tf_version is not None:
        validate_tf_version(tf_version)
    if tag is None:
        tag = default_tag(image, march=march, tf_version=tf_version)
    elif not tag or tag.startswith("-") or any(ch.isspace() for ch in tag):
        raise UserError(f"--tag {tag!r} is not a Docker image tag (e.g. cpustudy:{image})")
    if context is None:
        context = repo_root()

    argv = ["docker", "build"] if engine == "docker" else ["podman", "build", "--format", "docker"]
    argv += ["-f", str(context / IMAGES[image])]
    if march is not None:
        argv += ["--build-arg", f"MARCH={march}"]
    if tf_version is not None:
        argv += ["--build-arg", f"TF_VERSION={tf_version}"]
    argv += ["-t", tag, str(context)]
    return argv


def docker_engine_available(timeout: float = 5.0, engine: str = "docker") -> tuple[bool, str]:
    """Whether ENGINE's server answers, and a plain sentence saying so.

    Asks ``ENGINE version --format '{{.Server.Version}}'``: a Docker client, podman, and Debian's
    podman-docker shim (a ``docker`` that runs podman) all answer it, while the shim fails the
    ``docker info --format '{{.ServerVersion}}'`` that Docker alone understands.
    """
    name = "Docker engine" if engine == "docker" else "podman"
    advice = ("run the printed command on a machine with Docker" if engine == "docker"
              else "install podman (see docker/README.md) or run the printed command where it works")
    if shutil.which(engine) is None:
        client = "Docker client" if engine == "docker" else "podman"
        return False, f"no {client} is installed here ({engine} is not on PATH); {advice}"
    try:
        proc = subprocess.run(
            [engine, "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, (
            f"no {name} is running here ({engine} version: no answer in {timeout:g} s); "
            f"{advice}"
        )
    except OSError as exc:
        return False, f"no {name} is running here ({engine} version: {exc}); {advice}"
    version = proc.stdout.strip()
    if proc.returncode == 0 and version and "<no value>" not in version:
        return True, f"{name} {version} answers"
    detail = " ".join((proc.stderr or proc.stdout).split()) or f"exit code {proc.returncode}"
    return False, f"no {name} is running here ({engine} version: {detail}); {advice}"


def build_image(
    image: str,
    *,
    march: str | None = None,
    tag: str | None = None,
    tf_version: str | None = None,
    context: Path | None = None,
    dry_run: bool = False,
    engine: str = "docker",
) -> int:
    """Print the ``docker build`` (or ``podman build``) command for IMAGE and, unless DRY_RUN,
    run it.

    Returns the engine's exit code (0 for a dry run). Raises UserError for bad arguments, and
    when the engine does not answer, with the sentence from ``docker_engine_available``.
    """
    argv = docker_build_command(
        image, march=march, tag=tag, tf_version=tf_version, context=context, engine=engine
    )
    print(shlex.join(argv), flush=True)
    if dry_run:
        return 0
    available, message = docker_engine_available(engine=engine)
    if not available:
        raise UserError(message)
    return subprocess.run(argv, check=False).returncode
