"""A run's cost on rented cloud storage: the published prices, their checks, the sums, and which
storage to rent."""

import math

import pandas as pd
import pytest

from biossd.analysis import cost
from biossd.host.models import cloudmodel


def test_every_cloud_volume_has_a_price_row_dated_and_sourced_or_says_why_it_is_unpriced():
    table = cost.prices()
    assert sorted(table.index) == sorted(cloudmodel.volumes())
    assert (table["retrieved"] != "").all()
    priced = table[table["usd_per_gib_month"].notna()]
    assert (priced["source"] != "").all() and len(priced) >= 4
    unpriced = table[table["usd_per_gib_month"].isna()]
    assert unpriced["note"].str.startswith("unpriced").all() and "aws-sc1" in unpriced.index
    assert not table["source"].str.contains("menuvis1|developmentseed", regex=True).any(), "primary sources only"


def test_a_volume_costs_its_size_and_what_it_provisions_beyond_the_included_over_a_730_hour_month():
    table = cost.prices()
    # gp3 at its baseline: 1024 GiB at 0.08, its 3000 IOPS and 125 MiB/s included
    assert cost.volume_usd_per_hour("aws-gp3-baseline", table) == pytest.approx(1024 * 0.08 / 730)
    # io2: 1024 GiB at 0.125 and every one of its 16000 IOPS at 0.065
    assert cost.volume_usd_per_hour("aws-io2-block-express", table) == pytest.approx((1024 * 0.125 + 16000 * 0.065) / 730)
    # gp3 provisioned to 1000 MiB/s: the price of throughput beyond 125 MiB/s was not read
    assert math.isnan(cost.volume_usd_per_hour("aws-gp3-provisioned", table))
    assert cost.volume_usd_per_hour("aws-m6id-large-nvme", table) == 0.0, "part of the instance's price"
    assert math.isnan(cost.volume_usd_per_hour("aws-sc1", table)) and math.isnan(cost.volume_usd_per_hour("nvme", table))


def test_a_run_pays_for_the_predicted_wall_time_and_the_machine_only_when_priced():
    pipeline = pd.DataFrame({"target": ["aws-st1@m6id.large", "aws-gp3-baseline@m6id.large", "Samsung 840 Pro"],
                             "predicted_wall_s": [7200.0, 3600.0, 3600.0]})
    volume_only = cost.per_run(pipeline)
    assert "total_usd_per_run" not in volume_only
    st1, gp3, ssd = volume_only.itertuples()
    assert st1.volume_usd_per_run == pytest.approx(2 * st1.volume_usd_per_hour)
    assert gp3.volume_usd_per_run == pytest.approx(1024 * 0.08 / 730)
    assert math.isnan(ssd.volume_usd_per_run) and pd.isna(ssd.price_source)
    assert gp3.price_region == "us-east-1" and gp3.price_published

    machine = cost.per_run(pipeline, instance_usd_per_hour=0.5).set_index("target")
    # the slower volume is cheaper per hour and dearer per run once the machine waits on it
    st1, gp3 = machine.loc["aws-st1@m6id.large"], machine.loc["aws-gp3-baseline@m6id.large"]
    assert st1["volume_usd_per_hour"] < gp3["volume_usd_per_hour"]
    assert st1["total_usd_per_run"] > gp3["total_usd_per_run"]
    assert machine.loc["Samsung 840 Pro", "instance_usd_per_run"] == pytest.approx(0.5)


def _options(times, instance_usd_per_hour=None):
    table = pd.DataFrame({"target": list(times), "predicted_wall_s": list(times.values())})
    return cost.per_run(table, instance_usd_per_hour)


def test_the_storage_to_rent_is_the_cheapest_within_a_tenth_of_the_fastest():
    times = {"aws-io2-block-express@m6id.large": 100.0, "aws-gp3-baseline@m6id.large": 108.0,
             "aws-st1@m6id.large": 300.0, "aws-sc1@m6id.large": 105.0}
    got = cost.cheapest_within(_options(times), "predicted_wall_s")
    assert got["fastest"] == "aws-io2-block-express@m6id.large"
    assert got["choice"] == "aws-gp3-baseline@m6id.large", "8% slower, and a fraction of io2's price"
    assert got["unpriced_within"] == "aws-sc1@m6id.large", "as fast, but unpriced: named, not chosen"
    assert "unpriced" in got["assumes"] and "730-hour month" in got["assumes"]
    slow = cost.cheapest_within(_options({**times, "aws-gp3-baseline@m6id.large": 111.0}), "predicted_wall_s")
    assert slow["choice"] == "aws-io2-block-express@m6id.large", "11% slower is out of the band"
    # the instance-store NVMe costs nothing on top of the instance
    nvme = cost.cheapest_within(_options({**times, "aws-m6id-large-nvme@m6id.large": 95.0}, 0.2), "predicted_wall_s")
    assert nvme["choice"] == "aws-m6id-large-nvme@m6id.large" and nvme["ranked_by"] == "total_usd_per_run"
    none = cost.cheapest_within(_options({"aws-sc1": 10.0, "azure-premium-ssd-v2": 10.5}), "predicted_wall_s")
    assert none["choice"] is None and "unpriced" in none["why"]


