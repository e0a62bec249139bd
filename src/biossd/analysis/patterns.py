"""I/O patterns by clustering (Lee, Min and Yoon 2015, §3.2, Fig. 5): each tool is a vector of its eight
storage features at its baseline configuration, normalized to [0, 1] (§5.1, :mod:`biossd.features.normalize`);
agglomerative clustering with average linkage and Euclidean distance; the dendrogram cut into
two groups and into five patterns.

Labels are given by rule, not by hand, so a new result set gets them too:

- **Clusters.** The clusters of the top cut are C1, C2, ... by descending median speedup (tools
  without a speedup do not vote; with no speedup at all, the higher mean Pfault — the paper's
  most notable difference, §3.2 — decides). They are *not* the paper's groups: G+ and G0 are
  defined by speedup (2x or more, Table 1), and :func:`cut_agreement` says how far the two-cluster
  cut of the features matches that split (C1 taken for G+), as §3.2 asks of its dendrogram.
- **Patterns.** The clusters of the finer cut are numbered P1, P2, ... — those inside C1 first,
  then those inside C2 (the cuts of one dendrogram nest), each by descending median speedup,
  then by mean Pfault, then by their first tool's name.
- **Representative** of a pattern (Fig. 6): the member nearest the pattern's mean vector.

A feature no tool has (all NaN: e.g. no block trace on a host) is left out of the distance, and
a tool missing a feature that others have is left out of the clustering; both are listed. A size
or ratio that is undefined because the tool issued no requests of that kind is not missing: it
gets the documented value of :data:`NO_REQUESTS` (and is listed as such), so a tool that never
writes is still clustered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.cluster import hierarchy

from biossd.analysis import speedup
from biossd.features import normalize
from biossd.features.definitions import STORAGE_FEATURES

#: Features undefined when a run issued no requests of a kind (their definitions divide by the
#: count), each with the rate that says so and the neutral value used for the distance instead:
#: the median of that feature over the tools that have it, so a tool with no reads (writes) is
#: placed neither with the most random readers (the smallest Rsize is P1's mark, Lee, Min and
#: Yoon 2015 §3.2) nor with the most sequential ones; its low Riops (Wiops) already says it did
#: not read (write).
NO_REQUESTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "Rsize": (("Riops",), "median", "no reads"),
    "Wsize": (("Wiops",), "median", "no writes"),
    "CAR": (("Riops", "Wiops"), "median", "no requests"),
}
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
    cluster: pd.Series                        # tool -> C1 / C2 (the top cut)
    pattern: pd.Series                        # tool -> P1 ...
    cut_heights: dict[int, float]             # clusters -> the distance the cut is drawn at
    speedup: pd.Series                        # tool -> speedup (NaN if none)
    excluded: dict[str, str] = field(default_factory=dict)          # tool -> why not clustered
    dropped_features: dict[str, str] = field(default_factory=dict)  # feature -> why not used
    filled: dict[str, str] = field(default_factory=dict)            # tool -> features set by NO_REQUESTS

    @property
    def tools(self) -> list[str]:
        return list(self.matrix.index)


def feature_means(runs: pd.DataFrame, columns=STORAGE_FEATURES) -> pd.DataFrame:
    """Mean of each feature per tool over the ``ok`` runs given (one row per tool)."""
    ok = runs[runs["outcome"] == speedup.OK]
    return ok.groupby("tool", sort=True)[list(columns)].mean()


def fill_no_requests(means: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """``means`` with each feature of :data:`NO_REQUESTS` set where the tool's rates show it
    issued no such requests; and, per tool, which features were set and to what."""
    out = means.copy()
    filled: dict[str, list[str]] = {}
    for feature, (rates, rule, why) in NO_REQUESTS.items():
        if feature not in out or not all(r in out for r in rates):
            continue
        none = out[feature].isna() & out[list(rates)].fillna(-1).eq(0).all(axis=1)
        if not none.any():
            continue
        observed = out.loc[~none, feature].dropna()
        if observed.empty:
            continue
        value = float(observed.median())
        out.loc[none, feature] = value
        for tool in out.index[none]:
            filled.setdefault(tool, []).append(f"{feature} = {value:.3g} ({why})")
    return out, {t: ", ".join(v) for t, v in filled.items()}


def feature_matrix(means: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str], dict[str, str]]:
    """Normalized features of the tools that have them all; the rules; excluded tools and dropped
    features, each with the reason. (Features undefined for want of requests are set first by
    :func:`fill_no_requests`.)"""
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
    means, filled = fill_no_requests(means)
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
    cluster_names = [f"C{i}" for i in range(1, len(top_order) + 1)]
    name_of_cluster = dict(zip(top_order, cluster_names))
    top_cut = pd.Series({t: name_of_cluster[int(k)] for t, k in zip(tools, top)}, name="cluster")

    fine_members = {int(c): [t for t, k in zip(tools, fine) if k == c] for c in sorted(set(fine))}
    rank = {name: i for i, name in enumerate(cluster_names)}
    ordered = sorted(_order(fine_members, speedups, pfault),
                     key=lambda c: rank[top_cut[fine_members[c][0]]])  # stable: keeps speedup order inside
    pattern_of_cluster = {c: f"P{i + 1}" for i, c in enumerate(ordered)}
    pattern = pd.Series({t: pattern_of_cluster[int(k)] for t, k in zip(tools, fine)}, name="pattern")
    return Clustering(matrix=matrix, rules=rules, linkage=z, cluster=top_cut, pattern=pattern,
                      cut_heights={n_groups: cut_height(z, n_groups), n_patterns: cut_height(z, n_patterns)},
                      speedup=speedups.reindex(tools), excluded=excluded, dropped_features=dropped,
                      filled={t: w for t, w in filled.items() if t in tools})


def pattern_table(c: Clustering) -> pd.DataFrame:
    """Fig. 5(c): per pattern, its top-cut cluster, members, mean speedup and mean normalized
    features."""
    frame = c.matrix.assign(pattern=c.pattern, cluster=c.cluster, speedup=c.speedup)
    rows = []
    for name, members in frame.groupby("pattern", sort=True):
        rows.append({"pattern": name, "cluster": members["cluster"].iloc[0], "n_tools": len(members),
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


def cut_agreement(c: Clustering, threshold: float = speedup.SPEEDUP_THRESHOLD) -> pd.DataFrame:
    """The two-cluster cut against the speedup split (§3.2): per clustered tool with a speedup,
    its cluster, its group by speedup (G+ at ``threshold`` or more) and whether they agree,
    taking C1 (the higher-median cluster) for G+ and every other cluster for G0."""
    split = speedup.group_of(c.speedup.dropna(), threshold)
    table = pd.DataFrame({"cluster": c.cluster.reindex(split.index), "group": split})
    table["agrees"] = (table["cluster"] == "C1") == (table["group"] == speedup.GROUP_FAST)
    return table


def agreement_text(c: Clustering, threshold: float = speedup.SPEEDUP_THRESHOLD) -> str:
    """``"C1 = G+ for 9 of 11 tools"`` (or why there is nothing to compare)."""
    table = cut_agreement(c, threshold)
    if table.empty:
        return "no clustered tool has a speedup to compare with"
    return f"the cut matches the {threshold:g}x split (C1 = G+) for {int(table['agrees'].sum())} of {len(table)} tools"
