package prr

import (
	"fmt"
	"math/bits"
)

// Comparator is one compare-and-swap (CAS) unit of a sorting network: it
// compares the keys on wires Lo < Hi and leaves the smaller key on Lo.
type Comparator struct{ Lo, Hi int }

// SortNet is Batcher's odd-even merge sorting network for P = 2^n inputs,
// as a list of pipeline stages (FPGA'20 §3.2a): every stage holds
// comparators on disjoint wires, and there are n·(n+1)/2 stages.
type SortNet struct {
	P      int
	Stages [][]Comparator
}

// NewSortNet builds Batcher's odd-even merge sort for p inputs, p a power of
// two from 2 to MaxPorts.
//
// The stages are laid out by the iterative form of Batcher's construction
// (Knuth, TAOCP 3, §5.3.4, Algorithm M): for each merge size 2q (q = 1, 2,
// 4, ...) and each distance k = q, q/2, ..., 1 one stage, comparing wires
// i and i+k when they fall in the same block of size 2q. The tests check it
// against the recursive definition (Batcher 1968, the paper's ref. [4]).
func NewSortNet(p int) (*SortNet, error) {
	if err := checkPorts(p); err != nil {
		return nil, err
	}
	net := &SortNet{P: p}
	for q := 1; q < p; q <<= 1 {
		for k := q; k >= 1; k >>= 1 {
			var stage []Comparator
			for j := k % q; j+k < p; j += 2 * k {
				for i := 0; i < k && i+j+k < p; i++ {
					if (i+j)/(2*q) == (i+j+k)/(2*q) {
						stage = append(stage, Comparator{i + j, i + j + k})
					}
				}
			}
			net.Stages = append(net.Stages, stage)
		}
	}
	return net, nil
}

// Depth is the number of pipeline stages of the network.
func (n *SortNet) Depth() int { return len(n.Stages) }

// Size is the number of CAS units.
func (n *SortNet) Size() int {
	c := 0
	for _, s := range n.Stages {
		c += len(s)
	}
	return c
}

// lane is one wire of the arbiter's data path: the sort key {valid, dest}
// (FPGA'20 §3.2a, 1+log2(P) bits) and the input port the packet came from.
type lane struct {
	key   uint16
	input int16
}

// sort applies the network to lanes in place. A CAS orders its two lanes by
// the key {valid, dest} of §3.2a and, between equal keys, by input port: the
// packets of one batch for the same port leave the sorter in input order.
//
// The paper's CAS compares {valid, dest} only and leaves the order of equal
// keys to the network's wiring (Batcher's network with plain ">" units is
// not stable). Reading P1 (FPGA'20 §3.2a, docs/readings.md) makes input
// order the reference, since a sorting network that mis-orders equal keys is
// a real RTL bug to catch (the sort-unstable fault): the
// hardware carries the input index below the key, so that the placement of a
// batch is the documented function of the batch and the offsets, and a CAS
// that mis-orders equal keys is a visible fault.
func (n *SortNet) sort(lanes []lane) {
	for _, st := range n.Stages {
		for _, c := range st {
			a, b := lanes[c.Lo], lanes[c.Hi]
			if a.key > b.key || (a.key == b.key && a.input > b.input) {
				lanes[c.Lo], lanes[c.Hi] = b, a
			}
		}
	}
}

// MaxPorts is the largest switch the model handles: the paper's Table 1 goes
// to 256 ports (FPGA'20 §4.2).
const MaxPorts = 256

// checkPorts accepts p = 2, 4, ..., MaxPorts: the sorting network, the
// adder trees and the barrel shifters are built for powers of two (§3.2).
func checkPorts(p int) error {
	if p < 2 || p > MaxPorts || p&(p-1) != 0 {
		return fmt.Errorf("ports %d: want a power of two from 2 to %d (FPGA'20 §3.2 builds the arbiter for P = 2^n)", p, MaxPorts)
	}
	return nil
}

// log2 of a power of two.
func log2(p int) int { return bits.TrailingZeros(uint(p)) }
