package emu

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

func TestMgmtFaultsRegistered(t *testing.T) {
	want := map[string]string{FaultMOSLossy: "link", FaultMOSLinkCut: "link", FaultLinkAsymmetric: "link",
		FaultProxyDies: "board", FaultNeverBoots: "board", FaultNSFReboot: "board", FaultTSyncDead: "board", "slow-clock": "board"}
	got := map[string]FaultInfo{}
	for _, f := range Faults() {
		got[f.Name] = f
	}
	for n, scope := range want {
		f, ok := got[n]
		if !ok || f.Scope != scope || len(f.Doc) < 80 || f.Design != "" {
			t.Errorf("fault %s: %+v", n, f)
		}
	}
	// bad parameters are refused at start, naming the fault and the fix
	for _, f := range []labconfig.Fault{
		linkFault(FaultMOSLossy, "a:sfp0", "rate", "2"),
		linkFault(FaultMOSLossy, "a:sfp0", "rat", "0.1"),
		fault(FaultProxyDies, "a", "after", "0"),
		fault(FaultNSFReboot, "a", "after", "x"),
		linkFault(FaultLinkAsymmetric, "a:sfp0", "ns", "-3"),
		fault(FaultTSyncDead, "a", "at_us", "soon"),
	} {
		lab := &labconfig.Lab{Name: "x", Seed: 1, Boards: []labconfig.Board{
			{Name: "a", Kind: "zcu102", Emulated: &labconfig.Emulated{}}, {Name: "b", Kind: "zcu102", Emulated: &labconfig.Emulated{}}},
			Links: []labconfig.Link{{A: labconfig.Endpoint{Board: "a", Port: "sfp0"}, B: labconfig.Endpoint{Board: "b", Port: "sfp0"}, LatencyNS: 5}}}
		r, err := Start(lab, Options{Faults: []labconfig.Fault{f}, NoPTY: true})
		if err == nil {
			r.Close()
			t.Errorf("fault %s %v accepted", f.Name, f.Params)
			continue
		}
		if !strings.Contains(err.Error(), "test.yaml:7: fault "+f.Name) {
			t.Errorf("fault %s: error %v does not say where", f.Name, err)
		}
	}
}

func TestMOSLossyBootstrapRecovers(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{seed: 3, boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"},
		faults: []labconfig.Fault{linkFault(FaultMOSLossy, "a:sfp0", "rate", "0.05")}})
	c := bootstrapChain(t, r)
	if !c.echo(3, 40) {
		t.Fatal("c unreachable over the lossy cable")
	}
	a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
	retx := a.rd("PMOS_RETX[0]") + b.rd("PMOS_RETX[0]")
	drops := a.rd("PMOS_REASM_DROPS[0]") + b.rd("PMOS_REASM_DROPS[0]")
	if retx == 0 || drops == 0 {
		t.Fatalf("lossy cable: retransmissions %d, reassembly drops %d", retx, drops)
	}
	if b.rd("PMOS_RETX[1]") != 0 {
		t.Fatalf("the clean cable b-c retransmitted %d frames", b.rd("PMOS_RETX[1]"))
	}
}

func TestMOSLossyHighRateGivesUp(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{seed: 3, boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"},
		faults: []labconfig.Fault{linkFault(FaultMOSLossy, "a:sfp0", "rate", "0.7")}})
	a := regsOf(t, r, "a")
	a.waitUp()
	c := &tctl{t: t, dcn: a}
	a.wr("MY_ADDR", 1)
	a.wr("ROUTE[0]", routeEntry(t, a, cCtrl, 15))
	tag := c.newTag()
	c.send(0, tmsg{typ: cRegReq, ttl: 16, dst: cLL, src: cCtrl, tag: tag, body: regReqBody([]top{{false, a.addr("MGMT_ID"), 0}})}.bytes())
	m, ok := c.tryAwait(60, func(m tmsg) bool { return m.tag == tag })
	if !ok || m.typ != cError || m.body[0] != 4 {
		t.Fatalf("want an ERROR PORT_DOWN for a request PMOS gave up on: %v %+v", ok, m)
	}
	if a.rd("PMOS_GIVEUPS[0]") == 0 || a.field("PORT_STATUS[0]", "GAVE_UP") != 1 {
		t.Fatalf("PMOS_GIVEUPS %d, PORT_STATUS 0x%x", a.rd("PMOS_GIVEUPS[0]"), a.rd("PORT_STATUS[0]"))
	}
}

