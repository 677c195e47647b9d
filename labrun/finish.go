package labrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
	"github.com/labrunner/labrunner/results/influx"
	"github.com/labrunner/labrunner/results/progress"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// exportDeadline bounds the InfluxDB export at the end of a nightly: a slow
// server leaves its points in the spool rather than holding the run.
const exportDeadline = 2 * time.Minute

// InfluxFlags name an InfluxDB on the command line; each field given
// replaces the lab file's influx: block's, field by field.
type InfluxFlags struct {
	URL, Org, Bucket string
	// TokenFile holds the token (1.8: "user:pass"); without it, the lab's
	// influx.token_file, else $INFLUX_TOKEN.
	TokenFile string
}

// InfluxConfig merges the lab file's influx block (lab may be nil) with
// the flags. It returns nil when no server is named.
func InfluxConfig(flags InfluxFlags, lab *labconfig.Lab, log *slog.Logger) (*influx.Config, error) {
	var cfg influx.Config
	tokenFile := ""
	if lab != nil && lab.Influx != nil {
		cfg.URL, cfg.Org, cfg.Bucket = lab.Influx.URL, lab.Influx.Org, lab.Influx.Bucket
		tokenFile = lab.Influx.TokenFile
		if tokenFile != "" && !filepath.IsAbs(tokenFile) && lab.Pos.File != "" && !isEmbedded(lab) {
			tokenFile = filepath.Join(filepath.Dir(lab.Pos.File), tokenFile)
		}
	}
	for _, f := range []struct {
		given string
		dst   *string
	}{{flags.URL, &cfg.URL}, {flags.Org, &cfg.Org}, {flags.Bucket, &cfg.Bucket}, {flags.TokenFile, &tokenFile}} {
		if f.given != "" {
			*f.dst = f.given
		}
	}
	if cfg.URL == "" {
		if flags.Org != "" || flags.Bucket != "" || flags.TokenFile != "" {
			return nil, setupError(errors.New("--influx-org/--influx-bucket/--influx-token-file need --influx-url (or influx.url in the lab file)"))
		}
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, setupError(err)
	}
	tok, err := influx.LoadToken(tokenFile)
	if err != nil {
		return nil, setupError(err)
	}
	if tok == "" {
		log.Info("no InfluxDB token given (--influx-token-file or INFLUX_TOKEN): writing without authentication", "influx", cfg)
	}
	cfg.Token = tok
	cfg.Log = log
	return &cfg, nil
}

// progressPlans describes the selected plans for the progress display:
// their boards and their steps (check bitstreams, program, setup, tests).
func progressPlans(lab *labconfig.Lab, only []string, mgmt bool) []progress.Plan {
	want := map[string]bool{}
	for _, p := range only {
		want[p] = true
	}
	var out []progress.Plan
	for _, p := range lab.Plans {
		if len(want) > 0 && !want[p.Name] {
			continue
		}
		pp := progress.Plan{Name: p.Name, Steps: selftest.Steps(&p, mgmt)}
		for _, b := range p.Boards {
			pp.Boards = append(pp.Boards, b.Board)
		}
		out = append(out, pp)
	}
	return out
}

// verdictCounts counts a run's verdicts per board, for the progress bars.
func verdictCounts(current func() *results.Dir) progress.CountsFunc {
	return func() map[string]progress.Counts {
		out := map[string]progress.Counts{}
		dir := current()
		if dir == nil {
			return out
		}
		for _, v := range dir.Verdicts() {
			c := out[v.Board]
			c.Verdicts++
			if v.Status == results.Fail || v.Status == results.Error {
				c.NotPass++
			}
			out[v.Board] = c
		}
		return out
	}
}

// afterRun is the end of a nightly: compare with the previous run of each
// plan, export to InfluxDB, write the report. None of it changes the run's
// verdicts or exit code; each step's trouble is logged and reported.
type afterRun struct {
	cmp       *compare.Result
	exportMsg string
	exportErr error
}

