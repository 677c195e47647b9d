package selftest

import (
	"log/slog"

	"github.com/labrunner/labrunner/labconfig"
)

// NotOpened records the verdicts of a plan none of whose boards opened: an
// error on each board for each test, carrying that board's own driver error
// (openErr, by board) and so its class.
func NotOpened(rec Recorder, lab *labconfig.Lab, p *labconfig.Plan, log *slog.Logger, openErr map[string]error) {
	env := &Env{Lab: lab, Plan: p, Log: log, rec: rec}
	for i := range p.Tests {
		env.step = TestStep(p, i)
		for _, pb := range p.Boards {
			env.Error(p.Tests[i].Name, pb.Board, nil, openErr[pb.Board])
		}
	}
}