func TestProxyDiesAndAnotherNeighbourTakesOver(t *testing.T) {
	// a (DCN) - b - c and a - d - c: b dies while proxying c's bootstrap.
	r := startMgmtRack(t, mgmtLab{seed: 2, boards: []string{"a", "b", "c", "d"},
		links:  []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0", "a:sfp1-d:sfp0", "d:sfp1-c:sfp1"},
		faults: []labconfig.Fault{fault(FaultProxyDies, "b", "after", "26")}})
	a := regsOf(t, r, "a")
	a.waitUp()
	c := &tctl{t: t, dcn: a}
	a.wr("MY_ADDR", 1)
	a.wr("ROUTE[0]", routeEntry(t, a, cCtrl, 15))
	a.wr("PROXY_CTRL", 3)
	// wave 1: b through sfp0, d through sfp1
	for _, w := range []struct {
		port int
		addr uint16
	}{{0, 2}, {1, 4}} {
		rl := c.discovered(1, w.port)
		c.assign(0, w.port, rl.dna, w.addr)
		mustOK(t, "routes", c.regs(0, w.port, 0, []top{{true, a.addr("DEFAULT_ROUTE"), 0x80000000}, {true, a.addr("PROXY_CTRL"), 3}}))
		a.wr(portReg("ROUTE", int(w.addr)), routeEntry(t, a, w.addr, uint32(w.port)))
	}
	// wave 2: c, relayed by both; the controller picks b first
	rc := c.discovered(2, 1)
	c.assign(2, 1, rc.dna, 3)
	tag := c.newTag()
	body := regReqBody([]top{{true, a.addr("DEFAULT_ROUTE"), 0x80000000}})
	c.via(2, 1, tmsg{typ: cRegReq, ttl: 16, dst: cLL, src: cCtrl, tag: tag, body: body}.bytes())
	if _, ok := c.tryAwait(40, func(m tmsg) bool { return m.tag == tag && m.typ == cRegResp }); ok {
		t.Fatal("b answered: it should have died by now (raise or lower the fault's after)")
	}
	b := regsOf(t, r, "b")
	hb := b.rd("FW_HEARTBEAT")
	a.wait(6000)
	if st := b.field("FW_STATE", "STATE"); st != fwHalted || b.rd("FW_HEARTBEAT") != hb {
		t.Fatalf("b: FW_STATE %d, heartbeat %d -> %d", st, hb, b.rd("FW_HEARTBEAT"))
	}
	if _, err := b.Read(tctx(), "ROUTE[0]"); !errors.Is(err, ErrBusy) {
		t.Fatalf("ROUTE on a dead firmware: %v", err)
	}
	bb, _ := r.Board("b")
	if out := bb.ConsoleCommand("id"); out != "" {
		t.Fatalf("a dead firmware's console printed %q", out)
	}
	// The controller takes c over through d (c has its address already, so
	// it no longer discovers: link-local through d's sfp1).
	mustOK(t, "c routes via d", c.regs(4, 1, 0, []top{{true, a.addr("DEFAULT_ROUTE"), 0x80010000}}))
	mustOK(t, "d route to c", c.regs(0, 0, 4, []top{{true, a.addr("ROUTE[0]"), routeEntry(t, a, 3, 1)}}))
	a.wr("ROUTE[3]", routeEntry(t, a, 3, 1))
	if !c.echo(3, 40) {
		t.Fatal("c unreachable through d")
	}
	if a.rd("PMOS_GIVEUPS[0]") == 0 {
		t.Fatal("a never gave up on the dead b")
	}
}

