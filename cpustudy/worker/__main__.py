"""Entry point of a worker process (see the package's docstring)."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from cpustudy.worker import protocol
from cpustudy.worker.frameworks import import_frameworks, pin_and_size


#: The parent's process id, in the worker's environment.
PARENT_PID = "CPUSTUDY_PARENT_PID"


def die_with_parent() -> None:
    """Have Linux kill this worker when the process that started it dies, however it dies (SIGKILL,
    an out-of-memory kill): a worker never goes on measuring with no one to store it."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent kills the worker's group when it can
        return
    parent = os.environ.get(PARENT_PID)
    if parent and os.getppid() != int(parent):  # the parent died before the request took effect
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    probe = bool(argv) and argv[0] == "--probe"
    if probe:
        argv = argv[1:]
    if len(argv) != (1 if probe else 2):
        print("usage: python -m cpustudy.worker CONFIG_JSON EVENTS_FD | --probe EVENTS_FD", file=sys.stderr)
        return 2
    out = os.fdopen(int(argv[-1]), "w", buffering=1)

    def emit(kind: str, **fields: Any) -> None:
        out.write(protocol.encode(kind, fields))
        out.flush()

    try:
        if probe:
            _, software = import_frameworks(None, None)
            emit(protocol.SOFTWARE, **software)
        else:
            config = protocol.RunConfig.from_json(argv[0])
            pin_and_size(list(config.cpus), config.intra_threads, config.inter_threads)
            from cpustudy.worker.train import train

            train(config, emit)
        return 0
    except BaseException as exc:  # report every failure to the parent, then fail
        traceback.print_exc()
        emit(protocol.ERROR, message=f"{type(exc).__name__}: {exc}".strip()[:2000])
        return 1
    finally:
        out.close()


if __name__ == "__main__":
    die_with_parent()
    code = main()
    # Everything the parent needs has been written and flushed. Skipping the interpreter's and
    # TensorFlow's teardown (thread pools, atexit handlers) saves 1-2 s per worker, which in a sweep
    # of short cells is a large share of the wall time.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
