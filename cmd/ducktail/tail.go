package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	dtclient "github.com/ducktail/ducktail/api/client"
)

// newTailCommand is `ducktail tail TABLE`: it follows a table's commits with the Go
// consumer library (api/client.LiveQuery) and prints their rows, reconnecting through
// dropped connections and server restarts, and printing a fresh snapshot when the server
// says the position cannot be continued (refresh-required: the table was reset).
func newTailCommand(cfg *clientConfig) *cobra.Command {
	var fromNow, fromSnapshot bool
	var cursor, format, where string
	var columns []string
	cmd := &cobra.Command{
		Use:   "tail TABLE",
		Short: "Print a table's rows as they are committed (--from-now, --from-snapshot or --cursor); status on stderr",
		Long: `Print a table's rows as they are committed, until interrupted.

--from-now (the default) prints the commits after the moment tail connects;
--from-snapshot prints the table first, then every later commit, nothing missing and
nothing twice; --cursor resumes after a cursor (from a batch, an ingest answer or a
snapshot's Ducktail-Cursor header). The connection status and every reconnect go to
stderr. If the table is reset, tail prints its new contents and goes on.

--where and --columns shape what tail prints: only the rows the DuckDB expression
matches (--where "region = 'eu' AND amount > 10"), with only the columns named
(--columns id,amount). The server filters, for the snapshot and every commit alike; a
cursor belongs to the shape it was read through.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			starts := 0
			for _, set := range []bool{cmd.Flags().Changed("from-now"), fromSnapshot, cursor != ""} {
				if set {
					starts++
				}
			}
			if starts > 1 || (cmd.Flags().Changed("from-now") && !fromNow) {
				return errors.New("use one of --from-now, --from-snapshot and --cursor")
			}
			c, err := cfg.newClient()
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if format == "" {
				format = "ndjson"
				if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
					format = "table"
				}
			}
			p, err := newRowPrinter(format, out)
			if err != nil {
				return err
			}
			return tail(cmd.Context(), c, args[0], dtclient.LiveOptions{
				Options:           dtclient.Options{Table: args[0], Cursor: cursor, Shape: dtclient.Shape{Where: where, Columns: columns}},
				StartWithSnapshot: fromSnapshot,
			}, p, errOut)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fromNow, "from-now", false, "print the commits after tail connects (the default)")
	f.BoolVar(&fromSnapshot, "from-snapshot", false, "print the table first, then every later commit")
	f.StringVar(&cursor, "cursor", "", "print the commits after this cursor")
	f.StringVar(&where, "where", "", "print only the rows this DuckDB boolean expression matches")
	f.StringSliceVar(&columns, "columns", nil, "print only these columns, comma-separated")
	f.StringVar(&format, "format", "", "table, ndjson or csv (default: table on a terminal, ndjson otherwise)")
	return cmd
}

// tail runs the live query until ctx ends (nil then) or it stops with an error, printing
// rows with p and the status to errOut.
func tail(ctx context.Context, c *client, table string, o dtclient.LiveOptions, p rowPrinter, errOut io.Writer) error {
	o.HTTPClient = c.http
	o.OnStatus = func(s dtclient.Status) { fmt.Fprintf(errOut, "ducktail tail %s: %s\n", table, s) }
	o.OnError = func(err error) { fmt.Fprintf(errOut, "ducktail tail %s: %v\n", table, err) }
	o.OnSchema = func(s dtclient.SchemaChange) error { return p.schema(s.Schema) }
	o.OnBatch = func(b dtclient.Batch) error { return printRecords(p, b.Schema, b.Records) }
	o.OnSnapshot = func(s dtclient.Snapshot) error {
		if s.Reason != "" {
			fmt.Fprintf(errOut, "ducktail tail %s: the stream cannot continue (%s); the table as it is now follows\n", table, s.Reason)
			p.restart()
		}
		return printRecords(p, s.Schema, s.Records)
	}
	err := dtclient.LiveQuery(ctx, c.base.String(), c.token, o)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return c.explainTLS(err)
}

// printRecords prints recs (of schema s) and flushes, so that every commit shows at once.
func printRecords(p rowPrinter, s *arrow.Schema, recs []arrow.RecordBatch) error {
	if err := p.schema(s); err != nil {
		return err
	}
	for _, r := range recs {
		if err := p.rows(r); err != nil {
			return err
		}
	}
	return p.flush()
}
