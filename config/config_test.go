package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// clearEnv unsets every variable Load reads, for the test's duration (an
// empty variable counts as unset).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{EnvPostgresURL, EnvSQLitePath, EnvNamespace, EnvSchema, EnvWorkerConcurrency} {
		t.Setenv(k, "")
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoadLayers(t *testing.T) {
	tests := []struct {
		name      string
		file      string // contents of <root>/openworkflow.yaml; "" = no file
		env       map[string]string
		overrides Overrides
		want      Config // File/Dir/sources not compared; SQLitePath relative to root
		wantFrom  map[string]string
	}{
		{
			name: "without a file or environment every setting is its default",
			want: Config{SQLitePath: DefaultSQLitePath, Namespace: "default", Schema: "openworkflow", Worker: Worker{Concurrency: 10}},
			wantFrom: map[string]string{
				keyPostgresURL: "default", keySQLitePath: "default", keyNamespace: "default",
				keySchema: "default", keyConcurrency: "default",
			},
		},
		{
			name: "the file sets values and its relative sqlite path is resolved against its directory",
			file: "sqlite_path: data/ow.db\nnamespace: team-a\nschema: ow2\nworker:\n  concurrency: 3\n",
			want: Config{SQLitePath: "data/ow.db", Namespace: "team-a", Schema: "ow2", Worker: Worker{Concurrency: 3}},
			wantFrom: map[string]string{
				keySQLitePath: "file", keyNamespace: "file", keySchema: "file", keyConcurrency: "file",
			},
		},
		{
			name: "the environment overrides the file",
			file: "namespace: team-a\npostgres_url: postgres://file@h/db\n",
			env:  map[string]string{EnvNamespace: "team-b", EnvPostgresURL: "postgres://env@h/db", EnvWorkerConcurrency: "7"},
			want: Config{PostgresURL: "postgres://env@h/db", SQLitePath: DefaultSQLitePath, Namespace: "team-b", Schema: "openworkflow", Worker: Worker{Concurrency: 7}},
			wantFrom: map[string]string{
				keyNamespace: "env " + EnvNamespace, keyPostgresURL: "env " + EnvPostgresURL, keyConcurrency: "env " + EnvWorkerConcurrency,
			},
		},
		{
			name:      "flags override the environment",
			env:       map[string]string{EnvNamespace: "team-b", EnvSQLitePath: "env.db"},
			overrides: Overrides{Namespace: ptr("team-c"), SQLitePath: ptr("flag.db"), WorkerConcurrency: ptr(2)},
			want:      Config{SQLitePath: "flag.db", Namespace: "team-c", Schema: "openworkflow", Worker: Worker{Concurrency: 2}},
			wantFrom:  map[string]string{keyNamespace: "flag --namespace", keySQLitePath: "flag --sqlite-path", keyConcurrency: "flag --concurrency"},
		},
		{
			name: "the file sets the limits of workflows",
			file: "worker:\n  limits:\n    f/etl: {concurrency: 5, concurrency_per_key: 1, per_worker: 2, rate_limit: 10, rate_period: 1m}\n    sync: {concurrency_per_key: 3}\n",
			want: Config{SQLitePath: DefaultSQLitePath, Namespace: "default", Schema: "openworkflow", Worker: Worker{Concurrency: 10, Limits: map[string]Limits{
				"f/etl": {Concurrency: 5, ConcurrencyPerKey: 1, PerWorker: 2, RateLimit: 10, RatePeriod: time.Minute},
				"sync":  {ConcurrencyPerKey: 3},
			}}},
		},
		{
			name:      "an empty --postgres-url flag selects SQLite over a configured URL",
			env:       map[string]string{EnvPostgresURL: "postgres://env@h/db"},
			overrides: Overrides{PostgresURL: ptr("")},
			want:      Config{SQLitePath: DefaultSQLitePath, Namespace: "default", Schema: "openworkflow", Worker: Worker{Concurrency: 10}},
			wantFrom:  map[string]string{keyPostgresURL: "flag --postgres-url"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			root := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(root, FileName), tt.file)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := LoadWith(Options{Dir: root, Overrides: tt.overrides})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.SQLitePath = filepath.Join(root, want.SQLitePath)
			if c.PostgresURL != want.PostgresURL || c.SQLitePath != want.SQLitePath || c.Namespace != want.Namespace ||
				c.Schema != want.Schema || !reflect.DeepEqual(c.Worker, want.Worker) {
				t.Errorf("got %+v\nwant %+v", *c, want)
			}
			for key, from := range tt.wantFrom {
				if from == "file" {
					from = "file " + filepath.Join(root, FileName)
				}
				if got := c.From(key); got != from {
					t.Errorf("%s comes from %q, want %q", key, got, from)
				}
			}
			if wantKind := map[bool]BackendKind{true: BackendPostgres, false: BackendSQLite}[want.PostgresURL != ""]; c.Kind() != wantKind {
				t.Errorf("Kind() = %s, want %s", c.Kind(), wantKind)
			}
		})
	}
}

