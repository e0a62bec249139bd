"""biossd.outputs.report: figures saved reproducibly, and the notebooks a result set asks for."""

import hashlib

import matplotlib.pyplot as plt
import pytest

from biossd.core import paths
from biossd.outputs import report


def _figure():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    return fig


def test_a_figure_is_saved_whole_and_byte_for_byte_the_same_each_time(tmp_path):
    first = report.save_figure(_figure(), tmp_path / "a" / "fig")
    sums = [hashlib.sha256(p.read_bytes()).hexdigest() for p in first]
    again = report.save_figure(_figure(), tmp_path / "a" / "fig")
    assert [p.suffix for p in first] == [".png", ".pdf"] and again == first
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in again] == sums
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["fig.pdf", "fig.png"]  # no temporary left


def test_the_notebooks_follow_what_the_result_set_holds(tmp_path):
    assert report.notebooks_for([tmp_path]) == []
    (tmp_path / "h-ssd" / "runs").mkdir(parents=True)
    study = report.notebooks_for([tmp_path])
    assert study and all(p.parent == paths.NOTEBOOKS_DIR for p in study)
    assert report.notebooks_for([tmp_path], experiments_only=True) == []
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "kmer_io.csv").write_text("experiment\n")
    assert [p.name for p in report.notebooks_for([tmp_path], experiments_only=True)] == ["09_kmer_io.ipynb"]


def test_nothing_to_report_is_said_naming_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"nothing to report in {tmp_path}"):
        report.render([tmp_path], tmp_path / "report")


def test_a_wide_figure_is_set_sideways_in_the_supplement(tmp_path):
    """A figure much wider than tall (Fig. 2 with every tool) is set along the page's long side,
    so that it is not shrunk to a strip; a figure of ordinary shape stays upright."""
    from biossd.outputs import artefacts, supplement

    figures = tmp_path / "figures"
    figures.mkdir()
    for stem, size in (("fig02_speedup", (13.4, 5.6)), ("fig01_aligners", (8, 6))):
        fig, _ = plt.subplots(figsize=size)
        fig.savefig(figures / f"{stem}.png", dpi=20)
        plt.close(fig)
    by_stem = {a.stem: a for a in artefacts.ARTEFACTS}
    wide = supplement._float_tex(by_stem["fig02_speedup"], "report", tmp_path)
    upright = supplement._float_tex(by_stem["fig01_aligners"], "report", tmp_path)
    assert wide.startswith("\\begin{sidewaysfigure}") and "width=\\textheight" in wide
    assert upright.startswith("\\begin{figure}[p]") and "width=\\textwidth" in upright
    assert supplement._float_tex(by_stem["fig02_speedup"], "report").startswith("\\begin{figure}"), "no file: upright"
