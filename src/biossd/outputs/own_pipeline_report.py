"""The tables and figures of ``biossd pipeline report`` (:mod:`biossd.analysis.own_pipeline`):

- ``processes.csv``: per process, tasks, runtime, CPU share, peak RSS, the eight storage features
  and the nearest pattern;
- ``process_predictions.csv`` and ``pipeline_predictions.csv``: predicted runtime (with its
  interval) and speedup over the measured device, per process and for the whole pipeline (its
  critical path), on each target;
- ``tasks.csv``: every counted task with its run;
- ``choices.csv``: per process and for the pipeline, the cloud storage to rent — the cheapest within
  a tenth of the fastest — with its cost per run and what the figure rests on;
- ``evidence.csv`` and ``findings.csv``: per process, the evidence the findings' rules read, and
  each coded finding that fired, with its severity, evidence and advice
  (:mod:`biossd.analysis.findings`);
- ``next-run.config``: a Nextflow config to pass with ``-c`` next time: each process's ``memory``
  from its measured peak with the findings' margin, and a fast scratch for the processes a faster
  device serves (:func:`next_run_config`);
- ``biossd_processes_mqc.yaml`` and ``biossd_findings_mqc.yaml``: the per-process table and the
  findings as MultiQC custom content, so a pipeline's own MultiQC report (run over this folder, or
  given these files) shows them (:func:`multiqc_content`);
- ``pipeline_speedup.png``: the pipeline's predicted wall time on each target, interval drawn;
- ``process_speedup.png``: each process's speedup on each target (a heat map, numbers written);
- ``README.md``: what each file holds, the prediction's model, its interval and where it is blind,
  where the patterns come from, and the runs that were skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from biossd.core.files import atomic_write_text, write_frame

NEXT_RUN_CONFIG = "next-run.config"
#: MultiQC custom content: its files end in ``_mqc.yaml``; the sections' ids.
MQC_PROCESSES, MQC_FINDINGS = "biossd_processes", "biossd_findings"
#: Figure width in inches, and height per bar or row.
FIG_WIDTH_IN = 8.0
ROW_HEIGHT_IN = 0.45
#: A heat-map cell this far (as a share of the colour scale's bound) from 1x is written in white.
DARK_CELL = 0.6


def write(rep, out_dir: Path) -> list[Path]:
    """Every table and figure of ``rep`` (a :class:`biossd.analysis.own_pipeline.Report`) under
    ``out_dir``: made whole in a folder beside it, then each file moved in, so that a report cut
    short (a full disk, an error) leaves the one before it as it was, never half of a new one."""
    import tempfile

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=f".{out_dir.name}-") as tmp:
        made = _write_all(rep, Path(tmp))
        out_dir.mkdir(exist_ok=True)
        moved = []
        for path in made:
            target = out_dir / path.relative_to(tmp)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            moved.append(target)
    return moved


def _write_all(rep, out_dir: Path) -> list[Path]:
    tasks = rep.tasks.drop(columns=[c for c in ("settings",) if c in rep.tasks])
    written = [write_frame(rep.processes, out_dir / "processes.csv"),
               write_frame(rep.predictions, out_dir / "process_predictions.csv"),
               write_frame(rep.pipeline, out_dir / "pipeline_predictions.csv"),
               write_frame(tasks, out_dir / "tasks.csv"),
               write_frame(rep.evidence, out_dir / "evidence.csv"),
               write_frame(rep.findings, out_dir / "findings.csv"),
               write_frame(rep.never_completed, out_dir / "never_completed.csv"),
               write_frame(rep.choices, out_dir / "choices.csv")]
    written.append(next_run_config(rep, out_dir / NEXT_RUN_CONFIG))
    written += multiqc_content(rep, out_dir)
    written.append(pipeline_figure(rep, out_dir / "pipeline_speedup.png"))
    written.append(process_figure(rep, out_dir / "process_speedup.png"))
    written.append(readme(rep, out_dir / "README.md"))
    return written


def readme(rep, path: Path) -> Path:
    """The report's own guide: its files, the model with its interval and blind spots, the
    patterns' source, and every run that was skipped and why."""
    from biossd.analysis import findings, predict

    sources = sorted(set(rep.processes.get("pattern_source", []).dropna().astype(str))) if len(rep.processes) else []
    lines = ["# Your pipeline on other devices (biossd pipeline report)", ""] + _ending_lines(rep) + [
             "| file | what it holds |", "| --- | --- |",
             "| `processes.csv` | per process: tasks, failed attempts, cached tasks, runtime, CPU share, peak RSS, "
             "the eight storage features of Lee, Min and Yoon (2015) (median over tasks), nearest pattern |",
             "| `process_predictions.csv` | per process and target: predicted runtime with its interval "
             "(`predicted_low_s`, `predicted_high_s`) and speedup over the device measured here |",
             "| `pipeline_predictions.csv` | the whole pipeline per target: its wall time in Nextflow's task order "
             "(the critical path, not a sum), with the interval, and on a cloud volume what a run costs "
             "(`volume_usd_per_run`; with `--instance_usd_per_hour`, `total_usd_per_run`) and the price's source |",
             "| `choices.csv` | per process and for the pipeline: the cloud storage to rent (the cheapest within "
             "a tenth of the fastest), the fastest, the unpriced ones that were as fast, the costs, what they rest on |",
             "| `tasks.csv` | every task that counts once (its last completed attempt, or the run a cached task "
             "came from), with the tasks it ran beside (`overlap_group`, `overlapped_with`, `overlap_s`) and its "
             "kernel-thread requests, those issued while another task ran counted apart "
             "(`kernel_requests_unattributed`) |",
             "| `pipeline_speedup.png`, `process_speedup.png` | the two tables above as figures |",
             "| `next-run.config` | a config for the next run (`-c`): each process's memory from its measured need "
             "with a margin, and `scratch` on `--fast_scratch` for the processes a faster device serves |",
             "| `biossd_processes_mqc.yaml`, `biossd_findings_mqc.yaml` | the per-process table and the findings as "
             "MultiQC custom content: `multiqc <this folder>` (or add them to your pipeline's MultiQC inputs) |",
             "| `never_completed.csv` | each process whose every attempt was killed, failed or OOM-killed, with "
             "the attempts' outcomes |",
             "| `evidence.csv`, `findings.csv` | per process, the evidence the findings read, and each finding that "
             "fired: its code, severity, what was measured, what to do (rules: docs/profile-your-pipeline.md) |", "",
             "## Findings", ""] + _findings_lines(rep) + ["", "## What to rent", ""] + _choice_lines(rep) + [
             "", "## Cost per run", ""] + _cost_lines(rep) + ["",
             "## Side by side", ""] + _overlap_lines(rep) + ["",
             "## The model, its interval and where it is blind", "", predict.MODEL_SUMMARY, "",
             f"The interval spans a hard disk's random service time (±{predict.INTERVAL_SIGMAS:g} "
             "standard deviations) and, for a flash "
             "device known by its vendor's depth-32 IOPS only, both ends of its possible depth-1 IOPS. "
             f"A process whose tasks ran less than {findings.MIN_JUDGED_RUNTIME_S:g} s is mostly process start-up and "
             "scheduling: its "
             "prediction is printed, not to be leaned on.", "",
             "## Patterns", ""] + [f"- {s}" for s in sources or ["none"]]
    lines += ["", "## Skipped runs", ""] + ([f"- `{d}`: {why}" for d, why in rep.skipped] or ["none"])
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def _ending_lines(rep) -> list[str]:
    """How the run ended, first, when it did not end well: its status, and each process that never
    completed a task with its attempts' outcomes (a process OOM-killed at its memory directive on
    every attempt has no row in the tables)."""
    lines = []
    if not rep.finished:
        lines.append(f"**This Nextflow run did not finish** (status `{rep.status}` in `nextflow log`: "
                     "`ERR` failed, `-` killed or still running): the tables below hold only the tasks that "
                     "completed, and the pipeline's wall time is theirs, not the pipeline's.")
    never = getattr(rep, "never_completed", None)
    if never is not None and len(never):
        lines += ["", "Processes that never completed a task (no row in the tables):", ""]
        lines += [f"- `{r.process}`: {r.attempts} attempt(s): {r.outcomes}" for r in never.itertuples()]
    return lines + [""] if lines else []


