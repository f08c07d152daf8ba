"""Reasoning fingerprints (strategic personalities, Supplementary Note 6): how agents' texts differ.

Each stored reasoning text becomes a TF-IDF vector (at most 5,000 terms, sublinear term
frequency, English stop words removed, L2-normalised), reduced by truncated SVD to at
most 384 dimensions. Per agent we take the centroid of its traces and compare centroids
by cosine distance. Providers are the cluster labels:

* ``silhouette.per_agent`` is the paper's centroid silhouette: for an agent,
  a = mean distance to the centroids of the other agents of its provider, b = mean
  distance to the centroids of other providers' agents, s = (b − a) / max(a, b); None
  when the agent is its provider's only one;
* ``silhouette.overall`` is the usual silhouette over the traces themselves (cosine),
  on at most 5,000 traces drawn with a fixed seed;
* ``between_within_ratio``: mean centroid distance across providers over the mean
  within providers.

``lexical`` counts, per 1,000 words of an agent's text, the 24 strategy terms the paper
lists. Our patterns (documented in :data:`LEXICON`) match a word's inflections —
"cooperate" also counts "cooperation", "cooperative"; "fairness" counts "fair", "unfair";
multi-word terms allow a space or hyphen — so the rates are comparable across agents,
not to the paper's digits.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["LEXICON", "fingerprints", "lexical_rates", "word_count"]

LEXICON: dict[str, str] = {
    "cooperate": r"\bcooperat\w*", "defect": r"\bdefect\w*", "fairness": r"\b(?:un)?fair\w*",
    "trust": r"\b(?:dis)?trust\w*", "strategy": r"\bstrateg\w*", "optimality": r"\boptimal\w*",
    "equilibrium": r"\bequilibri\w*", "risk": r"\brisk\w*", "opponent": r"\bopponent\w*",
    "mutual": r"\bmutual\w*", "punishment": r"\bpunish\w*", "reward": r"\breward\w*",
    "reciprocity": r"\breciproc\w*", "maximizing": r"\bmaximi[sz]\w*",
    "best response": r"\bbest[\s-]+respon\w*", "nash": r"\bnash\b", "pareto": r"\bpareto\b",
    "dominant": r"\bdominan\w*", "exploit": r"\bexploit\w*", "forgiveness": r"\bforgiv\w*",
    "retaliation": r"\bretaliat\w*", "tit-for-tat": r"\btit[\s-]+for[\s-]+tat\b",
    "long-term": r"\blong[\s-]+term\b", "short-term": r"\bshort[\s-]+term\b",
}
_MULTI_WORD = {name: p for name, p in LEXICON.items() if r"[\s-]" in p}
_ONE_WORD = {name: p for name, p in LEXICON.items() if name not in _MULTI_WORD}


def _alternatives(terms: dict[str, str], prefix: str) -> str:
    return "|".join(f"(?P<{prefix}{i}>{p.removeprefix(chr(92) + 'b')})"
                    for i, p in enumerate(terms.values()))


_ONE_WORD_RE = re.compile(_alternatives(_ONE_WORD, "w"), re.IGNORECASE)
"""A one-word term matches a whole run of word characters (it starts at a word boundary
and ends with any word characters or at a boundary), so it is tested once per distinct run."""
_MULTI_WORD_RE = re.compile(r"\b(?:" + _alternatives(_MULTI_WORD, "m") + ")", re.IGNORECASE)
_GROUPS = {**{f"w{i}": n for i, n in enumerate(_ONE_WORD)},
           **{f"m{i}": n for i, n in enumerate(_MULTI_WORD)}}
_RUN = re.compile(r"\w+")
_WORD = re.compile(r"\b\w[\w'-]*\b")
_SEPARATOR = "\0"
"""Joins an agent's texts for one pass: not a word character nor whitespace nor a hyphen,
so no word or term runs across two texts (a text's end stays a word boundary)."""


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def lexical_rates(texts: Sequence[str]) -> dict[str, Any]:
    """Occurrences of each lexicon term per 1,000 words over all ``texts``.

    Counted in passes over all the texts at once rather than one search per term and
    text: the one-word terms per distinct run of word characters, the four multi-word
    terms (which none of the others overlap) in one pattern; the counts are those of a
    ``findall`` per term.
    """
    joined = _SEPARATOR.join(texts)
    words = sum(1 for _ in _WORD.finditer(joined))
    counts = dict.fromkeys(LEXICON, 0)
    for run, n in Counter(_RUN.findall(joined)).items():
        match = _ONE_WORD_RE.fullmatch(run)
        if match is not None:
            counts[_GROUPS[match.lastgroup or ""]] += n
    for match in _MULTI_WORD_RE.finditer(joined):
        counts[_GROUPS[match.lastgroup or ""]] += 1
    rates = {name: (1000.0 * c / words if words else None) for name, c in counts.items()}
    return {"words": words, "per_1000_words": rates}


def _centroid_silhouette(names: list[str], providers: dict[str, str],
                         dist: Any) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for i, a in enumerate(names):
        same = [dist[i][j] for j, b in enumerate(names) if j != i and providers[b] == providers[a]]
        other = [dist[i][j] for j, b in enumerate(names) if providers[b] != providers[a]]
        if not same or not other:
            out[a] = None
            continue
        a_mean, b_mean = sum(same) / len(same), sum(other) / len(other)
        denom = max(a_mean, b_mean)
        out[a] = (b_mean - a_mean) / denom if denom > 0 else 0.0
    return out


def fingerprints(texts: Sequence[str], agents: Sequence[str], providers: dict[str, str], *,
                 dimensions: int = 384, vocabulary: int = 5000, seed: int = 0) -> dict[str, Any] | None:
    """Embeddings, centroid distances, silhouettes and lexical rates; None when fewer than
    two agents have text."""
    by_agent: dict[str, list[int]] = defaultdict(list)
    for i, a in enumerate(agents):
        by_agent[a].append(i)
    names = sorted(by_agent)
    if len(names) < 2:
        return None
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import silhouette_score
    from sklearn.metrics.pairwise import cosine_distances

    lexical = {a: lexical_rates([texts[i] for i in by_agent[a]]) for a in names}
    vectorizer = TfidfVectorizer(max_features=vocabulary, sublinear_tf=True,
                                 stop_words="english", norm="l2")
    try:
        tfidf = vectorizer.fit_transform(texts)
    except ValueError:  # nothing but stop words
        return {"traces": len(texts), "lexical": lexical, "embedding": None}
    k = min(dimensions, tfidf.shape[1] - 1, tfidf.shape[0] - 1)
    if k < 1:
        return {"traces": len(texts), "lexical": lexical, "embedding": None}
    import numpy as np
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the dense steps are small, and a second thread on a busy machine
    # (the analysis screen's worker, other processes) spends more time waiting than working.
    with threadpool_limits(limits=1):
        emb = TruncatedSVD(n_components=k, random_state=seed).fit_transform(tfidf)
        centroids = np.vstack([emb[by_agent[a]].mean(axis=0) for a in names])
        dist = cosine_distances(centroids)
        labels = [providers[a] for a in agents]
        overall = None
        if 2 <= len(set(labels)) <= len(texts) - 1:
            try:
                overall = float(silhouette_score(emb, labels, metric="cosine",
                                                 sample_size=min(len(texts), 5000),
                                                 random_state=seed))
            except ValueError:  # the drawn sample held a single provider
                overall = None
    within, between = [], []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            (within if providers[a] == providers[names[j]] else between).append(dist[i][j])
    ratio = None
    if within and between and sum(within) > 0:
        ratio = (sum(between) / len(between)) / (sum(within) / len(within))
    per_agent = _centroid_silhouette(names, providers, dist)
    return {
        "traces": len(texts),
        "embedding": {"method": "TF-IDF (sublinear, English stop words, L2) -> truncated SVD",
                      "vocabulary": int(tfidf.shape[1]), "dimensions": int(k)},
        "agents": {a: {"provider": providers[a], "traces": len(by_agent[a]),
                       "silhouette": per_agent[a]} for a in names},
        "cosine_distances": {"agents": names,
                             "matrix": [[round(float(x), 6) for x in row] for row in dist]},
        "silhouette": {"overall": overall, "per_provider": _provider_means(per_agent, providers)},
        "between_within_ratio": ratio,
        "lexical": lexical,
    }


def _provider_means(per_agent: dict[str, float | None],
                    providers: dict[str, str]) -> dict[str, float | None]:
    groups: dict[str, list[float]] = defaultdict(list)
    for a, s in per_agent.items():
        if s is not None and not math.isnan(s):
            groups[providers[a]].append(s)
    return {p: sum(v) / len(v) for p, v in sorted(groups.items())}
