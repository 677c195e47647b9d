package labrun

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/internal/strictyaml"
	"github.com/labrunner/labrunner/labconfig"
)

// BoardState is one board of a lab as the lock directory knows it: free,
// held (by whom) or in maintenance, and what the last run that leased it
// programmed and found.
type BoardState struct {
	Board  string      `json:"board"`
	Kind   string      `json:"kind"`
	State  string      `json:"state"`
	Holder *lease.Info `json:"holder,omitempty"`
	Last   lease.State `json:"last"`
}

// BoardStates lists the lab's boards, in lab-file order, with their state
// in the lock directory d.
func BoardStates(lab *labconfig.Lab, d *lease.Dir) ([]BoardState, error) {
	var rows []BoardState
	for _, b := range lab.Boards {
		r := BoardState{Board: b.Name, Kind: b.Kind, State: "free"}
		if b.Emulated != nil {
			r.Kind += " (emulated)"
		}
		if h, err := d.Get(b.Name); err != nil {
			return nil, err
		} else if h != nil {
			r.State, r.Holder = "held", h
		}
		if st, err := d.ReadState(b.Name); err == nil {
			r.Last = st
			if st.Maintenance {
				r.State = "maintenance"
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// WriteBoardStates prints the boards' states as a table.
func WriteBoardStates(w io.Writer, rows []BoardState) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOARD\tKIND\tSTATE\tHELD BY\tLAST DESIGN\tLAST HEALTH")
	for _, r := range rows {
		holder := "-"
		if r.Holder != nil {
			holder = r.Holder.String()
		}
		design := "-"
		if r.Last.Design != "" {
			design = r.Last.Design + " " + r.Last.Version + " (" + r.Last.Programmed.Local().Format("01-02 15:04") + ")"
		}
		health := "-"
		if r.Last.Health != "" {
			health = r.Last.Health
			if r.Last.HealthReason != "" {
				health += ": " + r.Last.HealthReason
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Board, r.Kind, r.State, holder, design, cut(health, 80))
	}
	return tw.Flush()
}

// cut shortens s to n bytes and says so.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Reservable refuses, before anything is reserved, a reservation the lab's
// nightly would not honour (an *Error with ExitConfig).
func Reservable(lab *labconfig.Lab, names []string) error {
	for _, name := range names {
		if err := reservable(lab, name); err != nil {
			return setupError(err)
		}
	}
	return nil
}

// Reserve takes a lease on each board, all or none: when one is held,
// those taken are given back and the error (ExitInfra) names the holder.
func Reserve(d *lease.Dir, names []string, o lease.Options) ([]*lease.Lease, error) {
	var got []*lease.Lease
	for _, name := range names {
		l, err := d.Acquire(name, o)
		if err != nil {
			for _, l := range got {
				l.Release()
			}
			return nil, &Error{Code: ExitInfra, Err: err}
		}
		got = append(got, l)
	}
	return got, nil
}

// reservable says whether a reservation of the board would be honoured by
// the lab's nightly (Groups leases the boards it uses): the board
// must be the lab's, and an emulated board lives inside each labrunner
// process, so the nightly leases it only when the lab file names a lock
// directory.
func reservable(lab *labconfig.Lab, name string) error {
	b, ok := lab.Board(name)
	if !ok {
		return fmt.Errorf("no board %q in lab %s (%s): nothing reserved", name, lab.Name, NearestBoard(lab, name))
	}
	if b.Emulated != nil && lab.Locks == nil {
		return fmt.Errorf("%s is an emulated board of lab %s, which names no lock directory: each labrunner process has its own emulated rack, so the nightly would not honour the reservation; nothing reserved (add locks: {dir: %s} to the lab file to lease emulated boards too)", name, lab.Name, DefaultLocks)
	}
	return nil
}

// NearestBoard names the lab's board nearest to name ("did you mean
// exa-00?"), else lists the lab's boards.
func NearestBoard(lab *labconfig.Lab, name string) string {
	var names []string
	for _, b := range lab.Boards {
		names = append(names, b.Name)
	}
	if n := strictyaml.Nearest(name, names); n != "" {
		return "did you mean " + n + "?"
	}
	return "boards: " + strings.Join(names, ", ")
}
