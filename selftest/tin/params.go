package tin

import (
	"errors"
	"fmt"

	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// The parameters each TiN test takes from its plan entry (field tags:
// labconfig.ParamFields), with their defaults where the tests register.

// planParams are what a TiN plan takes in its params.
type planParams struct {
	// The design sizes cells to the byte (docs/tin.md: a data cell is
	// 12 + n bytes): golden/tin's granularity 1.
	Align int  `param:"align" min:"1" max:"16" doc:"the cell size granularity in bytes golden/tin is told the design uses: 1, 2, 4, 8 or 16 (a divisor of the 16-byte smallest cell, §3.1)"`
	Seed  *int `param:"seed" default:"the lab's seed" doc:"seed of the Clique's traffic, for the tests that take no seed of their own"`
}

// CheckParams wants a granularity golden/tin takes: one that divides the
// smallest and the largest cell.
func (p planParams) CheckParams() error {
	if gt.MinCell%p.Align != 0 || gt.MaxCell%p.Align != 0 {
		return &labconfig.ParamError{Key: "align", Msg: fmt.Sprintf("%d divides neither the %d-byte smallest cell nor the %d-byte largest (§3.1)", p.Align, gt.MinCell, gt.MaxCell),
			Fix: "write align: 1, 2, 4, 8 or 16"}
	}
	return nil
}

// CheckBoards wants a Clique of two boards or more (the setup builds the
// fabric the tests cross, and one TiN has none) and every board at its own
// place in it.
func (p planParams) CheckBoards(boards []selftest.BoardParams) error {
	var errs []error
	if len(boards) < 2 {
		errs = append(errs, &selftest.BoardParamError{Key: "boards", Msg: fmt.Sprintf("a Clique needs at least two TiN boards, the plan has %d", len(boards)),
			Fix: "give the plan two or more cabled TiN boards; a single board is programmed and read with labrunner program and regs"})
	}
	at := map[[2]int]string{}
	for _, b := range boards {
		bp := b.Params.(boardParams)
		k := [2]int{bp.Pod, bp.TiN}
		if other, dup := at[k]; dup {
			errs = append(errs, &selftest.BoardParamError{Board: b.Name, Key: "tin",
				Msg: fmt.Sprintf("boards %s and %s are both TiN %d of pod %d", other, b.Name, bp.TiN, bp.Pod), Fix: "give each board its own pod and TiN"})
			continue
		}
		at[k] = b.Name
	}
	return errors.Join(errs...)
}

// CheckCables wants the lab's cables between the plan's boards to make the
// Clique their places say (the topology the setup builds, traffic/tin).
func (p planParams) CheckCables(c selftest.Cabling) error {
	var order []string
	nodes := map[string]tt.Node{}
	for _, b := range c.Boards {
		bp := b.Params.(boardParams)
		order = append(order, b.Name)
		nodes[b.Name] = tt.Node{Pod: bp.Pod, TiN: bp.TiN}
	}
	cables, err := cablesOf(c.Lab, c.InPlan)
	if err != nil {
		return err
	}
	if _, err := tt.NewTopology(order, nodes, cables); err != nil {
		return &selftest.BoardParamError{Key: "boards", Msg: err.Error(), Fix: "cable the Clique as docs/tin.md prescribes and give each board its pod and TiN"}
	}
	return nil
}

// boardParams are what each board of a TiN plan takes in its params: its
// place in the Clique (docs/tin.md: board tin-pPbT is TiN T of pod P).
// The limits are the routing tables' reach, traffic/tin's MaxPods and
// MaxTiNs (TestBoardParamsReachTheRoutingTables holds them together).
type boardParams struct {
	Pod int `param:"pod" required:"true" min:"0" max:"7" doc:"the board's pod in the Clique"`
	TiN int `param:"tin" required:"true" min:"0" max:"7" doc:"the board's TiN in its pod"`
}

// seedParam is the seed every traffic test takes.
type seedParam struct {
	Seed *int `param:"seed" default:"the plan's seed" doc:"seed of the test's traffic"`
}

func (s seedParam) seedValue() *int { return s.Seed }

// seeded is a parameter struct that embeds seedParam.
type seeded interface{ seedValue() *int }

// orderingTargets are the boards an ordering test targets, and how many
// sources send to each.
type orderingTargets struct {
	selftest.Targets
	Target  *string `param:"target" default:"none" doc:"one board (older form of targets)"`
	Sources int     `param:"sources" doc:"boards sending streams to each target"`
}

func (t orderingTargets) ordering() orderingTargets { return t }

// targetedOrdering is a parameter struct that embeds orderingTargets.
type targetedOrdering interface{ ordering() orderingTargets }

type creditsParams struct {
	Load  float64 `param:"load" above:"0" max:"1" doc:"offered load per sending board, a fraction of the injection rate (INJECT_MBPS)"`
	Bytes int     `param:"bytes" min:"1" max:"16383" doc:"IP packet size in bytes"`
	Count int     `param:"count" min:"1" doc:"packets each board sends"`
	seedParam
}

type cellificationParams struct {
	Packets []int `param:"packets" doc:"message lengths in bytes, one traced packet each"`
	selftest.Targets
	Src *string `param:"src" default:"none" doc:"one source board instead of targets (with dst: the next board)"`
	Dst *string `param:"dst" default:"the next board" doc:"its destination"`
}

type flowOrderParams struct {
	Load  float64 `param:"load" above:"0" max:"1" doc:"offered load per sending board, a fraction of the injection rate (INJECT_MBPS)"`
	Bytes int     `param:"bytes" min:"1" max:"16383" doc:"IP packet size in bytes"`
	Count int     `param:"count" min:"1" doc:"packets each board sends"`
	Flows int     `param:"flows" doc:"flow labels per destination"`
	seedParam
}

type routesParams struct {
	Modes []string `param:"modes" doc:"routing modes, one run each"`
	Load  float64  `param:"load" above:"0" max:"1" doc:"offered load per sending board, a fraction of the injection rate (INJECT_MBPS)"`
	Count int      `param:"count" min:"1" doc:"packets each board sends per mode"`
	Bytes int      `param:"bytes" min:"1" max:"16383" doc:"IP packet size in bytes (several cells, so that adaptive modes leave the minimal route)"`
	seedParam
}

type rttParams struct {
	Loads    []float64 `param:"loads" above:"0" max:"1" doc:"offered loads per sending board, fractions of the injection rate (INJECT_MBPS), one run each"`
	Bytes    int       `param:"bytes" min:"1" max:"16383" doc:"request size in bytes"`
	Reply    int       `param:"reply" doc:"reply size in bytes"`
	Count    int       `param:"count" min:"1" doc:"requests each board sends per load"`
	Replicas int       `param:"replicas" doc:"golden simulation replicas"`
	seedParam
}

type rmaParams struct {
	QPS         int     `param:"qps" min:"1" doc:"1RMA reads per second per sending board"`
	Bytes       int     `param:"bytes" min:"1" max:"1048575" doc:"bytes per read"`
	Reads       int     `param:"reads" min:"1" doc:"reads each board issues per scenario"`
	BulkLoad    float64 `param:"bulk_load" above:"0" max:"1" doc:"load of the bulk IP traffic, a fraction of the injection rate"`
	BulkBytes   int     `param:"bulk_bytes" min:"1" doc:"bulk IP packet size in bytes (at most 32 cells of this build)"`
	HipriWeight int     `param:"hipri_weight" min:"1" max:"255" doc:"cells per turn of the high-priority class against one of the bulk's (§5.1: 8:1)"`
	seedParam
}

type incastParams struct {
	selftest.Targets
	Victim       *string `param:"victim" default:"none" doc:"one victim board instead of targets"`
	Senders      int     `param:"senders" default:"all" doc:"boards sending to the victim (0: all)"`
	Bytes        int     `param:"bytes" doc:"packet size in bytes"`
	Messages     int     `param:"messages" doc:"messages per sender"`
	MessageBytes int     `param:"message_bytes" doc:"bytes per message"`
	Threshold    int     `param:"threshold" min:"2" doc:"the CTD threshold (RTSs queued before drops)"`
	seedParam
}

type orderingParams struct {
	Modes []string `param:"modes" oneof:"ordered,ordered-eod,slow,slow-eod,sync" doc:"transfer modes, one run each"`
	orderingTargets
	Streams    int   `param:"streams" doc:"streams per source"`
	Lengths    []int `param:"lengths" doc:"stream lengths in packets"`
	Concurrent int   `param:"concurrent" doc:"streams in flight per source"`
	LossReqPPM int   `param:"loss_req_ppm" doc:"REQ loss at the target, per million"`
	LossAckPPM int   `param:"loss_ack_ppm" doc:"ACK loss at the sources, per million"`
	DropEvery  int   `param:"drop_every" doc:"the target drops every n-th REQ (0: none)"`
	JitterNS   int   `param:"jitter_ns" doc:"injection jitter at the sources in ns"`
	seedParam
}

type fallbackParams struct {
	orderingTargets
	Length int `param:"length" doc:"packets per stream"`
	Conns  int `param:"conns" doc:"receiver connections"`
	seedParam
}

type robParams struct {
	orderingTargets
	Streams       int    `param:"streams" doc:"streams per source"`
	Length        int    `param:"length" doc:"packets per stream"`
	JitterNS      int    `param:"jitter_ns" doc:"injection jitter at the sources in ns"`
	GapNS         string `param:"gap_ns" doc:"gap between a source's packets in ns, or link (the link's own pace)"`
	BufferPackets int    `param:"buffer_packets" doc:"packets a source may have outstanding"`
	seedParam
}

type robSkewParams struct {
	orderingTargets
	DropEvery *int `param:"drop_every" default:"the declared window (ORD_MAX_OUTSTANDING)" doc:"the target discards every n-th REQ of a fast stream"`
	Length    *int `param:"length" default:"2 x drop_every - 1 (one discarded REQ per stream)" doc:"packets per stream"`
	seedParam
}

type traceParams struct {
	selftest.Targets
	Src   *string `param:"src" default:"none" doc:"one source board instead of targets"`
	Dst   *string `param:"dst" default:"seeded, per source" doc:"the destination"`
	Bytes int     `param:"bytes" min:"1" max:"16383" doc:"IP packet size in bytes"`
	seedParam
}

// CheckParams refuses a routing mode the design has no ROUTE_MODE value for.
func (p routesParams) CheckParams() error {
	if _, err := parseRouteModes(p.Modes); err != nil {
		return &labconfig.ParamError{Key: "modes", Msg: err.Error()} // the message lists the modes
	}
	return nil
}

// CheckParams wants a stream to reach its dropped REQ (the declared
// window, the default drop_every, is checked when the test runs).
func (p robSkewParams) CheckParams() error {
	if p.DropEvery != nil && *p.DropEvery < 1 {
		return &labconfig.ParamError{Key: "drop_every", Msg: fmt.Sprintf("drop_every %d: the target must discard a REQ", *p.DropEvery), Fix: "write drop_every: 1 or more"}
	}
	if p.DropEvery != nil && p.Length != nil && *p.Length < *p.DropEvery {
		return &labconfig.ParamError{Key: "length", Msg: fmt.Sprintf("length %d is shorter than drop_every %d: no stream reaches its dropped REQ", *p.Length, *p.DropEvery),
			Fix: "write a length of at least drop_every"}
	}
	return nil
}
