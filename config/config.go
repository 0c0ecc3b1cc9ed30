// Package config loads the settings shared by the ow CLI and the examples:
// which backend to use (PostgreSQL or an SQLite file), the namespace, the
// PostgreSQL schema, the worker's concurrency and the schedules to put.
//
// Settings come from four layers, each overriding the one before:
//
//  1. defaults (see [Config]);
//  2. the file openworkflow.yaml, found by searching upward from the
//     working directory (or the file named by --config);
//  3. OPENWORKFLOW_* environment variables;
//  4. command-line flags, passed in as [Overrides].
//
// A file looks like:
//
//	postgres_url: postgres://app@db:5432/app?sslmode=disable  # set ⇒ PostgreSQL
//	sqlite_path: data/openworkflow.db   # relative to this file's directory
//	namespace: default
//	schema: openworkflow
//	worker:
//	  concurrency: 10
//	  limits:              # per workflow name, for the workflows ow worker runs
//	    f/team/etl: {concurrency: 5, concurrency_per_key: 1, rate_limit: 10, rate_period: 1m}
//	openflow:
//	  dirs: [flows]   # OpenFlow flows and scripts found by path
//	retention:
//	  default: 30d    # finished runs are deleted 30 days after they finished
//	  workflows: {nightly-report: 7d}
//	schedules:        # put by ow server and ow worker at start (see Schedule)
//	  - name: nightly-report
//	    workflow: send-report
//	    cron: "0 2 * * *"
//	    time_zone: Europe/Paris
//
// Unknown keys are an error naming the key and the file, so a typo never
// silently falls back to a default. [Config.Source] tells where each value
// came from (ow doctor prints it).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openworkflow-go/openworkflow/access"
	"github.com/openworkflow-go/openworkflow/backend"
)

// FileName is the name of the configuration file searched for.
const FileName = "openworkflow.yaml"

// Environment variables read by [Load], each overriding the file's key of
// the same meaning.
const (
	EnvPostgresURL       = "OPENWORKFLOW_POSTGRES_URL"
	EnvSQLitePath        = "OPENWORKFLOW_SQLITE_PATH"
	EnvNamespace         = "OPENWORKFLOW_NAMESPACE_ID"
	EnvSchema            = "OPENWORKFLOW_SCHEMA"
	EnvWorkerConcurrency = "OPENWORKFLOW_WORKER_CONCURRENCY"
	// EnvOpenFlowDirs lists OpenFlow directories separated by the OS path
	// list separator (':' on Unix).
	EnvOpenFlowDirs = "OPENWORKFLOW_OPENFLOW_DIRS"
	EnvServerAddr   = "OPENWORKFLOW_SERVER_ADDR"
	EnvAPIToken     = "OPENWORKFLOW_API_TOKEN"
	// EnvReadReplicaURL is read_replica_url.
	EnvReadReplicaURL = "OPENWORKFLOW_READ_REPLICA_URL"
	// EnvReplicaMaxLag is replica_max_lag, a Go duration ("10s").
	EnvReplicaMaxLag = "OPENWORKFLOW_REPLICA_MAX_LAG"
	// EnvPostgresDirectURL is postgres_direct_url.
	EnvPostgresDirectURL = "OPENWORKFLOW_POSTGRES_DIRECT_URL"
	// EnvPostgresPoolMode is postgres_pool_mode.
	EnvPostgresPoolMode = "OPENWORKFLOW_POSTGRES_POOL_MODE"
)

// Defaults of the settings, applied by [Config.applyDefaults] when no layer
// sets them.
const (
	// DefaultSQLitePath is the SQLite file used when no PostgreSQL URL and
	// no SQLite path are configured, relative to the configuration file's
	// directory (or the working directory when there is no file).
	DefaultSQLitePath = ".openworkflow/openworkflow.db"
	// DefaultNamespace is the namespace used when none is configured.
	DefaultNamespace = "default"
	// DefaultSchema is the PostgreSQL schema used when none is configured.
	DefaultSchema = "openworkflow"
	// DefaultWorkerConcurrency is the number of runs a worker executes at
	// once when none is configured.
	DefaultWorkerConcurrency = 10
	// DefaultServerAddr is the address `ow server` listens on when none
	// is configured: loopback only.
	DefaultServerAddr = "127.0.0.1:8080"
)

