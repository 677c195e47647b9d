package emu

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
)

// mgmtLab describes a test rack: boards named by the keys of ppm/offset
// (in order of names), cabled by links "a:sfp0-b:sfp0".
type mgmtLab struct {
	seed   int64
	kind   string
	boards []string
	ppm    map[string]float64
	offset map[string]float64
	links  []string
	asym   map[string]float64 // link spec -> asymmetry_ns
	ber    map[string]float64
	lat    float64 // latency_ns of every link (default 5)
	faults []labconfig.Fault
	pty    bool // serve consoles and bridges on pseudo-terminals
}

func startMgmtRack(t testing.TB, l mgmtLab) *Rack {
	t.Helper()
	if l.seed == 0 {
		l.seed = 7
	}
	if l.kind == "" {
		l.kind = "zcu102"
	}
	if l.lat == 0 {
		l.lat = 5
	}
	lab := &labconfig.Lab{Name: "mgmt-test", Seed: l.seed}
	for _, n := range l.boards {
		lab.Boards = append(lab.Boards, labconfig.Board{Name: n, Kind: l.kind,
			Emulated: &labconfig.Emulated{BootMS: 20, ClockPPM: l.ppm[n], OffsetNS: l.offset[n]}})
	}
	for _, s := range l.links {
		a, b, ok := strings.Cut(s, "-")
		if !ok {
			t.Fatalf("bad link %q", s)
		}
		ea, eb := splitEP(t, a), splitEP(t, b)
		lab.Links = append(lab.Links, labconfig.Link{A: ea, B: eb, LatencyNS: l.lat, AsymmetryNS: l.asym[s], BER: l.ber[s]})
	}
	r, err := Start(lab, Options{Faults: l.faults, Catalogue: &bitstreams.Catalogue{}, NoPTY: !l.pty})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func splitEP(t testing.TB, s string) labconfig.Endpoint {
	b, p, ok := strings.Cut(s, ":")
	if !ok {
		t.Fatalf("bad endpoint %q", s)
	}
	return labconfig.Endpoint{Board: b, Port: p}
}

func linkFault(name, link string, kv ...string) labconfig.Fault {
	bn, _, _ := strings.Cut(link, ":")
	f := fault(name, bn, kv...)
	f.Link = link
	return f
}

var mgmtManifest = func() *bitstreams.Manifest {
	m, err := bitstreams.Default().Design("mgmt")
	if err != nil {
		panic(err)
	}
	return m
}()

// mregs gives symbolic access to a board's management registers through
// its in-process bus and the catalogue's mgmt.yaml, as a runner would.
type mregs struct {
	t testing.TB
	*regmap.Regs
	name string
}

func regsOf(t testing.TB, r *Rack, board string) *mregs {
	t.Helper()
	b, ok := r.Board(board)
	if !ok {
		t.Fatalf("no board %s", board)
	}
	return &mregs{t: t, Regs: regmap.New(b.Bus(), mgmtManifest, board), name: board}
}

func tctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = cancel
	return ctx
}

func (m *mregs) rd(name string) uint32 {
	m.t.Helper()
	v, err := m.Read(tctx(), name)
	if err != nil {
		m.t.Fatalf("%s: read %s: %v", m.name, name, err)
	}
	return v
}

func (m *mregs) wr(name string, v uint32) {
	m.t.Helper()
	if err := m.Write(tctx(), name, v); err != nil {
		m.t.Fatalf("%s: write %s=0x%x: %v", m.name, name, v, err)
	}
}

func (m *mregs) field(name, f string) uint32 {
	m.t.Helper()
	v, err := m.ReadField(tctx(), name, f)
	if err != nil {
		m.t.Fatalf("%s: read %s.%s: %v", m.name, name, f, err)
	}
	return v
}

func (m *mregs) addr(name string) uint32 {
	m.t.Helper()
	loc, err := m.Lookup(name)
	if err != nil {
		m.t.Fatal(err)
	}
	return uint32(loc.Addr)
}

// wait lets emulated time pass on the rack through DELAY_US.
func (m *mregs) wait(us uint32) { m.t.Helper(); m.wr("DELAY_US", us) }

// waitUp waits until the firmware is up.
func (m *mregs) waitUp() {
	m.t.Helper()
	for range 20 {
		if m.field("FW_STATE", "STATE") == fwUp {
			return
		}
		m.wait(500)
	}
	m.t.Fatalf("%s: firmware not up: FW_STATE 0x%x", m.name, m.rd("FW_STATE"))
}

func hexs(p []byte) string { return fmt.Sprintf("% x", p) }
