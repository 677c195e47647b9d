package selftest

import "github.com/labrunner/labrunner/labconfig"

// Groups puts plans that share a board (directly or through another plan)
// into one group, keeping lab-file order inside each group: the units a
// nightly runs in parallel.
func Groups(plans []*labconfig.Plan) [][]*labconfig.Plan { return groupPlans(plans) }
