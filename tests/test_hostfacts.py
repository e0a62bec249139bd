"""biossd.host.hostfacts: the host a run happened on, as every run manifest records it."""

import os
import platform

from biossd import __version__
from biossd.host.hostfacts import host_facts


def test_the_host_s_facts_are_this_host_s():
    facts = host_facts()
    assert facts["kernel"] == platform.release() and facts["cpu_count"] == os.cpu_count()
    assert facts["biossd_version"] == __version__
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert abs(facts["mem_total_bytes"] - pages) <= 1 << 20  # /proc/meminfo against sysconf, to a MiB
    assert facts["swap_total_bytes"] is not None and facts["swap_total_bytes"] >= 0


def _damon(root, state="on", action="pageout", age_min="12", aggr_us="5000000"):
    """A DAMON sysfs tree (``kdamonds/0/contexts/0/schemes/0``) as a kernel with one scheme shows it."""
    kdamond = root / "kdamonds" / "0"
    context = kdamond / "contexts" / "0"
    scheme = context / "schemes" / "0"
    for path, text in {kdamond / "state": state, context / "operations": "paddr",
                       context / "monitoring_attrs" / "intervals" / "aggr_us": aggr_us, scheme / "action": action,
                       scheme / "access_pattern" / "age" / "min": age_min,
                       scheme / "access_pattern" / "nr_accesses" / "max": "1",
                       scheme / "quotas" / "bytes": "134217728", scheme / "quotas" / "reset_interval_ms": "1000"}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


def test_a_host_that_pages_out_idle_memory_itself_is_named_with_its_idle_time(tmp_path):
    """A running DAMON scheme that pages out what stayed idle 12 aggregation intervals of 5 s is
    recorded as a 60 s idle time; one that only monitors, a stopped kdamond and no DAMON are not."""
    from biossd.host.hostfacts import proactive_reclaim

    found = proactive_reclaim(_damon(tmp_path / "on"))
    assert found == [{"kdamond": "0", "operations": "paddr", "action": "pageout", "idle_s": 60.0, "max_accesses": "1",
                      "quota_bytes": 134217728, "quota_reset_ms": "1000"}]
    assert proactive_reclaim(_damon(tmp_path / "stat", action="stat")) == []
    assert proactive_reclaim(_damon(tmp_path / "off", state="off")) == []
    assert proactive_reclaim(tmp_path / "absent") == []
    assert isinstance(host_facts()["proactive_reclaim"], list)
