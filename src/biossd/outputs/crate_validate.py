"""A result set's RO-Crate checked by roc-validator (``biossd crate RESULTS --validate``), offline.

The validator (``rocrate-validator``, pinned in an environment of its own:
install/roc-validator/requirements.lock) checks the crate against the most specific profile it
claims, Workflow Run Crate 0.5, which inherits the others it claims (Process Run Crate 0.5,
Workflow RO-Crate 1.0) and RO-Crate 1.1. Its one remote document, the RO-Crate 1.1 JSON-LD
context, is served from the validator's own HTTP cache, seeded at install time with the context
file that the pinned ``rocrate`` package ships, checked by its sha256
(install/roc-validator/seed_context.py): the validator runs with ``--offline`` and never reaches the
network; a document missing from the cache would show as a skipped check, which counts as a
failure here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from biossd.core.errors import BiossdError

VALIDATOR = "rocrate-validator"
#: The most specific profile the crate claims; the validator follows its inheritance.
PROFILE = "workflow-run-crate-0.5"
#: The cache the installer seeds, beside the validator's environment (``<env>/cache/context.sqlite``).
CACHE_PREFIX = Path("cache") / "context"
#: How long the validator may take on a study's crate (about 3 s on the project's VM).
TIMEOUT_S = 600


class ValidatorMissing(BiossdError, RuntimeError):
    pass


@dataclass
class Verdict:
    """What roc-validator found: the profiles it checked, the checks run, failed and skipped."""

    profiles: list[str]
    checks: int
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.checks > 0 and not self.failed and not self.skipped

    def summary(self) -> str:
        head = (f"roc-validator (offline), profile {PROFILE} ({', '.join(self.profiles)}): {self.checks} REQUIRED "
                f"checks, {len(self.failed)} failed, {len(self.skipped)} skipped")
        return "\n".join([head] + [f"  failed: {f}" for f in self.failed] + [f"  skipped: {s}" for s in self.skipped])


def validator() -> tuple[Path, Path]:
    """The validator's command and its seeded cache prefix; ValidatorMissing says how to install them."""
    found = shutil.which(VALIDATOR, path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if not found:
        raise ValidatorMissing(f"{VALIDATOR} is not installed: run `make install` (install/bootstrap.sh roc-validator)")
    env_dir = Path(found).resolve().parent.parent
    cache = env_dir / CACHE_PREFIX
    if not cache.with_suffix(".sqlite").is_file():
        raise ValidatorMissing(f"{cache}.sqlite, the validator's offline copy of the RO-Crate 1.1 context, is missing: "
                               "run `install/bootstrap.sh roc-validator` again")
    return Path(found), cache


def validate(results: Path) -> Verdict:
    """Run roc-validator offline on ``results``' crate (``biossd crate`` writes it) and read its report."""
    results = Path(results)
    if not (results / "ro-crate-metadata.json").is_file():
        raise BiossdError(f"{results}/ro-crate-metadata.json: no crate; run `biossd crate {results}` first")
    command, cache = validator()
    with tempfile.TemporaryDirectory(prefix="biossd-rocval-") as tmp:
        report = Path(tmp) / "report.json"
        proc = subprocess.run([str(command), "-y", "--disable-color", "validate", "--offline", "--cache-path", str(cache),
                               "-p", PROFILE, "--no-paging", "-f", "json", "-o", str(report), str(results.resolve())],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp)
        if not report.is_file():
            raise BiossdError(f"{VALIDATOR} wrote no report (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        body = json.loads(report.read_text())
    return verdict_of(body)


def verdict_of(body: dict) -> Verdict:
    """A Verdict from roc-validator's JSON report (``-f json``)."""
    stats = body.get("statistics", {})
    failed = sorted({f"{i['check']['identifier']}: {i['message']}"
                     + (f" ({i.get('violatingEntity')})" if i.get("violatingEntity") else "")
                     for i in body.get("issues", []) if i.get("severity") == "REQUIRED"})
    skipped = [str(s.get("identifier", s) if isinstance(s, dict) else s)
               for s in body.get("skipped_check_details") or []]
    if stats.get("total_skipped_checks") and not skipped:
        skipped = [f"{stats['total_skipped_checks']} checks"]
    return Verdict(profiles=list(stats.get("profiles", [])), checks=int(stats.get("total_checks", 0)),
                   failed=failed, skipped=skipped)
