// Package exanet drives the ExaNet design's self-test IPs through its
// registers (bitstreams/catalogue/exanet.yaml, docs/exanet.md): router
// configuration, the Traffic Generator, Consumer and Performance Counter of
// ExaNet §4.3, the KARMA ping-pong of §4.2, router traces and the intra-tile
// port FIFOs. It works the same on real boards and on the emulated rack: it
// only reads and writes registers, and polls with deadlines.
package exanet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// Coord is a node's position in the lattice.
type Coord [3]int

func (c Coord) String() string { return fmt.Sprintf("(%d,%d,%d)", c[0], c[1], c[2]) }

// Word packs the coordinate as COORD/TG_DEST lay it out: X[7:0] Y[15:8] Z[23:16].
func (c Coord) Word() uint32 {
	return uint32(c[0]&0xff) | uint32(c[1]&0xff)<<8 | uint32(c[2]&0xff)<<16
}

// CoordOf unpacks a coordinate word.
func CoordOf(w uint32) Coord { return Coord{int(w & 0xff), int(w >> 8 & 0xff), int(w >> 16 & 0xff)} }

// Direction codes of LINK_DIR.
const (
	DirNone = 0
	DirXp   = 1
	DirXm   = 2
	DirYp   = 3
	DirYm   = 4
	DirZp   = 5
	DirZm   = 6
)

// DirectionTo returns the LINK_DIR code of the cable from a to its
// neighbour b (which must differ in exactly one coordinate, by one).
func DirectionTo(a, b Coord) (int, error) {
	diff, dim := 0, -1
	for i := 0; i < 3; i++ {
		if a[i] != b[i] {
			if dim >= 0 {
				return 0, fmt.Errorf("nodes %s and %s differ in more than one dimension: not neighbours in a mesh", a, b)
			}
			dim, diff = i, b[i]-a[i]
		}
	}
	if dim < 0 {
		return 0, fmt.Errorf("a cable from %s to itself", a)
	}
	if diff != 1 && diff != -1 {
		return 0, fmt.Errorf("nodes %s and %s are %d apart: not neighbours in a mesh", a, b, diff)
	}
	code := DirXp + 2*dim
	if diff < 0 {
		code++
	}
	return code, nil
}

// OrderWord encodes a dimension order like "XYZ" or "ZYX" for DOR_ORDER.
func OrderWord(order string) (uint32, error) {
	if len(order) != 3 {
		return 0, fmt.Errorf("dimension order %q: write three letters, a permutation of XYZ", order)
	}
	seen := map[byte]bool{}
	var w uint32
	for i := 0; i < 3; i++ {
		c := order[i] | 0x20 // lower case
		var d uint32
		switch c {
		case 'x':
			d = 0
		case 'y':
			d = 1
		case 'z':
			d = 2
		default:
			return 0, fmt.Errorf("dimension order %q: %q is not X, Y or Z", order, order[i])
		}
		if seen[c] {
			return 0, fmt.Errorf("dimension order %q names a dimension twice", order)
		}
		seen[c] = true
		w |= d << (2 * i)
	}
	return w, nil
}

// Config is what the runner writes into a router before traffic flows
// (ExaNet §4: the Target Controller sets coordinates and lattice size).
type Config struct {
	Coord   Coord
	Lattice Coord
	Order   string
	// LinkDir[i] is the direction link port i serves (DirNone if unused).
	LinkDir [2]int
}

// Configure programs the router and checks that it took the values.
func Configure(ctx context.Context, r *regmap.Regs, c Config) error {
	ow, err := OrderWord(c.Order)
	if err != nil {
		return err
	}
	writes := []struct {
		name string
		v    uint32
	}{
		{"COORD", c.Coord.Word()},
		{"LATTICE", c.Lattice.Word()},
		{"DOR_ORDER", ow},
		{"LINK_DIR", uint32(c.LinkDir[0]&0xf) | uint32(c.LinkDir[1]&0xf)<<4},
	}
	for _, w := range writes {
		if err := r.Write(ctx, w.name, w.v); err != nil {
			return err
		}
		got, err := r.Read(ctx, w.name)
		if err != nil {
			return err
		}
		if got != w.v {
			return fmt.Errorf("%s: wrote 0x%x, read back 0x%x", w.name, w.v, got)
		}
	}
	return nil
}

