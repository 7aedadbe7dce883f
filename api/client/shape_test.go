package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api/client"
)

// TestLiveQueryThroughAShape: a LiveQuery with a Shape holds exactly the shaped table:
// its snapshot and its batches are read through the same shape (a name with a comma
// goes through ?columns= quoted), and the cursor of one continues the other.
func TestLiveQueryThroughAShape(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	if status, b := e.do("POST", "/v1/tables/t/columns", []byte(`{"name":"a,b","type":"VARCHAR"}`)); status != 201 {
		t.Fatalf("add column: %d %s", status, b)
	}
	e.ingestNumbers("t", 1, 10, 0)
	c := &collector{}
	o := c.live("t", client.FramingSSE, time.Second)
	o.Shape = client.Shape{Where: "n % 3 = 0", Columns: []string{"n", "a,b"}}
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, e.URL(), e.admin, o) })
	eventually(t, "the snapshot", func() bool { rows, _, _, snaps := c.state(); return len(snaps) == 1 && len(rows) == 3 })
	e.ingestNumbers("t", 11, 10, 0)
	eventually(t, "the batch", func() bool { rows, _, _, _ := c.state(); return len(rows) == 6 })
	if err := r.stop(); !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("LiveQuery: %v", err)
	}
	rows, errs, _, _ := c.state()
	if !slices.Equal(rows, []int64{3, 6, 9, 12, 15, 18}) || len(errs) != 0 {
		t.Errorf("rows %v, errors %v", rows, errs)
	}
	o.SQL = "SELECT * FROM t"
	if err := client.LiveQuery(context.Background(), e.URL(), e.admin, o); !errors.Is(err, client.ErrShapeWithSQL) {
		t.Errorf("a shape with SQL: %v", err)
	}
	bad := c.live("t", client.FramingSSE, time.Second)
	bad.Shape = client.Shape{Where: "random() > 0"}
	var se *client.StatusError
	if err := client.LiveQuery(context.Background(), e.URL(), e.admin, bad); !errors.As(err, &se) || se.StatusCode != 400 {
		t.Errorf("a refused shape: %v", err)
	}
}
