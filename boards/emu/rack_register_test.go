package emu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
)

// A design name registered twice panics, naming both registrations, and
// leaves the first factory in place.
func TestRegisterDesignDuplicatePanics(t *testing.T) {
	const name = "test-dup-design"
	first := func(*Board, *bitstreams.Manifest) (Design, error) { return nil, fmt.Errorf("first") }
	second := func(*Board, *bitstreams.Manifest) (Design, error) { return nil, fmt.Errorf("second") }
	RegisterDesign(name, first)
	defer func() {
		registryMu.Lock()
		delete(designs, name)
		delete(designOrigin, name)
		registryMu.Unlock()
	}()
	msg := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		RegisterDesign(name, second)
		return "no panic"
	}()
	for _, want := range []string{"emu.RegisterDesign", name, "registered twice"} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not say %q", msg, want)
		}
	}
	if strings.Count(msg, "boards/emu/rack_register_test.go:") != 2 {
		t.Errorf("panic %q does not name both registrations", msg)
	}
	registryMu.Lock()
	f := designs[name]
	registryMu.Unlock()
	if _, err := f(nil, nil); err == nil || err.Error() != "first" {
		t.Errorf("the second registration replaced the first: %v", err)
	}
}

func TestRegisterDesignRefusesNoNameOrFactory(t *testing.T) {
	for _, c := range []struct {
		name string
		f    Factory
	}{
		{"", func(*Board, *bitstreams.Manifest) (Design, error) { return nil, nil }},
		{"test-nil-factory", nil},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "rack_register_test.go:") {
					t.Errorf("RegisterDesign(%q, nil factory %v): panic %v, want one naming the call", c.name, c.f == nil, r)
				}
			}()
			RegisterDesign(c.name, c.f)
		}()
	}
	for _, n := range DesignNames() {
		if n == "" || n == "test-nil-factory" {
			t.Errorf("%q was registered", n)
		}
	}
}
