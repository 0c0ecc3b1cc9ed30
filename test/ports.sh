# test/ports.sh, sourced by the scripts that start PostgreSQL servers of
# their own (test/pgversions/run.sh, test/failover/run.sh).
#
# port_free PORT: whether a listening socket can bind 127.0.0.1:PORT now
# (with SO_REUSEADDR, as the postmaster binds). A connect test misses a
# port that a client connection holds: inside Linux's ephemeral range
# (32768-60999) an earlier CI stage's connections can hold any port, so
# those scripts listen below it and check with this.
port_free() {
  python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
' "$1"
}
