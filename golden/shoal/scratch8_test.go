package shoal
import ("testing";"fmt";"math";"math/rand/v2";"sort")
func TestScratch8(t *testing.T){
  c := Rack(); c.Nodes = 64; c.Radix = 12
  for _, per := range []int{2, 4, 8} {
  for _, noopt := range []bool{false, true} {
    r := rand.New(rand.NewPCG(5, 6))
    var fl []Flow
    for i := 1; i < 63; i++ { for k := 0; k < per; k++ { d := 1+r.IntN(62); if d == i { d = 63-i }; if d==i||d==0 {continue}; fl = append(fl, Flow{Src:i, Dst:d, Cells: math.MaxInt64/4}) } }
    var tgt []int
    E := c.EpochNS()
    for k := 0; k < 100; k++ { tgt = append(tgt, len(fl)); fl = append(fl, Flow{Src:63, Dst:0, Cells: (20000+55)/56, Bytes:20000, StartNS: 50*E + float64(k)*20*E}) }
    res, _ := Simulate(c, fl, SimOptions{NoReadyQueues: noopt, NoNewFlowRule: noopt, UntilNS: 50*E+2100*E})
    var f []float64
    for _, k := range tgt { if res.Flows[k].Done { f = append(f, res.Flows[k].FCTNS(fl[k])) } }
    sort.Float64s(f)
    fmt.Println("per", per, "noopt", noopt, len(f), Percentile(f,50), Percentile(f,99), res.MaxQueue, res.BoundViolations)
  }}
}
