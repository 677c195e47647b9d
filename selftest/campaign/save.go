package campaign

import (
	"path/filepath"
	"strings"

	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/report"
)

// TextFile is the campaign's table, next to campaign.json.
const TextFile = "campaign.txt"

// Save writes the campaign into the baseline's run directory (JSON and
// table) and renders its report again, with the campaign's section.
func Save(dir string, camp *results.Campaign) error {
	if err := results.WriteCampaign(dir, camp); err != nil {
		return err
	}
	var b strings.Builder
	if err := WriteTable(&b, camp); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, TextFile), []byte(b.String())); err != nil {
		return err
	}
	_, err := report.Write(dir, labrun.ReportOptions())
	return err
}
