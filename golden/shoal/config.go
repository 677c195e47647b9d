package shoal

import (
	"fmt"
	"math"
)

// Figures of the paper that the two configurations are built from.
const (
	// CycleNS is the prototype's clock period: 156.25 MHz (Shoal §4).
	CycleNS = 6.4
	// HeaderBytes is the cell header of Fig. 5 (Shoal §3.3.1, §7.3: goodput
	// "after accounting for the 8 B cell header overhead").
	HeaderBytes = 8
	// SwitchCycles is the prototype circuit switch's port-to-port latency:
	// PHY 45 + switching 1 + synchronisation FIFO 4 cycles (Shoal §4.1).
	SwitchCycles = 50
	// PrototypeWireNS, PrototypeNICNS and PrototypeSwitchHops make up the
	// prototype's node-to-node cell propagation latency of 1.57 µs: 40 ns of
	// wire, 3 switches of 320 ns, 576 ns of MAC and PHY at the two end nodes
	// (Shoal §6.2).
	PrototypeWireNS     = 40.0
	PrototypeNICNS      = 576.0
	PrototypeSwitchHops = 3
	// RackPropNS is the propagation latency used for the simulated rack: the
	// longest wire across a rack, 10-15 ns at 5 ns/m (Shoal §3.4). §7 does not
	// state a switching latency for the simulated circuit switches; a layer-0
	// switch "imposes no latency overhead" (§3.5), so none is added.
	RackPropNS = 15.0
	// NICTxCycles and NICRxCycles are the prototype NIC's routing and
	// congestion-control pipelines on its transmit and receive paths (Shoal
	// §4.2: "only adding 4 and 5 cycles"). Rate-limit feedback crosses both:
	// the receive path takes it out of the reply's header, and the transmit
	// path picks a slot's cell that many cycles before the slot (reading S2).
	NICTxCycles = 4
	NICRxCycles = 5
)

// Config is a Shoal rack: its nodes and fabric, and the slot arithmetic of
// §3.4. Times are in nanoseconds, rates in Gb/s (bits per nanosecond).
type Config struct {
	// Name is "prototype" (§6.1), "rack" (§7.1) or "custom".
	Name string
	// Nodes is the number of rack nodes N.
	Nodes int
	// Radix is the port count k of each circuit switch of the two-stage
	// leaf-spine fabric: k/2 ports of a leaf face nodes, k/2 face spines
	// (§3.2, Fig. 2).
	Radix int
	// Channels is the number of independently switched channels per node
	// link, each with its own fabric (§3.4: 100 Gb/s = 4x25 Gb/s).
	Channels int
	// ChannelGbps is one channel's line rate.
	ChannelGbps float64
	// CycleNS is the clock period when slots are counted in cycles (the
	// prototype, §4); 0 otherwise.
	CycleNS float64
	// SlotNS is the slot length including the guard band.
	SlotNS float64
	// GuardNS is the guard band (§3.4).
	GuardNS float64
	// ReconfigNS is the part of the guard band spent reconfiguring the
	// switches (§4.1, §7.1).
	ReconfigNS float64
	// SyncNS is the largest clock offset between nodes the guard band
	// tolerates (§6.1: "less than a clock cycle"; §7.1: 0.25 ns for
	// propagation variability and synchronisation imprecision).
	SyncNS float64
	// MACOverheadNS is the per-slot MAC overhead that carries no cell bytes
	// (§6.1: 24 B = 3 cycles of Altera MAC overhead).
	MACOverheadNS float64
	// PropNS is the node-to-node cell propagation latency (§6.2).
	PropNS float64
	// PipelineNS is the time rate-limit feedback spends in the NICs'
	// routing and congestion-control logic on top of PropNS: the receive
	// path of the node that gets it and the transmit path of its next cell
	// (§4.2; prototype (5 + 4) x 6.4 = 57.6 ns; the rack 0, reading S2).
	PipelineNS float64
	// Schedule is the fabric schedule: Cyclic (§3.2, Fig. 3) or Propagation
	// aware (Appendix A, Fig. 19).
	Schedule ScheduleKind
}

// Prototype returns the 8-node FPGA prototype of §6.1: eight NICs on 10 Gb/s
// SFP+ ports, six 4-port circuit switches in a leaf-spine (Fig. 8), 156.25
// MHz clock, a 12-cycle slot of 1 guard cycle, 3 cycles of MAC overhead and
// 8 usable cycles (64 B cells), node-to-node latency 1.576 µs (§6.2).
func Prototype() Config {
	return Config{
		Name:          "prototype",
		Nodes:         8,
		Radix:         4,
		Channels:      1,
		ChannelGbps:   10,
		CycleNS:       CycleNS,
		SlotNS:        12 * CycleNS,
		GuardNS:       1 * CycleNS,
		ReconfigNS:    1 * CycleNS,
		SyncNS:        1 * CycleNS,
		MACOverheadNS: 3 * CycleNS,
		PropNS:        PrototypePropNS(PrototypeWireNS, PrototypeSwitchHops, SwitchCycles, PrototypeNICNS),
		PipelineNS:    (NICRxCycles + NICTxCycles) * CycleNS,
		Schedule:      Cyclic,
	}
}

