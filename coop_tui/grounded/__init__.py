"""Grounded similarity (similarity signals, §4): benchmark items, their administration, the
exogenous and endogenous similarity matrices, and the sources that feed them to play.

Modules: ``items`` (the JSONL item format and its loader), ``domains`` (built-in
benchmarks: the similarity game and the die / coin controls), ``metrics`` (agreement,
rescaled quadratic weighted kappa, chance-corrected Jensen-Shannon similarity and their
Monte-Carlo random baselines), ``dossier`` (what a judge reads, with answers redacted),
``matrices`` (agent x agent matrices from a stored run) and ``stages`` (which experiment
of a sweep feeds which, and what the runner hands a dependent match).
"""
