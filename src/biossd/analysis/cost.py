"""What one run costs on rented cloud storage, from dated published prices, and which storage to
rent: the cheapest within :data:`CHEAPEST_WITHIN` of the fastest.

A cloud block volume is billed for its provisioned size, and some for IOPS and throughput
provisioned beyond what the price includes, per month, prorated to the second; AWS counts a month
as :data:`HOURS_PER_MONTH` hours. A run holds the volume for its wall time, so its volume cost is
``(size_gib · usd_per_gib_month + billed_iops · usd_per_iops_month + billed_mibs ·
usd_per_mibs_month) / HOURS_PER_MONTH`` per hour of the predicted wall time, where the billed
amounts are what the volume's row in ``study/reference/cloud_storage.csv`` (the very volume the
prediction modelled, :mod:`biossd.host.models.cloudmodel`) provisions beyond what its price includes.
An instance-store NVMe drive is part of the instance's price: it costs nothing on top.

biossd has no primary source for instance prices: give yours (``--instance_usd_per_hour``) and
each target's cost per run adds the machine's hours, usually the larger part.

Prices are in ``study/reference/cloud_prices.csv``, one row per volume of ``cloud_storage.csv``:
the region, the price, the source, the date it was published (empty where the source gives none)
and the date it was read. Where no primary source could be read, the row's numbers are empty and
the volume is *unpriced*; a part of a price that was not read (an empty per-unit price) leaves
unpriced a volume that provisions beyond what is included. They are list prices; discounts, free
tiers and other regions are not applied.
"""

from __future__ import annotations

import math

import pandas as pd

from biossd.core.errors import BiossdError
from biossd.core.paths import REFERENCE_DIR
from biossd.host.models import cloudmodel

PRICES = REFERENCE_DIR / "cloud_prices.csv"
#: Hours in a billing month, as AWS prorates a monthly price.
HOURS_PER_MONTH = 730.0
SECONDS_PER_HOUR = 3600.0
MIB = 1 << 20
#: The dearest machine price a user can mean: on-demand prices of the largest cloud instances
#: (several hundred USD an hour in 2026) with a margin; a larger figure is a typo or an overflow.
MAX_INSTANCE_USD_PER_HOUR = 10_000.0
#: Each price row's fields; the numbers among them are empty (not read) or finite and not negative.
PRICE_FIELDS = ("device", "region", "usd_per_gib_month", "usd_per_iops_month", "iops_included",
                "usd_per_mibs_month", "mibs_included", "source", "published", "retrieved", "note")
PRICE_NUMBERS = ("usd_per_gib_month", "usd_per_iops_month", "iops_included", "usd_per_mibs_month", "mibs_included")
#: The storage to rent is the cheapest whose predicted time is within this share of the fastest's:
#: a tenth, about the prediction's median error on the emulated devices (docs/cloud.md).
CHEAPEST_WITHIN = 0.10
#: What every cost figure rests on, whatever the target.
ASSUMES = (f"list price prorated over a {HOURS_PER_MONTH:g}-hour month; the volume held for the predicted time; "
           "no discounts, free tiers, snapshots or data transfer")


class CostError(BiossdError):
    pass


def prices() -> pd.DataFrame:
    """The price rows by device, each checked: every field present, numbers empty or finite and
    ≥ 0, a priced row's source and the date it was read, and the device a volume of
    ``cloud_storage.csv`` (the size, IOPS and throughput its cost is for)."""
    table = pd.read_csv(PRICES, dtype=str, keep_default_na=False)
    missing = [f for f in PRICE_FIELDS if f not in table.columns]
    if missing:
        raise CostError(f"{PRICES}: no column {', '.join(missing)}; each row needs {', '.join(PRICE_FIELDS)}")
    volumes = cloudmodel.volumes()
    for row in table.itertuples():
        where = f"{PRICES.name}, row {row.device!r}"
        if row.device not in volumes:
            raise CostError(f"{where}: no such volume in {cloudmodel.STORAGE.name} "
                            f"(known: {', '.join(volumes)}): add its limits there first")
        if not row.retrieved:
            raise CostError(f"{where}: give the date the price was read (or found missing) in 'retrieved'")
        if row.usd_per_gib_month and not row.source:
            raise CostError(f"{where}: a price needs its source")
        for field in PRICE_NUMBERS:
            text = getattr(row, field)
            try:
                value = float(text) if text else 0.0
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or value < 0:
                raise CostError(f"{where}: {field} is {text!r}, not a number ≥ 0 (or empty where it was not read)")
    numbers = table[list(PRICE_NUMBERS)].replace("", math.nan).astype(float)
    return table.drop(columns=list(PRICE_NUMBERS)).join(numbers).set_index("device")


def _billed(provisioned: float, included: float, usd_per_unit: float) -> float:
    """What ``provisioned`` units beyond ``included`` cost a month (nothing included when empty);
    NaN when some are billed at a price that was not read."""
    over = max(0.0, provisioned - (0.0 if math.isnan(included) else included))
    return 0.0 if over == 0 else over * usd_per_unit


