"""Results measured elsewhere, written into a cpustudy database through :class:`cpustudy.store.Store`.

* :mod:`.woolf2017`: the per-epoch logs of Max Woolf's 2017 study (``cpustudy import woolf2017``).
* :mod:`.merge`: another cpustudy database (``cpustudy merge``).
"""
