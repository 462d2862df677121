"""The parent side of measuring: from what the user asked for to stored runs.

``spec.plan`` turns a ``RunSpec`` (what was asked) into a checked ``RunConfig`` (what runs);
``execute`` runs one in a fresh worker and stores it (``summary`` computes its figures, ``peaks``
caches the device's peak); ``session`` holds the database for measuring; ``sweep`` plans and runs a
grid of cells, resumably; ``tune`` searches runtime settings; ``overhead`` compares cpustudy's
timing with a plain Keras fit. Nothing here imports TensorFlow.
"""
