package emu

import (
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// The runner's intent for board b of the chain, by symbolic name.
var bIntent = []struct {
	name string
	val  uint32
}{
	{"MY_ADDR", 2},
	{"DEFAULT_ROUTE", 0x80000000},
	{"ROUTE[0]", 0x80010003},
	{"PROXY_CTRL", 3},
	{"PORT_MODE[1]", 0},
	{"TS_THRESHOLD_NS", 60},
	{"TS_FAIL_LIMIT", 6},
	{"TS_CTRL", tsRoleClient},
}

// reconcile reads every register of the intent from the board at dst in
// one REG_REQ, rewrites those that differ, and returns their names.
func reconcile(t *testing.T, c *tctl, dst uint16) []string {
	t.Helper()
	var ops []top
	for _, r := range bIntent {
		ops = append(ops, top{false, c.dcn.addr(r.name), 0})
	}
	rs := c.regs(0, 0, dst, ops)
	mustOK(t, "reconcile read", rs)
	var diff []string
	var fix []top
	for i, r := range bIntent {
		if rs[i].val != r.val {
			diff = append(diff, r.name)
			fix = append(fix, top{true, c.dcn.addr(r.name), r.val})
		}
	}
	if len(fix) > 0 {
		mustOK(t, "reconcile write", c.regs(0, 0, dst, fix))
	}
	return diff
}

func applyIntent(t *testing.T, c *tctl, dst uint16) {
	t.Helper()
	var ops []top
	for _, r := range bIntent {
		ops = append(ops, top{true, c.dcn.addr(r.name), r.val})
	}
	mustOK(t, "intent", c.regs(0, 0, dst, ops))
}

func TestNSFRebootForwardsAndReconciles(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"}})
	c := bootstrapChain(t, r)
	applyIntent(t, c, 2)
	if d := reconcile(t, c, 2); len(d) != 0 {
		t.Fatalf("differences before any reboot: %v", d)
	}
	// Reboot b's firmware over PMOS; the answer comes first.
	mustOK(t, "reboot", c.regs(0, 0, 2, []top{{true, c.dcn.addr("FW_CTRL"), 1}}))
	b := regsOf(t, r, "b")
	a := c.dcn
	resets := a.rd("PMOS_RESETS[0]")
	// Forwarding goes on: an echo to c, through b, sent while b reboots,
	// arrives without the controller sending it again (PMOS holds it, and
	// b's new firmware asks a for a new session).
	if !c.echo(3, 40) {
		t.Fatal("c unreachable through b's reboot")
	}
	if got := b.field("FW_STATE", "BOOTS"); got != 2 {
		t.Fatalf("b booted %d times", got)
	}
	if a.rd("PMOS_RESETS[0]") != resets+1 {
		t.Fatalf("a's PMOS_RESETS[0] %d -> %d: b's reboot went unnoticed", resets, a.rd("PMOS_RESETS[0]"))
	}
	diff := reconcile(t, c, 2)
	want := []string{"DEFAULT_ROUTE", "ROUTE[0]", "PROXY_CTRL", "TS_THRESHOLD_NS", "TS_FAIL_LIMIT"}
	if !slices.Equal(diff, want) {
		t.Fatalf("reconciliation found %v, want %v", diff, want)
	}
	if d := reconcile(t, c, 2); len(d) != 0 {
		t.Fatalf("still different after the fix: %v", d)
	}
	// The console shows what happened.
	bb, _ := r.Board("b")
	if out := bb.ConsoleCommand("mgmt"); !strings.Contains(out, "fw=up boots=2") || !strings.Contains(out, "addr=0x0002") {
		t.Fatalf("console:\n%s", out)
	}
}

func TestNSFRebootFaultLosesTheRequest(t *testing.T) {
	// b reboots on the 4th REG_REQ it receives: the chain's bootstrap sends
	// it 2 (link-local routes, then the route to c), the intent is the 3rd.
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"},
		faults: []labconfig.Fault{fault(FaultNSFReboot, "b", "after", "4")}})
	c := bootstrapChain(t, r)
	applyIntent(t, c, 2)
	tag := c.newTag()
	c.send(cRoute, tmsg{typ: cRegReq, ttl: 16, dst: 2, src: cCtrl, tag: tag, body: regReqBody([]top{{true, c.dcn.addr("SCRATCH"), 0x5A5A}})}.bytes())
	if _, ok := c.tryAwait(30, func(m tmsg) bool { return m.tag == tag }); ok {
		t.Fatal("the request the firmware rebooted on was answered")
	}
	b := regsOf(t, r, "b")
	if b.rd("SCRATCH") == 0x5A5A {
		t.Fatal("the lost request was executed")
	}
	diff := reconcile(t, c, 2)
	if !slices.Contains(diff, "ROUTE[0]") || !slices.Contains(diff, "TS_THRESHOLD_NS") {
		t.Fatalf("reconciliation after the fault found %v", diff)
	}
	if !c.echo(3, 40) {
		t.Fatal("c unreachable after b's reboot")
	}
}
