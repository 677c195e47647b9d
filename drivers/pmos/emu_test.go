package pmos_test

// These tests run the controller against the emulated rack (boards/emu), the
// device side written independently from the same documents: a runner
// package never imports the emulator, its tests use it as the hardware.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
)

// chain starts a rack of n ZCU102 boards b0 - b1 - ... cabled sfp1 to sfp0;
// b0 alone is DCN (its in-process bus is the runner's).
func chain(t testing.TB, n int, faults ...labconfig.Fault) (*emu.Rack, drivers.RegisterBus, *bitstreams.Manifest) {
	t.Helper()
	return chainDCN(t, n, 1, faults...)
}

// chainDCN is chain with the first dcn boards DCN.
func chainDCN(t testing.TB, n, dcn int, faults ...labconfig.Fault) (*emu.Rack, drivers.RegisterBus, *bitstreams.Manifest) {
	t.Helper()
	spec := emutest.Rack{Name: "chain", Seed: 11, Faults: faults}
	for i := 0; i < n; i++ {
		spec.Boards = append(spec.Boards, emutest.Board{Name: fmt.Sprintf("b%d", i), Kind: "zcu102",
			PPM: float64(5 * i), OffsetNS: float64(100 * i), DCN: i < dcn})
		if i > 0 {
			spec.Cables = append(spec.Cables, emutest.Cable{A: fmt.Sprintf("b%d:sfp1", i-1), B: fmt.Sprintf("b%d:sfp0", i), LatencyNS: 5})
		}
	}
	g := emutest.Start(t, spec)
	m, err := bitstreams.Default().Design("mgmt")
	if err != nil {
		t.Fatal(err)
	}
	return g.Rack, g.Bus("b0"), m
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// upDCN waits for b0's firmware, gives it address 1, routes the controller
// to its mailbox and turns relaying on (mgmt.md §7, wave 0).
func upDCN(t testing.TB, ctx context.Context, regs *regmap.Regs) {
	t.Helper()
	for i := 0; ; i++ {
		st, err := regs.ReadField(ctx, "FW_STATE", "STATE")
		if err != nil {
			t.Fatal(err)
		}
		if st == 2 {
			break
		}
		if i > 50 {
			t.Fatalf("b0's firmware never came up (FW_STATE.STATE %d)", st)
		}
		if err := regs.Write(ctx, "DELAY_US", 1000); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct {
		reg string
		v   uint32
	}{{"MY_ADDR", 1}, {"ROUTE[0]", 0x800FFFFE}, {"PROXY_CTRL", 3}} {
		if err := regs.Write(ctx, w.reg, w.v); err != nil {
			t.Fatal(err)
		}
	}
}

// The DHCP-like exchange over MOS (Aquila §4.4): b1's DISCOVER comes relayed
// by b0, the ASSIGN goes out of b0's port, b1 answers ASSIGNED with its
// upstream port; then b1 is configured link-local, routed to, and read over
// the routed network through a RemoteBus with symbolic names.
func TestClientBootstrapsANeighbourAndReadsItsRegisters(t *testing.T) {
	_, bus, m := chain(t, 2)
	ctx := ctxT(t)
	regs := regmap.New(bus, m, "b0")
	upDCN(t, ctx, regs)
	c := pmos.NewClient(pmos.ClientConfig{})
	defer c.Close()
	if _, err := c.AddMailbox(ctx, bus, m, "b0"); err != nil {
		t.Fatal(err)
	}
	c.Listen(true)
	var rel pmos.Relayed
	select {
	case rel = <-c.Relays():
	case <-ctx.Done():
		t.Fatal("no RELAY from b0")
	}
	c.Listen(false)
	if rel.Discover.Name != "b1" || rel.Proxy != 1 || rel.ProxyPort != 1 || rel.Discover.Port != 0 || rel.Discover.NPorts != 4 {
		t.Fatalf("relay %+v", rel)
	}
	got, err := c.Assign(ctx, pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1}, rel.Discover.DNA, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Port != 0 {
		t.Fatalf("ASSIGNED names upstream port %d, b1's cable is on sfp0", got.Port)
	}
	ll := c.Bus("b1", pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1})
	r1 := regmap.New(ll, m, "b1")
	if err := r1.Write(ctx, "DEFAULT_ROUTE", 0x80000000); err != nil {
		t.Fatal(err)
	}
	if err := regs.Write(ctx, "ROUTE[1]", 0x80010002); err != nil {
		t.Fatal(err)
	}
	ll.SetPath(pmos.Path{Kind: pmos.PathRouted, Via: "b0", Addr: 2})
	for reg, want := range map[string]uint32{"MY_ADDR": 2, "MGMT_ID": 0x4D474D54, "NPORTS": 4, "DNA": rel.Discover.DNA} {
		v, err := r1.Read(ctx, reg)
		if err != nil {
			t.Fatalf("routed read of %s: %v", reg, err)
		}
		if v != want {
			t.Errorf("b1 %s = 0x%x, want 0x%x", reg, v, want)
		}
	}
	// A burst of more than 25 words takes two REG_REQs.
	buf := make([]uint32, 30)
	if err := ll.ReadBurst(ctx, 0xF0000100, buf); err != nil {
		t.Fatal(err)
	}
	if buf[0] != 0 {
		t.Errorf("b1 ROUTE[0] reads 0x%x, nothing was written there", buf[0])
	}
	// A write to a read-only register comes back as a setup error.
	err = ll.Write32(ctx, 0xF0000000, 1)
	var se *pmos.StatusError
	if !errors.As(err, &se) || se.Status != pmos.RegReadOnly || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("write of MGMT_ID: %v", err)
	}
	if body, err := c.Echo(ctx, pmos.Path{Kind: pmos.PathRouted, Via: "b0", Addr: 2}, []byte("ping")); err != nil || string(body) != "ping" {
		t.Errorf("echo: %q %v", body, err)
	}
	st := c.Stats()
	if st.Relays == 0 || st.Answers < 5 {
		t.Errorf("client stats %+v", st)
	}
}

