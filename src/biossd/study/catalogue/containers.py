"""Building and running the catalogue's containers on this kind of machine.

Here (no Apptainer, ``podman run`` denied; Docker only as biossd's own engine) an image is made in
four steps:

1. a bookworm base: ``debootstrap --variant=minbase`` into a temporary directory, imported into
   podman as ``localhost/biossd/bookworm-base:<BASE_TAG>`` (made once);
2. ``podman build --isolation chroot`` of ``containers/<id>/Dockerfile`` with ``BASE_IMAGE``
   set to that base *by digest* (podman's layer cache makes a second build fast);
3. the image is unpacked for Charliecloud into ``.venv/containers/<id>-<version>/``: its root
   file system copied from ``podman image mount``, plus what ``ch-convert`` would add (the
   ``/mnt/0``–``/mnt/9`` bind points and ``/ch/environment`` from the image's ``ENV``). This
   takes ~2 s where ``ch-convert -i podman -o dir`` took 17–30 s per image here. It is redone only
   when the image id changed;
4. ``ch-run`` runs a command in it, with a host directory bound at ``/mnt/0`` (Charliecloud
   images have ``/mnt/0``–``/mnt/9`` for binds; this version cannot create others).

On users' hosts the same Dockerfiles build with ``docker build``/``podman build`` and the
``apptainer.def`` files with ``apptainer build`` (``biossd catalogue build --engine docker|apptainer``),
and a study runs each tool through :func:`wrap_argv` with the engine it names:

``charliecloud``  ``ch-run`` of the unpacked image; the tool is a child of the profiler, so the
                  profiler's cgroup caps it and rusage/perf see it (runs here).
``apptainer``     ``apptainer exec`` of ``<cache>/<id>-<version>.sif``; likewise a child process
                  (no Apptainer here: built and checked on users' hosts only).
``docker``        ``docker run`` on an engine (biossd's own, :mod:`biossd.host.dockerengine`, or the
                  user's named by ``DOCKER_HOST``) of the image podman built, loaded into it
                  (here) or ``docker build`` (users' hosts): the tool runs outside the profiler's
                  process tree, so the cap is Docker's (``--memory``; ``--memory-swap -1``, so it
                  pages to the class's swap as a native run does), recorded as ``external`` with
                  the limit Docker enforced, its OOM kill from the container's state and its peak
                  from the container's cgroup. rusage and perf measure the client, not the tool;
                  block traces hold the run's requests, and the wall time includes the
                  container's start.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.partial import atomic_dir
from biossd.core.paths import DEFAULT_VENV, REPO_ROOT
from biossd.study.catalogue import Entry

BASE_REPO = "localhost/biossd/bookworm-base"
#: Bumped when the base recipe changes.
BASE_TAG = "minbase-1"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BIND_POINT = "/mnt/0"
IMAGE_ID_FILE = ".biossd-image-id"
#: Where ``docker run --cidfile`` writes a run's container id, in the run's scratch.
CIDFILE_NAME = ".biossd-container-id"
MAVEN_MOUNT = "/m2cache"
WHEEL_MOUNT = "/wheels"


def _wheel_dir(entry: Entry) -> Path | None:
    """Where `biossd catalogue install` kept a pypi_build entry's wheel, if it did."""
    spec = entry.data["install"].get("pypi_build")
    if not spec:
        return None
    from biossd.study.catalogue.install import venv_dir

    path = venv_dir() / "tools" / f"{spec['package']}-{spec['version']}" / "wheel"
    return path if any(path.glob("*.whl")) else None


#: Charliecloud's conventional bind points /mnt/0 ... /mnt/9.
CH_BIND_POINTS = 10


#: The engines a study can run tools in, and the program each needs.
ENGINE_PROGRAMS = {"charliecloud": "ch-run", "apptainer": "apptainer", "docker": "docker"}
ENGINES = tuple(ENGINE_PROGRAMS)
SIF_DIGEST_SUFFIX = ".sha256"
DOCKER_PROBE_TIMEOUT_S = 10.0


class ContainerError(BiossdError, RuntimeError):
    pass


