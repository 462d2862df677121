import re


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit code 2."""


class NoSeedReached(UserError):
    """Every seed of a comparison trained without reaching its target: nothing to state (a rehearsal counts it as
    one trial's outcome)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``docker stop``, a cancelled job, ``timeout``, a closed terminal), raised in the
    main thread like Ctrl-C so that every interrupt path runs: the worker's process group is killed,
    the run in progress is finished as interrupted, and the command ends with one line."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


#: What TensorFlow and absl print on stderr as they load (glog ``I0000 ...]`` lines, ``... : W tensorflow/...``
#: lines, absl's note on its log): never why a process failed, so never its last meaningful line.
_LOG_NOISE = re.compile(r"^(?:[IW]\d{4} [\d:.]+\s+\d+ \S+:\d+\]"
                        r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] "
                        r"|WARNING: All log messages before absl::InitializeLog\(\) is called)")


def process_ended(code: int, output: str = "") -> str:
    """Why a child process ended, the one wording for it: ``killed by SIGKILL (often out of memory)`` for a
    signal (a negative ``returncode``), ``killed by SIGABRT (exit 134)`` for the 128 + a signal's number a
    shell or a container reports, else ``exited with code N``; then ``: `` and the last line of ``output``
    that is not a TensorFlow log line, when it has one. A verb phrase: it follows a subject (``worker ...``),
    a colon or a parenthesis. The caller adds its own context (epochs done, the command that failed)."""
    import signal

    def killed(number: int, exit_code: int | None = None) -> str:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        notes = ([f"exit {exit_code}"] if exit_code is not None else []) + (
            ["often out of memory"] if number == signal.SIGKILL else [])
        return f"killed by {name}" + (f" ({', '.join(notes)})" if notes else "")

    if code < 0:
        why = killed(-code)
    elif code > 128 and code - 128 in {int(s) for s in signal.Signals}:
        why = killed(code - 128, code)
    else:
        why = f"exited with code {code}"
    meaningful = [ln for ln in output.strip().splitlines() if ln.strip() and not _LOG_NOISE.match(ln)]
    return why + (f": {' '.join(meaningful[-1].split())}" if meaningful else "")
