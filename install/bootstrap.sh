#!/usr/bin/env bash
# Installs what biossd needs, idempotently: Debian packages, the Python environment (.venv) from
# the pinned lock, and Nextflow 24.10.0 and S3Proxy 2.1.0 from Maven Central. Each step writes a stamp holding the
# hash of its inputs only after it succeeded; a later call with the same inputs skips the step,
# and a step that failed half-way is redone whole.
#
#   install/bootstrap.sh [check|system|python|nextflow|s3proxy|multiqc|cffconvert|roc-validator|nf-core|docker|tex|all]   (all: all but tex)
#   install/bootstrap.sh pins [LIST]   the pinned packages of LIST as installed here (to refresh pins)
#
# Debian packages that shape a measurement are pinned (install/debian-packages.txt); the Maven
# artefacts are checked against install/*/sha256sums.txt. apt waits for a busy dpkg lock (up to
# 300 s) and finishes an interrupted dpkg (dpkg --configure -a) first.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
venv=${VENV:-$repo/.venv}
stamps=$venv/.stamps
python=${BIOSSD_PYTHON:-/usr/bin/python3}
nextflow_version=24.10.0
java_min=17

die() { printf 'biossd install: %s\n' "$*" >&2; exit 1; }
note() { printf 'biossd install: %s\n' "$*" >&2; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
stamp_ok() { [ -f "$stamps/$1" ] && [ "$(cat "$stamps/$1")" = "$2" ]; }
stamp_write() { mkdir -p "$stamps"; printf '%s\n' "$2" > "$stamps/$1.tmp" && mv "$stamps/$1.tmp" "$stamps/$1"; }

packages() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${1:-$here/debian-packages.txt}"; }

# uv (install/uv/requirements.lock, kept in $venv/uv), installed once: it installs a lock in a
# fraction of pip's time. Where it cannot be installed (another platform), pip does, saying so;
# the attempt is made once per call.
uv_tried=
uv_ready() {
  local uv=$venv/uv/bin/uv
  if [ ! -x "$uv" ] && [ -z "$uv_tried" ]; then
    uv_tried=1
    rm -rf "$venv/uv.tmp"
    if "$python" -m venv "$venv/uv.tmp" && "$venv/uv.tmp/bin/pip" install -q --disable-pip-version-check \
        --require-hashes --no-deps -r "$here/uv/requirements.lock"; then
      rm -rf "$venv/uv" && mv "$venv/uv.tmp" "$venv/uv"
    else
      rm -rf "$venv/uv.tmp"
      note "uv could not be installed from install/uv/requirements.lock (no network to PyPI, or no wheel for this platform): installing with pip"
    fi
  fi
  [ -x "$uv" ]
}

# Install a hashed lock ($2) into the environment of the interpreter $1 (and its bytecode), with uv
# where it is installed, else with the environment's pip. Both honour PIP_INDEX_URL.
pip_install() {
  local target=$1 lock=$2
  if uv_ready; then
    "$venv/uv/bin/uv" pip install -q --python "$target" --require-hashes --no-deps --compile-bytecode \
      ${PIP_INDEX_URL:+--index-url "$PIP_INDEX_URL"} -r "$lock"
  else
    "$(dirname "$target")/pip" install -q --disable-pip-version-check --require-hashes --no-deps -r "$lock"
  fi
}

# True when every package of the list ($1) is installed at its pinned version (one dpkg-query each).
system_satisfied() {
  local spec name want have
  while read -r spec; do
    name=${spec%%=*}; want=${spec#*=}; [ "$want" = "$spec" ] && want=
    have=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$name" 2>/dev/null) || return 1
    case $have in ii*) ;; *) return 1 ;; esac
    [ -z "$want" ] || [ "${have#ii }" = "$want" ] || return 1
  done < <(packages "$1")
}

# How long apt waits for another apt/dpkg (unattended-upgrades, a second install) to let go.
dpkg_lock_timeout_s=300

