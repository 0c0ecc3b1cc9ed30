package dag

// Layers returns each step's layer in a layered drawing of the DAG: the
// length of the longest dependency path from a root step to it, so root
// steps are layer 0 and every step lies in a layer below all of its
// dependencies. The API serves it with a run's status
// (GET /v1/runs/{id}/dag) and the dashboard draws its graph by it.
//
// The definition should be valid ([Definition.Validate]); a dependency on
// an unknown step is ignored, and a step on a cycle is placed as if the
// dependency closing the cycle were absent, so Layers never loops.
func (d Definition) Layers() map[string]int {
	deps := make(map[string][]string, len(d.Steps))
	for _, s := range d.Steps {
		if _, dup := deps[s.Name]; !dup {
			deps[s.Name] = s.DependsOn
		}
	}
	layer := make(map[string]int, len(d.Steps))
	onPath := map[string]bool{}
	var visit func(name string) int
	visit = func(name string) int {
		if l, ok := layer[name]; ok {
			return l
		}
		onPath[name] = true
		l := 0
		for _, dep := range deps[name] {
			if _, known := deps[dep]; !known || onPath[dep] {
				continue
			}
			l = max(l, visit(dep)+1)
		}
		onPath[name] = false
		layer[name] = l
		return l
	}
	for _, s := range d.Steps {
		visit(s.Name)
	}
	return layer
}
