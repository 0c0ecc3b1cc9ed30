package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRetentionIsReadFromTheFile(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "retention:\n  default: 30d\n  workflows:\n    nightly: 36h\n    audit: 0\n  interval: 10m\n  duty: 0.25\n")
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	def, ws := c.Retention.Periods()
	if def != 30*24*time.Hour || ws["nightly"] != 36*time.Hour || ws["audit"] != 0 || len(ws) != 2 || time.Duration(c.Retention.Interval) != 10*time.Minute {
		t.Fatalf("retention = %+v, want default 30d, nightly 36h, audit 0, interval 10m", c.Retention)
	}
	if !c.Retention.Enabled() {
		t.Fatal("Enabled() = false with a default period")
	}
	if got, want := c.Retention.String(), "default 30d, audit forever, nightly 36h0m0s, every 10m0s, duty 0.25"; got != want {
		t.Errorf("describe() = %q, want %q", got, want)
	}
	if from := c.From(keyRetention); !strings.HasPrefix(from, "file ") {
		t.Errorf("retention comes from %q, want the file", from)
	}
}

func TestWithoutRetentionNothingIsDeleted(t *testing.T) {
	clearEnv(t)
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention.Enabled() || c.Retention.String() != "keep forever" || c.From(keyRetention) != "default" {
		t.Fatalf("retention without a section = %+v (%q from %q), want nothing deleted", c.Retention, c.Retention.String(), c.From(keyRetention))
	}
}

func TestBadRetentionPeriodsAreRefusedNamingTheValue(t *testing.T) {
	clearEnv(t)
	for _, text := range []string{
		"retention:\n  default: 30 days\n",
		"retention:\n  default: -3h\n",
		"retention:\n  workflows:\n    x: 1.5d\n",
		"retention:\n  defualt: 30d\n",
	} {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, FileName), text)
		_, err := Load(root)
		if err == nil {
			t.Errorf("%q loaded, want an error", text)
			continue
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: error %q does not say where", text, err)
		}
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "retention:\n  default: 1d\n  duty: 1.5\n")
	if _, err := Load(root); err == nil || !strings.Contains(err.Error(), "retention.duty") {
		t.Errorf("a duty of 1.5: %v, want an error naming retention.duty", err)
	}
	for s, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "0": 0, "90m": 90 * time.Minute, " 7d ": 7 * 24 * time.Hour} {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
}
