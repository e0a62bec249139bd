"""The citable supplement: ``paper/supplement.tex`` around text generated from a
result set — the methods (hosts, devices and what was emulated, tool versions and substitutes,
the tools not run, memory caps, scales, repeats, the measuring mechanisms) and one captioned
section per table and figure of Lee, Min and Yoon 2015 — built with latexmk into ``paper/build/supplement.pdf``.

Nothing in the methods is typed by hand: every fact comes from the result set's records
(``pipeline_info/``, each side's ``device.json``, the run table) or from the catalogue.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from biossd import analysis
from biossd.analysis import resultset, speedup
from biossd.core import paths
from biossd.core.errors import BiossdError
from biossd.core.files import remove_tree
from biossd.outputs import artefacts, report
from biossd.outputs.tables import latex_escape as esc
from biossd.study import catalogue, layout

PAPER_DIR = paths.PAPER_DIR
MAIN_TEX = "supplement.tex"
GENERATED_DIR = "generated"
LATEXMK_TIMEOUT_S = 600
GIB = 1 << 30


#: Every artefact of Lee, Min and Yoon 2015, in the paper's order: (kind, number, file stem, caption). The
#: file stems are those the notebooks write (biossd.outputs.report / notebooks/).
class SupplementError(BiossdError, RuntimeError):
    pass


def _join(items: Sequence[str]) -> str:
    items = list(items)
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1] if items else "none"


def methods_tex(a: analysis.Analysis) -> str:
    """The methods section's text, every fact from the result set, section by section."""
    params = _study_params(a)
    sections = [_result_set_tex(a), _hosts_tex(a), _devices_tex(a), _measurement_tex(a, params), _tools_tex(a)]
    return "\n\n".join(paragraph for section in sections for paragraph in section) + "\n"


def _study_params(a: analysis.Analysis) -> dict[str, Any]:
    """The study's parameters as its runs recorded them (the last record of each wins), those
    of its sizing record in their place."""
    return a.rs.study_params()


def _result_set_tex(a: analysis.Analysis) -> list[str]:
    """The result set: its runs, sides, invocations, and whether it is synthetic."""
    runs = a.rs.runs
    out = [r"\subsection*{Result set}"]
    synthetic = any(r.get("synthetic") for r in a.rs.provenance)
    if synthetic:
        out.append(r"\textbf{This result set is synthetic} (\texttt{biossd data synth-results}): its numbers "
                   r"are planted to test the analysis, not measured. ")
    lines = [f"{len(runs)} profiled runs in {len(a.rs.roots)} result folder(s), "
             f"on the sides {_join([esc(s) for s in a.rs.sides()])} (a side is one storage class on one host)."]
    invocations = sorted({(str(r["command_line"]), str(r.get("profile"))) for r in a.rs.provenance
                          if r.get("command_line")})
    for command, profile in invocations:
        lines.append(f"Invocation: {{\\raggedright\\texttt{{{breakable(esc(command))}}} (profile {esc(profile)}).\\par}}")
    out.append(" ".join(lines))
    return out


def _hosts_tex(a: analysis.Analysis) -> list[str]:
    """The hosts the runs ran on, and how the two sides of the speedup pair differ besides the drive."""
    out = [r"\subsection*{Hosts}"]
    host_lines = []
    for name, facts in sorted(a.rs.hosts.items()):
        mem = facts.get("mem_total_bytes")
        host_lines.append(
            f"{esc(name)}: {esc(str(facts.get('cpu_model')))} ({facts.get('cpu_count')} logical CPUs), "
            f"{mem / GIB:.1f} GiB of memory, " if mem else f"{esc(name)}: {esc(str(facts.get('cpu_model')))}, ")
        host_lines[-1] += f"kernel {esc(str(facts.get('kernel')))}, {esc(str(facts.get('os')))}."
    out.append(" ".join(host_lines) or "No host records (pipeline\\_info/host-*.json) in the result set.")
    if a.differences:
        out.append(r"\textbf{The two sides of the speedup pair differ besides the drive:} "
                   + "; ".join(esc(d) for d in a.differences) + ".")
    return out


