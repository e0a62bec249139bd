"""Where each tool's input comes from (``--inputs``): a synthetic stand-in, or the data set the
paper ran it on (Lee, Min and Yoon 2015, Table 5), prepared by its manifest's recipe.

``--inputs synthetic`` (the default): every tool reads its kind's synthetic input.
``--inputs paper``: every tool reads its own data set of the paper's Table 5 (the manifest whose
``used_by`` names it and whose recipe makes the tool's input kind); a tool without one that can
be prepared now is a problem that names it and why.
``--inputs KEY=SOURCE[,...]``: per tool (a catalogue id) or per kind (``reads``), a data set id
or ``synthetic``; a tool's own key wins over its kind's, and anything unnamed stays synthetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

SYNTHETIC = "synthetic"
PAPER = "paper"


def resolve(value: str, kinds: Mapping[str, str], chain_kinds: Mapping[str, str], data_dir: Path,
            manifest_dir: Path, stub: bool, problems: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Each tool's data set (tools absent: synthetic) and each chained pipeline's kind's (a kind
    named in ``--inputs``); every problem is appended to ``problems``, naming the parameter."""
    from biossd.study.inputs import datasets

    value = (value or SYNTHETIC).strip()
    if value == SYNTHETIC:
        return {}, {}
    try:
        manifests = {m["id"]: m for m in datasets.load_all(manifest_dir)}
    except datasets.DatasetError as err:
        problems.append(f"--inputs {value}: {err}")
        return {}, {}
    tool_sources: dict[str, str] = {}
    kind_sources: dict[str, str] = {}
    if value == PAPER:
        for tool, kind in kinds.items():
            candidates = [m for m in manifests.values() if tool in m["used_by"] and m["synthetic"]["kind"] == kind]
            if not candidates:
                problems.append(f"--inputs paper: {tool} reads a {kind} input, and no data manifest lists it with "
                                f"that kind; name its source with --inputs {tool}=synthetic or leave it out of --tools")
                continue
            ready = [m for m in candidates if stub or datasets.preparable(m, data_dir / m["id"]) is None]
            if ready:
                tool_sources[tool] = ready[0]["id"]
            else:
                why = "; ".join(f"{m['id']}: {datasets.preparable(m, data_dir / m['id'])}" for m in candidates)
                problems.append(f"--inputs paper: {tool}'s data set cannot be prepared ({why}); give it "
                                f"--inputs {tool}=synthetic or leave it out of --tools")
        return tool_sources, kind_sources
    for item in (x.strip() for x in value.split(",") if x.strip()):
        key, _, source = item.partition("=")
        if not source:
            problems.append(f"--inputs: {item!r} is not KEY=SOURCE (a tool or kind = a data set or synthetic)")
            continue
        is_kind = key in set(kinds.values()) | set(chain_kinds.values())
        if key not in kinds and not is_kind:
            problems.append(f"--inputs: {key!r} is neither a tool of this study nor an input kind it reads")
            continue
        if source != SYNTHETIC and source not in manifests:
            problems.append(f"--inputs {item}: {source!r} is not a data manifest ({', '.join(sorted(manifests))}) "
                            f"nor {SYNTHETIC!r}")
            continue
        want = kinds[key] if key in kinds else key
        if source != SYNTHETIC and manifests[source]["synthetic"]["kind"] != want:
            problems.append(f"--inputs {item}: {source} makes a {manifests[source]['synthetic']['kind']} input, "
                            f"{key} reads {want}")
            continue
        if source != SYNTHETIC and not stub:
            why = datasets.preparable(manifests[source], data_dir / source)
            if why:
                problems.append(f"--inputs {item}: {why}")
                continue
        if key in kinds:
            tool_sources[key] = source
        else:
            kind_sources[key] = source
    for tool, kind in kinds.items():
        tool_sources.setdefault(tool, kind_sources.get(kind, SYNTHETIC))
    return ({t: s for t, s in tool_sources.items() if s != SYNTHETIC},
            {k: s for k, s in kind_sources.items() if s != SYNTHETIC})

