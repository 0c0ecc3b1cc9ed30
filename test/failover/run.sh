#!/usr/bin/env bash
# run.sh: the failover test. Builds a pg_auto_failover formation on local
# ports 55661-55663 under a temporary folder (paf.sh up, installing the
# Debian packages if missing), runs TestPrimaryFailover against it (which
# kills the primary with kill -9 mid-load and prints the counts), and tears
# the formation down whatever happened. Run as root from anywhere; .ci/run
# calls it. Ports are overridable: OW_FAILOVER_PORTS="MP P1 P2".
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"
PAF="$PWD/test/failover/paf.sh"
BASE="$(mktemp -d /tmp/ow-failover.XXXXXX)"
# shellcheck disable=SC2086
set -- ${OW_FAILOVER_PORTS:-55661 55662 55663}
teardown() { "$PAF" down "$BASE" >/dev/null 2>&1 || true; }
trap teardown EXIT
echo "== failover: building the pg_auto_failover formation under $BASE"
URL="$("$PAF" up "$BASE" "$1" "$2" "$3")"
echo "   $URL"
echo "== failover: kill -9 of the primary under load"
OW_FAILOVER_URL="$URL" OW_FAILOVER_BASE="$BASE" OW_FAILOVER_PAF="$PAF" \
  go test -race -count=1 -timeout 15m -run '^TestPrimaryFailover$' -v ./test/failover/ 2>&1 |
  grep -v '^=== RUN\|^--- SKIP' || { echo "== failover: FAILED"; exit 1; }
