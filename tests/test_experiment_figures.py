"""biossd.outputs.figures.experiments: each related experiment's figure, and what it says when
the result set holds none of that experiment's runs."""

import pandas as pd
import pytest

from biossd.outputs.figures import experiments

FIGURES = {"sort_memory": experiments.figs2_sort_memory, "object_store": experiments.figs3_object_store,
           "kmer_io": experiments.figs4_kmer_io, "shared_device": experiments.figs5_shared_device}


@pytest.mark.parametrize("name", FIGURES)
def test_no_runs_is_said_in_the_figure_not_drawn_as_zero(name):
    fig = FIGURES[name](pd.DataFrame())
    said = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert f"no {name} runs" in said.replace("\n", " ") and fig._suptitle.get_text().startswith("Fig. S")
    assert not any(ax.lines or ax.patches or ax.collections for ax in fig.axes)


def test_the_fast_class_comes_first_and_a_substitute_is_named():
    table = pd.DataFrame({"storage": ["nvme", "hdd", "ssd", "hdd"]})
    assert experiments._classes(table) == ["ssd", "hdd", "nvme"]
    assert experiments._tool_label("sambamba_sort", "rocksort") == "sambamba_sort (substitute for rocksort)"
    assert experiments._tool_label("samtools_sort", float("nan")) == "samtools_sort"
