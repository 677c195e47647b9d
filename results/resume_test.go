package results

import (
	"testing"
	"time"
)

// A run killed in the middle of a step and resumed shows every step's
// records exactly once: finished tests from the first attempt, the
// interrupted step from the attempt that finished it, setup from the latest.
func TestResumeKeepsOneCopyOfEveryStep(t *testing.T) {
	d, err := Create(t.TempDir(), Run{Lab: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	add := func(d *Dir, step string, n int) {
		for i := 0; i < n; i++ {
			d.AddMeasurement(Measurement{Time: now, Step: step, Metric: step, Value: float64(i)})
			d.AddVerdict(Verdict{Step: step, Test: step, Board: "b", Status: Pass, Params: Params{"i": string(rune('0' + i))}})
		}
	}
	add(d, "p#program", 1)
	d.MarkDone("p#program", KindSetup)
	add(d, "p#0:registers", 3)
	d.MarkDone("p#0:registers", KindTest)
	add(d, "p#1:bandwidth", 2) // killed here: 2 of its 4 verdicts on disk
	d.Close()                  // (a kill -9 closes nothing; the files are synced line by line)

	r, err := Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempt() != 1 {
		t.Fatalf("attempt %d, want 1", r.Attempt())
	}
	if !r.Done("p#0:registers") || r.Done("p#1:bandwidth") {
		t.Fatal("Done does not tell finished tests from the interrupted one")
	}
	add(r, "p#program", 1)
	r.MarkDone("p#program", KindSetup)
	add(r, "p#1:bandwidth", 4)
	r.MarkDone("p#1:bandwidth", KindTest)
	vs := r.Verdicts()
	count := map[string]int{}
	for _, v := range vs {
		count[v.Step]++
		if v.Step == "p#1:bandwidth" && v.Attempt != 1 {
			t.Errorf("the interrupted attempt's bandwidth verdict is still shown: %+v", v)
		}
		if v.Step == "p#0:registers" && v.Attempt != 0 {
			t.Errorf("registers shown from attempt %d", v.Attempt)
		}
	}
	if count["p#program"] != 1 || count["p#0:registers"] != 3 || count["p#1:bandwidth"] != 4 {
		t.Fatalf("verdicts per step %v, want program 1, registers 3, bandwidth 4", count)
	}
	r.Close()
	ms, err := ReadMeasurements(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	mc := map[string]int{}
	for _, m := range ms {
		mc[m.Step]++
	}
	if mc["p#program"] != 1 || mc["p#0:registers"] != 3 || mc["p#1:bandwidth"] != 4 {
		t.Fatalf("measurements per step %v", mc)
	}
	// An interrupted step that no attempt finished keeps its partial records.
	r2, _ := Open(d.Path)
	add(r2, "p#2:latency", 2)
	r2.Close()
	vl, _ := ReadVerdictLog(d.Path)
	n := 0
	for _, v := range vl {
		if v.Step == "p#2:latency" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("unfinished step kept %d verdicts, want its 2", n)
	}
}
