package main

import (
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHelpReadsCleanly holds every flag of every command to help text that
// renders well: a backquoted word in a usage string becomes the flag's value
// placeholder in urfave/cli, so it must be one word; and a flag names its
// default once (in DefaultText or by its value), not also in its usage.
func TestHelpReadsCleanly(t *testing.T) {
	t.Parallel()
	app := newApp(io.Discard, io.Discard)
	var walk func(path string, flags []cli.Flag, cmds []*cli.Command)
	walk = func(path string, flags []cli.Flag, cmds []*cli.Command) {
		for _, f := range flags {
			name := path + " --" + f.Names()[0]
			line := cli.FlagStringer(f)
			_, usage, _ := strings.Cut(line, "\t")
			if ph := placeholder(f); strings.ContainsAny(ph, " \t") {
				t.Errorf("%s renders as %q: a backquoted phrase in the usage became the value placeholder; backquote one word (the value's name) or none", name, line)
			}
			if n := strings.Count(strings.ToLower(usage), "(default"); n > 1 {
				t.Errorf("%s renders as %q: it names its default %d times; put the default in DefaultText only", name, line, n)
			}
			if strings.TrimSpace(usage) == "" {
				t.Errorf("%s: no usage text", name)
			}
		}
		for _, c := range cmds {
			if c.Usage == "" && !c.Hidden {
				t.Errorf("%s %s: no usage line", path, c.Name)
			}
			walk(path+" "+c.Name, c.Flags, c.Subcommands)
		}
	}
	walk("labrunner", app.Flags, app.Commands)
}

// placeholder is what urfave/cli takes as the value's name: the first
// backquoted text of the usage.
func placeholder(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	u := df.GetUsage()
	i := strings.IndexByte(u, '`')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(u[i+1:], '`')
	if j < 0 {
		return ""
	}
	return u[i+1 : i+1+j]
}
