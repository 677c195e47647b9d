// Package designs imports every emulated design, so that the CLI and tests
// get them all with one import.
package designs

import (
	_ "labrunner/boards/emu/exanet"
	_ "labrunner/boards/emu/prr"
	_ "labrunner/boards/emu/shoal"
	_ "labrunner/boards/emu/tin"
)
