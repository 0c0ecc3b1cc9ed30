package config

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// Keys of the settings, as written in the file.
const (
	keyPostgresURL  = "postgres_url"
	keySQLitePath   = "sqlite_path"
	keyNamespace    = "namespace"
	keySchema       = "schema"
	keyConcurrency  = "worker.concurrency"
	keyOpenFlowDirs = "openflow.dirs"
	keyServerAddr   = "server.addr"
	keyAPIToken     = "server.token"
	keyRetention    = "retention"
	// Read replicas and poolers (docs/replicas-and-poolers.md).
	keyReadReplicaURL = "read_replica_url"
	keyReplicaMaxLag  = "replica_max_lag"
	keyDirectURL      = "postgres_direct_url"
	keyPoolMode       = "postgres_pool_mode"
)

// knownKeys lists the keys a file may use, for error messages.
var knownKeys = []string{keyPostgresURL, keySQLitePath, keyNamespace, keySchema, keyReadReplicaURL, keyReplicaMaxLag, keyDirectURL, keyPoolMode, "worker: {concurrency, limits}", "openflow: {dirs}", "server: {addr, token, public_webhooks, cors_origins}", "retention: {default, workflows, interval, duty}",
	"schedules: [{name, workflow, version, cron, time_zone, input, overlap, catchup_window, priority, paused}]"}

// Setting is one resolved setting and where its value came from.
type Setting struct {
	// Key is the setting's YAML key ("worker.concurrency" for nested ones).
	Key string `json:"key"`
	// Value is the resolved value as text; a PostgreSQL URL has its
	// password replaced by "xxxxx".
	Value string `json:"value"`
	// From is "default", "file <path>", "env <VARIABLE>" or "flag --<name>".
	From string `json:"from"`
}

// Source lists every setting with its value and origin, in file order.
func (c *Config) Source() []Setting {
	return []Setting{
		{keyPostgresURL, RedactURL(c.PostgresURL), c.sources[keyPostgresURL]},
		{keySQLitePath, c.SQLitePath, c.sources[keySQLitePath]},
		{keyNamespace, c.Namespace, c.sources[keyNamespace]},
		{keySchema, c.Schema, c.sources[keySchema]},
		{keyConcurrency, strconv.Itoa(c.Worker.Concurrency), c.sources[keyConcurrency]},
		{keyOpenFlowDirs, strings.Join(c.OpenFlow.Dirs, string(filepath.ListSeparator)), c.sources[keyOpenFlowDirs]},
		{keyRetention, c.Retention.String(), c.sources[keyRetention]},
		{keyReadReplicaURL, RedactURL(c.ReadReplicaURL), c.sources[keyReadReplicaURL]},
		{keyReplicaMaxLag, c.ReplicaMaxLag.String(), c.sources[keyReplicaMaxLag]},
		{keyDirectURL, RedactURL(c.PostgresDirectURL), c.sources[keyDirectURL]},
		{keyPoolMode, c.PostgresPoolMode, c.sources[keyPoolMode]},
	}
}

// From returns where the setting key (a YAML key such as "postgres_url")
// came from, as in [Setting.From]; "" for an unknown key.
func (c *Config) From(key string) string { return c.sources[key] }

// BackendKind is the kind of backend a configuration selects.
type BackendKind string

// Backend kinds.
const (
	BackendSQLite   BackendKind = "sqlite"
	BackendPostgres BackendKind = "postgres"
)

// Kind returns BackendPostgres when PostgresURL is set, else BackendSQLite.
func (c *Config) Kind() BackendKind {
	if c.PostgresURL != "" {
		return BackendPostgres
	}
	return BackendSQLite
}

// Location describes the selected database for messages: the redacted
// PostgreSQL URL with its schema, or the SQLite file path.
func (c *Config) Location() string {
	if c.Kind() == BackendPostgres {
		return RedactURL(c.PostgresURL) + " (schema " + c.Schema + ")"
	}
	return c.SQLitePath
}

// RedactURL returns a PostgreSQL URL with its password replaced by
// "xxxxx"; a key=value DSN has its password=... value replaced. Other
// text is returned unchanged.
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	fields := strings.Fields(s)
	for i, f := range fields {
		if strings.HasPrefix(f, "password=") {
			fields[i] = "password=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}
