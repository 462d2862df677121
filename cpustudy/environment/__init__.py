"""Where a measurement runs: the machine (CPU, instruction sets, topology, GPUs), whether it is quiet
enough (``state``), the TensorFlow/Keras builds that can be measured on it (``builds``) and the
container images that carry them (``images``). Standard library only; nothing here imports a
framework (a build's software is probed in a worker)."""
