"""The paper's input data sets (Lee, Min and Yoon 2015, Table 5) as manifests, and fetching them verified.

``data-manifests/<id>.yaml`` says what a data set is, where it comes from, its licence, its
files (URL, size and sha256 where known — an unknown checksum is ``null`` with a note, never
invented), which catalogue tools use it, the recipe that turns it into the study's input, and
the synthetic kind that stands in for it offline (:mod:`biossd.study.inputs.data`).

``biossd data fetch ID`` downloads each file to ``DIR/<name>.part`` (resuming with an HTTP
``Range`` request), checks the sha256 and only then renames it into place. A mismatch removes
the partial file and refuses. A file whose checksum is unknown is refused too, unless the user
passes ``--accept-unverified`` (and the record says so). Without a network the command fails at
once and points to ``biossd data synth``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from biossd.core import yamlfile
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.paths import DATA_MANIFESTS_DIR

MANIFEST_DIR = DATA_MANIFESTS_DIR
#: The record ``biossd data fetch`` writes beside the files it verified.
FETCH_RECORD = "fetch.json"
CHUNK_BYTES = 1 << 20
CONNECT_TIMEOUT_S = 5.0
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

#: Manifest fields: name -> (types, required, what it is).
SCHEMA: dict[str, tuple[tuple[type, ...], bool, str]] = {
    "id": ((str,), True, "the file's name without .yaml"),
    "name": ((str,), True, "the data set's name in Lee, Min and Yoon (2015), Table 5"),
    "description": ((str,), True, "what it is"),
    "source": ((dict,), True, "{url | accession, citation}: where it comes from"),
    "licence": ((str,), True, "terms of use"),
    "files": ((list,), True, "[{name, url, size_bytes, sha256, checksum_note}]"),
    "used_by": ((list,), True, "catalogue ids of the tools that read it"),
    "recipe": ((str,), True, "how the study's input is made from it (subsample, region, ...)"),
    "synthetic": ((dict,), True, "{kind, size}: the stand-in from `biossd data synth`"),
    "prepare": ((dict,), False, "{recipe, files: {role: file name | null}, args, note}: the recipe as code "
                                "(biossd.study.inputs.recipes), run by `biossd data prepare`"),
    "note": ((str,), False, "free text"),
}
PREPARE_FIELDS = ("recipe", "files", "args", "note")
#: Where a data set's files are fetched from (a local file:// path is not a published source).
URL_SCHEMES = ("http", "https", "ftp")
#: A file no data set of the paper approaches (1 PiB): a size above it is a typo.
MAX_FILE_BYTES = 1 << 50
FILE_FIELDS = ("name", "url", "size_bytes", "sha256", "checksum_note")


class DatasetError(BiossdError, ValueError):
    """A broken manifest or a refused download; the message names the file/field or URL."""


def load(path: Path) -> dict[str, Any]:
    """Read and check one manifest; errors name the file and field."""
    path = Path(path)
    data = yamlfile.read_mapping(path, "a manifest", DatasetError)
    yamlfile.check_fields(path, data, {name: (types, what) for name, (types, _, what) in SCHEMA.items()},
                          {name for name, (_, required, _) in SCHEMA.items() if required}, "manifest", DatasetError)
    if data["id"] != path.stem:
        raise DatasetError(f"{path}: field 'id' is {data['id']!r} but the file is named {path.stem!r}")
    for i, f in enumerate(data["files"]):
        where = f"files[{i}]"
        if not isinstance(f, dict) or set(f) - set(FILE_FIELDS) or "name" not in f or "url" not in f:
            raise DatasetError(f"{path}: field '{where}' must have name and url (and only {FILE_FIELDS})")
        sha = f.get("sha256")
        if sha is None and not f.get("checksum_note"):
            raise DatasetError(f"{path}: field '{where}.checksum_note' is missing: say why the sha256 is unknown")
        if sha is not None and not _SHA256_RE.match(str(sha)):
            raise DatasetError(f"{path}: field '{where}.sha256' is not 64 hex digits")
        if not isinstance(f["name"], str) or f["name"] in ("", ".", "..") or "/" in f["name"] or "\0" in f["name"]:
            raise DatasetError(f"{path}: field '{where}.name' must be a plain file name (not empty, '.' or '..')")
        if urllib.parse.urlsplit(str(f["url"])).scheme not in URL_SCHEMES:
            raise DatasetError(f"{path}: field '{where}.url' {f['url']!r} is not an {'/'.join(URL_SCHEMES)} URL: a data "
                               "set is fetched from where it is published")
        size = f.get("size_bytes")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_FILE_BYTES):
            raise DatasetError(f"{path}: field '{where}.size_bytes' is {size!r}: a whole number of bytes from 0 to "
                               f"{MAX_FILE_BYTES} (or null when unknown)")
    names = [f["name"] for f in data["files"]]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DatasetError(f"{path}: field 'files' names {', '.join(twice)} more than once")
    if "kind" not in data["synthetic"]:
        raise DatasetError(f"{path}: field 'synthetic.kind' is missing")
    if "prepare" in data:
        _check_prepare(path, data, set(names))
    return data


def _check_prepare(path: Path, data: dict[str, Any], names: set[str]) -> None:
    """A ``prepare`` block names a known recipe of the manifest's kind, a file (or ``null`` and
    a note saying why) for each of its roles, and only arguments it takes."""
    from biossd.study.inputs import recipes

    block = data["prepare"]
    if set(block) - set(PREPARE_FIELDS) or "recipe" not in block or not isinstance(block.get("files"), dict):
        raise DatasetError(f"{path}: field 'prepare' must have recipe and files (and only {PREPARE_FIELDS})")
    recipe = recipes.RECIPES.get(block["recipe"])
    if recipe is None:
        raise DatasetError(f"{path}: field 'prepare.recipe' {block['recipe']!r} is not one of {sorted(recipes.RECIPES)}")
    if recipe.kind != data["synthetic"]["kind"]:
        raise DatasetError(f"{path}: field 'prepare.recipe' {recipe.name} makes a {recipe.kind} input, the "
                           f"manifest's synthetic stand-in is {data['synthetic']['kind']}: they must be one kind")
    roles = set(block["files"])
    if roles != set(recipe.roles):
        raise DatasetError(f"{path}: field 'prepare.files' has roles {sorted(roles)}; recipe {recipe.name} "
                           f"reads {sorted(recipe.roles)}")
    for role, name in block["files"].items():
        if name is None and not block.get("note"):
            raise DatasetError(f"{path}: field 'prepare.files.{role}' is null: say why in 'prepare.note'")
        if name is not None and name not in names:
            raise DatasetError(f"{path}: field 'prepare.files.{role}' names {name!r}, which is not in 'files'")
    unknown = set(block.get("args") or {}) - set(recipe.args)
    if unknown:
        raise DatasetError(f"{path}: field 'prepare.args' has {sorted(unknown)}; recipe {recipe.name} takes "
                           f"{sorted(recipe.args) or 'none'}")


def get(dataset_id: str, manifest_dir: Path = MANIFEST_DIR) -> dict[str, Any]:
    path = Path(manifest_dir) / f"{dataset_id}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(manifest_dir).glob("*.yaml"))
        raise DatasetError(f"unknown data set {dataset_id!r}; the manifests are {known}")
    return load(path)


def load_all(manifest_dir: Path = MANIFEST_DIR) -> list[dict[str, Any]]:
    return [load(p) for p in sorted(Path(manifest_dir).glob("*.yaml"))]


def _offline_hint(manifest: dict[str, Any]) -> str:
    kind = manifest["synthetic"]["kind"]
    return f"use the synthetic stand-in instead: `biossd data synth {kind} -o DIR`"


def _reachable(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"https": 443, "http": 80, "ftp": 21}.get(parts.scheme, 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def fetch_file(entry: dict[str, Any], out_dir: Path, accept_unverified: bool = False) -> dict[str, Any]:
    """Download one file (resuming a ``.part``), verify, rename into place; returns its record.

    A ``.part`` already as long as the manifest's ``size_bytes`` is verified and renamed without
    asking the server again (servers answer a range past the end with 416, which is handled the
    same way); a resumed answer's ``Content-Range`` must start where the ``.part`` ends and name
    the manifest's size; a download that ends short is kept as ``.part`` for the next try."""
    target = out_dir / entry["name"]
    part = target.with_name(target.name + ".part")
    expected = entry.get("sha256")
    size = entry.get("size_bytes")
    if expected is None and not accept_unverified:
        raise DatasetError(f"{entry['url']}: no known sha256 ({entry.get('checksum_note')}); refusing an "
                           "unverifiable download (pass --accept-unverified to take it anyway, recorded as such)")
    if target.is_file() and not target.is_symlink() and expected and _sha256(target) == expected:
        return {"name": entry["name"], "sha256": expected, "verified": True, "downloaded_bytes": 0}
    if (target.exists() or target.is_symlink()) and not _fetched_here(target):
        raise DatasetError(f"{target} exists and is not a file `biossd data fetch` downloaded there (its "
                           f"{FETCH_RECORD} does not name it with this content); nothing was downloaded: move it "
                           "away or fetch into another directory")
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()  # longer than the file can be: not a prefix of it
        have = 0
    if have and size is not None and have == size:
        return _finish(entry, part, target, downloaded=0, resumed_from=have)
    validator_file = part.with_name(part.name + VALIDATOR_SUFFIX)
    validator = validator_file.read_text().strip() if have and validator_file.is_file() else ""
    if have and not validator:
        have = 0  # a .part whose version is unknown is not resumed: the file may have changed since
    request = urllib.request.Request(entry["url"])
    if have:
        # Only the rest of the same version of the file: If-Range makes a changed file come whole.
        request.add_header("Range", f"bytes={have}-")
        request.add_header("If-Range", validator)
    downloaded = 0
    resumed = False
    try:
        with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S * 6) as response:
            status = getattr(response, "status", 200)
            resumed = bool(have) and status == HTTP_PARTIAL
            if resumed:
                _check_content_range(entry, response.headers.get("Content-Range"), have, size)
            elif size is not None and response.headers.get("Content-Length") not in (None, str(size)):
                raise DatasetError(f"{entry['url']}: the server sends {response.headers['Content-Length']} bytes, "
                                   f"the manifest's size_bytes is {size}; nothing was kept")
            if not resumed:
                answer = response.headers.get("ETag") or response.headers.get("Last-Modified") or ""
                atomic_write_text(validator_file, answer + "\n")
            with open(part, "ab" if resumed else "wb") as f:
                while chunk := response.read(CHUNK_BYTES):
                    f.write(chunk)
                    downloaded += len(chunk)
    except urllib.error.HTTPError as err:
        if err.code == HTTP_RANGE_NOT_SATISFIABLE and have:
            # Not "complete": a .part as long as a known size was finished above; here the server
            # says the .part does not fit its file, so it is dropped and the next try starts over.
            part.unlink(missing_ok=True)
            validator_file.unlink(missing_ok=True)
            raise DatasetError(f"{entry['url']}: the server refused to resume at byte {have} (416): the file is "
                               "not the one the .part began; the .part was removed, run again to download it whole") from None
        raise DatasetError(f"{entry['url']}: download failed ({err}); run again to resume") from None
    except (urllib.error.URLError, OSError) as err:
        raise DatasetError(f"{entry['url']}: download failed ({err}); run again to resume") from None
    got = part.stat().st_size
    if size is not None and got < size:
        raise DatasetError(f"{entry['url']}: the download ended after {got} of {size} bytes; kept as {part}: "
                           "run again to resume")
    return _finish(entry, part, target, downloaded=downloaded, resumed_from=have if resumed and downloaded else 0)


