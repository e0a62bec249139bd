"""Findings: what a profiled pipeline's measurements say to change, per process — each a coded
rule with the evidence that fired it, its severity and what to do (``biossd pipeline report``'s
``findings.csv``; the rules are listed in ``docs/profile-your-pipeline.md``).

A process's *evidence* (:func:`evidence`) is summed or taken at its worst over the tasks that
count (:mod:`biossd.analysis.own_pipeline`), beside the prediction of its runtime on each target
device. Each :class:`Rule` reads only the evidence fields it names. The thresholds are the
study's own definitions, written once where they are made:

- a speedup is worth a move from :data:`biossd.analysis.speedup.NEGLIGIBLE_BELOW` on (Lee, Min and
  Yoon 2015, Table 1: its largest negligible speedup, G0, is 1.09x);
- the rules about time judge a process only from :data:`MIN_JUDGED_RUNTIME_S` of runtime on (what
  is shorter is mostly start-up; the report's README says so of its predictions too);
- a process *paged* when its swap-in reads cost at least :data:`biossd.analysis.verdict.PAGING_SHARE`
  of its runtime, and is *CPU-bound* at :data:`biossd.analysis.verdict.CPU_BOUND_CORES` cores busy
  (the study's verdict, §4.2 of the paper: paging is what made its G+ tools fast on an SSD).

The device rule is scored against the study's own measured truth by
``benchmarks/findings_score.py`` (a result set's fast-side runs predict, alone, whether the slow
side is at least that much slower).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from biossd.analysis.speedup import NEGLIGIBLE_BELOW
from biossd.analysis.verdict import CPU_BOUND_CORES, KIB, MIB, PAGING_SHARE

#: The margin a memory suggestion adds to what was measured (a task's next input may be larger).
MEMORY_MARGIN = 0.25
#: The least memory a suggestion asks for: a cgroup's limit counts the task's page cache too, and
#: below this the cache its reads and writes need would outweigh its own pages.
MIN_SUGGESTED_MEMORY_BYTES = 128 << 20
#: A process whose tasks ran less than this in all is mostly process start-up and scheduling: the
#: rules about its time (CPU, device, write-back, critical path) do not judge it.
MIN_JUDGED_RUNTIME_S = 0.5
#: The post-exit flush of a process's dirty data (the kernel's write-back, which the next task
#: or the pipeline's end waits for), and the kernel's pauses of its writers while it ran
#: (write-back throttling), each matter from this share of its runtime on.
WRITEBACK_SHARE = 0.2
#: A process is off the critical path when the pipeline's wall time gains less than this share of
#: what the process itself gains on its best target.
OFF_PATH_SHARE = 0.1
GIB = 1 << 30
#: Severities, most pressing first.
SEVERITIES = ("high", "warn", "info")
FINDING_COLUMNS = ["process", "code", "name", "severity", "finding", "advice", "evidence"]


def _size(n_bytes: float) -> str:
    if not np.isfinite(n_bytes):
        return "?"
    return f"{n_bytes / GIB:.1f} GB" if n_bytes >= GIB else f"{math.ceil(n_bytes / MIB)} MB"


def suggested_memory_bytes(peak_bytes: float) -> float:
    """What to ask for: the measured need plus :data:`MEMORY_MARGIN`, rounded up to a MiB, at
    least :data:`MIN_SUGGESTED_MEMORY_BYTES`."""
    if not np.isfinite(peak_bytes):
        return math.nan
    return float(max(MIN_SUGGESTED_MEMORY_BYTES, math.ceil(peak_bytes * (1 + MEMORY_MARGIN) / MIB) * MIB))


def _judged(e: pd.Series) -> bool:
    return _finite(e, "runtime_s") and e["runtime_s"] >= MIN_JUDGED_RUNTIME_S


@dataclass(frozen=True)
class Rule:
    """One coded finding: ``fires`` reads the evidence fields named in ``evidence`` only."""

    code: str
    name: str
    severity: str
    evidence: tuple[str, ...]
    doc: str
    fires: Callable[[pd.Series], bool]
    finding: Callable[[pd.Series], str]
    advice: Callable[[pd.Series], str]


def _finite(e: pd.Series, *fields: str) -> bool:
    return all(pd.notna(e.get(f)) and np.isfinite(float(e.get(f))) for f in fields)


def _gains(e: pd.Series) -> bool:
    """The device rule's test, one definition (also what ``benchmarks/findings_score.py`` scores)."""
    return _judged(e) and _finite(e, "best_speedup") and device_helps(float(e["best_speedup"]))


def device_helps(speedup: float) -> bool:
    """A move to a device speeds a process up enough to matter: :data:`NEGLIGIBLE_BELOW` or more."""
    return speedup >= NEGLIGIBLE_BELOW