def _devices_tex(a: analysis.Analysis) -> list[str]:
    """Each side's device: fio's measurements, and whether it is emulated."""
    out = [r"\subsection*{Storage classes and devices}"]
    dev_lines = []
    for side, record in sorted(a.rs.devices.items()):
        spec = record.get("spec_row") or {}
        emulation = record.get("emulation") or {}
        text = f"{esc(side)} ({esc(str(spec.get('device', '?')))})"
        if spec:
            text += (f": measured by fio with direct I/O at {spec.get('seq_read_mbs', float('nan')):.0f}/"
                     f"{spec.get('seq_write_mbs', float('nan')):.0f} MB/s sequential read/write and "
                     f"{spec.get('rand_read_iops', float('nan')):.0f}/{spec.get('rand_write_iops', float('nan')):.0f} "
                     "random 4 KiB read/write IOPS at queue depth 1")
        if emulation.get("emulated"):
            scale = float(emulation.get("scale") or 1.0)
            text += (f". \\textbf{{Emulated:}} {esc(side)} is an emulated "
                     f"{esc(str(emulation.get('profile_name') or emulation.get('profile')))} "
                     f"(profile {esc(str(emulation.get('profile')))}) via {esc(str(emulation.get('mechanism')))}: "
                     "ext4 on a loop device (direct I/O) over a disk image served through FUSE, each request held for "
                     "the time a model of the drive says it takes (biossd.host.models.diskmodel): a seek over the "
                     "request's real distance, a rotation and the transfer; a buffer shared by write-behind data "
                     "(a write completes once it crossed the interface and is destaged in idle time, when room is "
                     "needed or on a flush, in shortest-seek and rotational-position order) and read segments, into "
                     "which an idle disk reads ahead for the last stream read"
                     + (f"; scaled as the machine is, by D = {scale:.4g}: its buffer D times smaller, its distances D "
                        "times longer" if scale != 1 else "")
                     + ". It serves one request at a time, in arrival order; not a physical hard disk")
        elif emulation.get("mechanism") == "loop-direct":
            text += (f". {esc(side)} is the host's native disk on a loop device of its own (direct I/O over a "
                     "preallocated file, unthrottled"
                     + (", each write durable on the host's device before it completes, so that no host cache "
                        "absorbs one class's writes" if emulation.get("write_through") else "")
                     + "), so that its block trace holds only the runs' requests")
        elif record.get("synthetic"):
            text += " (a synthetic record)"
        dev_lines.append(text + ".")
    out.append(" ".join(dev_lines) or "No device records in the result set.")
    return out


def _measurement_tex(a: analysis.Analysis, params: dict[str, Any]) -> list[str]:
    """How the runs were measured: mechanisms, caps, scales, repeats, the sizing rule, chains and probes."""
    runs = a.rs.runs
    out = [r"\subsection*{Measurement}"]
    mech = [f"{esc(side)}: {esc(text)}" for side, text in resultset.mechanisms(a.rs).items()]
    out.append(" ".join(mech) or "No runs to read the mechanisms from.")
    caps = sorted(runs["mem"].unique(), key=lambda m: runs.loc[runs["mem"] == m, "mem_bytes"].iloc[0])
    base = set(map(tuple, a.baseline_runs[["tool", "mem", "scale", "rep"]].astype(str).to_numpy()))
    is_base = [tuple(map(str, r)) in base for r in runs[["tool", "mem", "scale", "rep"]].to_numpy()]
    base_reps = runs.loc[is_base].groupby(["tool", "storage"])["rep"].nunique() if any(is_base) else pd.Series(dtype=int)
    planned = str(params.get("repeats") or "")
    reps = int(planned) if planned.isdigit() else (int(base_reps.mode().iloc[0]) if len(base_reps) else 0)
    firmed = sorted(base_reps[base_reps > reps].index.get_level_values("tool").unique())
    others = runs.loc[[not b for b in is_base], "rep"].astype(int)
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(runs["outcome"].value_counts().items()))
    sizes = params.get("input_sizes")
    size_text = (f"each input kind at its own baseline size ({esc(str(sizes).replace(',', ', '))}; other kinds "
                 f"{esc(str(params.get('input_size', '?')))})" if sizes else
                 f"baseline size {esc(str(params.get('input_size', '?')))}")
    out.append(f"Memory caps {_join([esc(c) for c in caps])}; input scales (replication factors) "
               f"{_join([str(s) for s in sorted(runs['scale'].unique())])}; {reps} repeats of each tool's baseline "
               "configuration (its smallest cap and scale)"
               + (f", {int(base_reps.max())} for the {len(firmed)} whose speedup's interval straddled a group's bound "
                  f"({_join([esc(t) for t in firmed])})" if firmed else "")
               + (f" and {int(others.max())} of its other caps and scales (the input-size and memory-size "
                  "experiments)" if len(others) else "")
               + "; each run starts cold on its device (what it reads from the device under study evicted "
                 "from the page cache, its code kept resident outside its cap)"
               + (f", gets {esc(str(params['swap']))} of swap on its class's device" if params.get("swap") else "")
               + (f" and is stopped after {esc(str(params['time_limit']))} (outcome timeout; a tool whose runs "
                  "on the slow side all time out has a speedup of at least the limit over its fast runtime)"
                  if params.get("time_limit") else "")
               + f"; outcomes: {esc(outcomes)}. Inputs are synthetic "
               f"(\\texttt{{biossd data synth}}, {size_text}, "
               f"seed {esc(str(params.get('seed', '?')))}), replicated per scale; Table~5 names the paper's data "
               "set each stands in for. Speedup is the slow side's mean runtime over the fast side's, each over "
               f"the repeats that ended ok, with a 95\\% bootstrap interval over the repeats; G+ means "
               f"{a.threshold:g}x or more, G0 less than {speedup.NEGLIGIBLE_BELOW:g}x (negligible: the paper's "
               f"largest G0 is 1.09x), and a speedup between them is counted as neither agreeing nor disagreeing "
               f"with the paper; a configuration whose interval straddled either bound ran to "
               f"{speedup.FIRM_REPEATS} repeats. Features are defined in Table~2.")
    out.append(_classes_tex(a))
    v1 = _cgroup_v1_tex(a)
    if v1:
        out.append(v1)
    sizing_text = _sizing_tex(a, params, sizes)
    if sizing_text:
        out.append(sizing_text)
    out += _chains_and_probes_tex(a, params)
    return out


