package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MinServerMajorVersion is the oldest PostgreSQL major version the backend
// supports: 13. The backend conformance suite and the interop suite run
// against every major from 13 to 18 (test/pgversions/run.sh, called by
// .ci/run; docs/postgres-versions.md). [Open] and [Migrate] refuse an older
// server with [ErrUnsupportedServerVersion] before they change anything.
const MinServerMajorVersion = 13

// MaxTestedServerMajorVersion is the newest PostgreSQL major version the
// version matrix runs: 18. Newer servers are not refused (PostgreSQL keeps
// the SQL this backend uses across majors), only not yet tested.
const MaxTestedServerMajorVersion = 18

// ErrUnsupportedServerVersion is returned (wrapped, with the server's
// version and the minimum) by [Open] and [Migrate] when the server is
// older than [MinServerMajorVersion].
var ErrUnsupportedServerVersion = errors.New("unsupported PostgreSQL version")

// ServerVersion is a PostgreSQL server's version as it reports it.
type ServerVersion struct {
	// Num is server_version_num: major*10000 + minor for 10 and later
	// (130023 for 13.23), major*10000 + minor*100 + patch before (90624
	// for 9.6.24).
	Num int
	// Text is server_version, e.g. "13.23" or "16.4 (Debian 16.4-1)".
	Text string
}

// Major is the major version: 13 for 13.23, 9 for 9.6.24 (whose "major"
// in PostgreSQL's own terms was 9.6; only the comparison with 13 matters
// here).
func (v ServerVersion) Major() int { return v.Num / 10000 }

// String is the version's number, e.g. "13.23", without the build
// details server_version may carry.
func (v ServerVersion) String() string {
	if s, _, ok := strings.Cut(v.Text, " "); ok {
		return s
	}
	return v.Text
}

// checkServerVersion returns the version of the server at the other end of
// conn, and an error wrapping [ErrUnsupportedServerVersion] when its major
// version is below minMajor.
func checkServerVersion(ctx context.Context, conn *pgx.Conn, minMajor int) (ServerVersion, error) {
	var v ServerVersion
	// current_setting, not SHOW, so that one statement returns both.
	err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).Scan(&v.Num, &v.Text)
	if err != nil {
		return v, fmt.Errorf("read the server's version: %w", err)
	}
	return v, supportedServerVersion(v, minMajor)
}

// supportedServerVersion is nil when v's major version is minMajor or
// later, and otherwise an error wrapping [ErrUnsupportedServerVersion]
// that names both.
func supportedServerVersion(v ServerVersion, minMajor int) error {
	if v.Major() >= minMajor {
		return nil
	}
	return fmt.Errorf("%w: OpenWorkflow needs PostgreSQL >= %d, this server is %s (server_version_num %d); upgrade the server (docs/postgres-versions.md)",
		ErrUnsupportedServerVersion, minMajor, v, v.Num)
}

// checkPoolServerVersion is checkServerVersion on a connection of pool
// against [MinServerMajorVersion].
func checkPoolServerVersion(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	_, err = checkServerVersion(ctx, conn.Conn(), MinServerMajorVersion)
	return err
}
