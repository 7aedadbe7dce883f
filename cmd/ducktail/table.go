package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// tableInfo is a table as the API answers it.
type tableInfo struct {
	Name          string `json:"name"`
	ID            int64  `json:"id"`
	Activation    string `json:"activation"`
	Seq           int64  `json:"seq"`
	Cursor        string `json:"cursor"`
	Rows          int64  `json:"rows"`
	SchemaVersion int    `json:"schema_version"`
	Columns       []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
}

func tablePath(name string, rest ...string) string {
	return "/v1/tables/" + url.PathEscape(name) + strings.Join(rest, "")
}

func newTableCommand(cfg *clientConfig) *cobra.Command {
	cmd := &cobra.Command{Use: "table", Short: "Create, list, describe, reset and drop tables; add, drop and rename columns"}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "create TABLE COLUMN:TYPE...",
			Short: "Create a table, e.g. ducktail table create weather date:DATE temp_max:DOUBLE weather:VARCHAR",
			Args:  cobra.MinimumNArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				type col struct {
					Name string `json:"name"`
					Type string `json:"type"`
				}
				var cols []col
				for _, a := range args[1:] {
					name, typ, ok := strings.Cut(a, ":")
					if !ok {
						return fmt.Errorf("column %q: want NAME:TYPE", a)
					}
					cols = append(cols, col{name, typ})
				}
				return tableCall(cmd, cfg, "POST", "/v1/tables", map[string]any{"name": args[0], "columns": cols})
			},
		},
		listCommand(cfg, "List tables", "/v1/tables", "NAME\tROWS\tSEQ\tCOLUMNS",
			func(w io.Writer, out *struct{ Tables []tableInfo }) {
				for _, t := range out.Tables {
					fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", t.Name, t.Rows, t.Seq, len(t.Columns))
				}
			}),
		&cobra.Command{
			Use:   "describe TABLE",
			Short: "Show a table's columns, rows, head seq and cursor",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return tableCall(cmd, cfg, "GET", tablePath(args[0]), nil)
			},
		},
		&cobra.Command{
			Use:   "reset TABLE",
			Short: "Truncate a table into a new activation (streams get refresh-required)",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return tableCall(cmd, cfg, "POST", tablePath(args[0], "/reset"), nil)
			},
		},
		&cobra.Command{
			Use:   "drop TABLE",
			Short: "Drop a table",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := cfg.newClient()
				if err != nil {
					return err
				}
				if err := c.doJSON("DELETE", tablePath(args[0]), nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "dropped %s\n", args[0])
				return nil
			},
		},
		&cobra.Command{
			Use:   "add-column TABLE NAME TYPE",
			Short: "Add a column",
			Args:  cobra.ExactArgs(3),
			RunE: func(cmd *cobra.Command, args []string) error {
				return tableCall(cmd, cfg, "POST", tablePath(args[0], "/columns"), map[string]string{"name": args[1], "type": args[2]})
			},
		},
		&cobra.Command{
			Use:   "drop-column TABLE NAME",
			Short: "Drop a column",
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				return tableCall(cmd, cfg, "DELETE", tablePath(args[0], "/columns/", url.PathEscape(args[1])), nil)
			},
		},
		&cobra.Command{
			Use:   "rename-column TABLE NAME NEW_NAME",
			Short: "Rename a column",
			Args:  cobra.ExactArgs(3),
			RunE: func(cmd *cobra.Command, args []string) error {
				return tableCall(cmd, cfg, "PATCH", tablePath(args[0], "/columns/", url.PathEscape(args[1])), map[string]string{"name": args[2]})
			},
		},
	)
	return cmd
}

// tableCall sends one table request and prints the table it answers.
func tableCall(cmd *cobra.Command, cfg *clientConfig, method, path string, body any) error {
	c, err := cfg.newClient()
	if err != nil {
		return err
	}
	var t tableInfo
	if err := c.doJSON(method, path, body, &t); err != nil {
		return err
	}
	printTable(cmd.OutOrStdout(), t)
	return nil
}

func printTable(w io.Writer, t tableInfo) {
	fmt.Fprintf(w, "table %s (id %d)\nrows %d, seq %d, schema version %d, activation %s\ncursor %s\n", t.Name, t.ID, t.Rows, t.Seq, t.SchemaVersion, t.Activation, t.Cursor)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tTYPE")
	for _, c := range t.Columns {
		fmt.Fprintf(tw, "%s\t%s\n", c.Name, c.Type)
	}
	tw.Flush()
}
