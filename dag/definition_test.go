package dag_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/dag"
)

func TestDefineRejectsInvalidDefinitionsAndStoresNothing(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		for _, h := range []string{"a", "b", "c", "undo"} {
			fx.handle(h, nil)
		}
		cases := []struct {
			name     string
			def      dag.Definition
			sentinel error
			mentions []string
		}{
			{"unknown dependency", def("wf", "a", "b<-a,nope"), dag.ErrUnknownDependency, []string{`step "b" depends on "nope"`}},
			{"unknown handler", def("wf", "a", "b:missing<-a"), dag.ErrUnknownHandler, []string{`step "b"`, `handler "missing"`}},
			{"unknown compensate handler", def("wf", "a:a:gone"), dag.ErrUnknownHandler, []string{`step "a"`, `compensate handler "gone"`}},
			{"cycle", def("wf", "a<-c", "b<-a", "c<-b"), dag.ErrCycle, []string{"a → c → b → a"}},
			{"self dependency", def("wf", "a", "b<-b"), dag.ErrCycle, []string{"b → b"}},
			{"duplicate step", def("wf", "a", "b<-a", "a"), dag.ErrDuplicateStep, []string{`step "a" is declared twice (steps 1 and 3)`}},
			{"no name", def("", "a"), dag.ErrInvalidDefinition, []string{"no name"}},
			{"no steps", dag.Definition{Name: "wf"}, dag.ErrInvalidDefinition, []string{"no steps"}},
			{"step without handler", dag.Definition{Name: "wf", Steps: []dag.Step{{Name: "a"}}}, dag.ErrInvalidDefinition, []string{`step "a" has no handler`}},
			{"negative retries", dag.Definition{Name: "wf", Steps: []dag.Step{{Name: "a", Handler: "a", Retries: dag.Retries(-1)}}}, dag.ErrInvalidDefinition, []string{"retries -1"}},
			{"retries over the maximum", dag.Definition{Name: "wf", Steps: []dag.Step{{Name: "a", Handler: "a", Retries: dag.Retries(dag.MaxRetries + 1)}}}, dag.ErrInvalidDefinition, []string{"retries 101"}},
			{"a '#' in a step name", def("wf", "a#1:a"), dag.ErrInvalidDefinition, []string{`"a#1"`, "'#'"}},
			{"a ':' in a step name", dag.Definition{Name: "wf", Steps: []dag.Step{{Name: "x:y", Handler: "a"}}}, dag.ErrInvalidDefinition, []string{`"x:y"`}},
			{"an empty step name", dag.Definition{Name: "wf", Steps: []dag.Step{{Handler: "a"}}}, dag.ErrInvalidDefinition, []string{"empty step name"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := fx.eng.Define(fx.ctx, tc.def)
				if !errors.Is(err, tc.sentinel) {
					t.Fatalf("Define: %v, want an error wrapping %q", err, tc.sentinel)
				}
				for _, m := range tc.mentions {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %q", err, m)
					}
				}
				if tc.def.Name != "" {
					if _, err := fx.eng.Definition(fx.ctx, tc.def.Name); !errors.Is(err, dag.ErrNotDefined) {
						t.Errorf("after a refused Define, Definition(%q) = %v; want ErrNotDefined (nothing stored)", tc.def.Name, err)
					}
				}
			})
		}

		t.Run("several problems are all reported", func(t *testing.T) {
			_, err := fx.eng.Define(fx.ctx, def("wf", "a", "a", "b:missing<-zz"))
			for _, s := range []error{dag.ErrDuplicateStep, dag.ErrUnknownHandler, dag.ErrUnknownDependency} {
				if !errors.Is(err, s) {
					t.Errorf("Define: %v, want it to wrap %q too", err, s)
				}
			}
		})
	})
}

func TestDefineStoresAndOverwritesAndStartNeedsADefinition(t *testing.T) {
	forEachTarget(t, func(t *testing.T, fx *fixture) {
		fx.handle("a", nil)
		fx.handle("b", nil)
		got := fx.define(def("wf", "a", "b<-a,a"))
		if r := got.Steps[1].Retries; r == nil || *r != dag.DefaultRetries || !reflect.DeepEqual(got.Steps[1].DependsOn, []string{"a"}) {
			t.Fatalf("Define returned %+v: want retries explicit (3) and the duplicate dependency dropped", got.Steps[1])
		}
		stored, err := fx.eng.Definition(fx.ctx, "wf")
		if err != nil || !reflect.DeepEqual(stored, got) {
			t.Fatalf("Definition = %+v, %v; want %+v", stored, err, got)
		}
		// Defining again with the same name replaces the definition.
		fx.define(def("wf", "b"))
		if stored, _ := fx.eng.Definition(fx.ctx, "wf"); len(stored.Steps) != 1 || stored.Steps[0].Name != "b" {
			t.Fatalf("after the second Define: %+v, want the new definition", stored)
		}
		fx.define(def("other", "a"))
		all, err := fx.eng.Definitions(fx.ctx)
		if err != nil || len(all) != 2 || all[0].Name != "other" || all[1].Name != "wf" {
			t.Fatalf("Definitions = %+v, %v; want other and wf", all, err)
		}
		wfs, err := fx.eng.Workflows(fx.ctx)
		if err != nil || len(wfs) != 2 || wfs[0].Spec().Name != "other" || wfs[1].Spec().Name != "wf" {
			t.Fatalf("Workflows = %v, %v; want the interpreters of other and wf", wfs, err)
		}
		_, err = fx.eng.Start(fx.ctx, "never-defined", nil)
		if !errors.Is(err, dag.ErrNotDefined) || !strings.Contains(err.Error(), `"never-defined" has not been defined`) {
			t.Fatalf("Start of an undefined workflow: %v", err)
		}
	})
}