// Config is the resolved configuration. Load it with [Load] or [LoadWith];
// every field then holds its final value (defaults applied).
type Config struct {
	// PostgresURL is a PostgreSQL URL or key=value DSN (YAML postgres_url,
	// env OPENWORKFLOW_POSTGRES_URL, flag --postgres-url). When it is set
	// the backend is PostgreSQL and SQLitePath is ignored. Default "" (use
	// SQLite).
	PostgresURL string `yaml:"postgres_url"`
	// SQLitePath is the SQLite database file (YAML sqlite_path, env
	// OPENWORKFLOW_SQLITE_PATH, flag --sqlite-path). After loading it is
	// absolute: a relative path from the file is resolved against the
	// file's directory, one from the environment or a flag against the
	// working directory. Default [DefaultSQLitePath].
	SQLitePath string `yaml:"sqlite_path"`
	// Namespace isolates runs sharing one database (YAML namespace, env
	// OPENWORKFLOW_NAMESPACE_ID, flag --namespace). Default
	// [DefaultNamespace] ("default").
	Namespace string `yaml:"namespace"`
	// Schema is the PostgreSQL schema holding the tables (YAML schema, env
	// OPENWORKFLOW_SCHEMA); unused with SQLite. Default [DefaultSchema]
	// ("openworkflow").
	Schema string `yaml:"schema"`
	// ReadReplicaURL is a streaming replica of the PostgreSQL database
	// (YAML read_replica_url, env OPENWORKFLOW_READ_REPLICA_URL, flag
	// --read-replica-url): the HTTP API's and the dashboard's list, count
	// and get reads go to it, a caller's own writes read back from the
	// primary; workers never read from it (postgres.Options.ReadReplicaURL,
	// docs/replicas-and-poolers.md). Default "" (none). PostgreSQL only.
	ReadReplicaURL string `yaml:"read_replica_url"`
	// ReplicaMaxLag is the replica's replay lag past which reads go to
	// the primary (YAML replica_max_lag, env OPENWORKFLOW_REPLICA_MAX_LAG,
	// e.g. "5s"). Default 0: postgres.DefaultReplicaMaxLag (10 s).
	ReplicaMaxLag time.Duration `yaml:"replica_max_lag"`
	// PostgresPoolMode says how a pooler in front of PostgreSQL shares
	// server connections (YAML postgres_pool_mode, env
	// OPENWORKFLOW_POSTGRES_POOL_MODE): "session" (or "", the default: a
	// direct connection or a session-mode pool; a transaction-mode pooler
	// is detected and refused at startup) or "transaction" (PgBouncer's
	// pool_mode=transaction; needs PostgresDirectURL). See
	// postgres.Options.PoolMode.
	PostgresPoolMode string `yaml:"postgres_pool_mode"`
	// PostgresDirectURL reaches PostgreSQL without a transaction-mode
	// pooler, for LISTEN and the migration lock (YAML
	// postgres_direct_url, env OPENWORKFLOW_POSTGRES_DIRECT_URL). Required
	// with PostgresPoolMode "transaction"; default "".
	PostgresDirectURL string `yaml:"postgres_direct_url"`
	// Worker configures workers started from this configuration.
	Worker Worker `yaml:"worker"`
	// OpenFlow configures OpenFlow flows (package openflow, ow flow,
	// ow worker).
	OpenFlow OpenFlow `yaml:"openflow"`
	// Server configures `ow server` (the HTTP API and the dashboard).
	Server Server `yaml:"server"`
	// Retention says how long finished runs are kept (`ow server`'s
	// pruner, `ow runs prune`). Default: forever.
	Retention Retention `yaml:"retention"`
	// Schedules are the schedules `ow server` and `ow worker` put when
	// they start ([Config.ApplySchedules]); only the file sets them.
	// Default none.
	Schedules []Schedule `yaml:"schedules"`

	// File is the absolute path of the configuration file loaded, or ""
	// when none was found.
	File string `yaml:"-"`
	// Dir is the directory relative paths of the file are resolved
	// against: the file's directory, or the search's starting directory
	// when there is no file.
	Dir string `yaml:"-"`

	sources map[string]string
}

