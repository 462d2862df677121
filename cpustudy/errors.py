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
