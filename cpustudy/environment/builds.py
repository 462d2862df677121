"""Builds: how TensorFlow/Keras is provided, plus its runtime switches.

Each build is one small TOML recipe in ``builds/recipes/`` (shipped in the wheel as
``cpustudy/_builds/recipes``). Kinds:

* ``project`` — the interpreter cpustudy runs under, with extra environment variables or settings;
* ``overlay`` — a virtual environment layered on the project's (its own packages first, then the
  project's through a ``.pth`` file), for additions such as tf-keras or JAX;
* ``venv`` — an isolated virtual environment with its own TensorFlow (e.g. 2.14 wheels);
* ``wheel`` — an isolated virtual environment with a TensorFlow wheel the user built.

Non-project builds are made by ``cpustudy builds setup NAME`` under the user's cache directory.
The parent never imports TensorFlow: what a build really contains is probed in a worker.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import site
import subprocess
import sys
import sysconfig
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from cpustudy.cache import cache_dir
from cpustudy.errors import UserError, process_ended
from cpustudy.names import split_list, unknown

KINDS = ("project", "overlay", "venv", "wheel")
MARKER = "cpustudy-build.json"


def recipes_dir() -> Path:
    """``$CPUSTUDY_BUILDS_DIR/recipes``, the wheel's copy, or the checkout's ``builds/recipes``."""
    env = os.environ.get("CPUSTUDY_BUILDS_DIR")
    package = Path(__file__).resolve().parent.parent  # cpustudy/
    candidates = ([Path(env) / "recipes"] if env else []) + [
        package / "_builds" / "recipes",
        package.parent / "builds" / "recipes",
    ]
    for c in candidates:
        if c.is_dir():
            return c
    raise UserError("no build recipes found: set CPUSTUDY_BUILDS_DIR to the folder holding recipes/")


@dataclass(frozen=True)
class Build:
    name: str
    description: str
    kind: str
    family: str  # pip | compiled | jax | torch | gpu: colour family in reports
    packages: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    requires_isa: tuple[str, ...] = ()

    @property
    def home(self) -> Path:
        return cache_dir() / "builds" / self.name

    @property
    def python(self) -> str:
        if self.kind == "project":
            return sys.executable
        return str(self.home / "bin" / "python")

    @property
    def jit_compile(self) -> bool | None:
        value = self.settings.get("jit_compile")
        return None if value is None else bool(value)

    def marker(self) -> dict[str, Any] | None:
        path = self.home / MARKER
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def readiness(self, cpu_flags: set[str] | None = None, *, import_check: bool = True) -> tuple[bool, str]:
        """Whether this build can be measured here, and if not, what to do. ``import_check=False``
        skips the real import of a ``project`` build's backend (seconds) and only looks for it; a
        measurement whose import then fails is stored as failed."""
        missing_isa = [f for f in self.requires_isa if cpu_flags is not None and f not in cpu_flags]
        if missing_isa:
            return False, (f"this CPU lacks {' '.join(f.upper() for f in missing_isa)}, which the build "
                           "is compiled for: measure it on a CPU that has it")
        if self.kind == "project":
            return _project_readiness(self.python, self.env.get("KERAS_BACKEND", "tensorflow"), import_check)
        if self.marker() is None or not Path(self.python).exists():
            hint = " --wheel PATH" if self.kind == "wheel" else ""
            return False, f"not set up: run `cpustudy builds setup {self.name}{hint}`"
        return True, "ready"

    def worker_env(self) -> dict[str, str]:
        return dict(self.env)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# The module each Keras 3 backend imports (KERAS_BACKEND -> module).
BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch", "numpy": "numpy",
                   "openvino": "openvino"}
IMPORT_CHECK_TIMEOUT_S = 180.0
_CHECK_TAG = "cpustudy-import-check"
# Run under the build's interpreter: import each module named on the command line, say which one is
# being imported (so a crash such as SIGILL can be attributed) and, on failure, its one-line error.
_IMPORT_CHECK = f"""\
import importlib, sys
for name in sys.argv[1:]:
    print({_CHECK_TAG!r}, "import", name, sep="\\t", flush=True)
    try:
        importlib.import_module(name)
    except BaseException as exc:
        error = (type(exc).__name__ + ": " + str(exc)).strip().splitlines()[0]
        print({_CHECK_TAG!r}, "failed", name, error, sep="\\t", flush=True)
        sys.exit(1)
