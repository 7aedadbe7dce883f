package main

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// tokenInfo is a token as the API answers it.
type tokenInfo struct {
	ID        string     `json:"id"`
	Token     string     `json:"token"`
	Purpose   string     `json:"purpose"`
	Table     string     `json:"table"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func newTokenCommand(cfg *clientConfig) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke tokens (admin)"}
	var table, ttl, where string
	var columns []string
	create := &cobra.Command{
		Use:   "create PURPOSE",
		Short: "Create a token for admin, ingest, query or stream; prints its secret once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cfg.newClient()
			if err != nil {
				return err
			}
			var t tokenInfo
			body := map[string]any{"purpose": args[0], "table": table, "ttl": ttl}
			if where != "" {
				body["where"] = where
			}
			if columns != nil {
				body["columns"] = columns
			}
			if err := c.doJSON("POST", "/v1/tokens", body, &t); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), t.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "token %s: purpose %s%s%s (the secret above is shown only once)\n", t.ID, t.Purpose, scope(t.Table), expiry(t.ExpiresAt))
			return nil
		},
	}
	create.Flags().StringVar(&table, "table", "", "limit the token to one table")
	create.Flags().StringVar(&ttl, "ttl", "", "expire the token after this long, e.g. 24h (default: never)")
	create.Flags().StringVar(&where, "where", "", "a row policy on --table: the token reads only the rows this DuckDB boolean expression matches")
	create.Flags().StringSliceVar(&columns, "columns", nil, "a column policy on --table: the token reads only these columns, comma-separated")
	cmd.AddCommand(create,
		listCommand(cfg, "List tokens (never their secrets)", "/v1/tokens", "ID\tPURPOSE\tTABLE\tCREATED\tEXPIRES\tREVOKED",
			func(w io.Writer, out *struct{ Tokens []tokenInfo }) {
				for _, t := range out.Tokens {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Purpose, orDash(t.Table), t.CreatedAt.Format(time.RFC3339), timeOrDash(t.ExpiresAt), timeOrDash(t.RevokedAt))
				}
			}),
		&cobra.Command{
			Use:   "revoke ID",
			Short: "Revoke a token; its open streams end with failure token_revoked",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := cfg.newClient()
				if err != nil {
					return err
				}
				if err := c.doJSON("DELETE", "/v1/tokens/"+url.PathEscape(args[0]), nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			},
		},
	)
	return cmd
}

func scope(table string) string {
	if table == "" {
		return ", all tables"
	}
	return ", table " + table
}

func expiry(t *time.Time) string {
	if t == nil {
		return ", no expiry"
	}
	return ", expires " + t.Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