def check_engine(engine: str) -> None:
    """Raise :class:`ContainerError` saying what is missing when ``engine`` cannot run here."""
    if engine not in ENGINE_PROGRAMS:
        raise ContainerError(f"unknown container engine {engine!r}; use one of {', '.join(ENGINES)}")
    if shutil.which(ENGINE_PROGRAMS[engine]) is None:
        raise ContainerError(f"container engine {engine} needs `{ENGINE_PROGRAMS[engine]}`, which is not installed "
                             "on this host" + (" (`install/bootstrap.sh docker` installs Debian's docker.io)"
                                               if engine == "docker" else ""))
    if engine == "docker":  # a docker client without a daemon is common
        try:
            proc = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True,
                                  text=True, timeout=DOCKER_PROBE_TIMEOUT_S)
            failure = "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        except subprocess.TimeoutExpired:
            failure = f"no answer in {DOCKER_PROBE_TIMEOUT_S:.0f} s"
        if failure:
            raise ContainerError(f"container engine docker: the docker client is installed but no Docker engine "
                                 f"answers ({failure}); `biossd docker up` starts biossd's own and prints the "
                                 "DOCKER_HOST to export, or set DOCKER_HOST to yours")


def cache_dir() -> Path:
    return Path(os.environ.get("BIOSSD_CONTAINER_DIR", DEFAULT_VENV / "containers"))


def missing_tools() -> list[str]:
    return [t for t in ("podman", "ch-run", "debootstrap") if shutil.which(t) is None]


def _podman(*args: str, what: str) -> str:
    return run_checked(["podman", *args], ContainerError, what).strip()


def _image_id(ref: str) -> str | None:
    proc = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def base_image() -> str:
    """The base image's reference by digest, making the base first if podman lacks it."""
    tag = f"{BASE_REPO}:{BASE_TAG}"
    if _image_id(tag) is None:
        with tempfile.TemporaryDirectory(prefix="biossd-base-", dir="/var/tmp") as tmp:
            root = Path(tmp) / "rootfs"
            run_checked(["debootstrap", "--variant=minbase", "bookworm", str(root), DEBIAN_MIRROR],
                        ContainerError, "debootstrap the bookworm base")
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            imp = subprocess.run(["podman", "import", "-", tag], stdin=tar.stdout, capture_output=True, text=True)
            tar.wait()
            if imp.returncode != 0 or tar.returncode != 0:
                raise ContainerError(f"podman import of the base failed: {imp.stderr.strip()}")
    digest = _podman("image", "inspect", "--format", "{{.Digest}}", tag, what="inspect the base")
    return f"{BASE_REPO}@{digest}"


def image_ref(entry: Entry) -> str:
    return entry.data["container"]["image"]


def image_dir(entry: Entry) -> Path:
    return cache_dir() / f"{entry.id}-{entry.data['version']}"


def sif_path(entry: Entry) -> Path:
    """Where ``entry``'s Apptainer image is built (``apptainer build`` of its ``apptainer.def``)."""
    return cache_dir() / f"{entry.id}-{entry.data['version']}.sif"


def build_command(entry: Entry, engine: str) -> list[str]:
    """The build of ``entry``'s image for ``docker`` or ``apptainer`` (users' hosts)."""
    if engine == "docker":
        return ["docker", "build", "-t", image_ref(entry), "-f", str(REPO_ROOT / entry.data["container"]["dockerfile"]),
                str(REPO_ROOT)]
    if engine == "apptainer":
        return ["apptainer", "build", "--force", str(sif_path(entry)), str(REPO_ROOT / entry.data["container"]["apptainer"])]
    raise ContainerError(f"no build command for engine {engine!r}")


def build(entry: Entry, engine: str = "charliecloud") -> Path:
    """Build ``entry``'s image for ``engine``; for charliecloud (here: podman, then unpacked), the
    image directory, else the image file or reference. For docker where podman is installed (this
    kind of machine, offline), podman's image loaded into the engine (:func:`_docker_load`)."""
    if entry.data.get("status") != "runnable":
        raise ContainerError(f"{entry.id} is recipe-only: {entry.data.get('status_reason')}")
    if engine == "docker" and shutil.which("podman") is not None:
        check_engine(engine)
        return _docker_load(entry, _podman_build(entry))
    if engine != "charliecloud":
        check_engine(engine)
        if engine == "apptainer":
            sif_path(entry).parent.mkdir(parents=True, exist_ok=True)
        run_checked(build_command(entry, engine), ContainerError, f"{engine} build of {entry.id}")
        if engine == "apptainer":
            digest = subprocess.run(["sha256sum", str(sif_path(entry))], capture_output=True, text=True,
                                    check=True).stdout.split()[0]
            Path(str(sif_path(entry)) + SIF_DIGEST_SUFFIX).write_text(digest + "\n")
            return sif_path(entry)
        return Path(image_ref(entry))
    image_id = _podman_build(entry)
    target = image_dir(entry)
    marker = target / IMAGE_ID_FILE
    if marker.is_file() and marker.read_text().strip() == image_id and (target / "ch" / "environment").is_file():
        return target
    if target.exists() and not marker.is_file():
        raise ContainerError(f"{target} exists and is not an image directory biossd unpacked (no {IMAGE_ID_FILE}); "
                             "move it away or set BIOSSD_CONTAINER_DIR elsewhere")
    # Unpacked under a name of its own, then swapped in: an interrupted build leaves the old
    # image whole, and only directories biossd made (its marker, or its fresh name) are removed.
    with atomic_dir(target, replace=True) as tmp:
        unpack(image_ref(entry), tmp)
        (tmp / IMAGE_ID_FILE).write_text(f"{image_id}\n")
    return target


