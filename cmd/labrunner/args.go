package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/labrun"
)

// usageError is a mistake on the command line: exit 2, one line, and the
// form that would have worked. It never prints a page of help.
func usageError(format string, args ...any) error {
	return &exitError{code: labrun.ExitConfig, err: fmt.Errorf(format, args...)}
}

// labFileArg takes a command's single positional argument as its --lab
// (`labrunner lab check mylab.yaml`).
func labFileArg(c *cli.Context) error {
	switch {
	case c.NArg() == 0:
		return nil
	case c.NArg() > 1:
		return usageError("%s takes one lab file, got %d arguments", commandName(c.Command), c.NArg())
	case c.IsSet("lab") && c.String("lab") != c.Args().First():
		return usageError("%s: two lab files, --lab %s and %s: give one", commandName(c.Command), c.String("lab"), c.Args().First())
	}
	return c.Set("lab", c.Args().First())
}

// normalizeArgs rewrites a command line into the order urfave/cli parses:
// global flags first, then the command path, then the command's flags, then
// its positional arguments. Users of git and kubectl write flags after
// positional arguments (`labrunner regs read ID --board exa-00`) and global
// flags after the command (`labrunner nightly --log-level debug`); urfave/cli
// would take such flags as arguments. "--" ends flag parsing: what follows
// stays positional.
//
// It also refuses an unknown command with a did-you-mean, which urfave/cli
// answers with "No help topic" and the infrastructure exit code.
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	a := newArgSorter(app)
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == "--" {
			a.positional = append(a.positional, rest[i+1:]...)
			break
		}
		took, err := a.take(rest[i:])
		if err != nil {
			return nil, err
		}
		i += took - 1
	}
	return a.sorted(args[0]), nil
}

// argSorter sorts a command line's words into global flags, the command
// path, the command's flags and its positional arguments.
type argSorter struct {
	global, local                    map[string]bool // flag name -> takes a value
	cmds                             []*cli.Command  // the commands the next word may name
	leaf                             *cli.Command    // the command named so far
	globals, path, flags, positional []string
}

func newArgSorter(app *cli.App) *argSorter {
	a := &argSorter{global: flagIndex(app.Flags), local: map[string]bool{"help": false, "h": false}, cmds: app.Commands}
	// The built-in --help/-h and --version/-v.
	a.global["help"], a.global["h"], a.global["version"], a.global["v"] = false, false, false, false
	return a
}

// take sorts the first of words (with the value that follows a flag that
// takes one) and says how many words it took.
func (a *argSorter) take(words []string) (int, error) {
	w := words[0]
	if name, hasValue, ok := flagName(w); ok {
		takesValue, isLocal := a.local[name]
		isGlobal := false
		if !isLocal {
			takesValue, isGlobal = a.global[name]
		}
		taken := []string{w}
		if (isLocal || isGlobal) && takesValue && !hasValue {
			if len(words) < 2 || words[1] == "--" {
				return 0, usageError("%s needs a value (%s=VALUE or %s VALUE)", w, w, w)
			}
			taken = append(taken, words[1])
		}
		if isGlobal {
			a.globals = append(a.globals, taken...)
		} else {
			// Unknown flags stay with the command, whose parser names them.
			a.flags = append(a.flags, taken...)
		}
		return len(taken), nil
	}
	return 1, a.word(w)
}

// word takes a word: a (sub)command while the path is still open, else a
// positional argument.
func (a *argSorter) word(w string) error {
	if len(a.positional) == 0 && a.cmds != nil && (a.leaf == nil || len(a.leaf.Subcommands) > 0) {
		if c := findCommand(a.cmds, w); c != nil {
			a.path = append(a.path, w)
			a.leaf, a.cmds = c, c.Subcommands
			for k, v := range flagIndex(c.Flags) {
				a.local[k] = v
			}
			return nil
		}
		if w != "help" && (a.leaf == nil || a.leaf.Action == nil) {
			return unknownCommand(a.leaf, a.cmds, w)
		}
	}
	a.positional = append(a.positional, w)
	return nil
}

// sorted is the command line in the order urfave/cli parses.
func (a *argSorter) sorted(prog string) []string {
	out := append([]string{prog}, a.globals...)
	out = append(out, a.path...)
	out = append(out, a.flags...)
	if len(a.positional) > 0 {
		// Positional arguments that look like flags (a negative number)
		// must not be parsed as flags.
		for _, p := range a.positional {
			if strings.HasPrefix(p, "-") {
				out = append(out, "--")
				break
			}
		}
		out = append(out, a.positional...)
	}
	return out
}