def volume_of(target: str) -> str:
    """The volume of a cloud target's name (``VOLUME[@INSTANCE]``, with or without ``cloud:``)."""
    return str(target).removeprefix(cloudmodel.CLOUD_PREFIX).partition("@")[0]


def volume_usd_per_hour(device: str, table: pd.DataFrame | None = None) -> float:
    """What the volume ``device`` (its ``cloud_storage.csv`` size, IOPS and throughput) costs per
    hour held; NaN for a device without a price, or unpriced."""
    table = prices() if table is None else table
    if device not in table.index:
        return math.nan
    price = table.loc[device]
    volume = cloudmodel.volumes()[device]
    monthly = (volume.size_gib * price["usd_per_gib_month"]
               + _billed(max(volume.read_iops, volume.write_iops), price["iops_included"], price["usd_per_iops_month"])
               + _billed((volume.throughput_bps or 0.0) / MIB, price["mibs_included"], price["usd_per_mibs_month"]))
    return monthly / HOURS_PER_MONTH


def _check_instance_price(instance_usd_per_hour: float | None) -> None:
    if instance_usd_per_hour is not None and not 0 <= instance_usd_per_hour <= MAX_INSTANCE_USD_PER_HOUR:
        raise CostError(f"--instance_usd_per_hour {instance_usd_per_hour}: give the machine's price per hour, from 0 to "
                        f"{MAX_INSTANCE_USD_PER_HOUR:,.0f} USD")


def per_run(pipeline: pd.DataFrame, instance_usd_per_hour: float | None = None,
            seconds: str = "predicted_wall_s") -> pd.DataFrame:
    """``pipeline`` (one row per target, with ``target`` and the time ``seconds``) with what a run
    costs there: ``volume_usd_per_hour``, ``volume_usd_per_run`` (the time held) and, given the
    machine's hourly price, ``instance_usd_per_run`` and ``total_usd_per_run``; the price's
    ``price_region``, ``price_source``, ``price_published`` and ``price_note``. NaN where the
    target has no price."""
    _check_instance_price(instance_usd_per_hour)
    table = prices()
    out = pipeline.copy()
    if out.empty:  # no target: the columns, no rows
        out = out.reindex(columns=[*out.columns, *(c for c in ("target", seconds) if c not in out)])
    hours = out[seconds].astype(float) / SECONDS_PER_HOUR
    devices = out["target"].map(volume_of)
    out["volume_usd_per_hour"] = [volume_usd_per_hour(d, table) for d in devices]
    out["volume_usd_per_run"] = out["volume_usd_per_hour"] * hours
    if instance_usd_per_hour is not None:
        out["instance_usd_per_run"] = instance_usd_per_hour * hours
        out["total_usd_per_run"] = out["volume_usd_per_run"] + out["instance_usd_per_run"]
    for field in ("region", "source", "published", "note"):
        out[f"price_{field}"] = devices.map(table[field]).where(devices.isin(table.index))
    return out


def cheapest_within(options: pd.DataFrame, seconds: str, within: float = CHEAPEST_WITHIN) -> dict:
    """Which of ``options`` (cloud targets, with :func:`per_run`'s columns and the time ``seconds``)
    to rent: the fastest, and the cheapest per run among those within ``within`` of its time —
    by the total with the machine's price, else by the volume's own cost (the machine's differs by
    at most ``within`` between them); unpriced options are named, never chosen."""
    if options.empty or options[seconds].isna().all():
        return {"choice": None, "why": "no cloud target was predicted"}
    fastest = options.loc[options[seconds].astype(float).idxmin()]
    near = options[options[seconds].astype(float) <= float(fastest[seconds]) * (1 + within)]
    by = "total_usd_per_run" if "total_usd_per_run" in near else "volume_usd_per_run"
    priced = near[near[by].notna()]
    unpriced = sorted(near.loc[near[by].isna(), "target"])
    out = {"fastest": fastest["target"], "fastest_s": float(fastest[seconds]), "within_share": within,
           "unpriced_within": ", ".join(unpriced), "ranked_by": by}
    if priced.empty:
        return {**out, "choice": None, "why": f"every target within {within:.0%} of the fastest is unpriced"}
    best = priced.loc[priced[by].astype(float).idxmin()]
    instance = ("the machine at the price given" if by == "total_usd_per_run"
                else f"the machine unpriced (give --instance_usd_per_hour): within {within:.0%} of the fastest its "
                     f"cost differs by at most {within:.0%}")
    return {**out, "choice": best["target"], "choice_s": float(best[seconds]),
            "volume_usd_per_run": float(best["volume_usd_per_run"]),
            "instance_usd_per_run": float(best["instance_usd_per_run"]) if "instance_usd_per_run" in best else math.nan,
            "why": f"cheapest by {by} of {len(priced)} priced within {within:.0%} of the fastest",
            "assumes": f"{ASSUMES}; {instance}; price: {best.get('price_source')} "
                       f"({best.get('price_published') or 'undated'}, {best.get('price_region') or 'no region'})"}