// Poll reads a register until cond holds or the context ends. The pause
// grows from 1 ms to 50 ms: fast on a board that finishes at once, gentle on
// a slow bridge.
func Poll(ctx context.Context, r *regmap.Regs, name string, cond func(uint32) bool) (uint32, error) {
	pause := time.Millisecond
	for {
		v, err := r.Read(ctx, name)
		if err != nil {
			return v, err
		}
		if cond(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, drivers.Stalled(ctx, fmt.Sprintf("waiting for %s (last 0x%x)", name, v))
		case <-time.After(pause):
		}
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}

// Generate is one Traffic Generator run.
type Generate struct {
	SrcPorts uint32 // mask of intra-tile ports that inject
	Dest     Coord
	DestPort int
	Payload  int // bytes, 1..512
	Count    int // packets per injecting port
	Trace    bool
}

// TGStatus bits.
const (
	TGDone    = 1 << 0
	TGBusy    = 1 << 1
	TGStalled = 1 << 2
)

// StartTG programs and starts the generator of one board.
func StartTG(ctx context.Context, r *regmap.Regs, g Generate) error {
	if g.Payload < 1 || g.Payload > 512 {
		return fmt.Errorf("payload %d B: ExaNet packets carry 1..512 bytes (§3.2)", g.Payload)
	}
	for _, w := range []struct {
		name string
		v    uint32
	}{
		{"TG_CTRL", 1 << 2}, // clear counters
		{"TG_SRC_PORTS", g.SrcPorts},
		{"TG_DEST", g.Dest.Word() | uint32(g.DestPort&3)<<24},
		{"TG_PAYLOAD", uint32(g.Payload)},
		{"TG_COUNT", uint32(g.Count)},
	} {
		if err := r.Write(ctx, w.name, w.v); err != nil {
			return err
		}
	}
	ctrl := uint32(1)
	if g.Trace {
		ctrl |= 1 << 1
	}
	return r.Write(ctx, "TG_CTRL", ctrl)
}

// WaitTG waits until the generator is done or stalled and returns its status.
func WaitTG(ctx context.Context, r *regmap.Regs) (uint32, error) {
	return Poll(ctx, r, "TG_STATUS", func(v uint32) bool { return v&(TGDone|TGStalled) != 0 })
}

// ClearConsumer clears the consumer's and the performance counter's
// counters and sets whether the consumer flushes the RX FIFOs.
func ClearConsumer(ctx context.Context, r *regmap.Regs, enable bool) error {
	v := uint32(1 << 1)
	if enable {
		v |= 1
	}
	return r.Write(ctx, "CONS_CTRL", v)
}

// Perf is what the consumer side counted.
type Perf struct {
	Cycles       uint64 // first to last payload word consumed, inclusive
	Bytes        uint32
	Packets      uint32
	ConsPackets  uint32
	CRCErrors    uint32
	HdrErrors    uint32
	Misdelivered uint32
}

// ReadPerf reads the Performance Counter and the Consumer.
func ReadPerf(ctx context.Context, r *regmap.Regs) (Perf, error) {
	var p Perf
	var err error
	if p.Cycles, err = r.Read64(ctx, "PC_CYCLES_LO"); err != nil {
		return p, err
	}
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"PC_BYTES", &p.Bytes}, {"PC_PACKETS", &p.Packets}, {"CONS_PACKETS", &p.ConsPackets},
		{"CONS_CRC_ERRORS", &p.CRCErrors}, {"CONS_HDR_ERRORS", &p.HdrErrors}, {"CONS_MISDELIVERED", &p.Misdelivered},
	} {
		if *f.dst, err = r.Read(ctx, f.name); err != nil {
			return p, err
		}
	}
	return p, nil
}

// LinkState is one APElink's status and counters.
type LinkState struct {
	Up, CreditStall, RemoteFault bool
	Credits, CreditMax           uint32
	Threshold                    uint32
	TxPackets, RxPackets         uint32
	StallCycles                  uint32
}

// ReadLink reads link port i's status without side effects (error counters,
// which clear on read, are left alone).
func ReadLink(ctx context.Context, r *regmap.Regs, i int) (LinkState, error) {
	var s LinkState
	st, err := r.Read(ctx, fmt.Sprintf("LINK_STATUS[%d]", i))
	if err != nil {
		return s, err
	}
	s.Up, s.CreditStall, s.RemoteFault = st&1 != 0, st&2 != 0, st&4 != 0
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"CREDITS", &s.Credits}, {"CREDIT_MAX", &s.CreditMax}, {"CREDIT_THRESHOLD", &s.Threshold},
		{"LINK_TX_PACKETS", &s.TxPackets}, {"LINK_RX_PACKETS", &s.RxPackets}, {"LINK_STALL_CYCLES", &s.StallCycles},
	} {
		if *f.dst, err = r.Read(ctx, fmt.Sprintf("%s[%d]", f.name, i)); err != nil {
			return s, err
		}
	}
	return s, nil
}

