package golden_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/bringup"
	"github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/golden/ordering"
	"github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/golden/tin"
)

// docs/figures.md lists, per paper, every figure a golden model reproduces:
// each section must hold exactly the rows the models give (Figure.Row), so
// that the table cannot say something the models do not. The models' own
// tests recompute the values.
func TestFiguresDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "figures.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, sec := range []struct {
		title string
		figs  []golden.Figure
	}{
		{"## ExaNet (ParCo 2017)", exanet.Figures()},
		{"## Shoal (NSDI 2019)", append(shoal.Figures(), bringup.ShoalFigures()...)},
		{"## PRR (FPGA 2020)", prr.Figures()},
		{"## Aquila (NSDI 2022)", tin.Figures()},
		{"## SC'18 ordering", ordering.Figures()},
		{"## Aquila management plane", bringup.AquilaFigures()},
	} {
		i := strings.Index(doc, "\n"+sec.title+"\n")
		if i < 0 {
			t.Errorf("docs/figures.md has no section %q", sec.title)
			continue
		}
		body := doc[i+len(sec.title)+2:]
		if j := strings.Index(body, "\n## "); j >= 0 {
			body = body[:j]
		}
		var rows []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| figure |") {
				rows = append(rows, l)
			}
		}
		want := map[string]bool{}
		for _, f := range sec.figs {
			want[f.Row()] = true
			if !strings.Contains(body, f.Row()+"\n") {
				t.Errorf("%s: docs/figures.md lacks the row\n%s", sec.title, f.Row())
			}
		}
		for _, r := range rows {
			if !want[r] {
				t.Errorf("%s: docs/figures.md has a row no model gives:\n%s", sec.title, r)
			}
		}
	}
}

// docs/figures.md tells the reader to run `make figures`: the target exists
// and runs the figure tests of the packages with slow figures under
// -figures (make -n prints the command without running the minute it takes;
// the tests themselves run in the normal suite without the flag).
func TestMakeFigures(t *testing.T) {
	out, err := exec.Command("make", "-n", "-C", moduleRoot(t), "figures").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n figures: %v\n%s", err, out)
	}
	for _, want := range []string{"go test", "./golden/shoal", "./golden/prr", "./golden/tin", "-figures"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make figures runs %q, which lacks %q", out, want)
		}
	}
}
