// Package designs imports every emulated design, so that the CLI and tests
// get them all with one import.
package designs

import (
	_ "github.com/labrunner/labrunner/boards/emu/exanet"
	_ "github.com/labrunner/labrunner/boards/emu/prr"
	_ "github.com/labrunner/labrunner/boards/emu/shoal"
	_ "github.com/labrunner/labrunner/boards/emu/tin"
)
