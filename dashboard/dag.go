package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/dag"
)

// dagGraph is a DAG run's graph as the run page draws it: one node per
// step, in columns by layer (the longest dependency path from a root
// step, as GET /v1/runs/{id}/dag gives it), left to right, with an edge
// from each dependency to its dependent. Positions are SVG user units
// computed here; the template writes them as attributes (no inline style,
// no script), and the CSS colours each node by its step's state.
type dagGraph struct {
	// Status is the run's DAG status (compensating, compensated…).
	Status string
	// Width and Height are the drawing's size in SVG units.
	Width, Height int
	Nodes         []dagNode
	Edges         []dagEdge
	// Compensations counts the steps in the compensation chain; Chain
	// lists them in the order the chain runs them.
	Compensations int
	Chain         []dagLink
	// Summary is the graph's text alternative, for screen readers.
	Summary string
}

// dagNode is one step of a [dagGraph].
type dagNode struct {
	// X, Y, W, H are the node's box.
	X, Y, W, H int
	// Step is the step's name; Name the same, cut to fit the box.
	Step, Name string
	// Status is the step's state (pending, running, completed, failed,
	// skipped, compensating, compensated, compensation_failed, canceled):
	// the node's class and its second line of text.
	Status   string
	Attempts int
	// Compensate is the compensate handler ("" for none); CompStatus
	// the state of its compensation (see compStatus: its own state once
	// it began; pending while it waits its turn in the chain of a
	// compensating run; not_needed on a completed run; not_run
	// otherwise), and CompOrder its rank in the compensation chain (1
	// first; 0 not in it).
	Compensate, CompStatus string
	CompOrder              int // 0 when the step is not in the chain
	// StateText is the node's second line (state, attempts beyond one);
	// CompText its compensation badge ("↺2 refund · completed").
	StateText, CompText string
	// ErrorText is the start of the last error of a failed step without
	// a compensation badge, on the badge's line (whole in the tooltip).
	ErrorText string
	// Href links to the step's first attempt in the attempts table.
	Href string
	// Label is the node's accessible name; Title its tooltip (errors and
	// next attempts included).
	Label, Title string
}

// dagLink is one step of the compensation chain: its compensate
// handler and the state of its compensation.
type dagLink struct {
	Step, Handler, Status string
}

// dagEdge is a dependency drawn from its step to its dependent: a cubic
// Bézier path (SVG "d"), of class done once the dependency completed.
type dagEdge struct {
	From, To, Path, Class string
}

// Drawing sizes, in SVG units (pixels at 100 %).
const (
	dagNodeW, dagNodeH = 212, 72
	dagGapX, dagGapY   = 56, 18
	dagPad             = 8
	dagNameRunes       = 22 // a longer step name is cut, whole in the tooltip
)

// buildDAG lays out a DAG run's status. firstAttempt maps a step name to
// the id of its first attempt, to link each node to the attempts table.
func buildDAG(st *api.DAGRun, firstAttempt map[string]string) *dagGraph {
	g := &dagGraph{Status: string(st.Status)}
	nodes := st.Graph.Nodes
	if len(nodes) == 0 {
		return g
	}
	// Columns by layer, then an order within each column that keeps
	// edges short: two sweeps of the barycenter heuristic, each node
	// placed by the mean row of its neighbours in the columns already
	// placed (declaration order breaks ties and starts the first sweep).
	layers := make([][]int, st.Graph.Layers)
	for i, n := range nodes {
		if n.Layer >= 0 && n.Layer < len(layers) {
			layers[n.Layer] = append(layers[n.Layer], i)
		}
	}
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Step] = i
	}
	preds, succs := make([][]int, len(nodes)), make([][]int, len(nodes))
	for _, e := range st.Graph.Edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 {
			preds[to] = append(preds[to], from)
			succs[from] = append(succs[from], to)
		}
	}
	row := make([]float64, len(nodes))
	place := func(col []int) {
		for r, i := range col {
			row[i] = float64(r)
		}
	}
	order := func(col []int, neighbours [][]int) {
		key := make(map[int]float64, len(col))
		for _, i := range col {
			key[i] = row[i]
			if ns := neighbours[i]; len(ns) > 0 {
				sum := 0.0
				for _, n := range ns {
					sum += row[n]
				}
				key[i] = sum / float64(len(ns))
			}
		}
		slices.SortStableFunc(col, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		place(col)
	}
	for _, col := range layers {
		place(col)
	}
	for range 2 {
		for l := 1; l < len(layers); l++ {
			order(layers[l], preds)
		}
		for l := len(layers) - 2; l >= 0; l-- {
			order(layers[l], succs)
		}
	}

	tallest := 0
	for _, col := range layers {
		tallest = max(tallest, len(col))
	}
	g.Width = 2*dagPad + len(layers)*dagNodeW + (len(layers)-1)*dagGapX
	g.Height = 2*dagPad + tallest*dagNodeH + (tallest-1)*dagGapY
	pos := make([][2]int, len(nodes))
	for l, col := range layers {
		top := dagPad + (tallest-len(col))*(dagNodeH+dagGapY)/2
		for r, i := range col {
			pos[i] = [2]int{dagPad + l*(dagNodeW+dagGapX), top + r*(dagNodeH+dagGapY)}
		}
	}

	// The compensation chain's order, as the API gives it.
	rank := map[string]int{}
	for i, step := range st.Compensations {
		rank[step] = i + 1
	}
	g.Compensations = len(st.Compensations)

	counts := map[string]int{}
	for i, n := range nodes {
		ss := st.Steps[n.Step]
		node := dagNode{
			X: pos[i][0], Y: pos[i][1], W: dagNodeW, H: dagNodeH, Step: n.Step, Name: clipRunes(n.Step, dagNameRunes),
			Status: string(ss.Status), Attempts: ss.Attempts, Compensate: n.Compensate, CompOrder: rank[n.Step],
		}
		if id, ok := firstAttempt[n.Step]; ok {
			node.Href = "#" + id
		}
		if n.Compensate != "" {
			node.CompStatus = compStatus(st.Status, ss, node.CompOrder)
		}
		node.StateText = strings.ReplaceAll(node.Status, "_", " ")
		if ss.Attempts > 1 {
			node.StateText += fmt.Sprintf(" · %d attempts", ss.Attempts)
		}
		if n.Compensate != "" {
			order := ""
			if node.CompOrder > 0 {
				order = fmt.Sprint(node.CompOrder)
			}
			node.CompText = fmt.Sprintf("↺%s %s · %s", order, clipRunes(n.Compensate, 14), strings.ReplaceAll(node.CompStatus, "_", " "))
		}
		if node.CompText == "" && ss.Error != "" && (node.Status == "failed" || node.Status == "pending") {
			node.ErrorText = clipRunes(ss.Error, 30)
		}
		node.Label, node.Title = describeDAGNode(n, ss, node)
		counts[node.Status]++
		g.Nodes = append(g.Nodes, node)
	}
	for _, e := range st.Graph.Edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if !ok1 || !ok2 {
			continue
		}
		x1, y1 := pos[from][0]+dagNodeW, pos[from][1]+dagNodeH/2
		x2, y2 := pos[to][0]-2, pos[to][1]+dagNodeH/2 // the arrowhead's tip on the box
		mid := (x1 + x2) / 2
		class := "waiting"
		switch st.Steps[e.From].Status {
		case "completed", "compensating", "compensated", "compensation_failed":
			class = "done"
		}
		g.Edges = append(g.Edges, dagEdge{From: e.From, To: e.To, Class: class,
			Path: fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, mid, y1, mid, y2, x2, y2)})
	}
	for _, step := range st.Compensations {
		if i, ok := index[step]; ok {
			g.Chain = append(g.Chain, dagLink{Step: step, Handler: nodes[i].Compensate, Status: strings.ReplaceAll(g.Nodes[i].CompStatus, "_", " ")})
		}
	}
	g.Summary = summarizeDAG(len(nodes), len(layers), counts, g.Compensations)
	return g
}

