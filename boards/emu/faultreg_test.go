package emu

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// A fault name registered twice panics, naming both registrations, and
// leaves the first one in place.
func TestRegisterFaultDuplicatePanics(t *testing.T) {
	const name = "test-dup-fault"
	RegisterFault(FaultInfo{Name: name, Scope: "board", Design: "alpha", Doc: "first"})
	defer func() {
		registryMu.Lock()
		delete(faults, name)
		delete(faultOrigin, name)
		registryMu.Unlock()
	}()
	msg := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		RegisterFault(FaultInfo{Name: name, Scope: "board", Design: "beta", Doc: "second"})
		return "no panic"
	}()
	for _, want := range []string{name, "registered twice", "faultreg_test.go:", `design "alpha"`, `design "beta"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not say %q", msg, want)
		}
	}
	if strings.Count(msg, "faultreg_test.go:") != 2 {
		t.Errorf("panic %q does not name both registrations", msg)
	}
	if fi, _ := LookupFault(name); fi.Doc != "first" {
		t.Errorf("the second registration replaced the first: %+v", fi)
	}
}

func TestRegisterFaultRefusesBadInfo(t *testing.T) {
	for _, fi := range []FaultInfo{
		{Name: "", Scope: "board"},
		{Name: "test-bad-scope", Scope: "cable"},
		{Name: "test-bad-default", Scope: "board", Params: map[string]string{"n": "0"},
			Check: func(p labconfig.Params) error { return fmt.Errorf("n must be 1 or more") }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterFault(%+v) did not panic", fi)
				}
			}()
			RegisterFault(fi)
		}()
		if _, ok := LookupFault(fi.Name); ok && fi.Name != "" {
			t.Errorf("%s was registered", fi.Name)
		}
	}
}

// Every registered fault is well formed: unique (by construction), a
// scope, a documentation text, and defaults its own check accepts.
func TestRegisteredFaultsWellFormed(t *testing.T) {
	for _, fi := range Faults() {
		if fi.Doc == "" {
			t.Errorf("fault %s has no documentation", fi.Name)
		}
		f := labconfig.Fault{Name: fi.Name, Board: "b", Link: "b:p", Params: defaultParams(fi)}
		if err := CheckFault(f); err != nil {
			t.Errorf("fault %s with its defaults: %v", fi.Name, err)
		}
	}
}

func TestCheckFault(t *testing.T) {
	RegisterFault(FaultInfo{Name: "test-check-fault", Scope: "link", Params: map[string]string{"every": "64", "mode": "any"},
		Doc: "a fault for this test",
		Check: func(p labconfig.Params) error {
			if n, err := p.Int("every", 64); err != nil || n < 1 {
				return fmt.Errorf("every: want a whole number of 1 or more")
			}
			return nil
		}})
	defer func() {
		registryMu.Lock()
		delete(faults, "test-check-fault")
		delete(faultOrigin, "test-check-fault")
		registryMu.Unlock()
	}()
	parse := func(s string) labconfig.Fault {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct{ spec, want string }{
		{"test-check-fault@a:sfp0,evry=3", `unknown parameter "evry"`},
		{"test-check-fault@a:sfp0,evry=3", "did you mean every?"},
		{"test-check-fault@a:sfp0,evry=3", "--fault test-check-fault@a:sfp0,evry=3"},
		{"test-check-fault@a:sfp0,every=often", `every="often" is not a number`},
		{"test-check-fault@a:sfp0,every=0", "every: want a whole number of 1 or more"},
		{"test-check-fault@a,every=3", "needs a cable end"},
		{"test-chek-fault@a:sfp0", "did you mean test-check-fault?"},
		{"credit-leak@a:sfp0", `unknown fault "credit-leak"`},
	} {
		err := CheckFault(parse(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckFault(%s) = %v, want it to say %q", c.spec, err, c.want)
		}
	}
	for _, ok := range []string{"test-check-fault@a:sfp0", "test-check-fault@a:sfp0,every=0x10,mode=vc2"} {
		if err := CheckFault(parse(ok)); err != nil {
			t.Errorf("CheckFault(%s) = %v", ok, err)
		}
	}
	// The rack refuses what CheckFault refuses, before starting anything.
	lab := &labconfig.Lab{Name: "x", Seed: 1, Boards: []labconfig.Board{
		{Name: "a", Kind: "zcu102", Emulated: &labconfig.Emulated{}}, {Name: "b", Kind: "zcu102", Emulated: &labconfig.Emulated{}}},
		Links: []labconfig.Link{{A: labconfig.Endpoint{Board: "a", Port: "sfp0"}, B: labconfig.Endpoint{Board: "b", Port: "sfp0"}}}}
	r, err := Start(lab, Options{Faults: []labconfig.Fault{parse("test-check-fault@a:sfp0,evry=3")}, NoPTY: true})
	if err == nil {
		r.Close()
		t.Fatal("the rack started with evry=3")
	}
	if !strings.Contains(err.Error(), "did you mean every?") {
		t.Errorf("Start: %v", err)
	}
}

// The fault list encodes as JSON (`labrunner faults --json`): the Check
// function stays out of it.
func TestFaultsEncodeAsJSON(t *testing.T) {
	b, err := json.Marshal(Faults())
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	if !strings.Contains(string(b), `"Name":"board-silent"`) || strings.Contains(string(b), "Check") {
		t.Errorf("JSON %s", b[:min(len(b), 300)])
	}
}
