package bringup

import (
	"fmt"
	"math"
)

// MOS (Aquila §3.1, §3.5): a management ordered set is one 64-bit control
// word of the GNet 66/64 PCS, sent between cells, that carries 6 bytes of
// data between directly connected chips whether or not the link layer is
// up.
const (
	MOSWordBits  = 64
	MOSDataBytes = 6
)

// TailProbability is the chance the model allows a per-board retransmission
// count to exceed its Max: the upper bound of a board's bootstrap time
// holds but for one run in a million.
const TailProbability = 1e-6

// MaxTransferBytes bounds what one board receives over PMOS (1 GiB).
const MaxTransferBytes = 1 << 30

// PMOS describes the robust packet layer over MOS (Aquila §3.5) as the
// lab's implementation runs it. The paper names the layer but gives no
// figure for it: every field is the lab's, passed by the runner; the
// defaults of the model's parameters are an assumption, not the paper's.
//
// The cost model (its assumptions, stated once):
//   - A frame carries up to Payload data bytes plus Overhead bytes of
//     framing, length, sequence number and CRC, padded to whole MOS words
//     of 6 data bytes. Each frame is acknowledged by a frame of AckBytes on
//     the reverse direction, which has its own MOS channel (acks do not
//     take words from the data).
//   - MOS words go out back to back at MOSRate words per second when the
//     window allows; at most Window frames are unacknowledged.
//   - A frame is lost when any of its MOS words or any word of its
//     acknowledgement is lost, independently with probability Loss per
//     word; a lost frame is sent again RTO after it was sent (selective
//     repeat), and a frame sent Retries+1 times without an ack makes the
//     sender give up on the link.
type PMOS struct {
	MOSRate  float64 // MOS words per second per direction
	Payload  int     // data bytes per frame, at most
	Overhead int     // framing bytes per frame
	AckBytes int     // bytes of an acknowledgement frame
	Window   int     // frames in flight, at most
	Loss     float64 // probability that a MOS word is lost or corrupted
	// RTOUS is the retransmission timeout in µs; 0 means four round trips
	// of a full frame (RoundTripUS).
	RTOUS   float64
	Retries int     // retransmissions of one frame before giving up
	ProcUS  float64 // receiver time from a frame's last word to its ack
}

// check validates the fields.
func (p PMOS) check() error {
	switch {
	case !(p.MOSRate > 0 && p.MOSRate <= 1e12):
		return fmt.Errorf("MOS rate %v words/s: want a positive rate up to 1e12", p.MOSRate)
	case p.Payload < 1 || p.Payload > 65535:
		return fmt.Errorf("PMOS payload %d bytes per frame: want 1..65535", p.Payload)
	case p.Overhead < 0 || p.Overhead > 1024:
		return fmt.Errorf("PMOS overhead %d bytes per frame: want 0..1024", p.Overhead)
	case p.AckBytes < 1 || p.AckBytes > 1024:
		return fmt.Errorf("PMOS ack %d bytes: want 1..1024", p.AckBytes)
	case p.Window < 1 || p.Window > 1<<16:
		return fmt.Errorf("PMOS window %d frames: want 1..65536", p.Window)
	case !(p.Loss >= 0 && p.Loss < 1):
		return fmt.Errorf("MOS loss %v: want a probability in [0, 1)", p.Loss)
	case !(p.RTOUS >= 0 && p.RTOUS <= 1e9):
		return fmt.Errorf("PMOS retransmission timeout %v µs: want 0 (automatic) up to 1e9", p.RTOUS)
	case p.Retries < 0 || p.Retries > 1000:
		return fmt.Errorf("PMOS retries %d: want 0..1000", p.Retries)
	case !(p.ProcUS >= 0 && p.ProcUS <= 1e9):
		return fmt.Errorf("PMOS processing %v µs: want 0..1e9", p.ProcUS)
	}
	return nil
}

// words is the number of MOS words of a frame carrying data bytes.
func (p PMOS) words(data int) int {
	return (data + p.Overhead + MOSDataBytes - 1) / MOSDataBytes
}

// wordUS is the time of one MOS word in µs.
func (p PMOS) wordUS() float64 { return 1e6 / p.MOSRate }

// RoundTripUS is the time from the first word of a full frame to the last
// word of its ack, over a link of one-way delay linkNS.
func (p PMOS) RoundTripUS(linkNS float64) float64 {
	return p.roundTrip(p.words(p.Payload), linkNS)
}