// compStatus is the state of a step's compensation as a node's badge
// shows it (a CSS class suffix: no spaces): the compensation's own state
// once it began; "pending" while it waits its turn in the chain of a
// compensating run (rank > 0); "not_needed" when the run completed, so
// nothing is ever undone; "not_run" otherwise (a run going forward, or
// one that ended without undoing this step). Never pending on a run that
// is not compensating.
func compStatus(run dag.Status, ss dag.StepStatus, rank int) string {
	switch {
	case ss.Compensation != nil:
		return string(ss.Compensation.Status)
	case run == dag.StatusCompensating && rank > 0:
		return "pending"
	case run == dag.StatusCompleted:
		return "not_needed"
	}
	return "not_run"
}

// describeDAGNode is a node's accessible name and tooltip.
func describeDAGNode(n api.DAGNode, ss dag.StepStatus, node dagNode) (label, title string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Step %s: %s", n.Step, strings.ReplaceAll(node.Status, "_", " "))
	if ss.Attempts > 0 {
		fmt.Fprintf(&b, ", %d attempt%s", ss.Attempts, plural(ss.Attempts))
	}
	if n.Compensate != "" {
		fmt.Fprintf(&b, "; compensate handler %s", n.Compensate)
		if c := ss.Compensation; c != nil {
			fmt.Fprintf(&b, " %s (%d attempt%s, number %d in the compensation chain)", c.Status, c.Attempts, plural(c.Attempts), node.CompOrder)
		} else {
			b.WriteString(" " + strings.ReplaceAll(node.CompStatus, "_", " "))
		}
	}
	label = b.String()
	t := label + "\nhandler " + n.Handler
	if ss.Error != "" {
		t += "\nlast error: " + ss.Error
	}
	if c := ss.Compensation; c != nil && c.Error != "" {
		t += "\ncompensation error: " + c.Error
	}
	if ss.NextAttemptAt != nil {
		t += "\nnext attempt at " + ss.NextAttemptAt.UTC().Format("15:04:05.000")
	}
	return label, t
}

// summarizeDAG is the graph's text alternative: its size, and how many
// steps are in each state.
func summarizeDAG(steps, layers int, counts map[string]int, compensations int) string {
	var parts []string
	for _, s := range dagStates {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(s, "_", " ")))
		}
	}
	out := fmt.Sprintf("DAG of %d step%s in %d layer%s: %s", steps, plural(steps), layers, plural(layers), strings.Join(parts, ", "))
	if compensations > 0 {
		out += fmt.Sprintf("; %d compensation%s ran", compensations, plural(compensations))
	}
	return out + "."
}

// dagStates are the step states, in the legend's order.
var dagStates = []string{"pending", "running", "completed", "failed", "skipped", "compensating", "compensated", "compensation_failed", "canceled"}

// clipRunes cuts s to n runes, marking the cut with an ellipsis.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