def _sizing_tex(a: analysis.Analysis, params: dict[str, Any], sizes: Any) -> str | None:
    """The sizing rule the study followed, with its measured numbers (or the sizes as given)."""
    if params.get("data_memory"):
        from biossd.study.sizing import record, rule

        sized = record.provenance(a.rs.sizing)
        where = f" on {esc(str(sized['host']))}" if sized["host"] else ""

        return (r"Sizing rule (\texttt{biossd.study.sizing.rule}): scale the paper's machine, not each tool. The paper "
                   r"gave every program one RAM (1~GB; GATK 4~GB) and chose an input for each program (\S5.1). Here "
                   r"each tool's cap is its floor F (the median peak resident memory of all its processes over "
                   f"{rule.FLOOR_REPEATS}" r" uncapped runs on 1/"
                   f"{rule.FLOOR_DIVISOR}" r" of its input, after a warm-up, measured in the study's own session on "
                   r"its own host before the tool's capped runs; its code, each file its warm-up mapped or read off the "
                   r"class's file systems, read whole into the warm-up's cgroup, locked resident until the session ends "
                   r"(by a process outside every cap), and between runs only what a run reads from the device under "
                   r"study is evicted; a JVM's heap sized at " f"{rule.HEAP_MARGIN}" r"$\times$ the smallest that completes "
                   r"the input, not pre-touched, so that what it touches beyond the floor is data) plus one data memory "
                   f"M = {esc(str(params['data_memory']))} for every tool: the median per-program input over "
                   f"{rule.INPUT_PER_MEMORY}, the one input:memory ratio the paper states (Fig.~9: 20~GB on 4~GB); "
                   r"the GATK steps' M is their shared input over the same ratio, and Fig.~9's caps are F + "
                   + "/".join(f"{f:g}" for f in rule.FIG9_MEMORY_PER_INPUT) + r"$\times$ that input. Tools' own "
                   r"memory settings (samtools sort \texttt{-m}, bwa mem \texttt{-K}, igvtools sort \texttt{-m}) are "
                   r"their paper-era defaults divided by D = 1~GB / M, never a fraction of the cap; ABySS runs its "
                   r"hash-table assembler (MPI mode, one process). Each program's input is the largest step of a "
                   r"doubling ladder, refined by $\sqrt{2}$ next to the budget, "
                   f"whose uncapped native run adds at most {sized['run_s']:g}~s to its 1/{rule.FLOOR_DIVISOR} "
                   f"run, a step within {esc(f'{rule.RETIME_WITHIN:.0%}')} of the budget, or over it, decided by the median of "
                   f"{rule.RETIME_REPEATS} timings "
                   r"(the GATK steps and Fig.~1's aligners share one input, as in the paper), stepped down by "
                   r"$\sqrt{2}$ while its "
                   f"capped native run exceeds half the {sized['time_limit_s']:g}~s limit "
                   f"(measured by \\texttt{{{esc(sized['by'])}}}{where}). A call is \\emph{{marginal}}, counted as "
                   r"neither agreement nor disagreement, when its capped runs swapped out less than the band "
                   f"b = max({rule.BAND_DATA_MEMORY_SHARE:g} M, {rule.BAND_FLOOR_SIGMAS} $\\sigma_F$) and peaked "
                   r"within b of their cap, when its uncapped data demand lies within b of M, or when its interval "
                   r"touches 1.2x or 2x; a run whose host was busier than a quarter of a core outside it was run "
                   r"again once (Table~1 counts those). All of it was registered before the study ran "
                   r"(docs/study.md). No tool's input, cap or setting was chosen to land it in the paper's group.")
    if sizes:
        return ("Inputs per kind as given (" + esc(str(sizes)) + "); no data memory (--data_memory) was given, so "
                "tools ran with their own memory defaults.")
    return None


