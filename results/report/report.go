// Package report renders a run directory as one self-contained HTML file
// (report.html) that reads at a glance on a 1400 px screen: what did not
// pass, failures first, each with its measured and expected values as
// numbers side by side, the band and how far the reading is off it, the
// message in a column of its own and the paper section; then one section
// per plan with the figures its design describes (the report: block of its
// catalogue manifest, see bitstreams.Report), drawn against the golden
// expectations and their bands, and one table line for every other metric
// (a counter that stayed at zero is a line, not a plot); what changed since
// the previous run; the passed verdicts and the bitstreams. Plots are drawn
// with gonum.org/v1/plot and embedded as SVG data URIs, so the file opens
// anywhere, offline, on its own.
//
// The page is a list of sections (Section, SectionFunc): a new part of the
// report is one more function.
package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
)

// File is the report's name inside a run directory.
const File = "report.html"

// Expected is one line of expectations.jsonl: the expectation a
// measurement was scored against, with the test and board it was used for.
type Expected struct {
	Test  string `json:"test"`
	Board string `json:"board"`
	results.Expectation
}

// ReadExpectations reads expectations.jsonl. A last line cut short by a
// crash is ignored; any other bad line is an error naming its line.
func ReadExpectations(dir string) ([]Expected, error) {
	f, err := os.Open(filepath.Join(dir, results.ExpectationsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeExpectations(f, filepath.Join(dir, results.ExpectationsFile))
}

// DecodeExpectations reads expectation lines from r (name is used in
// errors).
func DecodeExpectations(r io.Reader, name string) ([]Expected, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []Expected
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var e Expected
			if uerr := json.Unmarshal(line, &e); uerr != nil {
				if line[len(line)-1] != '\n' {
					return out, nil // cut short by a crash while being written
				}
				return out, fmt.Errorf("%s:%d: %w", name, n, uerr)
			}
			out = append(out, e)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// Data is what a report shows.
type Data struct {
	Dir          string
	Run          results.Run
	Measurements []results.Measurement
	Verdicts     []results.Verdict
	Expectations []Expected
	Compare      *compare.Result
}

// Load reads a run directory (and its compare.json when there is one).
func Load(dir string) (*Data, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	d := &Data{Dir: dir, Run: *run}
	if d.Measurements, err = results.ReadMeasurements(dir); err != nil {
		return nil, err
	}
	if d.Verdicts, err = results.ReadVerdictLog(dir); err != nil {
		return nil, err
	}
	if d.Expectations, err = ReadExpectations(dir); err != nil {
		return nil, err
	}
	if d.Compare, err = compare.Read(dir); err != nil {
		return nil, err
	}
	return d, nil
}

// Options add to what the run directory says.
type Options struct {
	// Notes are shown under the run's header (the nightly adds the
	// InfluxDB export's outcome).
	Notes []string
	// Catalogue describes the designs' figures (their report: blocks);
	// bitstreams.Default() when nil.
	Catalogue *bitstreams.Catalogue
	// Procedures describe the figures of plans that are not a catalogue
	// design, by plan name: the bring-up's ("bringup").
	Procedures map[string]*bitstreams.Report
	// Sections are added after the plans' sections (before the passed
	// verdicts), in this order.
	Sections []SectionFunc
}

// Write renders dir's report into dir/report.html (atomically) and returns
// its path.
func Write(dir string, opts Options) (string, error) {
	d, err := Load(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := Render(&b, d, opts); err != nil {
		return "", err
	}
	path := filepath.Join(dir, File)
	if err := results.WriteFileAtomic(path, []byte(b.String())); err != nil {
		return "", err
	}
	// A report is for people (and web servers) to read.
	if err := os.Chmod(path, 0o644); err != nil {
		return "", err
	}
	return path, nil
}
