"""The paper's tools on today's storage: the question of Lee, Min and Yoon (2015) — would an SSD
make this tool faster than a hard disk (§1) — asked of what one rents in 2026 (docs/cloud.md).

Each tool's baseline runs on the study's fast side are predicted (:mod:`biossd.analysis.predict`)
on every cloud volume of ``study/reference/cloud_storage.csv``: its provider's behind one instance,
:data:`INSTANCE`, with that instance's own NVMe drive, and the other providers' alone
(:func:`biossd.host.models.cloudmodel.storage_behind`),
each scaled as the study's hard disks are (its burst credits by D,
:meth:`biossd.host.models.cloudmodel.CloudTarget.scaled`). Where the study ran a class on an emulated cloud
volume (``--emulate CLASS=cloud:VOLUME@INSTANCE``), that storage's runtimes are the measured ones,
the prediction kept beside them. Each row carries what a run costs on the volume
(:func:`biossd.analysis.cost.per_run`) and whether it is the storage to rent for the tool, the
cheapest within :data:`biossd.analysis.cost.CHEAPEST_WITHIN` of the fastest
(:func:`biossd.analysis.cost.cheapest_within`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biossd.analysis import cost, predict, speedup
from biossd.host.models import cloudmodel, devicemodels

#: The instance every volume sits behind: 2 vCPUs, as the project's VM, with its own NVMe drive,
#: and an EBS limit (3,600 IOPS, 81.25 MB/s at baseline) that binds below a provisioned volume's.
INSTANCE = "m6id.large"
MEASURED, PREDICTED = "measured", "predicted"
COLUMNS = ["tool", "storage", "backing", "basis", "runtime_s", "low_s", "high_s", "predicted_s", "fast_side_s",
           "speedup_over_fast_side", "runs", "volume_usd_per_hour", "volume_usd_per_run", "rent", "price_source",
           "price_published", "why"]


def targets(scale: float = 1.0, instance: str = INSTANCE) -> list[cloudmodel.CloudTarget]:
    """The storage on offer with ``instance`` (:func:`biossd.host.models.cloudmodel.storage_behind`), as
    targets scaled by the study's D."""
    return [devicemodels.load_target(f"cloud:{spec}").scaled(scale) for spec in cloudmodel.storage_behind(instance)]


def measured_sides(devices: dict[str, dict]) -> dict[str, str]:
    """Which side ran on which emulated cloud storage: spec → side, from the sides' device records."""
    out = {}
    for side, record in devices.items():
        profile = str((record.get("emulation") or {}).get("profile") or "")
        if (record.get("emulation") or {}).get("emulated") and profile.startswith(cloudmodel.CLOUD_PREFIX):
            out[profile.removeprefix(cloudmodel.CLOUD_PREFIX)] = side
    return out


def table(a, instance: str = INSTANCE) -> pd.DataFrame:
    """Per tool and storage behind ``instance`` (:data:`COLUMNS`): the runtime (measured where a
    class ran on it, else predicted from the fast side's runs, with its interval), the speedup over
    the fast side, the cost of a run on the volume, and whether it is the one to rent."""
    rows = speedup.side_rows(a.baseline_runs, a.features_side)
    ok = rows[rows["outcome"] == speedup.OK]
    found = targets(a.disk_scale, instance)
    offered = {t.name for t in found}  # and a volume a class ran on that is not on offer as such (…+spent)
    found += [devicemodels.load_target(f"{cloudmodel.CLOUD_PREFIX}{spec}").scaled(a.disk_scale)
              for spec in sorted(measured_sides(a.rs.devices)) if spec not in offered]
    preds = predict.predict_result_set(a.rs, found, ok)
    good = preds[preds["why"] == ""]
    means = good.groupby(["tool", "target"]).agg(predicted_s=("predicted_runtime_s", "mean"),
                                                 low_s=("predicted_low_s", "mean"), high_s=("predicted_high_s", "mean"),
                                                 runs=("predicted_runtime_s", "size"))
    fast = ok.groupby("tool")["runtime_s"].mean()
    measured = {spec: speedup.side_rows(a.baseline_runs, side) for spec, side in measured_sides(a.rs.devices).items()}
    why = preds[preds["why"] != ""].groupby(["tool", "target"])["why"].first()
    out = []
    for tool in sorted(ok["tool"].unique()):
        for t in found:
            key = (tool, t.name)
            p = means.loc[key] if key in means.index else None
            row = {"tool": tool, "storage": t.name, "backing": t.volume.backing, "fast_side_s": fast.get(tool, np.nan),
                   "predicted_s": p["predicted_s"] if p is not None else np.nan,
                   "low_s": p["low_s"] if p is not None else np.nan, "high_s": p["high_s"] if p is not None else np.nan,
                   "runs": int(p["runs"]) if p is not None else 0, "basis": PREDICTED, "why": why.get(key, "")}
            row["runtime_s"] = row["predicted_s"]
            side_runs = measured.get(t.name)
            if side_runs is not None:
                done = side_runs[(side_runs["tool"] == tool) & (side_runs["outcome"] == speedup.OK)]["runtime_s"]
                if len(done):
                    row.update(basis=MEASURED, runtime_s=float(done.mean()), low_s=float(done.min()),
                               high_s=float(done.max()), runs=len(done))
            out.append(row)
    frame = pd.DataFrame(out, columns=[c for c in COLUMNS if c not in ("speedup_over_fast_side", "volume_usd_per_hour",
                                                                        "volume_usd_per_run", "rent", "price_source",
                                                                        "price_published")])
    frame["speedup_over_fast_side"] = frame["fast_side_s"] / frame["runtime_s"]
    priced = cost.per_run(frame.rename(columns={"storage": "target"}), seconds="runtime_s").rename(columns={"target": "storage"})
    priced["rent"] = False
    for tool, group in priced.groupby("tool"):
        choice = cost.cheapest_within(group.rename(columns={"storage": "target"}), "runtime_s").get("choice")
        priced.loc[(priced["tool"] == tool) & (priced["storage"] == choice), "rent"] = True
    return priced.reindex(columns=COLUMNS)


