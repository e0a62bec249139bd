"""The paper's tables, regenerated from a result set, and their files:
``report/tables/tableN_<slug>.csv`` and ``.tex`` (N = the paper's table number).

The same result set gives byte-identical files: rows in a fixed order, floats printed by
:func:`format_number`, no dates, ``\\n`` line ends. The LaTeX is a plain ``booktabs`` tabular for
``\\input`` in the supplement (paper/).
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from pathlib import Path

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, calls, patterns, regime, speedup
from biossd.core import paths
from biossd.core.files import atomic_write_text
from biossd.features import definitions
from biossd.study import catalogue
from biossd.study.inputs import datasets

REFERENCE_DIR = paths.REFERENCE_DIR
#: Four significant digits, but never an exponent for numbers of 1000 or more (IOPS, MB/s).
SIGNIFICANT_DIGITS = 4
WHOLE_FROM = 1000.0
MISSING_TEXT = "--"
MIB = 1 << 20
#: A text column whose longest cell is longer than this wraps in the LaTeX (a ``p`` column).
WRAP_CHARS = 48
WRAP_WIDTH = "5cm"
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def reference(name: str) -> pd.DataFrame:
    """One of the paper's tables as transcribed in ``study/reference/paper_<name>.csv``."""
    return pd.read_csv(REFERENCE_DIR / f"paper_{name}.csv")


