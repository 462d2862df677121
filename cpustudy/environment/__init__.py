"""Where a measurement runs: the machine, whether it is quiet enough, the TensorFlow/Keras builds that
can be measured on it and the container images that carry them.

* ``machine``: CPU model, instruction sets, topology, memory, GPUs (from Linux, psutil and py-cpuinfo);
* ``cpuid``: the CPUID instruction itself, and the evidence it and sysfs give of a CPU's generation;
* ``isa``: the theoretical peak of a CPU's instruction sets, an estimate beside the measured peak;
* ``state``: whether the machine is quiet enough to measure on (load, busy processes, governor, SMT);
* ``cloud``: where a run measured in the cloud ran (cloud, zone, instance type, spot, restarts);
* ``builds``: the builds' TOML recipes, their environments and runtime switches;
* ``probe``: starting workers, and probing what a build's interpreter contains;
* ``kernels``: which oneDNN kernels a reduced precision really runs on, per build and machine;
* ``images``: the container images and ``-march`` targets of the builds;
* ``describe``: this machine in words (``cpustudy machine``).

Standard library at import time; nothing here imports a framework (a build's software is probed in a
worker)."""