// LinkErrors are one APElink receiver's error counters since they were
// last read (they clear on read, and saturate).
type LinkErrors struct {
	CRC, ECCCorrected, ECCUncorrectable uint32
}

// ReadLinkErrors reads, and so clears, link port i's error counters.
func ReadLinkErrors(ctx context.Context, r *regmap.Regs, i int) (LinkErrors, error) {
	var e LinkErrors
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"LINK_CRC_ERRORS", &e.CRC}, {"LINK_ECC_CORRECTED", &e.ECCCorrected}, {"LINK_ECC_UNCORRECTABLE", &e.ECCUncorrectable},
	} {
		v, err := r.Read(ctx, fmt.Sprintf("%s[%d]", f.name, i))
		if err != nil {
			return e, err
		}
		*f.dst = v
	}
	return e, nil
}

// PingPong is one KARMA ping-pong run's result.
type PingPong struct {
	Iterations int
	Samples    []uint32 // round trips in the initiator's cycles
	Min, Max   uint32
	Sum        uint64
	TimedOut   bool
}

// PP_STATUS bits.
const (
	PPDone    = 1 << 0
	PPBusy    = 1 << 1
	PPTimeout = 1 << 2
)

// RunPingPong makes iters round trips of payload bytes from initiator a to
// the node at dest (whose responder must be on), and reads the samples.
func RunPingPong(ctx context.Context, a *regmap.Regs, dest Coord, port, payload, iters int) (PingPong, error) {
	var res PingPong
	if iters < 1 || iters > 1024 {
		return res, fmt.Errorf("ping-pong iterations %d: the engine keeps 1..1024 samples", iters)
	}
	// The set-up in one batch, and the results in two (docs/uart-bridge.md,
	// "Window": one round trip each on a UART bridge that has one).
	setup := a.Batch().Write("PP_CTRL", 1<<1).Write("PP_DEST", dest.Word()|uint32(port&3)<<24).
		Write("PP_PAYLOAD", uint32(payload)).Write("PP_ITER", uint32(iters)).Write("PP_CTRL", 1)
	if err := unbatched(setup.Run(ctx)); err != nil {
		return res, err
	}
	st, err := Poll(ctx, a, "PP_STATUS", func(v uint32) bool { return v&(PPDone|PPTimeout) != 0 })
	if err != nil {
		return res, err
	}
	res.TimedOut = st&PPTimeout != 0
	var n, cnt uint32
	sums := a.Batch().Read("PP_DONE_ITERS", &n).Read("PP_RTT_MIN", &res.Min).Read("PP_RTT_MAX", &res.Max).
		Read64("PP_RTT_SUM_LO", &res.Sum).Read("PP_SAMPLE_COUNT", &cnt)
	if err := unbatched(sums.Run(ctx)); err != nil {
		return res, err
	}
	res.Iterations = int(n)
	if cnt > 0 {
		res.Samples = make([]uint32, cnt)
		// PP_SAMPLES is a pop register at one address: read it cnt times.
		pops := a.Batch()
		for i := range res.Samples {
			pops.Read("PP_SAMPLES", &res.Samples[i])
		}
		if err := unbatched(pops.Run(ctx)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// unbatched is a batch's error as the single access would have given it.
func unbatched(err error) error {
	var be *drivers.BatchError
	if errors.As(err, &be) {
		return be.Err
	}
	return err
}

// TraceEntry is one router's record of a traced packet.
type TraceEntry struct {
	Tag     uint32
	InPort  int // 0-2 intra-tile, 3-4 links 0-1
	OutPort int
	VC      int
	Cycle   uint32
	Coord   Coord
}

// ReadTrace drains a router's trace FIFO.
func ReadTrace(ctx context.Context, r *regmap.Regs) ([]TraceEntry, error) {
	n, err := r.Read(ctx, "TRACE_COUNT")
	if err != nil {
		return nil, err
	}
	out := make([]TraceEntry, 0, n)
	all := make([]uint32, 4*n)
	b := r.Batch()
	for i := range all {
		b.Read("TRACE_DATA", &all[i])
	}
	if err := b.Run(ctx); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) {
			// The entries before the failing word are whole.
			for i := 0; i < be.Index/4; i++ {
				out = append(out, traceEntry([4]uint32(all[4*i:4*i+4])))
			}
			return out, be.Err
		}
		return out, err
	}
	for i := uint32(0); i < n; i++ {
		out = append(out, traceEntry([4]uint32(all[4*i:4*i+4])))
	}
	return out, nil
}

// traceEntry decodes one TRACE_DATA record.
func traceEntry(w [4]uint32) TraceEntry {
	return TraceEntry{
		Tag: w[0], InPort: int(w[1] & 0xf), OutPort: int(w[1] >> 4 & 0xf), VC: int(w[1] >> 8 & 1),
		Cycle: w[2], Coord: CoordOf(w[3]),
	}
}

// Header is the 128-bit packet header as software sees it at the intra-tile
// ports (docs/exanet.md).
type Header struct {
	Dest     Coord
	DestPort int
	Src      Coord
	SrcPort  int
	Length   int
	Type     int
	Trace    bool
	CRCErr   bool
	ECCFixed bool
	Tag      uint32
}

// Words encodes the header.
func (h Header) Words() [4]uint32 {
	w2 := uint32(h.Length&0x3ff) | uint32(h.Type&0xf)<<12
	if h.Trace {
		w2 |= 1 << 16
	}
	return [4]uint32{
		h.Dest.Word() | uint32(h.DestPort&3)<<24,
		h.Src.Word() | uint32(h.SrcPort&3)<<24,
		w2,
		h.Tag,
	}
}

// ParseHeader decodes header words read from an RX port.
func ParseHeader(w [4]uint32) Header {
	return Header{
		Dest: CoordOf(w[0]), DestPort: int(w[0] >> 24 & 3),
		Src: CoordOf(w[1]), SrcPort: int(w[1] >> 24 & 3),
		Length: int(w[2] & 0x3ff), Type: int(w[2] >> 12 & 0xf), Trace: w[2]>>16&1 != 0,
		CRCErr: w[2]>>24&1 != 0, ECCFixed: w[2]>>25&1 != 0,
		Tag: w[3],
	}
}

// addr resolves a register name to its address.
func addr(r *regmap.Regs, name string) (uint64, error) {
	loc, err := r.Lookup(name)
	if err != nil {
		return 0, err
	}
	return loc.Addr, nil
}

// SendPacket writes one packet into intra-tile port p's TX FIFOs, the way
// the KARMA software does (§4): payload words first, then the header, whose
// fourth word queues the packet.
func SendPacket(ctx context.Context, r *regmap.Regs, p int, h Header, payload []byte) error {
	words := make([]uint32, (len(payload)+3)/4)
	for i, b := range payload {
		words[i/4] |= uint32(b) << (8 * (i % 4))
	}
	base, err := addr(r, fmt.Sprintf("PORT_TX_DATA[%d]", p))
	if err != nil {
		return err
	}
	hb, err := addr(r, fmt.Sprintf("PORT_TX_HDR[%d]", p))
	if err != nil {
		return err
	}
	// One batch, in the same order: every payload word into the FIFO's one
	// address, then the header's four words.
	b := r.Batch()
	for _, w := range words {
		b.WriteAddr(base, w)
	}
	for i, w := range h.Words() {
		b.WriteAddr(hb+uint64(4*i), w)
	}
	return unbatched(b.Run(ctx))
}

// ReceivePacket reads the next packet waiting at intra-tile port p, or
// returns ok=false when none is waiting.
func ReceivePacket(ctx context.Context, r *regmap.Regs, p int) (h Header, payload []byte, ok bool, err error) {
	st, err := r.Read(ctx, fmt.Sprintf("PORT_RX_STATUS[%d]", p))
	if err != nil {
		return h, nil, false, err
	}
	if st>>16 == 0 {
		return h, nil, false, nil
	}
	hb, err := addr(r, fmt.Sprintf("PORT_RX_HDR[%d]", p))
	if err != nil {
		return h, nil, false, err
	}
	var hw [4]uint32
	b := r.Batch()
	for i := range hw {
		b.ReadAddr(hb+uint64(4*i), hw[i:])
	}
	if err := unbatched(b.Run(ctx)); err != nil {
		return h, nil, false, err
	}
	h = ParseHeader(hw)
	db, err := addr(r, fmt.Sprintf("PORT_RX_DATA[%d]", p))
	if err != nil {
		return h, nil, false, err
	}
	n := (h.Length + 3) / 4
	words := make([]uint32, n)
	b = r.Batch()
	for i := range words {
		b.ReadAddr(db, words[i:])
	}
	if err := unbatched(b.Run(ctx)); err != nil {
		return h, nil, false, err
	}
	payload = make([]byte, 0, n*4)
	for _, w := range words {
		payload = append(payload, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return h, payload[:h.Length], true, nil
}
