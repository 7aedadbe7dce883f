package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// listCommand is a `list` subcommand: it GETs path, decodes the answer into a T, and
// prints header and then the rows rows writes, as tab-separated columns aligned by
// text/tabwriter.
func listCommand[T any](cfg *clientConfig, short, path, header string, rows func(io.Writer, *T)) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.newClient()
			if err != nil {
				return err
			}
			var out T
			if err := c.doJSON("GET", path, nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, header)
			rows(tw, &out)
			return tw.Flush()
		},
	}
}
