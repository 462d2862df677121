"""Which kernels a reduced precision really runs on: oneDNN's own word, read once per build and machine.

A CPU with AMX or AVX512-BF16 can run Keras' ``mixed_bfloat16`` natively, but whether a given build does
(oneDNN on, a TensorFlow that dispatches bfloat16 matmuls to it) is what decides whether bf16 pays. oneDNN
says which implementation ran each primitive when ``ONEDNN_VERBOSE=1`` (``brg_matmul:avx10_1_512_amx``,
``brg_matmul:avx512_core_amx``, ``...avx512_core_bf16``): :func:`reduced_precision_path` trains one tiny
``mixed_bfloat16`` (or ``mixed_float16``) Dense layer under the build's interpreter with that switch, reads the
matmul lines, and remembers the answer in the user cache until the interpreter or its packages change
(``probe.probe_key``). A build without oneDNN (``tf-eigen``) prints no such line: it says so.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any, Mapping

from cpustudy.cache import cache_dir, read_json, write_json

_SCRIPT = """
import tensorflow as tf
layer = tf.keras.layers.Dense(64, dtype={policy!r})
layer(tf.random.normal([128, 256]))
"""
_LINE = re.compile(r"^onednn_verbose,(?:v\d+,)?primitive,exec,cpu,(matmul|inner_product|convolution),([^,]+),")


def path_of(impl: str) -> str:
    """In words, the instructions an oneDNN implementation name says it used."""
    name = impl.lower()
    if "amx" in name:
        return "AMX"
    if "bf16" in name or "fp16" in name:
        return "AVX-512 " + ("BF16" if "bf16" in name else "FP16")
    return f"no AMX or AVX-512 bfloat16 kernel ({impl})"


def reduced_precision_path(policy: str, python: str | None = None, env: Mapping[str, str] | None = None,
                           timeout_s: float = 120) -> dict[str, Any]:
    """``{"impl": "brg_matmul:avx10_1_512_amx", "path": "AMX", "policy": policy}`` for the first bfloat16/float16
    matmul oneDNN ran under ``python``; ``{"error": why}`` where none was seen (a build without oneDNN, a
    framework that failed to import). Cached per interpreter, packages, switches and policy (a build's answer, none
    seen included; not a probe that failed or timed out)."""
    from cpustudy.environment.probe import probe_key, worker_env

    python = python or sys.executable
    key = probe_key(python, {**(env or {}), "probe": "reduced-precision kernels", "policy": policy})
    cached = cache_dir() / "kernels" / f"{key}.json" if key else None
    known = read_json(cached)
    if known is not None:
        return {**known, "cached": True}
    penv = {**worker_env(env, device="cpu"), "ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
            "KERAS_BACKEND": "tensorflow"}
    try:
        proc = subprocess.run([python, "-c", _SCRIPT.format(policy=policy)], capture_output=True, text=True,
                              env=penv, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"policy": policy, "error": f"the kernel probe did not finish: {exc}"}
    impls = [m.group(2) for m in map(_LINE.match, proc.stdout.splitlines() + proc.stderr.splitlines()) if m]
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"policy": policy, "error": f"the kernel probe failed (exit {proc.returncode}): {tail}"}
    result = {"policy": policy, "impl": impls[0], "path": path_of(impls[0])} if impls else {
        "policy": policy, "error": "oneDNN reported no matmul (oneDNN off in this build, or a framework that does not "
                                   "use it): which kernels ran is not known"}
    write_json(cached, result)  # the build's answer, no matmul reported included; a failed probe is tried again
    return result


def sentence(result: Mapping[str, Any], build: str) -> str:
    """``mixed_bfloat16 on build tf: matmuls through AMX (oneDNN's brg_matmul:avx10_1_512_amx, from its verbose
    output)`` or why it is not known."""
    if result.get("error"):
        return f"{result.get('policy')} on build {build}: {result['error']}"
    return (f"{result['policy']} on build {build}: matmuls through {result['path']} (oneDNN's {result['impl']}, read "
            "from its verbose output)")
