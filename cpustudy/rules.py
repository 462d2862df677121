"""Every threshold of a comparison (its decision's, its intervals' level and draws, its budget), in one frozen
object, documented once, passed down to what computes them and stored with every answer (its JSON and its page),
so that an answer says the rules it was reached under. Standard library only: ``analysis`` reads its defaults
(:data:`RULES`) here."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Rules:
    """A comparison's thresholds (``compare --regret``, ``--indifference``, ``--trainings`` set the first
    three).

    * ``regret`` (epsilon): the comparison is decided once choosing the leader is expected to cost at most
      this share more than the unknown best (its expected regret, from what is known of every candidate's
      mean cost: :func:`cpustudy.decision.policy.standing`).
    * ``indifference`` (delta): candidates whose expected regret is at most this are "the same within
      delta": any will do.
    * ``confidence`` (1 - alpha): the comparison stops once the leader is within ``indifference`` of the lowest
      expected cost with at least this probability (an indifference zone), or its expected regret is at most
      ``regret``; it says "the same" where other candidates' expected regret is within ``indifference`` too, naming
      each, and "decided" where none's is.
    * ``trainings``: how many trainings the answer will serve. Measuring stops once even knowing the best for
      certain (the leader's expected regret) would save less over that many trainings than the next
      measurement costs.
    * ``min_seeds``: a setting still in contention gets this many seeds before the decision is called (one
      seed tells nothing of how its epochs vary); ``exclude``: a setting is out of contention once none of its
      candidates has a P(lowest expected cost) of ``exclude`` over the number of settings (a Bonferroni bound, so
      that ruling several settings out on one seed each still errs in at most ``exclude`` of comparisons).
    * ``level``: the central share of the prediction intervals of one new training (every interval
      :mod:`cpustudy.analysis.compare` states, unless told otherwise).
    * ``narrow``: with one candidate (nothing to choose), settled once its interval's high is at most this
      many times its low (or once its planned seeds are trained where half or more of the interval's spread is
      how many epochs a new seed may need: more seeds would not narrow that).
    * ``prior_saving``: before anything is measured, the most choosing among settings is taken to save on a
      training (a share of the default's cost): a race whose first round (one seed of each setting) would take
      more trainings' time than ``trainings`` x this is not started, and the default is the answer. An assumption,
      said where it decides: four batch sizes of a convnet on real Fashion-MNIST (2-core Granite Rapids VM,
      2026-11-28) spread 1.23x in expected cost, the default 8 % over the best.
    * ``budget_trainings``, ``budget_per_setting``: without ``--max-trainings``, the decision may spend this many
      trainings' time with one setting, and this many more for each further setting (a race's first round alone
      trains one seed of each).
    * ``busy_runs``: measuring stops after this many runs in a row were measured on a busy machine (each is left
      out of every speed figure: more would spend the budget on runs no comparison counts).
    * ``draws``: draws of a new training (the intervals, P(cheapest)) and of what is known of each candidate's
      mean (the decision); the generators' seeds are fixed: the same measurements give the same answer.
    """

    regret: float = 0.02
    indifference: float = 0.05
    confidence: float = 0.95
    trainings: int = 10
    min_seeds: int = 2
    exclude: float = 0.05
    level: float = 0.90
    narrow: float = 1.5
    prior_saving: float = 0.3
    budget_trainings: float = 8.0
    budget_per_setting: float = 2.0
    busy_runs: int = 2
    # 8000, not 4000: on four settings of two candidates, a combination takes about 26 ms with 8000 (14 ms with
    # 4000) and a decision step 18 ms (10 ms), against seconds to minutes for the measurement it chooses; 8000
    # halves the Monte Carlo variance of the interval ends and of P(cheapest) and the regret near --regret.
    draws: int = 8000

    def check(self) -> str | None:
        """What is wrong with these rules, in one line naming the flag (or the threshold); None when nothing is."""
        if not 0 < self.regret < 1:
            return f"--regret {self.regret:g}: give a share between 0 and 1, e.g. 0.02 for 2 %"
        if not 0 < self.indifference < 1:
            return f"--indifference {self.indifference:g}: give a share between 0 and 1, e.g. 0.05 for 5 %"
        if self.trainings < 1:
            return f"--trainings {self.trainings}: give how many trainings the answer will serve, 1 or more"
        shares = {"confidence": 0 < self.confidence < 1, "exclude": 0 < self.exclude < 1, "level": 0 < self.level < 1,
                  "prior_saving": 0 < self.prior_saving <= 1}  # 1: deciding may save a whole training
        least = {"min_seeds": 1, "narrow": 1, "budget_trainings": 1, "budget_per_setting": 0, "busy_runs": 1, "draws": 100}
        bad = [f"{k} {getattr(self, k):g} (a share between 0 and 1)" for k, ok in shares.items() if not ok] + [
            f"{k} {getattr(self, k):g} (at least {n})" for k, n in least.items() if not getattr(self, k) >= n]
        return f"rules: {'; '.join(bad)}" if bad else None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def words(self) -> str:
        return (f"stopped once the leader is within {self.indifference:.0%} of the lowest expected cost with "
                f"probability {self.confidence:.0%} or its expected regret is at most {self.regret:.0%}; candidates "
                f"within {self.indifference:.0%} expected regret are the same; measuring stops once it cannot pay for "
                f"itself over {self.trainings} training{'' if self.trainings == 1 else 's'} (before measuring: at most {self.prior_saving:.0%} of a "
                f"training saved, assumed); {self.level:.0%} prediction intervals")


#: The rules a comparison takes unless told otherwise.
RULES = Rules()

__all__: Sequence[str] = ("RULES", "Rules")
