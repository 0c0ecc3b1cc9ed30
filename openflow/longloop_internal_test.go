package openflow

import (
	"slices"
	"testing"
)

// TestResultRefsScan: the results a chunk run's input carries are those
// the body's expressions name, or all when one uses results otherwise.
func TestResultRefsScan(t *testing.T) {
	cases := []struct {
		expr string
		all  bool
		ids  []string
	}{
		{"results.a + results?.b", false, []string{"a", "b"}},
		{`results["c-d"].x + results[ 'e' ]`, false, []string{"c-d", "e"}},
		{"flow_input.results + myresults.x", false, nil},
		{"Object.keys(results).length", true, nil},
		{"results[k]", true, nil},
		{`results["a" + k]`, true, nil},
		{"results . f", false, []string{"f"}},
		{"results", true, nil},
		{"1 + 2", false, nil},
	}
	for _, c := range cases {
		refs := resultRefs{ids: map[string]bool{}}
		refs.scan(c.expr)
		var ids []string
		for id := range refs.ids {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if refs.all != c.all || !c.all && !slices.Equal(ids, c.ids) {
			t.Errorf("%s: all=%v ids=%v, want all=%v ids=%v", c.expr, refs.all, ids, c.all, c.ids)
		}
	}
}

// TestChunkWindowKeepsParallelism: the chunks of a parallel loop that run
// at once never run more iterations at once than its parallelism.
func TestChunkWindowKeepsParallelism(t *testing.T) {
	for _, span := range []int{1, 7, 250, 500} {
		for _, chunks := range []int{1, 2, 50} {
			for p := 1; p <= 2000; p++ {
				window, each := chunkWindow(p, span, chunks)
				if window < 1 || each < 1 || window*min(each, span) > p || window > chunks {
					t.Fatalf("p=%d span=%d chunks=%d: %d chunks at once of %d iterations at once", p, span, chunks, window, each)
				}
			}
			if window, each := chunkWindow(0, span, chunks); window != min(maxParallelChunks, chunks) || each != 0 {
				t.Errorf("no parallelism, span=%d chunks=%d: %d chunks at once of %d", span, chunks, window, each)
			}
		}
	}
}
