""":class:`Analysis`, one analysis of one or more result sets, shared by every notebook: which sides
form the speedup pair, the speedups, the clustering and what differs between the two sides other
than the drive (Lee, Min and Yoon 2015, §2.2, §3.2). The notebooks open it from their ``parameters``
cell (:func:`open_results`) and hand it to :mod:`biossd.outputs.tables` and
:mod:`biossd.outputs.figures`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Sequence

import pandas as pd

from biossd.analysis import patterns, predict, resultset, speedup
from biossd.host.models import devicemodels


@dataclass
class Analysis:
    """``fast`` and ``slow`` name sides (``host-ssd``) or storage classes (``ssd``); the first
    pair found is the primary one (Table 1, Figs. 3–10), every pair is drawn in Fig. 2.
    Features (Figs. 4–7, 10) are taken from ``feature_side`` (default: the primary fast side,
    where a tool's I/O demand is least hidden by the device)."""

    rs: resultset.ResultSet
    fast: str = "ssd"
    slow: str = "hdd"
    threshold: float = speedup.SPEEDUP_THRESHOLD
    n_patterns: int = patterns.N_PATTERNS
    feature_side: str | None = None

    @cached_property
    def pairs(self) -> list[tuple[str, str]]:
        return speedup.pairs(self.rs.runs, self.fast, self.slow)

    @property
    def pair(self) -> tuple[str, str] | None:
        return self.pairs[0] if self.pairs else None

    @property
    def sides(self) -> tuple[str, str]:
        """The primary pair, or the parameters' names when the result set has no such pair (the
        tables then say ``not run on <slow>``)."""
        return self.pair or (self.fast, self.slow)

    @cached_property
    def speedups(self) -> pd.DataFrame:
        """Every configuration of the primary pair (tool, mem, scale) with its speedup and status."""
        return speedup.speedup_table(self.rs.runs, *self.sides)

    @cached_property
    def baseline_runs(self) -> pd.DataFrame:
        return speedup.baseline(self.rs.runs)

    @cached_property
    def baseline(self) -> pd.DataFrame:
        """One row per tool (indexed by tool): its baseline configuration's speedup, status and
        group (G+ at ``threshold`` or more)."""
        table = speedup.speedup_table(self.baseline_runs, *self.sides)
        table["group"] = speedup.group_of(table["speedup"], self.threshold, table["speedup_is_lower_bound"])
        return table.set_index("tool", drop=False)

    @cached_property
    def breakevens(self) -> pd.DataFrame:
        """§3.4, Fig. 8: per tool, at its smallest cap, how many input scales were measured and the
        break-even scale (:func:`biossd.analysis.speedup.breakeven_scale` at ``threshold``; NaN:
        none)."""
        cap_bytes = self.rs.runs.groupby("mem")["mem_bytes"].first()
        rows = []
        for tool, g in self.speedups.groupby("tool"):
            smallest = g.sort_values("mem", key=lambda m: m.map(cap_bytes))["mem"].iloc[0]
            g = g[g["mem"] == smallest]
            rows.append({"tool": tool, "scales": g["scale"].nunique(),
                         "breakeven_scale": speedup.breakeven_scale(g["scale"], g["speedup"], self.threshold)})
        return pd.DataFrame(rows, columns=["tool", "scales", "breakeven_scale"])

    @cached_property
    def cross_prediction(self) -> pd.DataFrame:
        """The prediction's validation: each tool's baseline runs on each side of the pair predicted on
        the other side's device (:func:`biossd.analysis.predict.cross_predict`); empty without a
        pair or device records."""
        if self.pair is None or not all(side in self.rs.devices for side in self.pair):
            return pd.DataFrame(columns=predict.VALIDATION_COLUMNS)
        return predict.cross_predict(self)

    @cached_property
    def predicted_speedups(self) -> pd.DataFrame:
        """Per tool: measured and predicted (from the fast side alone) baseline speedups."""
        if self.cross_prediction.empty:
            return pd.DataFrame(columns=predict.SPEEDUP_COLUMNS)
        return predict.predicted_speedups(self, self.cross_prediction)

    @cached_property
    def paper_device_predictions(self) -> pd.DataFrame:
        """The fast side's baseline runs predicted on each of the paper's devices (Lee, Min and Yoon 2015,
        Tables 3 and 4), for Fig. 2(b)."""
        rows = speedup.side_rows(self.baseline_runs, self.features_side)
        return predict.predict_result_set(self.rs, devicemodels.paper_targets(scale=self.disk_scale),
                                          rows[rows["outcome"] == speedup.OK])

    @cached_property
    def today_storage(self) -> pd.DataFrame:
        """The paper's tools on today's storage (:func:`biossd.analysis.today.table`)."""
        from biossd.analysis import today

        return today.table(self)

    @cached_property
    def disk_scale(self) -> float:
        """The study's memory divisor D (:func:`biossd.study.sizing.rule.memory_divisor` of its data
        memory), by which its hard disks are scaled (:mod:`biossd.host.models.diskmodel`); 1 for a
        study that gave no data memory."""
        from biossd.core.units import is_size_label, parse_size
        from biossd.study.sizing import rule

        value = self.rs.study_param("data_memory")
        return rule.memory_divisor(parse_size(str(value))) if value and is_size_label(str(value)) else 1.0

    @property
    def features_side(self) -> str:
        return self.feature_side or (self.pair[0] if self.pair else self.fast)

    @cached_property
    def feature_means(self) -> pd.DataFrame:
        """Baseline storage-feature means per tool on the feature side."""
        return patterns.feature_means(speedup.side_rows(self.baseline_runs, self.features_side))

    @cached_property
    def clustering(self) -> patterns.Clustering | None:
        """The clustering, or None when the result set cannot be clustered (fewer than two tools
        with features); :attr:`clustering_note` then says why."""
        try:
            return patterns.cluster(self.feature_means, self.baseline["speedup"], n_patterns=self.n_patterns)
        except ValueError as err:
            self.clustering_note = str(err)
            return None

    clustering_note: str = ""

    @cached_property
    def differences(self) -> list[str]:
        """What differs between the primary pair's sides besides the drive (host facts, tool
        versions); empty when nothing does or there is no pair."""
        if self.pair is None:
            return []
        facts = resultset.run_facts(self.baseline_runs)
        return resultset.differences(facts, *self.pair)

    def describe(self) -> str:
        """A paragraph for the top of a notebook: the folders, the sides, the pair, the notes."""
        runs = self.rs.runs
        lines = [f"{len(runs)} runs from {', '.join(str(r) for r in self.rs.roots)}",
                 f"sides: {', '.join(self.rs.sides())}; outcomes: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(runs['outcome'].value_counts().items()))]
        if self.pair:
            lines.append(f"speedup pair: {self.pair[1]} / {self.pair[0]} (slow over fast); "
                         f"{len(self.pairs)} pair(s) in all")
        else:
            lines.append(f"no speedup pair: no side of class '{self.fast}' and one of '{self.slow}'")
        lines += [f"NOTE: {n}" for n in self.differences]
        return "\n".join(lines)


def open_results(results_dirs: Sequence[str | Path] | str | Path, fast: str = "ssd", slow: str = "hdd",
                 threshold: float = speedup.SPEEDUP_THRESHOLD, n_patterns: int = patterns.N_PATTERNS,
                 feature_side: str | None = None) -> Analysis:
    """The analysis of the result folders a notebook's parameters name."""
    dirs = [results_dirs] if isinstance(results_dirs, (str, Path)) else list(results_dirs)
    return Analysis(resultset.load(dirs), fast=fast, slow=slow, threshold=threshold, n_patterns=n_patterns,
                    feature_side=feature_side)
