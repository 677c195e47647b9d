package tin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Traffic patterns of the TiN plan (Aquila §5.1 and SC'18 §IV),
// as settings of the on-chip generators (docs/tin.md "Traffic and runs").
// The generators draw arrival times, destinations and flow labels from
// their own hardware random sources (the emulator seeds them from the lab's
// seed); a pattern's Seed fixes every choice the runner makes: which boards
// send, to which destinations, which stream lengths and which incast victim.
// The same seed gives the same register writes on every machine (PCG of
// math/rand/v2 has a fixed output).

func rng(seed uint64, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// pick returns k of the names, chosen by r and kept in their given order
// (all when k <= 0 or k >= len).
func pick(r *rand.Rand, names []string, k int) []string {
	if k <= 0 || k >= len(names) {
		return append([]string(nil), names...)
	}
	idx := r.Perm(len(names))[:k]
	sort.Ints(idx)
	out := make([]string, k)
	for i, j := range idx {
		out[i] = names[j]
	}
	return out
}

func without(names []string, drop string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

func maskWrites(t *Topology, lo, hi string, dsts []string) Writes {
	m := Mask(t.Nodes(dsts...)...)
	return Writes{{lo, uint32(m)}, {hi, uint32(m >> 32)}}
}

// UniformRandom is §5.1's "Uniform Random traffic pattern with Poisson
// arrival": every source sends Count packets of Bytes to destinations drawn
// uniformly from its set, Poisson arrivals at Load of the injection rate.
type UniformRandom struct {
	Load       float64 // fraction of INJECT_MBPS offered per source (§5.1: load = rate / injection rate)
	Bytes      int
	Count      int
	Reply      bool // the destination echoes ReplyBytes: samples are the fabric RTT (§5.1)
	ReplyBytes int
	Flows      int // flow labels per destination
	CoS        int
	Port       int // destination IP port (endpoint 0-3)
	Log        bool
	Sources    int      // boards that send, chosen by Seed (0: all)
	Fanout     int      // destinations per source, chosen by Seed (0: every other board)
	Dsts       []string // explicit destinations instead of Fanout
	Seed       uint64
}

// Writes returns the generator settings of every sending board.
func (u UniformRandom) Writes(t *Topology, injectMbps uint32) (map[string]Writes, error) {
	if u.Load <= 0 || u.Load > 1 || math.IsNaN(u.Load) {
		return nil, fmt.Errorf("uniform random: load %g: want 0 < load <= 1 of the %d Mb/s injection rate", u.Load, injectMbps)
	}
	if u.Bytes < 1 || u.Bytes >= 1<<14 || u.Count < 1 {
		return nil, fmt.Errorf("uniform random: %d packets of %d bytes: want at least one packet of 1..16383 bytes", u.Count, u.Bytes)
	}
	if u.Port < 0 || u.Port > 3 || u.CoS < 0 || u.CoS > 7 {
		return nil, fmt.Errorf("uniform random: port %d, CoS %d: want port 0..3 and CoS 0..7", u.Port, u.CoS)
	}
	r := rng(u.Seed, 0x7572) // "ur"
	ctrl := uint32(1)
	if u.Reply {
		ctrl |= 2
	}
	if u.Log {
		ctrl |= 4
	}
	rate := uint32(math.Round(u.Load * float64(injectMbps)))
	out := map[string]Writes{}
	for _, s := range pick(r, t.Boards, u.Sources) {
		dsts := u.Dsts
		if len(dsts) == 0 {
			dsts = pick(r, without(t.Boards, s), u.Fanout)
		} else {
			dsts = without(dsts, s)
		}
		if len(dsts) == 0 {
			continue
		}
		w := Writes{{"IPG_RATE_MBPS", max(rate, 1)}, {"IPG_BYTES", uint32(u.Bytes)}, {"IPG_COUNT", uint32(u.Count)},
			{"IPG_DST_PORT", uint32(u.Port)}, {"IPG_COS", uint32(u.CoS)}, {"IPG_FLOWS", uint32(max(u.Flows, 1))}}
		if u.Reply {
			w = append(w, RegWrite{"IPG_REPLY_BYTES", uint32(max(u.ReplyBytes, 1))})
		}
		w = append(w, maskWrites(t, "IPG_DST_MASK_LO", "IPG_DST_MASK_HI", dsts)...)
		out[s] = append(w, RegWrite{"IPG_CTRL", ctrl})
	}
	return out, nil
}

// RMAReads is §5.1's CliqueMap-like load: reads of Bytes (4 KB values) at
// QPS per source with Poisson arrivals, high or low priority (Fig. 9).
type RMAReads struct {
	QPS     int
	Bytes   int
	Count   int
	HiPri   bool
	Sources int
	Fanout  int
	Dsts    []string
	Seed    uint64
}

// Writes returns the read generator settings of every sending board.
func (g RMAReads) Writes(t *Topology) (map[string]Writes, error) {
	if g.QPS < 1 || g.Bytes < 1 || g.Bytes >= 1<<20 || g.Count < 1 {
		return nil, fmt.Errorf("RMA reads: %d reads of %d bytes at %d QPS: want at least one read of 1..1048575 bytes at a positive rate", g.Count, g.Bytes, g.QPS)
	}
	r := rng(g.Seed, 0x726d61) // "rma"
	ctrl := uint32(1)
	if g.HiPri {
		ctrl |= 2
	}
	out := map[string]Writes{}
	for _, s := range pick(r, t.Boards, g.Sources) {
		dsts := g.Dsts
		if len(dsts) == 0 {
			dsts = pick(r, without(t.Boards, s), g.Fanout)
		} else {
			dsts = without(dsts, s)
		}
		if len(dsts) == 0 {
			continue
		}
		w := Writes{{"RG_QPS", uint32(g.QPS)}, {"RG_BYTES", uint32(g.Bytes)}, {"RG_COUNT", uint32(g.Count)}}
		w = append(w, maskWrites(t, "RG_DST_MASK_LO", "RG_DST_MASK_HI", dsts)...)
		out[s] = append(w, RegWrite{"RG_CTRL", ctrl})
	}
	return out, nil
}

// Bursts are §5.1's bursty messages (Fig. 10): each source sends Count
// messages of MsgBytes to its destination, one every MsgBytes*8/RateMbps
// (a fixed injection rate, 0.6 Gb/s in §5.1), each cut into MTU packets
// that enter the ingress buffer back to back. Pairs maps source to
// destination board; see Permutation and Incast for seeded pairings.
type Bursts struct {
	Pairs    map[string]string
	MsgBytes int
	RateMbps int
	Count    int
	MTU      int
	CoS      int
	Port     int
	Log      bool
}

// Writes returns the burst generator settings of every source.
func (b Bursts) Writes(t *Topology) (map[string]Writes, error) {
	if b.MsgBytes < 1 || b.MsgBytes >= 1<<24 || b.Count < 1 || b.RateMbps < 1 || b.MTU < 64 || b.MTU >= 1<<14 {
		return nil, fmt.Errorf("bursts: %d messages of %d bytes at %d Mb/s, MTU %d: want a message of 1..16777215 bytes, a positive rate, an MTU of 64..16383", b.Count, b.MsgBytes, b.RateMbps, b.MTU)
	}
	if b.Port < 0 || b.Port > 3 || b.CoS < 0 || b.CoS > 7 {
		return nil, fmt.Errorf("bursts: port %d, CoS %d: want port 0..3 and CoS 0..7", b.Port, b.CoS)
	}
	ctrl := uint32(1)
	if b.Log {
		ctrl |= 2
	}
	out := map[string]Writes{}
	for s, d := range b.Pairs {
		if _, ok := t.Node[s]; !ok {
			return nil, fmt.Errorf("bursts: source %s is not a board of the Clique", s)
		}
		n, ok := t.Node[d]
		if !ok || d == s {
			return nil, fmt.Errorf("bursts: %s sends to %q: want another board of the Clique", s, d)
		}
		out[s] = Writes{{"BG_DST", uint32(n.Addr().WithEP(b.Port))}, {"BG_MSG_BYTES", uint32(b.MsgBytes)},
			{"BG_RATE_MBPS", uint32(b.RateMbps)}, {"BG_COUNT", uint32(b.Count)}, {"BG_MTU", uint32(b.MTU)},
			{"BG_COS", uint32(b.CoS)}, {"BG_CTRL", ctrl}}
	}
	return out, nil
}

// Permutation pairs every board with another, a seeded derangement: each
// sends to one board and receives from one, none to itself.
func Permutation(t *Topology, seed uint64) (map[string]string, error) {
	n := len(t.Boards)
	if n < 2 {
		return nil, fmt.Errorf("permutation of %d boards: need at least 2", n)
	}
	r := rng(seed, 0x7065726d) // "perm"
	for {
		p := r.Perm(n)
		ok := true
		for i, v := range p {
			ok = ok && i != v
		}
		if ok {
			out := map[string]string{}
			for i, v := range p {
				out[t.Boards[i]] = t.Boards[v]
			}
			return out, nil
		}
	}
}

// Incast picks a victim (the given one, or one chosen by seed when "") and
// `senders` other boards (all others when 0), chosen by seed: the many
// sources to one destination port of §3.3's incast.
func Incast(t *Topology, victim string, senders int, seed uint64) (string, []string, error) {
	r := rng(seed, 0x696e63) // "inc"
	if victim == "" {
		victim = t.Boards[r.IntN(len(t.Boards))]
	}
	if _, ok := t.Node[victim]; !ok {
		return "", nil, fmt.Errorf("incast: victim %s is not a board of the Clique", victim)
	}
	others := without(t.Boards, victim)
	if senders < 0 || senders > len(others) {
		return "", nil, fmt.Errorf("incast: %d senders: the Clique has %d boards besides %s", senders, len(others), victim)
	}
	return victim, pick(r, others, senders), nil
}

// Streams are SC'18's ordered or synchronized transfers (§III-D, §III-E) of
// set lengths from source boards to the 1RMA engine of one target: each
// source opens PerSource streams of a length taken from Lengths (chosen by
// Seed per source), Concurrent at a time.
type Streams struct {
	Target     string
	Sources    []string
	PerSource  int
	Lengths    []int // the set of lengths (§IV-A: 10 to 40)
	Bytes      int   // write bytes per REQ
	Concurrent int
	Sync       bool // synchronized: the last REQ is the synchronization operation (CNT = length)
	EOD        bool // exactly-once delivery
	Slow       bool // slow mode from the start
	GapNS      int
	StreamGap  int
	Seed       uint64
}

// Writes returns the stream generator settings of every source, and the
// length each source was given.
func (s Streams) Writes(t *Topology) (map[string]Writes, map[string]int, error) {
	tn, ok := t.Node[s.Target]
	if !ok {
		return nil, nil, fmt.Errorf("streams: target %q is not a board of the Clique", s.Target)
	}
	if len(s.Lengths) == 0 || s.PerSource < 1 || s.Bytes < 1 || s.Bytes > 136 || s.Concurrent < 1 || s.Concurrent > 255 {
		return nil, nil, fmt.Errorf("streams: %d per source of lengths %v, %d bytes per REQ, %d concurrent: want lengths, at least one stream, 1..136 bytes, 1..255 concurrent",
			s.PerSource, s.Lengths, s.Bytes, s.Concurrent)
	}
	for _, l := range s.Lengths {
		if l < 1 || l > 0xFFFF || s.Sync && l < 2 {
			return nil, nil, fmt.Errorf("streams: length %d: want 1..65535 REQs (a synchronized transfer needs data and its operation: 2 or more)", l)
		}
	}
	r := rng(s.Seed, 0x6f7264) // "ord"
	ctrl := uint32(1)
	if s.Sync {
		ctrl |= 2
	}
	if s.EOD {
		ctrl |= 4
	}
	if s.Slow {
		ctrl |= 8
	}
	out, lens := map[string]Writes{}, map[string]int{}
	for _, src := range s.Sources {
		if src == s.Target {
			return nil, nil, fmt.Errorf("streams: %s is both a source and the target", src)
		}
		if _, ok := t.Node[src]; !ok {
			return nil, nil, fmt.Errorf("streams: source %q is not a board of the Clique", src)
		}
		l := s.Lengths[r.IntN(len(s.Lengths))]
		lens[src] = l
		out[src] = Writes{{"OG_DST", uint32(tn.Addr())}, {"OG_STREAMS", uint32(s.PerSource)}, {"OG_LEN", uint32(l)},
			{"OG_BYTES", uint32(s.Bytes)}, {"OG_CONCURRENT", uint32(s.Concurrent)}, {"OG_GAP_NS", uint32(s.GapNS)},
			{"OG_STREAM_GAP_NS", uint32(s.StreamGap)}, {"OG_CTRL", ctrl}}
	}
	return out, lens, nil
}

// Load applies per-board generator settings, every board's at once.
func (r *Rack) Load(ctx context.Context, ws map[string]Writes) error {
	boards := make([]string, 0, len(ws))
	for b := range ws {
		boards = append(boards, b)
	}
	sort.Strings(boards)
	for _, b := range boards {
		if _, ok := r.regs[b]; !ok {
			return fmt.Errorf("tin rack: traffic for %s, which is not a board of the rack", b)
		}
	}
	return ForBoards(boards, func(_ int, b string) error { return r.Apply(ctx, b, ws[b]) })
}
