// Package bitstreams is the design catalogue: one manifest per design (name,
// version, target parts, clock, register map, the windows a runner may
// touch, the bitstream files built for it) plus the parsers and checks for
// the files themselves (Xilinx .bit, Intel .rbf). The emulator's bitstream
// files live in files/ with valid headers.
package bitstreams

// Access says how a register may be used, and whether touching it changes
// the hardware's state. Dumps and health checks never read registers whose
// access has a read side effect.
type Access string

const (
	RO  Access = "ro"  // read only, no side effect
	RW  Access = "rw"  // read and write
	WO  Access = "wo"  // write only (reads return 0 or garbage); often a command strobe
	RC  Access = "rc"  // read only; reading clears it (counters)
	Pop Access = "pop" // read only; reading pops a FIFO
	W1C Access = "w1c" // read; writing 1 to a bit clears it
)

// ReadSideEffect reports whether a read changes the hardware's state.
func (a Access) ReadSideEffect() bool { return a == RC || a == Pop }

// Readable reports whether reading returns meaningful data.
func (a Access) Readable() bool { return a != WO }

// Writable reports whether the register accepts writes.
func (a Access) Writable() bool { return a == RW || a == WO || a == W1C }

// Field is a bit range inside a register.
type Field struct {
	Name string `yaml:"name" json:"name"`
	// Bits is "hi:lo" or a single bit "n".
	Bits string `yaml:"bits" json:"bits"`
	Doc  string `yaml:"doc,omitempty" json:"doc,omitempty"`
	Lo   uint   `yaml:"-" json:"lo"`
	Hi   uint   `yaml:"-" json:"hi"`
}

// Counter describes a register that counts, so that readers handle its
// rollover and know what it counts (docs/architecture.md: counters describe themselves).
type Counter struct {
	// Unit of one count: "cycles", "packets", "bytes", "words", "errors".
	Unit string `yaml:"unit" json:"unit"`
	// Clock domain of the counter, in MHz; 0 when it is not clocked.
	ClockMHz float64 `yaml:"clock_mhz,omitempty" json:"clock_mhz,omitempty"`
	// Accumulates since reset/clear ("total") or holds the last value ("last").
	Accumulation string `yaml:"accumulation,omitempty" json:"accumulation,omitempty"`
	// Rollover: "wrap" (counts modulo 2^width) or "saturate".
	Rollover string `yaml:"rollover,omitempty" json:"rollover,omitempty"`
	// Hi names the register holding the upper 32 bits of a 64-bit counter;
	// reading this (low) register latches Hi.
	Hi string `yaml:"hi,omitempty" json:"hi,omitempty"`
}

// Register is one named register of a design.
type Register struct {
	Name    string   `yaml:"name" json:"name"`
	Offset  uint64   `yaml:"offset" json:"offset"`
	Width   int      `yaml:"width" json:"width"` // bits, 1..32
	Access  Access   `yaml:"access" json:"access"`
	Reset   uint32   `yaml:"reset" json:"reset"`
	Fields  []Field  `yaml:"fields,omitempty" json:"fields,omitempty"`
	Count   int      `yaml:"count,omitempty" json:"count,omitempty"`   // >1: an array of registers
	Stride  uint64   `yaml:"stride,omitempty" json:"stride,omitempty"` // bytes between array elements
	Counter *Counter `yaml:"counter,omitempty" json:"counter,omitempty"`
	Doc     string   `yaml:"doc,omitempty" json:"doc,omitempty"`
	// Line is the manifest line the register was declared on.
	Line int `yaml:"-" json:"-"`
}

// Window is an address range a runner may touch. Accesses outside every
// window are refused before they reach the bus.
type Window struct {
	Name   string `yaml:"name" json:"name"`
	Base   uint64 `yaml:"base" json:"base"`
	Size   uint64 `yaml:"size" json:"size"`
	Access Access `yaml:"access" json:"access"` // ro or rw; pop for a FIFO read window
	Doc    string `yaml:"doc,omitempty" json:"doc,omitempty"`
	// Line is the manifest line the window was declared on.
	Line int `yaml:"-" json:"-"`
}