def test_a_bad_machine_price_or_price_row_is_refused_naming_it(tmp_path, monkeypatch):
    with pytest.raises(cost.CostError, match="--instance_usd_per_hour"):
        cost.per_run(pd.DataFrame({"target": [], "predicted_wall_s": []}), instance_usd_per_hour=-1.0)
    bad = tmp_path / "cloud_prices.csv"
    text = cost.PRICES.read_text()
    bad.write_text(text.replace("aws-st1,us-east-1,0.045", "aws-st1,us-east-1,cheap"))
    monkeypatch.setattr(cost, "PRICES", bad)
    with pytest.raises(cost.CostError, match=r"row 'aws-st1': usd_per_gib_month is 'cheap'"):
        cost.prices()
    bad.write_text(text.replace("aws-sc1,", "aws-sc9,"))
    with pytest.raises(cost.CostError, match="aws-sc9.*no such volume"):
        cost.prices()


def test_no_target_gives_the_columns_and_no_rows():
    out = cost.per_run(pd.DataFrame())
    assert out.empty and "volume_usd_per_run" in out


def test_the_prediction_on_an_emulated_volume_is_judged_per_volume_and_what_is_left_out_says_why():
    from biossd.analysis import today

    measured, predicted = today.MEASURED, today.PREDICTED
    storage = pd.DataFrame({
        "tool": ["a", "b", "c", "d", "a", "b"], "storage": ["gp3", "gp3", "gp3", "gp3", "st1", "io2"],
        "basis": [measured, measured, predicted, measured, measured, predicted],
        "runtime_s": [10.0, 10.0, 5.0, 8.0, 4.0, 1.0], "predicted_s": [11.0, 13.0, 5.0, float("nan"), 4.2, 1.0],
        "why": ["", "", "", "its trace lost events", "", ""]})
    errors = today.prediction_errors(storage)
    assert list(zip(errors["storage"], errors["tool"])) == [("gp3", "a"), ("gp3", "b"), ("st1", "a")]
    summary = today.error_summary(errors).set_index("storage")
    assert summary.loc["gp3", "median_abs_error"] == pytest.approx(0.2) and summary.loc["gp3", "worst_tool"] == "b"
    assert not summary.loc["gp3", "meets"] and summary.loc["st1", "meets"]
    out = today.left_out(storage).set_index("tool")["why"]
    assert out["c"] == "no run on the volume ended ok: only a bound"
    assert out["d"] == "no prediction: its trace lost events" and "b" not in out, "io2 was not measured"


def test_a_tool_a_volume_only_bounds_is_set_against_the_bound():
    """Every run of c and e on gp3 reached the time limit: each prediction is set against the
    shortest censored runtime; c's reaches it (agrees), e's does not."""
    from types import SimpleNamespace

    from biossd.analysis import today

    storage = pd.DataFrame({"tool": ["c", "e"], "storage": ["gp3", "gp3"], "basis": [today.PREDICTED] * 2,
                            "runtime_s": [70.0, 30.0], "predicted_s": [70.0, 30.0], "low_s": [50.0, 20.0],
                            "high_s": [90.0, 40.0], "why": ["", ""]})
    storage = pd.concat([storage, pd.DataFrame({"tool": ["a"], "storage": ["gp3"], "basis": [today.MEASURED],
                                                "runtime_s": [10.0], "predicted_s": [11.0], "why": [""]})])
    runs = pd.DataFrame({"host": ["h"] * 4, "storage": ["gp3", "gp3", "gp3", "ssd"], "tool": ["c", "c", "e", "e"],
                         "outcome": ["timeout", "timeout", "timeout", "ok"], "runtime_s": [60.4, 60.2, 60.3, 5.0]})
    devices = {"h-gp3": {"emulation": {"emulated": True, "profile": "cloud:gp3"}}, "h-ssd": {"emulation": {}}}
    found = today.bounds(SimpleNamespace(today_storage=storage, rs=SimpleNamespace(runs=runs, devices=devices)))
    found = found.set_index("tool")
    assert found.loc["c", "bound_s"] == pytest.approx(60.2) and found.loc["c", "agrees"]
    assert not found.loc["e", "agrees"] and found.loc["e", "high_s"] == 40.0
    assert "a" not in found.index, "a was measured: it is in the error, not bounded"