// Rack returns the simulated rack of §7.1: 512 nodes at 100 Gb/s as 4x25
// Gb/s channels, 23.25 ns slots with a 2.75 ns guard band (2.5 ns switch
// reconfiguration, 0.25 ns for propagation variability and synchronisation),
// 20.5 ns usable = 64 B cells per 25 Gb/s channel. The fabric is built from
// 32-port switches: 32²/2 = 512 nodes (§3.2).
func Rack() Config {
	return Config{
		Name:        "rack",
		Nodes:       512,
		Radix:       32,
		Channels:    4,
		ChannelGbps: 25,
		SlotNS:      23.25,
		GuardNS:     2.75,
		ReconfigNS:  2.5,
		SyncNS:      0.25,
		PropNS:      RackPropNS,
		Schedule:    Cyclic,
	}
}

// PrototypePropNS is the node-to-node cell propagation latency of the
// prototype (§6.2): wire + hops switches of switchCycles cycles + the end
// nodes' MAC and PHY.
func PrototypePropNS(wireNS float64, hops, switchCycles int, nicNS float64) float64 {
	return wireNS + float64(hops*switchCycles)*CycleNS + nicNS
}

// Limits on the configurations the model accepts: beyond them the schedule
// tables and the simulator's per-pair arrays grow past what a nightly wants.
const (
	MaxNodes    = 4096
	MaxChannels = 64
)

// Validate checks that the configuration describes a rack the model can
// reason about, naming the offending field.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 2 || c.Nodes > MaxNodes:
		return fmt.Errorf("nodes = %d: want 2..%d", c.Nodes, MaxNodes)
	case c.Radix < 2 || c.Radix%2 != 0:
		return fmt.Errorf("radix = %d: want an even switch port count ≥ 2 (k/2 ports face nodes, k/2 face spines, §3.2)", c.Radix)
	case c.Nodes > c.Radix*c.Radix/2:
		return fmt.Errorf("nodes = %d: a two-stage fabric of %d-port switches connects at most k²/2 = %d nodes (§3.2); raise radix",
			c.Nodes, c.Radix, c.Radix*c.Radix/2)
	case c.Channels < 1 || c.Channels > MaxChannels:
		return fmt.Errorf("channels = %d: want 1..%d", c.Channels, MaxChannels)
	case !(c.ChannelGbps > 0) || math.IsInf(c.ChannelGbps, 0):
		return fmt.Errorf("channel rate = %g Gb/s: want a positive rate", c.ChannelGbps)
	case !(c.SlotNS > 0) || math.IsInf(c.SlotNS, 0):
		return fmt.Errorf("slot = %g ns: want a positive length", c.SlotNS)
	case !(c.GuardNS >= 0) || !(c.MACOverheadNS >= 0):
		return fmt.Errorf("guard %g ns, MAC overhead %g ns: want non-negative", c.GuardNS, c.MACOverheadNS)
	case c.UsableNS() <= 0:
		return fmt.Errorf("slot %g ns leaves no usable time after guard %g ns and MAC overhead %g ns", c.SlotNS, c.GuardNS, c.MACOverheadNS)
	case c.CellBytes() <= HeaderBytes:
		return fmt.Errorf("a usable slot of %g ns at %g Gb/s carries %d B, not more than the %d B cell header (Fig. 5); lengthen the slot",
			c.UsableNS(), c.ChannelGbps, c.CellBytes(), HeaderBytes)
	case !(c.ReconfigNS >= 0) || c.ReconfigNS > c.GuardNS:
		return fmt.Errorf("switch reconfiguration %g ns does not fit in the guard band of %g ns (§3.4)", c.ReconfigNS, c.GuardNS)
	case !(c.PropNS >= 0) || math.IsInf(c.PropNS, 0):
		return fmt.Errorf("propagation latency %g ns: want non-negative", c.PropNS)
	case !(c.PipelineNS >= 0) || math.IsInf(c.PipelineNS, 0):
		return fmt.Errorf("NIC pipeline latency %g ns: want non-negative", c.PipelineNS)
	case c.Schedule != Cyclic && c.Schedule != PropagationAware:
		return fmt.Errorf("schedule kind %d unknown", int(c.Schedule))
	}
	return nil
}

// UsableNS is the part of a slot that carries cell bytes: the slot minus the
// guard band and the MAC overhead (§6.1: 12 - 1 - 3 = 8 cycles = 51.2 ns;
// §7.1: 23.25 - 2.75 = 20.5 ns).
func (c Config) UsableNS() float64 { return c.SlotNS - c.GuardNS - c.MACOverheadNS }