func (n *nightly) finish(ctx context.Context) afterRun {
	var out afterRun
	lab, dir, log := n.lab, n.dir, n.log
	th := compare.Thresholds{}
	for k, v := range lab.Results.Thresholds {
		th[k] = v
	}
	if r, err := compare.WithPrevious(n.root, dir.Path, th); err != nil {
		log.Warn("comparing with the previous run failed", "err", err)
	} else {
		out.cmp = r
		if err := compare.Save(dir.Path, r); err != nil {
			log.Warn("writing compare.json failed", "err", err)
		}
	}
	// The points in line protocol, for this export and any later one.
	if pts, err := influx.WritePointsFile(dir.Path); err != nil {
		log.Warn("writing the run's points file failed; an export rebuilds the points from the logs", "err", err)
	} else {
		log.Info("points written", "file", influx.PointsFile, "points", pts)
	}
	if n.icfg != nil {
		out.exportMsg, out.exportErr = exportRun(ctx, *n.icfg, n.root, dir.Path)
		if out.exportErr != nil {
			log.Warn("InfluxDB export incomplete; the run's verdicts are unaffected", "err", out.exportErr)
		}
	}
	var notes []string
	if out.exportMsg != "" {
		notes = append(notes, out.exportMsg)
	}
	if _, err := report.Write(dir.Path, ReportOptions(notes...)); err != nil {
		log.Error("writing report.html failed", "err", err)
	}
	return out
}

// ReportOptions are the options of every report labrunner writes: the
// catalogue's designs and the bring-up (not a catalogue design) describe
// the figures drawn for their plans.
func ReportOptions(notes ...string) report.Options {
	return report.Options{Notes: notes, Catalogue: bitstreams.Default(),
		Procedures: map[string]*bitstreams.Report{bringup.PlanName: bringup.Figures()},
		Sections:   []report.SectionFunc{report.CampaignSection, report.HarnessSection}}
}

func exportRun(ctx context.Context, cfg influx.Config, root, dir string) (string, error) {
	ex, err := influx.New(cfg, root)
	if err != nil {
		return "InfluxDB export not attempted: " + err.Error(), err
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(ctx, exportDeadline)
	defer cancel()
	res, err := ex.Export(ctx, dir)
	msg := fmt.Sprintf("InfluxDB (%s): %d points sent, %d waiting in the spool %s", cfg, res.Sent, res.Waiting, res.Spool)
	if res.Quarantined > 0 {
		msg += fmt.Sprintf(", %d refused and kept in its quarantine/", res.Quarantined)
	}
	if err != nil {
		var xe *influx.Error
		if errors.As(err, &xe) {
			msg += fmt.Sprintf(" (%s: %s)", xe.Kind, xe.Message)
		} else {
			msg += " (" + err.Error() + ")"
		}
	}
	return msg, err
}

// Export spools the points of the run directory dir under root (dir's
// parent when empty) and sends everything waiting there to the InfluxDB
// flags and the lab file (optional) name; it says on w what was spooled,
// sent and left waiting. A bad run directory, lab, token or bucket is an
// *Error with ExitConfig, a server that did not take the points ExitInfra
// (they wait in the spool).
func Export(ctx context.Context, dir, root string, flags InfluxFlags, labFile string, log *slog.Logger, w io.Writer) error {
	if _, err := results.ReadRun(dir); err != nil {
		return setupError(err)
	}
	var lab *labconfig.Lab
	if labFile != "" {
		var err error
		if lab, err = LoadLab(labFile, bitstreams.Default()); err != nil {
			return err
		}
	}
	cfg, err := InfluxConfig(flags, lab, log)
	if err != nil {
		return err
	}
	if cfg == nil {
		return setupError(errors.New("no InfluxDB named: give --influx-url, --influx-org and --influx-bucket (or a lab file with an influx: block)"))
	}
	if root == "" {
		root = filepath.Dir(filepath.Clean(dir))
	}
	ex, err := influx.New(*cfg, root)
	if err != nil {
		return setupError(err)
	}
	defer ex.Close()
	res, err := ex.Export(ctx, dir)
	refused := ""
	if res.Quarantined > 0 {
		refused = fmt.Sprintf(", %d refused by the server (kept in the spool's quarantine/)", res.Quarantined)
	}
	fmt.Fprintf(orDiscard(w), "influx: %d points of %s spooled; %d sent%s, %d waiting in %s\n",
		res.Spooled, filepath.Base(dir), res.Sent, refused, res.Waiting, res.Spool)
	return exportError(err)
}

// exportError maps an export failure to an exit code: a token or bucket
// problem is configuration (2), a server that did not take the points is
// infrastructure (3).
func exportError(err error) error {
	if err == nil {
		return nil
	}
	var xe *influx.Error
	if errors.As(err, &xe) && (xe.Kind == influx.Auth || xe.Kind == influx.NotFound) {
		return &Error{Code: ExitConfig, Err: err}
	}
	return &Error{Code: ExitInfra, Err: err}
}
