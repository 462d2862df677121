"""Starting workers: their environment, and probing what a build's interpreter really contains.

The parent never imports the frameworks: ``probe_software`` starts ``python -m cpustudy.worker
--probe`` under a build's interpreter and reads back versions, backend, oneDNN and the instruction
sets TensorFlow says it was not compiled for.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from cpustudy.cache import cache_dir, read_json, write_json
from cpustudy.errors import UserError
from cpustudy.worker import protocol

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # cpustudy/


def worker_pythonpath() -> str:
    """A folder holding only a link to this ``cpustudy`` package, for workers' PYTHONPATH.

    Putting the package's parent on the path instead would also put every package installed beside
    it (the project's TensorFlow) ahead of a build's own.
    """
    digest = hashlib.sha256(str(PACKAGE_DIR).encode()).hexdigest()[:12]
    folder = cache_dir() / "pkg" / digest
    link = folder / "cpustudy"
    if not link.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".cpustudy-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(PACKAGE_DIR, target_is_directory=True)
        os.replace(tmp, link)
    return str(folder)


def worker_env(env: Mapping[str, str] | None, device: str = "cpu") -> dict[str, str]:
    """The environment of a worker: ours, the run's switches, this package on the path, unbuffered
    output; CPU runs see no GPU, GPU runs number CUDA devices as NVML does (PCI order), so the GPU
    sampled is the one trained on."""
    out = dict(os.environ)
    out.update(env or {})
    out["PYTHONPATH"] = os.pathsep.join(p for p in (worker_pythonpath(), out.get("PYTHONPATH", "")) if p)
    out["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        out["CUDA_VISIBLE_DEVICES"] = "-1"
    else:
        out.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    return out


def probe_software(python: str | None = None, env: Mapping[str, str] | None = None,
                   timeout_s: float = 180) -> dict[str, Any]:
    """Import the frameworks in a worker (under ``python``) and return what they report."""
    penv = worker_env(env, device="cpu")
    penv["CUDA_VISIBLE_DEVICES"] = (env or {}).get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "-1"))
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-m", "cpustudy.worker", "--probe", str(write_fd)],
            pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, env=penv,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise UserError(f"cannot start {python or sys.executable}: {exc}") from None
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        lines = pipe.read().splitlines()
    result: dict[str, Any] = {}
    for line in lines:
        decoded = protocol.decode(line)
        if decoded is None:
            continue
        kind, event = decoded
        if kind == protocol.SOFTWARE:
            result = event
        elif not result:
            result = {"error": event.get("message")}
    if not result:
        tail = (err or b"").decode(errors="replace").strip().splitlines()[-1:]
        result = {"error": tail[0] if tail else f"exit code {proc.returncode}"}
    return result


def _site_dirs(python: str) -> list[Path]:
    """Where packages of ``python`` live, found without starting it: this interpreter's own
    (sysconfig), or a venv's ``lib/python*/site-packages``."""
    import sysconfig

    exe = Path(python)
    if exe.resolve() == Path(sys.executable).resolve() or python == sys.executable:
        paths = sysconfig.get_paths()
        return [Path(p) for p in dict.fromkeys([paths["purelib"], paths["platlib"]])]
    return sorted(exe.parent.parent.glob("lib/python*/site-packages"))


def probe_key(python: str, env: Mapping[str, str] | None) -> str | None:
    """What a probe's answer depends on: the interpreter (path, its file's change time), its
    installed packages (the change times of its site-packages folders and of their entries: an
    install or upgrade changes them), the switches, and this cpustudy (version, commit, method:
    ``provenance.code_key``). None if unreadable."""
    from cpustudy import provenance

    try:
        parts: list[object] = [provenance.code_key(), python, os.stat(python).st_mtime_ns, sorted((env or {}).items())]
        for d in _site_dirs(python):
            parts.append((str(d), d.stat().st_mtime_ns,
                          sorted((e.name, e.stat().st_mtime_ns) for e in os.scandir(d) if e.name.endswith(".dist-info"))))
    except OSError:
        return None
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def probe_software_cached(python: str | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``probe_software``, remembered in the user cache until the interpreter or its packages change
    (a successful probe only; a failed one is probed again next time)."""
    python = python or sys.executable
    k = probe_key(python, env)
    path = cache_dir() / "probes" / f"{k}.json" if k else None
    known = read_json(path)
    if known is not None:
        return {**known, "cached": True}
    result = probe_software(python, env)
    if not result.get("error"):
        write_json(path, result)  # an unwritable cache only means probing again
    return result