RULES: tuple[Rule, ...] = (
    Rule("BIOSSD-M01", "memory, not the disk", "high",
         ("paging_share", "paging_s", "swap_ins", "swap_outs", "peak_memory_bytes", "memory_limit_bytes"),
         f"Its tasks paged: their swap-in reads cost at least {PAGING_SHARE:.0%} of its runtime (each read at the "
         "mean read service time its own trace measured). A faster device only makes the paging cheaper; memory "
         "removes it: the suggestion is the measured peak memory plus what was swapped out, plus "
         f"{MEMORY_MARGIN:.0%}.",
         lambda e: _finite(e, "paging_share") and e["paging_share"] >= PAGING_SHARE,
         lambda e: (f"paged: {int(e['swap_ins'])} pages swapped in, about {e['paging_s']:.1f} s of reads "
                    f"({e['paging_share']:.0%} of its {e['runtime_s']:.1f} s) at a cap of {_size(e['memory_limit_bytes'])}"),
         lambda e: (f"give it memory = {_size(suggested_memory_bytes(e['peak_memory_bytes'] + e['swap_outs'] * 4 * KIB))} "
                    "(peak memory + swapped out + margin); a faster disk would only make the paging cheaper")),
    Rule("BIOSSD-M02", "asked too little memory", "warn",
         ("oom_attempts", "oom_limit_bytes", "peak_memory_bytes", "memory_limit_bytes"),
         "An attempt of one of its tasks was killed at its memory limit and retried: the completed attempt's "
         f"peak memory plus {MEMORY_MARGIN:.0%} would have run the first time.",
         lambda e: _finite(e, "oom_attempts") and e["oom_attempts"] > 0,
         lambda e: (f"{int(e['oom_attempts'])} attempt(s) killed at {_size(e['oom_limit_bytes'])}; the attempt that "
                    f"completed peaked at {_size(e['peak_memory_bytes'])} (limit {_size(e['memory_limit_bytes'])})"),
         lambda e: (f"ask for memory = {_size(suggested_memory_bytes(e['peak_memory_bytes']))} from the first "
                    "attempt: each retry re-ran the task from its start")),
    Rule("BIOSSD-D01", "a faster device serves its requests", "high",
         ("best_target", "best_speedup", "best_speedup_low", "best_speedup_high", "Rsize", "CAR", "read_service_share"),
         f"Its recorded requests, replayed on a target device, finish at least {NEGLIGIBLE_BELOW:g}x sooner than "
         "measured (the study's bound of a negligible speedup, Table 1 of Lee, Min and Yoon 2015). Severity high "
         "when the interval's low end reaches it too, else warn (the text says so).",
         _gains,
         lambda e: (f"{e['best_speedup']:.2f}x faster on {e['best_target']} (interval {e['best_speedup_low']:.2f}-"
                    f"{e['best_speedup_high']:.2f}x); reads {e['Rsize']:.0f} KiB on median, "
                    f"{e['CAR']:.0%} sequential; reads were {e['read_service_share']:.0%} of its device time"
                    + ("" if device_helps(float(e['best_speedup_low'])) else "; the interval's low end does not reach "
                       f"{NEGLIGIBLE_BELOW:g}x")),
         lambda e: f"put its work directory (Nextflow's -w, or its scratch) on {e['best_target']}"),
    Rule("BIOSSD-C01", "CPU-bound: no device helps", "info",
         ("cpu_share", "best_speedup"),
         f"It kept {CPU_BOUND_CORES:g} cores or more busy on average and no target device speeds it up by "
         f"{NEGLIGIBLE_BELOW:g}x: its time is computing.",
         lambda e: _judged(e) and _finite(e, "cpu_share") and e["cpu_share"] >= CPU_BOUND_CORES and not _gains(e),
         lambda e: (f"{e['cpu_share']:.1f} cores busy on average; the best device gains "
                    f"{e['best_speedup']:.2f}x"),
         lambda e: "give it more cores (its cpus directive, and its tool's threads option) or a faster CPU; "
                   "keep its storage as it is"),
    Rule("BIOSSD-W01", "its writes outlive it (write-back)", "warn",
         ("flush_s", "flush_share", "runtime_s"),
         f"After its tasks ended, the kernel still wrote their dirty data for {WRITEBACK_SHARE:.0%} or more of their "
         "runtime (biossd's post-exit flush): what reads those files next, or the pipeline's end, waits for it.",
         lambda e: _judged(e) and _finite(e, "flush_share") and e["flush_share"] >= WRITEBACK_SHARE,
         lambda e: f"{e['flush_s']:.1f} s of write-back after its tasks ended ({e['flush_share']:.0%} of their runtime)",
         lambda e: "write its output where writes are cheap (a faster device, or a local scratch the task "
                   "copies from), or compress it in the task"),
    Rule("BIOSSD-W02", "its writes wait for the device (write-back throttling)", "warn",
         ("throttled_s", "throttle_share", "throttle_pauses", "runtime_s"),
         f"While its tasks ran, the kernel paused them for {WRITEBACK_SHARE:.0%} or more of their runtime because "
         "they dirtied pages faster than the device wrote them back (write-back throttling: the "
         "balance_dirty_pages pauses biossd traces, each task's own).",
         lambda e: _judged(e) and _finite(e, "throttle_share") and e["throttle_share"] >= WRITEBACK_SHARE,
         lambda e: (f"paused {e['throttled_s']:.1f} s in {int(e['throttle_pauses'])} write-back throttling pauses "
                    f"({e['throttle_share']:.0%} of its {e['runtime_s']:.1f} s)"),
         lambda e: "put its work directory or scratch on a device that writes faster, or write less "
                   "(compress its output, or stream it to the next step)"),
    Rule("BIOSSD-P01", "off the critical path", "info",
         ("saving_s", "pipeline_saving_s", "best_target"),
         "A faster device would speed it up, but the pipeline's wall time (its tasks in Nextflow's order, "
         f"each after what released it) gains less than {OFF_PATH_SHARE:.0%} of it: other tasks ran alongside "
         "and the pipeline waited for them.",
         lambda e: _gains(e) and _finite(e, "saving_s", "pipeline_saving_s") and e["saving_s"] > 0
         and e["pipeline_saving_s"] < OFF_PATH_SHARE * e["saving_s"],
         lambda e: (f"{e['saving_s']:.1f} s saved on {e['best_target']}, the pipeline gains "
                    f"{e['pipeline_saving_s']:.1f} s"),
         lambda e: "moving it alone buys the pipeline nothing: move the processes on the critical path first"),
)