// Through a proxy reached over the network: SEND to b1 carrying an ASSIGN
// for b2 (mgmt.md §7, wave 2).
func TestClientAssignsThroughAProxy(t *testing.T) {
	_, bus, m := chain(t, 3)
	ctx := ctxT(t)
	regs := regmap.New(bus, m, "b0")
	upDCN(t, ctx, regs)
	c := pmos.NewClient(pmos.ClientConfig{})
	defer c.Close()
	if _, err := c.AddMailbox(ctx, bus, m, "b0"); err != nil {
		t.Fatal(err)
	}
	c.Listen(true)
	dna := map[string]uint32{}
	for len(dna) < 1 {
		rel := <-c.Relays()
		dna[rel.Discover.Name] = rel.Discover.DNA
	}
	if _, err := c.Assign(ctx, pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1}, dna["b1"], 2); err != nil {
		t.Fatal(err)
	}
	b1 := c.Bus("b1", pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1})
	if _, err := b1.Do(ctx, []pmos.RegOp{{Op: pmos.OpWrite, Addr: 0xF0000200, Value: 0x80000000}, {Op: pmos.OpWrite, Addr: 0xF0000084, Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := regs.Write(ctx, "ROUTE[1]", 0x80010002); err != nil {
		t.Fatal(err)
	}
	var rel pmos.Relayed
	for rel.Discover.Name != "b2" {
		select {
		case rel = <-c.Relays():
		case <-ctx.Done():
			t.Fatal("no RELAY of b2 through b1")
		}
	}
	c.Listen(false)
	if rel.Proxy != 2 || rel.ProxyPort != 1 {
		t.Fatalf("b2 relayed by 0x%04x port %d, want b1 (0x0002) port 1", rel.Proxy, rel.ProxyPort)
	}
	a, err := c.Assign(ctx, pmos.Path{Kind: pmos.PathProxy, Via: "b0", Proxy: 2, Port: 1}, rel.Discover.DNA, 3)
	if err != nil || a.Port != 0 {
		t.Fatalf("ASSIGN through b1: %+v %v", a, err)
	}
}

// A request to a port with nobody at the other end ends in an ERROR, not a
// hang; a board that never boots is not relayed and does not answer.
func TestClientReportsErrorsAndSilence(t *testing.T) {
	_, bus, m := chain(t, 2, labconfig.Fault{Name: "mgmt-never-boots", Board: "b1"})
	ctx := ctxT(t)
	regs := regmap.New(bus, m, "b0")
	upDCN(t, ctx, regs)
	c := pmos.NewClient(pmos.ClientConfig{TimeoutNS: 8_000_000, Retries: 1})
	defer c.Close()
	if _, err := c.AddMailbox(ctx, bus, m, "b0"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Registers(ctx, pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1}, []pmos.RegOp{{Op: pmos.OpRead, Addr: 0xF0000000}})
	var re *pmos.ReplyError
	var na *pmos.NoAnswerError
	switch {
	case errors.As(err, &re):
		if re.Code != pmos.ErrCodePortDown {
			t.Errorf("ERROR %v, want PORT_DOWN", re)
		}
	case errors.As(err, &na):
	default:
		t.Fatalf("a request to a board that never booted: %v", err)
	}
	if _, err := c.Registers(ctx, pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 2}, []pmos.RegOp{{Op: pmos.OpRead, Addr: 0xF0000000}}); err == nil {
		t.Fatal("a request out of an uncabled port was answered")
	}
}

// assignB1 gives b1 address 2 through b0's firmware, so that it stops
// sending a DISCOVER every millisecond: the runner's raw-port endpoint acks
// at the pace of the register bus, far slower than the firmware's 250 µs
// retransmissions, and a stream of DISCOVERs would keep its FIFO flooded.
func assignB1(t testing.TB, ctx context.Context, bus drivers.RegisterBus, m *bitstreams.Manifest) {
	t.Helper()
	c := pmos.NewClient(pmos.ClientConfig{})
	defer c.Close()
	if _, err := c.AddMailbox(ctx, bus, m, "b0"); err != nil {
		t.Fatal(err)
	}
	c.Listen(true)
	var rel pmos.Relayed
	select {
	case rel = <-c.Relays():
	case <-ctx.Done():
		t.Fatal("no RELAY of b1")
	}
	c.Listen(false)
	if _, err := c.Assign(ctx, pmos.Path{Kind: pmos.PathPort, Via: "b0", Port: 1}, rel.Discover.DNA, 2); err != nil {
		t.Fatal(err)
	}
}

// The runner's own PMOS endpoint speaks to b1's firmware through b0's port
// in RAW mode (pmos.md §6): a REG_REQ goes out as PMOS words and the REG_RESP
// comes back as words, both ways through the raw FIFOs.
func TestEndpointTalksToTheFirmwareThroughARawPort(t *testing.T) {
	_, bus, m := chain(t, 2)
	ctx := ctxT(t)
	regs := regmap.New(bus, m, "b0")
	upDCN(t, ctx, regs)
	assignB1(t, ctx, bus, m)
	raw, err := pmos.NewRawPort(ctx, bus, m, "b0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	body, _ := pmos.RegReqBody([]pmos.RegOp{{Op: pmos.OpRead, Addr: 0xF0000000}, {Op: pmos.OpRead, Addr: 0xF0000010}})
	req, _ := pmos.Msg{Type: pmos.MsgRegReq, TTL: 16, Dst: pmos.AddrLinkLocal, Src: pmos.AddrController, Tag: 0x4242, Body: body}.Marshal()
	if err := raw.Send(req); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i := 0; got == nil; i++ {
		if i > 400 {
			t.Fatalf("no answer through the raw port (stats %+v)", raw.Stats())
		}
		if err := raw.Pump(ctx); err != nil {
			t.Fatal(err)
		}
		for {
			p, ok := raw.Recv()
			if !ok {
				break
			}
			if msg, err := pmos.ParseMsg(p); err == nil && msg.Type == pmos.MsgRegResp && msg.Tag == 0x4242 {
				got = p
			}
		}
	}
	msg, _ := pmos.ParseMsg(got)
	rs, err := pmos.ParseRegResp(msg)
	if err != nil || len(rs) != 2 || rs[0].Value != 0x4D474D54 || rs[1].Value != 4 {
		t.Fatalf("REG_RESP %+v %v", rs, err)
	}
	if !bytes.Equal(got[2:4], []byte{0xFF, 0xFE}) {
		t.Errorf("answer not addressed to the controller: % x", got[:8])
	}
}

// BenchmarkPMOSGoodputRawPort measures PMOS goodput through the runner's
// endpoint over an emulated cable, b0's port in RAW mode to b1's firmware
// (ECHO_REQ of size bytes out, ECHO_REPLY back), as a fraction of the MOS
// data rate (6 bytes per 2.62144 µs), in emulated time from the boards'
// CYCLES counter. Every raw word costs two 50 µs register accesses
// (mgmt.md §2), so the register bus, not the cable, bounds it; a 232-byte
// echo's 41-word reply is not read whole before the firmware gives up on it
// (RawPort.Pump), so the sizes stop at 112.
func BenchmarkPMOSGoodputRawPort(b *testing.B) {
	for _, size := range []int{16, 64, 112} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			_, bus, m := chain(b, 2)
			ctx := ctxT(b)
			regs := regmap.New(bus, m, "b0")
			upDCN(b, ctx, regs)
			assignB1(b, ctx, bus, m)
			raw, err := pmos.NewRawPort(ctx, bus, m, "b0", 1)
			if err != nil {
				b.Fatal(err)
			}
			t0, err := regs.Read64(ctx, "CYCLES_LO")
			if err != nil {
				b.Fatal(err)
			}
			var delivered int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				body := bytes.Repeat([]byte{byte(i)}, size)
				req, _ := pmos.Msg{Type: pmos.MsgEchoReq, TTL: 16, Dst: pmos.AddrLinkLocal, Src: pmos.AddrController, Tag: uint16(0x2000 + i), Body: body}.Marshal()
				for raw.Send(req) != nil {
					if err := raw.Pump(ctx); err != nil {
						b.Fatal(err)
					}
				}
				for done := false; !done; {
					if err := raw.Pump(ctx); err != nil {
						b.Fatal(err)
					}
					for {
						p, ok := raw.Recv()
						if !ok {
							break
						}
						if msg, err := pmos.ParseMsg(p); err == nil && msg.Type == pmos.MsgEchoReply && msg.Tag == uint16(0x2000+i) {
							delivered += len(p)
							done = true
						}
					}
				}
			}
			b.StopTimer()
			t1, _ := regs.Read64(ctx, "CYCLES_LO")
			ns := float64(t1-t0) * 2.5
			b.ReportMetric(float64(delivered)/(ns/float64(pmos.PeriodPS/1000)*pmos.WordData), "goodput/mos")
			raw.Close(ctx)
		})
	}
}

