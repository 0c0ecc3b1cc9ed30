package sqlite

import (
	"database/sql"
	"strings"
	"testing"
)

// TestTheClaimReadsItsIndexesInOrder checks the plan of the claim's
// candidates (sql/claim.sql): each part is a search of an index in the
// part's order, so that a claim reads at most :limit rows per part and
// sorts only those (the outer ORDER BY's temporary b-tree), never every
// due run. The runs of a priority other than 0, of every claimable
// status, come from workflow_runs_go_claim_priority_idx.
func TestTheClaimReadsItsIndexesInOrder(t *testing.T) {
	b, _ := openTest(t, nil)
	for name, q := range map[string]string{"claim_candidates": b.q.ClaimCandidates, "claim_candidates_planned": b.q.ClaimPlanned} {
		args := []any{sql.Named("ns", "default"), sql.Named("now", "2026-01-01T00:00:00.000Z"),
			sql.Named("ahead", "2026-01-01T00:00:01.000Z"), sql.Named("limit", 10), sql.Named("workflows", nil)}
		if q == b.q.ClaimPlanned {
			args = append(args, sql.Named("exclude", nil))
		}
		rows, err := b.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		var searches, priority, fair, sorts int
		for _, line := range plan {
			switch {
			case strings.HasPrefix(line, "SCAN workflow_runs") || strings.HasPrefix(line, "SCAN \"workflow_runs\""):
				t.Errorf("%s: %q reads the whole table (plan %q)", name, line, plan)
			case strings.Contains(line, "SEARCH workflow_runs USING INDEX workflow_runs_go_claim_priority_idx"):
				searches++
				priority++
			case strings.Contains(line, "SEARCH workflow_runs USING INDEX workflow_runs_go_fair_idx"):
				searches++
				fair++
			case strings.Contains(line, "SEARCH workflow_runs USING INDEX"):
				searches++
			case strings.Contains(line, "USE TEMP B-TREE FOR ORDER BY"):
				sorts++
			}
		}
		// Seven parts (priority above 0; 0 pending, running, sleeping; below
		// 0; the lookahead's; the fair queue's), one ordered search each,
		// and one sort: the merge of their rows.
		if searches != 7 || priority != 2 || fair != 1 || sorts != 1 {
			t.Errorf("%s: %d index searches (%d of the priority index, %d of the fair one), %d sorts; want 7 (2, 1), 1. Plan:\n%s",
				name, searches, priority, fair, sorts, strings.Join(plan, "\n"))
		}
	}
}