def evidence(tasks: pd.DataFrame, runs: pd.DataFrame, predictions: pd.DataFrame, per_task: pd.DataFrame,
             wall_with: Callable[[pd.Series], float]) -> pd.DataFrame:
    """Per process, every evidence field the rules read.

    ``tasks``: the counted tasks (one run each, with ``runtime_s``, ``user_s``, ``sys_s``, the
    features, ``resident_peak_kib``, ``swap_*``, ``read_service_s``, ``flush_s``, ``throttled_s``,
    ``throttle_pauses``,
    ``memory_limit_bytes``); ``runs``: every attempt (``outcome``, ``memory_limit_bytes``);
    ``predictions``: per process and target, the summed prediction; ``per_task``: per task (its
    index in ``tasks``) and target; ``wall_with``: the pipeline's wall time for per-task durations."""
    t = tasks.copy()
    n_reads = (t["Riops"] * t["runtime_s"]).astype(float)
    read_ms = np.where(n_reads > 0, t["read_service_s"].astype(float) / n_reads.where(n_reads > 0), np.nan)
    t["paging_s"] = t["swap_read_requests"].astype(float).fillna(0.0) * np.nan_to_num(read_ms)
    # The largest of the cap's resident peak, the largest process's RSS and, for a task in its
    # container, the engine's peak of the container's cgroup (any may be missing).
    peaks = t[["resident_peak_kib", "max_rss_kib"]].astype(float) * KIB
    if "container_peak_bytes" in t:
        peaks["container"] = t["container_peak_bytes"].astype(float)
    t["peak_memory_bytes"] = peaks.max(axis=1)
    t["service_s"] = t["read_service_s"].astype(float) + t["write_service_s"].astype(float)
    g = t.groupby("process")
    e = g.agg(tasks=("process", "size"), runtime_s=("runtime_s", "sum"), cpu_s=("user_s", "sum"),
              sys_s=("sys_s", "sum"), paging_s=("paging_s", "sum"), swap_ins=("swap_ins", "sum"),
              swap_outs=("swap_outs", "sum"), peak_memory_bytes=("peak_memory_bytes", "max"),
              memory_limit_bytes=("memory_limit_bytes", "max"), flush_s=("flush_s", "sum"),
              throttled_s=("throttled_s", lambda v: v.sum(min_count=1)),
              throttle_pauses=("throttle_pauses", lambda v: v.sum(min_count=1)),
              read_service_s=("read_service_s", "sum"), service_s=("service_s", "sum"),
              Rsize=("Rsize", "median"), CAR=("CAR", "median"))
    e["cpu_share"] = (e.pop("cpu_s") + e.pop("sys_s")) / e["runtime_s"]
    e["paging_share"] = e["paging_s"] / e["runtime_s"]
    e["flush_share"] = e["flush_s"] / e["runtime_s"]
    e["throttle_share"] = e["throttled_s"] / e["runtime_s"]
    e["read_service_share"] = e.pop("read_service_s") / e.pop("service_s")
    ooms = runs[runs["outcome"] == "oom"]
    e["oom_attempts"] = ooms.groupby("process").size().reindex(e.index).fillna(0).astype(int)
    e["oom_limit_bytes"] = ooms.groupby("process")["memory_limit_bytes"].max().reindex(e.index)
    for col in ("best_target", "best_speedup", "best_speedup_low", "best_speedup_high", "saving_s", "pipeline_saving_s"):
        e[col] = np.nan
    e["best_target"] = e["best_target"].astype(object)
    measured_wall = wall_with(tasks["runtime_s"])
    for process, mine in predictions.groupby("process"):
        if process not in e.index or mine["speedup_vs_measured"].dropna().empty:
            continue
        best = mine.loc[mine["speedup_vs_measured"].idxmax()]
        e.loc[process, "best_target"] = best["target"]
        e.loc[process, "best_speedup"] = best["speedup_vs_measured"]
        # The interval's ends as speedups: the low speedup is the high runtime's.
        e.loc[process, "best_speedup_low"] = best["measured_runtime_s"] / best["predicted_high_s"]
        e.loc[process, "best_speedup_high"] = best["measured_runtime_s"] / best["predicted_low_s"]
        e.loc[process, "saving_s"] = best["measured_runtime_s"] - best["predicted_runtime_s"]
        rows = per_task[(per_task["process"] == process) & (per_task["target"] == best["target"])].set_index("task")
        durations = tasks["runtime_s"].astype(float).copy()
        durations.loc[rows.index] = rows["predicted_runtime_s"].astype(float)
        e.loc[process, "pipeline_saving_s"] = measured_wall - wall_with(durations)
    return e


