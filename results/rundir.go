package results

import (
	"bytes"
	"encoding/json"
	"runtime"

	// The run directory's logs are read whole by export and report:
	// goccy/go-json decodes them about three times faster than
	// encoding/json (BenchmarkStdJSON/GoJSON, 6.5 vs 2.2 µs a verdict),
	// which is what keeps `labrunner export` near a plain HTTP write.
	"errors"
	"fmt"
	fastjson "github.com/goccy/go-json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// File names inside a run directory.
const (
	RunFile          = "run.json"
	MeasurementsFile = "measurements.jsonl"
	ExpectationsFile = "expectations.jsonl"
	VerdictsLogFile  = "verdicts.jsonl"
	VerdictsFile     = "verdicts.json"
	JUnitFile        = "junit.xml"
	ConsolesDir      = "consoles"
	LogFile          = "labrunner.log"
)

// BitstreamInfo records what was loaded on a board.
type BitstreamInfo struct {
	Board   string `json:"board"`
	Kind    string `json:"kind,omitempty"`
	Plan    string `json:"plan,omitempty"`
	Design  string `json:"design"`
	Version string `json:"version,omitempty"`
	File    string `json:"file,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Part    string `json:"part,omitempty"`
}

// Run is run.json: what ran, where, with what, and how it ended.
type Run struct {
	ID         string            `json:"id"`
	Lab        string            `json:"lab"`
	LabFile    string            `json:"lab_file"`
	Plans      []string          `json:"plans"`
	Host       string            `json:"host,omitempty"`
	Seed       int64             `json:"seed,omitempty"`
	Faults     []string          `json:"faults,omitempty"`
	Shard      string            `json:"shard,omitempty"`
	Versions   map[string]string `json:"versions,omitempty"`
	Bitstreams []BitstreamInfo   `json:"bitstreams,omitempty"`
	Start      time.Time         `json:"start"`
	End        *time.Time        `json:"end,omitempty"`
	// Status: "running" until the run ends, then "passed", "failed",
	// "infrastructure-error" or "setup-error".
	Status   string   `json:"status"`
	ExitCode int      `json:"exit_code"`
	Summary  *Summary `json:"summary,omitempty"`
	// Resumes counts the --resume runs that went on with this directory.
	Resumes int `json:"resumes,omitempty"`
	// Sessions are the spans the runner worked on this directory: the
	// first run and each --resume. End - Start of a resumed run counts the
	// hours it lay crashed or finished before the resume; Worked does not.
	Sessions []Session `json:"sessions,omitempty"`
}

// Session is one span of work on a run directory. End is nil while it
// runs, and stays nil when the runner crashed or was killed.
type Session struct {
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
}

// Worked is the time the runner spent on the run: its sessions' lengths
// added up (a session that never ended counts up to lastSeen, the last
// time the run directory was written, when that is known), or End - Start
// for a run written before sessions were recorded. ok is false while the
// run has not ended.
func (r *Run) Worked() (d time.Duration, ok bool) {
	if r.End == nil {
		return 0, false
	}
	if len(r.Sessions) == 0 {
		return r.End.Sub(r.Start), true
	}
	for _, s := range r.Sessions {
		if s.End != nil && s.End.After(s.Start) {
			d += s.End.Sub(s.Start)
		}
	}
	return d, true
}

// BeginSession starts a session of work on the run at now (a resume):
// the run is running again; a session the runner crashed in ends at
// lastSeen (the last time it wrote the directory), and a run from before
// sessions were recorded gets its first one.
func (r *Run) BeginSession(now, lastSeen time.Time) {
	if len(r.Sessions) == 0 {
		first := Session{Start: r.Start, End: r.End}
		if first.End == nil && lastSeen.After(r.Start) {
			first.End = &lastSeen
		}
		r.Sessions = append(r.Sessions, first)
	}
	if last := &r.Sessions[len(r.Sessions)-1]; last.End == nil && lastSeen.After(last.Start) {
		last.End = &lastSeen
	}
	r.Sessions = append(r.Sessions, Session{Start: now})
	r.Status, r.End, r.Resumes = "running", nil, r.Resumes+1
}

// Summary counts verdicts.
type Summary struct {
	Total int `json:"total"`
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// Summarize counts verdicts by status.
func Summarize(vs []Verdict) Summary {
	s := Summary{Total: len(vs)}
	for _, v := range vs {
		switch v.Status {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Error:
			s.Error++
		case Skip:
			s.Skip++
		}
	}
	return s
}

// Dir is an open run directory. Measurements, expectations and verdicts are
// appended as JSON lines and synced as they come, so that a run that crashes
// keeps everything it measured; run.json, verdicts.json and junit.xml are
// replaced atomically (write, sync, rename), so a reader never sees half a
// file. Dir is safe for concurrent use.
type Dir struct {
	Path string

	mu       sync.Mutex
	run      Run
	meas     *os.File
	exp      *os.File
	verdicts *os.File
	prog     *os.File
	all      []Verdict // every verdict on disk, all attempts
	progress []Progress
	attempt  int
	writer   *os.File // holds the directory's writer lock until Close
	// Repairs says what Open repaired before appending (a torn last line
	// cut off, and where its copy is), for the log.
	Repairs []string
}

// Create makes a new run directory under root, named from the start time and
// the lab (adding a suffix if that name is taken), and writes run.json.
func Create(root string, run Run) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("results root %s: %w", root, err)
	}
	if run.Start.IsZero() {
		run.Start = time.Now()
	}
	base := run.Start.UTC().Format("20060102-150405") + "-" + sanitize(run.Lab)
	if run.Shard != "" {
		base += "-shard" + strings.ReplaceAll(run.Shard, "/", "of")
	}
	var path string
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		path = filepath.Join(root, name)
		err := os.Mkdir(path, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return nil, fmt.Errorf("creating run directory %s: %w", path, err)
		}
	}
	if run.ID == "" {
		run.ID = filepath.Base(path)
	}
	run.Status = "running"
	if len(run.Sessions) == 0 {
		run.Sessions = []Session{{Start: run.Start}}
	}
	d := &Dir{Path: path, run: run}
	w, err := lockWriter(path)
	if err != nil {
		return nil, err
	}
	d.writer = w
	if err := d.openLogs(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.writeRun(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Open reopens an existing run directory to append to it (resume) or
// re-render its reports. It first takes the directory's writer lock: a
// directory another process writes (a nightly, another resume) is refused
// with a *BusyError, before anything is read or written. Then a last line
// of a log cut short by a crash or a power loss is cut off, a copy of the
// file kept (Repairs says which), so that what is appended starts on a line
// of its own. Verdicts already on disk are loaded.
func Open(path string) (*Dir, error) {
	run, err := ReadRun(path)
	if err != nil {
		return nil, err
	}
	d := &Dir{Path: path, run: *run}
	if d.writer, err = lockWriter(path); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()
	for _, name := range []string{MeasurementsFile, ExpectationsFile, VerdictsLogFile, ProgressFile} {
		rep, err := RepairTornLine(filepath.Join(path, name))
		if err != nil {
			return nil, err
		}
		if rep != "" {
			d.Repairs = append(d.Repairs, rep)
		}
	}
	vs, err := readVerdictLogRaw(path)
	if err != nil {
		return nil, err
	}
	d.all = vs
	if err := d.resumeState(); err != nil {
		return nil, err
	}
	if err := d.openLogs(); err != nil {
		return nil, err
	}
	ok = true
	return d, nil
}

func (d *Dir) openLogs() error {
	if err := os.MkdirAll(filepath.Join(d.Path, ConsolesDir), 0o755); err != nil {
		return err
	}
	var err error
	open := func(name string) *os.File {
		if err != nil {
			return nil
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(d.Path, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		return f
	}
	d.meas = open(MeasurementsFile)
	d.exp = open(ExpectationsFile)
	d.verdicts = open(VerdictsLogFile)
	d.prog = open(ProgressFile)
	if err != nil {
		return fmt.Errorf("run directory %s: %w", d.Path, err)
	}
	return nil
}

// Run returns a copy of run.json's content.
func (d *Dir) Run() Run {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run
}

// UpdateRun changes run.json atomically.
func (d *Dir) UpdateRun(f func(*Run)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.run)
	return d.writeRunLocked()
}

func (d *Dir) writeRun() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeRunLocked()
}

func (d *Dir) writeRunLocked() error {
	b, err := json.MarshalIndent(d.run, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(d.Path, RunFile), append(b, '\n'))
}

// appendLine appends v to f as one JSON line, not yet synced: MarkDone
// syncs a step's lines before it records the step done, and Close syncs
// the rest. What a power loss can take is then the lines of the step that
// was running, which a resume runs again anyway (a step not recorded done
// is run again and its rerun's lines supersede these, see filterVerdicts);
// a sync per line cost every run thousands of journal commits, a wait
// that runs sharing a disk queued on.
func appendLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = f.Write(b)
	return err
}

// syncData syncs the data files (measurements, expectations, verdicts).
// The caller holds d.mu.
func (d *Dir) syncData() error {
	var errs []error
	for _, f := range []*os.File{d.meas, d.exp, d.verdicts} {
		if f != nil {
			errs = append(errs, f.Sync())
		}
	}
	return errors.Join(errs...)
}

// AddMeasurement appends a measurement.
func (d *Dir) AddMeasurement(m Measurement) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m.Attempt = d.attempt
	return appendLine(d.meas, m)
}

// AddExpectation appends the expectation a measurement was scored against,
// with the board and test it was used for.
func (d *Dir) AddExpectation(test, board string, e Expectation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return appendLine(d.exp, struct {
		Test  string `json:"test"`
		Board string `json:"board"`
		Expectation
	}{test, board, e})
}

// AddVerdict appends a verdict.
func (d *Dir) AddVerdict(v Verdict) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v.Attempt = d.attempt
	d.all = append(d.all, v)
	return appendLine(d.verdicts, v)
}

// Verdicts returns the verdicts so far: one copy of each step's verdicts
// when the run was resumed (see ProgressFile).
func (d *Dir) Verdicts() []Verdict {
	d.mu.Lock()
	defer d.mu.Unlock()
	return filterVerdicts(append([]Verdict(nil), d.all...), d.progress)
}

// ConsoleTranscript opens (appending) the transcript file of a board's console.
func (d *Dir) ConsoleTranscript(board string) (*os.File, error) {
	return os.OpenFile(filepath.Join(d.Path, ConsolesDir, sanitize(board)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// Finish writes verdicts.json and junit.xml and closes run.json with the
// end time, status and exit code.
func (d *Dir) Finish(status string, exitCode int) error {
	vs := d.Verdicts()
	sum := Summarize(vs)
	b, err := json.MarshalIndent(struct {
		Summary  Summary   `json:"summary"`
		Verdicts []Verdict `json:"verdicts"`
	}{sum, SortVerdicts(vs)}, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(d.Path, VerdictsFile), append(b, '\n')); err != nil {
		return err
	}
	d.mu.Lock()
	run := d.run
	d.mu.Unlock()
	junit, err := JUnit(run, vs)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(d.Path, JUnitFile), junit); err != nil {
		return err
	}
	return d.UpdateRun(func(r *Run) {
		now := time.Now()
		r.End = &now
		if n := len(r.Sessions); n > 0 && r.Sessions[n-1].End == nil {
			r.Sessions[n-1].End = &now
		}
		r.Status = status
		r.ExitCode = exitCode
		r.Summary = &sum
	})
}

// Close closes the append-only files.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	errs := []error{d.syncData()}
	for _, f := range []*os.File{d.meas, d.exp, d.verdicts, d.prog} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	d.meas, d.exp, d.verdicts, d.prog = nil, nil, nil, nil
	if d.writer != nil {
		// Closing the descriptor drops the flock; the file stays (removing
		// it would let a waiting writer lock a file a third one no longer
		// sees).
		errs = append(errs, d.writer.Close())
		d.writer = nil
	}
	return errors.Join(errs...)
}

// SortVerdicts orders verdicts failures first, then errors, then by plan,
// test, board and parameters, for reports.
func SortVerdicts(vs []Verdict) []Verdict {
	out := append([]Verdict(nil), vs...)
	rank := map[Status]int{Fail: 0, Error: 1, Skip: 2, Pass: 3}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Status] != rank[b.Status] {
			return rank[a.Status] < rank[b.Status]
		}
		if a.Plan != b.Plan {
			return a.Plan < b.Plan
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		if a.Board != b.Board {
			return a.Board < b.Board
		}
		return a.Params.String() < b.Params.String()
	})
	return out
}

// ReadRun reads run.json.
func ReadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, fmt.Errorf("%s is not a run directory: %w", dir, err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	return &r, nil
}

// ReadMeasurements reads measurements.jsonl: one copy of each step's
// measurements when the run was resumed. A last line cut short by a crash is
// ignored; any other bad line is an error naming its line number.
func ReadMeasurements(dir string) ([]Measurement, error) {
	ms, err := readMeasurementsRaw(dir)
	if err != nil {
		return nil, err
	}
	ps, err := ReadProgress(dir)
	if err != nil {
		return nil, err
	}
	return filterMeasurements(ms, ps), nil
}

func readMeasurementsRaw(dir string) ([]Measurement, error) {
	return decodeLines[Measurement](filepath.Join(dir, MeasurementsFile))
}

// ReadVerdictLog reads verdicts.jsonl, the verdicts as they were taken (one
// copy of each step's verdicts when the run was resumed).
func ReadVerdictLog(dir string) ([]Verdict, error) {
	vs, err := readVerdictLogRaw(dir)
	if err != nil {
		return nil, err
	}
	ps, err := ReadProgress(dir)
	if err != nil {
		return nil, err
	}
	return filterVerdicts(vs, ps), nil
}

func readVerdictLogRaw(dir string) ([]Verdict, error) {
	return decodeLines[Verdict](filepath.Join(dir, VerdictsLogFile))
}

// jsonLine is one non-blank line of a JSON-lines file: its number, its
// bytes (a slice of the file read whole) and whether it ends with a
// newline (only a last line cut short by a crash does not).
type jsonLine struct {
	n        int
	line     []byte
	complete bool
}

// readJSONLines reads a JSON-lines file whole and splits it into its
// non-blank lines (none, no error, when the file does not exist). One read
// instead of a copy per line: a run's logs are at most tens of megabytes,
// and reading them is what export and report wait on.
func readJSONLines(path string) ([]jsonLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []jsonLine
	for n := 1; len(data) > 0; n++ {
		l := jsonLine{n: n, line: data}
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l.line, data, l.complete = data[:i+1], data[i+1:], true
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(l.line)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// lineError is the error of a bad line: path:line, or none when it is the
// last line and cut short by a crash (its record is dropped).
func lineError(path string, l jsonLine, err error) error {
	if !l.complete {
		return nil
	}
	return fmt.Errorf("%s:%d: %w", path, l.n, err)
}

// decodeLines reads and decodes a JSON-lines file of records.
func decodeLines[T any](path string) ([]T, error) {
	lines, err := readJSONLines(path)
	if err != nil {
		return nil, err
	}
	return decodeJSONLines[T](path, lines)
}

// decodeJSONLines decodes lines in parallel: one chunk per CPU, each
// decoded by its own goroutine into its part of the result. The first bad
// line in file order is the error (lineError).
func decodeJSONLines[T any](path string, lines []jsonLine) ([]T, error) {
	out := make([]T, len(lines))
	errs := make([]error, len(lines))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(lines)/512))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*len(lines)/workers, (w+1)*len(lines)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := validJSON(lines[i].line); err != nil {
					errs[i] = err
					return // what follows in this chunk is not needed
				}
				if err := fastjson.Unmarshal(lines[i].line, &out[i]); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out[:i], lineError(path, lines[i], err)
		}
	}
	return out, nil
}

// EachMeasurement calls fn with each measurement ReadMeasurements would
// return, in file order, decoding as it goes: a caller can act on the first
// records before the last is decoded (labrunner export has its first batch
// on the wire while the rest decode). Every line is checked to be JSON
// before fn sees the first record, so a file cut short or garbled is
// refused before anything is done with it; a line that is JSON but not a
// measurement (hand-edited, another tool's) stops the reading at that line,
// after fn saw the records before it. An error from fn stops the reading
// and comes back as it is.
func EachMeasurement(dir string, fn func(*Measurement) error) error {
	path := filepath.Join(dir, MeasurementsFile)
	lines, err := readJSONLines(path)
	if err != nil {
		return err
	}
	for i, l := range lines {
		if err := validJSON(l.line); err != nil {
			if err := lineError(path, l, err); err != nil {
				return err
			}
			lines = lines[:i] // the last line, cut short
		}
	}
	var resumed bool
	for _, l := range lines {
		// "attempt" is written only for records of a resumed run's later
		// attempts (a parameter named attempt lands here too: slower, not
		// wrong).
		if bytes.Contains(l.line, []byte(`"attempt":`)) {
			resumed = true
			break
		}
	}
	if resumed {
		// Which attempt of a step counts is known once every record is read.
		ms, err := decodeJSONLines[Measurement](path, lines)
		if err != nil {
			return err
		}
		ps, err := ReadProgress(dir)
		if err != nil {
			return err
		}
		ms = filterMeasurements(ms, ps)
		for i := range ms {
			if err := fn(&ms[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, l := range lines {
		var m Measurement
		if err := fastjson.Unmarshal(l.line, &m); err != nil {
			return lineError(path, l, err)
		}
		if err := fn(&m); err != nil {
			return err
		}
	}
	return nil
}

// validJSON checks a line with the standard library's scanner before the
// fast decoder sees it: goccy/go-json is known to panic or loop on some
// malformed inputs (goccy/go-json#604, #575; the fuzzer of this package
// stalled on one), and a run directory cut short by a crash is exactly
// that. Valid JSON is what it decodes well.
func validJSON(line []byte) error {
	if json.Valid(line) {
		return nil
	}
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	return errors.New("not valid JSON")
}

// WriteFileAtomic replaces path with data: it writes a temporary file in the
// same directory, syncs it and renames it over path.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// LastWritten is when a file of the run directory was last written: where
// a session that crashed left off (the zero time when none can be read).
func (d *Dir) LastWritten() time.Time {
	var last time.Time
	es, err := os.ReadDir(d.Path)
	if err != nil {
		return last
	}
	for _, e := range es {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last
}
