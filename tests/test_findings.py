"""biossd.analysis.findings: each coded rule fires on the evidence it is written for, and not on
evidence just short of it (the real runs' findings are tested in test_own_pipeline)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from biossd.analysis import findings
from biossd.analysis.speedup import NEGLIGIBLE_BELOW
from biossd.analysis.verdict import CPU_BOUND_CORES, PAGING_SHARE

MIB = 1 << 20

#: A process that gives no rule a reason: short of every threshold.
QUIET = {"tasks": 2, "runtime_s": 10.0, "cpu_share": 0.5, "paging_s": 0.0, "paging_share": 0.0, "swap_ins": 0.0,
         "swap_outs": 0.0, "peak_memory_bytes": 100.0 * MIB, "memory_limit_bytes": 200.0 * MIB, "flush_s": 0.1,
         "flush_share": 0.01, "throttled_s": 0.0, "throttle_pauses": 0.0, "throttle_share": 0.0, "read_service_share": 0.5,
         "Rsize": 64.0, "CAR": 0.9, "oom_attempts": 0,
         "oom_limit_bytes": math.nan, "best_target": "nvme-pcie4", "best_speedup": 1.05,
         "best_speedup_low": 1.02, "best_speedup_high": 1.08, "saving_s": 0.5, "pipeline_saving_s": 0.5}


def fired(**changes) -> set[str]:
    ev = pd.DataFrame([{**QUIET, **changes}], index=pd.Index(["P"], name="process"))
    return set(findings.of(ev)["code"])


def test_a_quiet_process_has_no_finding():
    assert fired() == set()


@pytest.mark.parametrize("code, fires, short", [
    ("BIOSSD-M01", {"paging_share": PAGING_SHARE, "paging_s": 2.0, "swap_ins": 5000, "swap_outs": 8000},
     {"paging_share": PAGING_SHARE * 0.9, "paging_s": 1.8, "swap_ins": 5000, "swap_outs": 8000}),
    ("BIOSSD-M02", {"oom_attempts": 1, "oom_limit_bytes": 64.0 * MIB}, {"oom_attempts": 0}),
    ("BIOSSD-D01", {"best_speedup": NEGLIGIBLE_BELOW, "best_speedup_low": 1.1, "best_speedup_high": 1.3},
     {"best_speedup": NEGLIGIBLE_BELOW - 0.01}),
    ("BIOSSD-C01", {"cpu_share": CPU_BOUND_CORES}, {"cpu_share": CPU_BOUND_CORES - 0.01}),
    ("BIOSSD-W01", {"flush_share": findings.WRITEBACK_SHARE, "flush_s": 2.0},
     {"flush_share": findings.WRITEBACK_SHARE * 0.9, "flush_s": 1.8}),
    ("BIOSSD-W02", {"throttle_share": findings.WRITEBACK_SHARE, "throttled_s": 2.0, "throttle_pauses": 80},
     {"throttle_share": findings.WRITEBACK_SHARE * 0.9, "throttled_s": 1.8, "throttle_pauses": 70}),
    ("BIOSSD-P01", {"best_speedup": 3.0, "best_speedup_low": 2.5, "best_speedup_high": 3.5, "saving_s": 6.0,
                    "pipeline_saving_s": 0.1},
     {"best_speedup": 3.0, "best_speedup_low": 2.5, "best_speedup_high": 3.5, "saving_s": 6.0,
      "pipeline_saving_s": 6.0}),
])
def test_each_rule_fires_at_its_threshold_and_not_below(code, fires, short):
    assert code in fired(**fires)
    assert code not in fired(**short)


def test_throttling_not_recorded_is_no_finding():
    assert "BIOSSD-W02" not in fired(throttled_s=math.nan, throttle_pauses=math.nan, throttle_share=math.nan)


def test_a_cpu_bound_process_that_a_device_speeds_up_is_not_called_cpu_bound():
    codes = fired(cpu_share=1.9, best_speedup=2.0, best_speedup_low=1.5, best_speedup_high=2.5)
    assert "BIOSSD-D01" in codes and "BIOSSD-C01" not in codes


def test_a_gain_whose_interval_does_not_reach_the_bound_is_a_warning_that_says_so():
    table = findings.of(pd.DataFrame([{**QUIET, "best_speedup": 1.3, "best_speedup_low": 1.1, "best_speedup_high": 1.5}],
                                     index=pd.Index(["P"], name="process")))
    row = table.set_index("code").loc["BIOSSD-D01"]
    assert row["severity"] == "warn" and "low end does not reach" in row["finding"]
    assert "best_speedup=1.3" in row["evidence"] and "nvme-pcie4" in row["advice"]


def test_memory_advice_is_the_measured_need_with_the_stated_margin():
    table = findings.of(pd.DataFrame([{**QUIET, "oom_attempts": 1, "oom_limit_bytes": 64.0 * MIB,
                                       "peak_memory_bytes": 200.0 * MIB}], index=pd.Index(["P"], name="process")))
    advice = table.set_index("code").loc["BIOSSD-M02", "advice"]
    assert f"{math.ceil(200 * (1 + findings.MEMORY_MARGIN))} MB" in advice
    assert findings.suggested_memory_bytes(1.0 * MIB) == findings.MIN_SUGGESTED_MEMORY_BYTES


def test_the_rules_about_time_do_not_judge_a_process_of_start_up_alone():
    short = {"runtime_s": findings.MIN_JUDGED_RUNTIME_S * 0.9}
    assert fired(cpu_share=1.0, **short) == set()
    assert fired(best_speedup=3.0, best_speedup_low=2.0, best_speedup_high=4.0, **short) == set()
    assert "BIOSSD-M02" in fired(oom_attempts=1, oom_limit_bytes=64.0 * MIB, **short), "an OOM kill is no start-up"


def test_findings_are_ordered_most_severe_first():
    ev = pd.DataFrame([{**QUIET, "cpu_share": 1.0}, {**QUIET, "oom_attempts": 2, "oom_limit_bytes": 1.0 * MIB},
                       {**QUIET, "paging_share": 0.5, "paging_s": 5.0, "swap_ins": 1, "swap_outs": 1}],
                      index=pd.Index(["A", "B", "C"], name="process"))
    assert list(findings.of(ev)["severity"]) == ["high", "warn", "info"]


def test_every_rule_is_documented_with_its_code():
    from conftest import REPO

    doc = (REPO / "docs" / "profile-your-pipeline.md").read_text()
    for rule in findings.RULES:
        assert f"`{rule.code}`" in doc, f"{rule.code} is not in docs/profile-your-pipeline.md"
    assert findings.rules_markdown() in doc, "the rules' table in the docs is not the code's (regenerate it)"