# Run an apt/dpkg command ($2...) described as $1; on failure, die with the command's own last
# lines of output rather than a guess at the cause.
apt_run() {
  local what=$1 log; shift
  log=$(mktemp -t biossd-apt.XXXXXX)
  if ! DEBIAN_FRONTEND=noninteractive "$@" >"$log" 2>&1; then
    note "$what failed: $*"
    tail -n 15 "$log" | sed 's/^/  | /' >&2
    rm -f "$log"
    die "$what failed (apt's own words above)"
  fi
  rm -f "$log"
}

# dpkg left half-way (an interrupted install) refuses every later one: finish what it started.
dpkg_recover() {
  if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
    note "dpkg was interrupted earlier; finishing its work: dpkg --configure -a"
    apt_run "dpkg --configure -a" dpkg --configure -a
  fi
}

# Install a package list ($2) under a stamp ($1): skipped when the stamp and the packages agree.
apt_list() {
  local stamp=$1 list=$2 key; key=$(hash_of "$list")
  if stamp_ok "$stamp" "$key" && system_satisfied "$list"; then return 0; fi
  if ! system_satisfied "$list"; then
    note "installing Debian packages: $(packages "$list" | tr '\n' ' ')"
    dpkg_recover
    apt_run "apt-get update" apt-get -o DPkg::Lock::Timeout=$dpkg_lock_timeout_s update -qq
    # shellcheck disable=SC2046
    apt_run "apt-get install" apt-get -o DPkg::Lock::Timeout=$dpkg_lock_timeout_s install -y -qq \
      --no-install-recommends $(packages "$list")
    system_satisfied "$list" || die "packages still missing or at other versions after apt-get install: see $list"
  fi
  stamp_write "$stamp" "$key"
}

# The pins of a package list ($1) as this host has them installed (NAME=VERSION): how the pins
# are refreshed — install the newer packages, run this, and replace the list's pinned lines.
pins() {
  local spec name
  while read -r spec; do
    name=${spec%%=*}
    [ "$name" = "$spec" ] && continue
    printf '%s=%s\n' "$name" "$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || echo NOT-INSTALLED)"
  done < <(packages "${1:-$here/debian-packages.txt}")
}

# The jars Maven resolved into $1 are exactly those $2 (sha256sum's format) pins.
check_jars() {
  local dir=$1 sums=$2
  diff <(cd "$dir" && ls -1 -- *.jar | sort) <(awk '{ print $2 }' "$sums" | sort) >/dev/null \
    || die "Maven delivered other jars into $dir than $sums pins; nothing was installed"
  (cd "$dir" && sha256sum --quiet --strict -c "$sums" >/dev/null 2>&1) \
    || die "a jar in $dir does not have the SHA-256 that $sums pins; nothing was installed"
}

check() {
  [ "$(id -u)" = 0 ] || die "must run as root: it installs Debian packages and the study uses cgroups and drops caches (run: sudo make ...)"
  command -v apt-get >/dev/null || die "apt-get not found: biossd installs its tools from Debian bookworm packages; on another system install the packages in install/debian-packages.txt (or use environment.yml) yourself"
  command -v dpkg-query >/dev/null || die "dpkg-query not found (a Debian system is needed)"
  policy_rc_heal
}

# Debian's hook that says whether a package's service may start (docker_env makes one answering
# "not allowed" for the length of its install; BIOSSD_POLICY_RC moves it, for the tests).
policy_rc=${BIOSSD_POLICY_RC:-/usr/sbin/policy-rc.d}
policy_rc_mark='made by biossd install/bootstrap.sh'

# The kernel's start time of process $1 (field 22 of its stat), empty when it is gone: a pid
# with its start time names one process, never a later one given the same pid.
start_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# A policy-rc.d an install made and could not remove (it was killed) stops every package's
# service from starting on this host: removed once the install that made it is gone. One that
# does not carry the mark is the host's and is never touched.
policy_rc_heal() {
  local path pid ticks
  for path in "$policy_rc.biossd-tmp" "$policy_rc"; do
    [ -f "$path" ] && grep -q "$policy_rc_mark" "$path" || continue
    pid=; ticks=
    read -r pid ticks < <(sed -n 's/.*(pid \([0-9]*\), started \([0-9]*\)).*/\1 \2/p' "$path") || true
    if [ -n "$pid" ] && [ -n "$(start_ticks "$pid")" ] && [ "$(start_ticks "$pid")" = "$ticks" ]; then
      continue  # its install is still running
    fi
    rm -f "$path"
    note "removed $path: an install of docker.io that was interrupted (pid ${pid:-unrecorded}) left it, and it kept every package's service from starting"
  done
}

