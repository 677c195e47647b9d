package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install @version", debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0"},
		{"local build with VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-26T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"devel-0123456789ab-20261126T100000Z-dirty"},
		{"no VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (no VCS information)"},
	}
	for _, c := range cases {
		if got := versionFrom(&c.bi); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestVersionIsNeverDev(t *testing.T) {
	t.Parallel()
	if v := buildVersion(); v == "" || v == "dev" {
		t.Fatalf("buildVersion() = %q", v)
	}
}
