package exanet

import "github.com/labrunner/labrunner/golden"

// The paper's figures that golden/exanet reproduces, for docs/figures.md
// (section "ExaNet (ParCo 2017)"); the tests recompute every one.

// Figures lists the figures of ExaNet (ParCo 2017) golden/exanet reproduces.
func Figures() []golden.Figure {
	eff := func(path string) func() (float64, error) {
		return func() (float64, error) {
			s, err := StreamModel(path, MaxPayload)
			return s.Efficiency, err
		}
	}
	overhead := func() (float64, error) {
		s, err := StreamModel(PathRouter, MaxPayload)
		return s.OverheadLoss, err
	}
	rtt16 := func() (float64, error) {
		l, err := PingPong(1, AnchorPayload)
		return l.MidUS, err
	}
	return []golden.Figure{
		{Section: "§4.3, Fig. 9: APErouter efficiency at 512 B, one sending port (reading E1)", Paper: 0.76, Golden: 0.7619, Compute: eff(PathRouter)},
		{Section: "§4.3, Fig. 9: APErouter efficiency at 512 B, two intra-tile ports to one target", Paper: 0.895, Golden: 0.8889, Compute: eff(PathRouter2x)},
		{Section: "§4.3, Fig. 10: APElink efficiency at 512 B", Paper: 0.90, Golden: 0.9014, Compute: eff(PathLink)},
		{Section: "§4.3: protocol overhead of a 512 B packet (header and footer)", Paper: 0.0625, Golden: 0.05882, Compute: overhead,
			Reason: "the paper's 6.25% is 2 words of 32 (header and footer over the payload); golden counts them over the whole packet, 2 of 34 words (5.88%)"},
		{Section: "§4.4: single-hop round trip of the smallest packet, \"sub-µs\" (band middle; the band ends at 1 µs)", Unit: "µs", Paper: 1, Golden: 0.858, Compute: rtt16,
			Reason: "the paper gives a bound, not a value (reading E4): golden's band for 16 B at one hop is [0.716, 1.000] µs, its middle 0.858"},
	}
}