# -- writing -----------------------------------------------------------------------------------------------------------
def format_number(value: float) -> str:
    """``1.23456`` → ``1.235``, ``14170.3`` → ``14170``: the tables' one number format."""
    if abs(value) >= WHOLE_FROM:
        return f"{value:.0f}"
    return f"{value:.{SIGNIFICANT_DIGITS}g}"


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return MISSING_TEXT
    if isinstance(value, (float, np.floating)):
        return format_number(float(value))
    return str(value)


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(table: pd.DataFrame) -> str:
    """A booktabs tabular of ``table`` (numbers right-aligned, text left), escaped."""
    def spec(col: str) -> str:
        if pd.api.types.is_numeric_dtype(table[col]):
            return "r"
        longest = table[col].astype(str).str.len().max() if len(table) else 0
        return f"p{{{WRAP_WIDTH}}}" if longest > WRAP_CHARS else "l"

    align = "".join(spec(c) for c in table.columns)
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule",
             " & ".join(latex_escape(str(c)) for c in table.columns) + " \\\\", "\\midrule"]
    for row in table.itertuples(index=False):
        lines.append(" & ".join(latex_escape(_cell(v)) for v in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)


#: The files of a table: the numbers (CSV) and the supplement's LaTeX.
TABLE_FORMATS = ("csv", "tex")


def write(table: pd.DataFrame, stem: Path, latex: pd.DataFrame | None = None) -> list[Path]:
    """``stem.csv`` (every column) and ``stem.tex`` (``latex``: the view a page can set, in
    human units; else the same columns), each written whole or not at all."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv = table.to_csv(index=False, float_format=format_number, lineterminator="\n")
    paths = [stem.with_suffix(f".{ext}") for ext in TABLE_FORMATS]
    atomic_write_text(paths[0], csv)
    atomic_write_text(paths[1], to_latex(table if latex is None else latex))
    return paths


# -- the tables --------------------------------------------------------------------------------------------------------
def table1_tools(a: Analysis) -> pd.DataFrame:
    """Table 1: every tool of the catalogue — task, the paper's group and speedup, and this
    result set's baseline speedup with its 95% bootstrap interval and group (G+ at
    ``a.threshold`` or more, G0 below the negligible bound, *between* otherwise), its repeats
    that ended ok and those the OOM killer ended on each side, whether the group is firm, with a
    status where there is no speedup (not run, oom, recipe-only); and the regime it ran in
    (:func:`biossd.analysis.regime.regime_table`: floor, input, data memory M, uncapped data part
    / M, page swaps per second, major faults, swaps and swap-in reads per class, who issued
    those)."""
    rows = []
    base = a.baseline
    for entry in sorted((e for e in catalogue.load_all() if e.kind == "tool"), key=_table1_order):
        d = entry.data
        row = {"tool": entry.id, "name": d["paper_name"], "task": d["task"],
               "substitute_of": d.get("substitute_of") or "", "paper_group": d.get("paper_group") or "",
               "paper_speedup": d.get("paper_speedup")}
        if entry.id in base.index:
            b = base.loc[entry.id]
            row.update(mem=b["mem"], scale=int(b["scale"]), runtime_fast_s=b["runtime_s_fast"],
                       runtime_slow_s=b["runtime_s_slow"], speedup=b["speedup"], speedup_low=b["speedup_low"],
                       speedup_high=b["speedup_high"], speedup_with_flush=b.get("speedup_with_flush", np.nan),
                       speedup_is_lower_bound=bool(b.get("speedup_is_lower_bound", False)), group=b["group"],
                       firm=not bool(speedup.unfirm(base.loc[[entry.id]], a.threshold).iloc[0]) if b["group"] else False,
                       **{f"{k}_{side}": b[f"{k}_{side}"] for k in ("n_ok", "n_oom") for side in ("fast", "slow")},
                       status=b["status"])
        else:
            why = "not run" if d["status"] == "runnable" else "not run: recipe-only here"  # why: catalogue
            row.update(mem="", scale=np.nan, runtime_fast_s=np.nan, runtime_slow_s=np.nan, speedup=np.nan,
                       speedup_low=np.nan, speedup_high=np.nan, speedup_with_flush=np.nan,
                       speedup_is_lower_bound=False, group="", firm=False,
                       **{f"{k}_{side}": np.nan for k in ("n_ok", "n_oom") for side in ("fast", "slow")}, status=why)
        rows.append(row)
    table = pd.DataFrame(rows)
    table["paper_speedup"] = table["paper_speedup"].astype(float)
    # Each call, marginal or not (biossd.analysis.calls), and what it rests on; agreement is the call's.
    called = calls.call_table(a)
    for column in calls.CALL_COLUMNS:
        table[column] = table["tool"].map(called[column]) if len(called) else np.nan
    table["call"] = table["call"].fillna("")
    table["marginal_edge"] = table["marginal_edge"].fillna("")
    table["agrees"] = speedup.agreement(table["call"], table["paper_group"])
    # The regime each tool ran in (biossd.analysis.regime): floor, input, data memory, data part.
    reg = regime.regime_table(a)
    for column in regime.REGIME_COLUMNS:
        if column not in table:
            table[column] = table["tool"].map(reg[column]) if len(reg) else np.nan
    return table


def _mib(value: float) -> float:
    return value / MIB if np.isfinite(value) else np.nan


def _speedup_text(row: pd.Series) -> str:
    if not np.isfinite(row["speedup"]):
        return MISSING_TEXT
    if row.get("speedup_is_lower_bound"):
        return f">= {row['speedup']:.3g}"
    interval = (f" [{row['speedup_low']:.2f}-{row['speedup_high']:.2f}]"
                if np.isfinite(row["speedup_low"]) and np.isfinite(row["speedup_high"]) else "")
    return f"{row['speedup']:.3g}{interval}"


def table1_latex(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as a page sets it: each tool as the paper names it, the paper's group and speedup,
    this set's speedup with its interval, group and call (a marginal one with its edge), whether
    it agrees, the repeats that ended ok and those redone, each fast/slow; the regime's columns
    are Table S6's."""
    def pair(row: pd.Series, key: str) -> str:
        a, b = row.get(f"{key}_fast"), row.get(f"{key}_slow")
        return MISSING_TEXT if pd.isna(a) and pd.isna(b) else f"{_int(a)}/{_int(b)}"

    rows = []
    for _, r in table.iterrows():
        edge = r["marginal_edge"].split(":")[0] if isinstance(r.get("marginal_edge"), str) and r["marginal_edge"] else ""
        rows.append({"tool": r["name"], "paper": f"{r['paper_group']} {r['paper_speedup']:g}" if r["paper_group"] else
                     (f"for {r['substitute_of']}" if r["substitute_of"] else MISSING_TEXT),
                     "speedup [95%]": _speedup_text(r), "group": r["group"] or MISSING_TEXT,
                     "call": (f"marginal ({edge})" if r["call"] == calls.MARGINAL else r["call"]) or MISSING_TEXT,
                     "agrees": {True: "yes", False: "no"}.get(r["agrees"], MISSING_TEXT),
                     "ok fast/slow": pair(r, "n_ok"), "redone": pair(r, "redone"),
                     "status": r["status"] if r["status"] != speedup.OK else ""})
    return pd.DataFrame(rows)


