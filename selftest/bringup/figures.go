package bringup

import (
	_ "embed"
	"sync"

	"github.com/labrunner/labrunner/bitstreams"
)

//go:embed figures.yaml
var figuresYAML []byte

var (
	figuresOnce sync.Once
	figures     *bitstreams.Report
)

// Figures describes what a run report draws for a bring-up run (plan
// PlanName): a report block like a catalogue design's (bitstreams.Report),
// since the bring-up is not a design of the catalogue. The description is
// embedded; one that does not parse is a build defect (the package's tests
// catch it), so Figures panics with every problem listed.
func Figures() *bitstreams.Report {
	figuresOnce.Do(func() {
		r, err := bitstreams.ParseReport("selftest/bringup/figures.yaml (embedded)", figuresYAML)
		if err != nil {
			panic("bringup: the embedded report description is invalid (run go test ./selftest/bringup):\n" + err.Error())
		}
		figures = r
	})
	return figures
}
