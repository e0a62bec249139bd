"""Reading one or more result sets (``OUTDIR`` of ``nextflow run study``) for the analysis:
the features tables joined, each storage class's device record, each host's facts and each
invocation's provenance.

A *side* is one storage class on one host, ``<host>-<storage>`` — the directory the layout puts
its runs in (:mod:`biossd.study.layout`). A speedup compares two sides (:mod:`biossd.analysis.speedup`); the
paper's matched-twin setup gives one result set per host, so the sides of a pair often come
from different result folders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from biossd.core.errors import BiossdError
from biossd.features import extract as features
from biossd.host import devicerecord
from biossd.measure import manifest
from biossd.measure.trace import tracefile, tracereader
from biossd.study import layout, lifecycle, repeats
from biossd.study.sizing import procedure
from biossd.study.sizing import record as sizing_record

PIPELINE_INFO = "pipeline_info"
PROVENANCE_FILE = "provenance.json"
SIZING_FILE = "sizing.json"
#: The study's repeats it did not run because their configuration's first repeat reached the time
#: limit (Nextflow's workflow writes it; one row per repeat).
REPEATS_NOT_RUN_FILE = "repeats_not_run.tsv"
REPEATS_NOT_RUN_COLUMNS = list(repeats.NOT_RUN_COLUMNS)
HOST_FILE_GLOB = "host-*.json"
#: Host facts that make two sides' runtimes incomparable when they differ (the run table's).
COMPARED_HOST_FACTS = features.HOST_FACT_COLUMNS


class ResultSetError(BiossdError, ValueError):
    """A result folder that cannot be read; the message names the file."""


@dataclass
class ResultSet:
    """Everything the notebooks read. ``runs`` is the features table of every folder with two
    more columns: ``side`` (``<host>-<storage>``) and ``root`` (the folder it came from)."""

    roots: list[Path]
    runs: pd.DataFrame
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    #: The sizing record the study's parameters came from (``pipeline_info/sizing.json``: every
    #: measurement that chose them, the uncapped data / M among them); the first folder's, or
    #: ``None``.
    sizing: dict[str, Any] | None = None

    def run_dir(self, row: pd.Series) -> Path:
        """The directory of one run (a row of ``runs``)."""
        return Path(row["root"]) / str(row["run_dir"])

    def sized_params(self) -> dict[str, Any]:
        """The parameters the result set's sizing record set (``--sizing``: they replaced the
        study's own; at ``--memory_factor`` k, derived with k M), or none."""
        rec = self.sizing or {}
        if rec.get("format") != sizing_record.FORMAT:
            return {}
        factor = 1.0
        for record in self.provenance:
            factor = float((record.get("params") or {}).get("memory_factor") or factor)
        if factor == 1:
            return dict(rec.get("parameters") or {})
        return procedure.parameters(rec, memory_factor=factor)

    def study_params(self) -> dict[str, Any]:
        """The study's parameters as its runs recorded them (the last record of each wins), those
        its sizing record set in their place."""
        params: dict[str, Any] = {}
        for record in self.provenance:
            params.update({k: v for k, v in (record.get("params") or {}).items() if v is not None})
        return {**params, **{k: v for k, v in self.sized_params().items() if v is not None}}

    def study_param(self, name: str) -> Any:
        """A parameter of the study that wrote the result set (its sizing record's, else its
        provenance's: the first folder's that gives it), or ``None``."""
        if self.sized_params().get(name) not in (None, ""):
            return self.sized_params()[name]
        for record in self.provenance:
            value = (record.get("params") or {}).get(name)
            if value not in (None, ""):
                return value
        return None

    def sides(self) -> list[str]:
        return sorted(self.runs["side"].unique())