system() {
  check
  apt_list system "$here/debian-packages.txt"
  local jv; jv=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ -n "$jv" ] && [ "$jv" -ge "$java_min" ] || die "Java $java_min or newer is needed for Nextflow (found: ${jv:-none}); install openjdk-17-jre-headless"
}

tex() {
  check
  apt_list tex "$here/tex-packages.txt"
}

# Debian's Docker engine (docker.io) for -profile docker; biossd starts a dockerd of its own
# (`biossd docker up`). A host that already has a dockerd (the user's Docker) keeps it as it is.
# The package's service is not started by the install: for its duration /usr/sbin/policy-rc.d
# answers 101 ("not allowed"), made here only when the host has none and removed afterwards (or,
# if this install is killed, by the next call: policy_rc_heal).
docker_env() {
  check
  if system_satisfied "$here/docker-packages.txt"; then return 0; fi
  if command -v dockerd >/dev/null; then
    note "dockerd is already installed here (not Debian's pinned docker.io): biossd uses it as it is"
    return 0
  fi
  local made=
  if [ ! -e "$policy_rc" ]; then
    trap 'rm -f "$policy_rc"' EXIT
    printf '#!/bin/sh\n# %s (pid %s, started %s) for the install of docker.io; removed after it\nexit 101\n' \
      "$policy_rc_mark" "$$" "$(start_ticks $$)" > "$policy_rc.biossd-tmp"
    chmod 755 "$policy_rc.biossd-tmp"
    mv "$policy_rc.biossd-tmp" "$policy_rc"
    made=1
  fi
  apt_list docker "$here/docker-packages.txt"
  if [ -n "$made" ]; then rm -f "$policy_rc"; trap - EXIT; fi
}

# Only a directory this script made (its .stamps) or an empty/missing one is rebuilt: VENV=/usr or
# VENV=$HOME by mistake must never lose its bin/ and lib/. One made for another checkout (a .venv
# linked from one clone to another's) is that checkout's: rebuilding it for this one would take
# its bin/ and lib/ away from it.
venv_is_ours() {
  local ours; ours=$(cd "$repo" && pwd -P)  # the checkout, however it was reached
  [ ! -e "$venv" ] && { mkdir -p "$stamps" && echo "$ours" > "$stamps/checkout"; return 0; }  # made here
  if [ -d "$stamps" ]; then
    local made_for; made_for=$(cat "$stamps/checkout" 2>/dev/null || true)
    [ -z "$made_for" ] || [ "$made_for" = "$ours" ] \
      || die "$venv is the environment of the checkout $made_for, not of $ours; set VENV to a new directory (or remove the link)"
    # An environment made before checkouts were recorded is adopted (a user without write access
    # to it is told what the command needs by the step that needs it).
    [ -n "$made_for" ] || { echo "$ours" > "$stamps/checkout"; } 2>/dev/null || true
    return 0
  fi
  [ -d "$venv" ] && [ -z "$(ls -A "$venv")" ] && { mkdir -p "$stamps" && echo "$ours" > "$stamps/checkout"; return 0; }
  die "$venv exists and is not an environment biossd made (no $stamps); set VENV to a new directory"
}

python_env() {
  local key; key=$(hash_of "$here/requirements.lock" "$repo/pyproject.toml" <(echo "$python"))
  if stamp_ok python "$key" && [ -x "$venv/bin/biossd" ]; then bytecode; return 0; fi
  [ -x "$python" ] || die "$python not found: install python3 and python3-venv (install/bootstrap.sh system does)"
  note "creating the Python environment in $venv from install/requirements.lock"
  rm -f "$stamps/python"
  rm -rf "$venv/bin" "$venv/lib" "$venv/lib64" "$venv/include" "$venv/share" "$venv/pyvenv.cfg"
  "$python" -m venv "$venv" || die "could not create a virtual environment with $python -m venv (is python3-venv installed?)"
  pip_install "$venv/bin/python" "$here/requirements.lock" \
    || die "pip install from install/requirements.lock failed: no network to PyPI? (check: $venv/bin/pip download --no-deps -d /tmp pip)"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$repo" \
    || die "installing the biossd package itself (pip install -e .) failed"
  "$venv/bin/biossd" --version >/dev/null || die "biossd was installed but does not run"
  # The rebuilt bin/ lost the Nextflow launcher; the jars it runs are still there.
  if [ -f "$venv/nextflow/lib/nextflow-$nextflow_version.jar" ]; then write_launcher "$venv/nextflow/lib"; fi
  stamp_write python "$key"
  bytecode
}