#: The prediction's targets where a class ran on an emulated cloud volume (docs/cloud.md): the
#: median |error| over its tools, and the worst.
MEDIAN_ERROR, WORST_ERROR = 0.10, 0.25


def prediction_errors(storage: pd.DataFrame) -> pd.DataFrame:
    """Per emulated cloud volume the study ran a class on, and tool: the measured and predicted
    mean runtimes and the error (predicted / measured - 1), from :func:`table`; a tool whose
    native runs could not be predicted is left out, as is one whose every run on the volume
    reached the time limit (only a lower bound: no mean)."""
    rows = storage[(storage["basis"] == MEASURED) & storage["predicted_s"].notna() & storage["runtime_s"].notna()]
    return pd.DataFrame({"storage": rows["storage"], "tool": rows["tool"], "measured_s": rows["runtime_s"],
                         "predicted_s": rows["predicted_s"],
                         "error": rows["predicted_s"] / rows["runtime_s"] - 1}).reset_index(drop=True)


def left_out(storage: pd.DataFrame) -> pd.DataFrame:
    """The tools :func:`prediction_errors` leaves out on each emulated cloud volume the study ran,
    and why: no run on the volume ended ok (each reached the time limit or failed: only a bound),
    or the fast side's runs have no prediction there (the prediction's own reason)."""
    measured = set(storage.loc[storage["basis"] == MEASURED, "storage"])
    rows = storage[storage["storage"].isin(measured)
                   & ~((storage["basis"] == MEASURED) & storage["predicted_s"].notna() & storage["runtime_s"].notna())]
    why = np.where(rows["basis"] != MEASURED, "no run on the volume ended ok: only a bound",
                   "no prediction: " + rows["why"].fillna("").astype(str))
    return pd.DataFrame({"storage": rows["storage"], "tool": rows["tool"], "why": why}).reset_index(drop=True)


def error_summary(errors: pd.DataFrame) -> pd.DataFrame:
    """Per volume of :func:`prediction_errors`: its tools, the median and the worst |error| (and
    whose), and whether both meet :data:`MEDIAN_ERROR` and :data:`WORST_ERROR`."""
    out = []
    for storage, g in errors.groupby("storage"):
        worst = g["error"].abs().idxmax()
        median, most = float(g["error"].abs().median()), float(g["error"].abs().max())
        out.append({"storage": storage, "tools": len(g), "median_abs_error": median, "worst_abs_error": most,
                    "worst_tool": g.loc[worst, "tool"], "meets": median <= MEDIAN_ERROR and most <= WORST_ERROR})
    return pd.DataFrame(out, columns=["storage", "tools", "median_abs_error", "worst_abs_error", "worst_tool", "meets"])


def bounds(a) -> pd.DataFrame:
    """The tools an emulated cloud volume only bounds (:func:`left_out` because every run there
    reached the time limit): the prediction and its interval beside the shortest censored runtime,
    and whether the prediction agrees with the bound (reaches it) — how a censored tool still
    checks the prediction."""
    table = a.today_storage.set_index(["storage", "tool"])
    side_of = measured_sides(a.rs.devices)
    runs = a.rs.runs.assign(side=a.rs.runs["host"].astype(str) + "-" + a.rs.runs["storage"].astype(str))
    out = []
    for r in left_out(a.today_storage).itertuples():
        censored = runs[(runs["side"] == side_of.get(r.storage)) & (runs["tool"] == r.tool)
                        & (runs["outcome"] == speedup.TIMEOUT)]
        if censored.empty:
            continue
        row = table.loc[(r.storage, r.tool)]
        bound = float(censored["runtime_s"].min())
        out.append({"storage": r.storage, "tool": r.tool, "bound_s": bound, "predicted_s": float(row["predicted_s"]),
                    "low_s": float(row["low_s"]), "high_s": float(row["high_s"]),
                    "agrees": bool(row["predicted_s"] >= bound)})
    return pd.DataFrame(out, columns=["storage", "tool", "bound_s", "predicted_s", "low_s", "high_s", "agrees"])
