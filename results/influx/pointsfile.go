package influx

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"github.com/labrunner/labrunner/results"
)

// PointsFile is a run's points in line protocol, written into the run
// directory by the nightly once the run is finished, so that exporting it
// (at the end of the nightly, or later with `labrunner export`) sends
// lines that are already built instead of decoding the run's logs again.
// Its first line is a line-protocol comment naming the files it was built
// from with their length and CRC-32C: a run directory changed since
// (resumed, edited) no longer matches and its points are rebuilt from the
// logs, so the file is only ever a faster way to the same points.
const PointsFile = "points.lp"

const pointsMagic = "#labrunner-points v1"

// sourceFiles are what Points reads from a run directory.
var sourceFiles = []string{results.RunFile, results.MeasurementsFile, results.VerdictsLogFile, results.ProgressFile}

// fingerprint describes the source files as they are now.
func fingerprint(dir string) (string, error) {
	var b strings.Builder
	for _, name := range sourceFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, " %s=absent", name)
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, " %s=%d:%08x", name, len(data), crc32.Checksum(data, crcTable))
	}
	return b.String(), nil
}

// WritePointsFile builds a finished run's points and writes them to its
// PointsFile (atomically). It returns how many points it wrote.
func WritePointsFile(dir string) (int, error) {
	d, err := ReadRunData(dir)
	if err != nil {
		return 0, err
	}
	fp, err := fingerprint(dir)
	if err != nil {
		return 0, err
	}
	ps := Points(d)
	buf := make([]byte, 0, 256*len(ps)+128)
	buf = append(buf, pointsMagic...)
	buf = append(buf, fp...)
	buf = append(buf, '\n')
	n := 0
	for i := range ps {
		start := len(buf)
		buf = ps[i].AppendLine(buf)
		if len(buf) > start {
			buf = append(buf, '\n')
			n++
		}
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, PointsFile), buf); err != nil {
		return 0, fmt.Errorf("writing the run's points: %w", err)
	}
	return n, nil
}

// readPointsFile returns the line-protocol lines of a run's PointsFile
// when there is one and it was built from the run directory as it is now;
// ok is false otherwise (the caller rebuilds the points).
func readPointsFile(dir string) (body []byte, ok bool) {
	data, err := os.ReadFile(filepath.Join(dir, PointsFile))
	if err != nil {
		return nil, false
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, false
	}
	fp, err := fingerprint(dir)
	if err != nil || string(data[:nl]) != pointsMagic+fp {
		return nil, false
	}
	return data[nl+1:], true
}
