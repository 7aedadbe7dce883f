package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// queryFormats maps --format to the Accept header sent.
var queryFormats = map[string]string{
	"json":    "application/json",
	"ndjson":  "application/x-ndjson",
	"csv":     "text/csv",
	"arrow":   "application/vnd.apache.arrow.stream",
	"parquet": "application/vnd.apache.parquet",
}

func newQueryCommand(cfg *clientConfig) *cobra.Command {
	var format string
	var params []string
	cmd := &cobra.Command{
		Use:   "query SQL",
		Short: "Run one SELECT; prints a table on a terminal, else --format json|ndjson|csv|arrow|parquet",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.newClient()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "" {
				format = "json"
				if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
					format = "table"
				}
			}
			accept, ok := queryFormats[format]
			if format == "table" {
				accept, ok = queryFormats["json"], true
			}
			if !ok {
				return fmt.Errorf("--format %q: use table, json, ndjson, csv, arrow or parquet", format)
			}
			ps := make([]any, len(params))
			for i, p := range params {
				var v any
				if json.Unmarshal([]byte(p), &v) != nil {
					v = p
				}
				ps[i] = v
			}
			body, _ := json.Marshal(map[string]any{"sql": args[0], "params": ps})
			req, err := c.request("POST", "/v1/query", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req = req.WithContext(cmd.Context())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			resp, err := c.do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if format != "table" {
				_, err = io.Copy(out, resp.Body)
				return err
			}
			return printQueryTable(out, resp.Body)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "table, json, ndjson, csv, arrow or parquet (default: table on a terminal, json otherwise)")
	cmd.Flags().StringArrayVar(&params, "param", nil, "positional parameter ($1, $2, … or ?), as JSON or a bare string (repeatable)")
	return cmd
}

// printQueryTable prints a JSON query result as aligned columns.
func printQueryTable(w io.Writer, r io.Reader) error {
	var res struct {
		Columns []struct{ Name, Type string }
		Rows    []map[string]json.RawMessage
	}
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return fmt.Errorf("bad answer from server: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	names := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		names[i] = c.Name
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for _, row := range res.Rows {
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = cell(row[n])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	plural := "s"
	if len(res.Rows) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "(%d row%s)\n", len(res.Rows), plural)
	return nil
}

// cell renders one JSON value for a terminal table: strings unquoted, null as NULL.
func cell(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	}
	if len(v) == 0 || string(v) == "null" {
		return "NULL"
	}
	return string(v)
}