def _podman_build(entry: Entry) -> str:
    """``podman build`` of ``entry``'s Dockerfile on the debootstrapped base (offline: the host's
    Maven repository and downloaded wheels are mounted in); the image's id."""
    missing = missing_tools()
    if missing:
        raise ContainerError(f"building containers here needs {', '.join(missing)} (`make install`)")
    base = base_image()
    dockerfile = REPO_ROOT / entry.data["container"]["dockerfile"]
    extra: list[str] = []
    maven_repo = Path.home() / ".m2" / "repository"
    if entry.data["install"].get("maven") and maven_repo.is_dir():
        # Share the host's Maven repository (filled by `biossd catalogue install`) with the build.
        extra = ["-v", f"{maven_repo}:{MAVEN_MOUNT}", "--build-arg", f"MAVEN_REPO={MAVEN_MOUNT}"]
    wheels = _wheel_dir(entry)
    if wheels is not None:
        # The wheel `biossd catalogue install` downloaded (the build checks its sha256 again);
        # a build without it fetches it from PyPI.
        extra = ["-v", f"{wheels}:{WHEEL_MOUNT}", "--build-arg", f"WHEEL_DIR={WHEEL_MOUNT}"]
    _podman("build", "--isolation", "chroot", "--build-arg", f"BASE_IMAGE={base}", *extra, "-t", image_ref(entry),
            "-f", str(dockerfile), str(REPO_ROOT), what=f"podman build {dockerfile}")
    image_id = _image_id(image_ref(entry))
    if image_id is None:
        raise ContainerError(f"podman built {image_ref(entry)} but does not list it")
    return image_id


def _docker_image_id(ref: str) -> str | None:
    proc = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True, text=True)
    return proc.stdout.strip().removeprefix("sha256:") if proc.returncode == 0 else None


