"""Arguments several commands share, and their types."""

from __future__ import annotations

import argparse
import math
from typing import Sequence, TypeAlias

from cpustudy.errors import UserError
from cpustudy.measure.request import SweepRequest
from cpustudy.names import int_list, split_list
from cpustudy.precision import DEFAULT, POLICIES
from cpustudy.precision import unknown as unknown_policy

PROG = "cpustudy"

#: What each command's ``register`` is given: the top parser's subcommands (argparse's own type for them).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive whole number")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def accuracy(text: str) -> float:
    """A validation accuracy: a number above 0 and at most 1."""
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an accuracy: give a fraction between 0 and 1, e.g. 0.9")
    return value


def dpi(text: str) -> int:
    """A PNG resolution a chart can be drawn at (30 to 600 dots per inch)."""
    value = positive_int(text)
    if not 30 <= value <= 600:
        raise argparse.ArgumentTypeError(f"{text!r}: give a resolution from 30 to 600 dots per inch")
    return value


def duration(text: str) -> float:
    """``90s``, ``10m``, ``1h30m``, ``2h`` or seconds, as seconds; a negative one (``-5m``) is refused as such."""
    from cpustudy.names import parse_duration

    try:
        return parse_duration(text, "")
    except UserError as exc:
        why = str(exc).lstrip()
    size = text.strip()[1:] if text.strip().startswith("-") else ""
    try:
        parse_duration(size, "")  # a duration but for its sign?
    except UserError:
        raise argparse.ArgumentTypeError(why) from None
    raise argparse.ArgumentTypeError(f"{text!r}: a deadline must be positive, e.g. {size}")


def add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="PATH", default=None,
                   help="SQLite results database (default: $CPUSTUDY_DB or ./cpustudy.sqlite)")


def add_format(p: argparse.ArgumentParser, choices: Sequence[str] = ("table", "csv", "json")) -> None:
    p.add_argument("--format", choices=choices, default="table", help="output format (default: table)")


def add_settings(p: argparse.ArgumentParser, device: bool = True) -> None:
    if device:
        p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                       help="train on the CPUs (default) or on a GPU, for the baseline")
    p.add_argument("--input", choices=("auto", "numpy", "tfdata"), default="auto",
                   help="input pipeline: tfdata = one cached, shuffled, prefetched tf.data pipeline kept across "
                   "epochs; numpy = NumPy arrays into fit, the study's way (Keras 3 on TensorFlow then makes a new "
                   "iterator every epoch and can stall seconds between epochs); auto (default) = tfdata on "
                   "TensorFlow, numpy on JAX and PyTorch")
    p.add_argument("--warmup-steps", type=int, default=0, metavar="N",
                   help="untimed training steps before the first epoch (default: 0; the first epoch is "
                   "always flagged warm-up)")


def add_measure(p: argparse.ArgumentParser, device: bool = True) -> None:
    """What `run` and `sweep` share: settings, augmentation, validation, timeout."""
    add_settings(p, device)
    p.add_argument("--augment", choices=("host", "model", "none"), default=None,
                   help="cifar10_cnn: where the real-time augmentation runs: host = in the input pipeline "
                   "on host threads (default, as the study's ImageDataGenerator), model = as Keras layers on "
                   "the training device, none")
    p.add_argument("--no-augment", dest="augment", action="store_const", const="none",
                   help="cifar10_cnn: train without real-time augmentation (= --augment none)")
    p.add_argument("--validation", choices=("study", "none"), default="study",
                   help="validate on the test set after every epoch as the study's examples did, timed apart "
                   "from training (default: study), or not at all")
    p.add_argument("--precision", choices=POLICIES, default=DEFAULT,
                   help="Keras precision policy (default: float32); a reduced precision the device cannot run "
                   "natively is refused (bfloat16 on CPUs needs AVX512_BF16 or AMX)")
    p.add_argument("--target-accuracy", type=accuracy, metavar="A",
                   help="train until the validation accuracy reaches A (e.g. 0.9), at most --max-epochs; "
                   "stores the epochs and training time to reach it (needs --data real or learnable)")
    p.add_argument("--target", metavar="METRIC=VALUE",
                   help="train until a validation metric fit logs reaches VALUE, at most --max-epochs: "
                   "val_auc=0.8, val_sparse_categorical_accuracy=0.9, val_loss<=0.3 (= means >= unless the name "
                   "says lower is better: a loss, an error)")
    p.add_argument("--max-epochs", type=positive_int, metavar="E",
                   help="with --target-accuracy or --target: the most epochs to train (default: the workload's "
                   "epochs)")
    p.add_argument("--timeout", type=positive_int, metavar="SECONDS",
                   help="fail a measurement after this many seconds (a sweep records it and goes on)")


