package selftest

import (
	"log/slog"

	"github.com/labrunner/labrunner/labconfig"
)

// NewEnv returns an Env recording into rec for a run that is not one of the
// lab's plans (the staged bring-up, selftest/bringup): plan names the run in
// every record. Record, Check and Error then work as they do for a plan's
// tests.
func NewEnv(lab *labconfig.Lab, plan *labconfig.Plan, rec Recorder, log *slog.Logger) *Env {
	return &Env{Lab: lab, Plan: plan, Deadlines: lab.Deadlines, Log: log, rec: rec, Shared: map[string]any{},
		Unhealthy: map[string]string{}}
}