def _cost_lines(rep) -> list[str]:
    """A table of what one run costs on each priced cloud volume, with the price's source and date."""
    from biossd.analysis import cost

    priced = rep.pipeline[rep.pipeline["volume_usd_per_hour"].notna()] if "volume_usd_per_hour" in rep.pipeline else []
    clouds = rep.pipeline[rep.pipeline["target_kind"].astype(str).str.startswith("cloud")] if len(rep.pipeline) else []
    unpriced = sorted(set(clouds["target"]) - set(priced["target"])) if len(clouds) else []
    tail = ([f"Unpriced (no primary source for the price could be read; study/reference/cloud_prices.csv says "
             f"why): {', '.join(unpriced)}."] if unpriced else [])
    if not len(priced):
        return ["No target has a price (study/reference/cloud_prices.csv prices the cloud volumes)."] + tail
    total = "total_usd_per_run" in priced
    lines = ["The volume the prediction modelled (its size, IOPS and throughput in study/reference/cloud_storage.csv), "
             f"held for the predicted wall time, at its list price prorated over a {cost.HOURS_PER_MONTH:g}-hour month"
             + ("; the total adds your machine's time at the price you gave." if total else
                "; give `--instance_usd_per_hour` to add your machine's time, usually the larger part."), "",
             "| target | predicted wall | volume per hour | volume per run | " + ("total per run | " if total else "")
             + "price: region, source, published |", "| --- | ---: | ---: | ---: | " + ("---: | " if total else "") + "--- |"]
    for r in priced.itertuples():
        published = r.price_published if isinstance(r.price_published, str) and r.price_published else "undated"
        lines.append(f"| {r.target} | {r.predicted_wall_s:.1f} s | ${r.volume_usd_per_hour:.4f} | ${r.volume_usd_per_run:.6f} | "
                     + (f"${r.total_usd_per_run:.6f} | " if total else "")
                     + f"{r.price_region or '-'}, {r.price_source}, {published} |")
    return lines + ([""] + tail if tail else [])