// Worker is the worker section of the configuration.
type Worker struct {
	// Concurrency is the number of runs executed at once, a positive
	// integer (YAML worker.concurrency, env
	// OPENWORKFLOW_WORKER_CONCURRENCY). Default
	// [DefaultWorkerConcurrency] (10).
	Concurrency int `yaml:"concurrency"`
	// Limits are the concurrency and rate limits of workflows the worker
	// registers, by workflow name (YAML worker.limits): e.g. the OpenFlow
	// flows of `ow worker` and `ow server`, whose limits no code declares.
	// Default none.
	Limits map[string]Limits `yaml:"limits"`
}

// Limits are one workflow's limits (openworkflow.Limits): each zero field
// limits nothing.
//
//	worker:
//	  limits:
//	    sync-account:
//	      concurrency: 50           # runs admitted and not finished, all keys
//	      concurrency_per_key: 5    # the same per concurrency key
//	      per_worker: 2             # runs one worker executes at once
//	      rate_limit: 10            # admissions per key …
//	      rate_period: 1m           # … within any window of this
type Limits struct {
	Concurrency       int           `yaml:"concurrency"`
	ConcurrencyPerKey int           `yaml:"concurrency_per_key"`
	PerWorker         int           `yaml:"per_worker"`
	RateLimit         int           `yaml:"rate_limit"`
	RatePeriod        time.Duration `yaml:"rate_period"`
}

// validate checks one workflow's limits, naming the key at fault.
func (l Limits) validate(name string) error {
	for _, f := range []struct {
		key string
		n   int
	}{{"concurrency", l.Concurrency}, {"concurrency_per_key", l.ConcurrencyPerKey}, {"per_worker", l.PerWorker}, {"rate_limit", l.RateLimit}} {
		if f.n < 0 {
			return fmt.Errorf("worker.limits.%s.%s must be 0 (no limit) or more, got %d", name, f.key, f.n)
		}
	}
	switch {
	case l.RateLimit > 0 && l.RatePeriod < time.Millisecond:
		return fmt.Errorf("worker.limits.%s.rate_limit needs a rate_period of at least 1ms, e.g. rate_period: 1m", name)
	case l.RateLimit == 0 && l.RatePeriod != 0:
		return fmt.Errorf("worker.limits.%s.rate_period is set without a rate_limit", name)
	}
	return nil
}

// Server is the server section of the configuration:
//
//	server:
//	  addr: 127.0.0.1:8080
//	  token: ${a secret}       # better: OPENWORKFLOW_API_TOKEN
//	  tokens:                  # more tokens, each with a scope
//	    - {name: grafana, token_env: GRAFANA_OW_TOKEN, scope: read}
//	    - {name: billing, token_env: BILLING_OW_TOKEN, scope: write, namespace: billing}
//	  public_webhooks: false
//	  cors_origins: [https://app.example.com]
//	  trusted_proxies: [10.0.0.0/8]
type Server struct {
	// Addr is the address `ow server` listens on (YAML server.addr, env
	// OPENWORKFLOW_SERVER_ADDR, flag --addr). Default
	// [DefaultServerAddr], loopback only.
	Addr string `yaml:"addr"`
	// Token is a bearer token of full access (scope write, any
	// namespace) that API requests may carry (YAML server.token, env
	// OPENWORKFLOW_API_TOKEN); a token (this or Tokens) is required when
	// Addr is beyond loopback. At least 16 bytes (access.MinTokenLength;
	// `openssl rand -hex 32` makes one). Default none. Prefer the
	// environment to keeping a secret in a file.
	Token string `yaml:"token"`
	// Tokens are more bearer tokens, each with a scope and optionally a
	// namespace (YAML server.tokens); see [TokenConfig]. Default none.
	Tokens []TokenConfig `yaml:"tokens"`
	// TrustedProxies are the addresses (CIDR prefixes or single IPs) of
	// reverse proxies whose X-Forwarded-Proto the dashboard believes, to
	// mark its session cookie Secure behind a TLS-terminating proxy (YAML
	// server.trusted_proxies). Default none.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// PublicWebhooks lets /v1/webhooks/{token} be called without Token
	// (the hook's token is then the credential). Default false.
	PublicWebhooks bool `yaml:"public_webhooks"`
	// CORSOrigins are the origins browsers may call the API from
	// (exactly, or "*"); without a token, those listed exactly may also
	// make changes from a browser (see docs/security.md). Default none.
	CORSOrigins []string `yaml:"cors_origins"`
}