def _fetched_here(target: Path) -> bool:
    """Whether ``target`` is a file an earlier fetch into its directory downloaded and recorded
    (``fetch.json`` names it with the sha256 it still has): only such a file is replaced."""
    if target.is_symlink() or not target.is_file():
        return False
    try:
        files = json.loads((target.parent / FETCH_RECORD).read_text()).get("files", [])
        recorded = {f.get("name"): f.get("sha256") for f in files if isinstance(f, dict)}
    except (OSError, ValueError, AttributeError):
        return False
    return recorded.get(target.name) is not None and recorded[target.name] == _sha256(target)


#: HTTP statuses of a resumed download: the rest of the file, or a range past its end.
HTTP_PARTIAL = 206
HTTP_RANGE_NOT_SATISFIABLE = 416
#: Beside a ``.part``: the ETag (or Last-Modified) of the answer it began with, for If-Range.
VALIDATOR_SUFFIX = ".validator"


def _check_content_range(entry: dict[str, Any], header: str | None, have: int, size: int | None) -> None:
    """``Content-Range: bytes START-END/TOTAL`` must start at ``have`` and (when the manifest
    knows it) name its size."""
    import re

    match = re.match(r"^bytes (\d+)-(\d+)/(\d+|\*)$", header or "")
    if not match or int(match.group(1)) != have or (size is not None and match.group(3) not in ("*", str(size))):
        raise DatasetError(f"{entry['url']}: resumed at byte {have} but the server answered Content-Range "
                           f"{header!r} (manifest size_bytes {size}); the .part was kept, nothing was used")