func TestLoadFindsTheFileInAParentDirectory(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "namespace: parent\n")
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "parent" || c.File != filepath.Join(root, FileName) {
		t.Errorf("namespace %q from file %q; want the parent's file", c.Namespace, c.File)
	}
	if want := filepath.Join(root, DefaultSQLitePath); c.SQLitePath != want {
		t.Errorf("default sqlite path %q, want %q (beside the file)", c.SQLitePath, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		opts    Options
		wantSub []string
	}{
		{name: "an unknown key names the key and the file", file: "sqlite_pth: x.db\n", wantSub: []string{`unknown key "sqlite_pth"`, FileName, "line 1"}},
		{name: "an unknown nested key is reported too", file: "worker:\n  concurency: 2\n", wantSub: []string{`unknown key "concurency"`}},
		{name: "malformed YAML names the file", file: "namespace: [\n", wantSub: []string{FileName}},
		{name: "a non-integer concurrency names the variable", env: map[string]string{EnvWorkerConcurrency: "many"}, wantSub: []string{EnvWorkerConcurrency, "many"}},
		{name: "a negative concurrency is refused", file: "worker:\n  concurrency: -1\n", wantSub: []string{"worker.concurrency", "positive"}},
		{name: "a negative limit names the workflow and key", file: "worker:\n  limits:\n    sync: {per_worker: -1}\n", wantSub: []string{"worker.limits.sync.per_worker", FileName}},
		{name: "a rate limit without a period is refused", file: "worker:\n  limits:\n    sync: {rate_limit: 3}\n", wantSub: []string{"worker.limits.sync.rate_limit", "rate_period"}},
		{name: "a period that is not a duration is refused", file: "worker:\n  limits:\n    sync: {rate_limit: 3, rate_period: soon}\n", wantSub: []string{FileName}},
		{name: "an unknown limit key is refused", file: "worker:\n  limits:\n    sync: {concurency: 3}\n", wantSub: []string{`unknown key "concurency"`}},
		{name: "an empty namespace flag is refused", opts: Options{Overrides: Overrides{Namespace: ptr("")}}, wantSub: []string{"namespace", "flag --namespace"}},
		{name: "a namespace longer than a run's is refused", opts: Options{Overrides: Overrides{Namespace: ptr(strings.Repeat("n", 256))}}, wantSub: []string{"namespace", "flag --namespace", "longer than the limit of 255"}},
		{name: "a missing --config file is an error", opts: Options{File: "nope.yaml"}, wantSub: []string{"nope.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			root := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(root, FileName), tt.file)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			opts := tt.opts
			opts.Dir = root
			_, err := LoadWith(opts)
			if err == nil {
				t.Fatal("LoadWith succeeded; want an error")
			}
			for _, s := range tt.wantSub {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestExplicitFileSkipsTheSearch(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "namespace: searched\n")
	writeFile(t, filepath.Join(root, "conf", "other.yaml"), "namespace: explicit\nsqlite_path: x.db\n")
	c, err := LoadWith(Options{Dir: root, File: "conf/other.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "explicit" || c.SQLitePath != filepath.Join(root, "conf", "x.db") {
		t.Errorf("got namespace %q, sqlite path %q", c.Namespace, c.SQLitePath)
	}
}

func TestSourceRedactsThePassword(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvPostgresURL, "postgres://app:s3cret@db:5432/app")
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Source() {
		if strings.Contains(s.Value, "s3cret") {
			t.Errorf("setting %s shows the password: %q", s.Key, s.Value)
		}
		if s.From == "" {
			t.Errorf("setting %s has no origin", s.Key)
		}
	}
	if got := RedactURL("host=db password=s3cret user=app"); strings.Contains(got, "s3cret") {
		t.Errorf("RedactURL(DSN) = %q", got)
	}
}

func TestMigrateAndOpenSQLite(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := c.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Before != -1 || m.After < 5 || len(m.Applied) != m.After+1 {
		t.Errorf("first migration: %+v; want from -1 to at least 5", m)
	}
	m, err = c.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Before != m.After || len(m.Applied) != 0 {
		t.Errorf("second migration applied something: %+v", m)
	}
	b, err := c.OpenBackend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.NamespaceID() != "default" {
		t.Errorf("namespace %q", b.NamespaceID())
	}
	if v, err := c.SchemaVersion(ctx, b); err != nil || v != m.After {
		t.Errorf("SchemaVersion = %d, %v; want %d", v, err, m.After)
	}
}

func TestOpenBackendUnreachablePostgresSaysWhatToDo(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvPostgresURL, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenBackend(context.Background())
	if err == nil {
		t.Fatal("OpenBackend succeeded against a closed port")
	}
	for _, s := range []string{"cannot reach PostgreSQL at", "127.0.0.1:1", "unset " + EnvPostgresURL} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestPostgresOpenErrorTellsTheRefusalsApart(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvPostgresURL, "postgres://app:secret@db.example:5432/shop?sslmode=disable")
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The refusals a trust-auth test server cannot produce: the server's
	// error, wrapped as pgconn and the backend wrap it.
	refused := func(code, msg string) error {
		return fmt.Errorf("postgres backend: migrate: failed to connect: server error: %w",
			&pgconn.PgError{Severity: "FATAL", Code: code, Message: msg})
	}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"a wrong password", refused("28P01", `password authentication failed for user "app"`),
			[]string{`refused the password of role "app"`, "fix the password in $" + EnvPostgresURL}},
		{"a missing role", refused("28000", `role "app" does not exist`),
			[]string{`refused role "app"`, `CREATE ROLE "app"`, "$" + EnvPostgresURL}},
		{"a missing database", refused("3D000", `database "shop" does not exist`),
			[]string{`has no database "shop"`, "createdb shop", `CREATE DATABASE "shop"`}},
		{"no right to create the schema", refused("42501", "permission denied for database shop"),
			[]string{`role "app" may not create schema "openworkflow"`, `GRANT CREATE ON DATABASE "shop" TO "app"`}},
		{"a server older than the supported range",
			fmt.Errorf("postgres backend: migrate schema openworkflow: %w: OpenWorkflow needs PostgreSQL >= 13, this server is 12.22 (server_version_num 120022)", postgres.ErrUnsupportedServerVersion),
			[]string{"PostgreSQL at postgres://app:xxxxx@db.example:5432/shop?sslmode=disable is too old", "at a server of PostgreSQL 13 or later", "OpenWorkflow needs PostgreSQL >= 13, this server is 12.22"}},
		{"an unreachable server", errors.New("dial tcp: connection refused"),
			[]string{"cannot reach PostgreSQL at postgres://app:xxxxx@db.example:5432/shop", "unset " + EnvPostgresURL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := c.postgresOpenError(tt.err).Error()
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not contain %q", msg, s)
				}
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("the password is printed: %s", msg)
			}
			if tt.name != "an unreachable server" && strings.Contains(msg, "cannot reach") {
				t.Errorf("a refusal is reported as an unreachable server: %s", msg)
			}
		})
	}
}