def load(roots: Iterable[Path | str]) -> ResultSet:
    """Read every result folder in ``roots``. A folder without ``features.csv`` is an error that
    names it; the same run labels in two folders are too (they would be counted twice)."""
    roots = [Path(r).resolve() for r in roots]
    if not roots:
        raise ResultSetError("no result folders given")
    tables, devices, hosts, provenance, sizings = [], {}, {}, [], {}
    for root in roots:
        path = root / layout.FEATURES_FILE
        if not path.is_file():
            raise ResultSetError(f"{path}: no features table; is {root} the --outdir of a study run?")
        table = features.read_table(path)
        table["root"] = str(root)
        tables.append(table)
        for record in sorted(root.glob(f"*/{layout.DEVICE_RECORD}")):
            try:
                devices[record.parent.name] = devicerecord.read(record)
            except devicerecord.DeviceRecordError as err:
                raise ResultSetError(str(err)) from None
        info = root / PIPELINE_INFO
        for record in sorted(info.glob(HOST_FILE_GLOB)):
            hosts[record.stem.removeprefix("host-")] = _json(record)
        if (info / PROVENANCE_FILE).is_file():
            provenance.append({"root": str(root), **_json(info / PROVENANCE_FILE)})
        sizings[str(root)] = _json(info / SIZING_FILE) if (info / SIZING_FILE).is_file() else None
    differ = sizing_record.differences(sizings)
    if differ:
        raise ResultSetError("the result sets were sized differently, so their sides do not compare (a matched "
                             "twin runs with the first host's --sizing <its results>/pipeline_info/sizing.json): "
                             + "; ".join(differ))
    runs = pd.concat(tables, ignore_index=True)
    runs["side"] = runs["host"].astype(str) + "-" + runs["storage"].astype(str)
    dup = runs.duplicated(list(features.LABEL_COLUMNS), keep=False)
    if dup.any():
        first = runs.loc[dup, list(features.LABEL_COLUMNS)].iloc[0].to_dict()
        raise ResultSetError(f"run {first} appears in more than one of {', '.join(map(str, roots))}; "
                             "give each result folder once")
    # The configuration's memory as labelled (the cap as given, or the data memory M_t of a study
    # that measured its floors in its session), and the cap each run had (its record's; the label's
    # for a table of an older version).
    runs["mem_bytes"] = runs["mem"].map(_cap_bytes)
    runs["cap_bytes"] = runs["cap_bytes"].where(runs["cap_bytes"].notna(), runs["mem_bytes"])
    runs["scale"] = runs["scale"].astype(int)
    return ResultSet(roots=roots, runs=runs, devices=devices, hosts=hosts, provenance=provenance,
                     sizing=next((s for s in sizings.values() if s), None))


#: What Fig. 10 takes from a cachegrind probe: the simulated miss ratios of cachegrind's record
#: (``counters.cachegrind_record``), named as the figure shows them.
CACHEGRIND_COLUMNS = {"D1_miss_ratio": "D1 miss ratio (simulated)", "LL_miss_ratio": "LL miss ratio (simulated)",
                      "I1_miss_ratio": "I1 miss ratio (simulated)"}


def probes(rs: ResultSet, probe: str = "cachegrind") -> pd.DataFrame:
    """The probe runs of every folder (``<side>/probes/<probe>/<tool>/run.json``), one row per
    (side, tool): outcome, why a collector did not run, and for cachegrind its simulated miss
    ratios (:data:`CACHEGRIND_COLUMNS`). Empty when the study made none."""
    rows = []
    for path, body in _manifests(rs, f"*/{layout.PROBES_DIR}/{probe}/*"):
        record = (body.get("collectors") or {}).get(probe) or {}
        row = {"side": path.parents[2].name, "tool": path.name, "outcome": body.get("outcome"),
               "wall_s": body.get("wall_s"), "why": record.get("why") or ""}
        row.update({name: record.get(key, float("nan")) for key, name in CACHEGRIND_COLUMNS.items()})
        rows.append(row)
    return pd.DataFrame(rows, columns=["side", "tool", "outcome", "wall_s", "why", *CACHEGRIND_COLUMNS.values()])


CHAIN_COLUMNS = ["side", "pipeline", "rep", "step", "tool", "mem", "outcome", "runtime_s", "major_faults"]


def chains(rs: ResultSet) -> pd.DataFrame:
    """The steps of the chained pipelines of every folder
    (``<side>/chains/<pipeline>/<rep>/<NN-tool>/run.json``, Fig. 3), one row per step run:
    outcome, runtime (the manifest's wall time) and major faults. Empty when the study ran none."""
    rows = []
    for path, body in _manifests(rs, f"*/{layout.CHAINS_DIR}/*/*/*"):
        labels = body.get("labels") or {}
        try:
            rusage = json.loads((path / "rusage.json").read_text())
        except (OSError, json.JSONDecodeError):
            rusage = {}
        rows.append({"side": path.parents[3].name, "pipeline": path.parents[1].name, "rep": path.parent.name,
                     "step": path.name, "tool": labels.get("tool", ""), "mem": labels.get("mem", ""),
                     "outcome": body.get("outcome"), "runtime_s": body.get("wall_s"),
                     "major_faults": rusage.get("major_faults", float("nan"))})
    return pd.DataFrame(rows, columns=CHAIN_COLUMNS)


