package ordering

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Case is a hand-worked run: streams, resources and the network's
// arrival order and losses.
type Case struct {
	Name    string
	Cfg     Config
	Streams []Stream
	// Script gives the arrivals and losses of a one-stream case; nil: every
	// packet arrives in order, none is lost.
	Script *Script
	Source string // paper section
	Note   string
}

// Run plays the case against the reference.
func (c Case) Run() (Result, error) {
	var net Network
	if c.Script != nil {
		s := *c.Script // a Script keeps state: play a fresh copy
		s.pos, s.ackSeen = 0, nil
		net = &s
	}
	r, err := Run(c.Cfg, c.Streams, net)
	if err != nil {
		return Result{}, fmt.Errorf("case %s: %w", c.Name, err)
	}
	return r, nil
}

// PaperCases are the scenarios of the paper's sequence diagrams and of the
// reorder buffer experiments, as the reference plays them.
func PaperCases() []Case {
	return []Case{
		{Name: "fig4", Streams: []Stream{{Mode: Slow, N: 2}}, Script: &Script{Arrivals: []int{1, 2}, LostACKs: []int{2}},
			Source: "SC'18 §III-D1, Fig. 4",
			Note:   "slow mode, ACK 2 lost: REQ 2 times out, is resent and executes twice (no exactly-once delivery)"},
		{Name: "fig5", Streams: []Stream{{Mode: Fast, N: 3}}, Script: &Script{Arrivals: []int{2, 3, 1}},
			Source: "SC'18 §III-D2, Fig. 5",
			Note:   "fast mode, REQ 1 arrives last: REQ 2 opens the connection without SYN, 2 and 3 wait in the reorder buffer"},
		{Name: "fig6", Streams: []Stream{{Mode: Fast, N: 3, EOD: true}}, Script: &Script{Arrivals: []int{1, 2, 3}, LostACKs: []int{2}},
			Source: "SC'18 §III-D3, Fig. 6",
			Note:   "exactly-once, ACK 2 lost: the resent REQ 2 is answered from the replay buffer, not executed"},
		{Name: "fig7", Streams: []Stream{{Mode: Sync, N: 4}}, Script: &Script{Arrivals: []int{1, 3, 4, 2}},
			Source: "SC'18 §III-E, Fig. 7",
			Note:   "synchronized transfer, data REQs 1-3 execute on arrival, the synchronization REQ 4 (CNT=4) waits for REQ 2"},
		{Name: "robfull", Cfg: Config{Target: TargetConfig{ROB: 2}}, Streams: []Stream{{Mode: Fast, N: 6}},
			Script: &Script{Arrivals: []int{2, 3, 4, 5, 6, 1}},
			Source: "SC'18 §IV-D",
			Note:   "reorder buffer of 2, REQ 1 arrives last: 4, 5 and 6 find the buffer full, are NACKed and resent"},
		{Name: "fallback", Cfg: Config{Target: TargetConfig{Conns: 2}},
			Streams: []Stream{{Src: 0, Mode: Fast, N: 4}, {Src: 1, Mode: Fast, N: 4}, {Src: 2, Mode: Fast, N: 4}},
			Source:  "SC'18 §III-C, §IV-D",
			Note:    "two receiver connections, three fast streams: the third is NACKed for want of a connection and falls back to slow mode"},
	}
}

// CaseNames lists the paper cases' names.
func CaseNames() []string {
	var out []string
	for _, c := range PaperCases() {
		out = append(out, c.Name)
	}
	return out
}

// CustomCase builds a one-stream case from Predict-style parameters: mode,
// length, arrival order of first copies, REQs whose first copy is lost,
// REQs whose first ACK is lost (all counted from 1).
func CustomCase(mode Mode, n int, eod bool, arrivals, lost, lostACKs []int, cfg Config) (Case, error) {
	st := Stream{Mode: mode, N: n, EOD: eod}
	if err := st.check(); err != nil {
		return Case{}, err
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"arrivals", arrivals}, {"lost", lost}, {"lost_acks", lostACKs}} {
		seen := map[int]bool{}
		for _, x := range l.v {
			if x < 1 || x > n {
				return Case{}, fmt.Errorf("ordering: %s names REQ %d of a %d-REQ stream", l.name, x, n)
			}
			if seen[x] {
				return Case{}, fmt.Errorf("ordering: %s names REQ %d twice", l.name, x)
			}
			seen[x] = true
		}
	}
	return Case{Name: "custom", Cfg: cfg, Streams: []Stream{st},
		Script: &Script{Arrivals: arrivals, Lost: lost, LostACKs: lostACKs},
		Source: map[Mode]string{Unordered: "SC'18 §IV-A", Slow: "SC'18 §III-D1", Fast: "SC'18 §III-D2", Sync: "SC'18 §III-E"}[mode],
		Note: fmt.Sprintf("%s, %d REQs%s, first copies arrive %v, lost %v, first ACKs lost %v", mode, n,
			map[bool]string{true: ", exactly-once"}[eod], arrivals, lost, lostACKs)}, nil
}

// ParseSeqs reads a comma-separated list of REQ numbers (from 1); empty is
// an empty list.
func ParseSeqs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	fs := strings.Split(s, ",")
	if len(fs) > MaxStreamLen {
		return nil, fmt.Errorf("ordering: %d REQ numbers, more than %d", len(fs), MaxStreamLen)
	}
	out := make([]int, 0, len(fs))
	for _, f := range fs {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > MaxStreamLen {
			return nil, fmt.Errorf("ordering: REQ number %q: want 1..%d", f, MaxStreamLen)
		}
		out = append(out, n)
	}
	return out, nil
}

// Summary condenses a run for reports: executions, duplicates, replays,
// NACKs, retransmissions, fall-backs.
type Summary struct {
	Executions, Duplicates, Replays, NACKs, Retransmits, FellBack int
}

// Summarize counts a run.
func Summarize(r Result) Summary {
	s := Summary{Executions: len(r.Execs), Replays: r.Replays}
	distinct := map[Exec]bool{}
	for _, e := range r.Execs {
		distinct[e] = true
	}
	s.Duplicates = len(r.Execs) - len(distinct)
	for _, st := range r.Streams {
		s.NACKs += st.NACKs
		s.Retransmits += st.Retransmit
		if st.FellBack {
			s.FellBack++
		}
	}
	return s
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