func TestNeverBoots(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"},
		faults: []labconfig.Fault{fault(FaultNeverBoots, "b")}})
	a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
	a.waitUp()
	a.wr("MY_ADDR", 1)
	a.wr("ROUTE[0]", routeEntry(t, a, cCtrl, 15))
	a.wr("PROXY_CTRL", 3)
	a.wait(10000)
	if st := b.field("FW_STATE", "STATE"); st != fwBooting || b.rd("FW_HEARTBEAT") != 0 {
		t.Fatalf("b: FW_STATE %d heartbeat %d", st, b.rd("FW_HEARTBEAT"))
	}
	if _, err := b.Read(tctx(), "PROXY_CTRL"); !errors.Is(err, ErrBusy) {
		t.Fatalf("PROXY_CTRL of a firmware that never booted: %v", err)
	}
	if a.rd("DISCOVERS_RELAYED") != 0 || b.rd("DISCOVERS_SENT") != 0 {
		t.Fatal("b discovered")
	}
	c := &tctl{t: t, dcn: a}
	tag := c.newTag()
	c.send(0, tmsg{typ: cRegReq, ttl: 16, dst: cLL, src: cCtrl, tag: tag, body: regReqBody([]top{{false, a.addr("MGMT_ID"), 0}})}.bytes())
	m, ok := c.tryAwait(60, func(m tmsg) bool { return m.tag == tag })
	if !ok || m.typ != cError || m.body[0] != 4 {
		t.Fatalf("want an ERROR PORT_DOWN: %v %+v", ok, m)
	}
	// The hardware still works: the latency measurement, the TimeSync block.
	if d := measure(t, b, 0); d < 30 {
		t.Fatalf("latency %v", d)
	}
	bb, _ := r.Board("b")
	if out := bb.ConsoleCommand("id"); out != "" {
		t.Fatalf("console of a board that never booted printed %q", out)
	}
	log, stuck := bb.consoleBootLog()
	if !stuck || !strings.Contains(log[len(log)-3].Text, "rcu: INFO") {
		t.Fatalf("stuck %v, boot log ends %+v", stuck, log[len(log)-1])
	}
}

func TestNeverBootsConsoleShowsStall(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}, pty: true,
		faults: []labconfig.Fault{fault(FaultNeverBoots, "b")}})
	bb, _ := r.Board("b")
	c := openConsole(t, bb)
	powerCycle(t, bb)
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 4096)
	for !strings.Contains(string(c.raw), "self-detected stall") && time.Now().Before(deadline) {
		n, _ := c.port.Read(buf)
		c.raw = append(c.raw, buf[:n]...)
	}
	c.send("id\r")
	time.Sleep(300 * time.Millisecond)
	n, _ := c.port.Read(buf)
	c.raw = append(c.raw, buf[:n]...)
	s := string(c.raw)
	if !strings.Contains(s, "Run /sbin/init as init process") || !strings.Contains(s, "rcu: INFO: rcu_sched self-detected stall on CPU") {
		t.Fatalf("console:\n%s", s)
	}
	if strings.Contains(s, "root@b:~#") || strings.Contains(s, "board=b") || strings.Contains(s, "login: root") {
		t.Fatalf("a stuck boot reached the shell:\n%s", s)
	}
}

func TestProxyDiesConsolePanics(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}, pty: true,
		faults: []labconfig.Fault{fault(FaultProxyDies, "b", "after", "1")}})
	bb, _ := r.Board("b")
	waitPrompt(t, bb)
	c := openConsole(t, bb)
	// b's first DISCOVER is its first PMOS packet: it dies.
	a := regsOf(t, r, "a")
	a.wait(4000)
	if _, crashed := bb.fwConsoleState(); !crashed {
		t.Fatal("b did not crash")
	}
	c.send("\r")
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 4096)
	for !strings.Contains(string(c.raw), "end Kernel panic") && time.Now().Before(deadline) {
		n, _ := c.port.Read(buf)
		c.raw = append(c.raw, buf[:n]...)
	}
	if !strings.Contains(string(c.raw), "Kernel panic - not syncing") {
		t.Fatalf("console:\n%q", c.raw)
	}
	// a power cycle brings it back
	powerCycle(t, bb)
	a.wait(3000)
	if st := regsOf(t, r, "b").field("FW_STATE", "STATE"); st != fwUp {
		t.Fatalf("after a power cycle FW_STATE %d", st)
	}
}

func TestMOSLinkCut(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"},
		faults: []labconfig.Fault{linkFault(FaultMOSLinkCut, "b:sfp0", "at_us", "0")}})
	a := regsOf(t, r, "a")
	a.waitUp()
	a.wait(5000)
	if a.field("PORT_STATUS[0]", "CHANNEL_UP") != 0 || a.field("PORT_STATUS[0]", "CABLED") != 1 {
		t.Fatalf("PORT_STATUS 0x%x", a.rd("PORT_STATUS[0]"))
	}
	if a.rd("MOS_RX_WORDS[0]") != 0 || a.rd("PMOS_GIVEUPS[0]") == 0 {
		t.Fatalf("words %d giveups %d", a.rd("MOS_RX_WORDS[0]"), a.rd("PMOS_GIVEUPS[0]"))
	}
	a.wr("LAT_CTRL[0]", 1)
	a.wait(20)
	if st := a.rd("LAT_STATUS[0]"); st != 4 {
		t.Fatalf("LAT_STATUS 0x%x", st)
	}
}
