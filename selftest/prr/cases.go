package prr

import (
	"fmt"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// The cases each test records on every board of the plan, from the build
// the manifest declares and the test's parameters alone
// (selftest.RegisterCases): a board that leaves the plan keeps them, each
// reported with the reason.

// boardCases repeats per-board cases on every board of the plan.
func boardCases(cp selftest.CasePlan, per func(b tp.Build) ([]selftest.Case, error)) ([]selftest.Case, error) {
	b, err := declaredBuild(cp.Design)
	if err != nil {
		return nil, err
	}
	cs, err := per(b)
	if err != nil {
		return nil, err
	}
	var out []selftest.Case
	for _, pb := range cp.Plan.Boards {
		for _, c := range cs {
			c.Board = pb.Board
			out = append(out, c)
		}
	}
	return out, nil
}

func with(p results.Params, k, v string) results.Params {
	p = p.Clone()
	p[k] = v
	return p
}

func placementCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	n := cp.Params.(placementParams).Batches
	return boardCases(cp, func(b tp.Build) ([]selftest.Case, error) {
		p := with(buildParams(b), "batches", fmt.Sprint(n))
		var out []selftest.Case
		for _, name := range []string{"placement", "placement.state", "placement.egress", "placement.counters"} {
			out = append(out, selftest.Case{Name: name, Params: p})
		}
		return out, nil
	})
}

func pipelineCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	return boardCases(cp, func(b tp.Build) ([]selftest.Case, error) {
		pp := selftest.IntParams("p", b.Ports, "s", b.S)
		return []selftest.Case{
			{Name: "pipeline_latency", Params: with(pp, "from", "release")},
			{Name: "pipeline_latency.timestamps", Params: pp},
			{Name: "pipeline_latency.port_to_port", Params: with(pp, "clock_mhz", fmt.Sprint(b.ClockMHz()))},
			{Name: "pipeline_latency.traffic", Params: with(pp, "from", "traffic")},
		}, nil
	})
}

// rateCases are names' cases for each traffic model at each load.
func rateCases(b tp.Build, p runParams, loads []uint32, names ...string) []selftest.Case {
	var out []selftest.Case
	for _, tr := range p.Traffic {
		for _, load := range loads {
			for _, name := range names {
				out = append(out, selftest.Case{Name: name, Params: rateParams(b, tr, load, p.Cycles)})
			}
		}
	}
	return out
}

func throughputCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	p := cp.Params.(throughputParams)
	return boardCases(cp, func(b tp.Build) ([]selftest.Case, error) {
		lp := lineParams(b)
		out := []selftest.Case{{Name: "throughput.line", Params: lp}, {Name: "throughput.aggregate", Params: lp}}
		return append(out, rateCases(b, p.runParams, []uint32{tp.One}, "throughput")...), nil
	})
}

// latencyCases: every traffic model at input rate 1, and the load_traffic
// models at each load below saturation, where the worst case is not judged
// (§5.1 gives it at input rate 1 only; reading P62).
func latencyCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	p := cp.Params.(latencyParams)
	if err := p.CheckParams(); err != nil {
		return nil, err
	}
	return boardCases(cp, func(b tp.Build) ([]selftest.Case, error) {
		out := rateCases(b, p.runParams, []uint32{tp.One}, "latency.avg", "latency.max", "latency.conservation", "latency.order")
		sub := p.runParams
		sub.Traffic = p.LoadTraffic
		return append(out, rateCases(b, sub, p.subLoads(), "latency.avg", "latency.conservation", "latency.order")...), nil
	})
}

func dropRateCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	p := cp.Params.(dropRateParams)
	var loads []uint32
	for _, l := range p.Loads {
		f, err := tp.Fixed(l)
		if err != nil || f == 0 {
			return nil, fmt.Errorf("load %g: want an input rate above 0 and at most 1", l)
		}
		loads = append(loads, f)
	}
	return boardCases(cp, func(b tp.Build) ([]selftest.Case, error) {
		return rateCases(b, p.runParams, loads, "drop_rate"), nil
	})
}

func init() {
	selftest.RegisterCases(design, "placement", placementCases)
	selftest.RegisterCases(design, "pipeline_latency", pipelineCases)
	selftest.RegisterCases(design, "throughput", throughputCases)
	selftest.RegisterCases(design, "latency", latencyCases)
	selftest.RegisterCases(design, "drop_rate", dropRateCases)
}