// TokenConfig is one token of server.tokens. Its secret is Token or,
// better, the value of the environment variable TokenEnv (exactly one of
// the two), at least 16 bytes.
type TokenConfig struct {
	// Name identifies the token in logs and errors; required.
	Name string `yaml:"name"`
	// Token is the secret itself.
	Token string `yaml:"token"`
	// TokenEnv names the environment variable holding the secret.
	TokenEnv string `yaml:"token_env"`
	// Scope is read (GET operations, dashboard pages, /metrics) or write
	// (everything). Required.
	Scope string `yaml:"scope"`
	// Namespace, when set, limits the token to a server of that
	// namespace (a server of another answers it 403). Default any.
	Namespace string `yaml:"namespace"`
}

// AccessTokens returns the server's tokens, server.token first (as a
// write token of any namespace named "server.token"), each checked
// (access.Token.Validate): an error names the token and says what to fix.
// `ow server` and `ow dev` call it before serving.
func (s Server) AccessTokens() ([]access.Token, error) {
	var out []access.Token
	if s.Token != "" {
		t := access.Token{Name: "server.token", Secret: s.Token, Scope: access.ScopeWrite}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("config: server.token (or %s): %w", EnvAPIToken, err)
		}
		out = append(out, t)
	}
	for i, tc := range s.Tokens {
		where := fmt.Sprintf("server.tokens[%d]", i)
		if tc.Name == "" {
			return nil, fmt.Errorf("config: %s has no name; give each token a name (it is what logs show)", where)
		}
		where = fmt.Sprintf("server.tokens[%d] (%s)", i, tc.Name)
		secret := tc.Token
		switch {
		case tc.Token != "" && tc.TokenEnv != "":
			return nil, fmt.Errorf("config: %s has both token and token_env; keep one (token_env is better)", where)
		case tc.TokenEnv != "":
			if secret = os.Getenv(tc.TokenEnv); secret == "" {
				return nil, fmt.Errorf("config: %s: the variable %s (token_env) is not set; set it to the token, e.g. $(openssl rand -hex 32)", where, tc.TokenEnv)
			}
		case tc.Token == "":
			return nil, fmt.Errorf("config: %s has no token; set token_env to the variable holding it", where)
		}
		if tc.Scope == "" {
			return nil, fmt.Errorf("config: %s has no scope; give read or write", where)
		}
		scope, err := access.ParseScope(tc.Scope)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", where, err)
		}
		t := access.Token{Name: tc.Name, Secret: secret, Scope: scope, Namespace: tc.Namespace}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("config: %s: %w", where, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Proxies parses TrustedProxies: CIDR prefixes, or single IPs (a prefix
// of their full length).
func (s Server) Proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range s.TrustedProxies {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("config: server.trusted_proxies: %q is neither an IP nor a CIDR prefix (10.0.0.0/8, ::1)", p)
			}
			pfx = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		out = append(out, pfx.Masked())
	}
	return out, nil
}

// OpenFlow is the openflow section of the configuration.
type OpenFlow struct {
	// Dirs are the directories OpenFlow scripts and flows are found in by
	// path (YAML openflow.dirs, env OPENWORKFLOW_OPENFLOW_DIRS, separated
	// by ':'); `ow worker` runs each flow found there as a workflow named
	// by its path. After loading they are absolute: relative ones from
	// the file are resolved against the file's directory, those from the
	// environment against the working directory. Default none.
	Dirs []string `yaml:"dirs"`
}