def repeats_not_run(rs: ResultSet) -> pd.DataFrame:
    """The repeats the study planned and did not run, from every folder's
    ``pipeline_info/repeats_not_run.tsv``: a configuration whose first repeat was censored at the
    time limit is not repeated (its lower bound is already proved). Empty when none were left."""
    tables = []
    for root in rs.roots:
        path = Path(root) / PIPELINE_INFO / REPEATS_NOT_RUN_FILE
        if path.is_file():
            table = pd.read_csv(path, sep="\t", dtype=str)
            missing = set(REPEATS_NOT_RUN_COLUMNS) - set(table.columns)
            if missing:
                raise ResultSetError(f"{path}: no column(s) {', '.join(sorted(missing))}; was it written by the study?")
            tables.append(table[REPEATS_NOT_RUN_COLUMNS].assign(root=str(root)))
    if not tables:
        return pd.DataFrame(columns=[*REPEATS_NOT_RUN_COLUMNS, "root"])
    return pd.concat(tables, ignore_index=True)


def repeats_not_run_text(table: pd.DataFrame) -> str:
    """One sentence per configuration whose repeats were not run (or that none were)."""
    if table.empty:
        return "Every planned repeat ran: no configuration's first repeat reached the time limit."
    lines = []
    for (tool, storage, mem, scale), rows in table.groupby(["tool", "storage", "mem", "scale"], sort=True):
        lines.append(f"{tool} on {storage} at {mem}, scale {scale}: repeat(s) {', '.join(sorted(rows['rep']))} "
                     f"not run ({rows['why'].iloc[0]}); its speedup is a lower bound from the censored run.")
    return "\n".join(lines)


def run_sessions(rs: ResultSet) -> pd.DataFrame:
    """Which Nextflow session measured the runs: every run's owner (the launcher's pid and start
    ticks, :mod:`biossd.core.owners`, in its ``run.json``) matched against the sessions that wrote
    into its folder (``pipeline_info/sessions.tsv``). One row per session with its number of runs;
    runs whose session is not recorded (measured by hand, or by a launcher that was killed) are
    one row with ``session_id`` ``unknown``. A resumed study's runs come from several sessions."""
    counts: dict[tuple[str, str], int] = {}
    for root in rs.roots:
        path = Path(root) / PIPELINE_INFO / lifecycle.SESSIONS_FILE
        known: dict[tuple[str, str], tuple[str, str]] = {}
        if path.is_file():
            for row in pd.read_csv(path, sep="\t", dtype=str).fillna("").itertuples():
                known[(row.pid, row.start_ticks)] = (row.session_id, row.run_name)
        for rel in rs.runs.loc[rs.runs["root"] == str(root), "run_dir"]:
            owner = _json(Path(root) / str(rel) / manifest.MANIFEST_NAME).get("owner") or {}
            key = known.get((str(owner.get("pid", "")), str(owner.get("start_ticks", ""))), ("unknown", ""))
            counts[key] = counts.get(key, 0) + 1
    return pd.DataFrame([{"session_id": k[0], "run_name": k[1], "runs": n} for k, n in counts.items()],
                        columns=["session_id", "run_name", "runs"])


def run_sessions_text(table: pd.DataFrame) -> str:
    """The sessions behind the result set's runs, in one line."""
    if table.empty:
        return "No runs."
    parts = [f"{r.session_id} ({r.run_name}): {r.runs} runs" if r.run_name else f"{r.session_id}: {r.runs} runs"
             for r in table.itertuples()]
    return f"The runs come from {len(table)} Nextflow session(s): " + "; ".join(parts) + "."


def first_trace(rs: ResultSet, rows: pd.DataFrame) -> pd.DataFrame | None:
    """The raw block trace (:func:`biossd.measure.trace.tracereader.read_blocktrace`) of the first of
    ``rows`` (runs of the run table) whose directory holds one; ``None`` when none does. The one
    place the analysis reads a raw trace (Fig. 6)."""
    for _, row in rows.iterrows():
        path = tracefile.trace_path(rs.run_dir(row))
        if path.is_file():
            return tracereader.read_blocktrace(path)
    return None


def _manifests(rs: ResultSet, pattern: str):
    """(run directory, manifest) of every complete run matching ``pattern`` under each folder;
    an unreadable manifest is an incomplete run, skipped."""
    for root in rs.roots:
        for path in sorted(root.glob(f"{pattern}/{manifest.MANIFEST_NAME}")):
            try:
                yield path.parent, manifest.read_manifest(path.parent)
            except manifest.ManifestError:
                continue


def _cap_bytes(text: object) -> float:
    from biossd.core.units import parse_size

    try:
        return float(parse_size(str(text)))
    except ValueError:
        return float("nan")  # 'none': an uncapped run sorts last


#: The speedup pair a study of the paper's two classes has (Lee, Min and Yoon 2015, §5.1).
DEFAULT_PAIR = ("ssd", "hdd")


