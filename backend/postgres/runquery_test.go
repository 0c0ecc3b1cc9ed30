package postgres

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/runquery"
)

func TestRunQueryColumnsCoverEveryField(t *testing.T) {
	cols := runQueryColumns(`"s"`)
	for name := range runquery.Fields {
		if cols[name] == "" {
			t.Errorf("run field %q has no column in runQueryColumns", name)
		}
	}
	for name := range cols {
		if _, ok := runquery.Fields[name]; !ok {
			t.Errorf("runQueryColumns maps %q, which runquery.Fields lacks", name)
		}
	}
	for _, typ := range runquery.Types {
		if attrColumns[typ] == "" {
			t.Errorf("search attribute type %s has no value column", typ)
		}
	}
}