def _chains_and_probes_tex(a: analysis.Analysis, params: dict[str, Any]) -> list[str]:
    """How Fig. 3's pipelines ran chained, and Fig. 10's cachegrind probes."""
    out = []
    chained = resultset.chains(a.rs)
    if len(chained):
        reps_chain = int(chained["rep"].astype(int).max())
        out.append(f"Fig.~3's pipelines ran chained ({_join([esc(p) for p in sorted(chained['pipeline'].unique())])}; "
                   f"{reps_chain} repeat{'s' if reps_chain > 1 else ''} on each side): a pipeline's steps ran one after "
                   "another in one scratch directory on the class's device, each step reading what the step before "
                   "it wrote, each profiled as a run of its own under its tool's cap (\\texttt{biossd.study.chain}); a "
                   "step that did not end ok ended its chain. The figure names each substitute step, each added "
                   "conversion and each of the paper's steps that could not run, with why.")
    probes = resultset.probes(a.rs)
    if len(probes) and params.get("cachegrind_divisor"):
        out.append(f"Fig.~10's simulated miss ratios come from one cachegrind run of each tool on the first side, "
                   f"at its input kind's size divided by {esc(str(params['cachegrind_divisor']))} and without its "
                   "memory cap (valgrind's own memory would exceed it); these are not timed runs.")
    return out


def _classes_tex(a: analysis.Analysis) -> str:
    """How the two classes were held equal but for the device, from the runs' own records."""
    runs = a.rs.runs
    queues = sorted(set(runs["device_queue"].dropna().astype(str))) if "device_queue" in runs else []
    text = (r"The storage classes differ only in the device: every block device a run touched, its file system's "
            r"and its swap's, did direct I/O to what was below it and had one queue policy"
            + (f" ({esc(', '.join(q.replace(',', ', ') for q in queues))})" if queues else "")
            + r", and a rotational flag telling the truth of its class; each run checked these before it measured "
              r"and recorded them (a mismatch stops the run as a fault of the harness).")
    through = runs.groupby("side")["device_write_through"].first() if "device_write_through" in runs else pd.Series()
    if through.astype("boolean").fillna(False).any():
        text += (r" The native class's writes went through to the host's device (O\_DIRECT and O\_DSYNC on its "
                 "backing file), so that no cache of the virtual machine's host absorbed them; the emulated disk's "
                 "only write cache is its modelled buffer.")
    return text


def _cgroup_v1_tex(a: analysis.Analysis) -> str:
    """What cgroup v1 memory caps do differently from the paper's small machines, and the repeats
    its OOM killer ended, when a side's caps were v1."""
    runs = a.rs.runs
    if "cap_mechanism" not in runs or not runs["cap_mechanism"].astype(str).str.startswith("cgroup-v1").any():
        return ""
    ooms = runs[runs["outcome"] == speedup.OOM]
    counted = ", ".join(f"{esc(str(t))} {n}" for t, n in ooms.groupby("tool").size().items())
    return ("Memory caps were cgroup v1 limits. Unlike a machine with that much RAM, and unlike cgroup v2, v1 "
            "has no per-cgroup writeback: a capped tool dirties pages up to its limit and reclaim then stalls on "
            "them or swaps the tool's anonymous memory out, so most writeback falls inside the run; and v1's "
            "OOM killer can end a run that thrashes although swap is free, which the paper's machines would "
            "not have done. " + (f"The OOM killer ended {len(ooms)} runs here ({counted}); Table~1 counts them "
                                 "per side." if len(ooms) else "It ended no run here."))