// Overrides are values given on the command line; they win over the file
// and the environment. A nil field is "not given". A non-nil empty
// PostgresURL explicitly selects SQLite even when the file or the
// environment names a PostgreSQL database.
type Overrides struct {
	// PostgresURL is --postgres-url.
	PostgresURL *string
	// SQLitePath is --sqlite-path, relative to Options.Dir; an empty
	// value is ignored.
	SQLitePath *string
	// Namespace is --namespace.
	Namespace *string
	// Schema is --schema.
	Schema *string
	// ReadReplicaURL is --read-replica-url.
	ReadReplicaURL *string
	// WorkerConcurrency is --concurrency.
	WorkerConcurrency *int
	// ServerAddr is --addr.
	ServerAddr *string
}

// Options tell [LoadWith] where to look.
type Options struct {
	// Dir is where the upward search for openworkflow.yaml starts and what
	// relative paths from the environment and flags are resolved against;
	// "" means the working directory.
	Dir string
	// File is an explicit configuration file (--config); when set there is
	// no search, and a missing file is an error.
	File string
	// Overrides are the command-line values.
	Overrides Overrides
}

// Load loads the configuration for dir ("" means the working directory):
// the first openworkflow.yaml found in dir or one of its parents, then the
// environment, then the defaults. It is LoadWith(Options{Dir: dir}).
func Load(dir string) (*Config, error) {
	return LoadWith(Options{Dir: dir})
}

// LoadWith loads the configuration as described in the package
// documentation. It fails when the file cannot be read or parsed, when it
// has an unknown key, or when a value is invalid (a non-integer or
// non-positive concurrency, an empty namespace); the error names the file,
// variable or flag concerned.
func LoadWith(opts Options) (*Config, error) {
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("config: working directory: %w", err)
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c := &Config{Dir: dir, sources: map[string]string{}}

	file := opts.File
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("config file %s: %w", file, err)
		}
	} else if file, err = find(dir); err != nil {
		return nil, err
	}
	if file != "" {
		if err := c.readFile(file); err != nil {
			return nil, err
		}
	}
	if err := c.readEnv(dir); err != nil {
		return nil, err
	}
	c.applyOverrides(opts.Overrides, dir)
	c.applyDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// find returns the first FileName in dir or its parents, or "".
