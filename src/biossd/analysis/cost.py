"""What one run of a pipeline costs on a rented cloud volume, from dated published prices.

A cloud block volume is billed for its provisioned size (and, for some, its provisioned IOPS)
per month, prorated to the second; both AWS and Google count a month as
:data:`HOURS_PER_MONTH` hours. A run holds the volume for its wall time, so its volume cost is
``(size_gib · usd_per_gib_month + billed_iops · usd_per_iops_month) / HOURS_PER_MONTH`` per
hour of the predicted wall time, where ``billed_iops`` is what the volume's row in
``study/reference/cloud_volumes.csv`` provisions beyond what its price includes. The volume is
the one the prediction modelled (that file's size and IOPS), so cost and time speak of the same
device.

A faster volume costs more per hour and is held for less time; what it saves in machine time
is usually worth more than the volume itself. biossd has no instance price to quote (it does not
know your machine type): give yours (``--instance_usd_per_hour``) and each target's cost per run
adds the machine's hours.

Prices are in ``study/reference/cloud_prices.csv``, one row per volume: the region, the price,
the source, the date it was published (empty where the source gives none) and the date it was
read. They are list prices; discounts, free tiers and other regions are not applied. A target
without a price row (a paper device, an NVMe drive you would buy, this host) has no cost per run.
"""

from __future__ import annotations

import math

import pandas as pd

from biossd.core.errors import BiossdError
from biossd.core.paths import REFERENCE_DIR
from biossd.host import devicemodels

PRICES = REFERENCE_DIR / "cloud_prices.csv"
#: Hours in a billing month, as both AWS and Google prorate a monthly price.
HOURS_PER_MONTH = 730.0
SECONDS_PER_HOUR = 3600.0
#: The dearest machine price a user can mean: on-demand prices of the largest cloud instances
#: (several hundred USD an hour in 2026) with a margin; a larger figure is a typo or an overflow.
MAX_INSTANCE_USD_PER_HOUR = 10_000.0
#: Each price row's fields; the numbers among them must be finite and not negative.
PRICE_FIELDS = ("device", "region", "usd_per_gib_month", "usd_per_iops_month", "iops_included", "source",
                "published", "retrieved", "note")
PRICE_NUMBERS = ("usd_per_gib_month", "usd_per_iops_month", "iops_included")


class CostError(BiossdError):
    pass


def prices() -> pd.DataFrame:
    """The price rows by device, each checked: every field present, numbers finite and ≥ 0, and
    the device a row of ``cloud_volumes.csv`` (the size and IOPS its cost is for)."""
    table = pd.read_csv(PRICES, dtype=str, keep_default_na=False)
    missing = [f for f in PRICE_FIELDS if f not in table.columns]
    if missing:
        raise CostError(f"{PRICES}: no column {', '.join(missing)}; each row needs {', '.join(PRICE_FIELDS)}")
    volumes = devicemodels.volumes()
    for row in table.itertuples():
        where = f"{PRICES.name}, row {row.device!r}"
        if row.device not in volumes:
            raise CostError(f"{where}: no such volume in {devicemodels.CLOUD_VOLUMES.name} "
                            f"(known: {', '.join(volumes)}): add its limits there first")
        if not row.source or not row.retrieved:
            raise CostError(f"{where}: a price needs its source and the date it was read")
        for field in PRICE_NUMBERS:
            try:
                value = float(getattr(row, field))
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or value < 0:
                raise CostError(f"{where}: {field} is {getattr(row, field)!r}, not a number ≥ 0")
    table = table.astype({f: float for f in PRICE_NUMBERS})
    return table.set_index("device")


def volume_usd_per_hour(device: str, table: pd.DataFrame | None = None) -> float:
    """What the volume ``device`` (its ``cloud_volumes.csv`` size and IOPS) costs per hour held;
    NaN for a device without a price."""
    table = prices() if table is None else table
    if device not in table.index:
        return math.nan
    price = table.loc[device]
    volume = devicemodels.volumes()[device]
    iops = max(float(volume["read_iops_qd32"]), float(volume["write_iops_qd32"]))
    monthly = (float(volume["size_gib"]) * price["usd_per_gib_month"]
               + max(0.0, iops - price["iops_included"]) * price["usd_per_iops_month"])
    return monthly / HOURS_PER_MONTH


def per_run(pipeline: pd.DataFrame, instance_usd_per_hour: float | None = None) -> pd.DataFrame:
    """``pipeline`` (one row per target, with ``target`` and ``predicted_wall_s``) with what a run
    costs there: ``volume_usd_per_hour``, ``volume_usd_per_run`` (the predicted wall time held)
    and, given the machine's hourly price, ``instance_usd_per_run`` and ``total_usd_per_run``;
    the price's ``price_region``, ``price_source`` and ``price_published``. NaN where the target
    has no price."""
    if instance_usd_per_hour is not None and not 0 <= instance_usd_per_hour <= MAX_INSTANCE_USD_PER_HOUR:
        raise CostError(f"--instance_usd_per_hour {instance_usd_per_hour}: give the machine's price per hour, from 0 to "
                        f"{MAX_INSTANCE_USD_PER_HOUR:,.0f} USD")
    table = prices()
    out = pipeline.copy()
    if out.empty:  # no target: the columns, no rows
        out = out.reindex(columns=[*out.columns, *(c for c in ("target", "predicted_wall_s") if c not in out)])
    hours = out["predicted_wall_s"].astype(float) / SECONDS_PER_HOUR
    out["volume_usd_per_hour"] = [volume_usd_per_hour(t, table) for t in out["target"]]
    out["volume_usd_per_run"] = out["volume_usd_per_hour"] * hours
    if instance_usd_per_hour is not None:
        out["instance_usd_per_run"] = instance_usd_per_hour * hours
        out["total_usd_per_run"] = out["volume_usd_per_run"] + out["instance_usd_per_run"]
    for field in ("region", "source", "published"):
        out[f"price_{field}"] = out["target"].map(table[field]).where(out["target"].isin(table.index))
    return out
