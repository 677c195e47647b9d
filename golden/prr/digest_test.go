package prr

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// resultDigest is a SHA-256 of every counter of a list of runs. The
// simulation is deterministic, so a digest pins its behaviour exactly: a
// change meant to make it faster must leave every digest below as it is.
func resultDigest(rs []SimResult) string {
	h := sha256.New()
	var b [8]byte
	for _, r := range rs {
		for _, v := range []int64{r.Offered, r.Dropped, r.Delivered, r.LatencySum, r.LatencyMax, int64(r.MaxOccupancy),
			r.Drained, r.Stranded, r.DrainMax, r.DrainedLatencySum} {
			binary.LittleEndian.PutUint64(b[:], uint64(v))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// digestRuns is one switch's grid of pinned runs: every traffic model, small
// and large switches, unbounded and shallow queues, saturated and lighter
// loads, with and without the drain, default and other traffic parameters.
func digestRuns(a Alg) []SimConfig {
	ps := []int{2, 16, 64}
	if a == PRR || a == FIFO {
		ps = append(ps, 256)
	}
	type point struct {
		depth int
		load  float64
		drain bool
		burst float64
		hot   float64
	}
	points := []point{
		{0, 1, false, 0, 0},
		{1, 1, true, 0, 0},
		{3, 0.9, true, 4, 0.8},
		{0, 0.6, true, 0, 0},
		{8, 1, false, 1, 1},
	}
	var cfgs []SimConfig
	for _, tr := range Traffics {
		for _, p := range ps {
			for k, pt := range points {
				cycles := 1000
				if p == 256 {
					cycles = 200
				}
				cfgs = append(cfgs, SimConfig{P: p, Alg: a, Traffic: tr, Load: pt.load, Depth: pt.depth, Cycles: cycles,
					Seed: uint64(p*10 + k), BurstLen: pt.burst, HotProb: pt.hot, Drain: pt.drain})
			}
		}
	}
	return cfgs
}

// The simulation's results are pinned bit for bit, per switch. Under the
// race detector one switch, in rotation by day (internal/raceshare); make
// test runs all of them without it.
func TestSimulationDigests(t *testing.T) {
	want := map[Alg]string{
		PRR:    "5459ca32400ffe8eb65b307ab3df7e30",
		FIFO:   "21fae3b64f339cd39110234e72eb89b6",
		PIM:    "bedba0962a948135c0366bfe87af92e8",
		PIM1:   "e5a3aeebd546cc180a9385437d7bfbb8",
		RRM:    "7ae6bea29b04c640a321df160fbf3fc0",
		RRM1:   "9b717de70c4bcef7f3f6cd101839af93",
		ISLIP:  "61f4b312d33227d94e5818d279cce527",
		ISLIP1: "2a27a0a1fd0974442987872ba9117668",
		DRRM:   "998cdf1fb8c29d8482461477c0b99761",
		DRRM1:  "f8a2e8bb8020e1e3813a0fabd7a9ae80",
		EDRRM:  "c335f21ccb297a0631ad18d15119a5f7",
		EDRRM1: "c73af3625d9919cc5cf676727b9b4f26",
	}
	for _, a := range raceshare.Cases(t, Algs) {
		rs, err := SimulateAll(digestRuns(a), 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultDigest(rs); got != want[a] {
			t.Errorf("%s: digest %s, want %s", a, got, want[a])
		}
	}
}
