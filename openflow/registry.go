package openflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// registry finds scripts and flows by path in directories, in the layout
// of Windmill's CLI (wmill sync):
//
//	f/system/hello.py          script f/system/hello, python3
//	f/system/hello.ts          script, bun (Windmill's default for .ts)
//	f/system/hello.bun.ts      script, bun
//	f/system/hello.deno.ts     script, deno
//	f/system/hello.sh          script, bash
//	f/system/hello.go          script, go
//	f/team/etl.flow.yaml       flow f/team/etl (also .flow.yml, .flow.json)
//	f/team/etl.flow/flow.yaml  flow f/team/etl (also flow.json)
//
// Directories are searched in order; the first that has the path wins.
type registry struct {
	dirs []string
}

func newRegistry(dirs []string) *registry { return &registry{dirs: dirs} }

// scriptExts maps a script file's suffix to its language, longest
// suffixes first.
var scriptExts = []struct{ ext, lang string }{
	{".deno.ts", "deno"}, {".bun.ts", "bun"}, {".ts", "bun"}, {".py", "python3"}, {".sh", "bash"}, {".go", "go"},
}

var flowSuffixes = []string{".flow.yaml", ".flow.yml", ".flow.json", ".flow/flow.yaml", ".flow/flow.yml", ".flow/flow.json"}

// scriptFile is a script found by path.
type scriptFile struct {
	path, file, lang string
}

func (r *registry) where() string {
	if len(r.dirs) == 0 {
		return "no directory (set openflow.dirs in openworkflow.yaml, or Options.Dirs)"
	}
	return strings.Join(r.dirs, ", ")
}

// script finds the script at path.
func (r *registry) script(path string) (scriptFile, error) {
	if err := checkRelPath(path); err != nil {
		return scriptFile{}, err
	}
	for _, dir := range r.dirs {
		var found []scriptFile
		for _, se := range scriptExts {
			f := filepath.Join(dir, filepath.FromSlash(path)+se.ext)
			if st, err := os.Stat(f); err == nil && !st.IsDir() {
				found = append(found, scriptFile{path: path, file: f, lang: se.lang})
			}
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		var names []string
		for _, f := range found {
			names = append(names, filepath.Base(f.file))
		}
		return scriptFile{}, fmt.Errorf("script %s is ambiguous in %s: %s", path, dir, strings.Join(names, ", "))
	}
	var exts []string
	for _, se := range scriptExts {
		exts = append(exts, se.ext)
	}
	return scriptFile{}, fmt.Errorf("script %s not found: looked for %s{%s} in %s", path, path, strings.Join(exts, ","), r.where())
}

// flowFileOf finds the file of the flow at path.
func (r *registry) flowFileOf(path string) (string, error) {
	if err := checkRelPath(path); err != nil {
		return "", err
	}
	for _, dir := range r.dirs {
		for _, suf := range flowSuffixes {
			f := filepath.Join(dir, filepath.FromSlash(path+suf))
			if st, err := os.Stat(f); err == nil && !st.IsDir() {
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("flow %s not found: looked for %s{%s} in %s", path, path, strings.Join(flowSuffixes, ","), r.where())
}

// flow parses the flow at path.
func (r *registry) flow(path string) (*Flow, error) {
	f, err := r.flowFileOf(path)
	if err != nil {
		return nil, err
	}
	fl, err := ParseFile(f)
	if err != nil {
		return nil, fmt.Errorf("flow %s (%s): %w", path, f, err)
	}
	return fl, nil
}

// flowJSON returns the definition of the flow at path as JSON.
func (r *registry) flowJSON(path string) (json.RawMessage, error) {
	f, err := r.flow(path)
	if err != nil {
		return nil, err
	}
	return f.JSON(), nil
}

func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("invalid path %q: expected a relative path such as f/folder/name", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("invalid path %q: expected a relative path such as f/folder/name", p)
		}
	}
	return nil
}

// flowEntry is a flow file found in the directories, with its path.
type flowEntry struct {
	path, file string
}

// flows lists every flow file of the directories (the first directory
// wins for a path found twice), each parsed to check it; the error lists
// every invalid file.
func (r *registry) flows() ([]flowEntry, error) {
	seen := map[string]bool{}
	var out []flowEntry
	var errs []error
	for _, dir := range r.dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); p != dir && (strings.HasPrefix(name, ".") || name == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			path := ""
			for _, suf := range flowSuffixes {
				if strings.HasSuffix(rel, suf) {
					path = strings.TrimSuffix(rel, suf)
					break
				}
			}
			if path == "" || seen[path] {
				return nil
			}
			seen[path] = true
			if _, err := ParseFile(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
				return nil
			}
			out = append(out, flowEntry{path: path, file: p})
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("read flow directory %s: %w", dir, err))
		} else if err != nil {
			errs = append(errs, fmt.Errorf("flow directory %s does not exist", dir))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, errors.Join(errs...)
}

// readScript returns the content and language of the script at path.
func (r *registry) readScript(path string) (content, lang string, err error) {
	s, err := r.script(path)
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(s.file)
	if err != nil {
		return "", "", err
	}
	return string(b), s.lang, nil
}