def _int(value: object) -> str:
    return MISSING_TEXT if value is None or pd.isna(value) else f"{int(value)}"


def regime_latex(table: pd.DataFrame) -> pd.DataFrame:
    """Table S6 as a page sets it: its numbers in MiB to a tenth, without the largest program's name,
    the swaps per second and the CPU busy outside (the CSV keeps them)."""
    view = table.drop(columns=["largest_program", "pfault_fast", "pfault_slow", "outside_cores_max", "code_device"])
    numbers = [c for c in view.columns if c not in ("tool", "call")]
    view[numbers] = view[numbers].astype(float).round(1)
    return view.rename(columns={"sd_F_mib": "sd F", "F_mib": "F", "M_mib": "M", "cap_mib": "cap", "headroom_mib": "headroom",
                                "band_mib": "band", "demand_over_M": "d/M", "swapped_out_mib": "swapped out",
                                "peak_anon_mib": "anon", "peak_file_mib": "file", "peak_shmem_mib": "shmem",
                                "code_read_mib": "code read"})


def table_regime(a: Analysis) -> pd.DataFrame:
    """Table S6: the regime each tool's baseline ran in and what its call rests on (docs/study.md,
    "Calls that hold"), in MiB: its floor F measured in the session and σ_F, its data memory M_t,
    its cap and the headroom its capped runs left, the dead band, its uncapped data demand over
    M_t, what it swapped out, the parts of its capped resident peak (anonymous, file-mapped,
    shared) and its largest program's, the code its capped runs read from elsewhere than the
    device under study and from which device, page swaps per second on each side, and the most
    CPU busy outside any of its runs (cores)."""
    called = calls.call_table(a)
    reg = regime.regime_table(a)
    entries = {e.id: e.data for e in catalogue.load_all()}
    rows = []
    for tool, c in called.iterrows():
        r = reg.loc[tool] if tool in reg.index else pd.Series(dtype=float)
        rows.append({"tool": entries.get(tool, {}).get("paper_name", tool), "call": c["call"],
                     "F_mib": _mib(c["floor_bytes"]), "sd_F_mib": _mib(c["floor_sd_bytes"]),
                     "M_mib": _mib(c["data_memory_bytes"]), "cap_mib": _mib(c["cap_bytes"]),
                     "headroom_mib": _mib(c["headroom_bytes"]), "band_mib": _mib(c["band_bytes"]),
                     "demand_over_M": c["demand_bytes"] / c["data_memory_bytes"] if c["data_memory_bytes"] else np.nan,
                     "swapped_out_mib": _mib(c["swapped_out_bytes"]),
                     "peak_anon_mib": _mib(c["peak_anon_bytes"]), "peak_file_mib": _mib(c["peak_file_mapped_bytes"]),
                     "peak_shmem_mib": _mib(c["peak_shmem_bytes"]), "largest_program": c["top_process"] or MISSING_TEXT,
                     "pfault_fast": r.get("pfault_fast", np.nan), "pfault_slow": r.get("pfault_slow", np.nan),
                     "code_read_mib": _mib(c["code_read_bytes"]), "code_device": c["code_read_device"] or MISSING_TEXT,
                     "outside_cores_max": c["outside_cores_max"]})
    return pd.DataFrame(rows)


