package shoal

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// runFailure fails one component through registers and checks Shoal's
// failure handling (§3.5):
//
//   - link: the cable at `link` (a "board:port" of the lab) is taken out of
//     service in the switch schedules of both its ends (traffic/shoal
//     WithoutCable): nothing crosses it either way, as if it were cut;
//   - node: the node's NIC is disabled: it neither sends nor receives.
//
// After the bootstrap and `settle_epochs` epochs for detection, over
// `epochs` whole epochs: every node still connected must have inferred
// failed exactly the peers golden/shoal's FailedPairs gives (a pair fails
// both ways when a cell of either direction crosses the component:
// symmetric detection), stop sending to them (SKIPPED_SLOTS) and count
// their receive slots failed; the mean fraction of failed slots is scored
// against golden's FailedSlotFraction (Table 1). Then flows between every
// pair still connected run to completion: traffic continues.
func runFailure(ctx context.Context, env *selftest.Env) (err error) {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[failureParams](env)
	if err != nil {
		return err
	}
	link, settle, epochs, cells := par.Link, par.SettleEpochs, par.Epochs, par.Cells
	node := -1
	if par.Node != nil {
		node = *par.Node
	}
	if (link == "") == (node < 0) {
		return paramErr(env, fmt.Errorf("give exactly one of link: \"board:port\" (a cable to fail) or node: N (a node to fail)"))
	}
	f, r := k.fab, k.r
	n, E := f.N(), k.base.Schedule.Epoch()
	var fail gs.Failure
	var what string
	var cut map[string][]uint32
	switch {
	case link != "":
		a, b, err := k.cable(env, link)
		if err != nil {
			return paramErr(env, err)
		}
		what = fmt.Sprintf("cable %s - %s", a, b)
		if fail, err = cableFailure(f, a, b); err != nil {
			return paramErr(env, err)
		}
		words, err := f.SwitchWords(k.base.Schedule)
		if err != nil {
			return err
		}
		if cut, err = f.WithoutCable(words, a, b); err != nil {
			return paramErr(env, err)
		}
	default:
		if node >= n {
			return paramErr(env, fmt.Errorf("node %d: the rack has nodes 0..%d", node, n-1))
		}
		fail = gs.Failure{Kind: gs.FailNode, Index: node}
		what = fmt.Sprintf("node %d (%s)", node, f.Nodes[node])
	}
	defer func() {
		if rerr := k.restore(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("restoring the rack after failing %s: %w", what, rerr)
		}
	}()
	if err := r.Stop(ctx); err != nil {
		return err
	}
	if cut != nil {
		if err := r.LoadSchedule(ctx, k.base.Schedule, cut); err != nil {
			return err
		}
	} else if err := r.Enable(ctx, node, false); err != nil {
		return err
	}
	if err := r.Boot(ctx); err != nil {
		return err
	}
	if err := r.RunSlots(ctx, int64(settle*E)); err != nil {
		return err
	}
	if err := r.ClearCounters(ctx); err != nil {
		return err
	}
	if err := r.RunSlots(ctx, int64(epochs*E)); err != nil {
		return err
	}
	nics, err := r.ReadNICs(ctx)
	if err != nil {
		return err
	}

	// Golden's account of the failure.
	gsched, err := gs.NewSchedule(n, 1, gs.Cyclic)
	if err != nil {
		return err
	}
	topo := gs.Topology{Nodes: n, Radix: f.Radix}
	pairs, err := gs.FailedPairs(topo, gsched, fail)
	if err != nil {
		return err
	}
	frac, err := gs.FailedSlotFraction(topo, gsched, fail)
	if err != nil {
		return err
	}
	cutOff := map[int]bool{}
	for _, x := range gs.Attached(topo, fail) {
		cutOff[x] = true
	}
	dead := map[int]bool{}
	if fail.Kind == gs.FailNode {
		dead[fail.Index] = true
	}
	fp := results.Params{"failure": fail.Kind.String()}
	src := "Shoal §3.5: a node that stops hearing from a peer stops sending to it; detection is symmetric"

	// Detection, node by node.
	var fracSum float64
	var fracN int
	for i, nic := range nics {
		if dead[i] {
			continue
		}
		var want []int
		for j := 0; j < n; j++ {
			if j != i && pairs[i*n+j] {
				want = append(want, j)
			}
		}
		got := nic.Failed()
		ep := uint32(epochs)
		var bad []string
		if ints(got) != ints(want) {
			bad = append(bad, fmt.Sprintf("inferred failed {%s}, golden/shoal says {%s}", ints(got), ints(want)))
		}
		if w := ep * uint32(len(want)); nic.C["SKIPPED_SLOTS"] != w {
			bad = append(bad, fmt.Sprintf("skipped %d transmit slots, want %d (%d epochs x %d failed peers)", nic.C["SKIPPED_SLOTS"], w, epochs, len(want)))
		}
		if w := ep * uint32(len(want)); nic.C["FAILED_SLOTS"] != w {
			bad = append(bad, fmt.Sprintf("%d receive slots failed, want %d", nic.C["FAILED_SLOTS"], w))
		}
		p := results.Params{"failure": fail.Kind.String(), "node": strconv.Itoa(i)}
		m := meas(f.Nodes[i].Board, p, "shoal.failed_peers", float64(len(got)), "{"+ints(got)+"}")
		env.Check("failure.detect", m, len(bad) == 0, "{"+ints(want)+"}", src+" (golden/shoal FailedPairs)",
			fmt.Sprintf("node %d with %s failed: %s", i, what, strings.Join(bad, "; ")))
		if !cutOff[i] && nic.C["RX_SLOTS"] > 0 {
			fracSum += float64(nic.C["FAILED_SLOTS"]) / float64(nic.C["RX_SLOTS"])
			fracN++
		}
	}
	// Symmetry, over every pair of live nodes.
	var asym []string
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if dead[i] || dead[j] {
				continue
			}
			ij, ji := nics[i].FailedPeers&(1<<uint(j)) != 0, nics[j].FailedPeers&(1<<uint(i)) != 0
			if ij != ji {
				asym = append(asym, fmt.Sprintf("%d has %d failed: %v, %d has %d: %v", i, j, ij, j, i, ji))
			}
		}
	}
	env.Check("failure.symmetric", meas(r.Master, fp, "shoal.failed_peers.asymmetric", float64(len(asym)), strings.Join(asym, "; ")),
		len(asym) == 0, "every failed pair inferred at both ends", src, "detection is not symmetric: "+strings.Join(asym, "; "))
	// The failed fraction (Table 1).
	if fracN > 0 {
		m := meas(r.Master, fp, "shoal.failed_slots.fraction", fracSum/float64(fracN),
			fmt.Sprintf("mean over %d connected nodes of FAILED_SLOTS/RX_SLOTS over %d epochs", fracN, epochs))
		m.Unit = "fraction"
		env.Record("failure.fraction", m, results.Expectation{Metric: "shoal.failed_slots.fraction", Value: frac, Unit: "fraction", RelTol: 1e-9,
			Budget: "exact: whole epochs after the detection settled, every failed slot counted; 1e-9 is floating-point rounding",
			Source: "Shoal Table 1: fraction of failed slots against failed components, two-stage Clos",
			Note: fmt.Sprintf("golden/shoal FailedSlotFraction for %s (%s), symmetric detection, mean over the nodes still connected; Table 1 approximates %.4g",
				what, fail.Kind, gs.TableOneApprox(fail.Kind, n))})
	} else {
		env.Skip("failure.fraction", r.Master, fp, fmt.Sprintf("not judged: no node still connected counted a receive slot in the %d epochs (see failure.detect)", epochs))
	}

	// Traffic between the pairs still connected continues.
	live := livePairs(n, dead, pairs)
	if len(live) == 0 {
		return nil
	}
	flows, err := ts.Pairs(n, live, int64(cells*k.payload))
	if err != nil {
		return err
	}
	if err := r.ClearCounters(ctx); err != nil {
		return err
	}
	if err := r.LoadFlows(ctx, flows); err != nil {
		return err
	}
	var o outcome
	if o.run, err = r.Traffic(ctx, true, 2_000_000); err != nil {
		return err
	}
	if err := k.collect(ctx, &o); err != nil {
		return err
	}
	k.checkComplete(env, "failure.traffic", results.Params{"failure": fail.Kind.String(), "flows": strconv.Itoa(len(flows))}, flows, o,
		"flows between connected nodes must route around "+what+" (§3.5)")
	return nil
}

