"""Reasoning judges: a post-hoc pass in which an agent classifies stored reasoning texts.

``rubric`` reads the category lists; ``links`` is the storage of judgements (which judge
decision judged which decision, and its labels); ``run`` asks the judge and writes them.
The analysis lives in ``coop_tui.analysis.sections.judgements``.
"""
