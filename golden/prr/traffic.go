package prr

import (
	"fmt"
	"math"
)

// Traffic names one of the traffic models of FPGA'20 §5.1.
type Traffic string

// The traffic models of FPGA'20 §5.1.
const (
	// Uniform: Bernoulli arrivals; in each cycle each input sends a packet
	// with probability r, to a destination drawn uniformly (§5.1a).
	Uniform Traffic = "uniform"
	// Bursty: each input follows a Markov chain with states Off, New and On
	// (§5.1b, Fig. 8); see DefaultBurstLen and trafficGen.
	Bursty Traffic = "bursty"
	// Nonuniform: Bernoulli arrivals with rate r; the destination is the
	// input's own port number with probability p, each other port with
	// probability (1-p)/(P-1) (§5.1c).
	Nonuniform Traffic = "nonuniform"
)

// Traffics lists the traffic models in the paper's order (a), (b), (c).
var Traffics = []Traffic{Uniform, Bursty, Nonuniform}

// DefaultBurstLen is the default mean burst size s of the bursty model
// (FPGA'20 §5.1b: "The default value of s is set to 32").
const DefaultBurstLen = 32.0

// DefaultHotProb is the default p of the nonuniform model (FPGA'20 §5.1c:
// "The default value of p is set to 0.5").
const DefaultHotProb = 0.5

// rng is splitmix64: small, fast, statistically sound for simulation, and
// fully determined by its seed on every platform and Go version.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += splitmixGamma
	return splitmix(r.s)
}

// splitmixGamma is splitmix64's state increment.
const splitmixGamma = 0x9e3779b97f4a7c15

// splitmix is splitmix64's output function of a state. The per-cycle loops
// step a copy of the state held in a local and call it directly: stepping
// r.s through the pointer made every draw a load and a store.
func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// below returns a uniform integer in 0..n-1 (n ≤ 2^32) by multiply-shift on
// 32 random bits; the bias, below n/2^32, is far under the sampling noise.
func below(x uint64, n int) int { return int((x & 0xffffffff) * uint64(n) >> 32) }

// probThreshold turns a probability into a threshold on the top 53 bits of
// a random word: x>>11 < t happens with that probability, and always for 1.
func probThreshold(prob float64) uint64 {
	switch {
	case prob <= 0:
		return 0
	case prob >= 1:
		return 1 << 53
	}
	return uint64(prob * (1 << 53))
}

// mix derives independent seeds for the streams of one run from the user's
// seed and a stream label, so that runs differing only in the algorithm see
// the same arrivals (common random numbers: differences between algorithms
// are not drowned in traffic noise).
func mix(seed uint64, labels ...uint64) uint64 {
	r := rng{seed}
	v := r.next()
	for _, l := range labels {
		r.s ^= l * 0xd1b54a32d192ed03
		v = r.next()
	}
	return v
}

