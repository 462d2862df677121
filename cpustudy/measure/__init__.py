"""The parent side of measuring: from what the user asked for to stored runs.

``spec.plan`` turns a ``RunSpec`` (what was asked) into a checked ``RunConfig`` (what runs), whose
identity is a ``Configuration`` (``configuration``); ``execute`` runs one in a fresh worker and stores it
(``summary`` computes its figures, ``peaks`` caches the device's peak, ``describe`` says it in words);
``session`` holds the database for measuring; ``request`` parses a sweep as asked (``SweepRequest``) and
``sweep`` plans and runs its grid of cells, resumably; ``tune`` searches runtime settings; ``compare``
measures what ``cpustudy compare`` still needs (seeds trained to the target, speed runs), and
``settings`` does so over precisions and batch sizes; ``overhead`` compares cpustudy's timing with a
plain Keras fit. Nothing here imports TensorFlow.
"""