// CellBytes is the cell size a usable slot carries on one channel, whole
// bytes (§3.4: "a slot size of 20.5 ns (without guard band) will correspond
// to 64 B cells over a 25 Gbps channel"; §6.1: 8 cycles at 10 Gb/s = 64 B).
func (c Config) CellBytes() int {
	// 20.5 ns at 25 Gb/s is 64.06 B: whole bytes, floor; the epsilon keeps
	// 51.2 ns x 10 Gb/s = 512 bits from flooring to 63 B in floating point.
	return int(math.Floor(c.UsableNS()*c.ChannelGbps/8 + 1e-9))
}

// PayloadBytes is the data a cell carries after its 8 B header (Fig. 5).
func (c Config) PayloadBytes() int { return c.CellBytes() - HeaderBytes }

// DutyCycle is the fraction of a slot that carries cell bytes.
func (c Config) DutyCycle() float64 { return c.UsableNS() / c.SlotNS }

// GuardOverhead is the fraction of a slot lost to the guard band ("around
// 10%", §6.1, §7.1).
func (c Config) GuardOverhead() float64 { return c.GuardNS / c.SlotNS }

// NodeGbps is the most a node can send: one cell per slot on every channel
// (§7.1: "max throughput of 90 Gbps" for 4x25 Gb/s at a 20.5/23.25 duty cycle).
func (c Config) NodeGbps() float64 {
	return float64(c.Channels) * float64(c.CellBytes()) * 8 / c.SlotNS
}

// NodeLinkGbps is a node link's line rate, all channels (§3.4: 4x25 Gb/s =
// 100 Gb/s).
func (c Config) NodeLinkGbps() float64 { return float64(c.Channels) * c.ChannelGbps }

// EpochSlots is the number of slots in an epoch, the interval at which every
// pair of nodes is connected once (§3.3.2): ceil(columns / channels), where
// the schedule has N-1 columns (cyclic, §3.2) or N for an even N under the
// propagation-aware schedule (Appendix A).
func (c Config) EpochSlots() int {
	return ceilDiv(Columns(c.Nodes, c.Schedule), c.Channels)
}

// EpochNS is the epoch length (§3.4: epoch = (N-1)/channels slots).
func (c Config) EpochNS() float64 { return float64(c.EpochSlots()) * c.SlotNS }

// DelaySlots is how many slots after the start of its send slot a whole cell
// can be acted upon by its receiver: the cell's last byte leaves at the end
// of the slot and reaches the receiver PropNS later, the receive pipeline
// checks its CRC (App. D) and queues it, and it is in time for the transmit
// pipeline's pick of the first slot that starts at or after that instant
// (PipelineNS, §4.2). An intermediate node needs the whole cell: it puts the
// cell into Q_jk and only then records the queue for its feedback (§3.3.2:
// "it records the index k of the queue that the cell is added to"; App. D:
// a corrupted cell is discarded, not queued; reading S3).
// Prototype, 12-cycle slots: 1 + ceil((1576 + 57.6) / 76.8) = 1 + 22 = 23.
func (c Config) DelaySlots() int {
	return 1 + int(math.Ceil((c.PropNS+c.PipelineNS)/c.SlotNS-1e-9))
}

// HeaderNS is the time the 8 B cell header of Fig. 5 takes on one channel
// (6.4 ns at the prototype's 10 Gb/s, 2.56 ns at the rack's 25 Gb/s).
func (c Config) HeaderNS() float64 { return HeaderBytes * 8 / c.ChannelGbps }

// FeedbackSlots is how many slots after the start of its send slot the
// rate-limit feedback a cell's header carries can be used by its receiver
// for a cell of its own (reading S2, Shoal §3.3.2, §4.2 and Fig. 5): the
// header follows the guard band and is delivered by the receiver's MAC
// PropNS after it left (§6.2's propagation ends with the MAC and PHY, which
// hand over the 8 B header as the cell's first word); the receive pipeline
// then takes it out and the transmit pipeline picks a slot's cell before the
// slot starts (PipelineNS), so the feedback shapes the cells of slots that
// start at or after slot start + guard + propagation + pipelines — no need
// to wait for the rest of the cell. At least 1. Where the pipelines are
// longer than the slot's payload time it comes after the whole cell is
// queued (DelaySlots): the feedback's path is longer than the cell's.
// Prototype, 12-cycle slots: ceil((6.4 + 1576 + 57.6) / 76.8) = ceil(21.35) = 22.
func (c Config) FeedbackSlots() int {
	f := int(math.Ceil((c.GuardNS+c.PropNS+c.PipelineNS)/c.SlotNS - 1e-9))
	return max(f, 1)
}

// BufferBytes is the worst-case buffering per node (§3.3.4): N-1 queues, each
// bounded by Eq. 5 at N cells ("512 nodes and 64 B cells ... 17 MB").
func (c Config) BufferBytes() int64 {
	n := int64(c.Nodes)
	return (n - 1) * n * int64(c.CellBytes())
}

// OnChipBufferBytes is the on-chip cell cache per node: one cell per queue,
// N-1 cells (§3.3.4: "32 KB per node"; §4.2).
func (c Config) OnChipBufferBytes() int64 {
	return int64(c.Nodes-1) * int64(c.CellBytes())
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