func find(dir string) (string, error) {
	for {
		p := filepath.Join(dir, FileName)
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return p, nil
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("config: look for %s: %w", p, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// readFile parses the YAML file into c, rejecting unknown keys.
func (c *Config) readFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	var f Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %s", path, yamlMessage(err))
	}
	c.File, c.Dir = path, filepath.Dir(path)
	from := "file " + path
	if f.PostgresURL != "" {
		c.set(keyPostgresURL, &c.PostgresURL, f.PostgresURL, from)
	}
	if f.SQLitePath != "" {
		c.set(keySQLitePath, &c.SQLitePath, absFrom(c.Dir, f.SQLitePath), from)
	}
	if f.Namespace != "" {
		c.set(keyNamespace, &c.Namespace, f.Namespace, from)
	}
	if f.Schema != "" {
		c.set(keySchema, &c.Schema, f.Schema, from)
	}
	if f.ReadReplicaURL != "" {
		c.set(keyReadReplicaURL, &c.ReadReplicaURL, f.ReadReplicaURL, from)
	}
	if f.ReplicaMaxLag != 0 {
		c.ReplicaMaxLag = f.ReplicaMaxLag
		c.sources[keyReplicaMaxLag] = from
	}
	if f.PostgresDirectURL != "" {
		c.set(keyDirectURL, &c.PostgresDirectURL, f.PostgresDirectURL, from)
	}
	if f.PostgresPoolMode != "" {
		c.set(keyPoolMode, &c.PostgresPoolMode, f.PostgresPoolMode, from)
	}
	if f.Worker.Concurrency != 0 {
		c.Worker.Concurrency = f.Worker.Concurrency
		c.sources[keyConcurrency] = from
	}
	for name, l := range f.Worker.Limits {
		if err := l.validate(name); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	c.Worker.Limits = f.Worker.Limits
	if f.Server.Addr != "" {
		c.set(keyServerAddr, &c.Server.Addr, f.Server.Addr, from)
	}
	if f.Server.Token != "" {
		c.set(keyAPIToken, &c.Server.Token, f.Server.Token, from)
	}
	c.Server.PublicWebhooks = f.Server.PublicWebhooks
	c.Server.CORSOrigins = f.Server.CORSOrigins
	c.Server.Tokens = f.Server.Tokens
	c.Server.TrustedProxies = f.Server.TrustedProxies
	if f.Retention.Default != 0 || f.Retention.Workflows != nil || f.Retention.Interval != 0 || f.Retention.Duty != 0 {
		c.Retention = f.Retention
		c.sources[keyRetention] = from
	}
	if err := validateSchedules(f.Schedules); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	c.Schedules = f.Schedules
	if len(f.OpenFlow.Dirs) > 0 {
		c.OpenFlow.Dirs = nil
		for _, d := range f.OpenFlow.Dirs {
			c.OpenFlow.Dirs = append(c.OpenFlow.Dirs, absFrom(c.Dir, d))
		}
		c.sources[keyOpenFlowDirs] = from
	}
	return nil
}

// yamlMessage makes yaml.v3's unknown-field error name the key plainly
// ("unknown key \"sqlite_pth\" (line 2)").
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	var msgs []string
	for _, e := range te.Errors {
		// yaml.v3 says: line 2: field sqlite_pth not found in type config.Config
		if line, rest, ok := strings.Cut(e, ": field "); ok {
			if name, _, ok := strings.Cut(rest, " not found"); ok {
				msgs = append(msgs, fmt.Sprintf("unknown key %q (%s); known keys: %s", name, line, strings.Join(knownKeys, ", ")))
				continue
			}
		}
		msgs = append(msgs, e)
	}
	return strings.Join(msgs, "; ")
}

// readEnv applies the OPENWORKFLOW_* variables that are set (an empty
// variable counts as unset).
func (c *Config) readEnv(dir string) error {
	str := func(env, key string, dst *string, path bool) {
		if v := os.Getenv(env); v != "" {
			if path {
				v = absFrom(dir, v)
			}
			c.set(key, dst, v, "env "+env)
		}
	}
	str(EnvPostgresURL, keyPostgresURL, &c.PostgresURL, false)
	str(EnvSQLitePath, keySQLitePath, &c.SQLitePath, true)
	str(EnvNamespace, keyNamespace, &c.Namespace, false)
	str(EnvSchema, keySchema, &c.Schema, false)
	str(EnvServerAddr, keyServerAddr, &c.Server.Addr, false)
	str(EnvAPIToken, keyAPIToken, &c.Server.Token, false)
	str(EnvReadReplicaURL, keyReadReplicaURL, &c.ReadReplicaURL, false)
	str(EnvPostgresDirectURL, keyDirectURL, &c.PostgresDirectURL, false)
	str(EnvPostgresPoolMode, keyPoolMode, &c.PostgresPoolMode, false)
	if v := os.Getenv(EnvReplicaMaxLag); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("config: %s=%q is not a duration (e.g. 5s, 500ms)", EnvReplicaMaxLag, v)
		}
		c.ReplicaMaxLag = d
		c.sources[keyReplicaMaxLag] = "env " + EnvReplicaMaxLag
	}
	if v := os.Getenv(EnvOpenFlowDirs); v != "" {
		c.OpenFlow.Dirs = nil
		for _, d := range filepath.SplitList(v) {
			if d != "" {
				c.OpenFlow.Dirs = append(c.OpenFlow.Dirs, absFrom(dir, d))
			}
		}
		c.sources[keyOpenFlowDirs] = "env " + EnvOpenFlowDirs
	}
	if v := os.Getenv(EnvWorkerConcurrency); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config: %s=%q is not an integer", EnvWorkerConcurrency, v)
		}
		c.Worker.Concurrency = n
		c.sources[keyConcurrency] = "env " + EnvWorkerConcurrency
	}
	return nil
}