"""


def _project_readiness(python: str, backend: str, import_check: bool = True) -> tuple[bool, str]:
    """A ``project`` build is ready when its Keras backend and Keras itself really import under
    ``python``: first the cheap ``find_spec`` gate here, then a real import in a subprocess (the
    parent never imports the frameworks), done once per interpreter and backend in this process."""
    module = BACKEND_MODULES.get(backend, backend)
    for name in (module, "keras"):
        if not _importable(name):
            return False, _not_importable(name, python, f"ModuleNotFoundError: No module named '{name}'")
    failure = _import_failure(python, module, backend) if import_check else None
    if failure is not None:
        return False, _not_importable(failure[0], python, failure[1])
    return True, "ready"


def _not_importable(name: str, python: str, error: str) -> str:
    fix = "install it" if name == "keras" else "install it, or use a build whose backend this interpreter has"
    return f"{name} is not importable by {python} ({error}): {fix}"


@functools.cache
def _import_failure(python: str, module: str, backend: str) -> tuple[str, str] | None:
    """``(module, error)`` for the first of ``module`` and ``keras`` that fails to import under
    ``python`` with ``KERAS_BACKEND=backend``, or None when both import. The check imports the
    framework (seconds): cached per process, and a success also in the user cache until the
    interpreter or its packages change (``probe.probe_key``)."""
    from cpustudy.environment.probe import probe_key

    key = probe_key(python, {"KERAS_BACKEND": backend, "import": module})
    marker = cache_dir() / "imports" / f"{key}.ok" if key else None
    if marker is not None and marker.exists():
        return None
    failure = _run_import_check(python, module, backend)
    if failure is None and marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass
    return failure


def _run_import_check(python: str, module: str, backend: str) -> tuple[str, str] | None:
    try:
        proc = subprocess.run([python, "-c", _IMPORT_CHECK, module, "keras"], check=False, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, env={**os.environ, "KERAS_BACKEND": backend},
                              timeout=IMPORT_CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return module, f"importing took over {IMPORT_CHECK_TIMEOUT_S:g} s"
    except OSError as exc:
        return module, f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return None
    tagged = [line.split("\t")[1:] for line in proc.stdout.splitlines() if line.startswith(_CHECK_TAG + "\t")]
    for fields in reversed(tagged):
        if fields[0] == "failed" and len(fields) >= 3:
            return fields[1], "\t".join(fields[2:])
    name = tagged[-1][1] if tagged and len(tagged[-1]) > 1 else module
    return name, process_ended(proc.returncode, proc.stderr)


def load(name: str) -> Build:
    recipes = all_builds()
    if name not in recipes:
        raise unknown("build", name, recipes, "cpustudy builds list")
    return recipes[name]


def parse_list(text: str, flag: str = "--builds") -> list[Build]:
    names = split_list(text, flag, "tf,tf-onednn")
    return [load(n) for n in dict.fromkeys(names)]


def _from_toml(path: Path) -> Build:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"build recipe {path} is not valid TOML ({exc}): fix or remove it") from None
    kind = data.get("kind", "project")
    if kind not in KINDS:
        raise UserError(f"build recipe {path}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return Build(
        name=path.stem,
        description=str(data.get("description", "")),
        kind=kind,
        family=str(data.get("family", "pip")),
        packages=tuple(data.get("packages", ())),
        env={str(k): str(v) for k, v in data.get("env", {}).items()},
        settings=dict(data.get("settings", {})),
        requires_isa=tuple(data.get("requires_isa", ())),
    )


def all_builds() -> dict[str, Build]:
    recipes = sorted(recipes_dir().glob("*.toml"))
    order = ["tf", "tf-eigen", "tf-onednn", "tf-xla", "tf-keras2"]
    builds = {p.stem: _from_toml(p) for p in recipes}
    return {k: builds[k] for k in sorted(builds, key=lambda n: (order.index(n) if n in order else 99, n))}


# -- setup ----------------------------------------------------------------------------------------


def _installed_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def requirements(build: Build) -> list[str]:
    """The recipe's packages, with ``{tf_minor}`` filled in from the project's TensorFlow."""
    tf = _installed_version("tensorflow") or _installed_version("tensorflow-cpu") or ""
    minor = ".".join(tf.split(".")[:2])
    out = []
    for req in build.packages:
        if "{tf_minor}" in req:
            if not minor:
                raise UserError(f"build {build.name} needs the project's TensorFlow version: install tensorflow")
            req = req.replace("{tf_minor}", minor)
        out.append(req)
    return out


def setup_commands(build: Build, wheel: Path | None = None) -> list[list[str]]:
    """The commands ``setup`` runs, in order (printed by ``--dry-run``)."""
    if build.kind == "project":
        return []
    if build.kind == "wheel" and wheel is None:
        raise UserError(f"build {build.name} needs --wheel PATH (a wheel from builds/build_tensorflow.sh)")
    if build.kind != "wheel" and wheel is not None:
        raise UserError(f"--wheel is only for builds of kind 'wheel' (such as `source`), not {build.name}")
    home = build.home
    py = str(home / "bin" / "python")
    cmds = [[sys.executable, "-m", "venv", "--clear", str(home)],
            [py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"]]
    reqs = requirements(build)
    if build.kind == "wheel":
        assert wheel is not None
        # The compiled wheel is named tensorflow_cpu; Keras 3 and NumPy come with it as dependencies.
        reqs = [str(wheel.resolve()), *reqs]
    if reqs:
        cmds.append([py, "-m", "pip", "install", "--quiet", *reqs])
    return cmds


def project_site_packages() -> list[str]:
    paths = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    purelib = sysconfig.get_paths()["purelib"]
    return list(dict.fromkeys([purelib, *paths]))


def setup(build: Build, *, wheel: Path | None = None, dry_run: bool = False,
          log: Any = print) -> list[list[str]]:
    """Make the build's environment. Idempotent: ``--clear`` starts it afresh each time."""
    if wheel is not None and not wheel.is_file():
        raise UserError(f"no wheel at {wheel}: build one with builds/build_tensorflow.sh, then pass its path")
    cmds = setup_commands(build, wheel)
    if build.kind == "project":
        log(f"{build.name} uses cpustudy's own environment: nothing to set up")
        return cmds
    if dry_run:
        import shlex

        for c in cmds:
            log(shlex.join(c))
        return cmds
    (build.home / MARKER).unlink(missing_ok=True)
    build.home.parent.mkdir(parents=True, exist_ok=True)
    for i, c in enumerate(cmds):
        log(f"[{i + 1}/{len(cmds)}] {' '.join(c)}")
        if i == 1 and build.kind == "overlay":
            _layer_on_project(build)
        proc = subprocess.run(c, capture_output=True, text=True)
        if proc.returncode != 0:
            why = process_ended(proc.returncode, proc.stderr or proc.stdout)
            raise UserError(f"setting up {build.name} failed at `{' '.join(c[:4])} ...`: {why}")
    if build.kind == "overlay":
        _layer_on_project(build)
    marker = {
        "build": build.name,
        "kind": build.kind,
        "packages": requirements(build),
        "wheel": str(wheel.resolve()) if wheel else None,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "base_python": sys.executable,
    }
    (build.home / MARKER).write_text(json.dumps(marker, indent=2))
    return cmds


def _layer_on_project(build: Build) -> None:
    """Let the overlay venv see the project's packages after its own."""
    py = build.home / "bin" / "python"
    out = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    Path(out, "_cpustudy_project.pth").write_text("\n".join(project_site_packages()) + "\n")
