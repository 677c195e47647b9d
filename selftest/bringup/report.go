package bringup

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labrunner/labrunner/results"
)

// Report is what a bring-up found, board by board and rack by rack. It is
// the --json output.
type Report struct {
	Lab  string `json:"lab"`
	From Stage  `json:"from"`
	// Boards named with --board (empty: the whole lab).
	Only []string `json:"only,omitempty"`
	// Faults injected into the emulated rack (lab file and --fault), as
	// given: what a person should find named in the boards' diagnoses.
	Faults []string  `json:"faults,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	// Set by the caller once the verdicts are in (the run directory).
	RunDir   string           `json:"run_dir,omitempty"`
	Status   string           `json:"status,omitempty"`
	ExitCode int              `json:"exit_code"`
	Checks   *results.Summary `json:"checks,omitempty"`
	Racks    []RackReport     `json:"racks"`
	Boards   []BoardReport    `json:"boards"`
}

// BoardReport is one board.
type BoardReport struct {
	Name    string        `json:"name"`
	Rack    string        `json:"rack"`
	Kind    string        `json:"kind"`
	Design  string        `json:"design,omitempty"`
	DCN     bool          `json:"dcn"`
	Judged  bool          `json:"judged"`
	Address string        `json:"address"`
	Stages  []StageResult `json:"stages"`
	// FirstFailure is the first stage, in stage order, that failed.
	FirstFailure *StageResult     `json:"first_failure,omitempty"`
	Bootstrap    BootReport       `json:"bootstrap"`
	TimeSync     *tsInfo          `json:"timesync,omitempty"`
	Reconciled   []Reconciliation `json:"reconciled,omitempty"`
	Notes        []string         `json:"notes,omitempty"`
}

// BootReport is a board's bootstrap: its wave, its proxy, the time taken.
type BootReport struct {
	Status    string   `json:"status"`
	Wave      int      `json:"wave"`
	Proxy     string   `json:"proxy,omitempty"` // board:port
	UpPort    string   `json:"up_port,omitempty"`
	Root      string   `json:"root,omitempty"`
	TimeMS    float64  `json:"time_ms,omitempty"`
	DNA       string   `json:"dna,omitempty"`
	Why       string   `json:"why,omitempty"`
	Check     string   `json:"check,omitempty"`
	ReHomed   []string `json:"rehomed,omitempty"`
	GoldenAll []string `json:"golden_proxies,omitempty"`
}

// CableNote names a cable that lost MOS words during the bootstrap.
type CableNote struct {
	Cable   string `json:"cable"`
	Note    string `json:"note"`
	Retx    int    `json:"retransmissions"`
	Drops   int    `json:"dropped"`
	GiveUps int    `json:"give_ups"`
}

// RackReport is one rack.
type RackReport struct {
	Name     string      `json:"name"`
	Note     string      `json:"note,omitempty"`
	DCN      []string    `json:"dcn"`
	Waves    [][]string  `json:"waves"`
	Golden   [][]string  `json:"golden_waves,omitempty"`
	Lossy    []CableNote `json:"lossy_cables,omitempty"`
	TimeSync *tsRack     `json:"timesync,omitempty"`
	Echoes   []Echo      `json:"echoes,omitempty"`
}

func (r *run) report() *Report {
	rep := &Report{Lab: r.opts.Lab.Name, From: r.opts.From, Only: r.opts.Boards, Faults: r.opts.Faults, Start: r.start, End: time.Now()}
	for _, rr := range r.racks {
		rk := RackReport{Name: rr.Name, Note: rr.Note, Lossy: rr.lossy, TimeSync: rr.ts, Echoes: rr.echoes}
		for _, b := range rr.DCN {
			rk.DCN = append(rk.DCN, b.Name)
		}
		for _, n := range rr.nodes {
			n.mu.Lock()
			st, w := n.boot.Status, n.boot.Wave
			n.mu.Unlock()
			if st != bootOK && st != bootDied {
				continue
			}
			for len(rk.Waves) <= w {
				rk.Waves = append(rk.Waves, nil)
			}
			rk.Waves[w] = append(rk.Waves[w], n.Name)
		}
		if plan, err := goldenPlan(rr); err == nil {
			rk.Golden = plan
		}
		rep.Racks = append(rep.Racks, rk)
		for _, n := range rr.nodes {
			n.mu.Lock()
			br := BoardReport{Name: n.Name, Rack: rr.Name, Kind: n.Kind.Name, DCN: n.DCN, Judged: r.judged(n.Board),
				Address: fmt.Sprintf("0x%04x", n.Addr), Notes: append([]string(nil), n.notes...), Reconciled: n.boot.Reconciled}
			if n.Design != nil {
				br.Design = n.Design.Name
			}
			for _, s := range Stages() {
				if res := n.results[s]; res != nil {
					br.Stages = append(br.Stages, *res)
					if br.FirstFailure == nil && res.Status == Failed {
						x := *res
						br.FirstFailure = &x
					}
				}
			}
			b := n.boot
			br.Bootstrap = BootReport{Status: string(b.Status), Wave: b.Wave, Why: b.Why, Check: b.Check, ReHomed: b.ReHomed}
			if b.DNA != 0 {
				br.Bootstrap.DNA = fmt.Sprintf("0x%08x", b.DNA)
			}
			if b.Proxy != nil {
				br.Bootstrap.Proxy = b.Proxy.Name + ":" + portName(b.Proxy.Board, b.ProxyPort)
				br.Bootstrap.UpPort = portName(n.Board, b.UpPort)
				br.Bootstrap.TimeMS = float64(b.DoneNS-b.StartNS) / 1e6
			}
			if b.Root != nil {
				br.Bootstrap.Root = b.Root.Name
			}
			if rr.ts != nil && n.ts.Role != "" {
				t := n.ts
				br.TimeSync = &t
			}
			n.mu.Unlock()
			rep.Boards = append(rep.Boards, br)
		}
	}
	return rep
}

func goldenPlan(rr *rackRun) ([][]string, error) {
	return goldenWaves(rr)
}

// WriteText prints the report's tables for a person: one row per board
// (wave, proxy, time, each stage), the racks' waves against the golden
// order, cables that lost words, reconciliations, the TimeSync tree, and
// the diagnosis of every board's first failed stage.
func (rep *Report) WriteText(w io.Writer) {
	if len(rep.Faults) > 0 {
		fmt.Fprintf(w, "faults injected: %s\n\n", strings.Join(rep.Faults, "; "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "BOARD\tRACK\tWAVE\tPROXY\tTIME\t"
	for _, s := range Stages() {
		head += strings.ToUpper(s.String()) + "\t"
	}
	fmt.Fprintln(tw, head)
	for _, b := range rep.Boards {
		wave, proxy, tm := "-", "-", "-"
		if b.Bootstrap.Status == string(bootOK) || b.Bootstrap.Status == string(bootDied) {
			wave = fmt.Sprint(b.Bootstrap.Wave)
			if b.Bootstrap.Proxy != "" {
				proxy = b.Bootstrap.Proxy
				tm = fmt.Sprintf("%.1fms", b.Bootstrap.TimeMS)
			} else {
				proxy = "(DCN)"
			}
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t", b.Name, b.Rack, wave, proxy, tm)
		status := map[Stage]string{}
		for _, s := range b.Stages {
			status[s.Stage] = string(s.Status)
		}
		for _, s := range Stages() {
			st := status[s]
			if st == "" {
				st = "-"
			}
			if st == string(Failed) {
				st = "FAILED"
			}
			row += st + "\t"
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	for _, rk := range rep.Racks {
		fmt.Fprintf(w, "\nrack %s (DCN %s)\n", rk.Name, orNone(rk.DCN))
		if rk.Note != "" {
			fmt.Fprintf(w, "  %s\n", rk.Note)
		}
		for i, wv := range rk.Waves {
			g := ""
			if len(rep.Only) > 0 {
				g = "  (as far as " + strings.Join(rep.Only, ", ") + " needed)"
			} else if i < len(rk.Golden) {
				if sameSet(wv, rk.Golden[i]) {
					g = "  (golden: same)"
				} else {
					g = "  (golden: " + strings.Join(rk.Golden[i], ", ") + ")"
				}
			}
			fmt.Fprintf(w, "  wave %d: %s%s\n", i, strings.Join(wv, ", "), g)
		}
		for i := len(rk.Waves); i < len(rk.Golden) && len(rep.Only) == 0; i++ {
			fmt.Fprintf(w, "  wave %d: none  (golden: %s)\n", i, strings.Join(rk.Golden[i], ", "))
		}
		for _, c := range rk.Lossy {
			fmt.Fprintf(w, "  cable %s: %s\n", c.Cable, c.Note)
		}
		if t := rk.TimeSync; t != nil {
			conv := "not measured"
			if !math.IsNaN(t.ConvergeUS) && t.ConvergeUS > 0 {
				conv = fmt.Sprintf("%.4g µs", t.ConvergeUS)
			}
			fmt.Fprintf(w, "  timesync: primary %s, tree depth %d, convergence %s (%s)\n", t.Primary, t.Depth, conv, t.ConvergeNote)
			for _, x := range t.Rerooted {
				fmt.Fprintf(w, "    re-rooted: %s\n", x)
			}
			for _, l := range t.Links {
				if l.Err != "" {
					fmt.Fprintf(w, "    link %s: %s\n", l.Cable, l.Err)
					continue
				}
				fmt.Fprintf(w, "    link %s: %.4g ns (lab file: %.4g ns)\n", l.Cable, l.MeasuredNS, l.LabNS)
			}
			if s := t.Shoal; s != nil {
				fmt.Fprintf(w, "    Shoal (%s): synchronisation precision %.3g ns; the configured %.4g ns guard band absorbs up to %.4g ns; recommended slot %.4g ns",
					s.Preset, s.PrecisionNS, s.ConfiguredNS, s.MaxPrecisionNS, s.SlotNS)
				if s.SlotCycles > 0 {
					fmt.Fprintf(w, " (%d cycles)", s.SlotCycles)
				}
				fmt.Fprintf(w, " with a %.4g ns guard band, %.1f%% overhead (Shoal §3.4)\n", s.GuardNS, s.Overhead*100)
			}
		}
	}
	var tsRows []BoardReport
	for _, b := range rep.Boards {
		if b.TimeSync != nil && b.TimeSync.Role != "off" {
			tsRows = append(tsRows, b)
		}
	}
	if len(tsRows) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOARD\tTIMESYNC\tDEPTH\tPARENT\tRX DELAY\tOFFSET\tPATH BOUND\tLAST CORR\tDRIFT")
		for _, b := range tsRows {
			t := b.TimeSync
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.4g ns\t%.3g ns\t%.3g ns\t%.3g ns\t%.0f ppm\n", b.Name, t.Status, t.Depth, orDash(t.Parent), t.DelayNS, t.OffsetNS, t.BoundNS, t.LastCorrNS, t.DriftPPM)
		}
		tw.Flush()
	}
	for _, b := range rep.Boards {
		for _, rc := range b.Reconciled {
			var ds []string
			for _, d := range rc.Diffs {
				ds = append(ds, d.String())
			}
			fmt.Fprintf(w, "\nreconciled %s (%s, %s): %s\n", b.Name, rc.When, rc.Reason, orNone(ds))
		}
	}
	var failed []BoardReport
	for _, b := range rep.Boards {
		if b.FirstFailure != nil && b.Judged {
			failed = append(failed, b)
		}
	}
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].FirstFailure.Stage < failed[j].FirstFailure.Stage })
	for _, b := range failed {
		f := b.FirstFailure
		fmt.Fprintf(w, "\n%s: first failed stage %s (%s)\n", b.Name, f.Stage, f.Stage.Doc())
		if f.Expected != "" {
			fmt.Fprintf(w, "  expected: %s\n", f.Expected)
		}
		if f.Seen != "" {
			fmt.Fprintf(w, "  seen:     %s\n", f.Seen)
		}
		if f.Check != "" {
			fmt.Fprintf(w, "  check:    %s\n", f.Check)
		}
	}
	for _, b := range rep.Boards {
		for _, n := range b.Notes {
			fmt.Fprintf(w, "note %s: %s\n", b.Name, n)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
