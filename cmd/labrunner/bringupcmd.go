package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/selftest/bringup"
)

func bringupCommand() *cli.Command {
	var stages []string
	for _, s := range bringup.Stages() {
		stages = append(stages, fmt.Sprintf("  %-9s  %s", s, s.Doc()))
	}
	return &cli.Command{
		Name:  "bringup",
		Usage: "take one board (--board) or every board of the lab (--all) through the staged bring-up",
		Description: "Stages, in order:\n" + strings.Join(stages, "\n") + "\n\n" +
			"Boards marked `dcn: true` in the lab file are reached directly and start the bootstrap (wave 0); the\n" +
			"others are reached in-band through their neighbours (docs/mgmt.md). Each stage has its own deadline\n" +
			"(--deadline STAGE=DURATION); the first stage that fails on a board is diagnosed: what was expected,\n" +
			"what was seen, what to check on the bench. --from STAGE resumes at a stage: the earlier ones are not\n" +
			"judged, what later stages need from them is re-established quietly. Waves, proxies, the TimeSync tree\n" +
			"and offsets are scored against golden/bringup. Evidence goes to a run directory as for the nightly;\n" +
			"the live output is one line per event (stdout, stderr with --json), the logs go to the run directory's\n" +
			"labrunner.log (--log-level sets how much).\n\n" +
			"Exit codes: 0 all passed, 1 a verdict failed, 2 bad usage or config, 3 infrastructure error.",
		Flags: []cli.Flag{
			labFlag(),
			&cli.StringSliceFlag{Name: "board", Aliases: []string{"b"}, Usage: "bring up this board (repeatable); an in-band board's rack is bootstrapped as far as needed"},
			&cli.BoolFlag{Name: "all", Usage: "bring up every board of the lab"},
			&cli.StringFlag{Name: "from", Usage: "resume at this stage (" + strings.Join(stageNames(), ", ") + ")"},
			&cli.StringSliceFlag{Name: "deadline", Usage: "a stage's deadline, STAGE=DURATION (repeatable), e.g. bootstrap=5m"},
			&cli.StringFlag{Name: "design", Usage: "design to program on the --board boards (default: their plan's)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON on stdout (progress goes to stderr)"},
			&cli.StringFlag{Name: "out", Usage: "results root: the run directory is created inside it (default: the lab's results.root, else ./runs)"},
			faultFlag(), seedFlag(),
		},
		Action: runBringup,
	}
}

func stageNames() []string {
	var out []string
	for _, s := range bringup.Stages() {
		out = append(out, s.String())
	}
	return out
}

func runBringup(c *cli.Context) error {
	lvl, _ := logLevel(c.String("log-level"))
	ctx, stop := interruptible(c)
	defer stop()
	rep, err := labrun.Bringup(ctx, labrun.BringupOptions{
		LabFile: c.String("lab"), Out: c.String("out"), Boards: c.StringSlice("board"), All: c.Bool("all"),
		Design: c.String("design"), From: c.String("from"), Deadlines: c.StringSlice("deadline"),
		Faults: c.StringSlice("fault"), Seed: seedOption(c), JSON: c.Bool("json"),
		LogLevel: lvl, Stdout: c.App.Writer, Stderr: c.App.ErrWriter, Version: buildVersion(),
	})
	if err != nil {
		return err
	}
	if rep.ExitCode != labrun.ExitPass {
		return &exitError{code: rep.ExitCode}
	}
	return nil
}