def _choice_lines(rep) -> list[str]:
    """The storage to rent, for the pipeline and per process, with what the choice rests on."""
    from biossd.analysis import cost

    choices = getattr(rep, "choices", None)
    if choices is None or choices.empty:
        return ["No cloud target was predicted."]
    behind = (f"behind a `{rep.instance}` (its limits in front of every volume)" if rep.instance
              else "each volume alone, without an instance's limits (give `--instance TYPE`)")
    lines = [f"Among the cloud targets, {behind}: the cheapest whose predicted time is within "
             f"{cost.CHEAPEST_WITHIN:.0%} of the fastest's.", "",
             "| scope | rent | its time | fastest | its time | volume per run | as fast, unpriced |",
             "| --- | --- | ---: | --- | ---: | ---: | --- |"]
    for c in choices.itertuples():
        if not isinstance(c.choice, str):
            lines.append(f"| {c.scope} | none: {c.why} | | {getattr(c, 'fastest', '') or ''} | | | "
                         f"{getattr(c, 'unpriced_within', '') or ''} |")
            continue
        lines.append(f"| {c.scope} | {c.choice} | {c.choice_s:.3g} s | {c.fastest} | {c.fastest_s:.3g} s | "
                     f"${c.volume_usd_per_run:.6f} | {c.unpriced_within or '-'} |")
    first = choices[choices["choice"].notna()] if "choice" in choices else choices.iloc[:0]
    if len(first):
        lines += ["", f"Each figure rests on: {first.iloc[0]['assumes']}."]
    return lines


