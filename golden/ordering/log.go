package ordering

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxLogLen bounds a parsed delivery log.
const MaxLogLen = 1 << 20

// LogText renders a delivery log in the text form of the package
// documentation: comma-separated REQ numbers counted from 1 in execution
// order ("1,2,2,3"); when the log holds more than one stream, each entry is
// "stream.REQ" with streams counted from 0 ("0.1,1.1,0.2").
func LogText(execs []Exec, multi bool) string {
	var b strings.Builder
	for i, e := range execs {
		if i > 0 {
			b.WriteByte(',')
		}
		if multi {
			b.WriteString(strconv.Itoa(e.Stream))
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(e.Seq + 1))
	}
	return b.String()
}

// ParseLog reads the text form LogText writes; entries without a stream
// belong to stream 0. An empty text is an empty log.
func ParseLog(s string) ([]Exec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	fields := strings.Split(s, ",")
	if len(fields) > MaxLogLen {
		return nil, fmt.Errorf("ordering: delivery log of %d entries, more than %d", len(fields), MaxLogLen)
	}
	out := make([]Exec, 0, len(fields))
	for i, f := range fields {
		f = strings.TrimSpace(f)
		st, req, multi := strings.Cut(f, ".")
		if !multi {
			st, req = "0", f
		}
		stream, err := count(st, 0)
		if err != nil {
			return nil, fmt.Errorf("ordering: delivery log entry %d %q: stream: %w", i+1, f, err)
		}
		seq, err := count(req, 1)
		if err != nil {
			return nil, fmt.Errorf("ordering: delivery log entry %d %q: REQ: %w (REQs count from 1)", i+1, f, err)
		}
		out = append(out, Exec{Stream: stream, Seq: seq - 1})
	}
	return out, nil
}

func count(s string, lo int) (int, error) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a number without leading zeros", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || strings.ContainsAny(s, "+-") {
		return 0, fmt.Errorf("%q is not a whole number >= %d", s, lo)
	}
	return n, nil
}

// CheckLog judges a delivery log (the golden's or one read off a target)
// against what each stream's mode guarantees (SC'18 §III) and returns every
// violation. complete[i] tells whether stream i finished (every REQ
// acknowledged); for an unfinished stream only what has executed so far is
// judged.
//
//   - every stream: REQ numbers within the stream; a finished stream has
//     executed every REQ at least once;
//   - exactly-once (EOD streams, and the synchronization operation of every
//     synchronized transfer): no REQ executes twice, whatever was duplicated;
//   - ordered (slow and fast): first executions follow issue order, 1, 2, 3
//     ... with no gap (a duplicate of a non-EOD REQ may execute again later,
//     §III-D1);
//   - synchronized: the synchronization operation executes after the first
//     execution of every data REQ.
func CheckLog(streams []Stream, execs []Exec, complete []bool) []string {
	var bad []string
	count := make([][]int, len(streams))
	next := make([]int, len(streams)) // ordered: next REQ expected to execute first
	dataSeen := make([]int, len(streams))
	for i, s := range streams {
		count[i] = make([]int, max(s.N, 0))
	}
	for k, e := range execs {
		if e.Stream < 0 || e.Stream >= len(streams) {
			bad = append(bad, fmt.Sprintf("execution %d: stream %d does not exist", k+1, e.Stream))
			continue
		}
		s := streams[e.Stream]
		if e.Seq < 0 || e.Seq >= s.N {
			bad = append(bad, fmt.Sprintf("execution %d: stream %d has no REQ %d", k+1, e.Stream, e.Seq+1))
			continue
		}
		count[e.Stream][e.Seq]++
		c := count[e.Stream][e.Seq]
		syncOp := s.Mode == Sync && e.Seq == s.N-1
		if c > 1 && (s.EOD || syncOp) {
			bad = append(bad, fmt.Sprintf("execution %d: stream %d REQ %d executed %d times under exactly-once delivery", k+1, e.Stream, e.Seq+1, c))
		}
		if c > 1 {
			continue
		}
		switch s.Mode {
		case Slow, Fast:
			if e.Seq != next[e.Stream] {
				bad = append(bad, fmt.Sprintf("execution %d: stream %d (%s) executed REQ %d before REQ %d", k+1, e.Stream, s.Mode, e.Seq+1, next[e.Stream]+1))
			}
			next[e.Stream] = max(next[e.Stream], e.Seq+1)
		case Sync:
			if syncOp && dataSeen[e.Stream] < s.N-1 {
				bad = append(bad, fmt.Sprintf("execution %d: stream %d synchronization REQ %d executed after only %d of its %d data REQs", k+1, e.Stream, e.Seq+1, dataSeen[e.Stream], s.N-1))
			}
			if !syncOp {
				dataSeen[e.Stream]++
			}
		}
	}
	for i := range streams {
		if i >= len(complete) || !complete[i] {
			continue
		}
		for seq, c := range count[i] {
			if c == 0 {
				bad = append(bad, fmt.Sprintf("stream %d finished but REQ %d never executed", i, seq+1))
			}
		}
	}
	return bad
}