# The package's bytecode, compiled now: every profiled task of a pipeline starts biossd afresh,
# and a host with PYTHONDONTWRITEBYTECODE set would compile its modules again each time. Run
# on every install (compileall redoes only what changed); __pycache__ is git-ignored.
bytecode() {
  "$venv/bin/python" -m compileall -q "$repo/src/biossd" >/dev/null \
    || die "compiling biossd's bytecode ($venv/bin/python -m compileall $repo/src/biossd) failed"
}

# Java 17 module openings that Nextflow's own launcher passes (its Kryo serialization of task
# data, used by collectFile/unique and the cache, needs java.util and friends open).
jvm_opens="--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED \
--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED \
--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/java.util.regex=ALL-UNNAMED \
--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/sun.nio.fs=ALL-UNNAMED \
--add-opens=java.base/sun.net.www.protocol.http=ALL-UNNAMED --add-opens=java.base/sun.net.www.protocol.https=ALL-UNNAMED \
--add-opens=java.base/sun.net.www.protocol.ftp=ALL-UNNAMED --add-opens=java.base/sun.net.www.protocol.file=ALL-UNNAMED \
--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED --add-opens=java.base/jdk.internal.vm=ALL-UNNAMED"

# The launcher is rewritten whenever it is missing or differs (cheap): a rebuilt venv loses its bin/.
# Nextflow only orchestrates: a JVM with the client compiler only and the serial collector starts
# a run about 2 s sooner (a stub-run of two tools: 6.5 s -> 4.5 s) and keeps fewer compiler and
# collector threads busy beside the measured tools. NXF_OPTS, given after them, overrides them.
nextflow_jvm="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Nextflow's classes archived once (Java's dynamic class-data sharing, JDK 13+): a JVM that maps
# them from the archive instead of loading and verifying each starts a run about 2 s sooner (a
# stub-run of -profile test: 8.5 s -> 6.6 s here). Made at install by a run of a two-task pipeline;
# a launcher whose archive is absent, or from another JDK, runs without it (-Xshare:auto; its
# warnings off).
nextflow_cds=$venv/nextflow/classes.jsa

write_launcher() {
  local lib=$1 launcher=$venv/bin/nextflow
  mkdir -p "$venv/bin"
  cat > "$launcher.tmp" <<LAUNCHER
#!/bin/sh
# Nextflow $nextflow_version for biossd, run offline from the jars resolved by install/nextflow/pom.xml.
export NXF_OFFLINE=true
export NXF_HOME="\${NXF_HOME:-$venv/nextflow/home}"
cds="$nextflow_cds"
if [ -f "\$cds" ]; then
  set -- -XX:SharedArchiveFile="\$cds" -Xlog:cds=off -Xlog:cds+dynamic=off nextflow.cli.Launcher "\$@"
else
  set -- nextflow.cli.Launcher "\$@"
fi
# NXF_TEMP (as Nextflow's own launcher): the JVM's temporary files (compiled scripts) go there.
exec java $jvm_opens $nextflow_jvm \${NXF_TEMP:+-Djava.io.tmpdir=\$NXF_TEMP} \${NXF_OPTS:-} -cp "$lib/*" "\$@"
LAUNCHER
  chmod +x "$launcher.tmp" && mv "$launcher.tmp" "$launcher"
  "$launcher" -version >/dev/null 2>&1 || die "the Nextflow launcher $launcher does not run (is Java $java_min installed?)"
}