// flagName returns the name of a flag token ("--lab=x" -> "lab", true).
// A lone "-" and negative numbers are not flags.
func flagName(a string) (name string, hasValue, ok bool) {
	if len(a) < 2 || a[0] != '-' || isNumber(a) {
		return "", false, false
	}
	name = strings.TrimLeft(a, "-")
	if name == "" {
		return "", false, false
	}
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], true, true
	}
	return name, false, true
}

// flagIndex maps every name and alias of flags to whether it takes a value.
func flagIndex(fs []cli.Flag) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		takes := true
		if _, isBool := f.(*cli.BoolFlag); isBool {
			takes = false
		}
		for _, n := range f.Names() {
			out[n] = takes
		}
	}
	return out
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

func unknownCommand(parent *cli.Command, cmds []*cli.Command, name string) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	where := "labrunner"
	if parent != nil {
		where = commandName(parent)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if parent != nil {
		msg = fmt.Sprintf("%s has no command %q", where, name)
	}
	if near := nearest(name, names); len(near) > 0 {
		msg += fmt.Sprintf(": did you mean %s?", strings.Join(near, " or "))
	} else {
		sort.Strings(names)
		msg += fmt.Sprintf(" (commands: %s)", strings.Join(names, ", "))
	}
	return usageError("%s (`%s --help` lists them)", msg, where)
}

// commandName is the command as a user types it: "labrunner lab check".
func commandName(c *cli.Command) string {
	if c == nil {
		return "labrunner"
	}
	if c.HelpName != "" {
		return c.HelpName
	}
	return "labrunner " + c.Name
}

// nearest returns the candidates within a small edit distance of s (or that
// s is a prefix of), closest first.
func nearest(s string, candidates []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, c := range candidates {
		d := editDistance(s, c)
		if d <= max(1, len(s)/3) || (len(s) >= 3 && strings.HasPrefix(c, s)) {
			cs = append(cs, cand{c, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			// A transposition ("nightyl") costs one edit.
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkArgs is a command's Before hook: a command that takes no positional
// arguments refuses them (a lab file given without --lab is the common
// case), and a command with a fixed form refuses the wrong count.
func checkArgs(c *cli.Context) error {
	cmd := c.Command
	if cmd == nil || cmd.Action == nil || c.NArg() == 0 {
		return nil
	}
	if cmd.Command(c.Args().First()) != nil {
		return nil // a subcommand of a command that also acts alone (faults campaign)
	}
	if cmd.ArgsUsage == "" {
		first := c.Args().First()
		hint := ""
		if strings.HasSuffix(first, ".yaml") || strings.HasSuffix(first, ".yml") {
			hint = fmt.Sprintf(": a lab file goes with --lab (%s --lab %s)", commandName(cmd), first)
		}
		return usageError("%s takes no arguments, got %q%s", commandName(cmd), strings.Join(c.Args().Slice(), " "), hint)
	}
	return nil
}

// parsedKey holds, in the app's Metadata, the function that tells run() the
// command line has been parsed (see parseMu).
const parsedKey = "labrunner.parsed"

// forgiving sets, on every command of the tree, the hooks that make the
// command line forgiving of habits and strict about mistakes: one-line
// usage errors, and positional arguments only where a command takes them.
func forgiving(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
		if c.Action != nil {
			before := c.Before
			c.Before = func(ctx *cli.Context) error {
				if sub := ctx.Args().First(); sub != "" && c.Command(sub) != nil {
					// urfave/cli runs a parent's Before before it hands
					// over to the subcommand (faults -> faults campaign),
					// which still has its flags to parse: parseMu stays
					// held until the subcommand's own Before.
					if before != nil {
						return before(ctx)
					}
					return nil
				}
				if f, ok := ctx.App.Metadata[parsedKey].(func()); ok {
					f()
				}
				if err := checkArgs(ctx); err != nil {
					return err
				}
				if before != nil {
					return before(ctx)
				}
				return nil
			}
		}
		forgiving(c.Subcommands)
	}
}

// onUsageError turns a flag parsing error ("flag provided but not defined",
// "invalid value") into one line naming the command and where its help is.
func onUsageError(c *cli.Context, err error, _ bool) error {
	name := "labrunner"
	if c.Command != nil && c.Command.Name != "" {
		name = commandName(c.Command)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		if f := strings.TrimLeft(rest, "-"); len(f) > 1 {
			rest = "--" + f
		}
		msg = "unknown flag " + rest
	}
	return usageError("%s: %s; `%s --help` lists its flags", name, msg, name)
}