def _table1_order(entry: catalogue.Entry) -> tuple[float, str]:
    """The paper's order (descending paper speedup), substitutes after the tool they replace."""
    d = entry.data
    own = d.get("paper_speedup")
    if own is None and d.get("substitute_of"):
        own = catalogue.get(d["substitute_of"]).data.get("paper_speedup")
    return (-(float(own) if own is not None else 0.0), entry.id)


#: A sentence ends at a full stop before a capital letter ("et al. 2008" and "§5.2" do not end one).
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z])")


def table2_features() -> pd.DataFrame:
    """Table 2: the eight storage features — the paper's columns (ID, feature, when high (low))
    and biossd's definition (the first sentence of its function's docstring, where the rest
    says what biossd chose), unit and function, from :data:`biossd.features.definitions.DEFINITIONS`."""
    paper = reference("storage_features").set_index("id")
    rows = []
    for fid in definitions.STORAGE_FEATURES:
        defined = definitions.DEFINITIONS[fid]
        doc = " ".join(inspect.getdoc(defined).split())
        definition, _, unit = doc.partition(" Units: ")
        first = _SENTENCE_END.split(definition.replace("**", ""), maxsplit=1)[0]
        rows.append({"id": fid, "feature": paper.at[fid, "feature"], "when_high_low": paper.at[fid, "when_high_low"],
                     "measures": paper.at[fid, "measures"], "definition": first,
                     "unit": unit.rstrip("."), "defined_in": f"{defined.__module__}.{defined.__name__}"})
    return pd.DataFrame(rows)


SPEC_COLUMNS = ("seq_read_mbs", "seq_write_mbs", "rand_read_iops", "rand_write_iops")


def table_devices(a: Analysis, kind: str) -> pd.DataFrame:
    """Tables 3 (``kind="SSD"``, the fast class) and 4 (``"HDD"``, the slow class): each side's
    device as ``biossd device characterize`` measured it (direct I/O; random IOPS at queue depth
    1; the sequential write *effective*, its bytes over the whole job's time with its final sync,
    as a vendor's sustained figure is — fio's own figure, which stops before the sync and so
    counts what a cache below the guest absorbed, beside it), then the paper's vendor
    specifications."""
    storage = a.fast if kind == "SSD" else a.slow
    rows = []
    for side, record in sorted(a.rs.devices.items()):
        if not (side == storage or side.endswith(f"-{storage}")):
            continue
        spec = record.get("spec_row") or {}
        emulation = record.get("emulation") or {}
        note = (f"emulated {emulation.get('profile_name') or emulation.get('profile')} ({emulation.get('mechanism')})"
                if emulation.get("emulated") else "synthetic" if record.get("synthetic") else "")
        write = (record.get("results") or {}).get("direct_seq_write") or {}
        effective = write.get("effective_mb_per_s")
        rows.append({"source": "measured", "device": f"{side} ({spec.get('device', '?')})", "note": note,
                     **{c: spec.get(c, np.nan) for c in SPEC_COLUMNS},
                     **({"seq_write_mbs": effective} if effective is not None else {}),
                     "seq_write_fio_mbs": spec.get("seq_write_mbs", np.nan)})
    paper = reference("devices")
    for _, p in paper[paper["kind"] == kind].iterrows():
        rows.append({"source": "paper (vendor)", "device": p["device"], "note": "", **{c: p[c] for c in SPEC_COLUMNS},
                     "seq_write_fio_mbs": np.nan})
    table = pd.DataFrame(rows, columns=["source", "device", "note", *SPEC_COLUMNS, "seq_write_fio_mbs"])
    return table.astype({c: float for c in (*SPEC_COLUMNS, "seq_write_fio_mbs")})


def table_pattern_means(a: Analysis) -> pd.DataFrame | None:
    """Fig. 5(c)'s numbers: per pattern, its members, mean speedup and mean normalized features
    (:func:`biossd.analysis.patterns.pattern_table`); ``None`` when the tools were not clustered."""
    return None if a.clustering is None else patterns.pattern_table(a.clustering)


