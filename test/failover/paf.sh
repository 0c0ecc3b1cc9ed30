#!/usr/bin/env bash
# paf.sh up|down|kill-primary BASE [MONITOR_PORT NODE1_PORT NODE2_PORT]
#
# A pg_auto_failover formation (monitor, primary, synchronous standby) on
# local ports under BASE, as /work/shared/reference/production-postgres.md
# §1 builds it: every PostgreSQL and pg_autoctl process runs as the
# `postgres` OS user (runuser; they refuse root), with the monitor's and
# keepers' timeouts tuned so a crashed primary is replaced in about 8 s
# instead of 50 s. Run as root.
#
#   up            builds and starts it; prints the multi-host URL on stdout
#   down          stops what `up` started (by the pids it recorded) and
#                 removes BASE
#   kill-primary  kill -9 of the primary's pg_autoctl process group and of
#                 its postmaster (killing the postmaster alone lets the
#                 keeper restart it in place, a race); prints the killed
#                 node's port
set -euo pipefail
cmd=${1:?usage: paf.sh up|down|kill-primary BASE [MP P1 P2]}
BASE=${2:?BASE}
MP=${3:-25661}; P1=${4:-25662}; P2=${5:-25663}
PGBIN=/usr/lib/postgresql/15/bin
ENV="env -i PATH=$PGBIN:/usr/bin:/bin HOME=$BASE XDG_CONFIG_HOME=$BASE/xdg/config XDG_DATA_HOME=$BASE/xdg/data XDG_RUNTIME_DIR=$BASE/xdg/run"
as() { runuser -u postgres -- $ENV "$@"; }
run_bg() {
  runuser -u postgres -- $ENV bash -c "setsid pg_autoctl run --pgdata $BASE/$1 >> $BASE/logs/$1.log 2>&1 < /dev/null & echo \$! > $BASE/$1.pid"
}
wait_sql() { # port db sql want
  local i
  for i in $(seq 1 300); do
    [ "$(psql -h 127.0.0.1 -p "$1" -U postgres -d "$2" -XAtc "$3" 2>/dev/null)" = "$4" ] && return 0
    sleep 0.2
  done
  echo "paf.sh: timeout waiting for: $3 = $4" >&2
  return 1
}

case $cmd in
up)
  if ! command -v pg_autoctl >/dev/null 2>&1 && [ ! -x $PGBIN/pg_autoctl ]; then
    echo "paf.sh: installing pg_auto_failover" >&2
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-15-auto-failover pg-auto-failover-cli >&2
  fi
  mkdir -p "$BASE/logs" "$BASE/xdg/config" "$BASE/xdg/data" "$BASE/xdg/run"
  chown -R postgres:postgres "$BASE"
  MON="postgres://autoctl_node@localhost:$MP/pg_auto_failover?sslmode=disable"
  as pg_autoctl create monitor --pgdata "$BASE/monitor" --pgport "$MP" --hostname localhost \
    --listen 127.0.0.1 --auth trust --no-ssl > "$BASE/logs/create-monitor.log" 2>&1
  run_bg monitor
  wait_sql "$MP" pg_auto_failover "select 1" 1
  # Tuned health checks (reference §1.2): failover starts ~3 s after the
  # primary stops answering and the standby is writable ~5 s later.
  psql -h 127.0.0.1 -p "$MP" -U postgres -d pg_auto_failover -XqAt \
    -c "alter system set pgautofailover.health_check_period = 1000" \
    -c "alter system set pgautofailover.health_check_timeout = 1000" \
    -c "alter system set pgautofailover.health_check_max_retries = 1" \
    -c "alter system set pgautofailover.health_check_retry_delay = 500" \
    -c "alter system set pgautofailover.node_considered_unhealthy_timeout = 3000" \
    -c "alter system set pgautofailover.primary_demote_timeout = 5000" \
    -c "select pg_reload_conf()" > /dev/null
  n=0
  for port in "$P1" "$P2"; do
    n=$((n + 1))
    as pg_autoctl create postgres --pgdata "$BASE/node$n" --pgport "$port" --listen 127.0.0.1 \
      --hostname localhost --name "node$n" --dbname app --auth trust --no-ssl --monitor "$MON" \
      > "$BASE/logs/create-node$n.log" 2>&1
    # Below primary_demote_timeout (5 s): a partitioned old primary stops
    # accepting writes before the standby is promoted.
    as pg_autoctl config set --pgdata "$BASE/node$n" timeout.network_partition_timeout 3 > /dev/null
    as pg_autoctl config set --pgdata "$BASE/node$n" timeout.prepare_promotion_walreceiver 1 > /dev/null
    echo "$port" > "$BASE/node$n.port"
    run_bg "node$n"
    # node2 must be created after node1 is the primary
    [ $n = 1 ] && wait_sql "$MP" pg_auto_failover "select reportedstate from pgautofailover.node where nodename = 'node1'" single
  done
  wait_sql "$MP" pg_auto_failover \
    "select string_agg(reportedstate||'/'||goalstate, ' ' order by reportedstate) from pgautofailover.node" \
    "primary/primary secondary/secondary"
  echo "postgres://postgres@localhost:$P1,localhost:$P2/app?target_session_attrs=read-write&sslmode=disable&connect_timeout=2"
  ;;
down)
  for n in node2 node1 monitor; do
    [ -f "$BASE/$n.pid" ] || continue
    pid=$(cat "$BASE/$n.pid")
    if [ -d "$BASE/$n" ]; then as pg_autoctl stop --pgdata "$BASE/$n" > /dev/null 2>&1 || true; fi
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 -- "-$pid" 2>/dev/null || true; fi
    # a killed node's postmaster was killed with it; one restarted by its
    # keeper is in the same process group, which is gone now
  done
  rm -rf "$BASE"
  ;;
kill-primary)
  for n in node1 node2; do
    port=$(cat "$BASE/$n.port")
    if [ "$(psql -h 127.0.0.1 -p "$port" -U postgres -d app -XAtc 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; then
      keeper=$(cat "$BASE/$n.pid")
      postmaster=$(head -1 "$BASE/$n/postmaster.pid")
      kill -9 -- "-$keeper" "$postmaster"
      echo "$port"
      exit 0
    fi
  done
  echo "paf.sh: no primary found" >&2
  exit 1
  ;;
*)
  echo "paf.sh: unknown command $cmd" >&2
  exit 2
  ;;
esac