def _finish(entry: dict[str, Any], part: Path, target: Path, downloaded: int, resumed_from: int) -> dict[str, Any]:
    """Verify the complete ``.part`` and rename it into place (a mismatch removes it)."""
    expected = entry.get("sha256")
    size = entry.get("size_bytes")
    got = part.stat().st_size
    actual = _sha256(part)
    part.with_name(part.name + VALIDATOR_SUFFIX).unlink(missing_ok=True)
    if (expected and actual != expected) or (size is not None and got != size):
        part.unlink()
        raise DatasetError(f"{entry['url']}: the download ({got} bytes, sha256 {actual}) does not match the "
                           f"manifest's ({size} bytes, sha256 {expected}); it was removed and nothing was used")
    part.replace(target)
    return {"name": entry["name"], "sha256": actual, "verified": bool(expected), "downloaded_bytes": downloaded,
            "resumed_from_bytes": resumed_from}


def fetch(dataset_id: str, out_dir: Path, accept_unverified: bool = False,
          manifest_dir: Path = MANIFEST_DIR) -> dict[str, Any]:
    """Fetch every file of a data set into ``out_dir`` and write ``fetch.json``."""
    manifest = get(dataset_id, manifest_dir)
    files = manifest["files"]
    if not files:
        raise DatasetError(f"{dataset_id}: the manifest lists no downloadable file; {_offline_hint(manifest)}")
    if not _reachable(files[0]["url"]):
        raise DatasetError(f"{dataset_id}: {files[0]['url']} is not reachable (offline?); {_offline_hint(manifest)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = [fetch_file(f, out_dir, accept_unverified) for f in files]
    record = {"dataset": dataset_id, "files": records}
    atomic_write_text(out_dir / FETCH_RECORD, json.dumps(record, indent=2) + "\n")
    return record


def preparable(manifest: dict[str, Any], data_dir: Path) -> str | None:
    """Why ``manifest``'s data set cannot be prepared from ``data_dir`` now (``None``: it can):
    no recipe as code, a role without a pinned file, or files not fetched."""
    block = manifest.get("prepare")
    if not block:
        return (f"data-manifests/{manifest['id']}.yaml has no prepare recipe as code (its recipe: "
                f"{manifest['recipe']})")
    unpinned = sorted(role for role, name in block["files"].items() if name is None)
    if unpinned:
        return (f"data-manifests/{manifest['id']}.yaml pins no file for {', '.join(unpinned)} ({block.get('note')}); "
                "pin it (name, url, size_bytes, sha256) to prepare this data set")
    record = Path(data_dir) / FETCH_RECORD
    try:
        fetched = json.loads(record.read_text())
    except (OSError, ValueError):
        return f"{record} is missing: fetch the data set first (`biossd data fetch {manifest['id']} -o {data_dir}`)"
    have = {f.get("name") for f in fetched.get("files", [])} if fetched.get("dataset") == manifest["id"] else set()
    missing = sorted(set(block["files"].values()) - have)
    if missing:
        return (f"{record} does not list {', '.join(missing)} of {manifest['id']}: fetch it again "
                f"(`biossd data fetch {manifest['id']} -o {data_dir}`)")
    return None


def _check_room(out_dir: Path, least_bytes: int) -> None:
    """Refuse an input whose least size (its sources' bytes or ``--size``, the smaller, times
    ``--scale``: what the recipe writes at the least) exceeds what ``out_dir``'s file system has free."""
    import shutil

    from biossd.core.units import format_size

    where = out_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if least_bytes > free:
        raise DatasetError(f"-o {out_dir}: the input takes at least {format_size(least_bytes)} (--size or its sources, "
                           f"times --scale), and {where}'s file system has {format_size(free)} free; free space there "
                           "or give a smaller --size or --scale")


def prepare(dataset_id: str, data_dir: Path, out_dir: Path, size_bytes: int, seed: int, scale: int = 1,
            manifest_dir: Path = MANIFEST_DIR) -> dict[str, Any]:
    """Make a study input of ``size_bytes`` (replicated ``scale`` times) from the fetched files
    of ``dataset_id`` in ``data_dir`` by the manifest's recipe, into ``out_dir`` with its record
    (``prepared.json``): the data set, the recipe and its arguments, the seed, each source file
    with its URL and sha256 (checked again here against what the fetch verified), and the sha256
    of every file made."""
    from biossd.study.inputs import data, kinds, recipes

    if scale < 1:
        raise DatasetError(f"--scale must be a whole number >= 1, got {scale}")
    if size_bytes < 1:
        raise DatasetError(f"--size must be at least 1 byte, got {size_bytes} (a size larger than the data set "
                           "takes all of it)")
    manifest = get(dataset_id, manifest_dir)
    why = preparable(manifest, data_dir)
    if why:
        raise DatasetError(f"{dataset_id}: cannot prepare: {why}")
    block = manifest["prepare"]
    recipe = recipes.RECIPES[block["recipe"]]
    fetched = {f["name"]: f for f in json.loads((Path(data_dir) / FETCH_RECORD).read_text())["files"]}
    by_name = {f["name"]: f for f in manifest["files"]}
    sources, paths = [], {}
    for role, name in sorted(block["files"].items()):
        path = Path(data_dir) / name
        actual = _sha256(path) if path.is_file() else None
        if actual is None or actual != fetched[name].get("sha256"):
            raise DatasetError(f"{path}: {'missing' if actual is None else 'its sha256 ' + actual} is not the file "
                               f"`biossd data fetch` verified ({fetched[name].get('sha256')}); fetch it again")
        paths[role] = path
        sources.append({"role": role, "name": name, "url": by_name[name]["url"], "sha256": actual,
                        "verified": bool(fetched[name].get("verified")) and actual == by_name[name].get("sha256")})
    manifest_path = Path(manifest_dir) / f"{dataset_id}.yaml"
    _check_room(Path(out_dir), min(size_bytes, sum(p.stat().st_size for p in paths.values())) * scale)

    def make(partial: Path) -> dict[str, Any]:
        try:
            made = recipe.make(paths, partial, size_bytes, seed, scale, dict(block.get("args") or {}))
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DatasetError(f"-o {out_dir}: its file system filled while {recipe.name} wrote the input "
                                   f"({err.strerror}); nothing was kept; free space there or give a smaller --size "
                                   "or --scale") from None
            raise DatasetError(f"{dataset_id}: recipe {recipe.name} could not read its sources ({err})") from None
        except (UnicodeDecodeError, EOFError) as err:
            raise DatasetError(f"{dataset_id}: recipe {recipe.name} could not read its sources ({err})") from None
        return {"kind": recipe.kind, "dataset": dataset_id, "recipe": recipe.name, "args": block.get("args") or {},
                "manifest_sha256": _sha256(manifest_path), "seed": seed, "requested_size_bytes": size_bytes,
                "scale": scale, "records": made["records"], "source_records": made["source_records"],
                "sources": sources, "tools": made.get("tools", {}), "files": made["files"]}

    return data.write_input(Path(out_dir), make, kinds.PREPARED_RECORD)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()