func TestParse(t *testing.T) {
	list := `
name: order
steps:
  - name: stock
    handler: checkStock
  - name: fraud
    handler: checkFraud
    retries: 0
  - name: charge
    handler: charge
    compensate: refund
    dependsOn: [stock, fraud]
`
	pgshift := `
name: order
steps:
  stock: {handler: checkStock}
  fraud: {handler: checkFraud, retries: 0}
  charge: {handler: charge, compensate: refund}
dag:
  stock: []
  charge: [stock, fraud]
`
	json := "{\n\t\"name\": \"order\",\n\t\"steps\": [\n\t\t{\"name\": \"stock\", \"handler\": \"checkStock\"},\n" +
		"\t\t{\"name\": \"fraud\", \"handler\": \"checkFraud\", \"retries\": 0},\n" +
		"\t\t{\"name\": \"charge\", \"handler\": \"charge\", \"compensate\": \"refund\", \"dependsOn\": [\"stock\", \"fraud\"]}\n\t]\n}\n"
	want := dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "stock", Handler: "checkStock"},
		{Name: "fraud", Handler: "checkFraud", Retries: dag.Retries(0)},
		{Name: "charge", Handler: "charge", Compensate: "refund", DependsOn: []string{"stock", "fraud"}},
	}}
	for name, src := range map[string]string{"a list of steps": list, "pgshift's steps and dag mappings": pgshift, "JSON": json} {
		t.Run(name, func(t *testing.T) {
			got, err := dag.Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if name == "pgshift's steps and dag mappings" {
				got.Steps[0].DependsOn = nil // "stock: []" is explicit there
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Parse = %+v\nwant    %+v", got, want)
			}
		})
	}

	for _, tc := range []struct {
		name, src string
		sentinel  error
		mentions  string
	}{
		{"an unknown field, with its line", "name: x\nsteps:\n  - name: a\n    handler: h\n    retires: 2\n", dag.ErrInvalidDefinition, `line 5: step 1: unknown field "retires"`},
		{"retries that are not a number", "name: x\nsteps:\n  - {name: a, handler: h, retries: many}\n", dag.ErrInvalidDefinition, `"many" is not a whole number`},
		{"dag naming an unknown step", "name: x\nsteps:\n  a: {handler: h}\ndag:\n  b: [a]\n", dag.ErrUnknownDependency, `dag names "b"`},
		{"dependencies given twice", "name: x\nsteps:\n  a: {handler: h}\n  b: {handler: h, dependsOn: [a]}\ndag:\n  b: [a]\n", dag.ErrInvalidDefinition, `given twice`},
		{"a cycle", "name: x\nsteps:\n  a: {handler: h, dependsOn: [b]}\n  b: {handler: h, dependsOn: [a]}\n", dag.ErrCycle, "a → b → a"},
		{"an unknown dependency", "name: x\nsteps:\n  a: {handler: h, dependsOn: [zz]}\n", dag.ErrUnknownDependency, `depends on "zz"`},
		{"not YAML", "name: [x\n", dag.ErrInvalidDefinition, "yaml"},
		{"not a mapping", "- a\n- b\n", dag.ErrInvalidDefinition, "not a mapping"},
		{"no steps", "name: x\n", dag.ErrInvalidDefinition, "no steps"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			_, err := dag.Parse([]byte(tc.src))
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("Parse: %v; want an error wrapping %q mentioning %q", err, tc.sentinel, tc.mentions)
			}
		})
	}
}

func TestHandleRefusesDuplicatesAndEmptyNames(t *testing.T) {
	eng := dag.New(nil, dag.Options{Handlers: map[string]dag.Handler{"a": func(context.Context, dag.StepContext) (any, error) { return nil, nil }}})
	if err := eng.Handle("a", func(context.Context, dag.StepContext) (any, error) { return nil, nil }); err == nil {
		t.Error("Handle of a name registered by Options: no error")
	}
	if err := eng.Handle("", func(context.Context, dag.StepContext) (any, error) { return nil, nil }); err == nil {
		t.Error("Handle with an empty name: no error")
	}
	if err := eng.Handle("b", nil); err == nil {
		t.Error("Handle of a nil handler: no error")
	}
}

func TestLayersAreTheLongestPathFromARoot(t *testing.T) {
	d := dag.Definition{Name: "order", Steps: []dag.Step{
		{Name: "stock", Handler: "h"},
		{Name: "fraud", Handler: "h"},
		{Name: "charge", Handler: "h", DependsOn: []string{"stock", "fraud"}},
		{Name: "invoice", Handler: "h", DependsOn: []string{"charge"}},
		// A shortcut from a root does not pull email above invoice.
		{Name: "email", Handler: "h", DependsOn: []string{"invoice", "stock"}},
		{Name: "analytics", Handler: "h", DependsOn: []string{"charge"}},
	}}
	want := map[string]int{"stock": 0, "fraud": 0, "charge": 1, "invoice": 2, "email": 3, "analytics": 2}
	got := d.Layers()
	if len(got) != len(want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	for name, l := range want {
		if got[name] != l {
			t.Errorf("layer of %s is %d, want %d (all: %v)", name, got[name], l, got)
		}
	}
	// A cycle (an invalid definition) ends; unknown dependencies are ignored.
	bad := dag.Definition{Name: "bad", Steps: []dag.Step{
		{Name: "a", Handler: "h", DependsOn: []string{"b", "ghost"}},
		{Name: "b", Handler: "h", DependsOn: []string{"a"}},
	}}
	if l := bad.Layers(); len(l) != 2 {
		t.Errorf("layers of a cycle: %v", l)
	}
}
