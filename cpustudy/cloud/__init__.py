"""The study on rented machines: SkyPilot tasks per target (one pinned instance type each), their cost
estimated from the price catalog before anything is launched, managed jobs that survive preemption
(the live database on the VM's disk, snapshots on a bucket mount), and the results fetched and merged.

* :mod:`cpustudy.cloud.targets`: ``gcp:n2-highcpu-8``, ``aws:c7i.4xlarge``, ``gcp:H100:1`` -> a pinned
  instance type with its vCPUs and price row.
* :mod:`cpustudy.cloud.tasks`: the SkyPilot task of one target (a dict, written as YAML) and its check
  against SkyPilot's own schema when SkyPilot is installed (``pip install 'cpustudy[cloud]'``).
* :mod:`cpustudy.cloud.plan`: a plan folder (tasks + ``plan.json``) and its estimated cost.
* :mod:`cpustudy.cloud.jobs`: launch, status, fetch and down through a small :class:`Backend`
  (SkyPilot managed jobs; tests use a fake).
* :mod:`cpustudy.cloud.probes`: the cloud candidates of ``cpustudy compare`` as a plan of probe jobs,
  costed and held to ``--probe-budget``.
* :mod:`cpustudy.cloud.suggest`: the ``cloud plan`` of a sweep this machine cannot measure (more vCPUs
  than it has), on VMs of its CPU's cloud family.

Nothing here imports SkyPilot at import time; only validation and the SkyPilot backend do.
"""
