package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplicaAndPoolerSettings(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{EnvReadReplicaURL, EnvReplicaMaxLag, EnvPostgresDirectURL, EnvPostgresPoolMode} {
		t.Setenv(k, "")
	}
	t.Run("read from the file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, FileName), "postgres_url: postgres://u:pw@primary/app\nread_replica_url: postgres://u:secret@replica/app\nreplica_max_lag: 3s\npostgres_pool_mode: transaction\npostgres_direct_url: postgres://u@primary:5432/app\n")
		c, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if c.ReadReplicaURL != "postgres://u:secret@replica/app" || c.ReplicaMaxLag != 3*time.Second || c.PostgresPoolMode != "transaction" || c.PostgresDirectURL == "" {
			t.Fatalf("loaded %+v", c)
		}
		for _, s := range c.Source() {
			if strings.Contains(s.Value, "secret") {
				t.Errorf("%s shows the password: %s", s.Key, s.Value)
			}
		}
	})
	t.Run("the environment wins over the file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, FileName), "postgres_url: postgres://primary/app\nreplica_max_lag: 3s\n")
		t.Setenv(EnvReplicaMaxLag, "250ms")
		t.Setenv(EnvReadReplicaURL, "postgres://replica/app")
		c, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if c.ReplicaMaxLag != 250*time.Millisecond || c.ReadReplicaURL != "postgres://replica/app" || c.From(keyReadReplicaURL) != "env "+EnvReadReplicaURL {
			t.Fatalf("loaded lag %s, replica %q from %q", c.ReplicaMaxLag, c.ReadReplicaURL, c.From(keyReadReplicaURL))
		}
	})
	for _, bad := range []struct{ name, file, env, val, want string }{
		{"a replica with SQLite", "read_replica_url: postgres://replica/app\n", "", "", "read_replica_url (from file"},
		{"a pool mode with SQLite", "", EnvPostgresPoolMode, "session", "but the backend is SQLite"},
		{"an unknown pool mode", "postgres_url: postgres://p/app\npostgres_pool_mode: statement\n", "", "", `postgres_pool_mode (from file`},
		{"transaction mode without a direct URL", "postgres_url: postgres://p/app\npostgres_pool_mode: transaction\n", "", "", "postgres_direct_url is not set"},
		{"a lag that is not a duration", "postgres_url: postgres://p/app\n", EnvReplicaMaxLag, "soon", EnvReplicaMaxLag + `="soon" is not a duration`},
		{"a negative lag", "postgres_url: postgres://p/app\nreplica_max_lag: -1s\n", "", "", "replica_max_lag (from file"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, FileName), bad.file+"namespace: default\n")
			if bad.env != "" {
				t.Setenv(bad.env, bad.val)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, bad.want)
			}
		})
	}
}