def add_sweep_request(p: argparse.ArgumentParser, *, cloud: bool = False) -> None:
    """The arguments of a sweep request (``measure.request.SweepRequest``), the same for `sweep` and
    `cloud plan` (where each target decides the device and the vCPUs default to the VM's own)."""
    if cloud:
        p.add_argument("--vcpus", help="vCPU counts to sweep on each CPU VM, up to its size, or auto = 1, 2, 4, "
                       "... up to it (default: its size)")
    else:
        p.add_argument("--vcpus", default="auto", help="comma-separated vCPU counts (all = this machine's CPUs: "
                       "1,all is one against all), or auto = 1,2,4,... up to this machine's CPUs (default: auto)")
    p.add_argument("--builds", default="tf", help="comma-separated builds (default: tf)" +
                   ("; on CPU VMs" if cloud else ""))
    p.add_argument("--workloads", default="all", help="comma-separated workloads, or all (default: all)")
    add_grid(p, "per cell", oversubscribe=not cloud)
    p.add_argument("--repeats", type=positive_int, default=1, help="measurements per cell (default: 1)")
    p.add_argument("--calibrate", action="store_true",
                   help="with --steps-per-epoch: also train one cell per workload (the first build, the fewest "
                   "vCPUs) in full epochs, interleaved beside its projection, so the report can check the "
                   "projection against them (full epochs take long: see --dry-run)")
    p.add_argument("--batch-sizes", metavar="LIST", help="comma-separated batch sizes, an axis of the grid like "
                   "builds (e.g. 32,128,512; default: --batch-size, else each workload's)")
    p.add_argument("--precisions", metavar="LIST", help="comma-separated precision policies, an axis of the grid "
                   "(e.g. float32,mixed_bfloat16; default: --precision)")
    add_measure(p, device=not cloud)
    if not cloud:
        p.add_argument("--tuned", action="store_true",
                       help="use the setting `cpustudy tune` found for each workload, build and vCPU count")


def sweep_request(args: argparse.Namespace) -> SweepRequest:
    """The parsed ``add_sweep_request`` arguments as the request they make; a contradiction is a one-line
    ``UserError``."""
    if getattr(args, "batch_sizes", None) and args.batch_size:
        raise UserError("give --batch-size or --batch-sizes, not both")
    if getattr(args, "precisions", None) is not None and args.precision != DEFAULT:
        raise UserError("give --precision or --precisions, not both")
    if args.batch_sizes:
        batch_sizes = tuple(dict.fromkeys(int_list(args.batch_sizes, "--batch-sizes")))
    else:
        batch_sizes = (args.batch_size,) if args.batch_size else ()
    if args.precisions is not None:
        precisions = tuple(dict.fromkeys(split_list(args.precisions, "--precisions", "float32,mixed_bfloat16")))
    else:
        precisions = (args.precision,)
    for p in precisions:
        if unknown_policy(p):
            raise UserError(str(unknown_policy(p)))
    if getattr(args, "calibrate", False) and not args.steps_per_epoch:
        raise UserError("--calibrate checks projected epochs against full ones: give --steps-per-epoch too "
                        "(without it every epoch is already full)")
    return SweepRequest(
        workloads=args.workloads, builds=args.builds, vcpus=args.vcpus, repeats=args.repeats,
        epochs=target_epochs(args), steps_per_epoch=args.steps_per_epoch, batch_sizes=batch_sizes,
        precisions=precisions, data=args.data, seed=args.seed,
        oversubscribe=bool(getattr(args, "oversubscribe", False)), device=getattr(args, "device", "cpu"),
        input_pipeline=args.input, warmup_steps=args.warmup_steps, augment=args.augment,
        validation=args.validation, target_accuracy=args.target_accuracy, target=target_text(args),
        timeout=args.timeout, tuned=bool(getattr(args, "tuned", False)), calibrate=bool(getattr(args, "calibrate", False)))



def target_text(args: argparse.Namespace) -> str | None:
    """``--target`` checked and written the one way it is stored (``val_loss<=0.3``); None without it."""
    text = getattr(args, "target", None)
    if text is None:
        return None
    from cpustudy import targets

    return targets.parse(text).text


def target_epochs(args: argparse.Namespace) -> int | None:
    """The epochs to train: --max-epochs with --target-accuracy or --target (which need it or the default),
    else --epochs; --max-epochs alone, or with --epochs, is refused."""
    targeted = args.target_accuracy is not None or getattr(args, "target", None) is not None
    if args.max_epochs is not None and not targeted:
        raise UserError("--max-epochs goes with --target-accuracy or --target: use --epochs for a fixed number of "
                        "epochs")
    if targeted and args.epochs is not None:
        flag = "--target-accuracy" if args.target_accuracy is not None else "--target"
        raise UserError(f"{flag} trains until it is reached: give --max-epochs instead of --epochs")
    return args.max_epochs if targeted else args.epochs


def add_grid(p: argparse.ArgumentParser, what: str, oversubscribe: bool = True) -> None:
    """Epochs, steps, batch size, data, seed, oversubscription: `run` and `sweep`."""
    p.add_argument("--epochs", type=positive_int, help=f"epochs {what} (default: the study's)")
    p.add_argument("--steps-per-epoch", type=positive_int,
                   help="cap steps per epoch; full-epoch times are then projected and labelled so")
    p.add_argument("--batch-size", type=positive_int, help="batch size (default: each workload's)")
    p.add_argument("--data", choices=("auto", "real", "synthetic", "learnable"), default="auto",
                   help="real Keras datasets (from the cache), synthetic data of the same shapes, "
                   "auto = real when cached, else synthetic (default: auto), or learnable = synthetic inputs "
                   "whose labels follow a planted rule (for --target-accuracy demonstrations; never pooled "
                   "with real data)")
    p.add_argument("--seed", type=int, default=0, help="random seed for data and weights (default: 0)")
    if oversubscribe:
        p.add_argument("--oversubscribe", action="store_true",
                       help="allow more vCPUs than this machine has (stored as oversubscribed)")


def options(augment: str | None) -> dict[str, str]:
    """Workload switches from the command line (only --augment today)."""
    return {} if augment is None else {"augment": augment}


def check_out_folder(path: str | None, flag: str = "--out") -> None:
    """Refuse an output folder that cannot be one (a file is there, or under it) before anything is measured."""
    from pathlib import Path

    if not path:
        return
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise UserError(f"{flag} {path}: {q} is a file, not a folder: give a folder (created if missing)")
            return
