"""Installing catalogue tools natively, at the versions the containers pin.

Debian entries are installed with apt at their pinned ``NAME=VERSION``. An entry whose package
is in another component (cluster3 is in ``non-free``) first gets that component added in its own
sources file, ``/etc/apt/sources.list.d/biossd-<component>.sources``. GATK 4 entries are
resolved from Maven Central with ``install/gatk/pom.xml`` into ``.venv/gatk/lib``, with the
launcher ``.venv/bin/gatk``. A ``pypi_build`` entry (BLAT) takes a pinned wheel from PyPI,
checks its sha256, and compiles the program from the C sources the wheel ships against the
wheel's own library, into ``.venv/tools/<package>-<version>/`` with a link in ``.venv/bin``.
Recipe-only entries cannot be installed here; they are reported, not attempted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Iterable

from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.partial import atomic_dir
from biossd.core.paths import DEFAULT_VENV, INSTALL_DIR
from biossd.study.catalogue import Entry

APT_SOURCES_DIR = Path("/etc/apt/sources.list.d")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: The release a sources file names when /etc/os-release does not say (the study's own).
DEFAULT_DEBIAN_SUITE = "bookworm"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
GATK_POM = INSTALL_DIR / "gatk" / "pom.xml"
GATK_LAUNCHER = INSTALL_DIR / "gatk" / "gatk"
#: The SHA-256 of every jar Maven resolves for GATK (``sha256sum *.jar`` in the resolved lib; a
#: new GATK version regenerates it the same way).
GATK_SHA256SUMS = INSTALL_DIR / "gatk" / "sha256sums.txt"
OS_RELEASE = Path("/etc/os-release")


class InstallError(BiossdError, RuntimeError):
    pass


def venv_dir() -> Path:
    return DEFAULT_VENV


def _component_sources(component: str) -> Path:
    path = APT_SOURCES_DIR / f"biossd-{component}.sources"
    text = (f"# Added by `biossd catalogue install` for catalogue tools in Debian's {component} component.\n"
            f"Types: deb\nURIs: {DEBIAN_MIRROR}\nSuites: {debian_suite()}\nComponents: {component}\n"
            f"Signed-By: {DEBIAN_KEYRING}\n")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
        return path
    return path


def debian_suite(os_release: Path = OS_RELEASE) -> str:
    """The host's own Debian release (``VERSION_CODENAME`` of /etc/os-release): a component's
    sources file must name it, never a release the host does not run."""
    try:
        for line in os_release.read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"') or DEFAULT_DEBIAN_SUITE
    except OSError:
        pass
    return DEFAULT_DEBIAN_SUITE


def check_sha256sums(directory: Path, sums: Path) -> None:
    """Every ``*.jar`` in ``directory`` is listed in ``sums`` (``sha256sum`` format) with its
    hash, and every listed one is there; else :class:`InstallError` naming the first mismatch."""
    expected = {}
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        if name:
            expected[name.strip()] = digest
    found = {p.name for p in Path(directory).glob("*.jar")}
    extra, missing = sorted(found - set(expected)), sorted(set(expected) - found)
    if extra or missing:
        raise InstallError(f"Maven delivered other jars than {sums} pins (new: {extra[:3]}, missing: {missing[:3]}); "
                           "nothing was installed")
    for name in sorted(found):
        digest = hashlib.sha256((Path(directory) / name).read_bytes()).hexdigest()
        if digest != expected[name]:
            raise InstallError(f"{name}: its SHA-256 {digest} is not the one {sums} pins; nothing was installed")


def _installed_debian(spec: str) -> bool:
    name, version = spec.split("=", 1)
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", name], capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout == f"install ok installed {version}"


def install_debian(entries: Iterable[Entry]) -> list[str]:
    """apt-get install the pinned packages not installed yet; returns what was installed."""
    specs, components = [], set()
    for e in entries:
        for spec in (e.data["install"].get("debian") or "").split():
            if not _installed_debian(spec):
                specs.append(spec)
                if e.data["install"].get("debian_component"):
                    components.add(e.data["install"]["debian_component"])
    if not specs:
        return []
    if os.geteuid() != 0:
        raise InstallError(f"installing {', '.join(specs)} needs root (apt-get)")
    for component in sorted(components):
        _component_sources(component)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *specs]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise InstallError(f"`{' '.join(argv)}` failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
    return specs


def install_gatk() -> bool:
    """GATK 4 jars from Maven Central into .venv/gatk/lib and the .venv/bin/gatk launcher;
    returns whether anything was installed."""
    changed = False
    lib = venv_dir() / "gatk" / "lib"
    launcher = venv_dir() / "bin" / "gatk"
    if not any(lib.glob("gatk-4.*.jar")):
        if shutil.which("mvn") is None:
            raise InstallError("Maven (mvn) is needed to resolve GATK; `make install` installs it")
        with atomic_dir(lib, replace=True) as tmp:  # a lib without GATK's jar: an earlier, cut-short install
            run_checked(["mvn", "-q", "-B", "-f", str(GATK_POM), "dependency:copy-dependencies",
                         f"-DoutputDirectory={tmp}"], InstallError, "resolve GATK from Maven Central")
            check_sha256sums(tmp, GATK_SHA256SUMS)
        changed = True
    text = f"#!/bin/sh\nGATK_LIB={lib} exec {GATK_LAUNCHER} \"$@\"\n"
    if not launcher.exists() or launcher.read_text() != text:
        launcher.write_text(text)
        launcher.chmod(0o755)
        changed = True
    return changed


def install_pypi_build(entry: Entry) -> bool:
    """``install.pypi_build`` of ``entry``: the pinned wheel (sha256 checked), unpacked, and its
    ``program`` compiled from ``source`` (a C file inside the wheel) against the wheel's shared
    library; returns whether anything was installed. Built under a temporary name, renamed when
    complete; the link in .venv/bin is replaced only when it is biossd's."""
    spec = entry.data["install"]["pypi_build"]
    package, version = spec["package"], spec["version"]
    dest = venv_dir() / "tools" / f"{package}-{version}"
    program = dest / spec["program"]
    link = venv_dir() / "bin" / spec["program"]
    changed = False
    if not program.is_file():
        for tool in ("gcc",):
            if shutil.which(tool) is None:
                raise InstallError(f"{entry.id}: building {spec['program']} needs {tool}; `make install` installs it")
        # an existing dest without its program: an incomplete earlier build, replaced
        with atomic_dir(dest, replace=True) as tmp:
            run_checked([str(venv_dir() / "bin" / "python"), "-m", "pip", "download", "-q", "--no-deps",
                         "--only-binary", ":all:", f"{package}=={version}", "-d", str(tmp / "wheel")],
                        InstallError, f"download the {package} {version} wheel from PyPI")
            wheels = sorted((tmp / "wheel").glob("*.whl"))
            if len(wheels) != 1:
                raise InstallError(f"{entry.id}: expected one {package} wheel, pip gave {[w.name for w in wheels]}")
            digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
            if digest != spec["wheel_sha256"]:
                raise InstallError(f"{entry.id}: {wheels[0].name} has sha256 {digest}, the catalogue pins "
                                   f"{spec['wheel_sha256']} (study/catalogue/{entry.id}.yaml install.pypi_build)")
            with zipfile.ZipFile(wheels[0]) as wheel:
                wheel.extractall(tmp)
            libs = sorted(tmp.glob(spec["library"]))
            if len(libs) != 1:
                raise InstallError(f"{entry.id}: the wheel holds no single library {spec['library']}")
            includes = sorted({p.parent for p in (tmp / spec["include_dir"]).rglob("*.h")})
            run_checked(["gcc", "-O2", "-o", str(tmp / spec["program"]), str(tmp / spec["source"]),
                         *[f"-I{d}" for d in includes], f"-L{libs[0].parent}", f"-l:{libs[0].name}",
                         f"-Wl,-rpath,{dest / libs[0].parent.relative_to(tmp)}",
                         "-lz", "-lpthread", "-lm"], InstallError, f"compile {spec['program']} from {spec['source']}")
        changed = True
    if link.is_symlink() or not link.exists():
        if not link.is_symlink() or os.readlink(link) != str(program):
            link.unlink(missing_ok=True)
            link.symlink_to(program)
            changed = True
    elif os.path.realpath(link) != str(program):
        raise InstallError(f"{link} exists and is not biossd's link to {program}; not replacing it")
    return changed


def install(entries: Iterable[Entry]) -> dict[str, list[str]]:
    """Install every runnable entry natively; returns {"installed": [...], "skipped": [...]}."""
    entries = [e for e in entries if e.kind == "tool"]
    runnable = [e for e in entries if e.data["status"] == "runnable"]
    done = install_debian(runnable)
    if any(e.data["install"].get("maven") for e in runnable) and install_gatk():
        done.append("gatk 4.5.0.0 (Maven Central)")
    for e in runnable:
        if e.data["install"].get("pypi_build") and install_pypi_build(e):
            spec = e.data["install"]["pypi_build"]
            done.append(f"{spec['program']} from {spec['package']} {spec['version']} (PyPI)")
    skipped = [f"{e.id}: {e.data['status_reason']}" for e in entries if e.data["status"] != "runnable"]
    return {"installed": done, "skipped": skipped}
