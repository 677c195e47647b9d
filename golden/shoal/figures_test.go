package shoal

import "flag"

// figures runs the reproductions of the paper's figures that take longer
// than a unit test should (the 512-node rack of §7): `make figures`, or
// go test ./golden/shoal -figures. Each figure also has a quicker test that
// always runs.
var figures = flag.Bool("figures", false, "also reproduce the paper's figures that take seconds of CPU (make figures)")
