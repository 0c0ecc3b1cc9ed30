#!/usr/bin/env bash
# run.sh: the failover test. Builds a pg_auto_failover formation on local
# ports 25661-25663 under a temporary folder (paf.sh up, installing the
# Debian packages if missing), runs TestPrimaryFailover against it (which
# kills the primary with kill -9 mid-load and prints the counts), and tears
# the formation down whatever happened. Run as root from anywhere; .ci/run
# calls it. Ports are overridable: OW_FAILOVER_PORTS="MP P1 P2".
#
# The ports lie below Linux's ephemeral range (32768-60999), where a client
# connection of an earlier CI stage can hold a port that nothing listens on
# (the version matrix lost 55312 and 55412 so); a port counts as free only
# if a listening socket can bind it, and a busy default moves up by 10.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"
PAF="$PWD/test/failover/paf.sh"
BASE="$(mktemp -d /tmp/ow-failover.XXXXXX)"
# port_free (test/ports.sh)
# shellcheck source=test/ports.sh
. test/ports.sh # the working directory is the repository root (cd above)
if [ -n "${OW_FAILOVER_PORTS:-}" ]; then
  # shellcheck disable=SC2086
  set -- $OW_FAILOVER_PORTS
else
  for base in 25661 25671 25681 25691 25701; do
    if port_free "$base" && port_free $((base + 1)) && port_free $((base + 2)); then
      break
    fi
    echo "== failover: a port of $base-$((base + 2)) is in use; trying the next ten" >&2
  done
  set -- "$base" $((base + 1)) $((base + 2))
fi
teardown() { "$PAF" down "$BASE" >/dev/null 2>&1 || true; }
trap teardown EXIT
echo "== failover: building the pg_auto_failover formation under $BASE"
URL="$("$PAF" up "$BASE" "$1" "$2" "$3")"
echo "   $URL"
echo "== failover: kill -9 of the primary under load"
OW_FAILOVER_URL="$URL" OW_FAILOVER_BASE="$BASE" OW_FAILOVER_PAF="$PAF" \
  go test -race -count=1 -timeout 15m -run '^TestPrimaryFailover$' -v ./test/failover/ 2>&1 |
  grep -v '^=== RUN\|^--- SKIP' || { echo "== failover: FAILED"; exit 1; }
