"""What the profiler is asked to do (:class:`ProfileRequest`) and how it refuses (Lee, Min and Yoon
2015, §5.1): one command, its memory cap, its working directory and what is traced."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import ProcessRef
from biossd.host import hostlock
from biossd.host.resident import RESIDENT_INTERVAL_S
from biossd.measure.sampler import DEFAULT_INTERVAL_S


class ProfileError(BiossdError, RuntimeError):
    """The run could not be started; the message says what to fix."""


class Busy(ProfileError):
    """Another measured run holds the host lock and the run was told not to wait."""

    exit_status = hostlock.EXIT_BUSY


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


@dataclass
class ProfileRequest:
    argv: Sequence[str]
    out_dir: Path
    mem_bytes: int | None
    #: The command's working directory (default: the profiler's own): its relative writes land
    #: there, and its device is the one traced unless ``devices`` says otherwise. Passed to the
    #: command, never set on the profiler's process.
    cwd: Path | None = None
    labels: dict[str, str] = field(default_factory=dict)
    cap_backend: str = "auto"
    drop_caches: bool = True
    #: Why the page cache was not dropped, for the record when ``drop_caches`` is false.
    kept_caches_why: str = "disabled"
    #: What the drop evicts (:data:`biossd.host.pagecache.POLICIES`): the whole page cache
    #: (``all``), or only what the run reads from its class's device (``run``: its working
    #: directory's files, its class's own file system and its block devices' buffers), so that code
    #: read by earlier runs stays resident and charged elsewhere (docs/study.md, "Code is not data").
    evict: str = "all"
    overwrite: bool = False
    #: A warm-up: the files of code its processes map or read outside its class's file systems
    #: are read whole into its cgroup once the command has ended (docs/study.md, "Code is not
    #: data"; :mod:`biossd.host.codefiles`).
    read_code: bool = False
    #: Block devices to trace (``/dev/vda``, ``vda`` or ``254:0``); default: the one holding
    #: the working directory (``cwd``). A swap area made for the run is traced too.
    devices: Sequence[str] = ()
    sample_interval_s: float = DEFAULT_INTERVAL_S
    #: How often the run's resident memory is read (:class:`biossd.host.resident.ResidentWatch`).
    resident_interval_s: float = RESIDENT_INTERVAL_S
    #: Swap for the run: this many bytes on a loop device over a file in ``swap_dir``.
    swap_bytes: int | None = None
    swap_dir: Path | None = None
    blocktrace: str = "auto"
    perf: str = "auto"
    cachegrind: bool = False
    #: Kill the command after this many seconds (outcome ``timeout``).
    timeout_s: float | None = None
    #: Provenance recorded as given: the tool's version and its container image reference.
    tool_version: str | None = None
    image: str | None = None
    #: ``biossd device characterize`` record of the storage's device, copied into the run as
    #: ``device.json`` (Butil divides by its bandwidth).
    device_record: Path | None = None
    #: Cap memory + swap at the cap (the run may not swap; see :class:`MemoryCap`).
    no_swap: bool = False
    #: Wait for the host lock (``False``: refuse at once when another measured run holds it).
    wait_for_lock: bool = True
    #: The process this run works for (e.g. the Nextflow session): if it dies, the run stops
    #: as if interrupted, and its record names it.
    owner: ProcessRef | None = None
    #: Notes on waiting for the host lock go here (default: stderr).
    notify: Any = None
    #: A declared concurrent group's token (the shared-device experiment): the run takes no host lock of its own but
    #: runs only while the group's leader holds it (:class:`biossd.host.grouplock.GroupMember`).
    group: str | None = None
    #: What else the group's last member out takes down after a dead leader, beside its record
    #: and devices (a pipeline session's: the leader's socket; :func:`biossd.host.grouplock.tidy_after_group`).
    group_also_tidy: Any = None
    #: A leaderless group's token: the run holds the host lock shared with the group's other
    #: members, none of which outlives the others (a pipeline's tasks in SLURM jobs on one node,
    #: :class:`biossd.host.sharedlock.SharedHold`).
    shared_group: str | None = None
    #: A run whose device others may share (a pipeline's task, beside others or in its
    #: container): its requests are attributed by its process tree — its container's included —
    #: as a lone run's are (else a group member's or a container's trace is its device's, as seed
    #: 004's members each trace a device of their own and the study's runs hold the host alone).
    attribute_in_group: bool = False
    #: The command is a ``docker run --cidfile`` of this file: the tool runs in Docker's
    #: container, outside the profiler's cgroup; Docker's cap, OOM kill and peak are recorded
    #: (:mod:`biossd.host.dockerengine`), and ``docker run``'s own failure is a harness error.
    container_id_file: Path | None = None
    #: tracefs instances made ready by a long-lived owner (a pipeline session's leader,
    #: :class:`biossd.host.tracefs.InstancePool`): the block trace claims one of them before
    #: making its own, sparing a short run the kernel's cost of making and removing one.
    trace_pool: Sequence[Path] = ()
    #: Seconds the caller spent on this run before the profiler started (e.g. ``{"stage": 0.8}``
    #: for copying the input into scratch), recorded with the profiler's own phases in the
    #: manifest's ``harness_s``.
    phases_before_s: dict[str, float] = field(default_factory=dict)