// BenchmarkPMOSGoodputMailbox measures PMOS goodput over an emulated cable
// between two DCN boards whose ports are in PACKET mode (mgmt.md §5): the
// firmware runs PMOS on the cable, the runner's mailbox sends each payload
// from b0's mailbox and takes it from b1's. Two figures, both as a fraction
// of the MOS data rate (6 bytes per MOS slot, pmos.md §1.2):
//
//   - goodput/mos: payload bytes over the MOS capacity the sending port
//     spent on them (MOS_TX_WORDS x 6 bytes: data words, retransmissions and
//     all): what PMOS delivers when the cable is the bottleneck. The theory
//     for a clean cable is L / (6 ceil((L+6)/6)): 0.976 at 240 bytes, 0.889
//     at 64 (pmos.md §3.4).
//   - e2e/mos: payload bytes over the management time elapsed, mailbox
//     bursts included: the mailbox, one 50 µs access per word at each end
//     (mgmt.md §2), feeds the cable far slower than it carries.
func BenchmarkPMOSGoodputMailbox(b *testing.B) {
	for _, c := range []struct {
		name   string
		faults []labconfig.Fault
	}{{"clean", nil}, {"loss1pct", []labconfig.Fault{{Name: "mos-lossy", Link: "b0:sfp1", Params: labconfig.Params{"rate": labconfig.Param{Values: []string{"0.01"}}}}}}} {
		for _, size := range []int{64, 240} {
			b.Run(fmt.Sprintf("%s/%dB", c.name, size), func(b *testing.B) {
				r, bus0, m := chainDCN(b, 2, 2, c.faults...)
				bus1, err := r.Bus("b1")
				if err != nil {
					b.Fatal(err)
				}
				ctx := ctxT(b)
				r0, r1 := regmap.New(bus0, m, "b0"), regmap.New(bus1, m, "b1")
				for _, w := range []struct {
					r   *regmap.Regs
					reg string
					v   uint32
				}{{r0, "DELAY_US", 3000}, {r0, "MY_ADDR", 1}, {r1, "MY_ADDR", 2}, {r0, "PORT_MODE[1]", 1}, {r1, "PORT_MODE[0]", 1}} {
					if err := w.r.Write(ctx, w.reg, w.v); err != nil {
						b.Fatal(err)
					}
				}
				tx, err := pmos.NewMailbox(bus0, m, "b0")
				if err != nil {
					b.Fatal(err)
				}
				rx, err := pmos.NewMailbox(bus1, m, "b1")
				if err != nil {
					b.Fatal(err)
				}
				t0, err := r0.Read64(ctx, "CYCLES_LO")
				if err != nil {
					b.Fatal(err)
				}
				w0, err := r0.Read(ctx, "MOS_TX_WORDS[1]")
				if err != nil {
					b.Fatal(err)
				}
				delivered := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p := bytes.Repeat([]byte{byte(i + 1)}, size)
					if _, err := tx.SendChecked(ctx, 1, p); err != nil {
						b.Fatal(err)
					}
					for {
						got, ok, err := rx.Receive(ctx, pmos.ReceiveOptions{})
						if err != nil {
							b.Fatal(err)
						}
						if ok {
							if !bytes.Equal(got.Bytes, p) || got.Port != 0 {
								b.Fatalf("payload %d arrived as % x on port %d", i, got.Bytes[:8], got.Port)
							}
							delivered += len(p)
							break
						}
					}
				}
				b.StopTimer()
				t1, _ := r0.Read64(ctx, "CYCLES_LO")
				w1, err := r0.Read(ctx, "MOS_TX_WORDS[1]")
				if err != nil || w1 == w0 {
					b.Fatalf("MOS_TX_WORDS[1] %d -> %d (%v)", w0, w1, err)
				}
				ns := float64(t1-t0) * 2.5
				b.ReportMetric(float64(delivered)/(float64(w1-w0)*pmos.WordData), "goodput/mos")
				b.ReportMetric(float64(delivered)/(ns/float64(pmos.PeriodPS/1000)*pmos.WordData), "e2e/mos")
			})
		}
	}
}
