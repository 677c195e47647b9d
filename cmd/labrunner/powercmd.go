package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/power"
	"github.com/labrunner/labrunner/labrun"
)

func powerCommand() *cli.Command {
	flags := []cli.Flag{labFlag(), boardFlag()}
	return &cli.Command{
		Name:  "power",
		Usage: "switch a board's supply: on, off, cycle, or show its state",
		Description: "Only the board's power switch is opened (a board that is off may have no USB-UART to open).\n" +
			"A relay on a GPIO line stays on after `power on` returns: a small process of its own holds the line\n" +
			"until `power off` (docs/real-lab.md, \"Power\"). Emulated boards live only as long as one command.",
		Subcommands: []*cli.Command{
			{Name: "on", Usage: "switch the supply on", Flags: flags, Action: func(c *cli.Context) error { return setPower(c, []bool{true}) }},
			{Name: "off", Usage: "switch the supply off", Flags: flags, Action: func(c *cli.Context) error { return setPower(c, []bool{false}) }},
			{Name: "cycle", Usage: "switch the supply off, wait --wait, and on", Flags: append(flags,
				&cli.DurationFlag{Name: "wait", Value: 2 * time.Second, Usage: "how long the supply stays off"}),
				Action: func(c *cli.Context) error { return setPower(c, []bool{false, true}) }},
			{Name: "status", Usage: "say whether the supply is held on (GPIO relays)", Flags: flags, Action: powerStatus},
			{
				Name: "hold", Hidden: true, Usage: "hold a GPIO line while a relay is on (started by power on)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "gpio-holder", Usage: "marks the holder's command line"},
					&cli.StringFlag{Name: "pin", Required: true, Usage: "the GPIO line, as power.pin names it"},
					&cli.StringFlag{Name: "level", Required: true, Usage: "the level that switches the relay on: 1 or 0"},
					&cli.StringFlag{Name: "off-level", Required: true, Usage: "the level driven when told to stop: 1 or 0"},
				},
				Action: powerHold,
			},
		},
	}
}

// powerHold is the holder process of a GPIO relay (power on starts it).
func powerHold(c *cli.Context) error {
	// Only power off's SIGTERM ends the hold; the session is
	// the holder's own, but a stray SIGINT or SIGHUP must not
	// switch a board off either.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// The holder's standard output is the pipe its parent waits on:
	// Hold closes it to say the line is held.
	if err := power.Hold(ctx, power.HostLines, c.String("pin"), c.String("level") == "1", c.String("off-level") == "1", os.Stdout); err != nil {
		return withCode(labrun.ExitInfra, err)
	}
	return nil
}

// powerSwitch builds the board's power switch alone from the lab file.
func powerSwitch(c *cli.Context) (drivers.Power, string, error) {
	lab, err := loadLab(c, bitstreams.Default())
	if err != nil {
		return nil, "", err
	}
	name := c.String("board")
	b, ok := lab.Board(name)
	if !ok {
		return nil, "", exitf(labrun.ExitConfig, "no board %q in lab %s (%s)", name, lab.Name, labrun.NearestBoard(lab, name))
	}
	if b.Emulated != nil {
		return nil, "", exitf(labrun.ExitConfig, "%s is an emulated board: its supply lives only as long as one labrunner command (the nightly and bring-up switch it themselves); keep a rack up with `labrunner sim serve`", name)
	}
	p, err := boards.Power(b.Name, b.Power)
	if err != nil {
		return nil, "", withCode(labrun.ExitCodeFor(err), err)
	}
	return p, b.Name, nil
}

func setPower(c *cli.Context, steps []bool) error {
	p, name, err := powerSwitch(c)
	if err != nil {
		return err
	}
	if _, none := p.(power.None); none {
		return exitf(labrun.ExitConfig, "board %s has power: {type: none}: labrunner does not switch its supply", name)
	}
	for i, on := range steps {
		if i > 0 {
			select {
			case <-time.After(c.Duration("wait")):
			case <-c.Context.Done():
				return withCode(labrun.ExitInfra, c.Context.Err())
			}
		}
		ctx, cancel := drivers.Deadline(c.Context, 30*time.Second)
		err := p.Set(ctx, on)
		cancel()
		if err != nil {
			return withCode(labrun.ExitCodeFor(err), err)
		}
		state := "off"
		if on {
			state = "on"
		}
		fmt.Fprintf(c.App.Writer, "%s: power %s (%s)\n", name, state, p.Name())
	}
	return nil
}

func powerStatus(c *cli.Context) error {
	p, name, err := powerSwitch(c)
	if err != nil {
		return err
	}
	if _, none := p.(power.None); none {
		fmt.Fprintf(c.App.Writer, "%s: power: none: labrunner does not switch its supply\n", name)
		return nil
	}
	st, ok := p.(interface {
		Status() (bool, string, error)
	})
	if !ok {
		fmt.Fprintf(c.App.Writer, "%s: %s: the state is not known to labrunner\n", name, p.Name())
		return nil
	}
	_, detail, err := st.Status()
	if err != nil {
		return withCode(labrun.ExitCodeFor(err), err)
	}
	fmt.Fprintf(c.App.Writer, "%s: %s\n", name, detail)
	return nil
}