def _docker_load(entry: Entry, image_id: str) -> Path:
    """The podman-built image into the Docker engine (``podman save | docker load``), offline and
    the same image (its id is the config's digest in both); skipped when Docker has it."""
    ref = image_ref(entry)
    want = image_id.removeprefix("sha256:")
    if _docker_image_id(ref) == want:
        return Path(ref)
    save = subprocess.Popen(["podman", "save", "--format", "docker-archive", ref], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert save.stdout is not None and save.stderr is not None
    load = subprocess.run(["docker", "load"], stdin=save.stdout, capture_output=True, text=True)
    save.stdout.close()
    saved_err = save.stderr.read().decode(errors="replace")
    if save.wait() != 0 or load.returncode != 0:
        raise ContainerError(f"podman save {ref} | docker load failed: {(load.stderr or saved_err).strip()[-400:]}")
    got = _docker_image_id(ref)
    if got != want:
        raise ContainerError(f"docker load gave {ref} the id {got or 'none'}, not podman's {image_id}")
    return Path(ref)


def unpack(ref: str, target: Path) -> None:
    """Copy image ``ref``'s root file system to ``target`` as a Charliecloud image directory."""
    mount = _podman("image", "mount", ref, what=f"mount {ref}")
    try:
        target.mkdir(parents=True, exist_ok=True)
        run_checked(["cp", "-a", f"{mount}/.", str(target)], ContainerError, f"copy {ref}")
    finally:
        subprocess.run(["podman", "image", "unmount", ref], capture_output=True)
    for i in range(CH_BIND_POINTS):
        (target / "mnt" / str(i)).mkdir(parents=True, exist_ok=True)
    env = _podman("image", "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", ref,
                  what=f"read the environment of {ref}")
    (target / "ch").mkdir(exist_ok=True)
    (target / "ch" / "environment").write_text(env.strip() + "\n")


def built(entry: Entry, engine: str = "charliecloud") -> bool:
    """Whether ``entry``'s image is there for ``engine``: for charliecloud, the unpacked image
    matching the image podman has under its tag."""
    if engine == "apptainer":
        return sif_path(entry).is_file()
    if engine == "docker":
        return shutil.which("docker") is not None and subprocess.run(
            ["docker", "image", "inspect", image_ref(entry)], capture_output=True).returncode == 0
    marker = image_dir(entry) / IMAGE_ID_FILE
    if not marker.is_file() or not (image_dir(entry) / "ch" / "environment").is_file():
        return False
    return shutil.which("podman") is None or _image_id(image_ref(entry)) == marker.read_text().strip()


def ch_run_argv(entry: Entry, bind: Path, argv: Sequence[str], cwd: str = BIND_POINT) -> list[str]:
    """``argv`` run in ``entry``'s unpacked image with ``bind`` at :data:`BIND_POINT`."""
    user = os.environ.get("USER") or getpass.getuser()
    return ["env", f"USER={user}", "ch-run", "-b", f"{bind}:{BIND_POINT}", "-c", cwd, str(image_dir(entry)), "--", *argv]


def inside_paths(values: dict[str, str], bind: Path) -> dict[str, str]:
    """Command values with paths under ``bind`` rewritten to where the container sees them."""
    root = str(Path(bind))
    out = {}
    for name, value in values.items():
        if value == root or value.startswith(root + "/"):
            value = BIND_POINT + value[len(root):]
        out[name] = value
    return out


def installed_version(entry: Entry, engine: str | None = None) -> str:
    """The version ``entry``'s tool reports, natively or in its ``engine`` image (the record of
    every run of it); a tool not installed, or an image not built, is refused naming which."""
    prefix: list[str] = []
    if engine is not None:
        if not built(entry, engine):
            raise ContainerError(f"{entry.id}'s {engine} image is not built here; build it with "
                                 f"`biossd catalogue build --engine {engine} {entry.id}`")
        prefix = wrap_argv(engine, entry, Path(tempfile.gettempdir()), [])
    version = entry.installed_version(prefix)
    if version is None:
        raise ContainerError(f"{entry.id} is not installed here" + (f" (in its {engine} image)" if engine else "")
                             + "; `make tools` installs and builds the runnable tools")
    return version


def wrap_argv(engine: str, entry: Entry, bind: Path, argv: Sequence[str], mem_bytes: int | None = None,
              cwd: str = BIND_POINT, cidfile: Path | None = None) -> list[str]:
    """``argv`` run by ``engine`` in ``entry``'s image, with ``bind`` seen at :data:`BIND_POINT`.
    Docker alone is given the memory cap (its containers are outside the profiler's cgroup),
    swap unlimited as a native run's (it pages to the class's swap), no network, and the bind
    as a mount that fails when ``bind`` is missing (never an empty directory Docker made). With
    ``cidfile`` Docker writes the container's id there and keeps the container for the profiler
    to inspect and remove (:func:`biossd.host.dockerengine.finish`); without, it is removed."""
    if engine == "charliecloud":
        return ch_run_argv(entry, bind, argv, cwd)
    if engine == "apptainer":
        return ["apptainer", "exec", "--containall", "--no-home", "--bind", f"{bind}:{BIND_POINT}", "--pwd", cwd,
                str(sif_path(entry)), *argv]
    if engine == "docker":
        cap = [f"--memory={mem_bytes}b", "--memory-swap=-1"] if mem_bytes else []
        keep = ["--cidfile", str(cidfile)] if cidfile is not None else ["--rm"]
        return ["docker", "run", *keep, "--init", "--network", "none",
                "--mount", f"type=bind,source={bind},target={BIND_POINT}", "-w", cwd, *cap, image_ref(entry), *argv]
    raise ContainerError(f"unknown container engine {engine!r}; use one of {', '.join(ENGINES)}")


def image_record(entry: Entry, engine: str = "charliecloud") -> str:
    """``ref@sha256:id`` of the image a run used, for its manifest (``biossd profile --image``)."""
    if engine == "apptainer":
        digest = Path(str(sif_path(entry)) + SIF_DIGEST_SUFFIX).read_text().strip()
        return f"{sif_path(entry)}@sha256:{digest}"
    if engine == "docker":
        image_id = run_checked(["docker", "image", "inspect", "--format", "{{.Id}}", image_ref(entry)],
                               ContainerError, f"inspect {image_ref(entry)}").strip()
        return f"{image_ref(entry)}@{image_id}"
    marker = image_dir(entry) / IMAGE_ID_FILE
    return f"{image_ref(entry)}@sha256:{marker.read_text().strip()}"