def _tools_tex(a: analysis.Analysis) -> list[str]:
    """The tools that ran (versions, substitutes) and those that did not, with why."""
    runs = a.rs.runs
    out = [r"\subsection*{Tools}"]
    ran = set(runs["tool"])
    entries = {e.id: e for e in catalogue.load_all() if e.kind == "tool"}
    facts = resultset.run_facts(a.baseline_runs)
    versions = facts.groupby("tool")["tool_version"].agg(lambda v: ", ".join(sorted(set(map(str, v.dropna())))))
    tool_lines = []
    for tool in sorted(ran):
        e = entries.get(tool)
        name = esc(e.data["paper_name"]) if e else esc(tool)
        version = versions.get(tool) or (e.data["version"] if e else "?")
        text = f"{name} {esc(str(version))}"
        if e and e.data.get("substitute_of"):
            text += f" (\\textbf{{substitute}} for {esc(entries[e.data['substitute_of']].data['paper_name'])})"
        tool_lines.append(text)
    out.append("Run: " + "; ".join(tool_lines) + ".")
    absent = sorted(set(entries) - ran)
    if absent:
        out.append(r"\textbf{Not run:} " + "; ".join(
            f"{esc(entries[t].data['paper_name'])}"
            + (f" (recipe-only here: {esc(entries[t].data.get('status_reason', ''))})"
               if entries[t].data["status"] != "runnable" else "") for t in absent) + ".")
    return out


def answer_tex(a: analysis.Analysis) -> str:
    """The results open with the answer (:mod:`biossd.analysis.verdict`): which tools the fast side
    accelerated, by how much, where that agrees with the paper, and why each disagreement."""
    from biossd.analysis import predict, verdict
    from biossd.outputs import tables

    explained = verdict.explain(a, tables.table1_tools(a))
    text = r"\paragraph{The answer.} " + esc(verdict.answer_text(a, explained)) + "\n"
    for lines, intro in ((verdict.disagreements_text(explained),
                          "Where this study and the paper disagree, and why (from the runs' own features):"),
                         (verdict.marginal_text(explained), "The marginal calls, each with the edge it sits on:")):
        if lines:
            text += ("\n" + rf"\noindent {esc(intro)}" + "\n" + r"\begin{itemize}" + "\n"
                     + "".join(rf"\item {esc(line)}" + "\n" for line in lines) + r"\end{itemize}" + "\n")
    text += "\n" + r"\paragraph{Prediction.} " + esc(predict.MODEL_SUMMARY) + " "
    summary = predict.validation_summary(a.cross_prediction, a.predicted_speedups)
    if not summary["predictions"]:
        why = a.cross_prediction["why"].replace("", float("nan")).dropna() if not a.cross_prediction.empty else []
        text += esc("This result set could not be used to validate it: " + (why.iloc[0] if len(why) else
                    "it needs a speedup pair with both sides' device records and block traces") + ".") + "\n"
    else:
        text += esc(f"Validated on this result set (Table S1, Fig. S1): each side's baseline runs replayed on the "
                    f"other side's device model, {summary['predictions']} predictions with a measured runtime, median "
                    f"absolute error {summary['median_abs_error']:.0%}, largest {summary['max_abs_error']:.0%} "
                    f"({summary['worst']}); {summary['lower_bounds_reached']} of {summary['lower_bounds']} "
                    f"predictions onto a time-limited side reached the limit; the predicted group is the measured "
                    f"one for {summary['group_agreement']:.0%} of {summary['tools_with_groups']} tools. Fig. 2(b) "
                    "is regenerated by this model for the paper's five other SSDs.") + "\n"
    return text


#: A figure this many times wider than tall is set sideways, along the page's long side: scaled to
#: the text width it would be a strip (Fig. 2 with seventeen tools: 13.4 by 5.6 inches).
SIDEWAYS_ASPECT = 1.8


