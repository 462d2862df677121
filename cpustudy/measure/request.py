"""A sweep as the user asked for it, parsed once: ``SweepRequest``.

``cpustudy sweep`` and ``cpustudy cloud plan`` take the same arguments (``cli.args.add_sweep_request``)
and make one of these with ``cli.args.sweep_request``, where every cross-argument rule is checked.
``sweep`` plans its cells on this machine; ``cloud plan`` plans the same cells for each VM
(:meth:`SweepRequest.cells` with ``spec.Host.vm``: the cells ``sweep --dry-run`` shows there) and writes
the request back as the VM's ``sweep`` arguments (:meth:`SweepRequest.argv`). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cpustudy import precision

if TYPE_CHECKING:
    from cpustudy.measure.spec import SpecArgs


@dataclass(frozen=True)
class SweepRequest:
    """The grid (workloads x builds x vCPUs x batch sizes x precisions x repeats) and the settings of
    every cell."""

    workloads: str = "all"
    builds: str = "tf"
    vcpus: str | None = "auto"  # None: a cloud VM's own vCPU count
    repeats: int = 1
    epochs: int | None = None  # with a target accuracy: the most epochs
    steps_per_epoch: int | None = None
    batch_sizes: tuple[int, ...] = ()  # () = each workload's own
    precisions: tuple[str, ...] = (precision.DEFAULT,)
    data: str = "auto"
    seed: int = 0
    oversubscribe: bool = False
    device: str = "cpu"
    input_pipeline: str = "auto"
    warmup_steps: int = 0
    augment: str | None = None
    validation: str = "study"
    target_accuracy: float | None = None
    target: str | None = None  # --target METRIC=VALUE (cpustudy.targets)
    timeout: int | None = None
    tuned: bool = False
    calibrate: bool = False  # one cell per workload also in full epochs, beside its projection

    def spec_args(self) -> SpecArgs:
        """Every cell's settings, as ``spec.RunSpec`` takes them."""
        return {"epochs": self.epochs, "steps_per_epoch": self.steps_per_epoch, "data": self.data, "seed": self.seed,
                "oversubscribe": self.oversubscribe, "device": self.device, "warmup_steps": self.warmup_steps,
                "input_pipeline": self.input_pipeline, "options": {} if self.augment is None else
                {"augment": self.augment}, "validation": self.validation, "target_accuracy": self.target_accuracy,
                "target": self.target}

    def argv(self) -> list[str]:
        """The request as ``cpustudy sweep`` arguments (what a cloud VM runs): parsed again, the same request."""
        out = ["--workloads", self.workloads, "--builds", self.builds, "--repeats", str(self.repeats),
               "--data", self.data, "--seed", str(self.seed), "--device", self.device, "--input", self.input_pipeline,
               "--warmup-steps", str(self.warmup_steps), "--validation", self.validation]
        if self.vcpus is not None:
            out += ["--vcpus", self.vcpus]
        if self.target_accuracy is not None or self.target is not None:
            out += (["--target-accuracy", repr(self.target_accuracy)] if self.target_accuracy is not None
                    else ["--target", str(self.target)])
            if self.epochs is not None:
                out += ["--max-epochs", str(self.epochs)]
        elif self.epochs is not None:
            out += ["--epochs", str(self.epochs)]
        if self.steps_per_epoch is not None:
            out += ["--steps-per-epoch", str(self.steps_per_epoch)]
        if self.batch_sizes:
            out += ["--batch-sizes", ",".join(str(b) for b in self.batch_sizes)]
        out += ["--precisions", ",".join(self.precisions)]
        if self.augment is not None:
            out += ["--augment", self.augment]
        if self.timeout is not None:
            out += ["--timeout", str(self.timeout)]
        if self.oversubscribe:
            out.append("--oversubscribe")
        if self.tuned:
            out.append("--tuned")
        if self.calibrate:
            out.append("--calibrate")
        return out

    def cloud_plan_argv(self) -> list[str]:
        """The request as ``cpustudy cloud plan`` arguments (its ``--targets`` and ``--out`` not included): the
        same grid, one VM per vCPU count. Left out: ``--vcpus`` (each VM sweeps its own size), ``--device`` (each
        target decides it), ``--oversubscribe`` (a VM of the size needs none) and ``--tuned`` (a tuning belongs
        to the machine it was found on; ``cloud plan`` has no such flag); and every argument at its default, so
        that a command suggested to the user stays readable."""
        dropped = {"--vcpus", "--device", "--oversubscribe", "--tuned"}
        defaults = set(_items(SweepRequest().argv()))
        return [word for item in _items(self.argv()) if item[0] not in dropped and item not in defaults
                for word in item]


def _items(argv: list[str]) -> list[tuple[str, ...]]:
    """``argv`` as (flag, value) and (switch,) items: a word that is not a flag is the value of the flag before
    it (``SweepRequest.argv`` writes every value as one word; a negative ``--seed`` starts with one dash)."""
    out: list[tuple[str, ...]] = []
    for word in argv:
        if out and len(out[-1]) == 1 and not word.startswith("--"):
            out[-1] = (out[-1][0], word)
        else:
            out.append((word,))
    return out
