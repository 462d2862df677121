"""The parent side of measuring: from what the user asked for to stored runs.

``spec.plan`` turns a ``RunSpec`` (what was asked) into a checked ``RunConfig`` (what runs), whose
identity is a ``Configuration`` (``cpustudy.identity``); ``execute`` runs one in a fresh worker and stores it
(``tally`` computes its figures, ``peaks`` caches the device's peak; ``replay`` plays recorded or simulated
workers back through the same interface);
``session`` holds the database for measuring; ``request`` parses a sweep as asked (``SweepRequest``) and
``sweep`` plans and runs its grid of cells, resumably; ``tune`` searches runtime settings; ``compare``
measures what ``cpustudy compare`` still needs (seeds trained to the target, speed runs), and
``settings`` does so over precisions and batch sizes (both through ``compare.decide``, the one loop
that asks ``cpustudy.decision`` what to measure next and when to stop); ``overhead`` compares cpustudy's timing with a
plain Keras fit. Nothing here imports TensorFlow.
"""
