"""A run's cost on a cloud volume: the published prices, their checks, and the sums."""

import math

import pandas as pd
import pytest

from biossd.analysis import cost
from biossd.host import devicemodels


def test_every_cloud_volume_has_a_dated_sourced_price():
    table = cost.prices()
    clouds = [name for name, row in devicemodels.volumes().items() if row["kind"] != "NVMe"]
    assert sorted(table.index) == sorted(clouds)
    assert (table["source"] != "").all() and (table["retrieved"] != "").all()


def test_a_volume_costs_its_size_and_billed_iops_over_a_730_hour_month():
    table = cost.prices()
    # gp3: 1024 GiB at 0.08, its 3000 IOPS included; io2: 1024 GiB at 0.125 and 16000 IOPS at 0.065
    assert cost.volume_usd_per_hour("aws-gp3", table) == pytest.approx(1024 * 0.08 / 730)
    assert cost.volume_usd_per_hour("aws-io2", table) == pytest.approx((1024 * 0.125 + 16000 * 0.065) / 730)
    assert math.isnan(cost.volume_usd_per_hour("nvme-pcie4", table))


def test_a_run_pays_for_the_predicted_wall_time_and_the_machine_only_when_priced():
    pipeline = pd.DataFrame({"target": ["aws-st1", "aws-gp3", "Samsung 840 Pro"],
                             "predicted_wall_s": [7200.0, 3600.0, 3600.0]})
    volume_only = cost.per_run(pipeline)
    assert "total_usd_per_run" not in volume_only
    st1, gp3, ssd = volume_only.itertuples()
    assert st1.volume_usd_per_run == pytest.approx(2 * 1024 * 0.045 / 730)
    assert gp3.volume_usd_per_run == pytest.approx(1024 * 0.08 / 730)
    assert math.isnan(ssd.volume_usd_per_run) and pd.isna(ssd.price_source)
    assert gp3.price_region == "us-east-1" and gp3.price_published

    machine = cost.per_run(pipeline, instance_usd_per_hour=0.5).set_index("target")
    # the slower volume is cheaper per hour and dearer per run once the machine waits on it
    assert machine.loc["aws-st1", "volume_usd_per_hour"] < machine.loc["aws-gp3", "volume_usd_per_hour"]
    assert machine.loc["aws-st1", "total_usd_per_run"] > machine.loc["aws-gp3", "total_usd_per_run"]
    assert machine.loc["Samsung 840 Pro", "instance_usd_per_run"] == pytest.approx(0.5)


def test_a_bad_machine_price_or_price_row_is_refused_naming_it(tmp_path, monkeypatch):
    with pytest.raises(cost.CostError, match="--instance_usd_per_hour"):
        cost.per_run(pd.DataFrame({"target": [], "predicted_wall_s": []}), instance_usd_per_hour=-1.0)
    bad = tmp_path / "cloud_prices.csv"
    text = cost.PRICES.read_text()
    bad.write_text(text.replace("aws-sc1,us-east-1,0.015", "aws-sc1,us-east-1,cheap"))
    monkeypatch.setattr(cost, "PRICES", bad)
    with pytest.raises(cost.CostError, match=r"row 'aws-sc1': usd_per_gib_month is 'cheap'"):
        cost.prices()
    bad.write_text(text.replace("aws-sc1,", "aws-sc9,"))
    with pytest.raises(cost.CostError, match="aws-sc9.*no such volume"):
        cost.prices()


def test_no_target_gives_the_columns_and_no_rows():
    out = cost.per_run(pd.DataFrame())
    assert out.empty and "volume_usd_per_run" in out