def table5_inputs(a: Analysis) -> pd.DataFrame:
    """Table 5: per tool run, the paper's data set (data-manifests/), the input this result set
    used — a synthetic kind at the tool's own baseline size (``--tool_input_sizes``, else its
    kind's ``--input_sizes``, else ``--input_size``) and the bytes its runs read (the staged
    input's size each run recorded) — the seed, the scales and the caps run."""
    from biossd.study.plan import parse

    used_by: dict[str, str] = {}
    for m in datasets.load_all():
        for tool in m.get("used_by", []):
            used_by.setdefault(tool, m["name"])
    params = a.rs.study_params()
    problems: list[str] = []
    kind_sizes = parse.parse_pairs(params.get("input_sizes"), "input_sizes", problems)
    own = parse.parse_tool_caps(params.get("tool_input_sizes"), problems, "tool_input_sizes")
    own = [(p.strip(), v) for pats, v in own for p in pats.split(",")]
    base = a.baseline_runs
    rows = []
    for tool, group in a.rs.runs.groupby("tool", sort=True):
        entry = catalogue.get(tool)
        original = entry.data.get("substitute_of") or tool
        kind = entry.data["input"]
        size = next((v[0] for p, v in own if fnmatch.fnmatchcase(tool, p)), None) or kind_sizes.get(kind) \
            or params.get("input_size", "")
        read = base.loc[base["tool"] == tool, "input_bytes"] if "input_bytes" in base else pd.Series(dtype=float)
        rows.append({"tool": tool, "paper_data": used_by.get(original, used_by.get(tool, "")),
                     "input": f"synthetic {kind}", "baseline_size": size,
                     "input_bytes": float(read.mean()) if read.notna().any() else np.nan,
                     "seed": params.get("seed", ""), "scales": ",".join(str(s) for s in sorted(group["scale"].unique())),
                     "caps": ",".join(sorted(group["mem"].unique(),
                                             key=lambda m: group.loc[group["mem"] == m, "mem_bytes"].iloc[0])),
                     "runs": len(group)})
    return pd.DataFrame(rows)


def table_prediction(a: Analysis) -> pd.DataFrame:
    """The prediction's validation table: per tool and direction (one side's baseline runs predicted on
    the other side's device), the measured and predicted mean runtimes, the interval and the
    relative error (NaN where the measured time is only a lower bound: the time limit)."""
    table = a.cross_prediction
    columns = ["tool", "direction", "target", "measured_target_s", "target_is_lower_bound", "predicted_target_s",
               "predicted_low_s", "predicted_high_s", "error", "consistent", "why", "note"]
    table = table[columns]
    # Tools that could not be predicted for one reason are one row (the reason once, not per tool).
    unpredicted = table["predicted_target_s"].isna() & table["why"].ne("")
    merged = [{"tool": f"{len(g)} tools: {', '.join(g['tool'])}" if len(g) > 1 else g["tool"].iloc[0],
               "direction": direction, "why": why, "target_is_lower_bound": False, "consistent": False, "note": ""}
              for (direction, why), g in table[unpredicted].groupby(["direction", "why"], sort=False)]
    return pd.concat([table[~unpredicted], pd.DataFrame(merged, columns=columns)], ignore_index=True)


def table_today_storage(a: Analysis) -> pd.DataFrame:
    """The paper's tools on today's storage (:func:`biossd.analysis.today.table`): per tool and
    storage, the runtime (measured or predicted, with its interval), the speedup over the fast
    side, the cost of a run on the volume and its price's source, and the storage to rent."""
    return a.today_storage


def today_storage_latex(table: pd.DataFrame) -> pd.DataFrame:
    """What a page sets of it: per tool, the storage to rent and its figures (the CSV keeps every
    storage)."""
    rent = table[table["rent"].astype(bool)]
    return pd.DataFrame({"tool": rent["tool"], "rent": rent["storage"].str.replace("@", " @ "),
                         "basis": rent["basis"], "runtime (s)": rent["runtime_s"].map(format_number),
                         "speedup": rent["speedup_over_fast_side"].map(lambda v: f"{v:.2f}x"),
                         "volume USD/run": rent["volume_usd_per_run"].map(lambda v: f"{v:.2e}")})
