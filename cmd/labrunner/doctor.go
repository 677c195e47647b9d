package main

import (
	"encoding/json"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/doctor"
	"github.com/labrunner/labrunner/labrun"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check a lab's host and boards without changing their state: devices, tools, cables, consoles, bridges, power, locks",
		Description: "For every board of the lab: its device nodes exist and this user may open them (dialout group or\n" +
			"a udev rule), its programming tool is on PATH (with its version) and supports the board's part, the\n" +
			"cable the lab file binds is among those the tool sees (openFPGALoader --scan-usb, jtagconfig), the\n" +
			"fpga_manager is there (and its state), the UART bridge answers INFO, the console gives a prompt, the\n" +
			"power switch is reachable; and the lock directory is safe. Nothing is programmed, written, switched\n" +
			"or leased. Exit 0 when every check passed, 2 when the lab file is wrong, 3 when the host or a board\n" +
			"is not ready.",
		Flags:  []cli.Flag{labFlag(), locksFlag(), &cli.BoolFlag{Name: "json", Usage: "print the findings as JSON"}},
		Action: doctorRun,
	}
}

// doctorRun checks a lab's host and boards without changing their state.
func doctorRun(c *cli.Context) error {
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return err
	}
	log := logger(c)
	rack, err := labrun.StartRack(lab, cat, log, nil, 0)
	if err != nil {
		return err
	}
	if rack != nil {
		defer rack.Close()
	}
	r := doctor.Run(c.Context, lab, doctor.Options{Emulator: labrun.Emulator(rack), LockDir: labrun.LocksPath(c.String("locks"), lab), Log: log})
	if c.Bool("json") {
		if err := json.NewEncoder(c.App.Writer).Encode(r); err != nil {
			return err
		}
	} else if err := r.WriteTable(c.App.Writer); err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return &exitError{code: r.ExitCode}
	}
	return nil
}
