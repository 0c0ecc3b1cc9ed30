package openflow

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Each language follows Windmill's calling convention (reference §6): the
// wrapper reads args.json, calls main with the arguments its signature
// names, and writes result.json, or an error object {message, name,
// stack} and exits 1.

// pythonWrapper calls inner.main with keyword arguments for the names in
// its signature: a missing or null argument is None when the parameter
// has no default, and left out (so the default applies) when it has one;
// **kwargs receives the other arguments. bytes parameters are
// base64-decoded and datetime ones parsed from ISO 8601. The result is
// json.dumps(res, default=str), bytes base64-encoded. The signature is
// read from the function's code object (importing inspect costs tens of
// milliseconds per run), and through inspect only for a wrapped function.
const pythonWrapper = `import json, sys
sys.path.insert(0, ".")

def _params(fn):
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__"):
        import inspect
        out = []
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind == p.VAR_POSITIONAL:
                continue
            out.append((name, p.default is not p.empty, p.kind == p.VAR_KEYWORD, p.annotation))
        return out
    n, k = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames[:n + k]
    ndef = len(fn.__defaults__ or ())
    kwdef = fn.__kwdefaults__ or {}
    ann = getattr(fn, "__annotations__", {})
    out = [(name, i >= n - ndef if i < n else name in kwdef, False, ann.get(name)) for i, name in enumerate(names)]
    if code.co_flags & 0x08:
        out.append((code.co_varnames[n + k + (1 if code.co_flags & 0x04 else 0)], False, True, None))
    return out

def _convert(ann, v):
    if ann in (bytes, "bytes") and isinstance(v, str):
        import base64
        return base64.b64decode(v)
    if isinstance(v, str) and (getattr(ann, "__name__", None) == "datetime" or ann == "datetime"):
        import datetime
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    return v

def _default(o):
    if isinstance(o, (bytes, bytearray)):
        import base64
        return base64.b64encode(o).decode()
    return str(o)

try:
    with open("args.json") as f:
        args = json.load(f)
    import inner
    params = _params(inner.main)
    named = {p[0] for p in params}
    kwargs = {}
    for name, has_default, var_kw, ann in params:
        if var_kw:
            for k, v in args.items():
                if k not in named:
                    kwargs[k] = v
            continue
        v = args.get(name)
        if v is None:
            if not has_default:
                kwargs[name] = None
            continue
        kwargs[name] = _convert(ann, v)
    res = inner.main(**kwargs)
    out = json.dumps(res, default=_default)
    with open("result.json", "w") as f:
        f.write(out)
except BaseException as e:
    import traceback
    err = {"message": str(e), "name": type(e).__name__, "stack": traceback.format_exc()}
    with open("result.json", "w") as f:
        json.dump(err, f, default=str)
    sys.exit(1)
`

func preparePython(job scriptJob, bin string) (prepared, error) {
	if err := writeFiles(job.dir, map[string]string{"inner.py": job.content, "wrapper.py": pythonWrapper}); err != nil {
		return prepared{}, err
	}
	return prepared{
		argv:    []string{bin, "-B", "wrapper.py"},
		env:     []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		collect: collectResultFile("python3"),
	}, nil
}

// jsWrapper (bun and deno) calls main with the arguments in the order of
// its parameter names (read from the source: missing ones are undefined,
// extra ones ignored) and writes JSON.stringify(result ?? null), BigInts
// as strings. A thrown value becomes {message, name, stack}, with the
// Error's other own properties under "extra". __IO__ defines read, write
// and exit with the runtime's own APIs (Deno's node: compatibility layer
// costs tens of milliseconds per run).
const jsWrapper = `__IO__
const argNames = __ARG_NAMES__;
function errorObject(e) {
  if (e !== null && typeof e === "object" && "message" in e) {
    const o = { message: String(e.message), name: String(e.name ?? "Error"), stack: e.stack === undefined ? undefined : String(e.stack) };
    for (const k of Object.keys(e)) {
      if (k !== "message" && k !== "name" && k !== "stack") (o.extra ??= {})[k] = e[k];
    }
    return o;
  }
  return { message: String(e), name: "Error" };
}
try {
  const args = JSON.parse(read("args.json"));
  const inner = await import("./main.ts");
  if (typeof inner.main !== "function") throw new Error("the script does not export a main function");
  const res = await inner.main(...argNames.map((n) => args[n]));
  write("result.json", JSON.stringify(res ?? null, (_k, v) => typeof v === "bigint" ? v.toString() : v) ?? "null");
} catch (e) {
  let out;
  try { out = JSON.stringify(errorObject(e)); } catch { out = JSON.stringify({ message: String(e), name: "Error" }); }
  write("result.json", out);
  exit(1);
}
`

const denoIO = `const read = (p) => Deno.readTextFileSync(p);
const write = (p, s) => Deno.writeTextFileSync(p, s);
const exit = (c) => Deno.exit(c);`

const bunIO = `import { readFileSync, writeFileSync } from "node:fs";
const read = (p) => readFileSync(p, "utf8");
const write = (p, s) => writeFileSync(p, s);
const exit = (c) => process.exit(c);`

