"""How ``compare`` decides, apart from how it measures: pure functions of what is measured.

Its thresholds are :class:`cpustudy.rules.Rules` (one frozen object, below ``analysis``, which reads its
interval level and draws from it too); ``policy`` computes what is known of each candidate's *expected* cost (P(lowest
expected cost), the expected regret of choosing it), when the decision is made (or no longer worth making),
and which measurement is worth the most next. The prediction of one new training (intervals, P(cheapest in
one training)) is :mod:`cpustudy.analysis.compare`; the loop that measures is :mod:`cpustudy.measure.compare`'s
``decide``, run by :mod:`cpustudy.measure.race` (one orchestrator for one setting or several), which call this room
and nothing else decides.
"""
