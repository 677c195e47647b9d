// Package all imports every design's tests, so that the CLI and tests get
// them with one import.
package all

import (
	_ "labrunner/selftest/exanet"
	_ "labrunner/selftest/prr"
	_ "labrunner/selftest/shoal"
	_ "labrunner/selftest/tin"
)
