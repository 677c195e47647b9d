package shoal
import ("testing";"fmt";"math";"math/rand/v2";"sort")
func TestScratch7(t *testing.T){
  c := Rack(); c.Nodes = 64; c.Radix = 12
  r := rand.New(rand.NewPCG(3, 4))
  seen := map[FlowSpec]bool{}
  var specs []FlowSpec
  for len(specs) < 50 { a, b := r.IntN(64), r.IntN(64); f := FlowSpec{a,b}; if a!=b && !seen[f] { seen[f]=true; specs = append(specs, f)} }
  var flows []Flow
  for _, f := range specs { flows = append(flows, Flow{Src:f.Src, Dst:f.Dst, Cells: math.MaxInt64/4}) }
  E := c.EpochNS()
  res, _ := Simulate(c, flows, SimOptions{MeasureFromNS: 100*E, UntilNS: 1100*E})
  s, _ := NewSchedule(c.Nodes, c.Channels, c.Schedule)
  loops, _ := FeedbackLoops(c, s)
  fair, _ := ShoalFairRates(c.Nodes, specs, loops)
  ideal, _ := IdealFairRates(c.Nodes, specs)
  var devs []float64
  for k := range specs {
    got := float64(res.Flows[k].Window) / (1000*float64(c.EpochSlots()*c.Channels)) 
    devs = append(devs, got/fair[k]-1)
    if k < 10 { fmt.Printf("%v got %.3f shoal %.3f ideal %.3f\n", specs[k], got, fair[k], ideal[k]) }
  }
  sort.Float64s(devs); fmt.Println("dev range", devs[0], devs[len(devs)/2], devs[len(devs)-1])
  // Fig 14
  for _, noopt := range []bool{false, true} {
    w := NewWorkload(Uniform, 64, 3000, 0.5, 7)
    fl, _ := w.Generate(c.PayloadBytes())
    var tgt []int
    for k := 0; k < 200; k++ { tgt = append(tgt, len(fl)); fl = append(fl, Flow{Src:63, Dst:0, Cells: (20000+55)/56, Bytes:20000, StartNS: float64(k)*fl[2999].StartNS/200}) }
    res, _ := Simulate(c, fl, SimOptions{NoReadyQueues: noopt, NoNewFlowRule: noopt})
    var f []float64
    for _, k := range tgt { if res.Flows[k].Done { f = append(f, res.Flows[k].FCTNS(fl[k])) } }
    sort.Float64s(f)
    fmt.Println("noopt", noopt, len(f), Percentile(f,50), Percentile(f,99), res.MaxQueue, res.BoundViolations)
  }
  // failures
  for _, nf := range []int{0, 6, 13, 26} {
    w := NewWorkload(Uniform, 64, 4000, 0.5, 9)
    for k := 0; k < nf; k++ { w.Failed = append(w.Failed, 63-k) }
    sum, err := RunWorkload(c, w, SimOptions{})
    fmt.Println("failed", nf, err, sum.ShortP999/1000, sum.LongGoodputGbps, sum.Long)
  }
  for _, ch := range []int{4, 2} {
    c2 := Rack(); c2.Channels = ch; c2.ChannelGbps = 100/float64(ch); c2.SlotNS = 23.25
    w := NewWorkload(Uniform, 512, 20000, 0.3, 9)
    sum, err := RunWorkload(c2, w, SimOptions{})
    fmt.Println("channels", ch, c2.CellBytes(), err, sum.ShortP99/1000, sum.ShortP50/1000, c2.EpochNS())
  }
}
