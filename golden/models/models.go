// Package models imports every golden model so that their init functions
// register them with package golden: a program (the CLI) gets all models by
// importing this one package.
package models

import (
	_ "github.com/labrunner/labrunner/golden/bringup"  // rack bring-up: bootstrap waves, PMOS time, TimeSync bounds (Aquila NSDI 2022), Shoal guard band
	_ "github.com/labrunner/labrunner/golden/exanet"   // ExaNet (ParCo 2017)
	_ "github.com/labrunner/labrunner/golden/ordering" // SC'18 ordering protocols (NVIDIA)
	_ "github.com/labrunner/labrunner/golden/prr"      // parallel round-robin FPGA switch (FPGA 2020)
	_ "github.com/labrunner/labrunner/golden/shoal"    // Shoal disaggregated-rack fabric (NSDI 2019)
	_ "github.com/labrunner/labrunner/golden/tin"      // TiN-style cell fabric (Aquila, NSDI 2022)
)