// applyOverrides applies the command-line values.
func (c *Config) applyOverrides(o Overrides, dir string) {
	if o.PostgresURL != nil {
		c.set(keyPostgresURL, &c.PostgresURL, *o.PostgresURL, "flag --postgres-url")
	}
	if o.SQLitePath != nil && *o.SQLitePath != "" {
		c.set(keySQLitePath, &c.SQLitePath, absFrom(dir, *o.SQLitePath), "flag --sqlite-path")
	}
	if o.Namespace != nil {
		c.set(keyNamespace, &c.Namespace, *o.Namespace, "flag --namespace")
	}
	if o.Schema != nil {
		c.set(keySchema, &c.Schema, *o.Schema, "flag --schema")
	}
	if o.ReadReplicaURL != nil {
		c.set(keyReadReplicaURL, &c.ReadReplicaURL, *o.ReadReplicaURL, "flag --read-replica-url")
	}
	if o.WorkerConcurrency != nil {
		c.Worker.Concurrency = *o.WorkerConcurrency
		c.sources[keyConcurrency] = "flag --concurrency"
	}
	if o.ServerAddr != nil {
		c.set(keyServerAddr, &c.Server.Addr, *o.ServerAddr, "flag --addr")
	}
}

// applyDefaults is the one place defaults are decided: every setting no
// layer gave takes its Default* value.
func (c *Config) applyDefaults() {
	if c.SQLitePath == "" {
		c.SQLitePath = filepath.Join(c.Dir, DefaultSQLitePath)
		c.sources[keySQLitePath] = "default"
	}
	if c.Namespace == "" && c.sources[keyNamespace] == "" {
		c.Namespace = DefaultNamespace
		c.sources[keyNamespace] = "default"
	}
	if c.Schema == "" && c.sources[keySchema] == "" {
		c.Schema = DefaultSchema
		c.sources[keySchema] = "default"
	}
	if c.Worker.Concurrency == 0 && c.sources[keyConcurrency] == "" {
		c.Worker.Concurrency = DefaultWorkerConcurrency
		c.sources[keyConcurrency] = "default"
	}
	if c.sources[keyPostgresURL] == "" {
		c.sources[keyPostgresURL] = "default"
	}
	if c.sources[keyOpenFlowDirs] == "" {
		c.sources[keyOpenFlowDirs] = "default"
	}
	if c.Server.Addr == "" {
		c.Server.Addr = DefaultServerAddr
		c.sources[keyServerAddr] = "default"
	}
	if c.sources[keyAPIToken] == "" {
		c.sources[keyAPIToken] = "default"
	}
	if c.sources[keyRetention] == "" {
		c.sources[keyRetention] = "default"
	}
	for _, k := range []string{keyReadReplicaURL, keyReplicaMaxLag, keyDirectURL, keyPoolMode} {
		if c.sources[k] == "" {
			c.sources[k] = "default"
		}
	}
}

// validate rejects values no backend could use.
func (c *Config) validate() error {
	if c.Namespace == "" {
		return fmt.Errorf("config: namespace (from %s) must not be empty", c.sources[keyNamespace])
	}
	if err := backend.ValidateNamespaceID(c.Namespace); err != nil {
		return fmt.Errorf("config: namespace (from %s): %w", c.sources[keyNamespace], err)
	}
	if c.Schema == "" {
		return fmt.Errorf("config: schema (from %s) must not be empty", c.sources[keySchema])
	}
	if c.Worker.Concurrency <= 0 {
		return fmt.Errorf("config: worker.concurrency (from %s) must be a positive integer, got %d", c.sources[keyConcurrency], c.Worker.Concurrency)
	}
	for name := range c.Retention.Workflows {
		if name == "" {
			return fmt.Errorf("config: retention.workflows (from %s) has an empty workflow name", c.sources[keyRetention])
		}
	}
	if _, err := c.Server.Proxies(); err != nil {
		return err
	}
	if d := c.Retention.Duty; d < 0 || d > 1 {
		return fmt.Errorf("config: retention.duty (from %s) must be from 0 to 1 (the pruner's largest share of the time), got %g", c.sources[keyRetention], d)
	}
	return c.validatePostgresTopology()
}

func (c *Config) set(key string, dst *string, v, from string) {
	*dst = v
	c.sources[key] = from
}

// absFrom resolves p against dir unless it is absolute or ":memory:".
func absFrom(dir, p string) string {
	if p == ":memory:" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
