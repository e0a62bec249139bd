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
