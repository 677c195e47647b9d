package pmos

import (
	"context"
	"fmt"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// RawPort is the runner speaking PMOS itself through a port of a DCN board
// in RAW mode (mgmt.md §5, pmos.md §6): the board's PMOS is off on that port,
// every MOS word the cable brings lands in the port's raw receive FIFO and
// only the words the runner writes into the raw transmit FIFO go out. The
// runner's Endpoint is then the peer of the firmware at the other end.
type RawPort struct {
	Board string
	Port  int
	regs  *regmap.Regs
	bus   drivers.RegisterBus
	ep    *Endpoint
	clk   *regmap.Regs
	tx    uint64 // MOS_TX[port]
	rx    uint64 // MOS_RX[port]
	// raw transmit FIFO depth (mgmt.md §5: 64 words)
	txDepth int
}

// NewRawPort puts port of board in RAW mode and returns the runner's
// endpoint on it. The endpoint's retransmission timeout is generous: every
// word reaches the cable through two register accesses.
func NewRawPort(ctx context.Context, bus drivers.RegisterBus, mgmt *bitstreams.Manifest, board string, port int) (*RawPort, error) {
	regs := regmap.New(bus, mgmt, board)
	p := &RawPort{Board: board, Port: port, regs: regs, bus: bus, txDepth: 64,
		ep: NewEndpoint(EndpointConfig{RTOPS: 5_000 * 1_000_000, QueueLimit: 64, InboxLimit: 64, Session: 0x80})}
	for _, r := range []struct {
		name string
		dst  *uint64
	}{{fmt.Sprintf("MOS_TX[%d]", port), &p.tx}, {fmt.Sprintf("MOS_RX[%d]", port), &p.rx}} {
		loc, err := regs.Lookup(r.name)
		if err != nil {
			return nil, err
		}
		*r.dst = loc.Addr
	}
	if err := regs.Write(ctx, fmt.Sprintf("PORT_MODE[%d]", port), 2); err != nil {
		return nil, fmt.Errorf("%s: put port %d in RAW mode: %w", board, port, err)
	}
	return p, nil
}

// Close gives the port back to the firmware.
func (p *RawPort) Close(ctx context.Context) error {
	return p.regs.Write(ctx, fmt.Sprintf("PORT_MODE[%d]", p.Port), 0)
}

// Send queues a message (one PMOS DATA frame of 1..240 bytes).
func (p *RawPort) Send(msg []byte) error { return p.ep.Send(msg) }

// Recv pops a delivered message.
func (p *RawPort) Recv() ([]byte, bool) { return p.ep.Recv() }

// Stats are the endpoint's counters.
func (p *RawPort) Stats() EndpointStats { return p.ep.Stats() }

// Pump moves words once each way: it reads the time (CYCLES), pops at most
// 32 words (one burst) from the raw receive FIFO into the endpoint, and fills the raw
// transmit FIFO with what the endpoint has to send, an ACK first. When
// nothing moved it lets 50 µs of management time pass.
//
// Every word costs two register accesses (mgmt.md §2: 50 µs each), far
// slower than the cable: the firmware at the other end retransmits after
// 250 µs and gives up after 13 timeouts without progress (about 4.6 ms for
// a 41-word frame), so the receive side reads one burst and acknowledges
// before the next. A frame of more than about 36 words (a payload over about
// 210 bytes) cannot be read whole before the firmware gives up.
func (p *RawPort) Pump(ctx context.Context) error {
	cyc, err := p.regs.Read64(ctx, "CYCLES_LO")
	if err != nil {
		return err
	}
	now := int64(cyc) * 2500 // 400 MHz: 2.5 ns a cycle, in ps
	moved := false
	level, err := p.regs.Read(ctx, fmt.Sprintf("RAW_RX_LEVEL[%d]", p.Port))
	if err != nil {
		return err
	}
	if level > 0 {
		n := min(int(level), 32)
		buf := make([]uint32, 2*n)
		if err := p.bus.ReadBurst(ctx, p.rx, buf); err != nil {
			return fmt.Errorf("%s: pop %d raw words of port %d: %w", p.Board, n, p.Port, err)
		}
		for i := 0; i < n; i++ {
			p.ep.Receive(WordFromHalves(buf[2*i], buf[2*i+1]), now)
		}
		moved = true
	}
	txLevel, err := p.regs.Read(ctx, fmt.Sprintf("RAW_TX_LEVEL[%d]", p.Port))
	if err != nil {
		return err
	}
	var out []uint32
	for free := p.txDepth - int(txLevel); free > 0 && len(out) < 32; free-- {
		w, ok := p.ep.NextWord(now)
		if !ok {
			break
		}
		hi, lo := w.Halves()
		out = append(out, hi, lo)
	}
	if len(out) > 0 {
		if err := p.bus.WriteBurst(ctx, p.tx, out); err != nil {
			return fmt.Errorf("%s: queue %d raw words on port %d: %w", p.Board, len(out)/2, p.Port, err)
		}
		moved = true
	}
	if !moved {
		return p.regs.Write(ctx, "DELAY_US", 50)
	}
	return nil
}

// Pending is the number of messages the runner's endpoint holds.
func (p *RawPort) Pending() int { return p.ep.Pending() }