def _groovy(text: str) -> str:
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def next_run_config(rep, path: Path) -> Path:
    """What to run next time, as a Nextflow config: per process (``withName`` its full name) the
    ``memory`` its tasks needed — the measured peak memory, plus what they swapped out when
    they paged, plus the findings' margin — and, for a process a faster device serves
    (``BIOSSD-D01``), ``scratch`` on ``params.fast_scratch`` (a directory on that device, given with
    ``--fast_scratch``; unset, the task runs where it did)."""
    from biossd.analysis import findings

    fired = rep.findings.groupby("process")["code"].apply(set) if len(rep.findings) else {}
    lines = ["// What biossd measured, as a config for the next run: nextflow run <pipeline> -c next-run.config",
             "// (written by `biossd pipeline report`; memory = measured need + "
             f"{findings.MEMORY_MARGIN:.0%}; see findings.csv for why)",
             "params.fast_scratch = null   // a directory on the faster device, for the processes it speeds up",
             "", "process {"]
    for process, e in rep.evidence.set_index("process").iterrows():
        need = float(e["peak_memory_bytes"]) + float(e.get("swap_outs") or 0.0) * 4 * findings.KIB
        memory = findings.suggested_memory_bytes(need)
        codes = fired.get(process, set()) if len(rep.findings) else set()
        body = []
        if memory == memory:  # not NaN
            body.append(f"        memory = '{int(memory // findings.MIB)} MB'   // measured {need / findings.MIB:.0f} MB")
        if "BIOSSD-D01" in codes:
            body.append(f"        scratch = params.fast_scratch ?: false   // BIOSSD-D01: {e['best_speedup']:.2f}x on "
                        f"{e['best_target']}")
        if body:
            lines += [f"    withName: {_groovy(process)} {{", *body, "    }"]
    lines.append("}")
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def multiqc_content(rep, out_dir: Path) -> list[Path]:
    """The per-process table (runtime, CPU share, peak RSS, the best target and its predicted
    speedup, the findings' codes) and the findings (one row per process and code, with severity,
    finding and advice) as two MultiQC custom-content tables."""
    import yaml

    ev = rep.evidence.set_index("process") if len(rep.evidence) else pd.DataFrame()
    codes = rep.findings.groupby("process")["code"].apply(lambda c: ", ".join(sorted(c))) if len(rep.findings) else {}
    processes = {}
    for row in rep.processes.itertuples():
        e = ev.loc[row.process] if row.process in ev.index else {}
        processes[row.process] = {
            "tasks": int(row.tasks), "runtime_s": round(float(row.runtime_s), 2), "cpu_share": round(float(row.cpu_share), 2),
            "peak_rss_mib": round(float(row.peak_rss_kib) / 1024, 1),
            "best_target": str(e.get("best_target", "")) if len(e) else "",
            "best_speedup": round(float(e.get("best_speedup")), 2) if len(e) and pd.notna(e.get("best_speedup")) else None,
            "findings": codes.get(row.process, "") if len(rep.findings) else ""}
    found = {f"{f.process} {f.code}": {"severity": f.severity, "finding": f"{f.name}: {f.finding}", "advice": f.advice}
             for f in rep.findings.itertuples()}
    docs = "docs/profile-your-pipeline.md of biossd"
    sections = [  # id, name, description, first column's header, columns, rows
        (MQC_PROCESSES, "biossd: storage per process",
         "Each process's measured runtime, CPU share and peak RSS, and the target device its recorded block "
         "requests would be served fastest on, with the predicted speedup (biossd pipeline report).", "Process",
         {"tasks": {"title": "Tasks", "format": "{:,.0f}"}, "runtime_s": {"title": "Runtime (s)"},
          "cpu_share": {"title": "CPU share"}, "peak_rss_mib": {"title": "Peak RSS (MiB)"},
          "best_target": {"title": "Best target"}, "best_speedup": {"title": "Predicted speedup"},
          "findings": {"title": "Findings"}}, processes),
        (MQC_FINDINGS, "biossd: findings",
         f"What to change, per process: each coded finding with its evidence-based text and advice (rules: {docs}).",
         "Process and finding",
         {"severity": {"title": "Severity"}, "finding": {"title": "Finding"}, "advice": {"title": "What to do"}},
         found or {"(none)": {"severity": "", "finding": "no rule fired", "advice": ""}}),
    ]
    written = []
    for section_id, name, description, first, headers, data in sections:
        body = {"id": section_id, "section_name": name, "description": description, "plot_type": "table",
                "pconfig": {"id": f"{section_id}_table", "title": name, "col1_header": first}, "headers": headers,
                "data": data}
        path = out_dir / f"{section_id}_mqc.yaml"
        atomic_write_text(path, yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
        written.append(path)
    return written


def _overlap_lines(rep) -> list[str]:
    """Which tasks ran beside which, and how their requests were attributed."""
    if "overlap_group" not in rep.tasks or not (rep.tasks["overlap_s"] > 0).any():
        return ["No task ran beside another: every trace holds one task's requests."]
    lines = ["Each task's requests are its own by its process tree. Kernel threads' requests (write-back, the "
             "journal) issued while another task ran cannot be told apart: each task that overlapped them keeps "
             "them and they are counted here; the tasks of a group are predicted with their requests interleaved "
             "on the target they share.", ""]
    for _, group in rep.tasks.groupby("overlap_group"):
        if len(group) < 2:
            continue
        names = ", ".join(f"{t.process} ({t.tag})" for t in group.itertuples())
        together_s = float(group["overlap_s"].max())
        together = f"{together_s:.1f} s" if together_s >= 0.1 else f"{together_s * 1000:.0f} ms"
        lines.append(f"- {names}: {together} side by side; kernel-thread requests "
                     f"{int(group['kernel_requests'].sum())}, of which {int(group['kernel_requests_unattributed'].sum())} "
                     "issued while another task ran (unattributed)")
    return lines


def _findings_lines(rep) -> list[str]:
    if rep.findings is None or rep.findings.empty:
        return ["No rule fired: no process pages, waits on a device a target would serve "
                "much faster, or is CPU-bound."]
    return [f"- **{f.process}** `{f.code}` ({f.severity}) {f.name}: {f.finding}. *Do:* {f.advice}."
            for f in rep.findings.itertuples()]


def pipeline_figure(rep, path: Path) -> Path:
    """The whole pipeline's predicted wall time per target (bars, the model's interval as whiskers),
    the measured wall time as a line."""
    table = rep.pipeline.sort_values("predicted_wall_s")
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN + 1, 1.6 + ROW_HEIGHT_IN * len(table)))
    y = np.arange(len(table))
    err = np.vstack([table["predicted_wall_s"] - table["predicted_wall_low_s"],
                     table["predicted_wall_high_s"] - table["predicted_wall_s"]]).clip(min=0)
    ax.barh(y, table["predicted_wall_s"], xerr=err, color="#4c72b0", capsize=3)
    measured = float(table["measured_wall_s"].iloc[0]) if len(table) else 0.0
    ax.axvline(measured, color="#c44e52", linestyle="--", label=f"measured here: {measured:.1f} s")
    ax.set_yticks(y, [f"{t} ({k})" for t, k in zip(table["target"], table["target_kind"])])
    for yi, (high, sp) in enumerate(zip(table["predicted_wall_high_s"], table["speedup_vs_measured"])):
        ax.text(high, yi, f"  {sp:.2f}x", va="center", fontsize=8)
    ax.set_xlim(0, float(table["predicted_wall_high_s"].max()) * 1.15 if len(table) else 1.0)
    ax.set_xlabel("predicted wall time (s) in Nextflow's task order\n"
                  "whiskers: the model's interval; labels: speedup over here (< 1: slower)")
    ax.set_title("Your pipeline on other devices (biossd pipeline report)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def process_figure(rep, path: Path) -> Path:
    """Each process's predicted speedup over the measured device on each target (>1: faster)."""
    grid = rep.predictions.pivot_table(index="process", columns="target", values="speedup_vs_measured")
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN + 2, 1.8 + ROW_HEIGHT_IN * len(grid)))
    values = np.log2(grid.to_numpy(dtype=float))
    bound = max(1.0, float(np.nanmax(np.abs(values)))) if np.isfinite(values).any() else 1.0
    im = ax.imshow(values, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(np.arange(grid.shape[1]), grid.columns, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(np.arange(grid.shape[0]), grid.index, fontsize=8)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            dark = np.isfinite(values[i, j]) and abs(values[i, j]) > DARK_CELL * bound
            ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}x", ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    bar = fig.colorbar(im, ax=ax)
    bar.set_label("speedup, log2\n(blue faster, red slower)")
    ax.set_title("Per process: predicted speedup on each target")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
