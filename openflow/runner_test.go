package openflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunnerConventions runs one script per case and language, checking
// Windmill's calling conventions: which arguments main receives, how the
// result and errors come back.
func TestRunnerConventions(t *testing.T) {
	r := newRunners(DefaultRunnersDir())
	cases := []struct {
		name, lang, src, args string
		failed                bool
		want                  string // the exact result, or for a failure a substring of it
	}{
		{"python keyword args, defaults for missing and null, **kwargs gets the rest", "python3",
			"def main(a, b=3, *rest, c, d=4, **kw):\n    return [a, b, c, d, kw]", `{"a":1,"c":2,"z":9,"d":null}`, false, `[1,3,2,4,{"z":9}]`},
		{"python missing required argument is None", "python3", "def main(a, b):\n    return [a, b]", `{"a":1}`, false, `[1,null]`},
		{"python through a decorator", "python3",
			"import functools\ndef deco(f):\n    @functools.wraps(f)\n    def w(*a, **k):\n        return f(*a, **k)\n    return w\n@deco\ndef main(x, y=2):\n    return [x, y]",
			`{"x":1}`, false, `[1,2]`},
		{"python bytes and datetime parameters", "python3",
			"from datetime import datetime\ndef main(when: datetime, raw: bytes):\n    return [when.year, raw]", `{"when":"2024-05-06T07:08:09Z","raw":"aGk="}`, false, `[2024,"aGk="]`},
		{"python exception", "python3", "def main():\n    return [][0]", `{}`, true, `"message":"list index out of range","name":"IndexError"`},
		{"python non-JSON values become strings", "python3", "def main():\n    return {1, 2} and None or object.__name__", `{}`, false, `"object"`},
		{"bash positional args: strings raw, other values as JSON, missing ones empty (so a default applies)", "bash",
			"a=\"$1\"\nb=\"${2}\"\nc=\"${3:-dflt}\"\necho \"[$a][$b][$c]\"", `{"a":"x y","b":{"k":[1]}}`, false, `"[x y][{\"k\":[1]}][dflt]"`},
		{"bash result.json wins over output", "bash", "echo noise\necho '{\"r\":1}' > result.json", `{}`, false, `{"r":1}`},
		{"bash result.out is a string", "bash", "printf 'out text' > result.out\necho noise", `{}`, false, `"out text"`},
		{"bash non-zero exit", "bash", "echo one\necho two >&2\nexit 4", `{}`, true, `exit code for \"bash\": 4, last log lines:\none\ntwo`},
		{"deno positional args from main's parameter names", "deno",
			"export async function main(\n  b: string,\n  // a comment, with a comma\n  a: { x: number, y: Array<number> } = {x: 1, y: []},\n) { return [a, b] }", `{"a":{"x":2},"b":"s","c":3}`, false, `[{"x":2},"s"]`},
		{"deno Error", "deno", "export function main() { const e = new TypeError('bad'); (e as any).code = 7; throw e }", `{}`, true, `"message":"bad","name":"TypeError"`},
		{"deno undefined is null", "deno", "export function main() {}", `{}`, false, `null`},
		{"bun BigInt as string", "bun", "export const main = async (n: number) => BigInt(n) * 3n", `{"n":5}`, false, `"15"`},
		{"bun thrown non-Error", "bun", "export function main() { throw 'plain' }", `{}`, true, `"message":"plain","name":"Error"`},
		{"bun no main", "bun", "export function other() {}", `{}`, true, `does not export a main function`},
		{"go struct of parameters", "go", "package inner\n\nimport \"strings\"\n\nfunc main(s string, n int) (interface{}, error) {\n\treturn strings.Repeat(s, n), nil\n}\n", `{"s":"ab","n":2}`, false, `"abab"`},
		{"go error", "go", "package inner\n\nimport \"errors\"\n\nfunc main() (interface{}, error) {\n\treturn nil, errors.New(\"nope\")\n}\n", `{}`, true, `exit code for \"go\": 1, last log lines:\nnope`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := r.lookup(c.lang); err != nil {
				t.Skipf("skipped: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := r.run(ctx, scriptJob{lang: c.lang, content: c.src, args: json.RawMessage(c.args), dir: t.TempDir()})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.failed != c.failed {
				t.Fatalf("failed = %v, want %v: %s\nlogs: %s", res.failed, c.failed, res.result, res.logs)
			}
			if c.failed && !strings.Contains(string(res.result), c.want) || !c.failed && string(res.result) != c.want {
				t.Errorf("result %s, want %s\nlogs: %s", res.result, c.want, res.logs)
			}
		})
	}
}

func TestRunnerMissing(t *testing.T) {
	r := newRunners(t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := r.lookup("deno")
	var missing *RunnerMissingError
	if !errors.As(err, &missing) {
		t.Fatalf("lookup with an empty PATH: %v", err)
	}
	for _, want := range []string{`the deno runner is not installed: no "deno" in PATH or `, "install it with: npm i --prefix " + r.dir + " deno"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
}

func TestTSParamNames(t *testing.T) {
	cases := map[string]string{
		"export function main(a, b) {}":                                          "a,b",
		"export async function main(x: number, y?: {a: string, b: [1, 2]}) {}":   "x,y",
		"export default async function main<T>(items: Map<string, T>, n = 1) {}": "items,n",
		"export const main = async (a: string, ...rest: number[]) => a":          "a,rest",
		"export function main({ a, b }: Args, c: string) {}":                     ",c",
		"function helper(z) {}\nexport function main() {}":                       "",
		"export function main(a = ')', b = `x,y`) {}":                            "a,b",
		"no main here": "",
	}
	for src, want := range cases {
		got, err := tsParamNames(src)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s: %v %v, want %s", src, got, err, want)
		}
	}
}
