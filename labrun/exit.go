package labrun

import (
	"errors"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
)

// Exit codes (docs/architecture.md, conventions).
const (
	ExitPass   = 0
	ExitFail   = 1 // a verdict failed
	ExitConfig = 2 // bad usage or config
	ExitInfra  = 3 // a board did not answer, a tool is missing
)

// ExitCodeOf decides a run's exit code from its verdicts: bad setup first
// (nothing meaningful ran), then infrastructure (the run cannot be trusted),
// then design failures. A run in which nothing was judged (no verdict, or
// every one skipped: all its boards held by someone else) is not green: it
// says nothing about the designs, and a CI job that reads 0 as "the rack
// passed" would be misled. It exits ExitInfra, "nothing-ran": the rack was
// not available to the run, which is neither a design finding nor a wrong
// lab file.
func ExitCodeOf(vs []results.Verdict) (int, string) {
	var setup, infra, fail, judged bool
	for _, v := range vs {
		if v.Status != results.Skip {
			judged = true
		}
		switch {
		case v.Status == results.Error && v.Class == drivers.ClassSetup.String():
			setup = true
		case v.Status == results.Error:
			infra = true
		case v.Status == results.Fail:
			fail = true
		}
	}
	switch {
	case setup:
		return ExitConfig, "setup-error"
	case infra:
		return ExitInfra, "infrastructure-error"
	case fail:
		return ExitFail, "failed"
	case !judged:
		return ExitInfra, StatusNothingRan
	}
	return ExitPass, "passed"
}

// StatusNothingRan is the status of a run that judged nothing.
const StatusNothingRan = "nothing-ran"

// Error is what ends a run before its verdicts decide (a bad lab file, an
// unknown plan, a run directory already being written) or outside them (a
// panic), with the exit code it means.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the code the process exits with.
func (e *Error) ExitCode() int { return e.Code }

// setupError is bad configuration or usage: ExitConfig.
func setupError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: ExitConfig, Err: err}
}

// classError gives err the exit code of its driver error class (a board
// that did not answer is infrastructure, a refused bitstream setup).
func classError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: ExitCodeFor(err), Err: err}
}

// ExitCodeFor is the exit code of a driver error by its class.
func ExitCodeFor(err error) int {
	switch drivers.ClassOf(err) {
	case drivers.ClassSetup:
		return ExitConfig
	case drivers.ClassInfra:
		return ExitInfra
	}
	return ExitFail
}
