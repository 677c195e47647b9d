//go:build tools

// Package deps pins the third-party modules the project builds on, so that
// go.mod holds them even while a package that uses them is being written.
// It is never compiled into labrunner.
package deps

import (
	_ "github.com/creack/pty"
	_ "github.com/influxdata/influxdb-client-go/v2"
	_ "github.com/tarm/serial"
	_ "github.com/urfave/cli/v2"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "gonum.org/v1/plot"
	_ "periph.io/x/conn/v3/gpio"
	_ "periph.io/x/host/v3"
	_ "periph.io/x/host/v3/pmem"
)
