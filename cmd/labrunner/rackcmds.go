package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
)

func locksFlag() cli.Flag {
	return &cli.StringFlag{Name: "locks", Usage: "lock directory shared by the lab host's users (default: the lab's locks.dir, else " + labrun.DefaultLocks + ")", EnvVars: []string{"LABRUNNER_LOCKS"}}
}

// locksDir opens the lock directory named by --locks, the lab file or the
// default.
func locksDir(c *cli.Context, lab *labconfig.Lab) (*lease.Dir, error) {
	return labrun.OpenLocks(c.String("locks"), lab, logger(c))
}

func boardsCommand() *cli.Command {
	return &cli.Command{
		Name:  "boards",
		Usage: "list the lab's boards: free or held (by whom, since when), last design programmed, last health",
		Flags: []cli.Flag{labFlag(), locksFlag(), &cli.BoolFlag{Name: "json"}},
		Action: func(c *cli.Context) error {
			lab, err := loadLab(c, bitstreams.Default())
			if err != nil {
				return err
			}
			d, err := locksDir(c, lab)
			if err != nil {
				return err
			}
			rows, err := labrun.BoardStates(lab, d)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(rows)
			}
			return labrun.WriteBoardStates(c.App.Writer, rows)
		},
	}
}

func reserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "reserve",
		Usage:     "hold boards for manual work (a nightly skips or waits for them)",
		ArgsUsage: "BOARD...",
		Flags: []cli.Flag{labFlag(), locksFlag(),
			&cli.DurationFlag{Name: "for", Value: 4 * time.Hour, Usage: "how long the reservation lasts unless released"},
			&cli.StringFlag{Name: "note", Usage: "why, for the others (labrunner boards shows it)"},
			&cli.BoolFlag{Name: "maintenance", Usage: "also mark the boards as in maintenance"}},
		Action: reserve,
	}
}

// reserve holds boards for manual work, all or none.
func reserve(c *cli.Context) error {
	if c.NArg() == 0 {
		return exitf(labrun.ExitConfig, "reserve which boards? (labrunner reserve BOARD...)")
	}
	lab, err := loadLab(c, bitstreams.Default())
	if err != nil {
		return err
	}
	// Every name is checked before the lock directory is touched: a
	// reservation the nightly would not honour leaves nothing behind.
	if err := labrun.Reservable(lab, c.Args().Slice()); err != nil {
		return err
	}
	d, err := locksDir(c, lab)
	if err != nil {
		return err
	}
	got, err := labrun.Reserve(d, c.Args().Slice(), lease.Options{Command: "labrunner reserve", TTL: c.Duration("for"), Manual: true, Note: c.String("note")})
	if err != nil {
		return err
	}
	for _, l := range got {
		if c.Bool("maintenance") {
			d.UpdateState(l.Info().Board, func(s *lease.State) { s.Maintenance = true })
		}
		fmt.Fprintf(c.App.Writer, "%s: held until %s\n", l.Info().Board, l.Info().Expires.Local().Format("2006-01-02 15:04:05"))
	}
	return nil
}

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "give back boards held with `labrunner reserve` (only your own, unless --force)",
		ArgsUsage: "BOARD...",
		Flags:     []cli.Flag{labFlag(), locksFlag(), &cli.BoolFlag{Name: "force", Usage: "break another user's lease"}},
		Action: func(c *cli.Context) error {
			lab, err := loadLab(c, bitstreams.Default())
			if err != nil {
				return err
			}
			d, err := locksDir(c, lab)
			if err != nil {
				return err
			}
			for _, name := range c.Args().Slice() {
				i, err := d.ReleaseOwned(name, c.Bool("force"))
				if err != nil {
					return withCode(labrun.ExitConfig, err)
				}
				d.UpdateState(name, func(s *lease.State) { s.Maintenance = false })
				fmt.Fprintf(c.App.Writer, "%s: released (was held by %s)\n", name, i)
			}
			return nil
		},
	}
}