// ackWords is the MOS words of an acknowledgement.
func (p PMOS) ackWords() int { return (p.AckBytes + MOSDataBytes - 1) / MOSDataBytes }

// rto returns the retransmission timeout in µs.
func (p PMOS) rto(linkNS float64) float64 {
	if p.RTOUS > 0 {
		return p.RTOUS
	}
	return 4 * p.roundTrip(p.words(p.Payload), linkNS)
}

func (p PMOS) roundTrip(frameWords int, linkNS float64) float64 {
	return float64(frameWords+p.ackWords())*p.wordUS() + 2*linkNS/1e3 + p.ProcUS
}

// Estimate is a duration (or a figure) with the bounds the model puts on
// it: Min is a lower bound, Value the estimate, Max an upper bound.
type Estimate struct{ Min, Value, Max float64 }

func maxEst(a, b Estimate) Estimate {
	return Estimate{math.Max(a.Min, b.Min), math.Max(a.Value, b.Value), math.Max(a.Max, b.Max)}
}

// Transfer is the golden cost of moving some bytes over one PMOS link.
type Transfer struct {
	Bytes, Frames, Words int
	// NoLossUS is the time of the transfer with no loss: the last ack's
	// arrival, with the window's stalls.
	NoLossUS float64
	// US bounds the transfer time in µs: Min, no loss and a window that
	// never stalls (every word at the MOS rate, then one ack); Value,
	// NoLossUS plus the expected retransmissions, each costing its frame
	// again and the part of the timeout the rest of the window does not
	// cover; Max, NoLossUS plus the retransmission count exceeded with
	// probability TailProbability, each costing its frame and a whole
	// timeout of idle link.
	US Estimate
	// ExpectedRetransmissions and MaxRetransmissions are the mean and the
	// TailProbability quantile (or the mean, if larger) of the frames sent
	// again.
	ExpectedRetransmissions, MaxRetransmissions float64
	// AbandonProbability is the chance some frame is sent Retries+1 times
	// without an ack, so the sender gives up on the link.
	AbandonProbability float64
	RTOUS              float64
}

// Transfer returns the cost of sending bytes over a link of one-way delay
// linkNS with word-loss probability loss (negative: p.Loss).
func (p PMOS) Transfer(bytes int, linkNS, loss float64) (Transfer, error) {
	if loss < 0 {
		loss = p.Loss
	}
	q := p
	q.Loss = loss
	if err := q.check(); err != nil {
		return Transfer{}, err
	}
	if bytes < 0 || bytes > MaxTransferBytes {
		return Transfer{}, fmt.Errorf("transfer of %d bytes: want 0..%d", bytes, MaxTransferBytes)
	}
	if !(linkNS >= 0 && linkNS <= MaxLinkNS+MaxLinkNS) {
		return Transfer{}, fmt.Errorf("link delay %v ns: want 0..%g", linkNS, 2*MaxLinkNS)
	}
	t := Transfer{Bytes: bytes}
	if bytes == 0 {
		return t, nil
	}
	tw := p.wordUS()
	full := bytes / p.Payload
	rest := bytes % p.Payload
	f := p.words(p.Payload)
	t.Frames = full
	t.Words = full * f
	fl := f // words of the last frame
	if rest > 0 {
		t.Frames++
		fl = p.words(rest)
		t.Words += fl
	}
	n := t.Frames
	a := p.ackWords()
	tail := float64(a)*tw + 2*linkNS/1e3 + p.ProcUS // last word sent -> its ack in
	t.US.Min = float64(t.Words)*tw + tail

	// Without loss. Frames 0..n-2 are full; frame j starts at
	// s_j = max(s_{j-1} + f·tw, ack_{j-W}) with ack_j = s_j + r, which
	// solves to j·f·tw when the window covers a round trip (W·f·tw ≥ r)
	// and to floor(j/W)·r + (j mod W)·f·tw otherwise.
	r := p.roundTrip(f, linkNS)
	W := p.Window
	start := func(j int) float64 {
		if float64(W*f)*tw >= r {
			return float64(j*f) * tw
		}
		return float64(j/W)*r + float64((j%W)*f)*tw
	}
	sLast := 0.0
	if n > 1 {
		sLast = start(n-2) + float64(f)*tw
		if n-1-W >= 0 {
			sLast = math.Max(sLast, start(n-1-W)+r)
		}
	}
	t.NoLossUS = sLast + float64(fl)*tw + tail
	if n > 1 {
		t.NoLossUS = math.Max(t.NoLossUS, start(n-2)+r)
	}

	// Loss: a transmission fails when a word of the frame or of its ack is
	// lost; the full frame's failure probability covers the last one too.
	t.RTOUS = p.rto(linkNS)
	fail := 0.0
	if loss > 0 {
		fail = -math.Expm1(float64(f+a) * math.Log1p(-loss))
	}
	if fail >= 1-1e-12 {
		return Transfer{}, fmt.Errorf("MOS loss %v fails %.6g of the %d-word frames: PMOS cannot get a frame through this link", loss, fail, f+a)
	}
	succ := 1 - fail
	t.ExpectedRetransmissions = float64(n) * fail / succ
	kmax, err := negBinQuantile(n, fail, 1-TailProbability)
	if err != nil {
		return Transfer{}, err
	}
	// A quantile can sit below the mean when a retransmission is rare (the
	// 1e-6 quantile of 1e-9 per frame is 0): Max counts the larger, so
	// that it never undercuts the estimate.
	t.MaxRetransmissions = math.Max(kmax, t.ExpectedRetransmissions)
	if fail > 0 {
		giveUp := math.Exp(float64(p.Retries+1) * math.Log(fail))
		t.AbandonProbability = -math.Expm1(float64(n) * math.Log1p(-giveUp))
	}
	frameUS := float64(f) * tw
	stall := math.Max(0, t.RTOUS-float64(W-1)*frameUS)
	t.US.Value = t.NoLossUS + t.ExpectedRetransmissions*(frameUS+stall)
	t.US.Max = t.NoLossUS + t.MaxRetransmissions*(frameUS+t.RTOUS)
	return t, nil
}