def _aspect(png: Path) -> float | None:
    """A PNG's width over its height, from its header; ``None`` when it cannot be read."""
    with contextlib.suppress(OSError):
        head = png.read_bytes()[:24]
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        return width / height if head[:8] == b"\x89PNG\r\n\x1a\n" and height else None
    return None


def _float_tex(artefact: artefacts.Artefact, report_rel: str, report_dir: Path | None = None) -> str:
    """One artefact as a captioned float: a figure on its page (sideways when it is wide,
    :data:`SIDEWAYS_ASPECT`), a table sideways."""
    label, stem, caption = artefact.supplement_label, artefact.stem, artefact.caption
    if artefact.kind == artefacts.FIGURE:
        aspect = _aspect(report_dir / "figures" / f"{stem}.png") if report_dir else None
        env = "sidewaysfigure" if aspect and aspect >= SIDEWAYS_ASPECT else "figure"
        size = ("width=\\textheight,height=0.8\\textwidth" if env == "sidewaysfigure"
                else "width=\\textwidth,height=0.8\\textheight")
        return (f"\\begin{{{env}}}{'[p]' if env == 'figure' else ''}\n\\centering\n"
                f"\\includegraphics[{size},keepaspectratio]"
                f"{{{report_rel}/figures/{stem}.pdf}}\n"
                f"\\caption{{{label}. {esc(caption)}.}}\n\\end{{{env}}}\n\\clearpage\n")
    # Landscape; shrunk (never enlarged) to the page's width, then to 80% of its height.
    return ("\\begin{sidewaystable}\n\\centering\n"
            f"\\caption{{{label}. {esc(caption)}.}}\n"
            "\\resizebox{!}{\\ifdim\\height>0.8\\textwidth 0.8\\textwidth\\else\\height\\fi}{"
            "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}"
            f"{{\\input{{{report_rel}/tables/{stem}.tex}}}}}}\n"
            "\\end{sidewaystable}\n\\clearpage\n")


def body_tex(report_rel: str = "report", report_dir: Path | None = None) -> str:
    """One captioned float per artefact, reading the copied report (relative paths; ``report_dir``:
    the report itself, whose figures' shapes decide how each is set)."""
    return "\n".join(_float_tex(artefact, report_rel, report_dir) for artefact in artefacts.ARTEFACTS
                     if artefact.in_supplement)


def experiments_tex(results_dirs: Sequence[Path], report_dir: Path, report_rel: str = "report") -> str:
    """The related experiments these results hold: for each, the study it re-runs, what it asks,
    what that study found, its tools with every substitute named, what is not available here, the headline
    from its own table, and its figure and table (when the report has them)."""
    from biossd import experiments

    parts = []
    for name in experiments.NAMES:
        table = experiments.load_table(list(results_dirs), name)
        if table.empty:
            continue
        spec = experiments.load_spec(name)
        text = [f"\\subsection{{{esc(spec['title'])}}}",
                esc(f"After {spec['source']}. ") + esc(" ".join(spec["question"].split())) + " "
                + esc("That study found: " + " ".join(spec["source_finding"].split())),
                "", "\\paragraph{Tools.}"]
        tools = []
        for tool, info in spec["tools"].items():
            sub = f" (a substitute for {info['substitute_of']})" if info.get("substitute_of") else ""
            note = " ".join(info.get("note", "the study's entry").split()).rstrip(".")
            tools.append(esc(f"{info.get('name', tool)}{sub}: {note}"))
        text.append("; ".join(tools) + ".")
        for what, why in (spec.get("not_available") or {}).items():
            text.append(esc(f"Not available here: {' '.join(why.split())}"))
        text += ["", "\\paragraph{Result.} " + esc(experiments.headline(name, table)), "\\clearpage"]
        floats = [_float_tex(x, report_rel) for x in artefacts.of_experiment(name)
                  if all((report_dir / f).is_file() for f in x.files)]
        parts.append("\n".join(text) + "\n" + "\n".join(floats))
    if not parts:
        return "These results hold none of the related experiments (\\texttt{--experiment}).\n"
    return "\n".join(parts)


#: Marks the report copy inside a supplement's build directory as biossd's (only such a copy
#: is replaced by the next build).
REPORT_COPY_MARKER = ".biossd-report-copy"


