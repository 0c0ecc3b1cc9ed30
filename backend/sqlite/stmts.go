package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// prepared maps the text of a hot statement (queries.hot) to its prepared
// statement. It is filled by Open and only read afterwards.
type prepared map[string]*sql.Stmt

// prepare prepares the statements of the worker's and client's hot paths
// (q.hot()) on db. Open does it once (database/sql then prepares each once
// per connection and reuses it), so a call does not parse its SQL again:
// without this, modernc.org/sqlite prepares and finalizes every statement
// per call, which was a large share of a fast write's CPU time. It runs
// after the migrations (a statement naming a missing table does not
// prepare).
func prepare(ctx context.Context, db *sql.DB, q *queries) (prepared, error) {
	hot := q.hot()
	p := make(prepared, len(hot))
	for _, text := range hot {
		s, err := db.PrepareContext(ctx, text)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("prepare statement: %w\n%s", err, text)
		}
		p[text] = s
	}
	return p, nil
}

// close closes the prepared statements.
func (p prepared) close() {
	for _, s := range p {
		_ = s.Close()
	}
}

// txn is a write transaction that runs hot statements through their prepared
// statements (bound to the transaction once each) and any other SQL as
// given.
type txn struct {
	*sql.Tx
	stmts prepared
	bound map[string]*sql.Stmt
}

// stmt returns the prepared statement of query bound to the transaction,
// or nil when query is not a hot one.
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.bound[query]; ok {
		return s
	}
	s, ok := t.stmts[query]
	if !ok {
		return nil
	}
	if t.bound == nil {
		t.bound = make(map[string]*sql.Stmt, 8)
	}
	s = t.Tx.StmtContext(ctx, s)
	t.bound[query] = s
	return s
}

// QueryRowContext is [sql.Tx.QueryRowContext] through the prepared
// statement when there is one.
func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// QueryContext is [sql.Tx.QueryContext] through the prepared statement
// when there is one.
func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

// ExecContext is [sql.Tx.ExecContext] through the prepared statement when
// there is one.
func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// reader runs read-only queries on the pool through the prepared
// statements.
type reader struct {
	db    *sql.DB
	stmts prepared
}

// QueryRowContext is [sql.DB.QueryRowContext] through the prepared
// statement when there is one.
func (r reader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s, ok := r.stmts[query]; ok {
		return s.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, query, args...)
}

// QueryContext is [sql.DB.QueryContext] through the prepared statement
// when there is one.
func (r reader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s, ok := r.stmts[query]; ok {
		return s.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, query, args...)
}