// negBinQuantile returns the smallest k with P(K ≤ k) ≥ level, where K is
// the number of failed transmissions before n frames get through, each
// attempt failing with probability fail (a negative binomial). Far in the
// tail of large transfers it uses the normal approximation.
func negBinQuantile(n int, fail, level float64) (float64, error) {
	if fail == 0 || n == 0 {
		return 0, nil
	}
	succ := 1 - fail
	mean := float64(n) * fail / succ
	sd := math.Sqrt(float64(n)*fail) / succ
	limit := mean + 60*sd + 100
	if limit > 1e7 {
		// z for a one-sided tail of 1e-6 is 4.753.
		z := 4.753
		if level != 1-TailProbability {
			return 0, fmt.Errorf("retransmission quantile %v: only the %v level has a normal approximation", level, 1-TailProbability)
		}
		if mean+z*sd > 1e15 {
			return 0, fmt.Errorf("MOS loss: about %.3g retransmissions expected; PMOS cannot bootstrap over this link", mean)
		}
		return math.Ceil(mean + z*sd), nil
	}
	// log P(K=0) = n·log(succ); P(K=k+1)/P(K=k) = (n+k)/(k+1)·fail.
	lp := float64(n) * math.Log(succ)
	cdf := 0.0
	lf := math.Log(fail)
	for k := 0; float64(k) <= limit; k++ {
		cdf += math.Exp(lp)
		if cdf >= level {
			return float64(k), nil
		}
		lp += math.Log(float64(n+k)) - math.Log(float64(k+1)) + lf
	}
	return math.Ceil(limit), nil
}

// GoodputFraction is the payload a transfer of bytes delivers per second,
// as a fraction of the MOS data rate (6 bytes per word at MOSRate): the
// bringup.pmos.goodput band, and the figure drivers/pmos's goodput
// benchmarks report (goodput/mos). Min and Max come from the transfer's
// Max and Min times; with no loss and a window that covers a round trip it
// tends, for long transfers, to Payload / (6 · words per frame), the
// framing efficiency.
func (p PMOS) GoodputFraction(bytes int, linkNS, loss float64) (Estimate, error) {
	if bytes <= 0 {
		return Estimate{}, fmt.Errorf("goodput of a %d-byte transfer: want a positive size", bytes)
	}
	t, err := p.Transfer(bytes, linkNS, loss)
	if err != nil {
		return Estimate{}, err
	}
	rate := MOSDataBytes * p.MOSRate / 1e6 // bytes per µs
	frac := func(us float64) float64 { return float64(bytes) / (rate * us) }
	return Estimate{Min: frac(t.US.Max), Value: frac(t.US.Value), Max: frac(t.US.Min)}, nil
}

// FramingEfficiency is the share of a full frame's MOS data bytes that is
// payload.
func (p PMOS) FramingEfficiency() float64 {
	return float64(p.Payload) / float64(MOSDataBytes*p.words(p.Payload))
}