# The archive of Nextflow's classes, made again when Nextflow or the JDK changed. Not being able to
# make it is said and is not an error: Nextflow runs without it.
nextflow_classes() {
  local key work
  key="$(hash_of "$here/nextflow/pom.xml") $(java -version 2>&1 | sha256sum | cut -d' ' -f1)"
  if stamp_ok nextflow-classes "$key" && [ -f "$nextflow_cds" ]; then return 0; fi
  note "archiving Nextflow's classes for a faster start ($nextflow_cds)"
  rm -f "$stamps/nextflow-classes" "$nextflow_cds"
  work=$(mktemp -d "${TMPDIR:-/tmp}/biossd-nextflow-classes.XXXXXX")
  printf '%s\n' 'process ECHO { input: val x; output: stdout; script: "echo $x" }' \
    'workflow { Channel.of(1, 2) | ECHO | view }' > "$work/main.nf"
  if (cd "$work" && NXF_OPTS="-XX:ArchiveClassesAtExit=$nextflow_cds.tmp" "$venv/bin/nextflow" -q run main.nf) \
      >"$work/log" 2>&1 && [ -s "$nextflow_cds.tmp" ] && mv "$nextflow_cds.tmp" "$nextflow_cds" \
      && NXF_OPTS=-Xshare:on "$venv/bin/nextflow" -version >>"$work/log" 2>&1; then
    stamp_write nextflow-classes "$key"
  else
    rm -f "$nextflow_cds.tmp" "$nextflow_cds"
    note "could not archive Nextflow's classes (Nextflow starts without them): $(tail -n 3 "$work/log" | tr '\n' ' ')"
  fi
  rm -rf "$work"
}

nextflow_env() {
  local key; key=$(hash_of "$here/nextflow/pom.xml")
  local lib=$venv/nextflow/lib
  if ! stamp_ok nextflow "$key" || [ ! -f "$lib/nextflow-$nextflow_version.jar" ]; then
    command -v mvn >/dev/null || die "mvn not found: install maven (install/bootstrap.sh system does)"
    note "resolving Nextflow $nextflow_version from Maven Central"
    rm -f "$stamps/nextflow"
    mkdir -p "$venv/nextflow" && rm -rf "$lib.tmp" && mkdir -p "$lib.tmp"
    mvn -q -B -f "$here/nextflow/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib.tmp" >"$venv/nextflow/mvn.log" 2>&1 \
      || die "resolving io.nextflow:nextflow:$nextflow_version failed: no network to Maven Central? (see $venv/nextflow/mvn.log)"
    [ -f "$lib.tmp/nextflow-$nextflow_version.jar" ] || die "Maven did not deliver nextflow-$nextflow_version.jar"
    check_jars "$lib.tmp" "$here/nextflow/sha256sums.txt"
    rm -rf "$lib" && mv "$lib.tmp" "$lib"
    write_launcher "$lib"
    stamp_write nextflow "$key"
  elif [ ! -x "$venv/bin/nextflow" ] || ! grep -q -- "$nextflow_jvm" "$venv/bin/nextflow" \
      || ! grep -q -- "SharedArchiveFile" "$venv/bin/nextflow"; then
    write_launcher "$lib"
  fi
  nextflow_classes
}

# S3Proxy (seed 002's object server) from Maven Central: the jar with its dependencies, into
# $VENV/s3proxy/ (biossd.host.objectstore finds it there).
s3proxy_version=2.1.0
s3proxy_env() {
  local dir=$venv/s3proxy jar=s3proxy-$s3proxy_version-jar-with-dependencies.jar
  if stamp_ok s3proxy "$s3proxy_version" && [ -f "$dir/$jar" ]; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found: install maven (install/bootstrap.sh system does)"
  note "resolving S3Proxy $s3proxy_version from Maven Central"
  rm -f "$stamps/s3proxy"; rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  (cd "$dir.tmp" && mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact="org.gaul:s3proxy:$s3proxy_version:jar:jar-with-dependencies" -DoutputDirectory="$dir.tmp" \
      >"$dir.tmp/mvn.log" 2>&1) || die "resolving org.gaul:s3proxy:$s3proxy_version failed: no network to Maven Central? (see $dir.tmp/mvn.log)"
  [ -f "$dir.tmp/$jar" ] || die "Maven did not deliver $jar"
  rm -f "$dir.tmp/mvn.log"
  check_jars "$dir.tmp" "$here/s3proxy/sha256sums.txt"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  stamp_write s3proxy "$s3proxy_version"
}

