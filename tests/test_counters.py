"""perf and cachegrind output parsing, device facts and the systemd cap's command line."""

from pathlib import Path

from biossd.host import cgroups, devices
from biossd.measure import counters

PERF = """# started on Sun Nov 22 01:04:24 2026

0.66,msec,task-clock,657923,100.00,0.328,CPUs utilized
64,,page-faults,657923,100.00,97.276,K/sec
<not supported>,,cycles,0,100.00,,
"""

CACHEGRIND = """==123== I refs:        1,000,000
==123== I1  misses:        1,000
==123== LLi misses:          500
==123== D refs:          400,000  (300,000 rd   + 100,000 wr)
==123== D1  misses:        4,000  (  3,000 rd   +   1,000 wr)
==123== LLd misses:        2,000  (  1,500 rd   +     500 wr)
==123== LL refs:           5,000  (  4,000 rd   +   1,000 wr)
==123== LL misses:         2,500  (  2,000 rd   +     500 wr)
"""


def test_perf_csv():
    counts = counters.parse_perf_csv(PERF)
    assert counts["task-clock"] == {"value": 0.66, "unit": "msec", "enabled_pct": 100.0}
    assert counts["page-faults"]["value"] == 64
    assert counts["cycles"]["value"] is None


def test_cachegrind_totals_and_ratios(tmp_path):
    (tmp_path / "cachegrind.log.123").write_text(CACHEGRIND)
    (tmp_path / "cachegrind.log.124").write_text(CACHEGRIND.replace("==123==", "==124=="))
    record = counters.cachegrind_record(tmp_path)
    assert record["totals"]["I_refs"] == 2_000_000 and record["totals"]["D1_misses"] == 8_000
    assert record["D1_miss_ratio"] == 0.01 and record["LLd_miss_ratio"] == 0.005


def test_default_events_follow_the_pmu():
    events = counters.default_events()
    assert ("cycles" in events) == counters.has_pmu()
    assert "task-clock" in events


def test_systemd_run_caps_ram_not_swap():
    argv = cgroups.systemd_run_argv(1 << 30, "biossd-1-ab.scope", user=True)
    assert argv[:4] == ["systemd-run", "--user", "--scope", "--quiet"]
    assert "--property=MemoryMax=1073741824" in argv and "--property=MemorySwapMax=infinity" in argv
    assert argv[-1] == "--"
    assert "--user" not in cgroups.systemd_run_argv(1 << 30, "u.scope", user=False)


def test_device_and_mount_facts_of_this_disk():
    name = devices.device_of_path(Path("/"))
    facts = devices.device_facts(name)
    assert facts["name"] == name and isinstance(facts["rotational"], bool)
    assert facts["size_bytes"] > 0 and facts["scheduler"]
    mount = devices.mount_facts(Path("/"))
    assert mount["mount_point"] == "/" and mount["fstype"] and "r" in mount["mount_options"]
