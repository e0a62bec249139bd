"""environment.yml (conda users) must describe the same environment as the pip lock, the Debian
package list and the Nextflow POM."""

import re
import xml.etree.ElementTree as ET

import yaml

from conftest import REPO


def _lock() -> dict[str, str]:
    text = (REPO / "install" / "requirements.lock").read_text()
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)}


def _top_level() -> list[str]:
    """The packages requirements.in names (a version bound, as ``jsonschema>=4.18``, left out)."""
    lines = (REPO / "install" / "requirements.in").read_text().splitlines()
    names = (re.split(r"[<>=!~;\[ ]", l.split("#")[0].strip(), maxsplit=1)[0] for l in lines)
    return [name.lower() for name in names if name]


def _conda() -> dict[str, str]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str):
            name, _, version = dep.partition("=")
            out[name.lower()] = version
        elif isinstance(dep, dict):  # the pip: section, for packages only on PyPI
            for item in dep.get("pip", []):
                name, sep, version = item.partition("==")
                if sep:
                    out[name.lower()] = version
    return out


BUILD_ONLY = {"setuptools", "wheel"}  # pip's build backend; conda brings its own


def test_every_top_level_package_is_pinned_alike():
    lock, conda = _lock(), _conda()
    for name in _top_level():
        assert name in lock, f"{name} is in requirements.in but not in requirements.lock (run `make lock`)"
        if name in BUILD_ONLY:
            continue
        assert name in conda, f"{name} is in requirements.in but not in environment.yml"
        assert conda[name] == lock[name], (
            f"{name}: environment.yml has {conda[name]}, install/requirements.lock has {lock[name]}"
        )


def test_native_tools_match_the_debian_pins():
    conda = _conda()
    pins = {}
    for line in (REPO / "install" / "debian-packages.txt").read_text().splitlines():
        spec = line.split("#")[0].strip()
        if "=" in spec:
            name, version = spec.split("=", 1)
            pins[name] = version.split("-")[0]  # upstream version without the Debian revision
    assert pins["samtools"] == conda["samtools"]


def test_nextflow_matches_the_pom():
    pom = ET.parse(REPO / "install" / "nextflow" / "pom.xml")
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    versions = {
        d.findtext("m:artifactId", namespaces=ns): d.findtext("m:version", namespaces=ns)
        for d in pom.getroot().iterfind(".//m:dependency", ns)
    }
    assert versions["nextflow"] == _conda()["nextflow"]
