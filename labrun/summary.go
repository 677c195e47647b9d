package labrun

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labrunner/labrunner/results"
)

// WriteSummary prints the summary table a person reads at the end of a run:
// one row per plan and board, then every test case that did not pass.
func WriteSummary(w io.Writer, run results.Run, vs []results.Verdict, elapsed time.Duration) {
	type key struct{ plan, board string }
	counts := map[key]*results.Summary{}
	var keys []key
	for _, v := range vs {
		k := key{v.Plan, v.Board}
		s, ok := counts[k]
		if !ok {
			s = &results.Summary{}
			counts[k] = s
			keys = append(keys, k)
		}
		s.Total++
		switch v.Status {
		case results.Pass:
			s.Pass++
		case results.Fail:
			s.Fail++
		case results.Error:
			s.Error++
		case results.Skip:
			s.Skip++
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].plan != keys[j].plan {
			return keys[i].plan < keys[j].plan
		}
		return keys[i].board < keys[j].board
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PLAN\tBOARD\tTESTS\tPASS\tFAIL\tERROR\tSKIP\n")
	for _, k := range keys {
		s := counts[k]
		board := k.board
		if board == "" {
			board = "(plan)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", k.plan, board, s.Total, s.Pass, s.Fail, s.Error, s.Skip)
	}
	tw.Flush()
	bad := 0
	for _, v := range results.SortVerdicts(vs) {
		if v.Status == results.Pass || v.Status == results.Skip {
			continue
		}
		if bad == 0 {
			fmt.Fprintln(w, "\nNot passed:")
		}
		bad++
		if bad > 40 {
			continue
		}
		board := v.Board
		if board == "" {
			board = "-"
		}
		fmt.Fprintf(w, "  %-5s %s %s %s: %s\n", strings.ToUpper(string(v.Status)), v.Plan, board, v.Name(), oneLine(v.Message, 300))
	}
	if bad > 40 {
		fmt.Fprintf(w, "  ... and %d more (see verdicts.json)\n", bad-40)
	}
	s := results.Summarize(vs)
	fmt.Fprintf(w, "\n%d test cases: %d passed, %d failed, %d errors, %d skipped in %s\n", s.Total, s.Pass, s.Fail, s.Error, s.Skip, elapsed.Round(time.Millisecond))
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
