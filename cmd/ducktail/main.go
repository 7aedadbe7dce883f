// Command ducktail runs the ducktail server and talks to it: serve, table, token, ingest,
// query and tail. Flags may also be given as DUCKTAIL_* environment variables (the flag
// name upper-cased, dashes as underscores: --data-dir is DUCKTAIL_DATA_DIR).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set by the Makefile with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ducktail:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "ducktail",
		Short:         "Tables in DuckDB, ingested over HTTP, streamed live as Arrow over Server-Sent Events",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return applyEnv(cmd)
		},
	}
	root.AddCommand(newServeCommand())
	addClientCommands(root)
	return root
}

// envPrefix prefixes the environment variable of every flag.
const envPrefix = "DUCKTAIL_"

// applyEnv sets every flag of cmd that was not given on the command line from its
// DUCKTAIL_* environment variable, if set. A repeatable flag takes a comma-separated list.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(name)
		if !ok {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = fmt.Errorf("%s=%q: %w", name, v, serr)
		}
	})
	return err
}
