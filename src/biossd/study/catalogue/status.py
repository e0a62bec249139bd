"""``biossd catalogue status``: for every catalogue entry, what this machine can do with it,
found by checking — the native tool's reported version, the recipe files, the unpacked image,
and the smoke test run natively and in the container."""

from __future__ import annotations

from typing import Any

from biossd.core.paths import REPO_ROOT
from biossd.study import catalogue
from biossd.study.catalogue import Entry, containers, smoke

STATUS_KEYS = ("id", "paper_name", "native_installed", "container_recipe", "container_built",
               "smoke_native", "smoke_container", "substitute_of")


def entry_status(entry: Entry, run_smoke: bool = True) -> dict[str, Any]:
    """One row; ``None`` where a check does not apply (pipelines; smoke of an entry without one)."""
    row: dict[str, Any] = {"id": entry.id, "paper_name": entry.data["paper_name"]}
    if entry.kind == "pipeline":
        row.update({k: None for k in STATUS_KEYS[2:]})
        row["steps"] = entry.data["steps"]
        return row
    recipes = [REPO_ROOT / entry.data["container"][k] for k in ("dockerfile", "apptainer")]
    row["native_installed"] = catalogue.version_matches(entry.installed_version(), str(entry.data["version"]))
    row["container_recipe"] = all(p.is_file() for p in recipes)
    row["container_built"] = containers.built(entry)
    row["smoke_native"] = row["smoke_container"] = None
    row["details"] = {}
    if entry.data.get("smoke") is not None and entry.data["status"] == "runnable":
        if not run_smoke:
            row["smoke_native"] = row["smoke_container"] = None
        else:
            native = smoke.run(entry) if row["native_installed"] else smoke.SmokeResult(False, "not installed natively")
            row["smoke_native"] = native.passed
            row["details"]["smoke_native"] = native.detail
            if row["container_built"]:
                inside = smoke.run(entry, lambda work, argv: containers.ch_run_argv(entry, work, argv))
            else:
                inside = smoke.SmokeResult(False, "container not built here")
            row["smoke_container"] = inside.passed
            row["details"]["smoke_container"] = inside.detail
    row["substitute_of"] = entry.data.get("substitute_of")
    row["status"] = entry.data["status"]
    if entry.data["status"] != "runnable":
        row["details"]["status_reason"] = entry.data["status_reason"]
    return row


def status_table(run_smoke: bool = True) -> list[dict[str, Any]]:
    return [entry_status(e, run_smoke) for e in catalogue.load_all()]


def format_table(rows: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        return "-" if value is None else ("yes" if value is True else "no" if value is False else str(value))

    header = ("id", "paper name", "native", "recipe", "built", "smoke native", "smoke container", "substitute of")
    lines = [[cell(r.get(k)) for k in STATUS_KEYS] for r in rows]
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)