def _replace_report_copy(report_dir: Path, dest: Path) -> None:
    """Copy the report's figures and tables to ``dest``, replacing an earlier copy — only one
    that carries :data:`REPORT_COPY_MARKER`; anything else there is refused, not deleted."""
    if dest.exists() and not (dest / REPORT_COPY_MARKER).is_file():
        raise SupplementError(f"{dest} exists and is not a report copy biossd made (no {REPORT_COPY_MARKER}); "
                              "choose another --out or move it away")
    if dest.exists():
        remove_tree(dest)
    dest.mkdir(parents=True)
    (dest / REPORT_COPY_MARKER).write_text("copied by biossd paper from the report\n")
    for sub in ("figures", "tables"):
        if (report_dir / sub).is_dir():
            shutil.copytree(report_dir / sub, dest / sub)
        else:
            (dest / sub).mkdir()


#: Where a long command line may break in the supplement (paths and options have no spaces).
_BREAK_AFTER = ("/", ",", "=", "-")


def breakable(tex: str) -> str:
    """``tex`` with a permitted line break after each of :data:`_BREAK_AFTER`, so a long
    invocation wraps instead of running off the page."""
    for char in _BREAK_AFTER:
        tex = tex.replace(char, char + r"\allowbreak{}")
    return tex


def build(results_dirs: Sequence[Path], out_dir: Path = paths.PAPER_BUILD_DIR, render: bool = True,
          fast: str = "ssd", slow: str = "hdd") -> Path:
    """Write the generated text, copy the report, run latexmk; returns ``out_dir/supplement.pdf``.
    The report is rendered first when ``render`` or when the first folder has none."""
    if shutil.which("latexmk") is None:
        raise SupplementError("latexmk is not installed: `make paper` installs TeX Live (install/tex-packages.txt)")
    dirs = [Path(d).resolve() for d in results_dirs]
    report_dir = dirs[0] / layout.REPORT_DIR
    study = report.has_study_runs(dirs)
    missing = [str(f) for x in artefacts.ARTEFACTS if x.in_supplement and study for f in x.files
               if not (report_dir / f).is_file()]
    if render or missing or not report_dir.is_dir():
        report.render(dirs, report_dir, parameters={"fast": fast, "slow": slow})
    out_dir = Path(out_dir).resolve()
    gen = out_dir / GENERATED_DIR
    gen.mkdir(parents=True, exist_ok=True)
    _replace_report_copy(report_dir, out_dir / "report")
    from biossd.core.files import atomic_write_text

    if study:
        a = analysis.open_results(dirs, fast=fast, slow=slow)
        atomic_write_text(gen / "methods.tex", methods_tex(a))
        atomic_write_text(gen / "body.tex", body_tex(report_dir=out_dir / "report"))
        atomic_write_text(gen / "answer.tex", answer_tex(a))
    else:
        none = "These results hold no runs of the study of Lee, Min and Yoon (2015), only the related experiments below.\n"
        for part in ("methods.tex", "body.tex", "answer.tex"):
            atomic_write_text(gen / part, none)
    atomic_write_text(gen / "experiments.tex", experiments_tex(dirs, report_dir))
    atomic_write_text(gen / "results.tex", "".join(f"\\item {esc(str(d))}\n" for d in dirs))
    shutil.copyfile(PAPER_DIR / MAIN_TEX, out_dir / MAIN_TEX)
    env = {**os.environ, "SOURCE_DATE_EPOCH": report.SOURCE_DATE_EPOCH, "FORCE_SOURCE_DATE": "1"}
    proc = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", MAIN_TEX],
                          cwd=out_dir, capture_output=True, text=True, errors="replace", env=env,
                          timeout=LATEXMK_TIMEOUT_S)
    pdf = out_dir / MAIN_TEX.replace(".tex", ".pdf")
    if proc.returncode != 0 or not pdf.is_file():
        log = (out_dir / MAIN_TEX.replace(".tex", ".log"))
        tail = log.read_text(errors="replace")[-2000:] if log.is_file() else proc.stdout[-2000:]
        raise SupplementError(f"latexmk failed in {out_dir} (see {log}):\n{tail}")
    return pdf


def captions() -> pd.DataFrame:
    """The artefacts and their captions (what a reader of the PDF will find)."""
    return pd.DataFrame([(x.kind, x.number, x.stem, x.caption) for x in artefacts.ARTEFACTS if x.in_supplement],
                        columns=["kind", "number", "stem", "caption"])