func prepareJS(job scriptJob, bin string) (prepared, error) {
	names, err := tsParamNames(job.content)
	if err != nil {
		return prepared{}, err
	}
	io := bunIO
	if job.lang == "deno" {
		io = denoIO
	}
	wrapper := strings.Replace(strings.Replace(jsWrapper, "__ARG_NAMES__", string(mustJSON(names)), 1), "__IO__", io, 1)
	if err := writeFiles(job.dir, map[string]string{"main.ts": job.content, "wrapper.ts": wrapper}); err != nil {
		return prepared{}, err
	}
	p := prepared{env: []string{"NO_COLOR=1"}, collect: collectResultFile(job.lang)}
	if job.lang == "deno" {
		p.argv = []string{bin, "run", "--allow-all", "--no-config", "--no-lock", "--quiet", "wrapper.ts"}
		p.env = append(p.env, "DENO_NO_UPDATE_CHECK=1", "DENO_NO_PROMPT=1")
	} else {
		p.argv = []string{bin, "run", "--silent", "wrapper.ts"}
		p.env = append(p.env, "DO_NOT_TRACK=1")
	}
	return p, nil
}

// tsMain finds the signature of main: an exported (async) function, or
// an exported const arrow function.
var tsMain = regexp.MustCompile(`export\s+(?:default\s+)?(?:async\s+)?function\s*\*?\s*main\s*(?:<[^>]*>)?\s*\(|export\s+(?:const|let|var)\s+main\s*(?::[^=]*)?=\s*(?:async\s*)?(?:function\s*\*?\s*)?\(`)

// tsParamNames returns the parameter names of main in a TypeScript or
// JavaScript source, in order ("" for a destructuring pattern, which gets
// undefined). A source without an exported main has none (the wrapper
// then reports the missing export).
func tsParamNames(src string) ([]string, error) {
	loc := tsMain.FindStringIndex(src)
	if loc == nil {
		return []string{}, nil
	}
	params, ok := balanced(src[loc[1]:], ')')
	if !ok {
		return nil, fmt.Errorf("cannot read the parameters of main: unbalanced brackets")
	}
	names := []string{}
	for _, p := range splitTopLevel(stripComments(params), ',') {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		p = strings.TrimPrefix(p, "...")
		end := strings.IndexFunc(p, func(r rune) bool { return !isIdentRune(r) })
		if end < 0 {
			end = len(p)
		}
		names = append(names, p[:end])
	}
	return names, nil
}

// balanced returns s up to the bracket closing an already open one (close
// is ')' , ']' or '}'), skipping nested brackets, strings and comments.
func balanced(s string, close byte) (string, bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipQuoted(s, i)
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return "", false
			}
			i += end + 3
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return s[:i], c == close
			}
			depth--
		}
	}
	return "", false
}

// splitTopLevel splits s at sep outside brackets (including TypeScript's
// <…> type arguments) and strings.
func splitTopLevel(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipQuoted(s, i)
		case c == '(' || c == '[' || c == '{' || c == '<':
			depth++
		case (c == ')' || c == ']' || c == '}' || c == '>') && !(c == '>' && i > 0 && s[i-1] == '='):
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

var comments = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)

func stripComments(s string) string { return comments.ReplaceAllString(s, "") }

// bashParam matches Windmill's declaration of a bash argument: a line
// name="$1" (also "${1}" and "${1:-default}").
var bashParam = regexp.MustCompile(`(?m)^\s*([A-Za-z_][A-Za-z0-9_]*)="\$\{?([0-9]+)(?::-[^}"]*)?\}?"`)

// bashArgs returns the positional arguments of a bash script: for each
// declared position from 1 up, the argument of that name, a JSON string
// passed raw and any other value as its JSON text; missing ones are "".
func bashArgs(src string, args json.RawMessage) []string {
	byPos := map[int]string{}
	maxPos := 0
	for _, m := range bashParam.FindAllStringSubmatch(src, -1) {
		pos, err := strconv.Atoi(m[2])
		if err != nil || pos < 1 || pos > 1000 {
			continue
		}
		if _, seen := byPos[pos]; !seen {
			byPos[pos] = m[1]
		}
		maxPos = max(maxPos, pos)
	}
	var vals map[string]json.RawMessage
	_ = json.Unmarshal(args, &vals)
	out := make([]string, 0, maxPos)
	for pos := 1; pos <= maxPos; pos++ {
		v, ok := vals[byPos[pos]]
		var s string
		switch {
		case !ok || isNull(v):
		case jsonKind(v) == "a string":
			_ = json.Unmarshal(v, &s)
		default:
			s = string(compact(v))
		}
		out = append(out, s)
	}
	return out
}

func prepareBash(job scriptJob, bin string) (prepared, error) {
	if err := writeFiles(job.dir, map[string]string{"main.sh": job.content}); err != nil {
		return prepared{}, err
	}
	argv := append([]string{bin, "main.sh"}, bashArgs(job.content, job.args)...)
	return prepared{argv: argv, collect: collectBash}, nil
}

// collectBash: on exit 0 the result is ./result.json if the script wrote
// valid JSON there, else ./result.out as a string, else the last line of
// its output, trimmed, as a string (Windmill's bash convention).
func collectBash(dir string, exitCode int, logs string) (json.RawMessage, bool) {
	if exitCode != 0 {
		return exitError("bash", exitCode, logs), true
	}
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil && json.Valid(b) {
		return compact(b), false
	}
	if b, err := os.ReadFile(filepath.Join(dir, "result.out")); err == nil {
		return jsonString(string(b)), false
	}
	lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
	return jsonString(strings.TrimSpace(lines[len(lines)-1])), false
}

// writeFiles writes name → contents into dir.
func writeFiles(dir string, files map[string]string) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}