# A tool in an environment of its own ($venv/<name>, from install/<name>/requirements.lock), so its
# dependencies never move the analysis environment's pins; its command linked into $venv/bin.
#   MultiQC: the report nf-core pipelines end with (biossd's pipeline report writes MultiQC custom
#     content, and a test runs MultiQC over it).
#   cffconvert: checks CITATION.cff; it requires jsonschema<4, the analysis environment >=4.
#   nf-core: `nf-core pipelines schema lint` checks the study's parameter schema.
tool_env() {
  local name=$1 exe=$2 dir=$venv/$1
  local key; key=$(hash_of "$here/$name/requirements.lock" <(echo "$python"))
  if stamp_ok "$name" "$key" && [ -x "$dir/bin/$exe" ] && [ -L "$venv/bin/$exe" ]; then return 0; fi
  note "creating $exe's environment in $dir from install/$name/requirements.lock"
  rm -f "$stamps/$name"; rm -rf "$dir.tmp"
  # Without pip where uv fills it: `python -m venv` spends 4 s installing pip into each.
  local bare=(); if uv_ready; then bare=(--without-pip); fi
  "$python" -m venv "${bare[@]}" "$dir.tmp" || die "could not create a virtual environment with $python -m venv"
  pip_install "$dir.tmp/bin/python" "$here/$name/requirements.lock" \
    || die "pip install from install/$name/requirements.lock failed: no network to PyPI?"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  # A venv's scripts name their interpreter by path: rewrite the moved one's.
  sed -i "1s|^#!.*|#!$dir/bin/python|" "$dir/bin/$exe"
  NFCORE_NO_VERSION_CHECK=1 "$dir/bin/$exe" --version >/dev/null 2>&1 || die "$exe was installed but does not run"
  mkdir -p "$venv/bin" && ln -sfn "$dir/bin/$exe" "$venv/bin/$exe"
  stamp_write "$name" "$key"
}

# roc-validator: checks a result set's RO-Crate against the profiles it claims (biossd crate
# --validate), offline: its HTTP cache is seeded with the RO-Crate 1.1 context that the pinned
# rocrate package ships, checked against install/roc-validator/context.sha256.
roc_validator_env() {
  tool_env roc-validator rocrate-validator
  local cache=$venv/roc-validator/cache/context key sum
  key=$(hash_of "$here/roc-validator/seed_context.py" "$here/roc-validator/context.sha256" "$here/roc-validator/requirements.lock")
  if stamp_ok roc-validator-cache "$key" && [ -f "$cache.sqlite" ]; then return 0; fi
  sum=$(grep -v '^#' "$here/roc-validator/context.sha256" | head -n1)
  mkdir -p "$(dirname "$cache")"
  "$venv/roc-validator/bin/python" "$here/roc-validator/seed_context.py" "$cache" "$sum" >/dev/null \
    || die "could not seed roc-validator's cache with the RO-Crate 1.1 context (see the message above)"
  stamp_write roc-validator-cache "$key"
}

venv_is_ours  # before any step writes a stamp into it
case ${1:-all} in
  check) check ;;
  system) system ;;
  python) python_env ;;
  nextflow) nextflow_env ;;
  s3proxy) s3proxy_env ;;
  multiqc) tool_env multiqc multiqc ;;
  cffconvert) tool_env cffconvert cffconvert ;;
  roc-validator) roc_validator_env ;;
  nf-core) tool_env nf-core nf-core ;;
  docker) docker_env ;;
  tex) tex ;;
  pins) pins "${2:-}" ;;
  all) system; python_env; nextflow_env; s3proxy_env; tool_env multiqc multiqc; tool_env cffconvert cffconvert; roc_validator_env; tool_env nf-core nf-core; docker_env ;;
  *) die "unknown step '$1' (check, system, python, nextflow, s3proxy, multiqc, cffconvert, roc-validator, nf-core, docker, tex, pins, all)" ;;
esac