func labelOf(s string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

const (
	stOff uint8 = iota
	stNew
	stOn
)

// trafficModel is a Traffic as a small integer, for the generator's
// per-cycle dispatch (a Traffic is a string).
type trafficModel uint8

const (
	modelUniform trafficModel = iota
	modelNonuniform
	modelBursty
)

// trafficGen produces the arrivals of every input for one cycle.
//
// The bursty chain (FPGA'20 §5.1b, Fig. 8). The paper gives its transition
// probabilities only in Fig. 8, in terms of the input rate r and the mean
// burst size s; the text says the chain has states Off (no packet), New (a
// packet to a new destination drawn uniformly) and On (a packet to the
// previous packet's destination), that it is "almost equivalent to the
// two-state model" of He and Yeung (the paper's ref. [12]) and that, unlike
// it, it does not cap the rate at 1-1/(s+1). This model is the two-state
// on/off chain with one change that lifts that cap: a burst may be followed
// at once by another.
//
//	from New or On: On with 1-1/s, New with r/s, Off with (1-r)/s
//	from Off:       New with r/s,  Off with 1-r/s
//
// A burst (New followed by its Ons) is geometric with mean s; the fraction
// of cycles in Off is exactly 1-r, so the mean rate is r; the mean idle time
// per burst is s(1-r)/r, the same as the two-state model's (whose Off→On
// probability r/(s(1-r)) exceeds 1 once r > s/(s+1)). At r = 1 bursts follow
// each other back to back. Each input starts in its stationary state (Off
// with probability 1-r).
type trafficGen struct {
	model trafficModel
	p     int
	rate  uint64 // probThreshold(r)
	hot   uint64 // nonuniform: probThreshold(p)
	stay  uint64 // bursty: 1-1/s
	renew uint64 // bursty: 1-1/s + r/s, the New/Off boundary from New/On
	wake  uint64 // bursty: r/s, Off -> New
	rng   rng
	state []uint8
	cur   []int16
}

func newTrafficGen(kind Traffic, p int, load, burstLen, hotProb float64, seed uint64) (*trafficGen, error) {
	g := &trafficGen{p: p, rate: probThreshold(load), rng: rng{seed}}
	switch kind {
	case Uniform:
		g.model = modelUniform
	case Nonuniform:
		g.model = modelNonuniform
		g.hot = probThreshold(hotProb)
	case Bursty:
		g.model = modelBursty
		if !(burstLen >= 1) || math.IsInf(burstLen, 0) {
			return nil, fmt.Errorf("bursty traffic: mean burst size %g: want a finite size of at least 1 packet", burstLen)
		}
		g.stay = probThreshold(1 - 1/burstLen)
		g.renew = probThreshold(1 - 1/burstLen + load/burstLen)
		g.wake = probThreshold(load / burstLen)
		g.state = make([]uint8, p)
		g.cur = make([]int16, p)
		for i := range p {
			x := g.rng.next()
			if x>>11 < g.rate {
				g.state[i] = stNew
			}
		}
	default:
		return nil, fmt.Errorf("traffic %q: want one of %v", kind, Traffics)
	}
	return g, nil
}

// next fills arr[i] with the destination of input i's packet this cycle, or
// -1, and returns the number of packets. Each model has a loop of its own,
// with the generator's fields in locals: in one function for all three,
// and with the fields reloaded after every store to arr, the compiler kept
// the random word itself on the stack. The draws are the same, in the
// same order.
func (g *trafficGen) next(arr []int16) int {
	switch g.model {
	case modelUniform:
		return g.nextUniform(arr)
	case modelNonuniform:
		return g.nextNonuniform(arr)
	default:
		return g.nextBursty(arr)
	}
}

// The loops below choose with conditional moves rather than branches
// where a branch would go either way at random (an idle input at a load
// below 1, the hot port of the nonuniform model) and nothing later waits
// on the choice: a mispredicted branch cost more than the work it skipped.

func (g *trafficGen) nextUniform(arr []int16) int {
	n := 0
	pmask := uint64(g.p - 1)
	st, rate := g.rng.s, g.rate
	for i := range arr {
		st += splitmixGamma
		x := splitmix(st)
		ok := x>>11 < rate
		d := int16(x & pmask)
		if !ok {
			d = -1
		}
		arr[i] = d
		n += b2i(ok)
	}
	g.rng.s = st
	return n
}

func (g *trafficGen) nextNonuniform(arr []int16) int {
	n := 0
	p := g.p
	st, rate, hot := g.rng.s, g.rate, g.hot
	for i := range arr {
		st += splitmixGamma
		x := splitmix(st)
		// A branch: the state's next step depends on it, and a prediction
		// lets the next input's draw start before this one is known.
		if x>>11 >= rate {
			arr[i] = -1
			continue
		}
		n++
		st += splitmixGamma
		y := splitmix(st)
		// (i + 1 + below(y, p-1)) mod p, which is below 2p: a subtraction,
		// not a division by a variable p (the generator's costliest line
		// in a profile of the nightly).
		d := i + 1 + below(y, p-1)
		if d >= p {
			d -= p
		}
		if y>>11 < hot {
			d = i
		}
		arr[i] = int16(d)
	}
	g.rng.s = st
	return n
}

// b2i is 1 for true and 0 for false (a SETcc, not a branch).
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *trafficGen) nextBursty(arr []int16) int {
	n := 0
	pmask := uint64(g.p - 1)
	st := g.rng.s
	state, cur := g.state[:len(arr)], g.cur[:len(arr)]
	stay, renew, wake := g.stay, g.renew, g.wake
	for i := range arr {
		st += splitmixGamma
		x := splitmix(st)
		u := x >> 11
		switch state[i] {
		case stOff:
			arr[i] = -1
			if u < wake {
				state[i] = stNew
			}
			continue
		case stNew:
			cur[i] = int16(x & pmask)
		}
		arr[i] = cur[i]
		n++
		// The top bits of x pick the next state; its low bits picked the
		// destination above, independently.
		switch {
		case u < stay:
			state[i] = stOn
		case u < renew:
			state[i] = stNew
		default:
			state[i] = stOff
		}
	}
	g.rng.s = st
	return n
}
