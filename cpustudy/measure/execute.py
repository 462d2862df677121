"""One measurement: start a fresh worker, store what it reports as it arrives, finish the run.

The parent never imports TensorFlow. ``execute`` records the machine's state, starts
``python -m cpustudy.worker`` under the build's interpreter with the run's ``RunConfig``, stores
each event (software, data, model, every epoch, the peak) as it arrives, and finishes the run as
``ok`` or ``failed`` (with the exit code and the tail of the worker's output). A failed measurement
is stored and returned, never raised; an interrupt fails the run, kills the worker and goes on up.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Protocol, cast

from cpustudy.environment.probe import worker_env
from cpustudy.errors import Terminated, process_ended
from cpustudy.measure import peaks
from cpustudy.identity import Configuration
from cpustudy.measure.peaks import PeakFigures
from cpustudy.measure.tally import Memory, RunSummary, summarize, target_summary
from cpustudy.store import Store
from cpustudy.worker import protocol
from cpustudy.worker.protocol import RunConfig

Listener = Callable[[str, Mapping[str, object]], None]


class Worker:
    """A started worker (:class:`_Worker`, a process; ``rehearsal.replay.Played``, none): its events, and how it
    ended. These defaults are a worker with no process behind it (``proc`` None) and no output of its own."""

    proc: subprocess.Popen[bytes] | None = None
    spawn_error: str | None = None
    spawned_at: float
    timed_out = False

    def events(self, timeout_s: float | None) -> Iterator[protocol.Event]:
        raise NotImplementedError

    def close(self, done: bool = False) -> int:
        return 0

    def kill(self) -> None:
        pass

    def log_tail(self, lines: int = 25, chars: int = 4000) -> str:
        return ""

    def discard_log(self) -> None:
        pass


class WorkerSource(Protocol):
    """Where a run's events come from: :class:`Spawned` (a fresh worker process training for real, the only
    source a user command takes) or a played-back one (``rehearsal.replay``: recorded or simulated event streams
    for the decision loop's tests and simulations). The run is stored the same way from either."""

    def start(self, config: RunConfig) -> Worker:
        """A started worker: ``events(timeout_s)``, ``close(done)``, ``kill()``, ``log_tail()``,
        ``discard_log()``, and ``spawn_error``, ``spawned_at``, ``timed_out``, ``proc`` (None: no process)."""
        ...

    def machine_state(self) -> dict[str, object]:
        """The machine's state as the run starts (load, busy processes)."""
        ...


class Spawned:
    """A fresh ``python -m cpustudy.worker`` under the build's interpreter: a real measurement."""

    def start(self, config: RunConfig) -> "_Worker":
        return _Worker.start(config)

    def machine_state(self) -> dict[str, object]:
        from cpustudy.environment import state

        return state.machine_state(sample_s=0.2)


class Measurer(Protocol):
    """A measurement: one run's configuration in, the stored run's outcome out (``execute``, or ``execute`` with
    another :class:`WorkerSource`). The decision loop takes one as an argument."""

    def __call__(self, store: Store, machine_id: int, config: RunConfig, *, timeout_s: float | None = None,
                 listener: Listener | None = None) -> "RunOutcome": ...


@dataclass
class RunOutcome:
    run_id: int
    status: str
    summary: RunSummary
    error: str | None = None
    exit_code: int | None = None


def execute(
    store: Store,
    machine_id: int,
    config: RunConfig,
    *,
    timeout_s: float | None = None,
    listener: Listener | None = None,
    source: WorkerSource | None = None,
) -> RunOutcome:
    """Run one measurement in a fresh worker (``source``: :class:`Spawned` unless given) and store it; never
    raises for a failed measurement."""
    from cpustudy.environment import cloud

    source = source or Spawned()
    peak = peaks.known(store, machine_id, config) if config.measure_peak else None
    config = config.with_(machine_state=source.machine_state(),
                          measure_peak_now=config.measure_peak and peak is None,
                          cloud=config.cloud if config.cloud is not None else cloud.context())
    run_id = store.start_run(machine_id, config.as_dict(), Configuration.of(config).columns())
    try:
        return _Run(store, machine_id, run_id, config, peak, listener, source).go(timeout_s)
    except BaseException as exc:
        # Whatever went wrong in the parent (an interrupt, a full disk, a listener's bug), the run
        # must not stay "running": finish it as failed, then let the exception go on.
        if store.runs(run_ids=[run_id])[0]["status"] == "running":
            reason = (f"interrupted by {exc.name}" if isinstance(exc, Terminated) else "interrupted by the user"
                      if isinstance(exc, KeyboardInterrupt) else f"parent error: {exc!r}")
            store.finish_run(run_id, "failed", {}, error=reason)
        raise


@dataclass
class _Run:
    """One run's bookkeeping while its worker trains: the events stored as they come."""

    store: Store
    machine_id: int
    run_id: int
    config: RunConfig
    peak: PeakFigures | None
    listener: Listener | None
    source: WorkerSource
    epochs: list[protocol.EpochEvent] = field(default_factory=list)
    software: dict[str, object] = field(default_factory=dict)
    startup: float | None = None
    error: str | None = None
    peak_event: protocol.PeakEvent | None = None  # the peak this run's worker measured
    peak_note: dict[str, object] | None = None  # what software["peak"] says of it (the time spent measuring it)
    memory: Memory = field(default_factory=lambda: Memory())

    def go(self, timeout_s: float | None) -> RunOutcome:
        worker = self.source.start(self.config)
        if worker.spawn_error:
            worker.discard_log()
            return self._finish("failed", worker.spawn_error, None)
        done = False  # the worker said DONE: everything the run is made of is in
        try:
            for kind, event in worker.events(timeout_s):
                if kind == protocol.EPOCH and worker.proc is not None:
                    rss = peak_rss(worker.proc.pid)  # read at each epoch's end: the peak's own matrices come later
                    if rss:
                        self.memory["peak_rss_bytes"] = max(rss, self.memory.get("peak_rss_bytes", 0))
                gpu_peak = cast(protocol.DoneEvent, event).get("gpu_peak_bytes") if kind == protocol.DONE else None
                if gpu_peak:
                    self.memory["gpu_peak_bytes"] = int(gpu_peak)
                self.on_event(kind, event, worker.spawned_at)
                if kind == protocol.DONE:
                    done = True
                    break  # the worker's teardown is not waited out
        except BaseException:
            worker.kill()  # never leave a worker training behind; execute finishes the run as failed
            worker.discard_log()
            raise
        code = worker.close(done=done)
        if worker.timed_out:
            self.error = f"timed out after {timeout_s:g} s"
        if code == 0 and not worker.timed_out and (len(self.epochs) == self.config.epochs or self._stopped_early()):
            output = worker.log_tail() if self.config.script else None  # a script's own output, kept
            worker.discard_log()
            return self._finish("ok", None, 0, output=output)
        if self.error is None:
            self.error = _exit_reason(code, len(self.epochs), self.config.epochs)
        tail = worker.log_tail()
        worker.discard_log()
        return self._finish("failed", self.error, code, tail)

    def _stopped_early(self) -> bool:
        """A run to a target stops at the epoch that reaches it: fewer epochs, and done. So does a script
        whose own callback stopped its training (EarlyStopping): its epochs are what it trains. A race's seed
        stops where it was told to (``give_up_after``, censored)."""
        if self.epochs and self.config.script:
            return True
        if self.config.give_up_after and len(self.epochs) == self.config.give_up_after:
            return True
        return bool(target_summary(self.config, self.epochs).get("target_reached"))

    def on_event(self, kind: str, event: dict[str, object], spawned_at: float) -> None:
        store, run_id, said = self.store, self.run_id, True  # said: what the run says of itself grew, stored as it comes
        if kind == protocol.SOFTWARE:
            self.software = event
        elif kind in (protocol.DATA, protocol.MODEL, protocol.WARMUP, protocol.GPU_MONITOR):
            # How long data preparation (and from where), model building and warm-up took; how the GPU is sampled.
            self.software["data_prep" if kind == protocol.DATA else kind] = event
            if kind == protocol.MODEL and event.get("xla") is not None:
                store.set_xla(run_id, bool(event["xla"]))
        elif kind == protocol.DONE and event.get("anchor_s"):
            # the machine's fixed reference, timed after the epochs (cpustudy.worker.anchor): kept with the software
            self.software["anchor"] = {"seconds": event["anchor_s"], "version": event.get("anchor_version")}
        elif kind == protocol.PEAK:
            self.peak_note = {"seconds": event.get("seconds")}  # time spent measuring it
            self.software["peak"] = self.peak_note
            # kept once the run's own rate says it can be trusted (_finish)
            self.peak_event = cast(protocol.PeakEvent, event)
        else:
            said = False
            if kind == protocol.TRAIN_START:
                self.startup = float(cast(protocol.TrainStartEvent, event)["wall"]) - spawned_at
            elif kind == protocol.EPOCH:
                epoch = cast(protocol.EpochEvent, event)
                store.add_epoch(run_id, epoch)
                self.epochs.append(epoch)
            elif kind == protocol.ERROR:
                self.error = cast(protocol.ErrorEvent, event).get("message")
        if said:
            store.set_software(run_id, self.software)
        if self.listener:
            self.listener(kind, event)

    def _finish(self, status: str, error: str | None, code: int | None, tail: str = "",
                output: str | None = None) -> RunOutcome:
        summary = summarize(self.config, self.epochs, self.startup)
        summary.update(self.memory)
        summary.update(peaks.isa(self.store.machine_info(self.machine_id), self.config))
        if self.peak_event is not None:
            doubt = peaks.doubt(self.config, self.peak_event, summary,
                                fewer=peaks.at_fewer_vcpus(self.store, self.machine_id, self.config))
            if doubt:  # not cached, not used: the next run measures it again
                if self.peak_note is not None:  # set with peak_event
                    self.peak_note["not_used"] = doubt
                self.store.set_software(self.run_id, self.software)
            else:
                self.peak = peaks.record(self.store, self.machine_id, self.config, self.peak_event)
        if self.peak:
            summary.update(self.peak)
        stored_error = error + ("\n--- worker stderr (tail) ---\n" + tail if tail else "") if error else None
        self.store.finish_run(self.run_id, status, summary, exit_code=code, error=stored_error, output_tail=output)
        return RunOutcome(self.run_id, status, summary, error, code)


def peak_rss(pid: int) -> int | None:
    """The most resident memory the worker ``pid`` has held (Linux's ``VmHWM``), with that of the
    processes it started (a script's data loaders; their peaks added: an upper bound), in bytes; None
    where /proc does not say."""
    import psutil

    total = 0
    try:
        pids = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return None
    for p in pids:
        try:
            with open(f"/proc/{p}/status", encoding="ascii", errors="replace") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")), 0)
        except (OSError, ValueError, IndexError):
            continue
    return total or None


def _exit_reason(code: int, epochs: int, expected: int) -> str:
    """Why a worker ended without its run: how its process ended (its output's tail is added apart), or, having
    exited cleanly, how far it got."""
    if code == 0:
        return f"worker ended after {epochs} of {expected} epochs"
    return f"worker {process_ended(code)}"


#: Seconds a worker that said DONE may take to exit before it is killed (its work is all stored by then).
DONE_GRACE_S = 2.0


class _Worker(Worker):
    """A worker process: its event pipe and its output, kept in a file for the error's tail."""

    def __init__(self) -> None:
        self.read_fd = -1
        self.log = tempfile.NamedTemporaryFile(prefix="cpustudy-worker-", suffix=".log", delete=False)
        self.spawned_at = time.time()

    @classmethod
    def start(cls, config: RunConfig) -> "_Worker":
        w = cls()
        read_fd, write_fd = os.pipe()
        try:
            w.proc = subprocess.Popen(
                [config.python or sys.executable, "-m", "cpustudy.worker", config.to_json(), str(write_fd)],
                pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=w.log, stderr=subprocess.STDOUT,
                env={**worker_env(config.env, config.device), "CPUSTUDY_PARENT_PID": str(os.getpid())},
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            w.spawn_error = f"could not start the worker: {exc}"
        else:
            w.read_fd = read_fd
        finally:
            os.close(write_fd)
        return w

    def events(self, timeout_s: float | None) -> Iterator[protocol.Event]:
        """Events as the worker sends them, until it closes the pipe or the time is up."""
        deadline = time.monotonic() + timeout_s if timeout_s else None
        buffer = b""
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], wait)
            if not ready:
                self.timed_out = True
                return
            chunk = os.read(self.read_fd, 65536)
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                event = protocol.decode(line)
                if event is not None:
                    yield event

    def close(self, done: bool = False) -> int:
        """Stop reading and wait for the worker's exit code (a timed-out worker is killed first). A worker
        that said DONE has sent everything: it gets ``DONE_GRACE_S`` to exit, then is killed and counts as
        exited 0. Dropping TensorFlow's input pipelines at its end can wait on tf.data's autotuning thread,
        which sleeps up to a minute (seen: 11-12 s after 2 of 3 trainings to a target, fashion_mnist_cnn,
        2 vCPUs, Zen 4 VM, 2026-11-25), time no measurement is made of."""
        self._close_pipe()
        assert self.proc is not None
        if self.timed_out:
            _kill(self.proc)
        if done:
            try:
                return self.proc.wait(timeout=DONE_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill(self.proc)
                return 0
        return self.proc.wait()

    def kill(self) -> None:
        self._close_pipe()
        if self.proc is not None:
            _kill(self.proc)

    def _close_pipe(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        self.log.close()

    def log_tail(self, lines: int = 25, chars: int = 4000) -> str:
        try:
            text = Path(self.log.name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])[-chars:]

    def discard_log(self) -> None:
        Path(self.log.name).unlink(missing_ok=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
