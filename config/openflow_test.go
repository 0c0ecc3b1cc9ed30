package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenFlowDirs(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvOpenFlowDirs, "")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "openflow:\n  dirs: [flows, /abs/scripts]\n")
	sub := filepath.Join(root, "sub")
	c, err := Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "flows"), "/abs/scripts"}
	if strings.Join(c.OpenFlow.Dirs, ",") != strings.Join(want, ",") {
		t.Errorf("dirs from the file = %v, want %v (relative to the file's directory)", c.OpenFlow.Dirs, want)
	}
	if from := c.From("openflow.dirs"); !strings.HasPrefix(from, "file ") {
		t.Errorf("openflow.dirs from %q, want the file", from)
	}

	t.Setenv(EnvOpenFlowDirs, "a"+string(filepath.ListSeparator)+"/b")
	c, err = Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{filepath.Join(sub, "a"), "/b"}
	if strings.Join(c.OpenFlow.Dirs, ",") != strings.Join(want, ",") {
		t.Errorf("dirs from the environment = %v, want %v (relative to the working directory)", c.OpenFlow.Dirs, want)
	}
}

func TestOpenFlowUnknownKey(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvOpenFlowDirs, "")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), "openflow:\n  dir: flows\n")
	_, err := Load(root)
	if err == nil || !strings.Contains(err.Error(), `unknown key "dir"`) {
		t.Errorf("err = %v, want an unknown key error", err)
	}
}
