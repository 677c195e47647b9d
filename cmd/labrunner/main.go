// Command labrunner is a hardware-in-the-loop lab test harness for FPGA
// network fabrics: it programs boards, drives their traffic generators and
// counters, scores the measurements against golden models of the papers the
// designs come from, and writes the results to a run directory.
//
// This file and its siblings only parse flags and wire packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/labrun"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// exitError carries an exit code out of a command without calling os.Exit
// inside urfave/cli (which would skip deferred cleanup: docs/architecture.md).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) ExitCode() int { return e.code }
func (e *exitError) Unwrap() error { return e.err }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// parseMu serialises the parsing of command lines: urfave/cli's help and
// version flags are package-level values that every app writes while it
// parses (BoolFlag.Apply), so two apps in one process (the end-to-end tests
// run in parallel) would race on them. It is held from the start of a run
// until the command's own flags are parsed (parsed, called by the commands'
// Before hook), or until the run ends (help, version, a usage error).
var parseMu sync.Mutex

// run runs the command line args with its output on stdout and stderr and
// returns the exit code: the code an error carries (cli.ExitCoder: the
// CLI's own and labrun's), else 2 (a usage error urfave/cli found).
func run(args []string, stdout, stderr io.Writer) int {
	parseMu.Lock()
	var once sync.Once
	parsed := func() { once.Do(parseMu.Unlock) }
	defer parsed()
	app := newApp(stdout, stderr)
	app.Metadata = map[string]any{parsedKey: parsed}
	args, err := normalizeArgs(app, args)
	if err == nil {
		err = app.Run(args)
	}
	if err == nil {
		return 0
	}
	code := labrun.ExitConfig // flag errors from urfave/cli are usage errors
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		if !strings.HasPrefix(msg, "labrunner ") {
			msg = "labrunner: " + msg
		}
		fmt.Fprintln(stderr, msg)
	}
	return code
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "labrunner",
		Usage:   "hardware-in-the-loop test harness for FPGA network fabrics",
		Version: buildVersion(),
		Writer:  stdout, ErrWriter: stderr,
		Description: "labrunner programs Zynq UltraScale+ and Stratix V boards with network designs, drives their\n" +
			"on-FPGA traffic generators and counters over MMIO or a UART bridge, and scores every measurement\n" +
			"against golden models of the papers the designs come from. Without --lab it runs on the embedded\n" +
			"emulated rack. Flags may come before or after positional arguments; -- ends flags.\n\n" +
			"Exit codes: 0 all passed, 1 a verdict failed, 2 bad usage or config, 3 infrastructure error.",
		// Never let urfave/cli call os.Exit: run() turns errors into codes.
		ExitErrHandler: func(*cli.Context, error) {},
		// Repeatable flags carry commas of their own (--fault NAME@B,k=v,
		// --set payloads=64,512): never split them.
		DisableSliceFlagSeparator: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"LABRUNNER_LOG"}},
		},
		Commands: commands(),
		Before: func(c *cli.Context) error {
			_, err := logLevel(c.String("log-level"))
			return err
		},
		OnUsageError: onUsageError,
	}
	forgiving(app.Commands)
	return app
}

// commands are labrunner's commands, in the order its help lists them.
func commands() []*cli.Command {
	golden := goldenCommand()
	golden.Subcommands = append(golden.Subcommands, simulateCommand())
	return []*cli.Command{
		nightlyCommand(),
		bringupCommand(),
		selftestCommand(),
		programCommand(),
		regsCommand(),
		consoleCommand(),
		powerCommand(),
		bitstreamsCommand(),
		golden,
		simCommand(),
		faultsCommand(),
		boardsCommand(),
		reserveCommand(),
		releaseCommand(),
		labCommand(),
		doctorCommand(),
		exportCommand(),
		reportCommand(),
		compareCommand(),
	}
}

// logLevel parses --log-level, refusing what slog would not mean.
func logLevel(s string) (slog.Level, error) {
	var lvl slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "warning", "error":
		if strings.EqualFold(s, "warning") {
			s = "warn"
		}
		if err := lvl.UnmarshalText([]byte(s)); err == nil {
			return lvl, nil
		}
	}
	return 0, usageError("--log-level %q: use debug, info, warn or error", s)
}

func logger(c *cli.Context) *slog.Logger {
	lvl, err := logLevel(c.String("log-level"))
	if err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: lvl}))
}

// interruptible is the command's context, ended by SIGINT and SIGTERM: a
// run then ends "interrupted", its run directory finished and resumable.
func interruptible(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

func isNumber(s string) bool {
	var f float64
	_, err := fmt.Sscan(s, &f)
	return err == nil
}