// cable finds the lab cable with one end at "board:port".
func (k *rack) cable(env *selftest.Env, at string) (ts.Cage, ts.Cage, error) {
	return cableAt(env.Lab, at)
}

// cableAt finds the lab's cable with one end at "board:port": that end
// first.
func cableAt(lab *labconfig.Lab, at string) (ts.Cage, ts.Cage, error) {
	board, port, ok := strings.Cut(at, ":")
	if !ok {
		return ts.Cage{}, ts.Cage{}, fmt.Errorf("link %q: write board:port, e.g. shoal-sw0:sfp2", at)
	}
	idx, err := ts.ParseCage(port)
	if err != nil {
		return ts.Cage{}, ts.Cage{}, fmt.Errorf("link %q: %w", at, err)
	}
	for _, l := range lab.Links {
		for _, e := range [][2]struct{ b, p string }{
			{{l.A.Board, l.A.Port}, {l.B.Board, l.B.Port}}, {{l.B.Board, l.B.Port}, {l.A.Board, l.A.Port}},
		} {
			if e[0].b != board {
				continue
			}
			if i, err := ts.ParseCage(e[0].p); err != nil || i != idx {
				continue
			}
			j, err := ts.ParseCage(e[1].p)
			if err != nil {
				return ts.Cage{}, ts.Cage{}, err
			}
			return ts.Cage{Board: board, Index: idx}, ts.Cage{Board: e[1].b, Index: j}, nil
		}
	}
	return ts.Cage{}, ts.Cage{}, fmt.Errorf("link %q: no cable of lab %s ends there", at, lab.Name)
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// cableFailure is golden/shoal's failure of the cable between a and b.
func cableFailure(f *ts.Fabric, a, b ts.Cage) (gs.Failure, error) {
	la, aLeaf := f.LeafIndex(a.Board)
	lb, bLeaf := f.LeafIndex(b.Board)
	sa, aSpine := f.SpineIndex(a.Board)
	sb, bSpine := f.SpineIndex(b.Board)
	switch {
	case aLeaf && bSpine:
		return gs.Failure{Kind: gs.FailLeafSpineLink, Index: la, Spine: sb}, nil
	case bLeaf && aSpine:
		return gs.Failure{Kind: gs.FailLeafSpineLink, Index: lb, Spine: sa}, nil
	case f.Node(a) >= 0:
		return gs.Failure{Kind: gs.FailNodeLink, Index: f.Node(a)}, nil
	case f.Node(b) >= 0:
		return gs.Failure{Kind: gs.FailNodeLink, Index: f.Node(b)}, nil
	}
	return gs.Failure{}, fmt.Errorf("cable %s - %s is neither a node's cable nor a leaf-spine cable", a, b)
}

// livePairs are the ordered pairs of live nodes golden/shoal's failed
// pairs (FailedPairs, n x n) leave connected.
func livePairs(n int, dead map[int]bool, failed []bool) [][2]int {
	var live [][2]int
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && !dead[i] && !dead[j] && !failed[i*n+j] {
				live = append(live, [2]int{i, j})
			}
		}
	}
	return live
}
