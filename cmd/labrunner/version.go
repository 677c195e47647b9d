package main

import (
	"runtime/debug"
	"strings"
)

// version is set by `make build` and `make install` with
// -ldflags "-X main.version=...". When it is not set, the version comes from
// the build info: the module version for `go install ...@version`, else the
// VCS revision of the working tree the binary was built from.
var version = ""

// buildVersion returns the version --version and run.json report: never
// empty, and never "dev" when the build knows better.
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info)"
	}
	return versionFrom(bi)
}

func versionFrom(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified, when string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			when = s.Value
		}
	}
	if rev == "" {
		// go run or go test from a tree without VCS stamping.
		return "devel (no VCS information)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if when != "" {
		v += "-" + strings.NewReplacer(":", "", "-", "").Replace(when)
	}
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
