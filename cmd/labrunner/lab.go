package main

import (
	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // every emulated design
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	_ "github.com/labrunner/labrunner/selftest/all" // every design's tests
)

func labFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Usage: "lab file (YAML); the embedded emulated rack when not given", EnvVars: []string{"LABRUNNER_LAB"}}
}

func faultFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "fault", Usage: "inject an emulator fault; `SPEC` is NAME[@BOARD[:PORT]][,KEY=VALUE...] (labrunner faults lists them); repeatable"}
}

func seedFlag() cli.Flag {
	return &cli.Int64Flag{Name: "seed", Usage: "emulator seed", DefaultText: "the lab file's"}
}

// loadLab loads --lab, or the embedded default lab. A bad lab file is a
// configuration error (exit 2) listing every problem with file:line.
func loadLab(c *cli.Context, cat *bitstreams.Catalogue) (*labconfig.Lab, error) {
	return labrun.LoadLab(c.String("lab"), cat)
}