def study_pair(roots: Iterable[Path]) -> tuple[str, str]:
    """The speedup pair of result folders ``roots`` when none is given: the first two storage
    classes the first folder's study listed (``--storage_classes``, first the fast one, as its
    docs say), else :data:`DEFAULT_PAIR` — a study of ``ssd,gp3,st1`` is read as ssd against gp3,
    every other pair drawn beside it in Fig. 2."""
    for root in roots:
        path = Path(root) / PIPELINE_INFO / PROVENANCE_FILE
        try:
            params = _json(path).get("params") or {} if path.is_file() else {}
        except ResultSetError:
            params = {}
        classes = [c.strip() for c in str(params.get("storage_classes") or "").split(",") if c.strip()]
        if len(classes) >= 2:
            return classes[0], classes[1]
    return DEFAULT_PAIR


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ResultSetError(f"{path}: cannot read ({err})") from None


def run_facts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per side and tool: the tool version and host facts its first run recorded (the run
    table's :data:`biossd.features.extract.RUN_FACT_COLUMNS`)."""
    columns = ["side", "tool", "tool_version", *COMPARED_HOST_FACTS, "device_queue"]
    first = rows.sort_values(["side", "tool", "mem_bytes", "scale", "rep"], kind="stable")
    return first.groupby(["side", "tool"], sort=True, as_index=False).first()[columns]


def side_facts(rs: ResultSet) -> pd.DataFrame:
    """One row per side: the facts of its first run (how its runs were capped, traced and
    counted, in which containers, on which storage), indexed by side."""
    first = rs.runs.sort_values(["side", "tool", "mem_bytes", "scale", "rep"], kind="stable")
    return first.groupby("side", sort=True).first()


#: How a run's perf counters were read, in words.
PERF_MECHANISMS = {"pmu": "perf with hardware counters", "software": "perf with software events only (no PMU)"}


def mechanisms(rs: ResultSet) -> dict[str, str]:
    """Per side, in one sentence, how its runs were measured (§5.1 of Lee, Min and Yoon (2015)
    ran time, SAR, blktrace and VTune): who enforced the memory caps, how block requests were
    traced, how perf counted, and where the tools ran — the container engine with its version,
    and the image (one, by its digest) or how many (each run records its own)."""
    out = {}
    for side, facts in side_facts(rs).iterrows():
        cap, trace = facts.get("cap_mechanism"), facts.get("trace_mechanism")
        reasons = features.parse_missing(facts.get("missing_reason"))
        images = sorted(set(rs.runs.loc[rs.runs["side"] == side, "container_image"].dropna().astype(str)))
        where = f"tools run {facts.get('container_engine') or 'native'}"
        if len(images) == 1:
            where += f" in {images[0]}"
        elif images:
            where += f", each in its own image ({len(images)} images; every run records its image by digest)"
        perf = PERF_MECHANISMS.get(facts.get("perf_mechanism"))
        if perf and str(facts.get("container_engine") or "").startswith("docker"):
            perf += " of the docker client, not the tool (CPU time and faults are the container cgroup's)"
        parts = [f"memory caps by {cap}" if isinstance(cap, str) else None,
                 f"block requests traced with {trace}" if isinstance(trace, str) and trace != "none" else
                 (f"no block trace ({reasons.get('CAR', 'why not recorded')})" if trace == "none" else None),
                 perf, where]
        out[str(side)] = "; ".join(p for p in parts if p) + "."
    return out


def differences(facts: pd.DataFrame, fast: str, slow: str) -> list[str]:
    """What differs between two sides other than the drive: host facts, the queue settings the
    study holds equal on every device (``device_queue``), and tool versions. The notebooks print
    these above every figure of the pair ("the notebooks say so")."""
    a, b = facts[facts["side"] == fast], facts[facts["side"] == slow]
    if a.empty or b.empty:
        return []
    notes = []
    for fact in (*COMPARED_HOST_FACTS, "device_queue"):
        if fact not in facts:
            continue
        va, vb = sorted(set(a[fact].dropna().astype(str))), sorted(set(b[fact].dropna().astype(str)))
        if va and vb and va != vb:
            notes.append(f"{fact} differs: {fast} {', '.join(va)}; {slow} {', '.join(vb)}")
    versions = a.merge(b, on="tool", suffixes=("_fast", "_slow"))
    for _, row in versions[versions["tool_version_fast"] != versions["tool_version_slow"]].iterrows():
        notes.append(f"{row['tool']} version differs: {fast} {row['tool_version_fast']}; "
                     f"{slow} {row['tool_version_slow']}")
    return notes
