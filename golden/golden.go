// Package golden is the registry of the golden models: the project's
// independent software readings of the papers, against which the hardware's
// measurements are scored.
//
// Each design or protocol has its own package under golden/ (golden/exanet,
// ...). A model registers itself from an init function; golden/models
// blank-imports every model package so that a program gets them all with one
// import. Models never import the emulator (boards/emu) and the emulator never
// imports them: they are two independent readings of the same papers, and
// sharing code would make scoring compare a model with itself.
package golden

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Model is a golden model: predictions for a design or protocol, from its paper.
type Model interface {
	Name() string
	Doc() string
	// Params lists the parameters Predict accepts, with defaults and meaning.
	Params() []Param
	// Predict returns the model's expectations for the given parameter values
	// (unknown keys are an error naming the allowed ones).
	Predict(set map[string]string) ([]results.Expectation, error)
}

// Param is one parameter a model's Predict accepts. An empty Default means
// the parameter is optional and has no default value.
type Param struct{ Name, Default, Doc string }

var (
	mu     sync.RWMutex
	models = map[string]Model{}
	// origins is where each model was registered (file:line), so that a
	// name registered twice names both places.
	origins = map[string]string{}
)

// Register makes a model available by its name. It is meant to be called
// from the model package's init function, so a programming mistake (a nil
// model, an empty or duplicate name) panics at start-up rather than hiding.
func Register(m Model) {
	if m == nil {
		panic("golden: Register called with a nil model")
	}
	name := m.Name()
	if name == "" || strings.TrimSpace(name) != name {
		panic(fmt.Sprintf("golden: Register: invalid model name %q (want a non-empty name without surrounding spaces)", name))
	}
	where := "an unknown place"
	if _, file, line, ok := runtime.Caller(1); ok {
		if i := strings.LastIndex(file, "/golden/"); i >= 0 {
			file = file[i+1:]
		}
		where = fmt.Sprintf("%s:%d", file, line)
	}
	mu.Lock()
	defer mu.Unlock()
	if old, dup := origins[name]; dup {
		panic(fmt.Sprintf("golden: Register: model %q registered twice: at %s and at %s; remove one of the two registrations (model names must be unique)", name, old, where))
	}
	models[name] = m
	origins[name] = where
}

// Lookup returns the model registered under name.
func Lookup(name string) (Model, error) {
	mu.RLock()
	m, ok := models[name]
	mu.RUnlock()
	if ok {
		return m, nil
	}
	known := Names()
	if len(known) == 0 {
		return nil, fmt.Errorf("golden: no model named %q: no models are registered (import github.com/labrunner/labrunner/golden/models)", name)
	}
	return nil, fmt.Errorf("golden: no model named %q (known models: %s)", name, strings.Join(known, ", "))
}

// Names returns the names of the registered models, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Settings checks set against a model's parameter list and returns the
// effective values: every parameter with a default gets it unless set
// overrides it; optional parameters without a default appear only when set.
// A key that is not a parameter is an error naming the allowed ones and, for
// a slip, the one meant (param.Settings), so that a typo on the command line
// (--set payload=64 for payloads) is never silently ignored. model names the
// model in the error.
func Settings(model string, params []Param, set map[string]string) (map[string]string, error) {
	specs := make([]param.Spec, len(params))
	for i, p := range params {
		specs[i] = param.Spec{Name: p.Name, Default: p.Default}
	}
	return param.Settings(model, specs, set)
}
