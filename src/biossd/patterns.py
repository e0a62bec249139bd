"""I/O patterns by clustering (seed 000 §3.2, Fig. 5): each tool is a vector of its eight
storage features at its baseline configuration, normalized to [0, 1] (§5.1, :mod:`biossd.normalize`);
agglomerative clustering with average linkage and Euclidean distance; the dendrogram cut into
two groups and into five patterns.

Labels are given by rule, not by hand, so a new result set gets them too:

- **Groups.** Of the two clusters of the top cut, the one whose tools have the higher median
  speedup is G+ and the other G0 (tools without a speedup do not vote; with no speedup at all,
  the higher mean Pfault — the paper's most notable difference, §3.2 — decides).
- **Patterns.** The clusters of the finer cut are numbered P1, P2, ... — those inside G+ first,
  then those inside G0 (the cuts of one dendrogram nest), each by descending median speedup,
  then by mean Pfault, then by their first tool's name.
- **Representative** of a pattern (Fig. 6): the member nearest the pattern's mean vector.

A feature no tool has (all NaN: e.g. no block trace on a host) is left out of the distance, and
a tool missing a feature that others have is left out of the clustering; both are listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.cluster import hierarchy

from biossd import normalize, speedup
from biossd.features import STORAGE_FEATURES

LINKAGE_METHOD = "average"
DISTANCE_METRIC = "euclidean"
N_GROUPS = 2
N_PATTERNS = 5


@dataclass
class Clustering:
    """The dendrogram and its labels. ``tools`` orders the rows of ``matrix`` and ``linkage``."""

    matrix: pd.DataFrame                      # normalized features, one row per clustered tool
    rules: pd.DataFrame                       # the normalization applied to each feature
    linkage: np.ndarray                       # scipy linkage matrix
    group: pd.Series                          # tool -> G+ / G0
    pattern: pd.Series                        # tool -> P1 ...
    cut_heights: dict[int, float]             # clusters -> the distance the cut is drawn at
    speedup: pd.Series                        # tool -> speedup (NaN if none)
    excluded: dict[str, str] = field(default_factory=dict)          # tool -> why not clustered
    dropped_features: dict[str, str] = field(default_factory=dict)  # feature -> why not used

    @property
    def tools(self) -> list[str]:
        return list(self.matrix.index)


def feature_means(runs: pd.DataFrame, columns=STORAGE_FEATURES) -> pd.DataFrame:
    """Mean of each feature per tool over the ``ok`` runs given (one row per tool)."""
    ok = runs[runs["outcome"] == speedup.OK]
    return ok.groupby("tool", sort=True)[list(columns)].mean()


def feature_matrix(means: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str], dict[str, str]]:
    """Normalized features of the tools that have them all; the rules; excluded tools and dropped
    features, each with the reason."""
    dropped = {f: "not measured for any tool" for f in means.columns if means[f].isna().all()}
    used = [f for f in means.columns if f not in dropped]
    incomplete = means[used].isna().any(axis=1)
    excluded = {t: "lacks " + ", ".join(f for f in used if pd.isna(means.at[t, f])) for t in means.index[incomplete]}
    complete = means.loc[~incomplete, used]
    if complete.empty:
        return complete, pd.DataFrame(), excluded, dropped
    normalized, rules = normalize.normalize(complete, used)
    return normalized, rules, excluded, dropped


def cut_height(linkage: np.ndarray, n_clusters: int) -> float:
    """A distance at which cutting the dendrogram leaves ``n_clusters`` clusters (midway between
    the merges around it)."""
    heights = linkage[:, 2]
    n = len(heights) + 1
    if n_clusters <= 1 or n_clusters > n:
        return float(heights[-1]) if n_clusters <= 1 else 0.0
    below = heights[n - n_clusters - 1] if n - n_clusters - 1 >= 0 else 0.0
    return float((below + heights[n - n_clusters]) / 2)


def _order(members: dict[int, list[str]], speedups: pd.Series, pfault: pd.Series) -> list[int]:
    def key(cid: int) -> tuple[float, float, str]:
        tools = members[cid]
        s = speedups.reindex(tools).dropna()
        med = float(s.median()) if len(s) else -np.inf
        return (-med, -float(pfault.reindex(tools).mean()), sorted(tools)[0])

    return sorted(members, key=key)


def cluster(means: pd.DataFrame, speedups: pd.Series, n_groups: int = N_GROUPS,
            n_patterns: int = N_PATTERNS) -> Clustering:
    """Cluster tools by their features (``means``: tool × feature) and label groups and patterns
    by the module's rules. ``speedups`` is tool -> speedup (NaN where there is none)."""
    matrix, rules, excluded, dropped = feature_matrix(means)
    speedups = speedups.reindex(means.index)
    if len(matrix) < 2:
        raise ValueError(f"clustering needs at least two tools with features; have {len(matrix)} "
                         f"(excluded: {excluded or 'none'}; dropped features: {dropped or 'none'})")
    z = hierarchy.linkage(matrix.to_numpy(), method=LINKAGE_METHOD, metric=DISTANCE_METRIC)
    n_groups, n_patterns = min(n_groups, len(matrix)), min(max(n_patterns, n_groups), len(matrix))
    top = hierarchy.fcluster(z, t=n_groups, criterion="maxclust")
    fine = hierarchy.fcluster(z, t=n_patterns, criterion="maxclust")
    tools = list(matrix.index)
    pfault = means["Pfault"].fillna(0.0) if "Pfault" in means else pd.Series(0.0, index=means.index)

    top_members = {int(c): [t for t, k in zip(tools, top) if k == c] for c in sorted(set(top))}
    top_order = _order(top_members, speedups, pfault)
    group_names = [speedup.GROUP_FAST, speedup.GROUP_FLAT] + [f"G{i}" for i in range(3, len(top_order) + 1)]
    group_of_cluster = dict(zip(top_order, group_names))
    group = pd.Series({t: group_of_cluster[int(k)] for t, k in zip(tools, top)}, name="group")

    fine_members = {int(c): [t for t, k in zip(tools, fine) if k == c] for c in sorted(set(fine))}
    rank = {name: i for i, name in enumerate(group_names)}
    ordered = sorted(_order(fine_members, speedups, pfault),
                     key=lambda c: rank[group[fine_members[c][0]]])  # stable: keeps speedup order inside
    pattern_of_cluster = {c: f"P{i + 1}" for i, c in enumerate(ordered)}
    pattern = pd.Series({t: pattern_of_cluster[int(k)] for t, k in zip(tools, fine)}, name="pattern")
    return Clustering(matrix=matrix, rules=rules, linkage=z, group=group, pattern=pattern,
                      cut_heights={n_groups: cut_height(z, n_groups), n_patterns: cut_height(z, n_patterns)},
                      speedup=speedups.reindex(tools), excluded=excluded, dropped_features=dropped)


def pattern_table(c: Clustering) -> pd.DataFrame:
    """Fig. 5(c): per pattern, its group, members, mean speedup and mean normalized features."""
    frame = c.matrix.assign(pattern=c.pattern, group=c.group, speedup=c.speedup)
    rows = []
    for name, members in frame.groupby("pattern", sort=True):
        rows.append({"pattern": name, "group": members["group"].iloc[0], "n_tools": len(members),
                     "tools": ", ".join(sorted(members.index)), "mean_speedup": members["speedup"].mean(),
                     **members[list(c.matrix.columns)].mean().to_dict()})
    return pd.DataFrame(rows)


def representatives(c: Clustering) -> dict[str, str]:
    """Per pattern, the member nearest the pattern's mean vector (ties: the first by name)."""
    out = {}
    for name in sorted(c.pattern.unique()):
        members = sorted(c.pattern.index[c.pattern == name])
        block = c.matrix.loc[members]
        dist = np.linalg.norm(block.to_numpy() - block.mean().to_numpy(), axis=1)
        out[name] = members[int(np.argmin(dist))]
    return out
