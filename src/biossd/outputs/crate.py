"""An RO-Crate of a result set: ``biossd crate RESULTS`` writes
``RESULTS/ro-crate-metadata.json`` in the style of a Workflow Run Crate — the workflow that ran
(copied into ``workflow/``), its parameters (formal parameters and the values given), its inputs
with checksums, and its outputs: the features table, each side's device record, every run
directory and the report — so others can re-analyse the set and know what made it.

Checksums are sha256. A run directory's is the sha256 of its *listing*: one line
``<path>\\t<sha256 of the file>\\n`` per file under it, sorted by path (:func:`directory_sha256`),
so it changes when any file of the run changes. Synthetic inputs are not kept in a result set;
their files are listed with the checksums their generator recorded (``inputs/*/synth.json``, or
``prepared.json`` with the published sources it was made from).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

from rocrate.model.computationalworkflow import ComputationalWorkflow
from rocrate.model.contextentity import ContextEntity
from rocrate.model.dataset import Dataset
from rocrate.model.file import File
from rocrate.rocrate import ROCrate

from biossd import __version__, experiments
from biossd.core import paths
from biossd.core.errors import BiossdError
from biossd.features import extract as features
from biossd.measure import manifest
from biossd.study import layout
from biossd.study.inputs.kinds import INPUT_RECORDS

METADATA_FILE = "ro-crate-metadata.json"
WORKFLOW_DIR = "workflow"
WORKFLOW_FILES = ("main.nf", "nextflow.config", "nextflow_schema.json")
RO_CRATE_CONTEXT = "https://w3id.org/ro/crate/1.1/context"
#: The term the checksums use, defined in the crate's own context.
SHA256_TERM = {"sha256": "https://w3id.org/ro/terms/workflow-run#sha256"}
#: The profiles the crate claims, each a CreativeWork entity of the crate (name, version), as the
#: Workflow Run Crate 0.5 specification requires of ``conformsTo``.
PROFILES = {"https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
            "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
            "https://w3id.org/workflowhub/workflow-ro-crate/1.0": ("Workflow RO-Crate", "1.0")}
LICENCE = "https://creativecommons.org/licenses/by/4.0/"
NEXTFLOW_LANG = "#nextflow"
_SCHEMA_TYPES = {"string": "Text", "integer": "Integer", "number": "Float", "boolean": "Boolean"}


class CrateError(BiossdError, ValueError):
    pass


def file_sha256(path: Path) -> str:
    return manifest.sha256_file(Path(path))


def directory_sha256(path: Path) -> str:
    """sha256 of a directory's sorted listing of ``<relative path>\\t<file sha256>`` lines."""
    path = Path(path)
    lines = [f"{p.relative_to(path).as_posix()}\t{file_sha256(p)}\n"
             for p in sorted(path.rglob("*")) if p.is_file()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _file(crate: ROCrate, root: Path, rel: str, **props: Any) -> File:
    path = root / rel
    return crate.add(File(crate, None, rel, properties={
        "name": Path(rel).name, "contentSize": path.stat().st_size, "sha256": file_sha256(path), **props}))


def write(results: Path) -> Path:
    """Write ``results/ro-crate-metadata.json`` (and ``results/workflow/``); returns its path."""
    root = Path(results).resolve()
    table_path = root / layout.FEATURES_FILE
    tasks = {name: experiments.point_dirs([root], name) for name in experiments.NAMES}
    if not table_path.is_file() and not any(tasks.values()):
        raise CrateError(f"{table_path}: no features table and no experiment task; is {root} the --outdir of "
                         "a study run?")
    provenance_path = root / "pipeline_info" / "provenance.json"
    provenance = json.loads(provenance_path.read_text()) if provenance_path.is_file() else {}
    crate = ROCrate(version="1.1")
    crate.name = f"biossd result set {root.name}"
    ran = ", ".join(n for n, t in tasks.items() if t)
    crate.description = (("Profiled runs of bioinformatics tools on storage classes under memory caps, with raw "
                          "traces, the features table and the regenerated tables and figures of Lee, Min and "
                          "Yoon (2015), made by biossd." + (f" With the related experiments {ran}." if ran else ""))
                         if table_path.is_file() else
                         f"The related experiments {ran} of Lee, Min and Yoon (2015)'s study, "
                         "profiled on storage classes with raw traces kept, made by biossd; no study runs.")
    crate.license = LICENCE
    crate.root_dataset["conformsTo"] = [{"@id": p} for p in PROFILES]
    for uri, (name, version) in PROFILES.items():
        crate.add(ContextEntity(crate, uri, properties={"@type": "CreativeWork", "name": name, "version": version}))
    crate.root_dataset["datePublished"] = date_published(provenance, table_path)

    workflow, formal = _workflow(crate, root, provenance)
    objects = _inputs(crate, root, provenance, formal)
    results = _outputs(crate, root, table_path, tasks)
    crate.add_action(workflow, identifier=f"#run-{provenance.get('session_id') or root.name}", object=objects,
                     result=results, properties={
                         "name": f"biossd study run {provenance.get('run_name') or root.name}",
                         "startTime": provenance.get("start"), "endTime": provenance.get("complete"),
                         "description": f"command line: {provenance.get('command_line')}; profile: "
                                        f"{provenance.get('profile')}",
                         "actionStatus": {"@id": action_status(provenance.get("success"))}})
    return _write_metadata(crate, root)


def date_published(provenance: dict[str, Any], table_path: Path) -> str:
    """The crate's ``datePublished`` (an ISO 8601 date, which RO-Crate 1.1 requires): the day the
    session completed, or started; for a result set without provenance (made outside Nextflow),
    the day its features table was written, or today (UTC)."""
    stamp = str(provenance.get("complete") or provenance.get("start") or "")[:10]
    if stamp:
        return stamp
    when = table_path.stat().st_mtime if table_path.is_file() else None
    return (datetime.datetime.fromtimestamp(when, datetime.timezone.utc) if when is not None
            else datetime.datetime.now(datetime.timezone.utc)).date().isoformat()


def action_status(success: Any) -> str:
    """The run's schema.org action status from its provenance's ``success``: completed or failed
    once the session finished, active while it runs (the study's own report is made then)."""
    if success in (True, "true"):
        return "http://schema.org/CompletedActionStatus"
    if success in (False, "false"):
        return "http://schema.org/FailedActionStatus"
    return "http://schema.org/ActiveActionStatus"


def _workflow(crate: ROCrate, root: Path, provenance: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The workflow, copied in so the crate says exactly which entry files ran, and its formal
    parameters (from the schema)."""
    wf_dir = root / WORKFLOW_DIR
    if wf_dir.is_symlink() or (wf_dir.exists() and not wf_dir.is_dir()):
        raise CrateError(f"{wf_dir} is not a folder of the result set (a symbolic link or a file): the crate writes "
                         "its copy of the workflow only inside the result set; move it away and run `biossd crate` again")
    wf_dir.mkdir(exist_ok=True)
    for name in WORKFLOW_FILES:
        # Written whole under a new name and renamed over the old: a link left at the name is
        # replaced, never followed (its target outside the result set is not written).
        manifest.atomic_write_text(wf_dir / name, (paths.STUDY_DIR / name).read_text())
    lang = crate.add(ContextEntity(crate, NEXTFLOW_LANG, properties={
        "@type": "ComputerLanguage", "name": "Nextflow", "url": "https://www.nextflow.io/",
        "version": str(provenance.get("nextflow_version") or "24.10.0")}))
    from biossd.study.plan.schema import schema_parameters

    schema = json.loads((paths.STUDY_DIR / "nextflow_schema.json").read_text())
    formal = {}
    for name, spec in sorted(schema_parameters(schema).items()):
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        formal[name] = crate.add_formal_parameter(
            name=name, additionalType=_SCHEMA_TYPES.get(next(k for k in kinds if k != "null"), "Text"),
            identifier=f"#param-{name}", description=spec.get("description"), valueRequired=False)
    workflow = crate.add(ComputationalWorkflow(crate, None, f"{WORKFLOW_DIR}/main.nf", properties={
        "name": "biossd study", "programmingLanguage": {"@id": lang.id}, "version": __version__,
        "url": "https://github.com/biossd/biossd", "input": [{"@id": f.id} for f in formal.values()],
        "sha256": file_sha256(wf_dir / "main.nf")}))
    crate.mainEntity = workflow
    for name in WORKFLOW_FILES[1:]:
        _file(crate, root, f"{WORKFLOW_DIR}/{name}")
    return workflow, formal


def _inputs(crate: ROCrate, root: Path, provenance: dict[str, Any], formal: dict[str, Any]) -> list[Any]:
    """The parameter values given, and the inputs' files with their checksums (and sources)."""
    objects = []
    for name, value in sorted((provenance.get("params") or {}).items()):
        if name in formal and value is not None:
            objects.append(crate.add(ContextEntity(crate, f"#value-{name}", properties={
                "@type": "PropertyValue", "name": name, "value": str(value), "exampleOfWork": {"@id": formal[name].id}})))
    for record in sorted(p for name in INPUT_RECORDS for p in root.glob(f"inputs/*/{name}")):
        body = json.loads(record.read_text())
        dataset = body.get("dataset")
        what = (f"input {record.parent.name} prepared from the data set {dataset} (recipe {body.get('recipe')}, seed "
                f"{body.get('seed')}); not kept in the result set, made again by `biossd data prepare`") if dataset else (
                f"synthetic input {record.parent.name} (kind {body.get('kind')}, seed {body.get('seed')}); not kept "
                "in the result set, regenerated by `biossd data synth`")
        objects.append(_file(crate, root, record.relative_to(root).as_posix(), encodingFormat="application/json",
                             description=f"record of the {what.split(';')[0]}"))
        for fname, info in sorted((body.get("files") or {}).items()):
            objects.append(crate.add(ContextEntity(crate, f"#input-{record.parent.name}-{fname}", properties={
                "@type": "File", "name": fname, "sha256": info.get("sha256"), "contentSize": info.get("size_bytes"),
                "description": what})))
        for source in body.get("sources") or []:
            objects.append(crate.add(ContextEntity(crate, source["url"], properties={
                "@type": "File", "name": source["name"], "sha256": source["sha256"],
                "description": f"source of {dataset} ("
                               + ("verified against its manifest" if source.get("verified")
                                  else "unverified: its manifest pins no sha256") + ")"})))
    return objects


def _outputs(crate: ROCrate, root: Path, table_path: Path, tasks: dict[str, Any]) -> list[Any]:
    """The table, the device records, every run directory (the table's, the probes' and the
    chained steps'), the experiments' tables and task directories, pipeline_info, the report."""
    results = [_file(crate, root, layout.FEATURES_FILE, encodingFormat="text/csv")] if table_path.is_file() else []
    results += [_file(crate, root, p.relative_to(root).as_posix(), encodingFormat="application/json")
                for p in sorted(root.glob(f"*/{layout.DEVICE_RECORD}"))]
    for run in features.find_run_dirs([root]):
        labels = manifest.read_manifest(run).get("labels", {})
        results.append(_directory(crate, root, run, manifest.MANIFEST_NAME,
                                  f"run {' '.join(str(labels.get(k)) for k in layout.RUN_PATH_LABELS)}"))
    for run, name in _probe_and_chain_runs(root):
        results.append(_directory(crate, root, run, manifest.MANIFEST_NAME, name))
    for name, points in tasks.items():
        results += _experiment_parts(crate, root, name, points)
    for sub in ("pipeline_info", layout.REPORT_DIR):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file() and not p.name.startswith("."):
                results.append(_file(crate, root, p.relative_to(root).as_posix()))
    return results


def _probe_and_chain_runs(root: Path) -> list[tuple[Path, str]]:
    """The run records a figure reads beside the features table's runs, with a name each: every
    side's probe runs (``probes/<probe>/<tool>``: cachegrind, Fig. 10) and chained pipelines'
    steps (``chains/<chain>/<rep>/<step>``, Fig. 3)."""
    found = []
    for side in sorted(p for p in root.iterdir() if p.is_dir()):
        for record in sorted(side.glob(f"{layout.PROBES_DIR}/*/*/{manifest.MANIFEST_NAME}")):
            run = record.parent
            found.append((run, f"probe {run.parent.name} of {run.name} on {side.name}"))
        for record in sorted(side.glob(f"{layout.CHAINS_DIR}/*/*/*/{manifest.MANIFEST_NAME}")):
            run = record.parent
            found.append((run, f"chained {run.parent.parent.name} step {run.name}, repeat {run.parent.name}, "
                               f"on {side.name}"))
    return found


def _experiment_parts(crate: ROCrate, root: Path, name: str, points: list[Path]) -> list[Any]:
    """An experiment's table (``experiments/<name>.csv``) and each task directory (a dataset
    with the sha256 of its listing, its ``point.json`` a part)."""
    parts = []
    table = experiments.table_path(root, name)
    if table.is_file():
        parts.append(_file(crate, root, table.relative_to(root).as_posix(), encodingFormat="text/csv",
                           description=f"table of the related experiment {name}"))
    for point in points:
        parts.append(_directory(crate, root, point, experiments.POINT_RECORD,
                                f"experiment {name} point {point.parent.name} rep {point.name} "
                                f"({point.parents[3].name})"))
    return parts


def _directory(crate: ROCrate, root: Path, path: Path, record_name: str, name: str) -> Dataset:
    """A run or task directory: a dataset with the sha256 of its listing, its JSON record
    (``record_name``) a part with its own sha256."""
    rel = path.relative_to(root).as_posix() + "/"
    crate.add(File(crate, None, rel + record_name, properties={
        "name": record_name, "sha256": file_sha256(path / record_name), "encodingFormat": "application/json"}))
    return crate.add(Dataset(crate, None, rel, properties={
        # One part: a single value, not a singleton array (RO-Crate 1.1's JSON-LD recommendation).
        "name": name, "sha256": directory_sha256(path), "hasPart": {"@id": rel + record_name}}))


def _write_metadata(crate: ROCrate, root: Path) -> Path:
    """The metadata file, written whole (tmp, rename), with the crate's context extended by the
    checksum term."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=root, prefix=".crate-") as tmp:
        crate.metadata.write(tmp)
        body = json.loads((Path(tmp) / METADATA_FILE).read_text())
    body["@context"] = [RO_CRATE_CONTEXT, SHA256_TERM]
    target = root / METADATA_FILE
    manifest.atomic_write_text(target, json.dumps(body, indent=2, sort_keys=True) + "\n")
    return target
