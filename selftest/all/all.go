// Package all imports every design's tests, so that the CLI and tests get
// them with one import.
package all

import (
	_ "github.com/labrunner/labrunner/selftest/exanet"
	_ "github.com/labrunner/labrunner/selftest/prr"
	_ "github.com/labrunner/labrunner/selftest/shoal"
	_ "github.com/labrunner/labrunner/selftest/tin"
)
