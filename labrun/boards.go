package labrun

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/labrunner/labrunner/boards/lease"
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
