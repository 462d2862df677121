"""One measurement, in a fresh process: ``python -m cpustudy.worker CONFIG_JSON EVENTS_FD``.

The worker pins itself to its CPUs and sets its thread counts *before* TensorFlow (or NumPy's BLAS)
is imported (``frameworks``), so every thread pool is sized for and confined to those CPUs. It then
builds the workload and trains it with a per-epoch wall-clock callback (``train``), writing one JSON
event per line to the file descriptor ``EVENTS_FD`` (names and the ``RunConfig`` it reads: the
``protocol`` module). With a GPU it samples its utilisation (``gpu``); once per configuration it
measures the device's peak (``peak``). ``data`` provides the training and validation data and
``fit``'s inputs, ``epochs`` the per-epoch timer; a user's model file is imported and checked by
``usermodel``, a user's training script run as it is by ``script``.

``python -m cpustudy.worker --probe EVENTS_FD`` only imports the frameworks and reports the software
(versions, oneDNN, the instruction sets TensorFlow says it was not compiled for). ``python -m
cpustudy.worker.plain CONFIG_JSON`` is ``cpustudy bench overhead``'s plain side: the same run's training with no
callback of cpustudy's (``plain``).

This package runs under any build's interpreter (Python >= 3.9, NumPy 1 or 2, Keras 3 or tf.keras
2.x) and imports only the standard library at import time; it never imports the parent's side
(``cpustudy.measure``, ``store``, ``analysis``, ``report``).
"""
