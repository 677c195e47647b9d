package prr

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
)

// Limits of the register map (bitstreams/catalogue/prr.yaml): the address
// decoder of the debug peripheral is laid out for these, so one map serves
// every build of the switch and a build differs only in its params.
const (
	// MaxPorts: per-port arrays have 256 elements; Table 1 (§4.2) goes to
	// P = 256.
	MaxPorts = 256
	// MaxPacketBits: a batch slot holds 32 data words.
	MaxPacketBits = 1024
	// MaxQueueEntries bounds P·P·depth: the QTAGS window holds 2^20 words.
	MaxQueueEntries = 1 << 20
	// MaxFIFODepth: PLACEMENT.POS has 12 bits (positions 0..4095) and
	// QSTAT.COUNT 13 (a full 4096-entry queue).
	MaxFIFODepth = 4096
	// MaxS: the register-removal parameter; beyond the pipeline's length
	// every S gives the same pipeline.
	MaxS = 64
)

// Config is one build of the switch: the parameters the RTL generator takes
// (§5: "a switch of any specified packet size, number of ports (P) and
// latency reduction (S)") plus the output queue depth and the clock.
type Config struct {
	Ports      int     // P: ports, a power of two, 2..256 (§3)
	S          int     // register removal: keep pipeline registers every S stages (§4.2)
	FIFODepth  int     // entries per output queue (§5.1 "FIFO depth")
	PacketBits int     // packet width in bits, a multiple of 32 (§5.2)
	ClockMHz   float64 // the design's clock
}

// Param names in a manifest's params: block.
const (
	ParamPorts      = "ports"
	ParamS          = "s"
	ParamFIFODepth  = "fifo_depth"
	ParamPacketBits = "packet_bits"
)

// ConfigFromManifest reads the build parameters from a manifest's params
// and clock.
func ConfigFromManifest(m *bitstreams.Manifest) (Config, error) {
	c := Config{ClockMHz: m.ClockMHz}
	var probs []string
	for _, k := range sortedKeys(m.Params) {
		switch k {
		case ParamPorts, ParamS, ParamFIFODepth, ParamPacketBits:
		default:
			probs = append(probs, fmt.Sprintf("unknown param %q (the switch takes %s, %s, %s, %s)", k, ParamPorts, ParamS, ParamFIFODepth, ParamPacketBits))
		}
	}
	get := func(key string, dst *int) {
		v, ok := m.Params[key]
		if !ok {
			probs = append(probs, fmt.Sprintf("param %s is missing", key))
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 32)
		if err != nil {
			probs = append(probs, fmt.Sprintf("param %s = %q is not an integer", key, v))
			return
		}
		*dst = int(n)
	}
	get(ParamPorts, &c.Ports)
	get(ParamS, &c.S)
	get(ParamFIFODepth, &c.FIFODepth)
	get(ParamPacketBits, &c.PacketBits)
	if len(probs) > 0 {
		return Config{}, fmt.Errorf("%s: %s", m.Source, strings.Join(probs, "; "))
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", m.Source, err)
	}
	return c, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks the parameters against what the switch and its register
// map support.
func (c Config) Validate() error {
	var probs []string
	if c.Ports < 2 || c.Ports > MaxPorts || c.Ports&(c.Ports-1) != 0 {
		probs = append(probs, fmt.Sprintf("ports %d is not a power of two from 2 to %d (the sorting network, adder trees and rotators take log2(P) stages, §3.2)", c.Ports, MaxPorts))
	}
	if c.S < 1 || c.S > MaxS {
		probs = append(probs, fmt.Sprintf("s %d is outside 1..%d (§4.2: S is a positive integer)", c.S, MaxS))
	}
	if c.FIFODepth < 1 || c.FIFODepth > MaxFIFODepth {
		probs = append(probs, fmt.Sprintf("fifo_depth %d is outside 1..%d", c.FIFODepth, MaxFIFODepth))
	} else if c.Ports >= 2 && c.Ports <= MaxPorts && c.Ports*c.Ports*c.FIFODepth > MaxQueueEntries {
		probs = append(probs, fmt.Sprintf("ports^2 x fifo_depth = %d queue entries exceeds the QTAGS window's %d (use fifo_depth <= %d for %d ports)",
			c.Ports*c.Ports*c.FIFODepth, MaxQueueEntries, MaxQueueEntries/(c.Ports*c.Ports), c.Ports))
	}
	if c.PacketBits < 32 || c.PacketBits > MaxPacketBits || c.PacketBits%32 != 0 {
		probs = append(probs, fmt.Sprintf("packet_bits %d is not a multiple of 32 from 32 to %d", c.PacketBits, MaxPacketBits))
	}
	if !(c.ClockMHz > 0) {
		probs = append(probs, fmt.Sprintf("clock %g MHz must be positive", c.ClockMHz))
	}
	if len(probs) > 0 {
		return fmt.Errorf("invalid switch build: %s", strings.Join(probs, "; "))
	}
	return nil
}

// log2P is log2(P).
func (c Config) log2P() int { return bits.TrailingZeros(uint(c.Ports)) }

// The pipeline's geometry (§3.1, §4.1-§4.2). Stages are numbered from 0. The
// sorting network and the offsets pipeline run side by side from stage 0
// (the shorter one is padded with shift registers, §4.3); the barrel
// shifters follow.

// sortStages is the sorting network's length: log2(P)(log2(P)+1)/2 steps
// of Batcher's odd-even merge sort (§3.2a).
func (c Config) sortStages() int { l := c.log2P(); return l * (l + 1) / 2 }

// offsetStages is the offsets pipeline's length: log2(P) adder-tree steps,
// log2(P) prefix-sum steps and the subtractor, 2·log2(P)+1 (§4.1).
func (c Config) offsetStages() int { return 2*c.log2P() + 1 }

// stages is the pipeline length before register removal:
// log2(P) + max(sorting, offsets) (§4.1).
func (c Config) stages() int { return c.log2P() + max(c.sortStages(), c.offsetStages()) }

// compulsoryStage is index_comp = log2(P), the offset counters' stage, whose
// register is never removed (§4.2).
func (c Config) compulsoryStage() int { return c.log2P() }

// hasRegister reports whether stage i keeps its output register after
// register removal: the registers kept are those S, 2S, ... stages away
// from the compulsory one on either side (§4.2 "removing the registers from
// all pipeline stages whose order is not multiples of S").
func (c Config) hasRegister(i int) bool {
	d := i - c.compulsoryStage()
	return ((d%c.S)+c.S)%c.S == 0
}

// registers is how many pipeline registers a packet passes from insertion
// to the write into its output queue: the pipeline latency in cycles.
func (c Config) registers() int {
	n := 0
	for i := 0; i < c.stages(); i++ {
		if c.hasRegister(i) {
			n++
		}
	}
	return n
}
