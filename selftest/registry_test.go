package selftest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// standInSetup puts s in place of a design's setup for one test and
// returns the function that restores the registry.
func standInSetup(design string, s Setup) (restore func()) {
	return setups.replace(design, designSetup{run: s})
}

// forget removes a registration, so that a test leaves the tables as it
// found them.
func (r *registry[T]) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
	delete(r.at, name)
}

// mustPanic runs f and returns its panic message; it fails the test when
// f does not panic.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("no panic")
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

var placeRE = regexp.MustCompile(`selftest/registry_test\.go:\d+`)

// wantBothPlaces checks that a duplicate's panic names the registry, the
// name, and both registrations by file:line.
func wantBothPlaces(t *testing.T, msg, what, name string) {
	t.Helper()
	if !strings.Contains(msg, what) || !strings.Contains(msg, name) || !strings.Contains(msg, "registered twice") {
		t.Errorf("panic %q does not name %q and %q", msg, what, name)
	}
	if places := placeRE.FindAllString(msg, -1); len(places) != 2 || places[0] == places[1] {
		t.Errorf("panic %q does not name both registrations (found %v)", msg, places)
	}
}

func noop(context.Context, *Env) error { return nil }

func TestRegisterRefusesADuplicateTest(t *testing.T) {
	tc := Test{Name: "dup-test", Design: "registry-test", Run: noop}
	defer tests.forget(testKey(tc.Design, tc.Name)) // leave no trace
	Register(tc)
	msg := mustPanic(t, func() { Register(tc) })
	wantBothPlaces(t, msg, "selftest.Register: test", "registry-test/dup-test")

	// The same name for another design, or as a generic test, is another
	// test.
	other := Test{Name: "dup-test", Design: "registry-test-2", Run: noop}
	defer tests.forget(testKey(other.Design, other.Name))
	Register(other)
	if got, ok := Lookup("registry-test-2", "dup-test"); !ok || got.Design != "registry-test-2" {
		t.Errorf("Lookup after registering one name for two designs: %+v %v", got, ok)
	}
}

func TestRegisterRefusesATestWithoutNameOrRun(t *testing.T) {
	for _, tc := range []Test{{Design: "registry-test", Run: noop}, {Name: "no-run", Design: "registry-test"}} {
		msg := mustPanic(t, func() { Register(tc) })
		if !strings.Contains(msg, "needs a Name and a Run") || !placeRE.MatchString(msg) {
			t.Errorf("panic %q", msg)
		}
	}
}

func TestRegisterSetupRefusesADuplicate(t *testing.T) {
	defer setups.forget("registry-test")
	RegisterSetup("registry-test", noop, noParams)
	msg := mustPanic(t, func() { RegisterSetup("registry-test", noop, noParams) })
	wantBothPlaces(t, msg, "RegisterSetup: the setup of design", "registry-test")
	// Declaring no setup is a registration too: it cannot follow a setup.
	msg = mustPanic(t, func() { RegisterNoSetup("registry-test", "nothing to configure", noParams) })
	wantBothPlaces(t, msg, "RegisterSetup: the setup of design", "registry-test")
	if has, none := SetupOf("registry-test"); !has || none != "" {
		t.Errorf("SetupOf = %v, %q; want a setup", has, none)
	}
	mustPanic(t, func() { RegisterSetup("registry-test-nil", nil, noParams) })
	if has, _ := SetupOf("registry-test-nil"); has {
		t.Error("a nil setup was registered")
	}
}

func TestRegisterNoSetup(t *testing.T) {
	defer setups.forget("registry-test-none")
	RegisterNoSetup("registry-test-none", "a single board: every test configures what it uses", noParams)
	if has, none := SetupOf("registry-test-none"); !has || !strings.Contains(none, "single board") {
		t.Errorf("SetupOf = %v, %q", has, none)
	}
	if setupFor("registry-test-none") != nil {
		t.Error("a design with no setup has a setup step")
	}
	msg := mustPanic(t, func() { RegisterSetup("registry-test-none", noop, noParams) })
	wantBothPlaces(t, msg, "RegisterSetup: the setup of design", "registry-test-none")
	mustPanic(t, func() { RegisterNoSetup("registry-test-why", " ", noParams) })
	if has, _ := SetupOf("nothing-registered"); has {
		t.Error("SetupOf a design that registered nothing says it has")
	}
}

func TestRegisterHealthRefusesADuplicate(t *testing.T) {
	h := func(context.Context, *Env, *Board) error { return nil }
	defer healths.forget("registry-test")
	RegisterHealth("registry-test", h)
	msg := mustPanic(t, func() { RegisterHealth("registry-test", h) })
	wantBothPlaces(t, msg, "RegisterHealth: the board health check of design", "registry-test")
	if !HasHealth("registry-test") || HasHealth("registry-test-other") {
		t.Error("HasHealth does not follow the registrations")
	}
	mustPanic(t, func() { RegisterHealth("registry-test-nil", nil) })
}

// The stand-in a test puts in place of a setup is undone, registered or
// not before.
func TestReplaceRestores(t *testing.T) {
	restore := standInSetup("registry-test-standin", noop)
	if setupFor("registry-test-standin") == nil {
		t.Fatal("stand-in not in place")
	}
	restore()
	if has, _ := SetupOf("registry-test-standin"); has {
		t.Error("stand-in left behind")
	}
}