def of(ev: pd.DataFrame, rules: tuple[Rule, ...] = RULES) -> pd.DataFrame:
    """Every rule that fires for every process, most severe first, with its evidence as
    ``field=value`` text (the fields the rule reads)."""
    rows = []
    for process, e in ev.iterrows():
        for rule in rules:
            if not rule.fires(e):
                continue
            severity = rule.severity
            if rule.code == "BIOSSD-D01" and not device_helps(float(e["best_speedup_low"])):
                severity = "warn"
            rows.append({"process": process, "code": rule.code, "name": rule.name, "severity": severity,
                         "finding": rule.finding(e), "advice": rule.advice(e),
                         "evidence": "; ".join(f"{f}={_show(e.get(f))}" for f in rule.evidence)})
    table = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return table.sort_values(["severity", "process", "code"], key=lambda c: c.map(order) if c.name == "severity" else c,
                             kind="stable").reset_index(drop=True)


def _show(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return "nan" if not np.isfinite(value) else f"{value:.4g}"
    return str(value)


def rules_markdown(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as the documentation's table (one row each: code, name, severity, when, evidence)."""
    lines = ["| code | finding | severity | fires when | evidence fields |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| `{r.code}` | {r.name} | {r.severity} | {r.doc} | {', '.join(f'`{f}`' for f in r.evidence)} |"
              for r in rules]
    return "\n".join(lines)


def score(speedups: pd.DataFrame) -> dict[str, object]:
    """The device rule against a study's measured truth: per tool of ``speedups`` (the study's
    :func:`biossd.analysis.predict.predicted_speedups`: each tool's slow-side runtime predicted from
    its fast-side runs alone, and the speedup both sides measured), whether :func:`device_helps`
    fires on the predicted speedup, against whether it holds for the measured one. A measured
    speedup that is a lower bound (the slow side timed out) below the bound is unknown and left out.
    Returns the counts, precision and recall, and each tool's row."""
    table = speedups[["tool", "predicted_speedup", "measured_speedup", "measured_is_lower_bound"]].copy()
    table = table[table["predicted_speedup"].notna() & table["measured_speedup"].notna()]
    table["predicted"] = table["predicted_speedup"].map(device_helps)
    table["measured"] = table["measured_speedup"].map(device_helps)
    unknown = table["measured_is_lower_bound"].astype(bool) & ~table["measured"]
    table = table[~unknown]
    tp = int((table["predicted"] & table["measured"]).sum())
    fp = int((table["predicted"] & ~table["measured"]).sum())
    fn = int((~table["predicted"] & table["measured"]).sum())
    tn = int((~table["predicted"] & ~table["measured"]).sum())
    return {"tools": len(table), "left_out_lower_bounds": int(unknown.sum()), "true_positive": tp,
            "false_positive": fp, "false_negative": fn, "true_negative": tn,
            "precision": tp / (tp + fp) if tp + fp else math.nan, "recall": tp / (tp + fn) if tp + fn else math.nan,
            "bound": NEGLIGIBLE_BELOW, "rows": table.reset_index(drop=True)}
