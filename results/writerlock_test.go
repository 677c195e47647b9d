package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunDirHasOneWriter: while a Dir writes a run directory, a second
// Open (a second --resume) is refused before it reads or writes anything,
// naming the writer; once the first closes, it may go on.
func TestRunDirHasOneWriter(t *testing.T) {
	d, err := Create(t.TempDir(), Run{Lab: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	d.AddVerdict(Verdict{Step: "p#0:a", Test: "a", Status: Pass})
	_, err = Open(d.Path)
	var be *BusyError
	if !errors.As(err, &be) || be.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), "being written by pid") {
		t.Fatalf("second writer while the first writes: %v", err)
	}
	d.Close()
	r, err := Open(d.Path)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	if _, err := Open(d.Path); !errors.As(err, &be) {
		t.Fatalf("a third writer while a resume writes: %v", err)
	}
	r.Close()
}

// TestTornLastLineIsCutBeforeAppending: a power loss in the middle of an
// append leaves half a line (or zeros) at the end of a log; a resume cuts it
// off, keeping a copy, so that its records start on lines of their own and
// every file stays readable.
func TestTornLastLineIsCutBeforeAppending(t *testing.T) {
	for name, tail := range map[string]string{
		"half a record": `{"time":"2026-01-01T00:00:00Z","plan":"p","te`,
		"zeros":         "\x00\x00\x00\x00\x00\x00",
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Create(t.TempDir(), Run{Lab: "lab"})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			d.AddMeasurement(Measurement{Time: now, Step: "p#0:a", Metric: "a", Value: 1})
			d.AddVerdict(Verdict{Step: "p#0:a", Test: "a", Board: "b", Status: Pass})
			d.MarkDone("p#0:a", KindTest)
			d.Close()
			for _, f := range []string{MeasurementsFile, VerdictsLogFile} {
				fh, _ := os.OpenFile(filepath.Join(d.Path, f), os.O_WRONLY|os.O_APPEND, 0)
				fh.WriteString(tail)
				fh.Close()
			}
			before, _ := os.ReadFile(filepath.Join(d.Path, MeasurementsFile))

			r, err := Open(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Repairs) != 2 || !strings.Contains(r.Repairs[0], "kept as") {
				t.Errorf("repairs: %q", r.Repairs)
			}
			r.AddMeasurement(Measurement{Time: now, Step: "p#1:b", Metric: "b", Value: 2})
			r.AddVerdict(Verdict{Step: "p#1:b", Test: "b", Board: "b", Status: Pass})
			r.MarkDone("p#1:b", KindTest)
			r.Close()

			ms, err := ReadMeasurements(d.Path)
			if err != nil || len(ms) != 2 {
				t.Fatalf("measurements after the resume: %d, %v", len(ms), err)
			}
			vs, err := ReadVerdictLog(d.Path)
			if err != nil || len(vs) != 2 {
				t.Fatalf("verdicts after the resume: %d, %v", len(vs), err)
			}
			kept, err := os.ReadFile(filepath.Join(d.Path, MeasurementsFile+".torn"))
			if err != nil || string(kept) != string(before) {
				t.Errorf("the copy of the torn file: %v (%d bytes, want %d)", err, len(kept), len(before))
			}
		})
	}
}

func TestRepairTornLineLeavesCleanFilesAlone(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\":2}\n"), 0o644)
	if rep, err := RepairTornLine(p); rep != "" || err != nil {
		t.Errorf("clean file: %q %v", rep, err)
	}
	if rep, err := RepairTornLine(filepath.Join(dir, "none")); rep != "" || err != nil {
		t.Errorf("missing file: %q %v", rep, err)
	}
	os.WriteFile(p, []byte("{\"a\":1}"), 0o644) // one torn line and nothing else
	if rep, err := RepairTornLine(p); rep == "" || err != nil {
		t.Errorf("a file of one torn line: %q %v", rep, err)
	}
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Errorf("left %q", b)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 2 {
		t.Errorf("want the file and its .torn copy, have %v", es)
	}
}

// FuzzRepairTornLine: whatever a crash leaves at the end of a log, after
// the repair the file ends with a newline (or is empty), is a prefix of
// what was there, and a second repair does nothing.
func FuzzRepairTornLine(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\""))
	f.Add([]byte("\x00\x00"))
	f.Add([]byte("{}\n\n  "))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := RepairTornLine(p); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if len(got) > 0 && got[len(got)-1] != '\n' {
			t.Fatalf("repaired file ends mid-line: %q", got)
		}
		if !strings.HasPrefix(string(data), string(got)) {
			t.Fatalf("repair changed what it kept: %q -> %q", data, got)
		}
		if rep, err := RepairTornLine(p); rep != "" || err != nil {
			t.Fatalf("second repair: %q %v", rep, err)
		}
	})
}
