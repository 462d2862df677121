"""Where a run measured in the cloud ran: cloud, region, zone, instance type, spot or on-demand, and
how many times its job was started again after a cut (preemption or a restart).

SkyPilot sets ``SKYPILOT_CLUSTER_INFO`` (JSON: cloud, region, zone, cluster_name; the current VM's, so
it can change after a recovery) and ``SKYPILOT_TASK_ID`` (stable across the recoveries of a managed
job). The tasks ``cpustudy cloud plan`` writes add the target they pinned (``CPUSTUDY_CLOUD_TARGET``:
``gcp:n2-highcpu-8`` or ``gcp:a3-highgpu-1g+H100:1``) and ``CPUSTUDY_CLOUD_SPOT``. SkyPilot exposes no
recovery count to the job, so a sweep with ``--snapshot-to`` counts its own starts beside the snapshot
(:func:`count_start`). Standard library only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

ENV_TARGET = "CPUSTUDY_CLOUD_TARGET"
ENV_SPOT = "CPUSTUDY_CLOUD_SPOT"
#: What the plan priced the target as (JSON: cloud, instance_type, accelerator, accelerator_count, region):
#: stored with every run as ``priced``, so the report prices the run as the plan did, GPUs included.
ENV_RESOURCES = "CPUSTUDY_CLOUD_RESOURCES"


def context(env: Mapping[str, str] | None = None, starts: int | None = None) -> dict[str, Any] | None:
    """The cloud this process runs in, or None outside a cloud job. ``starts``: how many times this
    job has started (1 = never cut)."""
    env = os.environ if env is None else env
    try:
        info = json.loads(env.get("SKYPILOT_CLUSTER_INFO") or "{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict):
        info = {}
    target = env.get(ENV_TARGET) or ""
    if not info and not target:
        return None
    provider, _, instance = target.partition(":")
    instance_type, _, accelerators = instance.partition("+")
    spot = env.get(ENV_SPOT)
    try:
        priced = json.loads(env.get(ENV_RESOURCES) or "null")
    except ValueError:
        priced = None
    return {
        "cloud": str(info.get("cloud") or provider or "").lower() or None,
        "region": info.get("region"),
        "zone": info.get("zone"),
        "instance_type": instance_type or None,
        "accelerators": accelerators or None,
        "spot": None if spot is None else spot == "1",
        "target": target or None,
        "priced": priced if isinstance(priced, dict) else None,
        "task_id": env.get("SKYPILOT_TASK_ID"),
        "cluster": info.get("cluster_name"),
        "recoveries": None if starts is None else max(0, starts - 1),
    }


def count_start(snapshot: str | Path, env: Mapping[str, str] | None = None) -> int:
    """Record one start of the job whose snapshot is ``snapshot`` (a line in ``<snapshot>.starts``,
    beside it on the bucket) and return how many starts there have been, this one included."""
    env = os.environ if env is None else env
    path = Path(str(snapshot) + ".starts")
    line = json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "task_id": env.get("SKYPILOT_TASK_ID"),
                       "cluster_info": env.get("SKYPILOT_CLUSTER_INFO")})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    return sum(1 for text in path.read_text(encoding="utf-8").splitlines() if text.strip())