// Contains reports whether the 4-byte word at addr lies inside the window.
func (w Window) Contains(addr uint64) bool {
	return addr >= w.Base && addr-w.Base < w.Size && w.Size-(addr-w.Base) >= 4
}

// File is one bitstream file built from the design, for one part.
type File struct {
	Path   string `yaml:"path" json:"path"` // relative to the manifest's directory
	Part   string `yaml:"part" json:"part"`
	Format string `yaml:"format" json:"format"` // bit, rbf, sof
	SHA256 string `yaml:"sha256" json:"sha256"`
	Size   int64  `yaml:"size" json:"size"`
	// Checksum is Quartus's 32-bit additive checksum, for .rbf/.sof files.
	Checksum string `yaml:"checksum,omitempty" json:"checksum,omitempty"`
	// Line is the manifest line the file was listed on.
	Line int `yaml:"-" json:"-"`
}

// Manifest describes one design.
type Manifest struct {
	Name    string `yaml:"name" json:"name"`
	Version string `yaml:"version" json:"version"`
	Doc     string `yaml:"doc,omitempty" json:"doc,omitempty"`
	// Builtin marks the register map of a block every board has whatever
	// design it runs (the management block, mgmt.yaml): it has no
	// bitstream, so it lists no files and need not list parts, and it is
	// never programmed.
	Builtin bool     `yaml:"builtin,omitempty" json:"builtin,omitempty"`
	Parts   []string `yaml:"parts" json:"parts"`
	// Formats are the bitstream formats built for every part; when left
	// out, Xilinx parts get bit and Intel parts sof and rbf (DefaultFormats). The
	// generator (go generate ./bitstreams/...) builds one file per part and
	// format.
	Formats  []string `yaml:"formats,omitempty" json:"formats,omitempty"`
	ClockMHz float64  `yaml:"clock_mhz" json:"clock_mhz"`
	// ID and VersionWord are the values the design's ID and VERSION
	// registers read back; register sanity checks compare against them.
	ID          uint32     `yaml:"id" json:"id"`
	VersionWord uint32     `yaml:"version_word" json:"version_word"`
	Windows     []Window   `yaml:"windows" json:"windows"`
	Registers   []Register `yaml:"registers" json:"registers"`
	Files       []File     `yaml:"files" json:"files"`
	// Params are design parameters fixed at build time (P, S, FIFO depth,
	// node count ...), readable by the emulator and the runner.
	Params map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
	// Config are the configuration values a build of this version declares
	// (timings, clocks, link rates, sizes): what golden models are fed, so
	// that an expectation never comes from the board under test, and what
	// the registers test compares each board's own register with.
	Config []ConfigValue `yaml:"config,omitempty" json:"config,omitempty"`
	// Report describes the design's metrics and figures for run reports
	// (report.go); nil when the design describes none.
	Report *Report `yaml:"report,omitempty" json:"report,omitempty"`

	// Source is the manifest file, for error messages.
	Source string `yaml:"-" json:"-"`
	// Dir is the directory File.Path is relative to ("" for the embedded catalogue).
	Dir string `yaml:"-" json:"-"`
}

// ConfigValue is one configuration value a design declares. Value is in
// the units of the register that reports it (Register), so that a board's
// register is compared with it as read; Paper is the paper's figure in the
// same units, when the paper states one, and Source the paper's section.
// A declared value that differs from the paper's says why in Deviation.
type ConfigValue struct {
	// Name is the key tests and golden models know the value by
	// (fallthrough_ns, clock_khz ...).
	Name string `yaml:"name" json:"name"`
	// Register names the register, array element or field that reports the
	// value on the board ("FALLTHROUGH_NS", "CELL_FORMAT.MAX"); empty when
	// no register does.
	Register  string   `yaml:"register,omitempty" json:"register,omitempty"`
	Value     float64  `yaml:"value" json:"value"`
	Unit      string   `yaml:"unit,omitempty" json:"unit,omitempty"`
	Paper     *float64 `yaml:"paper,omitempty" json:"paper,omitempty"`
	Source    string   `yaml:"source" json:"source"`
	Deviation string   `yaml:"deviation,omitempty" json:"deviation,omitempty"`
	// Line is the manifest line the value was declared on.
	Line int `yaml:"-" json:"-"`
}
