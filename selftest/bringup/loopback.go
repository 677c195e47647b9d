package bringup

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
)

// echoBytes is the payload sent over each cable: nearly a full PMOS frame
// of a pattern that changes every byte. An ECHO_REQ carries up to 232 bytes
// (docs/pmos.md §5.7), but one sent through a proxy rides in a SEND, whose
// inner message is at most 230 bytes (§5.6): 222 of body.
const echoBytes = 222

// Echo is one cable's loopback: an ECHO_REQ sent link-local out of one
// end's port, answered by the firmware at the other end, back by the same
// cable.
type Echo struct {
	Cable    string `json:"cable"`
	From     string `json:"from"`
	Bytes    int    `json:"bytes"`
	OK       bool   `json:"ok"`
	Attempts int    `json:"attempts"`
	Err      string `json:"error,omitempty"`
}

// echoAttempts bounds the echoes sent over one cable (each a request with
// its own retries).
const echoAttempts = 3

func echoPattern(seed int) []byte {
	b := make([]byte, echoBytes)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// loopback sends management traffic over every cable between two
// bootstrapped boards and back, and checks it bit for bit: the MOS channel
// carries PMOS both ways on every cable.
func (rr *rackRun) loopback(ctx context.Context, quiet bool) {
	r := rr.run
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, c := range rr.Cables {
		a, b := rr.byName[c.A.Board.Name], rr.byName[c.B.Board.Name]
		if a.bootStatus() != bootOK || b.bootStatus() != bootOK || !a.reachable() || !b.reachable() {
			continue
		}
		if !r.judged(a.Board) && !r.judged(b.Board) {
			continue // a --board run loops its boards' cables only
		}
		from := c.A
		if b.wave() < a.wave() || (b.DCN && !a.DCN) {
			from = c.B
		}
		wg.Add(1)
		go func(i int, c *Cable, from *End) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s := rr.byName[from.Board.Name]
			body := echoPattern(i)
			e := Echo{Cable: c.Name(), From: from.String(), Bytes: len(body)}
			// An echo lost on a lossy cable (PMOS gave up, or the reply
			// was lost on the way back) is an infrastructure step: tried
			// again a bounded number of times, and the attempts reported.
			var got []byte
			var err error
			for e.Attempts = 1; ; e.Attempts++ {
				got, err = rr.client.Echo(ctx, rr.linkLocal(s, from.Index), body)
				if err == nil || e.Attempts >= echoAttempts || ctx.Err() != nil {
					break
				}
				r.log.Info("loopback echo lost, sending it again", "cable", c.Name(), "from", from.String(), "err", err)
			}
			switch {
			case err != nil:
				e.Err = err.Error()
			case !bytes.Equal(got, body):
				diff := 0
				for k := range got {
					if k < len(body) && got[k] != body[k] {
						diff++
					}
				}
				e.Err = fmt.Sprintf("the echo came back with %d of %d bytes, %d of them different", len(got), len(body), diff)
			default:
				e.OK = true
			}
			mu.Lock()
			rr.echoes = append(rr.echoes, e)
			mu.Unlock()
		}(i, c, from)
	}
	wg.Wait()
	for _, n := range rr.nodes {
		res := rr.loopbackResult(n)
		res.Stage = StageLoopback
		if quiet {
			r.quiet(n, res)
			continue
		}
		r.done(n, res)
		if !r.judged(n.Board) {
			continue
		}
		for _, e := range rr.echoes {
			c := rr.cable(e.Cable)
			if c.A.Board != n.Board {
				continue // judged once, at the cable's A end
			}
			m := results.Measurement{Board: n.Name, Metric: "bringup.loopback.echo", Params: results.Params{"link": e.Cable}, Value: float64(e.Bytes), Unit: "bytes"}
			if e.OK {
				m.Text = "echoed bit for bit from " + e.From
			} else {
				m.Text = e.Err
			}
			r.env.Check("bringup.loopback.echo", m, e.OK, fmt.Sprintf("%d bytes back bit for bit", e.Bytes), "docs/pmos.md §5.7 (ECHO)",
				fmt.Sprintf("cable %s, echo from %s: %s", e.Cable, e.From, e.Err))
		}
	}
}

func (rr *rackRun) loopbackResult(n *node) *StageResult {
	if n.bootStatus() != bootOK || !n.reachable() {
		return &StageResult{Status: Blocked, Summary: "not bootstrapped"}
	}
	var okCables, bad []string
	for _, e := range rr.echoes {
		c := rr.cable(e.Cable)
		if c.A.Board != n.Board && c.B.Board != n.Board {
			continue
		}
		if e.OK {
			okCables = append(okCables, e.Cable)
		} else {
			bad = append(bad, fmt.Sprintf("%s: %s", e.Cable, e.Err))
		}
	}
	if len(bad) > 0 {
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: fmt.Sprintf("%d bytes echoed back bit for bit over every cable", echoBytes),
			Seen: strings.Join(bad, "; "), Check: "the cables named (a damaged cable loses MOS words: PMOS_RETX, PMOS_GIVEUPS on both ends) and the firmware of the boards at the other end"}
	}
	if len(okCables) == 0 {
		if len(n.Cabled()) == 0 {
			return ok("no cable: nothing to loop")
		}
		return ok("no cable to a bootstrapped board: nothing to loop")
	}
	return ok("%d cables echo %d bytes bit for bit", len(okCables), echoBytes)
}
