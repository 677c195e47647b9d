package strictyaml

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "42": 42, "-7": -7, "+3": 3, "010": 10, "0x1F": 31, "0X10": 16, "0o17": 15, "0b101": 5,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63}
	for s, want := range good {
		got, err := ParseInt(s)
		if err != nil || got != want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-", "0x", "1_000", "12a", "9223372036854775808", "--1", "0x-1", "1.5", " 1"} {
		if _, err := ParseInt(s); err == nil {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
	if _, err := ParseUint("-1"); err == nil {
		t.Error("ParseUint(-1) accepted")
	}
}

func TestParseFloatDurationBool(t *testing.T) {
	for s, want := range map[string]float64{"1.5": 1.5, "-2e-3": -2e-3, "0x10": 16, "7": 7} {
		if got, err := ParseFloat(s); err != nil || got != want {
			t.Errorf("ParseFloat(%q) = %g, %v", s, got, err)
		}
	}
	for _, s := range []string{"NaN", "inf", "-Inf", "1e999", "0x1p3", "1_0.5", "abc"} {
		if _, err := ParseFloat(s); err == nil {
			t.Errorf("ParseFloat(%q) accepted", s)
		}
	}
	if d, err := ParseDuration("1m30s"); err != nil || d != 90*time.Second {
		t.Errorf("ParseDuration = %v, %v", d, err)
	}
	if d, err := ParseDuration("0"); err != nil || d != 0 {
		t.Errorf("ParseDuration(0) = %v, %v", d, err)
	}
	if _, err := ParseDuration("5"); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("ParseDuration(5) = %v", err)
	}
	if b, err := ParseBool("TRUE"); err != nil || !b {
		t.Errorf("ParseBool(TRUE) = %v, %v", b, err)
	}
	if _, err := ParseBool("yes"); err == nil {
		t.Error("ParseBool(yes) accepted")
	}
}

func TestNearest(t *testing.T) {
	keys := []string{"port", "baud", "pacing_us"}
	for word, want := range map[string]string{"baudd": "baud", "Baud": "baud", "prot": "port", "pacing": "pacing_us", "speed": "", "b": ""} {
		if got := Nearest(word, keys); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
}

type inner struct {
	Name string `yaml:"name"`
	Line int    `yaml:"-"`
}

type pos struct {
	File string
	Line int
}

type outer struct {
	Count  uint8             `yaml:"count"`
	Wait   time.Duration     `yaml:"wait"`
	On     bool              `yaml:"on"`
	Ratio  *float64          `yaml:"ratio"`
	Items  []inner           `yaml:"items"`
	Opt    *inner            `yaml:"opt"`
	Labels map[string]string `yaml:"labels"`
	Pos    pos               `yaml:"-"`
}

func decodeString(t *testing.T, src string) (*outer, *Decoder) {
	t.Helper()
	root, prob := Root([]byte(src), "test file")
	if prob != nil {
		t.Fatalf("Root: %+v", *prob)
	}
	d := NewDecoder("t.yaml")
	var o outer
	d.Decode(root, "", &o)
	return &o, d
}

func TestDecodeFillsPositionsAndTypes(t *testing.T) {
	o, d := decodeString(t, "count: 0xff\nwait: 250ms\non: true\nratio: 0.5\nitems:\n  - name: a\n  - {name: b}\nopt:\nlabels: {x: \"1\", y: 2}\n")
	if len(d.Problems) > 0 {
		t.Fatalf("problems: %+v", d.Problems)
	}
	if o.Count != 255 || o.Wait != 250*time.Millisecond || !o.On || o.Ratio == nil || *o.Ratio != 0.5 {
		t.Errorf("decoded %+v", o)
	}
	if len(o.Items) != 2 || o.Items[0].Line != 6 || o.Items[1].Line != 7 || o.Items[1].Name != "b" {
		t.Errorf("items %+v", o.Items)
	}
	if o.Opt == nil || o.Opt.Line != 8 {
		t.Errorf("a null struct pointer is present and positioned: %+v", o.Opt)
	}
	if o.Labels["y"] != "2" || o.Pos != (pos{"t.yaml", 1}) {
		t.Errorf("labels %v pos %v", o.Labels, o.Pos)
	}
	if d.Lines["labels.y"] != 9 || d.Lines["items[1]"] != 7 {
		t.Errorf("lines %v", d.Lines)
	}
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	_, d := decodeString(t, "count: 256\nwait: 3\non: yes\nratio: [1]\nitems: {name: a}\ncuont: 1\nlabels: {a: 1, a: 2}\n")
	want := []string{
		`1 count: want a non-negative integer that fits 8 bits, got "256"`,
		`2 wait: duration "3" has no unit`,
		`3 on: want true or false, got "yes"`,
		`4 ratio: want a number, got a list`,
		`5 items: want a list, got a mapping`,
		`6 : unknown key "cuont" (allowed: count, wait, on, ratio, items, opt, labels) did you mean count?`,
		`7 labels.a: key "a" given twice (first on line 7)`,
	}
	if len(d.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d: %+v", len(d.Problems), len(want), d.Problems)
	}
	for i, p := range d.Problems {
		got := strings.TrimSpace(strings.Join([]string{strconv.Itoa(p.Line), p.Field + ":", p.Msg, p.Fix}, " "))
		if !strings.HasPrefix(got, want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

func TestRootProblems(t *testing.T) {
	for src, want := range map[string]string{
		"":                          "1: the file is empty",
		"- a\n":                     "1: the test file must be a mapping",
		"a: 1\nb: [1,\nc: 2\n  d":   "not valid YAML",
		"a: 1\nb:\n  c: 1\n d: 2\n": "4: not valid YAML",
		"a: 1\n---\nb: 2\n":         "2: the file holds a second YAML document",
		"# only a comment\n":        "1: the file is empty",
	} {
		_, p := Root([]byte(src), "test file")
		if p == nil {
			t.Errorf("%q: no problem", src)
			continue
		}
		if got := strconv.Itoa(p.Line) + ": " + p.Msg; !strings.Contains(got, want) {
			t.Errorf("%q: got %q, want %q", src, got, want)
		}
	}
}
