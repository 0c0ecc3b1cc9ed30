package orderfulfillment_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/examples/orderfulfillment"
)

func TestOrderFulfillment(t *testing.T) {
	for _, tc := range []struct {
		name, fail string
		status     dag.Status
		// undo lists the compensations printed, in order.
		undo []string
	}{
		{"nothing fails", "", dag.StatusCompleted, nil},
		{"the email fails: the invoice is voided, then the card refunded", "send-email", dag.StatusCompensated, []string{"undo emit-invoice", "undo charge-card"}},
		{"the charge fails: its own compensation finds nothing to refund", "charge-card", dag.StatusCompensated, []string{"undo charge-card"}},
		{"a validation fails: nothing to compensate", "validate-fraud", dag.StatusFailed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{Synchronous: "NORMAL"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var out bytes.Buffer
			res, err := orderfulfillment.Run(ctx, b, orderfulfillment.Options{Fail: tc.fail, Retries: dag.Retries(0), Out: &out})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status.Status != tc.status {
				t.Fatalf("run %s, want %s\n%s", res.Status.Status, tc.status, out.String())
			}
			undo := regexp.MustCompile(`(?m)^  (undo \S+)`).FindAllStringSubmatch(out.String(), -1)
			var got []string
			for _, m := range undo {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(tc.undo, ",") {
				t.Fatalf("compensations %v, want %v\n%s", got, tc.undo, out.String())
			}
			var table bytes.Buffer
			if err := orderfulfillment.WriteStatus(&table, res.Status); err != nil || !strings.Contains(table.String(), string(tc.status)) {
				t.Fatalf("WriteStatus: %v\n%s", err, table.String())
			}
		})
	}

	t.Run("-fail must name a step", func(t *testing.T) {
		b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := orderfulfillment.Run(context.Background(), b, orderfulfillment.Options{Fail: "ship"}); err == nil || !strings.Contains(err.Error(), `"ship"`) {
			t.Fatalf("Run with -fail ship: %v", err)
		}
	})
}
